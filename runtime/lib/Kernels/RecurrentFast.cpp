//===- RecurrentFast.cpp - fused time loop of the f32 recurrent scan ------===//
//
// The f32 time loop of scanDirection (Recurrent.cpp) for the Elman RNN, the
// LSTM and PyTorch's GRU, and its backward step, on CPUs with AVX-512F
// (checked at run time). On CPUs with AVX2 and FMA only, the same time loop
// runs the 8-lane step of RecurrentFastAvx2.cpp (the backward is portable
// there); the portable loop of Recurrent.cpp runs elsewhere, and for Cho's
// GRU, LSTM zoneout and f64.
//
// Per step the recurrent product h W_hh^T ([n, H] x [H, G*H]) is computed by
// our own register-blocked micro-kernel instead of one OpenBLAS call, and
// the gate math runs on the accumulator tile while it is still in
// registers:
//
//  * W_hh is packed once per call into the layer's workspace: panels of
//    16-unit groups, each panel [H (k)][NV vectors of 16 columns], the
//    vectors of one unit group being its G gates side by side (LSTM i f g o,
//    GRU r z n; the Elman RNN packs 4 unit groups per panel). A panel is
//    one contiguous stream read by every row tile.
//  * A tile is MR batch rows x NV vectors of accumulators over the whole K
//    (= H) loop, then the epilogue: + x W_ih^T + b_ih (the projection row of
//    that batch row and step) + b_hh, the activations, the state update,
//    the output row, the saved gates (training), all as 16-lane vectors.
//  * The threads split the panels (so each owns whole units and its rows of
//    the cell state) inside ONE OpenMP region over the whole time loop, with
//    a barrier per step; h is double-buffered (a step reads one buffer and
//    writes the other), both buffers declared in the workspace (carve()).
//
// The activations are the vector forms of nexp_poly / ntanh_poly /
// sigmoid<float> (Common.h), the same constants and operation order, so the
// results differ from the portable loop only by the GEMM's summation order.
//
//===----------------------------------------------------------------------===//
#include "Avx512Math.h"
#include "Internal.h"
#include "RecurrentCommon.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <climits>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
#include <sched.h>
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define NNCC_FAST_X86 1
#else
#define NNCC_FAST_X86 0
#endif

using namespace nncc::kernels;

namespace {

int64_t numPanels(int cell, int64_t H) {
  const int64_t groups = (H + 15) / 16;
  const int U = fastScanGroupsPerPanel(cell);
  return (groups + U - 1) / U;
}

bool cellSupported(int cell) {
  return cell == CellLstm || cell == CellGru || cell == CellRnnTanh ||
         cell == CellRnnRelu;
}

} // namespace

namespace {
thread_local bool countCpuOnly = true;
} // namespace

bool nncc::kernels::cpuOnlyCounted() { return countCpuOnly; }
nncc::kernels::CpuOnlySizes::CpuOnlySizes(bool on) : prev(countCpuOnly) {
  countCpuOnly = on;
}
nncc::kernels::CpuOnlySizes::~CpuOnlySizes() { countCpuOnly = prev; }

