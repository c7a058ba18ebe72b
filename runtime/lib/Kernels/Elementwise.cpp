//===- Elementwise.cpp - Activations, add, dropout, zoneout (CPU) ---------===//
//
// Forward of the elementwise family; its backward is ElementwiseBackward.cpp.
// The dropout and zoneout masks are RandomMasks.h's Philox streams, the
// ones CUDA/Elementwise.cuh draws.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "nncc/Kernels/RandomMasks.h"

#include <algorithm>

using namespace nncc::kernels;

namespace {

template <typename T>
int activationImpl(int64_t n, const T *x, int act, double alpha, T *y) {
  if (n < 0 || (n > 0 && (!x || !y)) || act < 0 || act > ActSigmoid)
    return NNCC_K_EINVAL;
  T a = T(alpha);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    y[i] = activate(act, x[i], a);
  return NNCC_K_OK;
}

template <typename T> int addImpl(int64_t n, const T *x, const T *r, T *y) {
  if (n < 0 || (n > 0 && (!x || !r || !y)))
    return NNCC_K_EINVAL;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    y[i] = x[i] + r[i];
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

} // namespace

#define NNCC_DEFINE_ELEMENTWISE(S, T)                                          \
  extern "C" int nncc_activation_##S(int64_t n, const T *x, int act,           \
                                     double alpha, T *y) {                     \
    return activationImpl<T>(n, x, act, alpha, y);                             \
  }                                                                            \
  extern "C" int nncc_add_##S(int64_t n, const T *x, const T *r, T *y) {       \
    return addImpl<T>(n, x, r, y);                                             \
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
  }

NNCC_DEFINE_ELEMENTWISE(f32, float)
NNCC_DEFINE_ELEMENTWISE(f64, double)

extern "C" void nncc_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                                   uint32_t out[4]) {
  nncc_philox_u32x4 c;
  for (int i = 0; i < 4; ++i)
    c.x[i] = ctr[i];
  const nncc_philox_u32x4 r = nncc_philox_bijection(c, key[0], key[1]);
  for (int i = 0; i < 4; ++i)
    out[i] = r.x[i];
}
