//===- AttentionMath.h - Online softmax, masks, LSH hashing -----*- C++ -*-===//
//
// Shared by the CPU attention kernels (runtime/lib/Kernels/Attention.cpp) and the
// CUDA kernels (CUDA/Attention.cuh).
//
// Conventions (see docs/kernels.md):
//  * q, k, v are rows of [B, T, E] (row stride `ld`), head h owns columns
//    [h*dh, (h+1)*dh). Scores are scale * q.k, scale = 1/sqrt(dh) by default.
//  * key_padding_mask[b*T + j] != 0 means key j of batch b is ignored
//    (PyTorch's bool key_padding_mask, True = pad).
//  * A query with no admissible key produces a zero output row (PyTorch
//    gives NaN there); its log-sum-exp is -inf.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_ATTENTIONMATH_H
#define NNCC_KERNELS_ATTENTIONMATH_H

#include "nncc/Kernels/Common.h"
#include "nncc/Kernels/RandomMasks.h"

namespace nncc {
namespace kernels {

/// The largest of s[0, n) (neg_big when n is 0); on the host in partial
/// maxima (lane_reduce, Common.h) so that the loop vectorises.
template <typename T> NNCC_HD T tile_max(const T *s, int n) {
#if defined(__CUDA_ARCH__)
  T best = neg_big<T>();
  for (int j = 0; j < n; ++j)
    best = s[j] > best ? s[j] : best;
  return best;
#else
  return lane_reduce<T>(
      n, neg_big<T>(), [&](int64_t j) { return s[j]; },
      [](T a, T b) { return b > a ? b : a; });
#endif
}

/// s[j] = exp(s[j] - m) (0 where s[j] is masked to neg_big) over [0, n), and
/// the sum of the new s[]; on the host in partial sums (lane_sum).
template <typename T> NNCC_HD T exp_tile_sum(T *s, int n, T m) {
#if defined(__CUDA_ARCH__)
  T sum = T(0);
  for (int j = 0; j < n; ++j) {
    const T p = s[j] <= neg_big<T>() ? T(0) : nexp(s[j] - m);
    s[j] = p;
    sum += p;
  }
  return sum;
#else
  return lane_sum<T>(n, [&](int64_t j) {
    const T p = s[j] <= neg_big<T>() ? T(0) : nexp(s[j] - m);
    s[j] = p;
    return p;
  });
#endif
}

/// Running state of an online (streaming) softmax for one query row:
/// m = max score seen, l = sum exp(s - m). The accumulator acc[dh] is
/// held by the caller and rescaled by the factor returned from `push`.
template <typename T> struct OnlineSoftmax {
  T m;
  T l;
  NNCC_HD void init() {
    m = neg_big<T>();
    l = T(0);
  }
  /// Admit one score; returns the factor to multiply the accumulator by and
  /// sets `p` = the weight of the new value row.
  NNCC_HD T push(T s, T &p) {
    T mn = s > m ? s : m;
    T alpha = nexp(m - mn);
    p = nexp(s - mn);
    l = l * alpha + p;
    m = mn;
    return alpha;
  }
  /// Admit a tile of n scores already reduced to its max `tmax` (tile_max);
  /// converts s[] to weights in place and returns the accumulator rescale
  /// factor.
  NNCC_HD T push_tile(T *s, int n, T tmax) {
    return push_tile_with(s, n, tmax, ExpTileSum());
  }
  struct ExpTileSum {
    NNCC_HD T operator()(T *s, int n, T mx) const { return exp_tile_sum(s, n, mx); }
  };
  /// push_tile with the weights and their sum from expSum(s, n, max) (the
  /// CPU kernels' AVX-512 rows, SoftmaxTile.cpp).
  template <typename ExpSum> NNCC_HD T push_tile_with(T *s, int n, T tmax, ExpSum expSum) {
    T mn = tmax > m ? tmax : m;
    T alpha = nexp(m - mn);
    const T sum = expSum(s, n, mn);
    l = l * alpha + sum;
    m = mn;
    return alpha;
  }
  NNCC_HD bool empty() const { return !(l > T(0)); }
  /// 1/l, or 0 for a row that admitted nothing.
  NNCC_HD T inv() const { return l > T(0) ? T(1) / l : T(0); }
  /// log sum exp of the admitted scores (-inf-like when empty).
  NNCC_HD T lse() const { return l > T(0) ? m + nlog(l) : neg_big<T>(); }
};

/// Causal / padding admissibility of key j for query i.
NNCC_HD bool key_admissible(int i, int j, bool causal, const uint8_t *kpm_row) {
  if (causal && j > i)
    return false;
  if (kpm_row && kpm_row[j])
    return false;
  return true;
}

/// Dilated sliding window (Longformer, thesis eq. 27): with half = w/2
/// (integer division), query i sees key j iff |i - j| <= half*d and
/// (i - j) % d == 0. That is w+1 keys including i itself (w neighbours,
/// w/2 on each side). Global tokens are handled by the caller.
NNCC_HD bool dilated_band(int i, int j, int window, int dilation) {
  int diff = i - j;
  int ad = diff < 0 ? -diff : diff;
  return ad <= (window / 2) * dilation && ad % dilation == 0;
}

/// The admissible keys of query i of dilated attention (band, or either end
/// a global token), passed to visit(j) in the order every kernel uses: a
/// global query (is_global[i]) sees every key in ascending order; others
/// the band (ascending), then the global tokens `globals[0..n_global)`
/// (ascending, distinct, < T) outside it. The CPU forward and backward and
/// the CUDA kernel all walk the keys through this function.
template <typename Visit>
NNCC_HD void for_each_dilated_key(int i, int T, int window, int dilation,
                                  const uint8_t *is_global,
                                  const int32_t *globals, int n_global,
                                  bool causal, const uint8_t *kpm_row,
                                  Visit &&visit) {
  if (is_global[i]) {
    for (int j = 0; j < T; ++j)
      if (key_admissible(i, j, causal, kpm_row))
        visit(j);
    return;
  }
  const int half = window / 2;
  for (int o = -half; o <= half; ++o) {
    const int j = i + o * dilation;
    if (j >= 0 && j < T && key_admissible(i, j, causal, kpm_row))
      visit(j);
  }
  for (int g = 0; g < n_global; ++g) {
    const int j = globals[g];
    if (!dilated_band(i, j, window, dilation) &&
        key_admissible(i, j, causal, kpm_row))
      visit(j);
  }
}

/// LSH bucket count when no rotations are given (HuggingFace's rule):
/// max(2, 2^(bitlength(2 floor(T / chunk)) - 1)). The generated CPU and CUDA
/// launch sequences both size their rotations with it.
NNCC_HD int64_t lsh_num_buckets(int64_t T, int64_t chunk) {
  int64_t n = 2 * (T / chunk), bits = 0;
  while (n) {
    ++bits;
    n >>= 1;
  }
  const int64_t b = bits > 0 ? (int64_t)1 << (bits - 1) : 1;
  return b < 2 ? 2 : b;
}

/// Reformer / angular LSH bucket: h(x) = argmax([xR ; -xR]) with
/// R [dh, nb2] with rows of stride ld, R[d, c] = rot[d * ld + c]
/// (nb2 = n_buckets/2; Hugging Face's [H, dh, hashes, nb2] layout: ld =
/// hashes * nb2). Ties go to the lowest index, as torch.argmax's.
template <typename T, typename R>
NNCC_HD int lsh_bucket_strided(const T *x, const R *rot, int dh, int nb2, int64_t ld) {
  // argmax over the concatenation: first half wins ties (strict >), and in
  // each half the lowest index wins (strict comparisons).
  int imax = 0, imin = 0;
  T vmax = neg_big<T>(), vmin = -neg_big<T>();
  for (int c = 0; c < nb2; ++c) {
    T s = T(0);
    for (int d = 0; d < dh; ++d)
      s += x[d] * T(rot[d * ld + c]);
    if (s > vmax) {
      vmax = s;
      imax = c;
    }
    if (s < vmin) {
      vmin = s;
      imin = c;
    }
  }
  return (-vmin > vmax) ? nb2 + imin : imax;
}

/// lsh_bucket_strided of R [dh, nb2] row-major.
template <typename T, typename R>
NNCC_HD int lsh_bucket(const T *x, const R *rot, int dh, int nb2) {
  return lsh_bucket_strided(x, rot, dh, nb2, nb2);
}

/// Hugging Face's LSH conventions (NNCC_LSH_HF, docs/kernels.md "LSH"):
/// keys k = x / sqrt(|x|^2 + dh eps), eps = 1e-6 (_len_and_dim_norm: RMS
/// normalisation with eps, then 1/sqrt(dh)); a query's score with its own
/// position (any round) is the constant -1e5 (self_mask_value), which only
/// carries weight when every other key is masked.
constexpr double kLshHfNormEps = 1e-6;
template <typename T> NNCC_HD T lsh_hf_self_score() { return T(-1e5); }

/// 1 / sqrt(ss + dh eps): the factor of Hugging Face's key normalisation
/// for a row with sum of squares ss.
template <typename T> NNCC_HD T lsh_hf_inv_norm(T ss, int64_t dh) {
  return T(1) / nsqrt(ss + T(dh) * T(kLshHfNormEps));
}

/// Combine per-round outputs: weight_r = exp(lse_r - logsumexp_r(lse_r)).
/// Writes the weights into w[0..rounds); all-empty rows get weight 0.
template <typename T>
NNCC_HD void lse_round_weights(const T *lse, int rounds, T *w) {
  T mx = neg_big<T>();
  for (int r = 0; r < rounds; ++r)
    mx = lse[r] > mx ? lse[r] : mx;
  if (!(mx > neg_big<T>())) {
    for (int r = 0; r < rounds; ++r)
      w[r] = T(0);
    return;
  }
  T sum = T(0);
  for (int r = 0; r < rounds; ++r) {
    w[r] = lse[r] > neg_big<T>() ? nexp(lse[r] - mx) : T(0);
    sum += w[r];
  }
  for (int r = 0; r < rounds; ++r)
    w[r] /= sum;
}

/// log sum_r exp(lse_r) over the rounds (neg_big when every round is empty):
/// the log-sum-exp of the combined LSH weights.
template <typename T> NNCC_HD T logsumexp_rounds(const T *lse, int rounds) {
  T mx = neg_big<T>();
  for (int r = 0; r < rounds; ++r)
    mx = lse[r] > mx ? lse[r] : mx;
  if (!(mx > neg_big<T>()))
    return neg_big<T>();
  T sum = T(0);
  for (int r = 0; r < rounds; ++r)
    if (lse[r] > neg_big<T>())
      sum += nexp(lse[r] - mx);
  return mx + nlog(sum);
}

/// Reformer's self mask in LSH attention (docs/kernels.md "LSH"): inside
/// one normalisation over the multiset union of the rounds' keys, the
/// query's own key scores s_self - C with C -> infinity. A round therefore
/// reports only its other admissible keys (lse_r = neg_big when it has
/// none), and the self entries vanish as soon as any round has another key.
/// This returns true when none has: the query then attends to itself alone,
/// its R self copies sharing the weight equally (out = v_self, or the mean
/// of the rounds' dropout multipliers times v_self), if it is admissible
/// (not padded); see lsh_self_lse.
template <typename T> NNCC_HD bool lsh_self_only(const T *lse, int rounds) {
  for (int r = 0; r < rounds; ++r)
    if (lse[r] > neg_big<T>())
      return false;
  return true;
}

/// Combined log-sum-exp of a self-only query: R copies of its own score.
template <typename T> NNCC_HD T lsh_self_lse(T s_self, int rounds) {
  return s_self + nlog(T(rounds));
}

/// Attention dropout (training): the Philox key is the layer's seed mixed
/// with a salt, so the mask never reuses the draws of LSH rotations seeded
/// with the same value. Weight `counter` (Kernels.h numbering) is kept iff
/// its uniform draw is >= p.
constexpr uint64_t kAttentionDropoutSalt = 0xA77E4D1D0B0E5A17ull;

NNCC_HD bool attention_dropout_keep(uint64_t seed, uint64_t offset,
                                    uint64_t counter, float p) {
  return dropout_keep(seed ^ kAttentionDropoutSalt, offset, counter, p);
}

/// Dropout multipliers of the weights with counters [first, first + n):
/// mult[i] = keep ? keep_scale : 0. One Philox block serves four counters,
/// so this is the fast form of attention_dropout_keep over a row of keys.
template <typename T>
NNCC_HD void attention_dropout_row(uint64_t seed, uint64_t offset,
                                   uint64_t first, int n, float p,
                                   T keep_scale, T *mult) {
  const uint64_t key = seed ^ kAttentionDropoutSalt;
  int i = 0;
  while (i < n) {
    const uint64_t c = offset + first + (uint64_t)i; // draw c (RandomMasks.h)
    const nncc_philox_u32x4 r = philox_stream_block(key, c >> 2);
    for (int w = (int)(c & 3); w < 4 && i < n; ++w, ++i) {
      // A select, not r.x[w]: a run-time index would put r in local memory
      // on the GPU.
      const uint32_t bits = w == 0 ? r.x[0] : w == 1 ? r.x[1] : w == 2 ? r.x[2] : r.x[3];
      const float u = nncc_rng_u32_to_unit_float(bits);
      mult[i] = u >= p ? keep_scale : T(0);
    }
  }
}

/// Attention dropout of one call: off when p == 0.
template <typename T> struct AttentionDropout {
  float p = 0.0f;
  T keep_scale = T(1);
  uint64_t seed = 0, offset = 0;
  NNCC_HD bool on() const { return p > 0.0f; }
  /// Multiplier of one weight (keep_scale or 0; 1 when off).
  NNCC_HD T mult(uint64_t counter) const {
    if (!on())
      return T(1);
    return attention_dropout_keep(seed, offset, counter, p) ? keep_scale
                                                            : T(0);
  }
};

} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_ATTENTIONMATH_H