void nncc::kernels::StepBarrier::wait(int n) {
  if (n <= 1)
    return;
  const unsigned g = generation.load(std::memory_order_acquire);
  if (count.fetch_add(1, std::memory_order_acq_rel) == n - 1) {
    count.store(0, std::memory_order_relaxed);
    generation.store(g + 1, std::memory_order_seq_cst);
#ifdef __linux__
    if (sleepers.load(std::memory_order_seq_cst) > 0)
      syscall(SYS_futex, reinterpret_cast<unsigned *>(&generation),
              FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
#endif
    return;
  }
  // About 10-40 us of spinning (a step of the loops it serves takes about
  // 100 us on an idle core, so an idle machine never sleeps here), then
  // sleep until the last thread arrives.
  for (int i = 0; i < 2048; ++i) {
    if (generation.load(std::memory_order_acquire) != g)
      return;
#if NNCC_FAST_X86
    _mm_pause();
#endif
  }
  sleepers.fetch_add(1, std::memory_order_seq_cst);
  while (generation.load(std::memory_order_seq_cst) == g)
#ifdef __linux__
    syscall(SYS_futex, reinterpret_cast<unsigned *>(&generation),
            FUTEX_WAIT_PRIVATE, g, nullptr, nullptr, 0);
#else
    sched_yield();
#endif
  sleepers.fetch_sub(1, std::memory_order_relaxed);
}

extern "C" int nncc_rnn_sizes_count_cpu_workspace(int on) {
  const bool prev = countCpuOnly;
  countCpuOnly = on != 0;
  return prev ? 1 : 0;
}

int64_t nncc::kernels::fastScanPackedFloats(int cell, int64_t H) {
  if (!cellSupported(cell) || H <= 0)
    return 0;
  const int U = fastScanGroupsPerPanel(cell);
  return numPanels(cell, H) * U * cell_gates(cell) * 16 * H;
}

#if NNCC_FAST_X86
namespace {
/// Panel p of fastScanPack in 16 x 16 blocks: 16 rows of W_hh (one gate's
/// unit group, contiguous in k) loaded, transposed in registers, stored as
/// 16 k-rows of the panel. The same floats as the scalar loop below.
NNCC_AVX512_FN void packPanel16(int cell, int64_t H, const float *whh, int64_t p,
                                float *packed) {
  const int G = cell_gates(cell), U = fastScanGroupsPerPanel(cell);
  const int64_t NV = G * U;
  for (int u = 0; u < U; ++u)
    for (int g = 0; g < G; ++g) {
      const int64_t j0 = (p * U + u) * 16, rows = std::min<int64_t>(16, H - j0);
      for (int64_t k0 = 0; k0 < H; k0 += 16) {
        const __mmask16 cols = firstLanes(H - k0);
        __m512 r[16];
        for (int l = 0; l < 16; ++l)
          r[l] = l < rows ? _mm512_maskz_loadu_ps(cols, whh + (g * H + j0 + l) * H + k0)
                          : _mm512_setzero_ps();
        transpose16(r);
        for (int64_t c = 0; c < 16 && k0 + c < H; ++c)
          _mm512_storeu_ps(packed + ((p * H + k0 + c) * NV + u * G + g) * 16, r[c]);
      }
    }
}
} // namespace
#endif

void nncc::kernels::fastScanPack(int cell, int64_t H, const float *whh,
                                 float *packed) {
  const int G = cell_gates(cell), U = fastScanGroupsPerPanel(cell);
  const int NV = G * U;
  const int64_t P = numPanels(cell, H);
#if NNCC_FAST_X86
  if (cpuHasAvx512()) {
#pragma omp parallel for schedule(static) if (P * H * NV * 16 > 65536)
    for (int64_t p = 0; p < P; ++p)
      packPanel16(cell, H, whh, p, packed);
    return;
  }
#endif
#pragma omp parallel for schedule(static) if (P * H * NV * 16 > 65536)
  for (int64_t p = 0; p < P; ++p)
    for (int64_t k = 0; k < H; ++k) {
      float *dst = packed + (p * H + k) * NV * 16;
      for (int u = 0; u < U; ++u)
        for (int g = 0; g < G; ++g)
          for (int l = 0; l < 16; ++l) {
            const int64_t j = (p * U + u) * 16 + l;
            dst[(u * G + g) * 16 + l] =
                j < H ? whh[(g * H + j) * H + k] : 0.0f;
          }
    }
}

int64_t nncc::kernels::fastBackwardPanels(int64_t H) { return (H + 63) / 64; }

int64_t nncc::kernels::fastBackwardPackedFloats(int cell, int64_t H) {
  if (!cellSupported(cell) || H <= 0)
    return 0;
  return fastBackwardPanels(H) * 64 * cell_gates(cell) * H;
}

void nncc::kernels::fastBackwardPack(int cell, int64_t H, const float *whh,
                                     float *packed) {
  const int64_t GH = cell_gates(cell) * H, P = fastBackwardPanels(H);
#pragma omp parallel for schedule(static) if (P * GH * 64 > 65536)
  for (int64_t p = 0; p < P; ++p)
    for (int64_t q = 0; q < GH; ++q) {
      float *dst = packed + (p * GH + q) * 64;
      for (int64_t c = 0; c < 64; ++c) {
        const int64_t j = p * 64 + c;
        dst[c] = j < H ? whh[q * H + j] : 0.0f;
      }
    }
}

#if NNCC_FAST_X86

#define NNCC_AVX512 __attribute__((target("avx512f,avx512dq,fma,avx2")))

namespace {

/// nexp_poly (Common.h) on 16 lanes.
NNCC_AVX512 inline __m512 vexp(__m512 x) {
  const __m512 hi = _mm512_set1_ps(88.7228391f), lo = _mm512_set1_ps(-86.6f);
  const __mmask16 over = _mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ);
  const __mmask16 under = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
  // (min / max return their second operand for a NaN: NaN stays NaN.)
  __m512 xc = _mm512_min_ps(hi, _mm512_max_ps(lo, x));
  __m512 n = _mm512_roundscale_ps(
      _mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r),
                    _mm512_set1_ps(1.0f));
  __m512i bits = _mm512_slli_epi32(
      _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(126)), 23);
  __m512 y = _mm512_mul_ps(_mm512_mul_ps(p, _mm512_castsi512_ps(bits)),
                           _mm512_set1_ps(2.0f));
  y = _mm512_mask_mov_ps(y, under, _mm512_setzero_ps());
  y = _mm512_mask_mov_ps(y, over, _mm512_set1_ps(INFINITY));
  return y;
}

