//===- RuntimeTestUtil.h - helpers for the runtime's unit tests -*- C++ -*-===//
#ifndef NNCC_TEST_UNIT_RUNTIMETESTUTIL_H
#define NNCC_TEST_UNIT_RUNTIMETESTUTIL_H

#include "nncc/Runtime/nncc_runtime.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace nncc_test {

/// 8-byte little-endian length, header, data.
inline std::string stFile(const std::string &header, const std::string &data = "") {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

/// A file whose length field says `n` regardless of what follows.
inline std::string stFileWithLength(uint64_t n, const std::string &rest) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + rest;
}

struct Opened {
  nncc_status status;
  nncc_error err;
  nncc_safetensors *file;
  ~Opened() { nncc_safetensors_close(file); }
};

inline void openMemory(const std::string &bytes, Opened &o) {
  o.file = nullptr;
  o.status = nncc_safetensors_open_memory(bytes.data(), bytes.size(), &o.file, &o.err);
}

} // namespace nncc_test

#define EXPECT_STATUS_MSG(status_expr, err, expected_status, substring)          \
  do {                                                                           \
    nncc_status s_ = (status_expr);                                              \
    EXPECT_EQ(s_, expected_status) << nncc_status_name(s_) << ": " << (err).message; \
    EXPECT_EQ((err).status, expected_status);                                    \
    EXPECT_NE(std::string((err).message).find(substring), std::string::npos)     \
        << "message: " << (err).message << "\nexpected to contain: " << (substring); \
  } while (0)

#endif
