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
