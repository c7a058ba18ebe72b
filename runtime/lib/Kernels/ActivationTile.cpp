//===- ActivationTile.cpp - The exact-GELU linear epilogue on AVX-512 -----===//
//
// nncc_linear's fused epilogue (Linear.cpp) for the exact GELU,
// gelu_erf(y + bias) + residual over a block of y, 16 lanes wide on CPUs
// with AVX-512 (cpuHasAvx512): gelu_erf's formula (Common.h) with
// Avx512Math.h's erf16, which is nerf_poly's. Elsewhere, and for the other
// activations, Linear.cpp's portable epilogue runs (8 lanes wide in the
// library's x86-64-v3 build).
//
//===----------------------------------------------------------------------===//
#include "ActivationTile.h"
#include "Avx512Math.h"
#include "Internal.h"

namespace nncc {
namespace kernels {

#if NNCC_KERNELS_X86
namespace {

NNCC_AVX512_FN void geluErfBlock16(float *y, int64_t ld, int64_t r0, int64_t r1, int64_t c0,
                                   int64_t c1, const float *bias, const float *residual) {
  const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f),
               invSqrt2 = _mm512_set1_ps(0.70710678118654752440f);
  for (int64_t i = r0; i < r1; ++i) {
    float *row = y + i * ld;
    const float *res = residual ? residual + i * ld : nullptr;
    for (int64_t j = c0; j < c1; j += 16) {
      const __mmask16 k =
          c1 - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (c1 - j)) - 1);
      __m512 v = _mm512_maskz_loadu_ps(k, row + j);
      if (bias)
        v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, bias + j));
      v = _mm512_mul_ps(_mm512_mul_ps(half, v),
                        _mm512_add_ps(one, erf16(_mm512_mul_ps(v, invSqrt2))));
      if (res)
        v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, res + j));
      _mm512_mask_storeu_ps(row + j, k, v);
    }
  }
}

} // namespace
#endif

bool geluErfBlockF32(float *y, int64_t ld, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                     const float *bias, const float *residual) {
#if NNCC_KERNELS_X86
  if (cpuHasAvx512()) {
    geluErfBlock16(y, ld, r0, r1, c0, c1, bias, residual);
    return true;
  }
#endif
  (void)y, (void)ld, (void)r0, (void)r1, (void)c0, (void)c1, (void)bias, (void)residual;
  return false;
}

} // namespace kernels
} // namespace nncc
