//===- SoftmaxTile.cpp - A score tile's row max and exponentials, AVX-512 -===//
//
// The per-row work of the tiled attention kernels between their two
// products: the row's largest score, then s[j] = exp(s[j] - m) and the sum
// of the weights. On a CPU with AVX-512 (cpuHasAvx512) these run 16 lanes
// wide with the exponential built on vscalefps; elsewhere they are the
// portable tile_max / exp_tile_sum of AttentionMath.h, which the library's
// x86-64-v3 build runs 8 lanes wide (and its lane max stays scalar).
//
// The AVX-512 exponential: n = round(x log2 e), r = x - n ln2 (ln2 in two
// parts), e^r by nexp_poly's degree-6 polynomial (Common.h; relative error
// below 2e-7), 2^n applied by vscalefps, which saturates to 0 and +inf by
// itself. Arguments are clamped to [-104, 88.73] first so that r stays
// small; below -104 the result is 0 either way (e^-104 is under the least
// float). Masked scores (<= neg_big) give exactly 0, as in exp_tile_sum.
//
//===----------------------------------------------------------------------===//
#include "AttentionCommon.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define NNCC_SOFTMAX_X86 1
#else
#define NNCC_SOFTMAX_X86 0
#endif

namespace nncc {
namespace kernels {

#if NNCC_SOFTMAX_X86
namespace {

#define NNCC_SOFTMAX_AVX512 __attribute__((target("avx512f,avx512dq,fma,avx2")))

NNCC_SOFTMAX_AVX512 inline __m512 exp16(__m512 x) {
  // Constant first: a NaN x is returned by max and min, so NaN stays NaN.
  x = _mm512_min_ps(_mm512_set1_ps(88.7228391f), _mm512_max_ps(_mm512_set1_ps(-104.0f), x));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r);
  p = _mm512_add_ps(p, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

NNCC_SOFTMAX_AVX512 float tileMax16(const float *s, int64_t n) {
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

NNCC_SOFTMAX_AVX512 float expTileSum16(float *s, int64_t n, float m) {
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
#if NNCC_SOFTMAX_X86
  if (cpuHasAvx512())
    return tileMax16(s, n);
#endif
  return tile_max(s, (int)n);
}

float expTileSumF32(float *s, int64_t n, float m) {
#if NNCC_SOFTMAX_X86
  if (cpuHasAvx512())
    return expTileSum16(s, n, m);
#endif
  return exp_tile_sum(s, (int)n, m);
}

} // namespace kernels
} // namespace nncc
