//===- TokenBackward.cuh - Embedding, axial-position grads -----*- CUDA -*-===//
//
// The twin of runtime/lib/Kernels/TokenBackward.cpp: every output element is
// summed in the CPU's order, so both give the same bits.
//
//   launch_embedding_backward   dtable = scatter-add of dy rows by index (a
//                               stable radix sort of the ids, then segment sums)
//   axial_position_backward_kernel
//                               one thread per (row of w0 or w1, column): a fixed-
//                               order sum over the batch and the grid positions
//
// Element types: float, double and bf16_t (Bf16.h). T is the storage type
// of every tensor; elements are read through load_acc and each output is
// stored once through store_acc<T>, from double arithmetic for every T, so a
// bf16 output is the float kernel's output rounded once to bf16. Every sum
// The embedding segment sums accumulate in acc_t<T> (fp32 for bf16).
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_TOKEN_BACKWARD_CUH
#define NNCC_KERNELS_CUDA_TOKEN_BACKWARD_CUH

#include "nncc/Kernels/Bf16.h"
#include "nncc/Kernels/CUDA/Common.cuh"

namespace nncc {
namespace kernels {
namespace cuda {

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

template <typename T>
__global__ void axial_position_backward_kernel(int64_t B, int64_t Tn,
                                               int64_t n1, int64_t n2,
                                               int64_t d1, int64_t d2,
                                               const T *dy, T *dw0, T *dw1) {
  const int64_t E = d1 + d2, n = n1 * d1 + n2 * d2;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const bool first = i < n1 * d1;
    const int64_t j = first ? i : i - n1 * d1, d = first ? d1 : d2;
    const int64_t row = j / d, e = j % d, col = first ? e : d1 + e;
    const int64_t count = first ? n2 : n1;
    double acc = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t c = 0; c < count; ++c) {
        const int64_t t = first ? row * n2 + c : c * n2 + row;
        if (t < Tn)
          acc += (double)load_acc(dy[(b * Tn + t) * E + col]);
      }
    (first ? dw0 : dw1)[j] = store_acc<T>((acc_t<T>)acc);
  }
}

template <typename T>
inline cudaError_t launch_axial_position_backward(int64_t B, int64_t Tn,
                                                  int64_t n1, int64_t n2,
                                                  int64_t d1, int64_t d2,
                                                  const T *dy, T *dw0, T *dw1,
                                                  cudaStream_t stream = 0) {
  const int64_t n = n1 * d1 + n2 * d2;
  axial_position_backward_kernel<T><<<grid_for(n, 256), 256, 0, stream>>>(
      B, Tn, n1, n2, d1, d2, dy, dw0, dw1);
  return cudaGetLastError();
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_CUDA_TOKEN_BACKWARD_CUH
