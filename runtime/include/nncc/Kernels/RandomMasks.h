//===- RandomMasks.h - Dropout and zoneout masks from the runtime's Philox -*- C++ -*-===//
//
// The kernels' random masks draw from the one Philox-4x32-10 of
// nncc/Runtime/Philox.h (its bijection and its (block, stream) counter), on
// stream 0, so every element's decision is a function of (seed, offset,
// index) only: the CPU twin and the CUDA kernel draw identical bits
// regardless of threading.
//
// Mask convention (dropout, zoneout, attention dropout, token masking,
// sampling):
//   element i of (seed, offset) is draw g = offset + i of the stream: word
//   g%4 of nncc_rng_block(seed, 0, g/4), i.e. `offset` counts draws (four
//   per Philox block), so a call on rows [r0, r1) of a batch-major tensor
//   with offset + r0 * (draws per row) draws exactly what the call on the
//   whole tensor draws for those rows (micro-batches: docs/training.md,
//   "Random streams"); uniform u = (bits >> 8) * 2^-24 in [0, 1)  (24 bits:
//   exact in float)
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_RANDOMMASKS_H
#define NNCC_KERNELS_RANDOMMASKS_H

#include "nncc/Kernels/Common.h"
#include "nncc/Runtime/Philox.h"

#if defined(__AVX2__) && !defined(__CUDACC__)
#include <immintrin.h>
#endif

