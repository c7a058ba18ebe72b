//===- SoftmaxTile.cpp - A score tile's row max and exponentials, AVX-512 -===//
//
// The per-row work of the tiled attention kernels between their two
// products: the row's largest score, then s[j] = exp(s[j] - m) and the sum
// of the weights. On a CPU with AVX-512 (cpuHasAvx512) these run 16 lanes
// wide with the exponential built on vscalefps; elsewhere they are the
// portable tile_max / exp_tile_sum of AttentionMath.h, which the library's
// x86-64-v3 build runs 8 lanes wide (and its lane max stays scalar).
//
// The AVX-512 exponential is Avx512Math.h's exp16 (nexp_poly's polynomial,
// 2^n by vscalefps). Masked scores (<= neg_big) give exactly 0, as in
// exp_tile_sum.
//
//===----------------------------------------------------------------------===//
#include "AttentionCommon.h"
#include "Avx512Math.h"

namespace nncc {
namespace kernels {

#if NNCC_KERNELS_X86
namespace {

NNCC_AVX512_FN float tileMax16(const float *s, int64_t n) {
  __m512 m0 = _mm512_set1_ps(neg_big<float>()), m1 = m0;
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    // The running max second: a NaN score is skipped, as in tile_max.
    m0 = _mm512_max_ps(_mm512_loadu_ps(s + j), m0);
    m1 = _mm512_max_ps(_mm512_loadu_ps(s + j + 16), m1);
  }
  for (; j < n; j += 16) {
    const __mmask16 k = n - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j)) - 1);
    m0 = _mm512_mask_max_ps(m0, k, _mm512_maskz_loadu_ps(k, s + j), m0);
  }
  return _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
}

NNCC_AVX512_FN float expTileSum16(float *s, int64_t n, float m) {
  const __m512 vm = _mm512_set1_ps(m), masked = _mm512_set1_ps(neg_big<float>());
  __m512 sum0 = _mm512_setzero_ps(), sum1 = _mm512_setzero_ps();
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    const __m512 x0 = _mm512_loadu_ps(s + j), x1 = _mm512_loadu_ps(s + j + 16);
    const __m512 p0 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x0, masked, _CMP_NLE_UQ),
                                          exp16(_mm512_sub_ps(x0, vm)));
    const __m512 p1 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x1, masked, _CMP_NLE_UQ),
                                          exp16(_mm512_sub_ps(x1, vm)));
    _mm512_storeu_ps(s + j, p0);
    _mm512_storeu_ps(s + j + 16, p1);
    sum0 = _mm512_add_ps(sum0, p0);
    sum1 = _mm512_add_ps(sum1, p1);
  }
  for (; j < n; j += 16) {
    const __mmask16 k = n - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j)) - 1);
    const __m512 x = _mm512_maskz_loadu_ps(k, s + j);
    const __m512 p = _mm512_maskz_mov_ps(k & _mm512_cmp_ps_mask(x, masked, _CMP_NLE_UQ),
                                         exp16(_mm512_sub_ps(x, vm)));
    _mm512_mask_storeu_ps(s + j, k, p);
    sum0 = _mm512_add_ps(sum0, p);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(sum0, sum1));
}

} // namespace
#endif

float tileMaxF32(const float *s, int64_t n) {
#if NNCC_KERNELS_X86
  if (cpuHasAvx512())
    return tileMax16(s, n);
#endif
  return tile_max(s, (int)n);
}

float expTileSumF32(float *s, int64_t n, float m) {
#if NNCC_KERNELS_X86
  if (cpuHasAvx512())
    return expTileSum16(s, n, m);
#endif
  return exp_tile_sum(s, (int)n, m);
}

} // namespace kernels
} // namespace nncc
