/*
 * Philox.h - counter-based random numbers, identical on CPU and GPU.
 *
 * The one Philox-4x32-10 of nncc (Salmon et al., "Parallel random numbers:
 * as easy as 1, 2, 3", SC'11), with the one counter convention below. Every
 * value is a pure function of (seed, stream, index): no state, so a CUDA
 * thread and its CPU twin compute element i independently and get the same
 * bits. Users: the runtime's fills (lib/Runtime/Rng.cpp: weight init, LSH
 * rotations), the CUDA LSH rotation kernel, and the kernels' dropout and
 * zoneout masks (nncc/Kernels/RandomMasks.h: stream 0, see there).
 *
 *   key     = (seed low 32 bits, seed high 32 bits)
 *   counter = (block low, block high, stream low, stream high)
 *
 * u32 element i of (seed, stream) is word (i % 4) of block i / 4.
 * Uniform floats use one word per element; normals use one block per four
 * elements (two Box-Muller pairs); uniform doubles one block per two.
 *
 * Bit-identical CPU/GPU floats: the float helpers below use only integer
 * operations, explicit fused multiply-adds, correctly rounded division and
 * square root, and multiplications whose results never feed a separate
 * add. Contraction (-ffp-contract=fast, nvcc's default) therefore cannot
 * change them. -ffast-math on the host side voids the guarantee. The double
 * helpers call libm and are meant for the CPU (fp64 gradient checks).
 *
 * Plain C99, C++ and CUDA: every function is NNCC_HD
 * (nncc/Kernels/HostDevice.h).
 */
#ifndef NNCC_RUNTIME_PHILOX_H
#define NNCC_RUNTIME_PHILOX_H

#include "nncc/Kernels/HostDevice.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDA_ARCH__)
#define NNCC_RNG_FMA(a, b, c) __fmaf_rn((a), (b), (c))
#define NNCC_RNG_DIV(a, b) __fdiv_rn((a), (b))
#define NNCC_RNG_SQRT(a) __fsqrt_rn((a))
#else
#define NNCC_RNG_FMA(a, b, c) fmaf((a), (b), (c))
#define NNCC_RNG_DIV(a, b) ((a) / (b))
#define NNCC_RNG_SQRT(a) sqrtf((a))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nncc_philox_u32x4 {
  uint32_t x[4];
} nncc_philox_u32x4;

#define NNCC_PHILOX_M0 0xD2511F53u
#define NNCC_PHILOX_M1 0xCD9E8D57u
#define NNCC_PHILOX_W0 0x9E3779B9u
#define NNCC_PHILOX_W1 0xBB67AE85u

/* The raw bijection: 10 rounds on counter `ctr` under key (k0, k1). */
NNCC_HD nncc_philox_u32x4 nncc_philox_bijection(nncc_philox_u32x4 ctr,
                                                          uint32_t k0, uint32_t k1) {
  int round;
  for (round = 0; round < 10; ++round) {
    uint64_t p0, p1;
    nncc_philox_u32x4 next;
    if (round > 0) {
      k0 += NNCC_PHILOX_W0;
      k1 += NNCC_PHILOX_W1;
    }
    p0 = (uint64_t)NNCC_PHILOX_M0 * ctr.x[0];
    p1 = (uint64_t)NNCC_PHILOX_M1 * ctr.x[2];
    next.x[0] = (uint32_t)(p1 >> 32) ^ ctr.x[1] ^ k0;
    next.x[1] = (uint32_t)p1;
    next.x[2] = (uint32_t)(p0 >> 32) ^ ctr.x[3] ^ k1;
    next.x[3] = (uint32_t)p0;
    ctr = next;
  }
  return ctr;
}

/* Block `block` (four u32 words) of the (seed, stream) sequence. */
NNCC_HD nncc_philox_u32x4 nncc_rng_block(uint64_t seed, uint64_t stream,
                                                      uint64_t block) {
  nncc_philox_u32x4 ctr;
  ctr.x[0] = (uint32_t)block;
  ctr.x[1] = (uint32_t)(block >> 32);
  ctr.x[2] = (uint32_t)stream;
  ctr.x[3] = (uint32_t)(stream >> 32);
  return nncc_philox_bijection(ctr, (uint32_t)seed, (uint32_t)(seed >> 32));
}