namespace nncc {
namespace kernels {

/// Stream of the kernels' masks in the runtime's counter convention.
constexpr uint64_t kMaskStream = 0;

/// Philox block `block` of the mask stream of `seed` (draws 4*block ..
/// 4*block + 3).
NNCC_HD nncc_philox_u32x4 philox_stream_block(uint64_t seed, uint64_t block) {
  return nncc_rng_block(seed, kMaskStream, block);
}

/// The Philox block holding element `4*block` of the mask stream (seed,
/// offset) when `offset` is a multiple of 4 (callers check, see
/// philox_mask_chunk); `block + offset/4` otherwise rounded down.
NNCC_HD nncc_philox_u32x4 philox_mask_block(uint64_t seed, uint64_t offset,
                                            uint64_t block) {
  return philox_stream_block(seed, (offset >> 2) + block);
}

/// 32 random bits for element `i` of the mask stream (seed, offset).
NNCC_HD uint32_t philox_bits(uint64_t seed, uint64_t offset, uint64_t i) {
  const uint64_t g = offset + i;
  const nncc_philox_u32x4 r = philox_stream_block(seed, g >> 2);
  // A select, not r.x[g & 3]: a run-time index puts r in local memory on
  // the GPU.
  const unsigned w = (unsigned)(g & 3);
  return w == 0 ? r.x[0] : w == 1 ? r.x[1] : w == 2 ? r.x[2] : r.x[3];
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
/// nncc_philox_bijection, eight blocks per AVX2 vector where the host has it
/// (the compiler does not vectorise the scalar form); CPU kernels only.
constexpr int kMaskBatch = 16;
#if defined(__AVX2__) && !defined(__CUDACC__)
/// High 32 bits of the eight products a[i] * m[i] (m the same in each lane).
inline __m256i philox_mulhi8(__m256i a, __m256i m) {
  const __m256i even = _mm256_mul_epu32(a, m);
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
  return _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}
#endif
inline void philox_mask_blocks(uint64_t seed, uint64_t offset, uint64_t first,
                               uint32_t *out) {
  alignas(32) uint32_t c0[kMaskBatch], c1[kMaskBatch], c2[kMaskBatch], c3[kMaskBatch];
  for (int i = 0; i < kMaskBatch; ++i) {
    const uint64_t block = offset + first + (uint64_t)i;
    c0[i] = (uint32_t)block;
    c1[i] = (uint32_t)(block >> 32);
    c2[i] = (uint32_t)kMaskStream;
    c3[i] = (uint32_t)(kMaskStream >> 32);
  }
#if defined(__AVX2__) && !defined(__CUDACC__)
  const __m256i m0 = _mm256_set1_epi32((int)NNCC_PHILOX_M0);
  const __m256i m1 = _mm256_set1_epi32((int)NNCC_PHILOX_M1);
  for (int v = 0; v < kMaskBatch; v += 8) {
    __m256i x0 = _mm256_load_si256((const __m256i *)(c0 + v));
    __m256i x1 = _mm256_load_si256((const __m256i *)(c1 + v));
    __m256i x2 = _mm256_load_si256((const __m256i *)(c2 + v));
    __m256i x3 = _mm256_load_si256((const __m256i *)(c3 + v));
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int round = 0; round < 10; ++round) {
      if (round > 0) {
        k0 += NNCC_PHILOX_W0;
        k1 += NNCC_PHILOX_W1;
      }
      const __m256i hi0 = philox_mulhi8(x0, m0), hi1 = philox_mulhi8(x2, m1);
      const __m256i lo0 = _mm256_mullo_epi32(x0, m0), lo1 = _mm256_mullo_epi32(x2, m1);
      x0 = _mm256_xor_si256(_mm256_xor_si256(hi1, x1), _mm256_set1_epi32((int)k0));
      x2 = _mm256_xor_si256(_mm256_xor_si256(hi0, x3), _mm256_set1_epi32((int)k1));
      x1 = lo1;
      x3 = lo0;
    }
    _mm256_store_si256((__m256i *)(c0 + v), x0);
    _mm256_store_si256((__m256i *)(c1 + v), x1);
    _mm256_store_si256((__m256i *)(c2 + v), x2);
    _mm256_store_si256((__m256i *)(c3 + v), x3);
  }
#else
  for (int i = 0; i < kMaskBatch; ++i) {
    nncc_philox_u32x4 ctr = {{c0[i], c1[i], c2[i], c3[i]}};
    ctr = nncc_philox_bijection(ctr, (uint32_t)seed, (uint32_t)(seed >> 32));
    c0[i] = ctr.x[0];
    c1[i] = ctr.x[1];
    c2[i] = ctr.x[2];
    c3[i] = ctr.x[3];
  }
#endif
  for (int i = 0; i < kMaskBatch; ++i) {
    out[4 * i + 0] = c0[i];
    out[4 * i + 1] = c1[i];
    out[4 * i + 2] = c2[i];
    out[4 * i + 3] = c3[i];
  }
}

/// The bits of elements [c*4*kMaskBatch, (c+1)*4*kMaskBatch) of the mask
/// stream (seed, offset): the batched Philox when offset is a multiple of 4
/// (whole blocks), else element by element. CPU kernels only.
inline void philox_mask_chunk(uint64_t seed, uint64_t offset, uint64_t c,
                              uint32_t *out) {
  if ((offset & 3) == 0) {
    philox_mask_blocks(seed, offset >> 2, c * kMaskBatch, out);
    return;
  }
  for (int j = 0; j < 4 * kMaskBatch; ++j)
    out[j] = philox_bits(seed, offset, c * 4 * kMaskBatch + (uint64_t)j);
}

/// Zoneout decision for element i: the previous state is kept iff u < p
/// (probability p); the same draw as dropout_keep, negated.
NNCC_HD bool zoneout_keep_prev(uint64_t seed, uint64_t offset, uint64_t i,
                               float p) {
  return philox_uniform(seed, offset, i) < p;
}

/// Philox element index of LSTM zoneout's mask for unit j of batch row b at
/// time t (batch-major, [B, T, H] per layer-and-direction slot, so that a
/// micro-batch's rows draw what the whole batch's draw: the caller's offset
/// adds first_row * T * H); the slot sd = l*D + d is in the key
/// (lstm_zoneout_key). `sd` and `B` are unused (kept for the call sites).
NNCC_HD uint64_t lstm_zoneout_counter(int64_t sd, int64_t t, int64_t b,
                                      int64_t j, int64_t B, int64_t T_,
                                      int64_t H) {
  (void)sd;
  (void)B;
  return (uint64_t)((b * T_ + t) * H + j);
}

/// The key of LSTM zoneout's masks in slot sd: the op's key for slot 0,
/// else mixed with the slot (an odd multiplier: distinct slots, distinct
/// keys).
NNCC_HD uint64_t lstm_zoneout_key(uint64_t seed, int64_t sd) {
  return seed ^ ((uint64_t)sd * 0x9E3779B97F4A7C15ull);
}

/// Zoneout decision of LSTM unit j of batch row b at time t in slot sd.
NNCC_HD bool lstm_zoneout_keep_prev(uint64_t seed, uint64_t offset, int64_t sd,
                                    int64_t t, int64_t b, int64_t j, int64_t T_,
                                    int64_t H, float p) {
  return zoneout_keep_prev(lstm_zoneout_key(seed, sd), offset,
                           lstm_zoneout_counter(sd, t, b, j, 0, T_, H), p);
}

} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_RANDOMMASKS_H