/// 1 / d for d in [1, 2^127]: the 14-bit estimate and one Newton step
/// (relative error about 2^-23, a fraction of the division's latency).
NNCC_AVX512 inline __m512 vrecip(__m512 d) {
  const __m512 y = _mm512_rcp14_ps(d);
  return _mm512_fmadd_ps(y, _mm512_fnmadd_ps(d, y, _mm512_set1_ps(1.0f)), y);
}

/// sigmoid<float> (Common.h): 1 / (1 + e^-x); -x is clamped to 87 so that
/// 1 + e^-x stays finite (the result is below 2^-125 there either way).
NNCC_AVX512 inline __m512 vsigmoid(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 nx = _mm512_min_ps(_mm512_set1_ps(87.0f),
                                  _mm512_sub_ps(_mm512_setzero_ps(), x));
  return vrecip(_mm512_add_ps(one, vexp(nx)));
}

/// ntanh_poly (Common.h).
NNCC_AVX512 inline __m512 vtanh(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 sign = _mm512_set1_ps(-0.0f);
  __m512 a = _mm512_andnot_ps(sign, x);
  __m512 e = vexp(_mm512_mul_ps(_mm512_set1_ps(-2.0f), a));
  __m512 t = _mm512_mul_ps(_mm512_sub_ps(one, e), vrecip(_mm512_add_ps(one, e)));
  __m512 a2 = _mm512_mul_ps(a, a);
  __m512 s = _mm512_fmadd_ps(a2, _mm512_set1_ps(-17.0f / 315.0f),
                             _mm512_set1_ps(2.0f / 15.0f));
  s = _mm512_fmadd_ps(a2, s, _mm512_set1_ps(-1.0f / 3.0f));
  s = _mm512_fmadd_ps(a2, s, one);
  s = _mm512_mul_ps(a, s);
  t = _mm512_mask_mov_ps(t, _mm512_cmp_ps_mask(a, _mm512_set1_ps(0.125f), _CMP_LT_OQ), s);
  return _mm512_or_ps(t, _mm512_and_ps(x, sign));
}

NNCC_AVX512 inline __m512 vload(const float *p, __mmask16 m) {
  return _mm512_maskz_loadu_ps(m, p);
}
NNCC_AVX512 inline void vstore(float *p, __mmask16 m, __m512 v) {
  _mm512_mask_storeu_ps(p, m, v);
}

