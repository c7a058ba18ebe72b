//===- Avx512Math.h - 16-lane float math of the AVX-512 kernel paths -----===//
//
// Internal to libnncc_kernels, which is built for x86-64-v3: these functions
// are compiled for AVX-512 by target attribute and have internal linkage
// (static), so no AVX-512 copy of them can be merged into portable code.
// Callers run them only where cpuHasAvx512() (Internal.h) says so.
//
// exp16 is nexp_poly's polynomial (Common.h) with 2^n applied by vscalefps,
// which saturates to 0 and +inf by itself; arguments are clamped to
// [-104, 88.73] so that r stays small (below -104 the result is 0 either
// way: e^-104 is under the least float). erf16 is nerf_poly's: the
// Maclaurin series below |x| = 1, Abramowitz & Stegun 7.1.26 above.
// transpose16 transposes a 16 x 16 float block in registers (the packing of
// ownSgemm's transposed operands and of the recurrent scan's W_hh).
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_AVX512MATH_H
#define NNCC_KERNELS_AVX512MATH_H

#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define NNCC_KERNELS_X86 1
#define NNCC_AVX512_FN __attribute__((target("avx512f,avx512dq,fma,avx2")))

namespace nncc {
namespace kernels {

NNCC_AVX512_FN static inline __m512 exp16(__m512 x) {
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

NNCC_AVX512_FN static inline __m512 erf16(__m512 x) {
  const __m512 sign = _mm512_set1_ps(-0.0f);
  const __m512 a = _mm512_andnot_ps(sign, x), a2 = _mm512_mul_ps(a, a);
  static const float series[] = {
      1.480719282e-08f, -1.636584469e-07f, 1.646211437e-06f, -1.492565036e-05f,
      0.0001205533298f, -0.0008548327023f, 0.005223977625f,  -0.02686617065f,
      0.1128379167f,    -0.376126389f,     1.128379167f};
  __m512 s = _mm512_set1_ps(series[0]);
  for (int i = 1; i < 11; ++i)
    s = _mm512_fmadd_ps(s, a2, _mm512_set1_ps(series[i]));
  s = _mm512_mul_ps(a, s);
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 t =
      _mm512_div_ps(one, _mm512_fmadd_ps(_mm512_set1_ps(0.3275911f), a, one));
  __m512 q = _mm512_set1_ps(1.061405429f);
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(-1.453152027f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(1.421413741f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(-0.284496736f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(0.254829592f));
  q = _mm512_mul_ps(q, t);
  const __m512 l = _mm512_fnmadd_ps(q, exp16(_mm512_sub_ps(_mm512_setzero_ps(), a2)), one);
  const __m512 e = _mm512_mask_mov_ps(l, _mm512_cmp_ps_mask(a, one, _CMP_LT_OQ), s);
  return _mm512_or_ps(e, _mm512_and_ps(x, sign));
}

/// Lanes [0, n) of a 16-lane mask (n may exceed 16).
static inline __mmask16 firstLanes(int64_t n) {
  return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n > 0 ? n : 0)) - 1);
}

/// Transposes the 16 x 16 block r[row][col] in registers: afterwards r[c]
/// holds column c (element `row` in lane row).
NNCC_AVX512_FN static inline void transpose16(__m512 r[16]) {
  __m512 t[16], u[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // u[4g + c], lane quarter q: rows 4g..4g+3 of column 4q + c.
  for (int g = 0; g < 4; ++g) {
    const __m512d a = _mm512_castps_pd(t[4 * g]), b = _mm512_castps_pd(t[4 * g + 1]),
                  c = _mm512_castps_pd(t[4 * g + 2]), d = _mm512_castps_pd(t[4 * g + 3]);
    u[4 * g + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    u[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    u[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    u[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  // Column 4q + c gathers quarter q of u[c], u[4 + c], u[8 + c], u[12 + c].
  for (int c = 0; c < 4; ++c) {
    const __m512 v0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x44),
                 v1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xEE),
                 w0 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x44),
                 w1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xEE);
    r[c] = _mm512_shuffle_f32x4(v0, w0, 0x88);
    r[4 + c] = _mm512_shuffle_f32x4(v0, w0, 0xDD);
    r[8 + c] = _mm512_shuffle_f32x4(v1, w1, 0x88);
    r[12 + c] = _mm512_shuffle_f32x4(v1, w1, 0xDD);
  }
}

} // namespace kernels
} // namespace nncc

#else
#define NNCC_KERNELS_X86 0
#endif

#endif // NNCC_KERNELS_AVX512MATH_H
