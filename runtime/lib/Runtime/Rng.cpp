//===- Rng.cpp - bulk fills over the per-element Philox functions ---------===//
//
// dst[i] is always the per-element function of nncc/Runtime/Philox.h at
// element offset + i -- the value a CUDA kernel's thread computes. The fills
// only avoid recomputing what consecutive elements share: one Philox block
// serves four u32 or uniform float elements (two doubles), one Box-Muller
// pair (a logarithm, a square root and a sine/cosine) two normal elements. Elements before the
// first whole block and after the last go through the per-element functions.
//
//===----------------------------------------------------------------------===//

#include "nncc/Runtime/Philox.h"
#include "nncc/Runtime/nncc_runtime.h"

namespace {

/// Calls perElement(i) for the i in [0, n) outside whole blocks of
/// `perBlock` elements of the sequence (element offset + i belongs to block
/// (offset + i) / perBlock), and wholeBlock(i, block) for the first i of each
/// whole block.
template <typename PerElement, typename WholeBlock>
void forEachBlock(uint64_t n, uint64_t offset, uint64_t perBlock, PerElement perElement,
                  WholeBlock wholeBlock) {
  uint64_t i = 0;
  for (; i < n && (offset + i) % perBlock != 0; ++i)
    perElement(i);
  for (; i + perBlock <= n; i += perBlock)
    wholeBlock(i, (offset + i) / perBlock);
  for (; i < n; ++i)
    perElement(i);
}

} // namespace

extern "C" {

void nncc_rng_fill_u32(uint32_t *dst, uint64_t n, uint64_t seed, uint64_t stream,
                       uint64_t offset) {
  if (!dst)
    return;
  forEachBlock(
      n, offset, 4, [&](uint64_t i) { dst[i] = nncc_rng_u32(seed, stream, offset + i); },
      [&](uint64_t i, uint64_t block) {
        nncc_philox_u32x4 b = nncc_rng_block(seed, stream, block);
        for (unsigned w = 0; w < 4; ++w)
          dst[i + w] = b.x[w];
      });
}

void nncc_rng_fill_uniform_f32(float *dst, uint64_t n, uint64_t seed, uint64_t stream,
                               uint64_t offset, float lo, float hi) {
  if (!dst)
    return;
  // nncc_rng_uniform_range, one block at a time.
  float width = hi - lo;
  forEachBlock(
      n, offset, 4,
      [&](uint64_t i) { dst[i] = nncc_rng_uniform_range(seed, stream, offset + i, lo, hi); },
      [&](uint64_t i, uint64_t block) {
        nncc_philox_u32x4 b = nncc_rng_block(seed, stream, block);
        for (unsigned w = 0; w < 4; ++w)
          dst[i + w] = NNCC_RNG_FMA(width, nncc_rng_u32_to_unit_float(b.x[w]), lo);
      });
}

void nncc_rng_fill_uniform_f64(double *dst, uint64_t n, uint64_t seed, uint64_t stream,
                               uint64_t offset, double lo, double hi) {
  if (!dst)
    return;
  // nncc_rng_uniform_double: one block per two elements.
  forEachBlock(
      n, offset, 2,
      [&](uint64_t i) {
        dst[i] = lo + (hi - lo) * nncc_rng_uniform_double(seed, stream, offset + i);
      },
      [&](uint64_t i, uint64_t block) {
        nncc_philox_u32x4 b = nncc_rng_block(seed, stream, block);
        for (unsigned q = 0; q < 2; ++q)
          dst[i + q] = lo + (hi - lo) * nncc_rng_u32x2_to_unit_double(b.x[2 * q], b.x[2 * q + 1]);
      });
}

void nncc_rng_fill_normal_f32(float *dst, uint64_t n, uint64_t seed, uint64_t stream,
                              uint64_t offset, float mean, float std) {
  if (!dst)
    return;
  // nncc_rng_normal, one block (two Box-Muller pairs) at a time.
  forEachBlock(
      n, offset, 4,
      [&](uint64_t i) {
        dst[i] = NNCC_RNG_FMA(std, nncc_rng_normal(seed, stream, offset + i), mean);
      },
      [&](uint64_t i, uint64_t block) {
        nncc_philox_u32x4 b = nncc_rng_block(seed, stream, block);
        for (unsigned pair = 0; pair < 2; ++pair) {
          float u1 = nncc_rng_u32_to_unit_float_open0(b.x[2 * pair]);
          float radius = NNCC_RNG_SQRT(-2.0f * nncc_rng_logf(u1));
          float c, s;
          nncc_rng_sincos_turn(b.x[2 * pair + 1], &c, &s);
          dst[i + 2 * pair] = NNCC_RNG_FMA(std, radius * c, mean);
          dst[i + 2 * pair + 1] = NNCC_RNG_FMA(std, radius * s, mean);
        }
      });
}

void nncc_rng_fill_normal_f64(double *dst, uint64_t n, uint64_t seed, uint64_t stream,
                              uint64_t offset, double mean, double std) {
  if (!dst)
    return;
  // nncc_rng_normal_double: one block (one Box-Muller pair) per two elements.
  forEachBlock(
      n, offset, 2,
      [&](uint64_t i) { dst[i] = mean + std * nncc_rng_normal_double(seed, stream, offset + i); },
      [&](uint64_t i, uint64_t block) {
        nncc_philox_u32x4 b = nncc_rng_block(seed, stream, block);
        double u1 = 1.0 - nncc_rng_u32x2_to_unit_double(b.x[0], b.x[1]);
        double u2 = nncc_rng_u32x2_to_unit_double(b.x[2], b.x[3]);
        double radius = sqrt(-2.0 * log(u1));
        double theta = 6.283185307179586477 * u2;
        dst[i] = mean + std * (radius * cos(theta));
        dst[i + 1] = mean + std * (radius * sin(theta));
      });
}

void nncc_rng_fill_bernoulli_u8(uint8_t *dst, uint64_t n, uint64_t seed, uint64_t stream,
                                uint64_t offset, float p_one) {
  if (!dst)
    return;
  forEachBlock(
      n, offset, 4,
      [&](uint64_t i) {
        dst[i] = static_cast<uint8_t>(nncc_rng_bernoulli(seed, stream, offset + i, p_one));
      },
      [&](uint64_t i, uint64_t block) {
        nncc_philox_u32x4 b = nncc_rng_block(seed, stream, block);
        for (unsigned w = 0; w < 4; ++w)
          dst[i + w] = static_cast<uint8_t>(nncc_rng_u32_to_unit_float(b.x[w]) < p_one);
      });
}

} // extern "C"
