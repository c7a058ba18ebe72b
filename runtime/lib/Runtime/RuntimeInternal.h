//===- RuntimeInternal.h - helpers shared by the runtime's sources -*- C++ -*-===//
//
// Not installed. Everything here is hidden (the library exports only the C
// API of nncc_runtime.h).
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_LIB_RUNTIME_RUNTIMEINTERNAL_H
#define NNCC_LIB_RUNTIME_RUNTIMEINTERNAL_H

#include "nncc/Runtime/nncc_runtime.h"

#include <cstdarg>
#include <cstdint>
#include <functional>
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
/// formatShape of a caller's `rank` dims where the right rank is `due`:
/// reads at most `due` of them (a wrong rank says nothing of the array's
/// length) and counts the rest.
std::string formatCallerShape(const int64_t *shape, size_t rank, size_t due);
/// Quotes and escapes a name or path from a caller or a file for messages
/// (nncc_quote): control characters, DEL and bytes that are not valid UTF-8
/// as \xNN, backslash and quote escaped; long texts are cut.
std::string quote(const char *text, size_t length);
inline std::string quote(const std::string &s) { return quote(s.data(), s.size()); }
/// Index of the first byte that is not valid UTF-8 (overlongs and
/// surrogates included), or `size` when all of it is valid.
size_t firstInvalidUtf8(const char *data, size_t size);
inline bool isValidUtf8(const char *data, size_t size) {
  return firstInvalidUtf8(data, size) == size;
}

/// "a FIFO", "a directory", ... for an st_mode.
const char *fileKind(unsigned mode);
/// Opens `path` to read: refused unless it is a regular file (a FIFO or a
/// device is refused without blocking); fd and size on success.
nncc_status openRegularFile(const char *path, int &fd, uint64_t &size, nncc_error *err);
/// Replaces `path` with what `fill` writes to a new temporary in the same
/// directory (created O_EXCL | O_NOFOLLOW under a random name), synced and
/// renamed over it; fill returns 0 or an errno. A symbolic link at `path` is
/// written through (its target is replaced, the link stays); a destination
/// that is not a regular file is refused. On failure the temporary is gone
/// and `path` is unchanged.
nncc_status writeFileAtomically(const char *path, const std::function<int(int fd)> &fill,
                                nncc_error *err);

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
