//===- Optim.cuh - the optimizer step on the device -------------*- CUDA -*-===//
//
// train_step on CUDA (docs/training.md): the global gradient norm as a sum
// of squares in double, in a fixed order (per-CTA partials of a fixed grid,
// then one CTA), and the fused SGD / Adam / AdamW updates of OptimMath.h,
// the element functions the CPU kernels (runtime/lib/Kernels/Optim.cpp)
// call. fp32 SGD / Adam / AdamW ran on an H100 in the seed models' train_step
// (docs/cuda.md, "First run on an H100 (2026-11-26)"); fp64 has not run.
// bf16 (mixed precision): bf16 parameters and gradients, fp32 optimizer
// state and fp32 master copies of the parameters (OptimTensors); tested on
// the CUDA emulation, and run on an H200 in the bf16 train_step of five
// models on 2026-11-27 (docs/design.md, "Precisions").
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_OPTIM_CUH
#define NNCC_KERNELS_CUDA_OPTIM_CUH

#include "nncc/Kernels/CUDA/Common.cuh"
#include "nncc/Kernels/OptimMath.h"

#include <cmath>
#include <stdint.h>

namespace nncc {
namespace kernels {
namespace cuda {

//===----------------------------------------------------------------------===//
// Multi-tensor launches
//===----------------------------------------------------------------------===//
//
// A model has one tensor per parameter (about 200 for the seed's BERT-small),
// many of them small (biases, layer-norm weights). One launch per tensor
// and step costs a launch each, and a fixed grid per tensor leaves most
// CTAs idle on the small ones. As PyTorch's multi_tensor_apply, a launch
// here serves many tensors: every tensor is cut into chunks of `chunk`
// elements (kOptimChunk by default), one chunk per CTA, and a table of up
// to kOptimMtTensors tensors and kOptimMtBlocks chunks travels by value as
// the kernel's argument (under the 4 KiB parameter limit); a tensor whose
// chunks do not fit continues in the next launch. The element updates are
// OptimMath.h's, as on the CPU; the gradient norm's partials are one per
// chunk, in tensor and chunk order, so the split (and the sum) depends on
// the shapes only.

constexpr int kOptimThreads = 256;
constexpr int kOptimMtTensors = 32;  // table slots per launch
constexpr int kOptimMtBlocks = 256;  // chunks (CTAs) per launch
constexpr int64_t kOptimChunk = 16384;

/// The host's view of the tensors: count entries per array; s1 / s2 the
/// optimizer state (NULL arrays or entries where it keeps none); lr and wd
/// per tensor (NULL for the gradient norm).
///
/// bf16 (mixed precision): p and g are bf16, the state is fp32 (acc_t<T>),
/// and `master` holds an fp32 copy of every parameter that the update
/// changes; p is that copy rounded. With `init_master` the copies are first
/// set from p (the first step, or after the host wrote the parameters).
/// f32 / f64 have no master copies (`master` must stay NULL).
template <typename T> struct OptimTensors {
  int32_t count = 0;
  const int64_t *n = nullptr;
  T *const *p = nullptr;
  const T *const *g = nullptr;
  acc_t<T> *const *s1 = nullptr;
  acc_t<T> *const *s2 = nullptr;
  const double *lr = nullptr, *wd = nullptr;
  acc_t<T> *const *master = nullptr;
  bool init_master = false;
};

/// The master copies of a launch's tensors: bf16 only (empty otherwise, so
/// the f32 / f64 tables keep their layout).
template <typename T> struct OptimMasterSlots {};
template <> struct OptimMasterSlots<bf16_t> {
  float *w[kOptimMtTensors];
  int32_t init; // set w from p before updating
};

/// One launch's table (a kernel argument).
template <typename T> struct OptimTable : OptimMasterSlots<T> {
  T *p[kOptimMtTensors];
  const T *g[kOptimMtTensors];
  acc_t<T> *s1[kOptimMtTensors], *s2[kOptimMtTensors];
  int64_t n[kOptimMtTensors];
  acc_t<T> lr[kOptimMtTensors], wd[kOptimMtTensors];
  uint8_t slot[kOptimMtBlocks];   // CTA -> table slot
  int32_t chunk[kOptimMtBlocks];  // CTA -> chunk of that tensor
  int64_t chunk_elems;
  int64_t first_chunk;            // the launch's first chunk over all tensors
};
static_assert(sizeof(OptimTable<double>) + 64 <= 4096, "kernel parameter limit");
static_assert(sizeof(OptimTable<bf16_t>) + 64 <= 4096, "kernel parameter limit");

/// Chunks of `chunk` elements over all tensors (the gradient norm's partials).
inline int64_t optim_chunk_count(int32_t count, const int64_t *n,
                                 int64_t chunk = kOptimChunk) {
  int64_t c = 0;
  for (int32_t i = 0; i < count; ++i)
    c += n[i] > 0 ? (n[i] + chunk - 1) / chunk : 0;
  return c;
}

/// Deals the tensors' chunks into tables and calls launch(table, ctas) for
/// each; stops at the first error.
template <typename T, typename Launch>
inline cudaError_t optim_for_each_launch(const OptimTensors<T> &ts, int64_t chunk,
                                         Launch &&launch) {
  if (chunk < 1 || ts.count < 0 || (ts.count > 0 && !ts.n))
    return cudaErrorInvalidValue;
  OptimTable<T> tab;
  int nt = 0, nb = 0, lastTensor = -1;
  int64_t done = 0; // chunks already launched
  auto flush = [&]() -> cudaError_t {
    if (nb == 0)
      return cudaSuccess;
    tab.chunk_elems = chunk;
    tab.first_chunk = done;
    const cudaError_t e = launch(tab, nb);
    done += nb;
    nt = nb = 0;
    lastTensor = -1;
    return e;
  };
  for (int32_t i = 0; i < ts.count; ++i) {
    const int64_t chunks = ts.n[i] > 0 ? (ts.n[i] + chunk - 1) / chunk : 0;
    for (int64_t c = 0; c < chunks; ++c) {
      if (nb == kOptimMtBlocks || (lastTensor != i && nt == kOptimMtTensors)) {
        const cudaError_t e = flush();
        if (e != cudaSuccess)
          return e;
      }
      if (lastTensor != i) {
        tab.p[nt] = ts.p ? ts.p[i] : nullptr;
        tab.g[nt] = ts.g ? ts.g[i] : nullptr;
        tab.s1[nt] = ts.s1 ? ts.s1[i] : nullptr;
        tab.s2[nt] = ts.s2 ? ts.s2[i] : nullptr;
        tab.n[nt] = ts.n[i];
        tab.lr[nt] = acc_t<T>(ts.lr ? ts.lr[i] : 0.0);
        tab.wd[nt] = acc_t<T>(ts.wd ? ts.wd[i] : 0.0);
        if constexpr (is_bf16_v<T>) {
          tab.w[nt] = ts.master ? ts.master[i] : nullptr;
          tab.init = ts.init_master ? 1 : 0;
        }
        lastTensor = i;
        ++nt;
      }
      tab.slot[nb] = (uint8_t)(nt - 1);
      tab.chunk[nb] = (int32_t)c;
      ++nb;
    }
  }
  return flush();
}

/// The element range [begin, end) of this CTA's chunk, its table slot.
template <typename T>
__device__ __forceinline__ int optim_chunk_range(const OptimTable<T> &tab, int64_t &begin,
                                                 int64_t &end) {
  const int s = tab.slot[blockIdx.x];
  begin = (int64_t)tab.chunk[blockIdx.x] * tab.chunk_elems;
  end = begin + tab.chunk_elems < tab.n[s] ? begin + tab.chunk_elems : tab.n[s];
  return s;
}

/// part[first_chunk + blockIdx.x] = sum of g^2 over the CTA's chunk.
template <typename T>
__global__ void __launch_bounds__(kOptimThreads)
    sum_squares_chunks_kernel(const OptimTable<T> tab, double *part) {
  __shared__ double scratch[32];
  int64_t begin, end;
  const T *g = tab.g[optim_chunk_range(tab, begin, end)];
  double s = 0.0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x)
    s += (double)load_acc(g[i]) * (double)load_acc(g[i]);
  s = block_sum(s, scratch);
  if (threadIdx.x == 0)
    part[tab.first_chunk + blockIdx.x] = s;
}

/// out[0] = sum of part[0, count), one CTA.
__global__ void sum_partials_kernel(int64_t count, const double *part, double *out) {
  __shared__ double scratch[32];
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
    s += part[i];
  s = block_sum(s, scratch);
  if (threadIdx.x == 0)
    out[0] = s;
}

/// Bytes of device scratch of launch_sum_squares: one partial per chunk
/// and the total.
inline uint64_t sum_squares_scratch_bytes(int32_t count, const int64_t *n,
                                          int64_t chunk = kOptimChunk) {
  return (uint64_t)(optim_chunk_count(count, n, chunk) + 1) * sizeof(double);
}

/// total[0] = the sum of every g[i]^2 of ts.g (in double, fixed order);
/// `scratch`: sum_squares_scratch_bytes() bytes, `total` may point into it.
template <typename T>
inline cudaError_t launch_sum_squares(const OptimTensors<T> &ts, double *scratch,
                                      double *total, cudaStream_t stream,
                                      int64_t chunk = kOptimChunk) {
  if (ts.count > 0 && !ts.g)
    return cudaErrorInvalidValue;
  const cudaError_t e = optim_for_each_launch(ts, chunk, [&](const OptimTable<T> &tab, int ctas) {
    sum_squares_chunks_kernel<T><<<ctas, kOptimThreads, 0, stream>>>(tab, scratch);
    return cudaGetLastError();
  });
  if (e != cudaSuccess)
    return e;
  sum_partials_kernel<<<1, kOptimThreads, 0, stream>>>(optim_chunk_count(ts.count, ts.n, chunk),
                                                       scratch, total);
  return cudaGetLastError();
}

/// 16-byte vectors of T for the update loops.
template <typename T> struct OptimVec;
template <> struct OptimVec<float> {
  typedef float4 type;
  static constexpr int n = 4;
};
template <> struct OptimVec<double> {
  typedef double2 type;
  static constexpr int n = 2;
};
/// Vectors per thread whose loads are issued before any is updated.
constexpr int kOptimUnroll = 4;

__device__ __forceinline__ bool optim_aligned16(const void *p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

/// f(p[i], g[i], a[i], b[i]) for every i in [begin, end), p, a and b
/// updated in place (a or b null: f gets a zero it may ignore). In 16-byte
/// vectors when begin and every array allow, kOptimUnroll of them per
/// thread loaded before any is updated: as far as the compiler knows the
/// arrays may alias, so an element-at-a-time loop waits for each element's
/// loads after the previous stores, one memory round trip per element.
template <typename T, typename F>
__device__ __forceinline__ void optim_apply(int64_t begin, int64_t end, T *p, const T *g, T *a,
                                            T *b, F f) {
  typedef typename OptimVec<T>::type V;
  constexpr int VN = OptimVec<T>::n, U = kOptimUnroll;
  int64_t rest = begin;
  if (begin % VN == 0 && optim_aligned16(p) && optim_aligned16(g) && optim_aligned16(a) &&
      optim_aligned16(b)) {
    const int64_t nv = (end - begin) / VN;
    V *pv = reinterpret_cast<V *>(p + begin);
    const V *gv = reinterpret_cast<const V *>(g + begin);
    V *av = a ? reinterpret_cast<V *>(a + begin) : nullptr;
    V *bv = b ? reinterpret_cast<V *>(b + begin) : nullptr;
    for (int64_t j0 = threadIdx.x; j0 < nv; j0 += U * (int64_t)blockDim.x) {
      V P[U], G[U], A[U], B[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t j = j0 + u * (int64_t)blockDim.x;
        P[u] = G[u] = A[u] = B[u] = V{};
        if (j < nv) {
          P[u] = pv[j];
          G[u] = gv[j];
          if (av)
            A[u] = av[j];
          if (bv)
            B[u] = bv[j];
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t j = j0 + u * (int64_t)blockDim.x;
        if (j >= nv)
          continue;
        T *pe = reinterpret_cast<T *>(&P[u]), *ae = reinterpret_cast<T *>(&A[u]),
          *be = reinterpret_cast<T *>(&B[u]);
        const T *ge = reinterpret_cast<const T *>(&G[u]);
#pragma unroll
        for (int e = 0; e < VN; ++e)
          f(pe[e], ge[e], ae[e], be[e]);
        pv[j] = P[u];
        if (av)
          av[j] = A[u];
        if (bv)
          bv[j] = B[u];
      }
    }
    rest = begin + nv * VN;
  }
  for (int64_t i = rest + threadIdx.x; i < end; i += blockDim.x) {
    T pi = p[i], ai = a ? a[i] : T(0), bi = b ? b[i] : T(0);
    f(pi, g[i], ai, bi);
    p[i] = pi;
    if (a)
      a[i] = ai;
    if (b)
      b[i] = bi;
  }
}

/// Four bf16 values: one 8-byte access.
struct alignas(8) OptimBf16x4 {
  bf16_t e[4];
};

/// bf16: f(w[i], g[i], a[i], b[i]) in fp32 on the master copy w of every
/// i in [begin, end) (w set from p first when `init`), then p[i] = w[i]
/// rounded once. a or b null: f gets a zero it may ignore. As optim_apply,
/// four elements per access (8 bytes of p and g, 16 of w, a and b) and
/// kOptimUnroll groups per thread loaded before any is updated.
template <typename F>
__device__ __forceinline__ void optim_apply_master(int64_t begin, int64_t end, bf16_t *p,
                                                   const bf16_t *g, float *w, float *a,
                                                   float *b, bool init, F f) {
  constexpr int U = kOptimUnroll;
  int64_t rest = begin;
  if (begin % 4 == 0 && (reinterpret_cast<uintptr_t>(p) & 7u) == 0 &&
      (reinterpret_cast<uintptr_t>(g) & 7u) == 0 && optim_aligned16(w) && optim_aligned16(a) &&
      optim_aligned16(b)) {
    const int64_t nv = (end - begin) / 4;
    OptimBf16x4 *pv = reinterpret_cast<OptimBf16x4 *>(p + begin);
    const OptimBf16x4 *gv = reinterpret_cast<const OptimBf16x4 *>(g + begin);
    float4 *wv = reinterpret_cast<float4 *>(w + begin);
    float4 *av = a ? reinterpret_cast<float4 *>(a + begin) : nullptr;
    float4 *bv = b ? reinterpret_cast<float4 *>(b + begin) : nullptr;
    for (int64_t j0 = threadIdx.x; j0 < nv; j0 += U * (int64_t)blockDim.x) {
      OptimBf16x4 P[U], G[U];
      float4 W[U], A[U], B[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t j = j0 + u * (int64_t)blockDim.x;
        W[u] = A[u] = B[u] = float4{};
        if (j < nv) {
          P[u] = pv[j];
          G[u] = gv[j];
          if (!init)
            W[u] = wv[j];
          if (av)
            A[u] = av[j];
          if (bv)
            B[u] = bv[j];
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t j = j0 + u * (int64_t)blockDim.x;
        if (j >= nv)
          continue;
        float *we = reinterpret_cast<float *>(&W[u]), *ae = reinterpret_cast<float *>(&A[u]),
              *be = reinterpret_cast<float *>(&B[u]);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float wi = init ? load_acc(P[u].e[e]) : we[e];
          f(wi, load_acc(G[u].e[e]), ae[e], be[e]);
          we[e] = wi;
          P[u].e[e] = store_acc<bf16_t>(wi);
        }
        pv[j] = P[u];
        wv[j] = W[u];
        if (av)
          av[j] = A[u];
        if (bv)
          bv[j] = B[u];
      }
    }
    rest = begin + nv * 4;
  }
  for (int64_t i = rest + threadIdx.x; i < end; i += blockDim.x) {
    float wi = init ? load_acc(p[i]) : w[i];
    float ai = a ? a[i] : 0.0f, bi = b ? b[i] : 0.0f;
    f(wi, load_acc(g[i]), ai, bi);
    w[i] = wi;
    p[i] = store_acc<bf16_t>(wi);
    if (a)
      a[i] = ai;
    if (b)
      b[i] = bi;
  }
}

template <typename T>
__global__ void __launch_bounds__(kOptimThreads)
    sgd_chunks_kernel(const OptimTable<T> tab, acc_t<T> scale, bool scaled, acc_t<T> momentum,
                      bool nesterov, bool first) {
  typedef acc_t<T> A;
  int64_t begin, end;
  const int s = optim_chunk_range(tab, begin, end);
  T *p = tab.p[s];
  A *buf = tab.s1[s];
  const T *g = tab.g[s];
  const A lr = tab.lr[s], wd = tab.wd[s];
  const A mom = buf ? momentum : A(0);
  auto update = [&](A &pi, A gi, A &bi, A &) {
    sgdUpdate<A>(pi, scaled ? gi * scale : gi, bi, lr, mom, wd, nesterov, first);
  };
  if constexpr (is_bf16_v<T>)
    optim_apply_master(begin, end, p, g, tab.w[s], buf, (A *)nullptr, tab.init != 0, update);
  else
    optim_apply(begin, end, p, g, buf, (T *)nullptr, update);
}

template <typename T>
__global__ void __launch_bounds__(kOptimThreads)
    adam_chunks_kernel(const OptimTable<T> tab, acc_t<T> scale, bool scaled, acc_t<T> beta1,
                       acc_t<T> beta2, acc_t<T> eps, bool decoupled, acc_t<T> bc1,
                       acc_t<T> bc2) {
  typedef acc_t<T> A;
  int64_t begin, end;
  const int s = optim_chunk_range(tab, begin, end);
  T *p = tab.p[s];
  A *m = tab.s1[s], *v = tab.s2[s];
  const T *g = tab.g[s];
  const A lr = tab.lr[s], wd = tab.wd[s];
  auto update = [&](A &pi, A gi, A &mi, A &vi) {
    adamUpdate<A>(pi, scaled ? gi * scale : gi, mi, vi, lr, beta1, beta2, eps, wd, decoupled,
                  bc1, bc2);
  };
  if constexpr (is_bf16_v<T>)
    optim_apply_master(begin, end, p, g, tab.w[s], m, v, tab.init != 0, update);
  else
    optim_apply(begin, end, p, g, m, v, update);
}

/// bf16 tables need a master copy for every tensor they update.
template <typename T> inline bool optim_master_missing(const OptimTensors<T> &ts, int32_t i) {
  if constexpr (is_bf16_v<T>)
    return !(ts.master && ts.master[i]);
  else
    return ts.master != nullptr;
}

/// SGD with momentum over every tensor of ts (s1: the momentum buffers, a
/// NULL entry allowed only when momentum is 0), as nncc_sgd_step per tensor
/// (bf16: on the master copies, OptimTensors).
template <typename T>
inline cudaError_t launch_sgd_steps(const OptimTensors<T> &ts, double gscale, double momentum,
                                    int nesterov, int first, cudaStream_t stream,
                                    int64_t chunk = kOptimChunk) {
  for (int32_t i = 0; i < ts.count; ++i)
    if (ts.n[i] > 0 && (!ts.p || !ts.g || !ts.lr || !ts.wd ||
                        (momentum != 0.0 && !(ts.s1 && ts.s1[i])) || optim_master_missing(ts, i)))
      return cudaErrorInvalidValue;
  return optim_for_each_launch(ts, chunk, [&](const OptimTable<T> &tab, int ctas) {
    sgd_chunks_kernel<T><<<ctas, kOptimThreads, 0, stream>>>(
        tab, acc_t<T>(gscale), gscale != 1.0, acc_t<T>(momentum), nesterov != 0, first != 0);
    return cudaGetLastError();
  });
}

/// Adam / AdamW over every tensor of ts (s1 = m, s2 = v), as nncc_adam_step
/// per tensor: the bias corrections in double on the host (as torch
/// computes them), the update per element.
template <typename T>
inline cudaError_t launch_adam_steps(const OptimTensors<T> &ts, double gscale, double beta1,
                                     double beta2, double eps, int decoupled, int64_t step,
                                     cudaStream_t stream, int64_t chunk = kOptimChunk) {
  if (step < 1)
    return cudaErrorInvalidValue;
  for (int32_t i = 0; i < ts.count; ++i)
    if (ts.n[i] > 0 && (!ts.p || !ts.g || !ts.lr || !ts.wd || !(ts.s1 && ts.s1[i]) ||
                        !(ts.s2 && ts.s2[i]) || optim_master_missing(ts, i)))
      return cudaErrorInvalidValue;
  typedef acc_t<T> A;
  const A bc1 = A(1.0 - std::pow(beta1, double(step)));
  const A bc2 = A(1.0 - std::pow(beta2, double(step)));
  return optim_for_each_launch(ts, chunk, [&](const OptimTable<T> &tab, int ctas) {
    adam_chunks_kernel<T><<<ctas, kOptimThreads, 0, stream>>>(
        tab, A(gscale), gscale != 1.0, A(beta1), A(beta2), A(eps), decoupled != 0, bc1, bc2);
    return cudaGetLastError();
  });
}

/// One f32 / f64 tensor: launch_sgd_steps / launch_adam_steps with count 1.
template <typename T>
inline cudaError_t launch_sgd_step(int64_t n, T *p, const T *g, T *buf, double gscale,
                                   double lr, double momentum, double wd, int nesterov,
                                   int first, cudaStream_t stream) {
  T *bufs[1] = {buf};
  const T *gs[1] = {g};
  OptimTensors<T> ts;
  ts.count = 1, ts.n = &n, ts.p = &p, ts.g = gs, ts.s1 = bufs, ts.lr = &lr, ts.wd = &wd;
  return launch_sgd_steps<T>(ts, gscale, momentum, nesterov, first, stream);
}

template <typename T>
inline cudaError_t launch_adam_step(int64_t n, T *p, const T *g, T *m, T *v, double gscale,
                                    double lr, double beta1, double beta2, double eps,
                                    double wd, int decoupled, int64_t step,
                                    cudaStream_t stream) {
  T *ms[1] = {m}, *vs[1] = {v};
  const T *gs[1] = {g};
  OptimTensors<T> ts;
  ts.count = 1, ts.n = &n, ts.p = &p, ts.g = gs, ts.s1 = ms, ts.s2 = vs, ts.lr = &lr,
  ts.wd = &wd;
  return launch_adam_steps<T>(ts, gscale, beta1, beta2, eps, decoupled, step, stream);
}

//===----------------------------------------------------------------------===//
// Gradient accumulation
//===----------------------------------------------------------------------===//

/// What launch_grad_mean does with a gradient g and its running mean
/// (acc_t<T>, so bf16 gradients are averaged in fp32).
enum GradMeanMode {
  kGradMeanFirst = 0, ///< mean = g (the first micro-batch)
  kGradMeanAdd = 1,   ///< mean += alpha (g - mean) (OptimMath.h)
  kGradMeanStore = 2  ///< g = mean, rounded to T once (before the update)
};

template <typename T>
__global__ void __launch_bounds__(kOptimThreads)
    grad_mean_chunks_kernel(const OptimTable<T> tab, int mode, acc_t<T> alpha) {
  int64_t begin, end;
  const int s = optim_chunk_range(tab, begin, end);
  T *g = tab.p[s];
  acc_t<T> *mean = tab.s1[s];
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    if (mode == kGradMeanFirst)
      mean[i] = load_acc(g[i]);
    else if (mode == kGradMeanAdd)
      runningMeanUpdate(mean[i], load_acc(g[i]), alpha);
    else
      g[i] = store_acc<T>(mean[i]);
  }
}

/// The running mean of gradient accumulation over `count` tensors of n[i]
/// elements: grads[i] the gradient buffers (written only by kGradMeanStore),
/// means[i] their means in acc_t<T>; alpha in (0, 1] (kGradMeanAdd).
template <typename T>
inline cudaError_t launch_grad_mean(int32_t count, const int64_t *n, T *const *grads,
                                    acc_t<T> *const *means, int mode, double alpha,
                                    cudaStream_t stream, int64_t chunk = kOptimChunk) {
  if (mode < kGradMeanFirst || mode > kGradMeanStore ||
      (mode == kGradMeanAdd && !(alpha > 0.0 && alpha <= 1.0)))
    return cudaErrorInvalidValue;
  for (int32_t i = 0; i < count; ++i)
    if (n[i] > 0 && (!grads || !means || !grads[i] || !means[i]))
      return cudaErrorInvalidValue;
  OptimTensors<T> ts;
  ts.count = count, ts.n = n, ts.p = grads, ts.s1 = means;
  return optim_for_each_launch(ts, chunk, [&](const OptimTable<T> &tab, int ctas) {
    grad_mean_chunks_kernel<T><<<ctas, kOptimThreads, 0, stream>>>(tab, mode, acc_t<T>(alpha));
    return cudaGetLastError();
  });
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif
