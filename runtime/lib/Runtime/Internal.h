//===- Internal.h - helpers shared by the runtime's sources ----*- C++ -*-===//
//
// Not installed. Everything here is hidden (the library exports only the C
// API of nncc_runtime.h).
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_LIB_RUNTIME_INTERNAL_H
#define NNCC_LIB_RUNTIME_INTERNAL_H

#include "nncc/Runtime/nncc_runtime.h"

#include <cstdarg>
#include <cstdint>
#include <string>
#include <vector>

namespace nncc::rt {

/// Stores (status, printf-formatted message) in err (may be null) and
/// returns status.
nncc_status fail(nncc_error *err, nncc_status status, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
nncc_status failv(nncc_error *err, nncc_status status, const char *format,
                  va_list args);
/// Clears err and returns NNCC_OK.
nncc_status ok(nncc_error *err);

/// "[2, 3, 4]"; long shapes are abbreviated.
std::string formatShape(const int64_t *shape, size_t rank);
inline std::string formatShape(const std::vector<int64_t> &shape) {
  return formatShape(shape.data(), shape.size());
}
/// Quotes and escapes a user string for messages; long names are cut.
std::string quote(const char *text, size_t length);
inline std::string quote(const std::string &s) { return quote(s.data(), s.size()); }
/// Index of the first byte that is not valid UTF-8 (overlongs and
/// surrogates included), or `size` when all of it is valid.
size_t firstInvalidUtf8(const char *data, size_t size);
inline bool isValidUtf8(const char *data, size_t size) {
  return firstInvalidUtf8(data, size) == size;
}

/// The loaded driver, or null with err filled (NNCC_ERROR_CUDA_UNAVAILABLE).
const nncc_cuda_driver *cudaDriver(nncc_error *err);
/// cuMemsetD8(ptr, 0, bytes) in ctx.
nncc_status cudaZero(nncc_cuda_context *ctx, nncc_CUdeviceptr ptr, uint64_t bytes,
                     nncc_error *err);

} // namespace nncc::rt

struct nncc_cuda_context {
  const nncc_cuda_driver *driver = nullptr;
  int ordinal = 0;
  nncc_CUdevice device = 0;
  nncc_CUcontext context = nullptr;
};

struct nncc_stream {
  nncc_device_kind kind = NNCC_DEVICE_CPU;
  nncc_cuda_context *ctx = nullptr; // CUDA streams only
  nncc_CUstream handle = nullptr;   // CUDA streams only
  bool owned = true;                // false: the caller's (nncc_stream_wrap_cuda)
  nncc_error sticky{};              // CPU streams: first failure
};

#endif
