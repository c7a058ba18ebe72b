//===- Backward.cuh - CUDA twins of the small backward kernels --*- CUDA -*-===//
//
// The backward of the losses, layer norm, embeddings and broadcasts: the
// CUDA side of runtime/lib/Kernels/MiscBackward.cpp and GradKernels.h's
// broadcast_axes, with the same formulas (BackwardMath.h, NormMath.h) and
// double accumulation. Every sum over rows runs in a fixed order, so the
// results do not depend on scheduling. The loss adjoint `g` is a device
// scalar. fp32 ran on an H100 in the seed models' training steps (docs/cuda.md,
// "First run on an H100 (2026-11-26)"), bf16 on an H200 in five models'
// bf16 training steps (2026-11-27); fp64 has not run on a GPU.
//
// Element types: float, double and bf16_t (Bf16.h). T is the storage type
// of every tensor (g, the loss adjoint, included); elements are read through
// load_acc and each output is stored once through store_acc<T>. The
// arithmetic is the f32 kernels' for every T: double everywhere except the
// embedding segment sums, which accumulate in acc_t<T> (fp32 for bf16), so
// a bf16 output is the float kernel's output on the same (widened) values,
// rounded once to bf16 (double -> float -> bf16 where the f32 kernel rounds
// a double). Scratch (statistics, column partials, counts, keys) does not
// depend on T.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_BACKWARD_CUH
#define NNCC_KERNELS_CUDA_BACKWARD_CUH

#include "nncc/Kernels/BackwardMath.h"
#include "nncc/Kernels/Bf16.h"
#include "nncc/Kernels/CUDA/Common.cuh"
#include "nncc/Kernels/CUDA/Data.cuh"
#include "nncc/Kernels/CUDA/LayerNorm.cuh"