/* u32 element `index`. */
NNCC_HD uint32_t nncc_rng_u32(uint64_t seed, uint64_t stream, uint64_t index) {
  nncc_philox_u32x4 b = nncc_rng_block(seed, stream, index >> 2);
  return b.x[index & 3];
}

/* [0, 1) with 24 random bits: exact on every device. */
NNCC_HD float nncc_rng_u32_to_unit_float(uint32_t w) {
  return (float)(w >> 8) * 5.9604644775390625e-08f; /* 2^-24 */
}

/* (0, 1]: never 0, for logarithms. */
NNCC_HD float nncc_rng_u32_to_unit_float_open0(uint32_t w) {
  return (float)((w >> 8) + 1u) * 5.9604644775390625e-08f;
}

/* [0, 1) with 53 random bits from two words. */
NNCC_HD double nncc_rng_u32x2_to_unit_double(uint32_t a, uint32_t b) {
  uint64_t bits = ((uint64_t)(a >> 5) << 26) | (uint64_t)(b >> 6);
  return (double)bits * 1.1102230246251565404e-16; /* 2^-53 */
}

/* Natural log of a positive normal float, deterministic (see top). Absolute
 * error below 1e-7 on (0, 1]. */
NNCC_HD float nncc_rng_logf(float x) {
  uint32_t b, mb;
  int e;
  float m, f, s, z, sz, p, lnm, ef;
  memcpy(&b, &x, sizeof b);
  e = (int)((b >> 23) & 0xffu) - 127;
  mb = (b & 0x007fffffu) | 0x3f800000u; /* m in [1, 2) */
  if (mb > 0x3fb504f3u) {               /* m > sqrt(2): use m / 2 */
    mb -= 0x00800000u;
    e += 1;
  }
  memcpy(&m, &mb, sizeof m);
  f = m - 1.0f; /* exact (Sterbenz) */
  s = NNCC_RNG_DIV(f, 2.0f + f);
  z = s * s;
  /* ln(m) = 2 atanh(s) = 2s + s z (2/3 + 2z/5 + 2z^2/7 + 2z^3/9 + 2z^4/11) */
  p = NNCC_RNG_FMA(z, 0.18181818181818182f, 0.22222222222222222f);
  p = NNCC_RNG_FMA(p, z, 0.28571428571428571f);
  p = NNCC_RNG_FMA(p, z, 0.4f);
  p = NNCC_RNG_FMA(p, z, 0.66666666666666667f);
  sz = s * z;
  lnm = NNCC_RNG_FMA(sz, p, 2.0f * s);
  ef = (float)e;
  /* ln 2 = hi + lo, hi with 16 significant bits so e * hi is exact */
  return NNCC_RNG_FMA(ef, 0.693145751953125f, NNCC_RNG_FMA(ef, 1.428606820309417e-06f, lnm));
}

/* cos and sin of 2*pi*t for t = w24 * 2^-24, w24 = w >> 8 (the uniform of
 * nncc_rng_u32_to_unit_float(w)); deterministic (see top). */
