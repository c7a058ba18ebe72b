//===- Token.cpp - Embeddings, positions, masking, sampling (CPU) ---------===//
//
// CPU twins of CUDA/Token.cuh; the element math (keys, noise, axial rows) is
// TokenMath.h, so both pick the same positions and samples.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"
#include "nncc/Kernels/NormMath.h"
#include "nncc/Kernels/TokenMath.h"

#include <algorithm>
#include <cstring>
#include <vector>

using namespace nncc::kernels;

namespace {

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

template <typename I>
int maskTokens(int64_t rows, int64_t n, double p, int64_t maskId,
               uint64_t seed, uint64_t offset, const I *tokens, I *masked,
               uint8_t *mask) {
  if (rows < 0 || n < 0 || !(p >= 0 && p < 1) ||
      (rows * n > 0 && (!tokens || !masked || !mask)))
    return NNCC_K_EINVAL;
  const int64_t k = masked_per_row(p, n);
#pragma omp parallel
  {
    std::vector<uint32_t> keys(n);
    std::vector<int64_t> order(n);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const I *in = tokens + r * n;
      I *out = masked + r * n;
      uint8_t *m = mask + r * n;
      std::memcpy(out, in, sizeof(I) * n);
      std::memset(m, 0, n);
      if (k == 0)
        continue;
      for (int64_t t = 0; t < n; ++t) {
        keys[t] = mask_key(seed, offset, r, n, t);
        order[t] = t;
      }
      auto less = [&](int64_t a, int64_t b) {
        return mask_key_less(keys[a], a, keys[b], b);
      };
      std::nth_element(order.begin(), order.begin() + (k - 1), order.end(), less);
      for (int64_t i = 0; i < k; ++i) {
        out[order[i]] = (I)maskId;
        m[order[i]] = 1;
      }
    }
  }
  return NNCC_K_OK;
}

/// The Gumbel-max draw of row r (V logits at l): element r*V + v of the
/// stream is word (r*V + v) % 4 of block (r*V + v) / 4, so one Philox block
/// serves four classes.
template <typename T>
int32_t sampleRow(const T *l, int64_t V, uint64_t seed, uint64_t offset,
                  int64_t r) {
  double best = -INFINITY;
  int64_t arg = 0;
  const uint64_t first = offset + (uint64_t)(r * V), last = first + (uint64_t)V;
  for (uint64_t blk = first >> 2; blk <= (last - 1) >> 2; ++blk) {
    const nncc_philox_u32x4 bits = philox_stream_block(seed, blk);
    for (int w = 0; w < 4; ++w) {
      const uint64_t i = (blk << 2) + (uint64_t)w;
      if (i < first || i >= last)
        continue;
      const double score = (double)l[i - first] + gumbel_from_bits(bits.x[w]);
      if (score > best) {
        best = score;
        arg = (int64_t)(i - first);
      }
    }
  }
  return (int32_t)arg;
}

template <typename T>
int sample(int64_t rows, int64_t V, uint64_t seed, uint64_t offset,
           const T *logits, const uint8_t *rowsMask, int32_t *out) {
  if (rows < 0 || V <= 0 || V > INT32_MAX || (rows > 0 && (!logits || !out)))
    return NNCC_K_EINVAL;
#pragma omp parallel for schedule(dynamic, 4)
  for (int64_t r = 0; r < rows; ++r)
    out[r] = rowsMask && !rowsMask[r] ? 0
                                      : sampleRow(logits + r * V, V, seed, offset, r);
  return NNCC_K_OK;
}

/// sample(x w^T + b, rows) without the [N, V] logits: the drawn rows in
/// chunks of nncc_linear_ce_chunk_rows(N, V), each gathered, multiplied
/// (one GEMM into the workspace) and sampled with the noise of its row.
template <typename T>
int linearSample(int64_t N, int64_t K, int64_t V, uint64_t seed,
                 uint64_t offset, const T *x, const T *w, const T *b,
                 const uint8_t *rowsMask, void *workspace, int32_t *out) {
  if (N < 0 || K <= 0 || V <= 0 || V > INT32_MAX ||
      (N > 0 && (!x || !w || !out || !workspace)))
    return NNCC_K_EINVAL;
  std::vector<int64_t> drawn;
  for (int64_t r = 0; r < N; ++r) {
    out[r] = 0;
    if (!rowsMask || rowsMask[r])
      drawn.push_back(r);
  }
  const int64_t chunk = nncc_linear_ce_chunk_rows(N, V);
  T *xs = static_cast<T *>(workspace), *logits = xs + chunk * K;
  for (size_t c0 = 0; c0 < drawn.size(); c0 += (size_t)chunk) {
    const int64_t n = std::min<int64_t>(chunk, (int64_t)(drawn.size() - c0));
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(xs + i * K, x + drawn[c0 + i] * K, sizeof(T) * K);
    blasGemm(false, true, n, V, K, T(1), xs, K, w, K, T(0), logits, V);
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t i = 0; i < n; ++i) {
      T *l = logits + i * V;
      if (b)
        for (int64_t v = 0; v < V; ++v)
          l[v] += b[v];
      out[drawn[c0 + i]] = sampleRow(l, V, seed, offset, drawn[c0 + i]);
    }
  }
  return NNCC_K_OK;
}