namespace nncc {
namespace kernels {
namespace cuda {

constexpr int kBackwardThreads = 256;

//===----------------------------------------------------------------------===//
// Losses (mean reductions; dloss a device scalar, NULL = 1)
//===----------------------------------------------------------------------===//

template <typename T>
__global__ void mse_backward_kernel(int64_t n, const T *a, const T *b, const T *g, T *da) {
  const double s = 2.0 * (g ? (double)load_acc(g[0]) : 1.0) / (double)n;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    da[i] = store_acc<T>((acc_t<T>)(((double)load_acc(a[i]) - (double)load_acc(b[i])) * s));
}

template <typename T>
__global__ void bce_backward_kernel(int64_t N, int64_t C, const T *x, const T *y, const T *pw,
                                    const T *g, T *dx) {
  const double s = (g ? (double)load_acc(g[0]) : 1.0) / (double)(N * C);
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < N * C;
       i += (int64_t)gridDim.x * blockDim.x)
    dx[i] = store_acc<T>((acc_t<T>)(bce_logits_grad_elem<double>(
                                         (double)load_acc(x[i]), (double)load_acc(y[i]),
                                         pw ? (double)load_acc(pw[i % C]) : 1.0) *
                                     s));
}

/// count[0] = the targets that are not `ignore` (one CTA, fixed order).
template <typename I>
__global__ void count_targets_kernel(int64_t N, const I *tgt, int64_t ignore, double *count) {
  __shared__ double scratch[32];
  double c = 0;
  for (int64_t i = threadIdx.x; i < N; i += blockDim.x)
    c += (int64_t)tgt[i] != ignore ? 1.0 : 0.0;
  c = block_sum(c, scratch);
  if (threadIdx.x == 0)
    count[0] = c;
}

/// One CTA per row: (softmax - onehot(t)) * g / count; ignored rows 0 (NaN
/// when every row is ignored: 0/0, as PyTorch and the CPU). A target out of
/// range (the forward's index check reports it) leaves its row at 0.
template <typename T, typename I>
__global__ void cross_entropy_backward_kernel(int64_t N, int64_t C, const T *logits,
                                              const I *tgt, int64_t ignore, const T *g,
                                              const double *count, T *dl) {
  __shared__ double scratch[32];
  const double cnt = count[0];
  const double s = (g ? (double)load_acc(g[0]) : 1.0) / cnt;
  for (int64_t r = blockIdx.x; r < N; r += gridDim.x) {
    const T *lr = logits + r * C;
    T *dr = dl + r * C;
    const int64_t t = (int64_t)tgt[r];
    if (t == ignore || t < 0 || t >= C) {
      const T fill = store_acc<T>((acc_t<T>)(t == ignore && cnt == 0 ? s : 0.0));
      for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
        dr[c] = fill;
      continue;
    }
    double mx = -INFINITY;
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
      mx = fmax(mx, (double)load_acc(lr[c]));
    mx = block_max(mx, scratch);
    double sum = 0;
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
      sum += exp((double)load_acc(lr[c]) - mx);
    sum = block_sum(sum, scratch);
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
      dr[c] = store_acc<T>(
          (acc_t<T>)((exp((double)load_acc(lr[c]) - mx) / sum - (c == t ? 1.0 : 0.0)) * s));
  }
}

template <typename T>
cudaError_t launch_mse_loss_backward(int64_t n, const T *a, const T *b, const T *g, T *da,
                                     cudaStream_t stream) {
  if (n <= 0)
    return cudaErrorInvalidValue;
  mse_backward_kernel<T><<<grid_for(n, kBackwardThreads), kBackwardThreads, 0, stream>>>(
      n, a, b, g, da);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_bce_with_logits_backward(int64_t N, int64_t C, const T *x, const T *y,
                                            const T *pw, const T *g, T *dx,
                                            cudaStream_t stream) {
  if (N <= 0 || C <= 0)
    return cudaErrorInvalidValue;
  bce_backward_kernel<T><<<grid_for(N * C, kBackwardThreads), kBackwardThreads, 0, stream>>>(
      N, C, x, y, pw, g, dx);
  return cudaGetLastError();
}

/// `scratch`: cross_entropy_backward_scratch_bytes() of device memory.
inline uint64_t cross_entropy_backward_scratch_bytes() { return sizeof(double); }

template <typename T, typename I>
cudaError_t launch_cross_entropy_backward(int64_t N, int64_t C, const T *logits, const I *tgt,
                                          int64_t ignore, const T *g, T *dl, char *scratch,
                                          cudaStream_t stream) {
  if (N <= 0 || C <= 0)
    return cudaErrorInvalidValue;
  double *count = reinterpret_cast<double *>(scratch);
  count_targets_kernel<I><<<1, kBackwardThreads, 0, stream>>>(N, tgt, ignore, count);
  cross_entropy_backward_kernel<T, I>
      <<<grid_for(N, 1, 65535u * 4u), kBackwardThreads, 0, stream>>>(N, C, logits, tgt, ignore,
                                                                     g, count, dl);
  return cudaGetLastError();
}

//===----------------------------------------------------------------------===//
// Layer norm: y = LN(x + res) * gamma (+ beta); dx (= dres), dgamma, dbeta
//===----------------------------------------------------------------------===//

/// One CTA per row: the row's mean and rstd (kept in `stats` for the
/// column pass) and dx = rstd (g - mean(g) - xhat mean(g xhat)) (+ dsum).
template <typename T>
__global__ void layer_norm_backward_rows_kernel(int64_t rows, int64_t N, const T *x,
                                                const T *res, const T *gamma, double eps,
                                                const T *dy, const T *dsum, T *dx,
                                                double *stats) {
  __shared__ double scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = x + r * N, *rr = res ? res + r * N : nullptr, *dyr = dy + r * N;
    auto sAt = [&](int64_t j) {
      return (double)load_acc(xr[j]) + (rr ? (double)load_acc(rr[j]) : 0.0);
    };
    double s = 0;
    for (int64_t j = threadIdx.x; j < N; j += blockDim.x)
      s += sAt(j);
    const double mean = block_sum(s, scratch) / (double)N;
    double v = 0;
    for (int64_t j = threadIdx.x; j < N; j += blockDim.x) {
      const double d = sAt(j) - mean;
      v += d * d;
    }
    const double rstd = 1.0 / sqrt(block_sum(v, scratch) / (double)N + eps);
    double sg = 0, sgx = 0;
    for (int64_t j = threadIdx.x; j < N; j += blockDim.x) {
      const double gj = (double)load_acc(dyr[j]) * (gamma ? (double)load_acc(gamma[j]) : 1.0);
      sg += gj;
      sgx += gj * (sAt(j) - mean) * rstd;
    }
    sg = block_sum(sg, scratch) / (double)N;
    sgx = block_sum(sgx, scratch) / (double)N;
    for (int64_t j = threadIdx.x; j < N; j += blockDim.x) {
      const double xh = (sAt(j) - mean) * rstd;
      const double gj = (double)load_acc(dyr[j]) * (gamma ? (double)load_acc(gamma[j]) : 1.0);
      double val = rstd * (gj - sg - xh * sgx);
      if (dsum)
        val += (double)load_acc(dsum[r * N + j]);
      dx[r * N + j] = store_acc<T>((acc_t<T>)val);
    }
    if (stats && threadIdx.x == 0) {
      stats[2 * r] = mean;
      stats[2 * r + 1] = rstd;
    }
    __syncthreads();
  }
}

/// layer_norm_backward_rows_kernel for rows of N <= 32 VPL columns: one
/// warp per row (kLnWarpRows per CTA), the row's x + res and dy in
/// registers (each read once), the same double arithmetic.
template <typename T, int VPL>
__global__ void __launch_bounds__(kLnWarpRows * 32)
    layer_norm_backward_warp_kernel(int64_t rows, int64_t N, const T *__restrict__ x,
                                    const T *__restrict__ res, const T *__restrict__ gamma,
                                    double eps, const T *__restrict__ dy,
                                    const T *__restrict__ dsum, T *__restrict__ dx,
                                    double *__restrict__ stats) {
  const int lane = threadIdx.x & 31;
  const int64_t r = (int64_t)blockIdx.x * kLnWarpRows + (threadIdx.x >> 5);
  if (r >= rows) // a whole warp leaves; no barrier follows
    return;
  double sv[VPL];   // x + res as the CTA kernel's sAt forms it
  acc_t<T> gv[VPL]; // dy, widened
  double s = 0;
#pragma unroll
  for (int k = 0; k < VPL; ++k) {
    const int64_t j = lane + 32 * k;
    sv[k] = 0;
    gv[k] = acc_t<T>(0);
    if (j < N) {
      sv[k] = (double)load_acc(x[r * N + j]) + (res ? (double)load_acc(res[r * N + j]) : 0.0);
      gv[k] = load_acc(dy[r * N + j]);
      s += sv[k];
    }
  }
  const double mean = warp_sum(s) / (double)N;
  double v = 0;
#pragma unroll
  for (int k = 0; k < VPL; ++k)
    if (lane + 32 * k < N) {
      const double d = sv[k] - mean;
      v += d * d;
    }
  const double rstd = 1.0 / sqrt(warp_sum(v) / (double)N + eps);
  double sg = 0, sgx = 0;
#pragma unroll
  for (int k = 0; k < VPL; ++k) {
    const int64_t j = lane + 32 * k;
    if (j < N) {
      const double gj = (double)gv[k] * (gamma ? (double)load_acc(gamma[j]) : 1.0);
      sg += gj;
      sgx += gj * (sv[k] - mean) * rstd;
    }
  }
  sg = warp_sum(sg) / (double)N;
  sgx = warp_sum(sgx) / (double)N;
#pragma unroll
  for (int k = 0; k < VPL; ++k) {
    const int64_t j = lane + 32 * k;
    if (j < N) {
      const double xh = (sv[k] - mean) * rstd;
      const double gj = (double)gv[k] * (gamma ? (double)load_acc(gamma[j]) : 1.0);
      double val = rstd * (gj - sg - xh * sgx);
      if (dsum)
        val += (double)load_acc(dsum[r * N + j]);
      dx[r * N + j] = store_acc<T>((acc_t<T>)val);
    }
  }
  if (stats && lane == 0) {
    stats[2 * r] = mean;
    stats[2 * r + 1] = rstd;
  }
}

/// Row r's terms of column j: dgamma += dy xhat, dbeta += dy.
template <typename T> struct LayerNormParamTerms {
  int64_t N;
  const T *x, *res, *dy;
  const double *stats;
  __device__ void operator()(int64_t r, int64_t j, double acc[2]) const {
    const double s =
        (double)load_acc(x[r * N + j]) + (res ? (double)load_acc(res[r * N + j]) : 0.0);
    const double d = (double)load_acc(dy[r * N + j]);
    acc[0] += d * (s - stats[2 * r]) * stats[2 * r + 1];
    acc[1] += d;
  }
};

template <typename T> struct LayerNormParamStore {
  T *dgamma, *dbeta;
  __device__ void operator()(int64_t j, const double sums[2]) const {
    if (dgamma)
      dgamma[j] = store_acc<T>((acc_t<T>)sums[0]);
    if (dbeta)
      dbeta[j] = store_acc<T>((acc_t<T>)sums[1]);
  }
};

/// Scratch for launch_layer_norm_backward: the rows' statistics, then the
/// column-sum partials of dgamma / dbeta.
inline uint64_t layer_norm_stats_bytes(int64_t rows) {
  return ((uint64_t)(rows > 0 ? rows : 1) * 2 * sizeof(double) + 255) / 256 * 256;
}
inline uint64_t layer_norm_backward_scratch_bytes(int64_t rows, int64_t N) {
  return layer_norm_stats_bytes(rows) + col_sum_scratch_bytes(rows, N, 2);
}

/// dx per row (a warp per row up to kLnWarpMaxCols columns, else a CTA
/// per row); dgamma / dbeta as deterministic column
/// sums over the rows (launch_col_sums). `scratch`:
/// layer_norm_backward_scratch_bytes(rows, N) bytes.
template <typename T>
cudaError_t launch_layer_norm_backward(int64_t rows, int64_t N, const T *x, const T *res,
                                       const T *gamma, double eps, const T *dy, const T *dsum,
                                       T *dx, T *dgamma, T *dbeta, char *scratch,
                                       cudaStream_t stream) {
  if (rows < 0 || N <= 0 || !(eps >= 0))
    return cudaErrorInvalidValue;
  if (rows == 0)
    return cudaSuccess;
  double *stats = (dgamma || dbeta) ? reinterpret_cast<double *>(scratch) : nullptr;
  cudaError_t e;
  if (N <= kLnWarpMaxCols)
    e = ln_dispatch_vpl(N, [&](auto vpl) {
      layer_norm_backward_warp_kernel<T, decltype(vpl)::value>
          <<<(unsigned)((rows + kLnWarpRows - 1) / kLnWarpRows), kLnWarpRows * 32, 0, stream>>>(
              rows, N, x, res, gamma, eps, dy, dsum, dx, stats);
      return cudaGetLastError();
    });
  else {
    layer_norm_backward_rows_kernel<T><<<grid_for(rows, 1, 65535u * 4u), kBackwardThreads, 0,
                                         stream>>>(rows, N, x, res, gamma, eps, dy, dsum, dx,
                                                   stats);
    e = cudaGetLastError();
  }
  if (e != cudaSuccess || !stats)
    return e;
  return launch_col_sums<2>(rows, N, LayerNormParamTerms<T>{N, x, res, dy, stats},
                            LayerNormParamStore<T>{dgamma, dbeta},
                            scratch + layer_norm_stats_bytes(rows), stream);
}

//===----------------------------------------------------------------------===//
// Embedding: dtable = scatter-add of dy rows by index
//===----------------------------------------------------------------------===//

// Deterministic and in the CPU's order without atomics on the table: the
// positions are sorted by id with a stable LSD radix sort (8-bit digits),
// then one thread per (id, column) adds that id's dy rows in position
// order -- the CPU's summation order, so both give the same bits. Padding
// and out-of-range ids get the key V, sort last and add nothing.
//
// Launches: keys, then per digit pass count / scan / scatter, then the
// segment sums: 2 + 3 * ceil(bits(V) / 8) small kernels (8 for a 30522-word
// vocabulary) instead of one thread per column walking all n positions.

constexpr int kRadixThreads = 256;                  // one thread per digit value
constexpr int kRadixRounds = 4;                     // rows of 256 positions per tile
constexpr int kRadixTile = kRadixThreads * kRadixRounds;
constexpr int kRadixWarps = kRadixThreads / 32;
constexpr int kScanThreads = 1024;
constexpr int kSegmentThreads = 128;                // columns per CTA of the sums

inline int64_t radix_tiles(int64_t n) { return (n + kRadixTile - 1) / kRadixTile; }

/// Device scratch of launch_embedding_backward: keys and positions twice
/// (ping-pong) and the per-(digit, tile) counts.
inline int64_t embedding_backward_scratch_bytes(int64_t n, int64_t V) {
  (void)V;
  auto align = [](int64_t b) { return (b + 255) / 256 * 256; };
  return 4 * align(n * (int64_t)sizeof(uint32_t)) +
         align(256 * radix_tiles(n) * (int64_t)sizeof(uint32_t));
}

/// keys[i] = idx[i] for a valid, non-padding id, else V; pos[i] = i.
template <typename I>
__global__ void embedding_keys_kernel(int64_t n, int64_t V, const I *idx, int64_t paddingIdx,
                                      uint32_t *keys, uint32_t *pos) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t v = (int64_t)idx[i];
    keys[i] = (v == paddingIdx || v < 0 || v >= V) ? (uint32_t)V : (uint32_t)v;
    pos[i] = (uint32_t)i;
  }
}