NNCC_HD void nncc_rng_sincos_turn(uint32_t w, float *c_out, float *s_out) {
  int32_t w24 = (int32_t)(w >> 8);
  int32_t k = (w24 + (1 << 21)) >> 22; /* nearest quarter turn, 0..4 */
  int32_t r = w24 - k * (1 << 22);     /* in [-2^21, 2^21] */
  float a = (float)r * 3.7450702829239286e-07f; /* r * 2^-22 * pi/2 ; |a| <= pi/4 */
  float z = a * a;
  float az = a * z;
  float ps, pc, sa, ca;
  /* sin a = a + a z (-1/6 + z/120 - z^2/5040 + z^3/362880) */
  ps = NNCC_RNG_FMA(z, 2.7557319223985893e-06f, -1.9841269841269841e-04f);
  ps = NNCC_RNG_FMA(ps, z, 8.3333333333333333e-03f);
  ps = NNCC_RNG_FMA(ps, z, -1.6666666666666667e-01f);
  sa = NNCC_RNG_FMA(az, ps, a);
  /* cos a = 1 + z (-1/2 + z/24 - z^2/720 + z^3/40320 - z^4/3628800) */
  pc = NNCC_RNG_FMA(z, -2.7557319223985888e-07f, 2.4801587301587302e-05f);
  pc = NNCC_RNG_FMA(pc, z, -1.3888888888888889e-03f);
  pc = NNCC_RNG_FMA(pc, z, 4.1666666666666667e-02f);
  pc = NNCC_RNG_FMA(pc, z, -0.5f);
  ca = NNCC_RNG_FMA(z, pc, 1.0f);
  switch (k & 3) {
  case 0: *c_out = ca; *s_out = sa; break;
  case 1: *c_out = -sa; *s_out = ca; break;
  case 2: *c_out = -ca; *s_out = -sa; break;
  default: *c_out = sa; *s_out = -ca; break;
  }
}

/* U[0, 1) float, element `index`. */
NNCC_HD float nncc_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index) {
  return nncc_rng_u32_to_unit_float(nncc_rng_u32(seed, stream, index));
}

/* lo + (hi - lo) * U[0, 1) */
NNCC_HD float nncc_rng_uniform_range(uint64_t seed, uint64_t stream,
                                                   uint64_t index, float lo, float hi) {
  return NNCC_RNG_FMA(hi - lo, nncc_rng_uniform(seed, stream, index), lo);
}

/* N(0, 1) float, element `index`: Box-Muller on words (2p, 2p+1) of block
 * index / 4 with p = (index / 2) % 2; even index -> cos, odd -> sin. */
NNCC_HD float nncc_rng_normal(uint64_t seed, uint64_t stream, uint64_t index) {
  nncc_philox_u32x4 b = nncc_rng_block(seed, stream, index >> 2);
  unsigned pair = (unsigned)((index >> 1) & 1u);
  float u1 = nncc_rng_u32_to_unit_float_open0(b.x[2 * pair]);
  float radius = NNCC_RNG_SQRT(-2.0f * nncc_rng_logf(u1));
  float c, s;
  nncc_rng_sincos_turn(b.x[2 * pair + 1], &c, &s);
  return radius * ((index & 1u) ? s : c);
}

/* 1 with probability p, else 0 (U < p). */
NNCC_HD int nncc_rng_bernoulli(uint64_t seed, uint64_t stream, uint64_t index,
                                            float p) {
  return nncc_rng_uniform(seed, stream, index) < p;
}

/* U[0, 1) double (53 bits), element `index`: words (2q, 2q+1) of block
 * index / 2, q = index % 2. */
NNCC_HD double nncc_rng_uniform_double(uint64_t seed, uint64_t stream,
                                                    uint64_t index) {
  nncc_philox_u32x4 b = nncc_rng_block(seed, stream, index >> 1);
  unsigned q = (unsigned)(index & 1u);
  return nncc_rng_u32x2_to_unit_double(b.x[2 * q], b.x[2 * q + 1]);
}

/* N(0, 1) double, element `index`: Box-Muller on block index / 2 (u1 from
 * words 0-1, u2 from words 2-3); even index -> cos, odd -> sin. libm. */
NNCC_HD double nncc_rng_normal_double(uint64_t seed, uint64_t stream,
                                                   uint64_t index) {
  nncc_philox_u32x4 b = nncc_rng_block(seed, stream, index >> 1);
  double u1 = 1.0 - nncc_rng_u32x2_to_unit_double(b.x[0], b.x[1]); /* (0, 1] */
  double u2 = nncc_rng_u32x2_to_unit_double(b.x[2], b.x[3]);
  double radius = sqrt(-2.0 * log(u1));
  double theta = 6.283185307179586477 * u2;
  return radius * ((index & 1u) ? sin(theta) : cos(theta));
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NNCC_RUNTIME_PHILOX_H */
