//===- TokenMath.h - Token masking, Gumbel-max sampling, axial positions -*- C++ -*-===//
//
// Element math shared by the CPU kernels (runtime/lib/Kernels/Token.cpp) and
// the CUDA kernels (CUDA/Token.cuh), so both choose the same positions
// (integer keys: bit-identical) and the same samples (the noise is computed
// in double by each side's libm, so two classes whose scores agree to the
// last bits could resolve differently). Randomness is the kernels' mask
// stream (Philox.h):
//
//   mask_tokens: position t of row r has the key philox_bits(seed, offset,
//     r*n + t); the row's k = max(1, floor(p*n)) positions with the smallest
//     (key, t) are masked (uniform without replacement, Algorithm 2 step 2).
//   sample: class v of row r gets the Gumbel noise g = -log(-log(u)) with
//     u = ((bits >> 8) + 1/2) * 2^-24 in (0, 1), bits = philox_bits(seed,
//     offset, r*V + v); the sample is argmax_v (logit_v + g_v), the first
//     index on ties (Gumbel-max: a draw from softmax(logits)).
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_TOKENMATH_H
#define NNCC_KERNELS_TOKENMATH_H

#include "nncc/Kernels/RandomMasks.h"

#include <math.h>

namespace nncc {
namespace kernels {

/// Positions masked per row of n tokens at rate p > 0: floor(p*n)
/// (Algorithm 2), with a 1e-9 guard so that a product that is an integer up
/// to rounding (0.29 * 100 = 28.999999999999996) counts fully, and at least
/// one (Clark et al.'s code, max(1, ...)): with none the generator's mean
/// loss over the masked positions would be 0/0.
NNCC_HD int64_t masked_per_row(double p, int64_t n) {
  const int64_t k = (int64_t)floor(p * (double)n + 1e-9);
  return p > 0 && n > 0 && k < 1 ? 1 : k;
}

/// Masking key of position t of row r (rows of n tokens).
NNCC_HD uint32_t mask_key(uint64_t seed, uint64_t offset, int64_t r, int64_t n,
                          int64_t t) {
  return philox_bits(seed, offset, (uint64_t)(r * n + t));
}

/// (key a at position ta) orders before (key b at position tb).
NNCC_HD bool mask_key_less(uint32_t a, int64_t ta, uint32_t b, int64_t tb) {
  return a < b || (a == b && ta < tb);
}

/// Gumbel noise from 32 random bits, in double (u is never 0 or 1).
NNCC_HD double gumbel_from_bits(uint32_t bits) {
  const double u = ((double)(bits >> 8) + 0.5) * (1.0 / 16777216.0);
  return -log(-log(u));
}

/// Gumbel noise of class v in row r (rows of V classes).
NNCC_HD double sample_noise(uint64_t seed, uint64_t offset, int64_t r,
                            int64_t V, int64_t v) {
  return gumbel_from_bits(philox_bits(seed, offset, (uint64_t)(r * V + v)));
}

/// Axial position row of position t in an (n1, n2) grid: the embedding is
/// [w0[t / n2] (d1 values), w1[t % n2] (d2 values)].
template <typename T>
NNCC_HD T axial_value(const T *w0, const T *w1, int64_t n2, int64_t d1,
                      int64_t d2, int64_t t, int64_t e) {
  return e < d1 ? w0[(t / n2) * d1 + e] : w1[(t % n2) * d2 + (e - d1)];
}

} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_TOKENMATH_H