/// counts[d * tiles + tile] = how many keys of the tile have digit d.
__global__ void __launch_bounds__(kRadixThreads)
    radix_count_kernel(int64_t n, int shift, const uint32_t *keys, uint32_t *counts) {
  __shared__ uint32_t hist[256];
  const int64_t tile = blockIdx.x, tiles = gridDim.x;
  hist[threadIdx.x] = 0;
  __syncthreads();
  for (int r = 0; r < kRadixRounds; ++r) {
    const int64_t e = tile * kRadixTile + r * kRadixThreads + threadIdx.x;
    if (e < n)
      atomicAdd(&hist[(keys[e] >> shift) & 255u], 1u);
  }
  __syncthreads();
  counts[threadIdx.x * tiles + tile] = hist[threadIdx.x];
}

/// Exclusive prefix sum of counts[0, total) in place, one CTA: each thread
/// sums a contiguous chunk, a block scan of the chunk sums, then each chunk
/// is rewritten from its offset.
__global__ void __launch_bounds__(kScanThreads) radix_scan_kernel(int64_t total,
                                                                  uint32_t *counts) {
  __shared__ uint32_t part[kScanThreads];
  const int64_t chunk = (total + kScanThreads - 1) / kScanThreads;
  const int64_t lo = threadIdx.x * chunk, hi = lo + chunk < total ? lo + chunk : total;
  uint32_t sum = 0;
  for (int64_t i = lo; i < hi; ++i)
    sum += counts[i];
  part[threadIdx.x] = sum;
  __syncthreads();
  // Hillis-Steele inclusive scan of the chunk sums.
  for (int off = 1; off < kScanThreads; off *= 2) {
    const uint32_t add = threadIdx.x >= off ? part[threadIdx.x - off] : 0u;
    __syncthreads();
    part[threadIdx.x] += add;
    __syncthreads();
  }
  uint32_t run = part[threadIdx.x] - sum;
  for (int64_t i = lo; i < hi; ++i) {
    const uint32_t c = counts[i];
    counts[i] = run;
    run += c;
  }
}