/// One step of the rows [r0, r0 + R) over panel p: the K loop into R x NV
/// accumulators, then the gate epilogue.
template <int Kind, int R, int NV>
NNCC_AVX512 void tile(const FastScan &a, int64_t st, int64_t p, int64_t r0,
                      const float *cur, float *nxt) {
  const int64_t H = a.H;
  const float *wp = a.packed + p * H * NV * 16;
  const float *arow = cur + r0 * H;
  __m512 acc[R][NV];
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < NV; ++q)
      acc[r][q] = _mm512_setzero_ps();
  for (int64_t k = 0; k < H; ++k) {
    __m512 w[NV];
    for (int q = 0; q < NV; ++q)
      w[q] = _mm512_loadu_ps(wp + k * NV * 16 + q * 16);
    for (int r = 0; r < R; ++r) {
      const __m512 x = _mm512_set1_ps(arow[r * H + k]);
      for (int q = 0; q < NV; ++q)
        acc[r][q] = _mm512_fmadd_ps(x, w[q], acc[r][q]);
    }
  }

  constexpr int G = cell_gates(Kind);
  constexpr int U = NV / G;
  const int64_t GH = G * H;
  const int slots = cell_saved_slots(Kind);
  for (int r = 0; r < R; ++r) {
    const int64_t k = r0 + r;
    const int64_t b = a.perm[k];
    const int64_t t = rnn_time_index((int)st, a.lens[k], a.reverse);
    const float *xr = a.xg + (b * a.Tn + t) * GH;
    float *orow = a.out + (b * a.Tn + t) * a.D * H + a.col * H;
    float *sv = a.saved
                    ? a.saved + (((a.sd * a.B + b) * a.Tn + t) * slots) * H
                    : nullptr;
    const float *hprev = cur + k * H;
    float *hnew = nxt + k * H;
    // The next step's projection row of this batch row (another row of the
    // [B, T, G*H] projection, never in cache by itself): its lines of this
    // panel, fetched now so the next epilogue does not wait for memory.
    const bool more = st + 1 < a.lens[k];
    const float *xnext = xr + (a.reverse ? -GH : GH);
    for (int u = 0; u < U; ++u) {
      const int64_t j0 = (p * U + u) * 16;
      if (j0 >= H)
        break;
      const __mmask16 m =
          j0 + 16 <= H ? (__mmask16)0xFFFF : (__mmask16)((1u << (H - j0)) - 1);
      if (more)
        for (int g = 0; g < G; ++g)
          _mm_prefetch((const char *)(xnext + g * H + j0), _MM_HINT_T0);
#define pre(g)                                                                 \
  _mm512_add_ps(_mm512_add_ps(vload(xr + (g) * H + j0, m), acc[r][u * G + (g)]), \
                vload(a.bias + (g) * H + j0, m))
      __m512 h;
      if (Kind == CellLstm) {
        const __m512 gi = vsigmoid(pre(0)), gf = vsigmoid(pre(1)),
                     gg = vtanh(pre(2)), go = vsigmoid(pre(3));
        float *crow = a.c + k * H + j0;
        const __m512 c = _mm512_fmadd_ps(gf, vload(crow, m), _mm512_mul_ps(gi, gg));
        h = _mm512_mul_ps(go, vtanh(c));
        vstore(crow, m, c);
        if (sv) {
          vstore(sv + j0, m, gi);
          vstore(sv + H + j0, m, gf);
          vstore(sv + 2 * H + j0, m, gg);
          vstore(sv + 3 * H + j0, m, go);
          vstore(sv + 4 * H + j0, m, c);
        }
      } else if (Kind == CellGru) {
        const __m512 gr = vsigmoid(pre(0)), gz = vsigmoid(pre(1));
        const __m512 hn = _mm512_add_ps(acc[r][u * G + 2],
                                        vload(a.bias + 2 * H + j0, m));
        const __m512 n = vtanh(_mm512_fmadd_ps(gr, hn, vload(xr + 2 * H + j0, m)));
        const __m512 one = _mm512_set1_ps(1.0f);
        h = _mm512_fmadd_ps(_mm512_sub_ps(one, gz), n,
                            _mm512_mul_ps(gz, vload(hprev + j0, m)));
        if (sv) {
          vstore(sv + j0, m, gr);
          vstore(sv + H + j0, m, gz);
          vstore(sv + 2 * H + j0, m, n);
          vstore(sv + 3 * H + j0, m, hn);
        }
      } else {
        const __m512 x = pre(0);
        h = Kind == CellRnnRelu ? _mm512_max_ps(x, _mm512_setzero_ps())
                                : vtanh(x);
        if (sv)
          vstore(sv + j0, m, h);
      }
#undef pre
      vstore(hnew + j0, m, h);
      vstore(orow + j0, m, h);
    }
  }
}

