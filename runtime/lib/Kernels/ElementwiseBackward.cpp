//===- ElementwiseBackward.cpp - Backward of activations, dropout ---------===//

#include "Internal.h"
#include "nncc/Kernels/BackwardMath.h"
#include "nncc/Kernels/RandomMasks.h"

#include <algorithm>

using namespace nncc::kernels;

namespace nncc::kernels {

template <typename T>
int activationBackward(int64_t n, const T *xy, int isOutput, int act,
                       double alpha, const T *dy, T *dx) {
  if (n < 0 || (n > 0 && (!xy || !dy || !dx)) || act < 0 || act > ActSigmoid)
    return NNCC_K_EINVAL;
  if (isOutput && !activation_grad_from_output_ok(act, alpha))
    return NNCC_K_EINVAL;
  const T a = T(alpha);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    dx[i] = dy[i] * (isOutput ? activation_grad_post(act, xy[i], a)
                              : activation_grad_pre(act, xy[i], a));
  return NNCC_K_OK;
}

template int activationBackward<float>(int64_t, const float *, int, int, double, const float *,
                                       float *);
template int activationBackward<double>(int64_t, const double *, int, int, double,
                                        const double *, double *);

} // namespace nncc::kernels

namespace {

template <typename T>
int dropoutBackward(int64_t n, double p, uint64_t seed, uint64_t offset,
                    const T *dy, T *dx) {
  if (n < 0 || !(p >= 0 && p < 1) || (n > 0 && (!dy || !dx)))
    return NNCC_K_EINVAL;
  const float pf = (float)p;
  const T scale = T(1) / (T(1) - T(p));
  // The forward's mask (dropout_keep), a batch of Philox blocks at a time.
  constexpr int64_t kChunk = 4 * kMaskBatch;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    uint32_t bits[kChunk];
    philox_mask_chunk(seed, offset, (uint64_t)c, bits);
    const int64_t i0 = c * kChunk, m = std::min<int64_t>(kChunk, n - i0);
    for (int64_t j = 0; j < m; ++j)
      dx[i0 + j] = nncc_rng_u32_to_unit_float(bits[j]) >= pf ? dy[i0 + j] * scale : T(0);
  }
  return NNCC_K_OK;
}

} // namespace

#define NNCC_DEFINE_ELEMENTWISE_BACKWARD(S, T)                                 \
  extern "C" int nncc_activation_backward_##S(int64_t n, const T *xy,          \
                                              int is_out, int act,             \
                                              double alpha, const T *dy,       \
                                              T *dx) {                         \
    return activationBackward<T>(n, xy, is_out, act, alpha, dy, dx);           \
  }                                                                            \
  extern "C" int nncc_dropout_backward_##S(int64_t n, double p, uint64_t seed, \
                                           uint64_t off, const T *dy, T *dx) { \
    return dropoutBackward<T>(n, p, seed, off, dy, dx);                        \
  }

NNCC_DEFINE_ELEMENTWISE_BACKWARD(f32, float)
NNCC_DEFINE_ELEMENTWISE_BACKWARD(f64, double)