/// Stable scatter of one digit pass. Within a tile, a key's place is the
/// tile's offset for its digit (`offsets`, scanned counts) plus the keys of
/// the same digit before it: earlier rounds (`base`), earlier warps of its
/// round (`warp_hist`), earlier lanes of its warp (__match_any_sync).
__global__ void __launch_bounds__(kRadixThreads)
    radix_scatter_kernel(int64_t n, int shift, const uint32_t *keys_in,
                         const uint32_t *pos_in, uint32_t *keys_out, uint32_t *pos_out,
                         const uint32_t *offsets) {
  __shared__ uint32_t base[256];
  __shared__ uint32_t warp_hist[kRadixWarps][256];
  const int64_t tile = blockIdx.x, tiles = gridDim.x;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  base[threadIdx.x] = offsets[threadIdx.x * tiles + tile];
  for (int r = 0; r < kRadixRounds; ++r) {
    for (int w = 0; w < kRadixWarps; ++w)
      warp_hist[w][threadIdx.x] = 0;
    __syncthreads();
    const int64_t e = tile * kRadixTile + r * kRadixThreads + threadIdx.x;
    const bool valid = e < n;
    const uint32_t key = valid ? keys_in[e] : 0u;
    // Lanes past n form their own group (digit 256) and write nothing.
    const unsigned digit = valid ? (key >> shift) & 255u : 256u;
    const unsigned peers = __match_any_sync(0xffffffffu, digit);
    const unsigned rank = __popc(peers & ((1u << lane) - 1u));
    if (valid && rank == 0)
      warp_hist[warp][digit] = __popc(peers);
    __syncthreads();
    // Thread d: the warps' exclusive offsets for digit d, after `base`.
    uint32_t run = base[threadIdx.x];
    for (int w = 0; w < kRadixWarps; ++w) {
      const uint32_t c = warp_hist[w][threadIdx.x];
      warp_hist[w][threadIdx.x] = run;
      run += c;
    }
    base[threadIdx.x] = run;
    __syncthreads();
    if (valid) {
      const uint32_t at = warp_hist[warp][digit] + rank;
      keys_out[at] = key;
      pos_out[at] = pos_in[e];
    }
    __syncthreads();
  }
}

