//===- Tensor.cpp - Max, top-k and cumulative sums along an axis ----------===//
//
// The tensor family's CPU-only kernels (CUDA reports these ops,
// TensorLaunch.cpp), forward and backward in one file: the backward of max
// scatters to the forward's firstMaxIndex. The family's strided copies are
// libnncc_model_support's nncc_ms_copy_nd on the CPU.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <algorithm>
#include <numeric>
#include <vector>

using namespace nncc::kernels;

namespace {

/// The first maximal index of the row at xr (stride inner, N > 0): the
/// lowest index of the largest value, a NaN counting as the largest (the
/// first NaN), as torch.argmax / torch.max(x, dim).
template <typename T>
int64_t firstMaxIndex(const T *xr, int64_t N, int64_t inner) {
  int64_t arg = 0;
  T best = xr[0];
  if (best != best)
    return 0;
  for (int64_t j = 1; j < N; ++j) {
    const T v = xr[j * inner];
    if (v != v)
      return j;
    if (v > best) {
      best = v;
      arg = j;
    }
  }
  return arg;
}

/// Max and argmax along the middle axis of [outer, N, inner]: values
/// and/or indices (either may be NULL) of [outer, inner].
template <typename T>
int maxAxis(int64_t outer, int64_t N, int64_t inner, const T *x, T *values,
            int32_t *indices) {
  if (outer < 0 || N <= 0 || N > INT32_MAX || inner <= 0 ||
      (outer > 0 && (!x || (!values && !indices))))
    return NNCC_K_EINVAL;
#pragma omp parallel for schedule(static)
  for (int64_t oi = 0; oi < outer * inner; ++oi) {
    const int64_t o = oi / inner, in = oi % inner;
    const T *xr = x + o * N * inner + in;
    const int64_t j = firstMaxIndex(xr, N, inner);
    if (values)
      values[oi] = xr[j * inner];
    if (indices)
      indices[oi] = (int32_t)j;
  }
  return NNCC_K_OK;
}

/// Running sums along the middle axis of [outer, N, inner] (reverse: from
/// the row's end); y may be x. Sums in T's own arithmetic, in index order.
template <typename T>
int cumsumAxis(int64_t outer, int64_t N, int64_t inner, int reverse, const T *x, T *y) {
  if (outer < 0 || N < 0 || inner < 0 || (outer * N * inner > 0 && (!x || !y)))
    return NNCC_K_EINVAL;
#pragma omp parallel for schedule(static) if (outer * N * inner > 65536)
  for (int64_t oi = 0; oi < outer * inner; ++oi) {
    const int64_t o = oi / inner, in = oi % inner;
    const T *xr = x + o * N * inner + in;
    T *yr = y + o * N * inner + in;
    T sum = T(0);
    for (int64_t s = 0; s < N; ++s) {
      const int64_t j = reverse ? N - 1 - s : s;
      sum += xr[j * inner];
      yr[j * inner] = sum;
    }
  }
  return NNCC_K_OK;
}

/// dx = dy at each row's first maximum, 0 elsewhere (overwrites dx).
template <typename T>
int maxAxisBackward(int64_t outer, int64_t N, int64_t inner, const T *x,
                    const T *dy, T *dx) {
  if (outer < 0 || N <= 0 || inner <= 0 || (outer > 0 && (!x || !dy || !dx)))
    return NNCC_K_EINVAL;
#pragma omp parallel for schedule(static)
  for (int64_t oi = 0; oi < outer * inner; ++oi) {
    const int64_t o = oi / inner, in = oi % inner;
    const int64_t base = o * N * inner + in;
    const int64_t j = firstMaxIndex(x + base, N, inner);
    for (int64_t k = 0; k < N; ++k)
      dx[base + k * inner] = k == j ? dy[oi] : T(0);
  }
  return NNCC_K_OK;
}

/// topk along the middle axis of [outer, N, inner]: each row's k largest
/// in descending order, a NaN counting as the largest and equal elements
/// (NaNs among them) by ascending index: the first k of a stable
/// descending sort.
template <typename T>
int topkAxis(int64_t outer, int64_t N, int64_t inner, int64_t k, const T *x,
             T *values, int32_t *indices) {
  if (outer < 0 || N <= 0 || N > INT32_MAX || inner <= 0 || k < 1 || k > N ||
      (outer > 0 && (!x || !values || !indices)))
    return NNCC_K_EINVAL;
#pragma omp parallel for schedule(static)
  for (int64_t oi = 0; oi < outer * inner; ++oi) {
    const int64_t o = oi / inner, in = oi % inner;
    const T *xr = x + o * N * inner + in;
    std::vector<int32_t> order(N);
    std::iota(order.begin(), order.end(), 0);
    // a before b: a NaN before any number, else larger first, else lower index
    auto before = [&](int32_t a, int32_t b) {
      const T va = xr[a * inner], vb = xr[b * inner];
      const bool na = va != va, nb = vb != vb;
      if (na || nb)
        return na && nb ? a < b : na;
      return va > vb || (va == vb && a < b);
    };
    if (k < N)
      std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
    else
      std::sort(order.begin(), order.end(), before);
    const int64_t base = o * k * inner + in;
    for (int64_t j = 0; j < k; ++j) {
      values[base + j * inner] = xr[order[j] * inner];
      indices[base + j * inner] = order[j];
    }
  }
  return NNCC_K_OK;
}

/// dx = 0, then dy at the indices topk chose (overwrites dx).
template <typename T>
int topkAxisBackward(int64_t outer, int64_t N, int64_t inner, int64_t k,
                     const int32_t *indices, const T *dy, T *dx) {
  if (outer < 0 || N <= 0 || inner <= 0 || k < 1 || k > N ||
      (outer > 0 && (!indices || !dy || !dx)))
    return NNCC_K_EINVAL;
  int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad)
  for (int64_t oi = 0; oi < outer * inner; ++oi) {
    const int64_t o = oi / inner, in = oi % inner;
    T *dr = dx + o * N * inner + in;
    for (int64_t j = 0; j < N; ++j)
      dr[j * inner] = T(0);
    const int64_t base = o * k * inner + in;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t i = indices[base + j * inner];
      if (i < 0 || i >= N) {
        bad = 1;
        continue;
      }
      dr[i * inner] += dy[base + j * inner];
    }
  }
  return bad ? NNCC_K_EINVAL : NNCC_K_OK;
}

} // namespace

