//===- Precision.h - the float type of a generated library ------*- C++ -*-===//
//
// A generated library has one float storage type, `real_t`, chosen when it
// is compiled (-DNNCC_PRECISION_F64 / _BF16; the generated sources are the
// same for f32 and f64). bf16 stores bfloat16 and computes in fp32
// (acc_t<real_t>, runtime/include/nncc/Kernels/Bf16.h); it runs on CUDA only
// and only the ops with a bf16 kernel (docs/design.md, "Precisions").
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_TARGET_PRECISION_H
#define NNCC_TARGET_PRECISION_H

#include <cstdint>

namespace nncc {

enum class Precision { F32, F64, BF16 };

/// sizeof(real_t).
inline int64_t realBytes(Precision p) {
  return p == Precision::F64 ? 8 : p == Precision::BF16 ? 2 : 4;
}

/// "f32", "f64", "bf16": the flags' and the ABI's spelling.
inline const char *precisionName(Precision p) {
  return p == Precision::F64 ? "f64" : p == Precision::BF16 ? "bf16" : "f32";
}

} // namespace nncc

#endif // NNCC_TARGET_PRECISION_H