/// dtable[id, c] = sum of dy[p, c] over the positions p of id, in position
/// order, accumulated in acc_t<T> (fp32 for bf16) and rounded once. CTA
/// (s, y) handles sorted slot s and columns [y*128, y*128+128) when s
/// starts an id's run; the run's positions are staged in shared
/// memory so the dy loads of a stage are independent of each other.
template <typename T>
__global__ void __launch_bounds__(kSegmentThreads)
    embedding_segment_sum_kernel(int64_t n, int64_t V, int64_t E, const uint32_t *keys,
                                 const uint32_t *pos, const T *dy, T *dtable) {
  __shared__ uint32_t stage[kSegmentThreads];
  const int64_t c = blockIdx.y * (int64_t)kSegmentThreads + threadIdx.x;
  for (int64_t s = blockIdx.x; s < n; s += gridDim.x) {
    const uint32_t key = keys[s];
    if (key >= (uint32_t)V || (s > 0 && keys[s - 1] == key))
      continue; // padding / out of range, or not the first slot of its run
    int64_t end = s + 1;
    while (end < n && keys[end] == key)
      ++end;
    acc_t<T> acc = acc_t<T>(0);
    for (int64_t r0 = s; r0 < end; r0 += kSegmentThreads) {
      const int64_t m = end - r0 < kSegmentThreads ? end - r0 : kSegmentThreads;
      __syncthreads(); // the previous stage is consumed
      if (threadIdx.x < m)
        stage[threadIdx.x] = pos[r0 + threadIdx.x];
      __syncthreads();
      if (c < E)
        for (int64_t r = 0; r < m; ++r)
          acc += load_acc(dy[(int64_t)stage[r] * E + c]);
    }
    if (c < E)
      dtable[(int64_t)key * E + c] = store_acc<T>(acc);
  }
}

