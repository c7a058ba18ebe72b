//===- Norm.cpp - Layer norm, softmax, embedding, positions, dropout, losses ===//
#include "Internal.h"
#include "nncc/Kernels/NormMath.h"
#include "nncc/Kernels/RandomMasks.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

using namespace nncc::kernels;

namespace {

template <typename T>
int layerNorm(int64_t rows, int64_t N, const T *x, const T *res,
              const T *gamma, const T *beta, double eps, T *y, T *sumOut,
              T *meanOut, T *rstdOut) {
  if (rows < 0 || N <= 0 || (rows > 0 && (!x || !y)) || !(eps >= 0))
    return NNCC_K_EINVAL;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const T *xr = x + r * N;
    const T *rr = res ? res + r * N : nullptr;
    double mean, rstd;
    layer_norm_stats<T, double>(xr, rr, N, eps, mean, rstd);
    T *yr = y + r * N;
    for (int64_t j = 0; j < N; ++j) {
      T s = xr[j] + (rr ? rr[j] : T(0));
      if (sumOut)
        sumOut[r * N + j] = s;
      yr[j] = layer_norm_apply<T>(s, T(mean), T(rstd), gamma, beta, j);
    }
    if (meanOut)
      meanOut[r] = T(mean);
    if (rstdOut)
      rstdOut[r] = T(rstd);
  }
  return NNCC_K_OK;
}

template <typename T>
int softmax(int64_t outer, int64_t N, int64_t inner, const T *x, T *y) {
  if (outer < 0 || N <= 0 || inner <= 0 || (outer > 0 && (!x || !y)))
    return NNCC_K_EINVAL;
#pragma omp parallel for schedule(static)
  for (int64_t oi = 0; oi < outer * inner; ++oi) {
    const int64_t o = oi / inner, in = oi % inner;
    const T *xr = x + o * N * inner + in;
    T *yr = y + o * N * inner + in;
    T mx = xr[0];
    for (int64_t j = 1; j < N; ++j)
      mx = nmax(mx, xr[j * inner]);
    double s = 0;
    for (int64_t j = 0; j < N; ++j) {
      T e = nexp(xr[j * inner] - mx);
      yr[j * inner] = e;
      s += e;
    }
    T inv = T(1.0 / s);
    for (int64_t j = 0; j < N; ++j)
      yr[j * inner] *= inv;
  }
  return NNCC_K_OK;
}

template <typename T, typename I>
int embedding(int64_t n, int64_t V, int64_t E, const I *idx, const T *table,
              T *out) {
  if (n < 0 || V <= 0 || E <= 0 || (n > 0 && (!idx || !table || !out)))
    return NNCC_K_EINVAL;
  for (int64_t i = 0; i < n; ++i)
    if (idx[i] < 0 || (int64_t)idx[i] >= V)
      return NNCC_K_ERANGE;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(out + i * E, table + (int64_t)idx[i] * E, sizeof(T) * E);
  return NNCC_K_OK;
}

template <typename T>
int sinusoidal(int64_t B, int64_t Tn, int64_t E, const T *x, T *y) {
  if (B < 0 || Tn < 0 || E <= 0 || E % 2 || (B * Tn > 0 && (!x || !y)))
    return NNCC_K_EINVAL;
#pragma omp parallel for schedule(static)
  for (int64_t bt = 0; bt < B * Tn; ++bt) {
    const int64_t t = bt % Tn;
    for (int64_t e = 0; e < E; ++e)
      y[bt * E + e] = x[bt * E + e] + sinusoidal_pe<T>(t, e, E);
  }
  return NNCC_K_OK;
}

template <typename T>
int dropout(int64_t n, double p, uint64_t seed, uint64_t offset, const T *x,
            T *y, uint8_t *mask) {
  if (n < 0 || !(p >= 0 && p < 1) || (n > 0 && (!x || !y)))
    return NNCC_K_EINVAL;
  const float pf = (float)p;
  const T scale = T(1) / (T(1) - T(p));
  // dropout_keep element by element, a batch of Philox blocks at a time
  // (one block serves four elements).
  constexpr int64_t kChunk = 4 * kMaskBatch;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    uint32_t bits[kChunk];
    philox_mask_chunk(seed, offset, (uint64_t)c, bits);
    const int64_t i0 = c * kChunk, m = std::min<int64_t>(kChunk, n - i0);
    for (int64_t j = 0; j < m; ++j) {
      const bool keep = nncc_rng_u32_to_unit_float(bits[j]) >= pf;
      y[i0 + j] = keep ? x[i0 + j] * scale : T(0);
      if (mask)
        mask[i0 + j] = keep;
    }
  }
  return NNCC_K_OK;
}

template <typename T>
int zoneout(int64_t n, double p, uint64_t seed, uint64_t offset,
            const T *newState, const T *prev, T *y) {
  if (n < 0 || !(p >= 0 && p < 1) ||
      (n > 0 && (!newState || !prev || !y)))
    return NNCC_K_EINVAL;
  const float pf = (float)p;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    y[i] = zoneout_keep_prev(seed, offset, (uint64_t)i, pf) ? prev[i]
                                                            : newState[i];
  return NNCC_K_OK;
}

