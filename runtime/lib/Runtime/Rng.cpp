//===- Rng.cpp - bulk fills over the per-element Philox functions ---------===//
//
// The fills call the very functions of nncc/Runtime/Philox.h that CUDA
// kernels call per thread, so dst[i] equals the device's element offset + i.
//
//===----------------------------------------------------------------------===//

#include "nncc/Runtime/Philox.h"
#include "nncc/Runtime/nncc_runtime.h"

extern "C" {

void nncc_rng_fill_u32(uint32_t *dst, uint64_t n, uint64_t seed, uint64_t stream,
                       uint64_t offset) {
  if (!dst)
    return;
  for (uint64_t i = 0; i < n; ++i)
    dst[i] = nncc_rng_u32(seed, stream, offset + i);
}

void nncc_rng_fill_uniform_f32(float *dst, uint64_t n, uint64_t seed, uint64_t stream,
                               uint64_t offset, float lo, float hi) {
  if (!dst)
    return;
  for (uint64_t i = 0; i < n; ++i)
    dst[i] = nncc_rng_uniform_range(seed, stream, offset + i, lo, hi);
}

void nncc_rng_fill_uniform_f64(double *dst, uint64_t n, uint64_t seed, uint64_t stream,
                               uint64_t offset, double lo, double hi) {
  if (!dst)
    return;
  for (uint64_t i = 0; i < n; ++i)
    dst[i] = lo + (hi - lo) * nncc_rng_uniform_double(seed, stream, offset + i);
}

void nncc_rng_fill_normal_f32(float *dst, uint64_t n, uint64_t seed, uint64_t stream,
                              uint64_t offset, float mean, float std) {
  if (!dst)
    return;
  for (uint64_t i = 0; i < n; ++i)
    dst[i] = NNCC_RNG_FMA(std, nncc_rng_normal(seed, stream, offset + i), mean);
}

void nncc_rng_fill_normal_f64(double *dst, uint64_t n, uint64_t seed, uint64_t stream,
                              uint64_t offset, double mean, double std) {
  if (!dst)
    return;
  for (uint64_t i = 0; i < n; ++i)
    dst[i] = mean + std * nncc_rng_normal_double(seed, stream, offset + i);
}

void nncc_rng_fill_bernoulli_u8(uint8_t *dst, uint64_t n, uint64_t seed, uint64_t stream,
                                uint64_t offset, float p_one) {
  if (!dst)
    return;
  for (uint64_t i = 0; i < n; ++i)
    dst[i] = static_cast<uint8_t>(nncc_rng_bernoulli(seed, stream, offset + i, p_one));
}

} // extern "C"