/// dtable [V, E] = scatter-add of the rows of dy [n, E] by idx (zeros for
/// ids that do not occur: all-zero bits, +0 for bf16 too). `scratch`:
/// embedding_backward_scratch_bytes(n, V) bytes of device memory. V must
/// fit a 32-bit key (V < 2^32).
template <typename T, typename I>
cudaError_t launch_embedding_backward(int64_t n, int64_t V, int64_t E, const I *idx,
                                      const T *dy, int64_t paddingIdx, T *dtable,
                                      void *scratch, cudaStream_t stream) {
  if (n < 0 || V <= 0 || E <= 0 || V >= (int64_t)0xffffffffu || n > (int64_t)0xffffffffu ||
      (n > 0 && !scratch))
    return cudaErrorInvalidValue;
  cudaError_t e = cudaMemsetAsync(dtable, 0, sizeof(T) * (size_t)V * (size_t)E, stream);
  if (e != cudaSuccess || n == 0)
    return e;
  auto align = [](int64_t b) { return (b + 255) / 256 * 256; };
  const int64_t keyBytes = align(n * (int64_t)sizeof(uint32_t));
  char *ws = static_cast<char *>(scratch);
  uint32_t *keys[2] = {reinterpret_cast<uint32_t *>(ws),
                       reinterpret_cast<uint32_t *>(ws + keyBytes)};
  uint32_t *pos[2] = {reinterpret_cast<uint32_t *>(ws + 2 * keyBytes),
                      reinterpret_cast<uint32_t *>(ws + 3 * keyBytes)};
  uint32_t *counts = reinterpret_cast<uint32_t *>(ws + 4 * keyBytes);
  embedding_keys_kernel<I><<<grid_for(n, kBackwardThreads), kBackwardThreads, 0, stream>>>(
      n, V, idx, paddingIdx, keys[0], pos[0]);
  if ((e = cudaGetLastError()) != cudaSuccess)
    return e;
  // Keys lie in [0, V]: enough 8-bit passes for V's bits.
  int bits = 0;
  while (bits < 32 && ((uint64_t)V >> bits) != 0)
    ++bits;
  const unsigned tiles = (unsigned)radix_tiles(n);
  int cur = 0;
  for (int shift = 0; shift < bits; shift += 8, cur ^= 1) {
    radix_count_kernel<<<tiles, kRadixThreads, 0, stream>>>(n, shift, keys[cur], counts);
    radix_scan_kernel<<<1, kScanThreads, 0, stream>>>(256 * (int64_t)tiles, counts);
    radix_scatter_kernel<<<tiles, kRadixThreads, 0, stream>>>(
        n, shift, keys[cur], pos[cur], keys[cur ^ 1], pos[cur ^ 1], counts);
    if ((e = cudaGetLastError()) != cudaSuccess)
      return e;
  }
  const dim3 grid((unsigned)(n < (1 << 20) ? n : (1 << 20)),
                  (unsigned)((E + kSegmentThreads - 1) / kSegmentThreads));
  embedding_segment_sum_kernel<T><<<grid, kSegmentThreads, 0, stream>>>(n, V, E, keys[cur],
                                                                          pos[cur], dy, dtable);
  return cudaGetLastError();
}