template <typename T>
int mse(int64_t n, const T *a, const T *b, T *out) {
  if (n <= 0 || !a || !b || !out)
    return NNCC_K_EINVAL;
  double s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    double d = double(a[i]) - double(b[i]);
    s += d * d;
  }
  *out = T(s / double(n));
  return NNCC_K_OK;
}

template <typename T>
int crossEntropy(int64_t N, int64_t C, const T *logits, const int64_t *tgt,
                 int64_t ignore, T *out) {
  if (N <= 0 || C <= 0 || !logits || !tgt || !out)
    return NNCC_K_EINVAL;
  for (int64_t i = 0; i < N; ++i)
    if (tgt[i] != ignore && (tgt[i] < 0 || tgt[i] >= C))
      return NNCC_K_ERANGE;
  double s = 0;
  int64_t cnt = 0;
#pragma omp parallel for reduction(+ : s, cnt) schedule(static)
  for (int64_t i = 0; i < N; ++i) {
    if (tgt[i] == ignore)
      continue;
    s += cross_entropy_row<T, double>(logits + i * C, C, tgt[i]);
    ++cnt;
  }
  // All targets ignored: 0/0 = NaN, as PyTorch.
  *out = T(s / double(cnt));
  return NNCC_K_OK;
}

template <typename T>
int bceLogits(int64_t N, int64_t C, const T *x, const T *y, const T *pw,
              T *out) {
  if (N <= 0 || C <= 0 || !x || !y || !out)
    return NNCC_K_EINVAL;
  double s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static)
  for (int64_t i = 0; i < N * C; ++i)
    s += bce_logits_elem<double>(x[i], y[i], pw ? double(pw[i % C]) : 1.0);
  *out = T(s / double(N * C));
  return NNCC_K_OK;
}

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

#define NNCC_DEFINE_NORM(S, T)                                                 \
  extern "C" int nncc_layer_norm_##S(int64_t rows, int64_t N, const T *x,      \
                                     const T *r, const T *g, const T *b,       \
                                     double eps, T *y, T *so, T *m, T *rs) {   \
    return layerNorm<T>(rows, N, x, r, g, b, eps, y, so, m, rs);               \
  }                                                                            \
  extern "C" int nncc_softmax_##S(int64_t o, int64_t N, int64_t in,            \
                                  const T *x, T *y) {                          \
    return softmax<T>(o, N, in, x, y);                                         \
  }                                                                            \
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
  }                                                                            \
  extern "C" int nncc_embedding_##S(int64_t n, int64_t V, int64_t E,           \
                                    const int64_t *idx, const T *tab, T *o) {  \
    return embedding<T, int64_t>(n, V, E, idx, tab, o);                        \
  }                                                                            \
  extern "C" int nncc_embedding_i32_##S(int64_t n, int64_t V, int64_t E,       \
                                        const int32_t *idx, const T *tab,      \
                                        T *o) {                                \
    return embedding<T, int32_t>(n, V, E, idx, tab, o);                        \
  }                                                                            \
  extern "C" int nncc_sinusoidal_position_##S(int64_t B, int64_t Tn,           \
                                              int64_t E, const T *x, T *y) {   \
    return sinusoidal<T>(B, Tn, E, x, y);                                      \
  }                                                                            \
  extern "C" int nncc_dropout_##S(int64_t n, double p, uint64_t seed,          \
                                  uint64_t off, const T *x, T *y,              \
                                  uint8_t *mask) {                             \
    return dropout<T>(n, p, seed, off, x, y, mask);                            \
  }                                                                            \
  extern "C" int nncc_zoneout_##S(int64_t n, double p, uint64_t seed,          \
                                  uint64_t off, const T *nw, const T *pv,      \
                                  T *y) {                                      \
    return zoneout<T>(n, p, seed, off, nw, pv, y);                             \
  }                                                                            \
  extern "C" int nncc_mse_loss_##S(int64_t n, const T *a, const T *b, T *o) {  \
    return mse<T>(n, a, b, o);                                                 \
  }                                                                            \
  extern "C" int nncc_cross_entropy_##S(int64_t N, int64_t C, const T *l,      \
                                        const int64_t *t, int64_t ig, T *o) {  \
    return crossEntropy<T>(N, C, l, t, ig, o);                                 \
  }                                                                            \
  extern "C" int nncc_bce_with_logits_##S(int64_t N, int64_t C, const T *x,    \
                                          const T *y, const T *pw, T *o) {     \
    return bceLogits<T>(N, C, x, y, pw, o);                                    \
  }

NNCC_DEFINE_NORM(f32, float)
NNCC_DEFINE_NORM(f64, double)

extern "C" int nncc_cumsum_axis_i32(int64_t o, int64_t N, int64_t in, int reverse,
                                    const int32_t *x, int32_t *y) {
  return cumsumAxis<int32_t>(o, N, in, reverse, x, y);
}
extern "C" int nncc_cumsum_axis_i64(int64_t o, int64_t N, int64_t in, int reverse,
                                    const int64_t *x, int64_t *y) {
  return cumsumAxis<int64_t>(o, N, in, reverse, x, y);
}

extern "C" void nncc_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                                   uint32_t out[4]) {
  nncc_philox_u32x4 c;
  for (int i = 0; i < 4; ++i)
    c.x[i] = ctr[i];
  const nncc_philox_u32x4 r = nncc_philox_bijection(c, key[0], key[1]);
  for (int i = 0; i < 4; ++i)
    out[i] = r.x[i];
}
