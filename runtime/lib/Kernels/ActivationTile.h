//===- ActivationTile.h - Linear epilogues on AVX-512 ---------------------===//
#ifndef NNCC_KERNELS_ACTIVATIONTILE_H
#define NNCC_KERNELS_ACTIVATIONTILE_H

#include <cstdint>

namespace nncc {
namespace kernels {

/// y[i][j] = gelu_erf(y[i][j] + bias[j]) + residual[i][j] (bias, residual
/// optional; rows of stride ld) over rows [r0, r1) x columns [c0, c1), 16
/// lanes wide (ActivationTile.cpp); false (y untouched) where cpuHasAvx512()
/// is not, and the portable epilogue is the caller's.
bool geluErfBlockF32(float *y, int64_t ld, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                     const float *bias, const float *residual);

} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_ACTIVATIONTILE_H
