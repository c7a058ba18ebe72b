//===- TokenBackward.cpp - Backward of embeddings, axial positions --------===//
//
// Each output row is owned by one thread and summed in a fixed order, so
// results do not depend on the thread count.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <algorithm>
#include <cstring>
#include <vector>

using namespace nncc::kernels;

namespace {

/// dtable[V,E] = scatter-add of dy rows by index (overwrites dtable). Each
/// thread owns a column range and walks the indices in order: deterministic.
template <typename T, typename I>
int embeddingBackward(int64_t n, int64_t V, int64_t E, const I *idx,
                      const T *dy, int64_t paddingIdx, T *dtable) {
  if (n < 0 || V <= 0 || E <= 0 || !dtable || (n > 0 && (!idx || !dy)))
    return NNCC_K_EINVAL;
  for (int64_t i = 0; i < n; ++i)
    if (idx[i] < 0 || (int64_t)idx[i] >= V)
      return NNCC_K_ERANGE;
  std::memset(dtable, 0, sizeof(T) * V * E);
  const int64_t CB = 64;
  const int64_t nb = (E + CB - 1) / CB;
#pragma omp parallel for schedule(static)
  for (int64_t cb = 0; cb < nb; ++cb) {
    const int64_t c0 = cb * CB, c1 = c0 + CB < E ? c0 + CB : E;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = (int64_t)idx[i];
      if (v == paddingIdx)
        continue;
      T *dr = dtable + v * E;
      const T *sr = dy + i * E;
      for (int64_t c = c0; c < c1; ++c)
        dr[c] += sr[c];
    }
  }
  return NNCC_K_OK;
}

/// dw0[i] = sum over b and the positions t < T with t / n2 == i of
/// dy[b, t, :d1]; dw1[j] likewise over t % n2 == j and dy[b, t, d1:]. Each
/// output row is owned by one thread and summed in a fixed order.
template <typename T>
int axialPositionBackward(int64_t B, int64_t Tn, int64_t n1, int64_t n2,
                          int64_t d1, int64_t d2, const T *dy, T *dw0,
                          T *dw1) {
  if (B < 0 || Tn < 0 || n1 <= 0 || n2 <= 0 || d1 <= 0 || d2 <= 0 ||
      Tn > n1 * n2 || !dw0 || !dw1 || (B * Tn > 0 && !dy))
    return NNCC_K_EINVAL;
  const int64_t E = d1 + d2;
#pragma omp parallel
  {
    std::vector<double> acc(std::max(d1, d2));
#pragma omp for schedule(static)
    for (int64_t row = 0; row < n1 + n2; ++row) {
      const bool first = row < n1;
      const int64_t d = first ? d1 : d2, col0 = first ? 0 : d1;
      std::fill(acc.begin(), acc.begin() + d, 0.0);
      // Positions reading this row: t = row*n2 + j (first) or i*n2 + row-n1.
      const int64_t count = first ? n2 : n1;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t c = 0; c < count; ++c) {
          const int64_t t = first ? row * n2 + c : c * n2 + (row - n1);
          if (t >= Tn)
            continue;
          const T *g = dy + (b * Tn + t) * E + col0;
          for (int64_t e = 0; e < d; ++e)
            acc[e] += (double)g[e];
        }
      T *dst = first ? dw0 + row * d1 : dw1 + (row - n1) * d2;
      for (int64_t e = 0; e < d; ++e)
        dst[e] = (T)acc[e];
    }
  }
  return NNCC_K_OK;
}

} // namespace

#define NNCC_DEFINE_TOKENS_BACKWARD(S, T)                                      \
  extern "C" int nncc_embedding_backward_##S(int64_t n, int64_t V, int64_t E,  \
                                             const int64_t *idx, const T *dy,  \
                                             int64_t pad, T *dt) {             \
    return embeddingBackward<T, int64_t>(n, V, E, idx, dy, pad, dt);           \
  }                                                                            \
  extern "C" int nncc_embedding_backward_i32_##S(                              \
      int64_t n, int64_t V, int64_t E, const int32_t *idx, const T *dy,        \
      int64_t pad, T *dt) {                                                    \
    return embeddingBackward<T, int32_t>(n, V, E, idx, dy, pad, dt);           \
  }                                                                            \
  extern "C" int nncc_axial_position_backward_##S(                            \
      int64_t B, int64_t Tn, int64_t n1, int64_t n2, int64_t d1, int64_t d2,   \
      const T *dy, T *dw0, T *dw1) {                                           \
    return axialPositionBackward<T>(B, Tn, n1, n2, d1, d2, dy, dw0, dw1);      \
  }

NNCC_DEFINE_TOKENS_BACKWARD(f32, float)
NNCC_DEFINE_TOKENS_BACKWARD(f64, double)
