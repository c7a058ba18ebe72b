//===- RecurrentFastAvx2.cpp - AVX2 step of the f32 recurrent scan --------===//
//
// One step of the fused f32 time loop (runScan, RecurrentFast.cpp) on CPUs
// with AVX2 and FMA but no AVX-512. The time loop, the thread split over
// panels, the barrier and the packed W_hh (fastScanPack: panels of 16-unit
// groups, each k-row the panel's NV vectors of 16 columns) are the AVX-512
// loop's; what differs is the tile:
//
//  * AVX2 has 16 ymm registers, too few for a row tile over all G gates of
//    a unit group (LSTM: 8 ymm per row). The product is cut per 16-column
//    vector of the panel instead: R <= 6 batch rows x 2 ymm accumulators
//    (12 registers, 2 for W, 1 for the broadcast of h) over the whole K,
//    stored into hg [n, G*H], the portable loop's product buffer. One such
//    column block of W (K x 16 floats) stays in L1 across the row tiles.
//  * After a thread's panels, it runs gateRow (RecurrentCommon.h, the
//    portable loop's gate math, vectorised by the compiler) on its units
//    of every row: the same activations and operation order as the
//    portable loop, so results differ from it only by the GEMM's summation
//    order (test/Kernels/recurrent-fast.test).
//  * The next step's projection rows are prefetched, as in the AVX-512 loop.
//  * h is double-buffered as in the AVX-512 loop: the product reads `cur`
//    while other threads write their units of `nxt`. The GRU's gate math
//    reads h_prev from its output row, so its units are copied from `cur`
//    first.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"
#include "RecurrentCommon.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define NNCC_AVX2 __attribute__((target("avx2,fma")))

using namespace nncc::kernels;

namespace {

/// c[r, 0:cols) = sum_k a[r, k] w[k, 0:16) for the rows r < R, over K;
/// w's k-rows are ldw floats apart (the panel's vectors side by side).
template <int R>
NNCC_AVX2 void productTile(int64_t K, const float *a, int64_t lda,
                           const float *w, int64_t ldw, float *c, int64_t ldc,
                           int64_t cols) {
  // The row loops unrolled before GCC decides where the accumulators live:
  // otherwise it keeps them in memory and stores all 12 at every k.
  __m256 lo[R], hi[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
    lo[r] = hi[r] = _mm256_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const __m256 w0 = _mm256_loadu_ps(w + k * ldw);
    const __m256 w1 = _mm256_loadu_ps(w + k * ldw + 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 x = _mm256_broadcast_ss(a + r * lda + k);
      lo[r] = _mm256_fmadd_ps(x, w0, lo[r]);
      hi[r] = _mm256_fmadd_ps(x, w1, hi[r]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    float *row = c + r * ldc;
    if (cols == 16) {
      _mm256_storeu_ps(row, lo[r]);
      _mm256_storeu_ps(row + 8, hi[r]);
      continue;
    }
    // The last unit group of a layer whose H is not a multiple of 16: the
    // columns past H belong to the next gate's block of hg.
    alignas(32) float tail[16];
    _mm256_store_ps(tail, lo[r]);
    _mm256_store_ps(tail + 8, hi[r]);
    std::memcpy(row, tail, sizeof(float) * cols);
  }
}

template <int Kind>
NNCC_AVX2 void step(const FastScan &a, int64_t st, int64_t n, int64_t p0,
                    int64_t p1, const float *cur, float *nxt) {
  constexpr int G = cell_gates(Kind);
  const int U = fastScanGroupsPerPanel(Kind);
  const int64_t H = a.H, GH = G * H, NV = G * U;
  for (int64_t p = p0; p < p1; ++p) {
    const float *panel = a.packed + p * H * NV * 16;
    for (int64_t q = 0; q < NV; ++q) {
      const int64_t u = q / G, g = q % G, j0 = (p * U + u) * 16;
      if (j0 >= H)
        continue;
      const int64_t cols = std::min<int64_t>(16, H - j0);
      rowTiles<6>(n, [&](int64_t r0, auto rows) {
        productTile<decltype(rows)::value>(H, cur + r0 * H, H, panel + q * 16,
                                           NV * 16, a.hg + r0 * GH + g * H + j0,
                                           GH, cols);
      });
    }
  }
  // The gate math of this thread's units [j0, j1) in every active row.
  const int64_t j0 = std::min(H, p0 * U * 16), j1 = std::min(H, p1 * U * 16);
  if (j1 <= j0)
    return;
  const int slots = cell_saved_slots(Kind);
  for (int64_t k = 0; k < n; ++k) {
    const int64_t b = a.perm[k];
    const int64_t t = rnn_time_index((int)st, a.lens[k], a.reverse);
    const float *xr = a.xg + (b * a.Tn + t) * GH;
    float *orow = a.out + (b * a.Tn + t) * a.D * H + a.col * H;
    float *sv = a.saved ? a.saved + (((a.sd * a.B + b) * a.Tn + t) * slots) * H
                        : nullptr;
    float *hrow = nxt + k * H;
    float *crow = Kind == CellLstm ? a.c + k * H : nullptr;
    if (Kind == CellGru)
      std::memcpy(hrow + j0, cur + k * H + j0, sizeof(float) * (j1 - j0));
    // The next step's projection row (another row of the [B, T, G*H]
    // projection, never in cache by itself): this thread's lines of it,
    // fetched now so that the next step's gate math does not wait for them.
    if (st + 1 < a.lens[k]) {
      const float *xnext = xr + (a.reverse ? -GH : GH);
      for (int g = 0; g < G; ++g)
        for (int64_t j = j0; j < j1; j += 16)
          _mm_prefetch((const char *)(xnext + g * H + j), _MM_HINT_T0);
    }
    if (sv)
      gateRow<Kind, true, float>(H, j0, j1, xr, a.hg + k * GH, a.bias, hrow, crow,
                          orow, sv, nullptr, nullptr, nullptr);
    else
      gateRow<Kind, false, float>(H, j0, j1, xr, a.hg + k * GH, a.bias, hrow, crow,
                           orow, static_cast<float *>(nullptr), nullptr,
                           nullptr, nullptr);
  }
}

} // namespace

void nncc::kernels::fastScanStepAvx2(const FastScan &a, int64_t st, int64_t n,
                                     int64_t p0, int64_t p1, const float *cur,
                                     float *nxt) {
  switch (a.cell) {
  case CellLstm:
    return step<CellLstm>(a, st, n, p0, p1, cur, nxt);
  case CellGru:
    return step<CellGru>(a, st, n, p0, p1, cur, nxt);
  case CellRnnTanh:
    return step<CellRnnTanh>(a, st, n, p0, p1, cur, nxt);
  default:
    return step<CellRnnRelu>(a, st, n, p0, p1, cur, nxt);
  }
}

#else // no x86-64: fastScanAvailable is false, so this is never called.

void nncc::kernels::fastScanStepAvx2(const nncc::kernels::FastScan &, int64_t,
                                     int64_t, int64_t, int64_t, const float *,
                                     float *) {}

#endif