template <typename T>
int axialPosition(int64_t B, int64_t Tn, int64_t n1, int64_t n2, int64_t d1,
                  int64_t d2, const T *x, const T *w0, const T *w1, T *y) {
  if (B < 0 || Tn < 0 || n1 <= 0 || n2 <= 0 || d1 <= 0 || d2 <= 0 ||
      Tn > n1 * n2 || (B * Tn > 0 && (!x || !w0 || !w1 || !y)))
    return NNCC_K_EINVAL;
  const int64_t E = d1 + d2;
#pragma omp parallel for schedule(static)
  for (int64_t bt = 0; bt < B * Tn; ++bt) {
    const int64_t t = bt % Tn;
    const T *row0 = w0 + (t / n2) * d1, *row1 = w1 + (t % n2) * d2;
    const T *xr = x + bt * E;
    T *yr = y + bt * E;
    for (int64_t e = 0; e < d1; ++e)
      yr[e] = xr[e] + row0[e];
    for (int64_t e = 0; e < d2; ++e)
      yr[d1 + e] = xr[d1 + e] + row1[e];
  }
  return NNCC_K_OK;
}
} // namespace

extern "C" int64_t nncc_linear_sample_workspace_size(int64_t N, int64_t K,
                                                     int64_t V,
                                                     int64_t elem_size) {
  return nncc_linear_ce_chunk_rows(N, V) * (std::max<int64_t>(K, 0) +
                                            std::max<int64_t>(V, 0)) *
         elem_size;
}

extern "C" int nncc_mask_tokens_i32(int64_t rows, int64_t n, double p,
                                    int64_t maskId, uint64_t seed,
                                    uint64_t offset, const int32_t *tokens,
                                    int32_t *masked, uint8_t *mask) {
  return maskTokens<int32_t>(rows, n, p, maskId, seed, offset, tokens, masked,
                             mask);
}
extern "C" int nncc_mask_tokens_i64(int64_t rows, int64_t n, double p,
                                    int64_t maskId, uint64_t seed,
                                    uint64_t offset, const int64_t *tokens,
                                    int64_t *masked, uint8_t *mask) {
  return maskTokens<int64_t>(rows, n, p, maskId, seed, offset, tokens, masked,
                             mask);
}

#define NNCC_DEFINE_TOKENS(S, T)                                               \
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
  extern "C" int nncc_sample_##S(int64_t rows, int64_t V, uint64_t seed,       \
                                 uint64_t off, const T *logits,                \
                                 const uint8_t *rowsMask, int32_t *out) {      \
    return sample<T>(rows, V, seed, off, logits, rowsMask, out);               \
  }                                                                            \
  extern "C" int nncc_linear_sample_##S(                                       \
      int64_t N, int64_t K, int64_t V, uint64_t seed, uint64_t off,            \
      const T *x, const T *w, const T *b, const uint8_t *rowsMask, void *ws,   \
      int32_t *out) {                                                          \
    return linearSample<T>(N, K, V, seed, off, x, w, b, rowsMask, ws, out);    \
  }                                                                            \
  extern "C" int nncc_axial_position_##S(int64_t B, int64_t Tn, int64_t n1,    \
                                         int64_t n2, int64_t d1, int64_t d2,   \
                                         const T *x, const T *w0,              \
                                         const T *w1, T *y) {                  \
    return axialPosition<T>(B, Tn, n1, n2, d1, d2, x, w0, w1, y);              \
  }

NNCC_DEFINE_TOKENS(f32, float)
NNCC_DEFINE_TOKENS(f64, double)