//===----------------------------------------------------------------------===//
// Broadcast along axes (the gradient of a reduction)
//===----------------------------------------------------------------------===//

/// out[shape] = dy[shape without the masked dims] (x kept / total on mean).
template <typename T>
__global__ void broadcast_axes_kernel(ReduceNd r, int64_t n, double scale, const T *dy,
                                      T *out) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t rest = i, j = 0, jstride = 1;
    for (int d = r.rank - 1; d >= 0; --d) {
      const int64_t k = rest % r.shape[d];
      rest /= r.shape[d];
      if (!(r.mask >> d & 1u)) {
        j += k * jstride;
        jstride *= r.shape[d];
      }
    }
    out[i] = store_acc<T>((acc_t<T>)((double)load_acc(dy[j]) * scale));
  }
}

template <typename T>
cudaError_t launch_broadcast_axes(const ReduceNd &r, int mean, const T *dy, T *out,
                                  cudaStream_t stream) {
  if (r.rank < 0 || r.rank > kMaxCopyRank)
    return cudaErrorInvalidValue;
  int64_t n = 1, m = 1;
  for (int d = 0; d < r.rank; ++d) {
    n *= r.shape[d];
    if (!(r.mask >> d & 1u))
      m *= r.shape[d];
  }
  if (n <= 0)
    return cudaSuccess;
  const double scale = mean && m ? (double)m / (double)n : 1.0;
  broadcast_axes_kernel<T><<<grid_for(n, kBackwardThreads), kBackwardThreads, 0, stream>>>(
      r, n, scale, dy, out);
  return cudaGetLastError();
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif
