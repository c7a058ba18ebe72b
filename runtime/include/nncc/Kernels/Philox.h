//===- Philox.h - Counter-based RNG shared by CPU and GPU -------*- C++ -*-===//
//
// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC'11). A pure function (key, counter) -> 4 x 32 random bits, so every
// element's random number is a function of (seed, offset, index) only: the
// CPU twin and the CUDA kernel draw identical bits regardless of threading.
//
// nncc convention (used by dropout, zoneout):
//   key     = {lo32(seed), hi32(seed)}
//   counter = {lo32(offset + i/4), hi32(offset + i/4), 0, 0}
//   element i uses word i%4 of that block.
//   uniform u = (bits >> 8) * 2^-24 in [0, 1)  (24 bits: exact in float)
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_PHILOX_H
#define NNCC_KERNELS_PHILOX_H

#include "nncc/Kernels/Common.h"

namespace nncc {
namespace kernels {

struct Philox4x32 {
  uint32_t v[4];
};

NNCC_HD void philox_mulhilo(uint32_t a, uint32_t b, uint32_t &hi,
                            uint32_t &lo) {
  uint64_t p = (uint64_t)a * (uint64_t)b;
  hi = (uint32_t)(p >> 32);
  lo = (uint32_t)p;
}

/// Philox-4x32 with `rounds` rounds (10 is the standard, crush-resistant one).
NNCC_HD Philox4x32 philox4x32(uint32_t c0, uint32_t c1, uint32_t c2,
                              uint32_t c3, uint32_t k0, uint32_t k1,
                              int rounds = 10) {
  const uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
  const uint32_t W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  for (int r = 0; r < rounds; ++r) {
    if (r > 0) {
      k0 += W0;
      k1 += W1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    philox_mulhilo(M0, c0, hi0, lo0);
    philox_mulhilo(M1, c2, hi1, lo1);
    uint32_t n0 = hi1 ^ c1 ^ k0;
    uint32_t n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
  }
  Philox4x32 out;
  out.v[0] = c0;
  out.v[1] = c1;
  out.v[2] = c2;
  out.v[3] = c3;
  return out;
}

/// 32 random bits for element `i` of the stream (seed, offset).
NNCC_HD uint32_t philox_bits(uint64_t seed, uint64_t offset, uint64_t i) {
  uint64_t block = offset + (i >> 2);
  Philox4x32 r = philox4x32((uint32_t)block, (uint32_t)(block >> 32), 0u, 0u,
                            (uint32_t)seed, (uint32_t)(seed >> 32));
  return r.v[i & 3];
}

/// Uniform in [0, 1) with 24 random bits (exactly representable in fp32).
NNCC_HD float philox_uniform(uint64_t seed, uint64_t offset, uint64_t i) {
  return (float)(philox_bits(seed, offset, i) >> 8) * (1.0f / 16777216.0f);
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
