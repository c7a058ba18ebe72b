//===- HostTensor.h - Tensors in host memory, dtype conversion --*- C++ -*-===//

#ifndef NNCC_DRIVER_HOSTTENSOR_H
#define NNCC_DRIVER_HOSTTENSOR_H

#include "nncc/Runtime/nncc_runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace nncc::driver {

/// A named tensor in 8-byte aligned host memory.
struct HostTensor {
  std::string name;
  nncc_dtype dtype;
  std::vector<int64_t> shape;
  std::vector<uint64_t> storage; // 8-byte aligned bytes
  void *data() { return storage.data(); }
  void resize(uint64_t bytes) { storage.assign((bytes + 7) / 8, 0); }
  uint64_t numel() const {
    uint64_t n = 1;
    for (int64_t d : shape)
      n *= (uint64_t)d;
    return n;
  }
  uint64_t nbytes() const { return numel() * nncc_dtype_size(dtype); }
  /// F32 -> F64 in place (other dtypes unchanged).
  void widenToF64();
  /// F32 -> BF16 in place, rounded to nearest even (other dtypes unchanged).
  void narrowToBf16();
};

/// True for the floating-point dtypes.
bool isFloatDType(nncc_dtype d);

/// Element `i` of `data` (dtype `d`) as a double; NaN for an unknown dtype.
double elementAsDouble(nncc_dtype d, const void *data, uint64_t i);

/// True when `from` -> `to` may convert without changing a value (I64 -> I32
/// and U8 -> BOOL still check each value).
bool losslessPair(nncc_dtype from, nncc_dtype to);

/// Converts `n` elements of `src` (dtype sd) into `dst` (dtype dd) when
/// every value is represented exactly; else returns the reason.
std::string convertLossless(nncc_dtype sd, const void *src, nncc_dtype dd,
                            void *dst, uint64_t n);

} // namespace nncc::driver

#endif // NNCC_DRIVER_HOSTTENSOR_H
