//===- Philox.h - Dropout and zoneout masks from the runtime's Philox -*- C++ -*-===//
//
// The kernels' random masks draw from the one Philox-4x32-10 of
// nncc/Runtime/Philox.h (its bijection and its (block, stream) counter), on
// stream 0, so every element's decision is a function of (seed, offset,
// index) only: the CPU twin and the CUDA kernel draw identical bits
// regardless of threading.
//
// Mask convention (dropout, zoneout, attention dropout):
//   element i of (seed, offset) = word i%4 of nncc_rng_block(seed, 0,
//   offset + i/4), i.e. `offset` counts Philox blocks of four draws;
//   uniform u = (bits >> 8) * 2^-24 in [0, 1)  (24 bits: exact in float)
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_PHILOX_H
#define NNCC_KERNELS_PHILOX_H

#include "nncc/Kernels/Common.h"
#include "nncc/Runtime/Philox.h"

namespace nncc {
namespace kernels {

/// Stream of the kernels' masks in the runtime's counter convention.
constexpr uint64_t kMaskStream = 0;

/// Philox block `offset + block` of the mask stream of `seed`.
NNCC_HD nncc_philox_u32x4 philox_mask_block(uint64_t seed, uint64_t offset,
                                            uint64_t block) {
  return nncc_rng_block(seed, kMaskStream, offset + block);
}

/// 32 random bits for element `i` of the mask stream (seed, offset).
NNCC_HD uint32_t philox_bits(uint64_t seed, uint64_t offset, uint64_t i) {
  return philox_mask_block(seed, offset, i >> 2).x[i & 3];
}

/// Uniform in [0, 1) with 24 random bits (exactly representable in fp32).
NNCC_HD float philox_uniform(uint64_t seed, uint64_t offset, uint64_t i) {
  return nncc_rng_u32_to_unit_float(philox_bits(seed, offset, i));
}

/// Dropout keep decision for element i: kept iff u >= p.
NNCC_HD bool dropout_keep(uint64_t seed, uint64_t offset, uint64_t i,
                          float p) {
  return philox_uniform(seed, offset, i) >= p;
}

/// Blocks kMaskBatch at a time: out[4*i + w] = word w of
/// philox_mask_block(seed, offset, first + i) for i < kMaskBatch, i.e. the
/// bits of elements [4*first, 4*first + 4*kMaskBatch). The same rounds as
/// nncc_philox_bijection, lane by lane over the batch so that the host
/// compiler vectorises the 32x32->64-bit products (CPU kernels only).
constexpr int kMaskBatch = 16;
inline void philox_mask_blocks(uint64_t seed, uint64_t offset, uint64_t first,
                               uint32_t *out) {
  uint32_t c0[kMaskBatch], c1[kMaskBatch], c2[kMaskBatch], c3[kMaskBatch];
  for (int i = 0; i < kMaskBatch; ++i) {
    const uint64_t block = offset + first + (uint64_t)i;
    c0[i] = (uint32_t)block;
    c1[i] = (uint32_t)(block >> 32);
    c2[i] = (uint32_t)kMaskStream;
    c3[i] = (uint32_t)(kMaskStream >> 32);
  }
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += NNCC_PHILOX_W0;
      k1 += NNCC_PHILOX_W1;
    }
    for (int i = 0; i < kMaskBatch; ++i) {
      const uint64_t p0 = (uint64_t)NNCC_PHILOX_M0 * c0[i];
      const uint64_t p1 = (uint64_t)NNCC_PHILOX_M1 * c2[i];
      const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[i] ^ k0;
      const uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3[i] ^ k1;
      c1[i] = (uint32_t)p1;
      c3[i] = (uint32_t)p0;
      c0[i] = n0;
      c2[i] = n2;
    }
  }
  for (int i = 0; i < kMaskBatch; ++i) {
    out[4 * i + 0] = c0[i];
    out[4 * i + 1] = c1[i];
    out[4 * i + 2] = c2[i];
    out[4 * i + 3] = c3[i];
  }
}

/// Zoneout decision for element i: the previous state is kept iff u < p
/// (probability p); the same draw as dropout_keep, negated.
NNCC_HD bool zoneout_keep_prev(uint64_t seed, uint64_t offset, uint64_t i,
                               float p) {
  return philox_uniform(seed, offset, i) < p;
}

/// Philox element index of LSTM zoneout's mask for unit j of batch row b at
/// time t of layer-and-direction slot sd = l*D + d (shape [L*D, T, B, H]).
NNCC_HD uint64_t lstm_zoneout_counter(int64_t sd, int64_t t, int64_t b,
                                      int64_t j, int64_t B, int64_t T_,
                                      int64_t H) {
  return (uint64_t)(((sd * T_ + t) * B + b) * H + j);
}

} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_PHILOX_H