template <int Kind, int MR, int NV>
NNCC_AVX512 void stepPanels(const FastScan &a, int64_t st, int64_t n,
                            int64_t p0, int64_t p1, const float *cur,
                            float *nxt) {
  for (int64_t p = p0; p < p1; ++p)
    rowTiles<MR>(n, [&](int64_t r0, auto rows) {
      tile<Kind, decltype(rows)::value, NV>(a, st, p, r0, cur, nxt);
    });
}

/// The time loop: the threads split the panels, one barrier per step; each
/// step runs the AVX-512 tiles (MR rows x NV vectors) or, without AVX-512,
/// the AVX2 step of RecurrentFastAvx2.cpp.
template <int Kind, int MR, int NV, bool Avx512> void runScan(const FastScan &a) {
  const int64_t B = a.B, H = a.H;
  const int64_t P = numPanels(Kind, H);
  const int64_t maxLen = B > 0 ? a.lens[0] : 0;
  int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
  if ((int64_t)nt > P)
    nt = (int)P;
  if (!recurrentStepThreads(B, cell_gates(Kind) * H, H))
    nt = 1;
  if (nt < 1)
    nt = 1;
  StepBarrier barrier;
#pragma omp parallel num_threads(nt)
  {
    const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
    const int64_t p0 = P * tid / nth, p1 = P * (tid + 1) / nth;
    const int U = fastScanGroupsPerPanel(Kind);
    const int64_t j0 = std::min(H, p0 * U * 16), j1 = std::min(H, p1 * U * 16);
    int64_t n = B;
    for (int64_t st = 0; st < maxLen; ++st) {
      while (n > 0 && a.lens[n - 1] <= st)
        --n;
      if (n == 0)
        break;
      const float *cur = (st & 1) ? a.hAlt : a.h;
      float *nxt = (st & 1) ? a.h : a.hAlt;
      if constexpr (Avx512)
        stepPanels<Kind, MR, NV>(a, st, n, p0, p1, cur, nxt);
      else
        fastScanStepAvx2(a, st, n, p0, p1, cur, nxt);
      // BPTT checkpoint (LSTM): this thread's units of the cell state
      // entering step st + 1 when that step starts a segment.
      if (Kind == CellLstm && a.ckc && (st + 1) % a.every == 0 &&
          st + 1 < maxLen && j1 > j0) {
        float *dst = a.ckc + ((st + 1) / a.every - 1) * B * H;
        for (int64_t k = 0; k < n && a.lens[k] > st + 1; ++k)
          std::memcpy(dst + a.perm[k] * H + j0, a.c + k * H + j0,
                      sizeof(float) * (j1 - j0));
      }
      barrier.wait(nth);
    }
  }
  // A row's last step (len - 1) wrote h into buffer len % 2: bring the odd
  // ones back to a.h, where the caller reads the final state.
  for (int64_t k = 0; k < B; ++k)
    if (a.lens[k] & 1)
      std::memcpy(a.h + k * H, a.hAlt + k * H, sizeof(float) * H);
}