#define NNCC_DEFINE_TENSOR(S, T)                                               \
  extern "C" int nncc_max_axis_##S(int64_t o, int64_t N, int64_t in,           \
                                   const T *x, T *v, int32_t *i) {             \
    return maxAxis<T>(o, N, in, x, v, i);                                      \
  }                                                                            \
  extern "C" int nncc_max_axis_backward_##S(int64_t o, int64_t N, int64_t in,  \
                                            const T *x, const T *dy, T *dx) {  \
    return maxAxisBackward<T>(o, N, in, x, dy, dx);                            \
  }                                                                            \
  extern "C" int nncc_cumsum_axis_##S(int64_t o, int64_t N, int64_t in,        \
                                      int reverse, const T *x, T *y) {         \
    return cumsumAxis<T>(o, N, in, reverse, x, y);                             \
  }                                                                            \
  extern "C" int nncc_topk_axis_##S(int64_t o, int64_t N, int64_t in,          \
                                    int64_t k, const T *x, T *v, int32_t *i) { \
    return topkAxis<T>(o, N, in, k, x, v, i);                                  \
  }                                                                            \
  extern "C" int nncc_topk_axis_backward_##S(int64_t o, int64_t N, int64_t in, \
                                             int64_t k, const int32_t *i,      \
                                             const T *dy, T *dx) {             \
    return topkAxisBackward<T>(o, N, in, k, i, dy, dx);                        \
  }

NNCC_DEFINE_TENSOR(f32, float)
NNCC_DEFINE_TENSOR(f64, double)

extern "C" int nncc_cumsum_axis_i32(int64_t o, int64_t N, int64_t in, int reverse,
                                    const int32_t *x, int32_t *y) {
  return cumsumAxis<int32_t>(o, N, in, reverse, x, y);
}
extern "C" int nncc_cumsum_axis_i64(int64_t o, int64_t N, int64_t in, int reverse,
                                    const int64_t *x, int64_t *y) {
  return cumsumAxis<int64_t>(o, N, in, reverse, x, y);
}