/// dh rows [r0, r0 + R), units of panel p (backward step).
template <int R>
NNCC_AVX512 void bwdTile(int64_t K, int64_t H, const float *a,
                         const int64_t *rowOff, const float *packed,
                         int64_t p, int64_t r0, const float *direct,
                         float *dh) {
  constexpr int NV = 4;
  const float *wp = packed + p * K * 64;
  const float *arow[R];
  for (int r = 0; r < R; ++r)
    arow[r] = a + rowOff[r0 + r];
  __m512 acc[R][NV];
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < NV; ++q)
      acc[r][q] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    __m512 w[NV];
    for (int q = 0; q < NV; ++q)
      w[q] = _mm512_loadu_ps(wp + k * 64 + q * 16);
    for (int r = 0; r < R; ++r) {
      const __m512 x = _mm512_set1_ps(arow[r][k]);
      for (int q = 0; q < NV; ++q)
        acc[r][q] = _mm512_fmadd_ps(x, w[q], acc[r][q]);
    }
  }
  for (int r = 0; r < R; ++r) {
    const int64_t row = (r0 + r) * H;
    for (int q = 0; q < NV; ++q) {
      const int64_t j0 = p * 64 + q * 16;
      if (j0 >= H)
        break;
      const __mmask16 m =
          j0 + 16 <= H ? (__mmask16)0xFFFF : (__mmask16)((1u << (H - j0)) - 1);
      vstore(dh + row + j0, m,
             _mm512_add_ps(vload(direct + row + j0, m), acc[r][q]));
    }
  }
}

NNCC_AVX512 void bwdStep(int64_t n, int64_t K, int64_t H, const float *a,
                         const int64_t *rowOff, const float *packed,
                         int64_t p0, int64_t p1, const float *direct,
                         float *dh) {
  for (int64_t p = p0; p < p1; ++p)
    rowTiles<6>(n, [&](int64_t r0, auto rows) {
      bwdTile<decltype(rows)::value>(K, H, a, rowOff, packed, p, r0, direct,
                                     dh);
    });
}

} // namespace

bool nncc::kernels::fastScanAvailable(int cell) {
  return cellSupported(cell) && (cpuHasAvx512() || cpuHasAvx2Fma());
}

bool nncc::kernels::fastBackwardAvailable(int cell) {
  return cellSupported(cell) && cpuHasAvx512();
}

void nncc::kernels::fastBackwardStep(int64_t n, int64_t K, int64_t H,
                                     const float *a, const int64_t *rowOff,
                                     const float *packed, int64_t p0,
                                     int64_t p1, const float *direct,
                                     float *dh) {
  bwdStep(n, K, H, a, rowOff, packed, p0, p1, direct, dh);
}

void nncc::kernels::fastScanRun(const FastScan &a) {
  if (!cpuHasAvx512()) {
    switch (a.cell) {
    case CellLstm:
      return runScan<CellLstm, 0, 0, false>(a);
    case CellGru:
      return runScan<CellGru, 0, 0, false>(a);
    case CellRnnTanh:
      return runScan<CellRnnTanh, 0, 0, false>(a);
    default:
      return runScan<CellRnnRelu, 0, 0, false>(a);
    }
  }
  switch (a.cell) {
  case CellLstm:
    runScan<CellLstm, 6, 4, true>(a);
    break;
  case CellGru:
    runScan<CellGru, 8, 3, true>(a);
    break;
  case CellRnnTanh:
    runScan<CellRnnTanh, 6, 4, true>(a);
    break;
  default:
    runScan<CellRnnRelu, 6, 4, true>(a);
    break;
  }
}

#else // !NNCC_FAST_X86

bool nncc::kernels::fastScanAvailable(int) { return false; }
bool nncc::kernels::fastBackwardAvailable(int) { return false; }
void nncc::kernels::fastScanRun(const FastScan &) {}
void nncc::kernels::fastBackwardStep(int64_t, int64_t, int64_t, const float *,
                                     const int64_t *, const float *, int64_t,
                                     int64_t, const float *, float *) {}

#endif
