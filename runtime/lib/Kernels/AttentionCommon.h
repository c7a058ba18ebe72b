//===- AttentionCommon.h - Shared by attention forward and backward -*- C++ -*-===//
#ifndef NNCC_LIB_KERNELS_ATTENTIONCOMMON_H
#define NNCC_LIB_KERNELS_ATTENTIONCOMMON_H

#include "Internal.h"
#include "nncc/Kernels/AttentionMath.h"
#include "nncc/Kernels/BackwardMath.h"

#include <algorithm>
#include <cstring>

namespace nncc {
namespace kernels {

/// A score row's largest value and its weights s[j] = exp(s[j] - m) with
/// their sum (0 for masked scores), 16 lanes wide where the CPU has AVX-512
/// (SoftmaxTile.cpp); double rows are AttentionMath.h's tile_max /
/// exp_tile_sum.
float tileMaxF32(const float *s, int64_t n);
float expTileSumF32(float *s, int64_t n, float m);
inline float rowMax(const float *s, int64_t n) { return tileMaxF32(s, n); }
inline double rowMax(const double *s, int64_t n) { return tile_max(s, (int)n); }
inline float rowExpSum(float *s, int64_t n, float m) { return expTileSumF32(s, n, m); }
inline double rowExpSum(double *s, int64_t n, double m) { return exp_tile_sum(s, (int)n, m); }
/// OnlineSoftmax::push_tile with rowExpSum.
template <typename T> inline T pushRowTile(OnlineSoftmax<T> &sm, T *s, int64_t n, T tmax) {
  return sm.push_tile_with(s, (int)n, tmax, [](T *t, int k, T m) { return rowExpSum(t, k, m); });
}

/// 32-byte vectors of T (GCC/Clang vector extensions: one AVX register,
/// or two SSE ones on a baseline build).
template <typename T> struct Lanes {
  typedef T V __attribute__((vector_size(32)));
  static constexpr int N = int(32 / sizeof(T));
  static V load(const T *p) {
    V v;
    std::memcpy(&v, p, sizeof(V));
    return v;
  }
  static T sum(V v) {
    T s = T(0);
    for (int l = 0; l < N; ++l)
      s += v[l];
    return s;
  }
};

/// sum_d a[d] b[d] in SIMD-lane partial sums, added in a fixed order at the
/// end: one running sum (which strict IEEE order forbids reassociating)
/// stays scalar (the row dots D = dO . O, norms).
template <typename T> inline T laneDot(const T *a, const T *b, int64_t n) {
  using L = Lanes<T>;
  typename L::V acc = {};
  int64_t d = 0;
  for (; d + L::N <= n; d += L::N)
    acc += L::load(a + d) * L::load(b + d);
  T s = L::sum(acc);
  for (; d < n; ++d)
    s += a[d] * b[d];
  return s;
}

/// One (query, key) pair of the attention backward, from its score s
/// (scale included) and dp = dO . v: with p = exp(s - lse) and c the
/// pair's dropout multiplier, s becomes c p (dO's weight in dV) and dp
/// becomes dS = scale p (c dp - D).
template <typename T> inline void backwardPair(T &s, T &dp, T lse, T D, T c, T scale) {
  const T p = nexp(s - lse);
  dp = softmax_score_grad(p, c * dp, D) * scale;
  s = c * p;
}

/// Whether `p` describes a valid attention of its kind for head size `dh`.
inline bool attentionParamsValid(const nncc_attention_params *p, int64_t dh) {
  if (!p || dh <= 0 || !(p->dropout >= 0.0 && p->dropout < 1.0))
    return false;
  if (p->kind == NNCC_ATTN_DILATED)
    return p->window >= 1 && p->dilation >= 1 && p->n_global >= 0 &&
           (p->n_global == 0 || p->global_pos) && !(p->n_global > 0 && p->global_mask) &&
           (p->dilated_convention == NNCC_DILATED_NNCC ||
            p->dilated_convention == NNCC_DILATED_HF);
  if (p->kind == NNCC_ATTN_LOCAL)
    return p->chunk >= 1 && p->local_chunks_before >= 0 && p->local_chunks_after >= 0 &&
           p->pad_to_multiple >= 0 && p->pad_above >= 0;
  if (p->kind == NNCC_ATTN_LSH)
    return p->rotations && p->n_hashes >= 1 && p->n_buckets >= 2 &&
           p->n_buckets % 2 == 0 && p->chunk >= 1 &&
           (p->lsh_convention == NNCC_LSH_NNCC ||
            (p->lsh_convention == NNCC_LSH_HF && !p->same_bucket_only)) &&
           p->pad_to_multiple >= 0 && p->pad_above >= 0 &&
           (p->pad_to_multiple == 0 || p->lsh_convention == NNCC_LSH_HF);
  return p->kind == NNCC_ATTN_DENSE;
}

/// Whether `p` is dilated attention in Hugging Face's (Longformer's)
/// convention: separate global projections, zero rows for padded queries.
inline bool dilatedHf(const nncc_attention_params *p) {
  return p->kind == NNCC_ATTN_DILATED && p->dilated_convention == NNCC_DILATED_HF;
}

/// Projections packed per row of the MHA in-projection: [QK | V] (LSH),
/// [Q | K | V | Qg | Kg | Vg] (Longformer's convention) or [Q | K | V].
inline int64_t packedProjections(const nncc_attention_params *p) {
  return p->kind == NNCC_ATTN_LSH ? 2 : dilatedHf(p) ? 6 : 3;
}

/// Workspace bytes of the attention core of `p`'s kind over B rows of T
/// positions (the dilated kind's global-token tables).
inline int64_t attentionCoreWorkspace(int kind, int64_t B, int64_t T, int64_t nGlobal,
                                      bool perExample) {
  Arena a(nullptr);
  if (kind == NNCC_ATTN_DILATED) {
    const int64_t rows = perExample ? B : 1;
    a.take<uint8_t>(rows * T);
    a.take<int32_t>(perExample ? rows * T : nGlobal);
    a.take<int32_t>(rows);
  }
  return (int64_t)a.size();
}
inline int64_t attentionCoreWorkspace(const nncc_attention_params *p, int64_t B, int64_t T) {
  return attentionCoreWorkspace(p->kind, B, T, p->n_global, p->global_mask != nullptr);
}

/// Global tokens of dilated attention (the `attentionCoreWorkspace`
/// tables), shared by the batch (static positions: one row) or per example
/// (global_mask: B rows): for batch row b, `flags(b)` [T] marks them and
/// `positions(b)` lists the `count(b)` distinct ones < T, ascending.
struct GlobalTokens {
  uint8_t *isGlobal = nullptr;
  int32_t *list = nullptr, *n = nullptr;
  int64_t T = 0, listStride = 0;
  bool perExample = false;
  int maxCount = 0;
  const uint8_t *flags(int64_t b) const { return isGlobal + (perExample ? b * T : 0); }
  const int32_t *positions(int64_t b) const { return list + (perExample ? b * listStride : 0); }
  int count(int64_t b) const { return n[perExample ? b : 0]; }
};

/// Builds `p`'s global-token tables for B rows of T positions in the
/// workspace `ws`. Static positions: >= T ignored, duplicates merged, a
/// negative one is NNCC_K_ERANGE. Per example: position j of row b is
/// global iff global_mask[b T + j] != 0 and it is not padded (kpm).
inline int globalTokens(const nncc_attention_params *p, int64_t B, int64_t T,
                        const uint8_t *kpm, void *ws, GlobalTokens &g) {
  if (!ws && T > 0)
    return NNCC_K_EINVAL;
  Arena a(ws);
  g.T = T;
  g.perExample = p->global_mask != nullptr;
  const int64_t rows = g.perExample ? B : 1;
  g.isGlobal = a.take<uint8_t>(rows * T);
  g.listStride = g.perExample ? T : 0;
  g.list = a.take<int32_t>(g.perExample ? rows * T : p->n_global);
  g.n = a.take<int32_t>(rows);
  g.maxCount = 0;
  if (rows * T > 0)
    std::memset(g.isGlobal, 0, rows * T);
  if (g.perExample) {
    for (int64_t b = 0; b < B; ++b) {
      uint8_t *flag = g.isGlobal + b * T;
      int32_t *list = g.list + b * T, count = 0;
      for (int64_t j = 0; j < T; ++j)
        if (p->global_mask[b * T + j] && !(kpm && kpm[b * T + j])) {
          flag[j] = 1;
          list[count++] = (int32_t)j;
        }
      g.n[b] = count;
      g.maxCount = std::max<int>(g.maxCount, count);
    }
    return NNCC_K_OK;
  }
  int count = 0;
  for (int i = 0; i < p->n_global; ++i) {
    int32_t j = p->global_pos[i];
    if (j < 0)
      return NNCC_K_ERANGE;
    if (j >= T || g.isGlobal[j])
      continue; // beyond this sequence, or a duplicate
    g.isGlobal[j] = 1;
    g.list[count++] = j;
  }
  std::sort(g.list, g.list + count);
  g.n[0] = count;
  g.maxCount = count;
  return NNCC_K_OK;
}

/// The attention dropout `p` asks for (off when p->dropout == 0).
template <typename T>
AttentionDropout<T> attentionDropoutOf(const nncc_attention_params *p) {
  AttentionDropout<T> d;
  if (p->dropout > 0.0) {
    d.p = (float)p->dropout;
    d.keep_scale = T(1) / (T(1) - T(p->dropout));
    d.seed = p->dropout_seed;
    d.offset = p->dropout_offset;
  }
  return d;
}

/// Operands of the dense attention core (DenseAttention.cpp) and, with
/// `dilated` set, of the dilated one (DilatedAttention.cpp).
template <typename Real> struct DenseAttentionArgs {
  int64_t B, T, H, dh, ldi, ldo;
  const Real *q, *k, *v;
  Real *out; // forward: the output; backward: see denseAttentionBackward
  Real *lse; // forward only: optional log-sum-exp output [B, H, T]
  const uint8_t *kpm;
  bool causal;
  Real scale;
  AttentionDropout<Real> drop;
  const Real *savedLse = nullptr; // backward only: the forward's lse
  // Dilated attention (dilatedAttentionForward / Backward): its global
  // tokens, window and dilation; Longformer's convention: the global
  // queries' q, k, v (and their gradients) `globalOffset` elements after
  // q, k, v (0: the shared ones), padded query rows zero.
  const GlobalTokens *dilated = nullptr;
  int window = 0, dilation = 1;
  int64_t globalOffset = 0;
  bool zeroPaddedQueries = false;
};

/// Completes `a` (its sizes, q, k, v and the padding mask set) for `p`'s
/// dilated attention: the global tokens built into `ws` and held by `g`,
/// window, dilation and the convention. NNCC_K_EINVAL when Longformer's
/// convention finds no room for the global projections in the row stride.
template <typename T>
int setDilatedArgs(const nncc_attention_params *p, void *ws, GlobalTokens &g,
                   DenseAttentionArgs<T> &a) {
  if (dilatedHf(p) && a.ldi < 6 * a.H * a.dh)
    return NNCC_K_EINVAL;
  if (int rc = globalTokens(p, a.B, a.T, a.kpm, ws, g))
    return rc;
  a.dilated = &g;
  a.window = p->window;
  a.dilation = p->dilation;
  a.globalOffset = dilatedHf(p) ? 3 * a.H * a.dh : 0;
  a.zeroPaddedQueries = dilatedHf(p);
  return NNCC_K_OK;
}

/// Dilated attention (a.dilated, a.window, a.dilation) in residue-class
/// tiles (DilatedAttention.cpp); operands as the dense kernels'.
template <typename T> void dilatedAttentionForward(const DenseAttentionArgs<T> &a);
template <typename T>
void dilatedAttentionBackward(const DenseAttentionArgs<T> &a, const T *dout, T *dq, T *dk,
                              T *dv, int64_t ldg);

/// out = softmax(scale q kᵀ, masked) v per head, with attention dropout.
template <typename T> void denseAttentionForward(const DenseAttentionArgs<T> &a);
/// Overwrites dq, dk, dv (row stride ldg) given dout (row stride a.ldo).
/// With a.savedLse (the forward's log-sum-exp) a.out is the forward's output
/// and the forward is not run again; without, a.out (optional) receives the
/// recomputed forward output.
template <typename T>
void denseAttentionBackward(const DenseAttentionArgs<T> &a, const T *dout,
                            T *dq, T *dk, T *dv, int64_t ldg);

/// Operands of the LSH attention core (LshAttention.cpp): shared
/// query-key rows qk and value rows v (stride ldi; head h at columns
/// [h dh, (h + 1) dh)), the rounds' rotations [rounds, dh, nbuckets / 2]
/// (hf: [H, dh, rounds, nbuckets / 2]). hf: Hugging Face's conventions
/// (NNCC_LSH_HF; docs/kernels.md "LSH").
template <typename Real> struct LshAttentionArgs {
  int64_t B, T, H, dh, ldi, ldo;
  const Real *qk, *v, *rot;
  int rounds, nbuckets, chunk;
  bool sameBucket, causal;
  const uint8_t *kpm;
  Real scale;
  AttentionDropout<Real> drop;
  bool hf = false;
  /// hf: ReformerModel's padding of T > padAbove to a multiple of
  /// padMultiple (0: none); LshAttention.cpp, "ReformerModel's padding".
  int64_t padMultiple = 0, padAbove = 0;
};

/// Operands of the local attention core (LocalAttention.cpp): q, k, v rows
/// of stride ldi (head h at columns [h dh, (h + 1) dh)), chunks of `chunk`
/// positions, the window `before` chunks back and `after` ahead.
template <typename Real> struct LocalAttentionArgs {
  int64_t B, T, H, dh, ldi, ldo;
  const Real *q, *k, *v;
  const uint8_t *kpm;
  bool causal;
  Real scale;
  AttentionDropout<Real> drop;
  int64_t chunk, before, after;
  /// ReformerModel's padding, as LshAttentionArgs' (0: none).
  int64_t padMultiple = 0, padAbove = 0;
};

/// out (row stride a.ldo) = local attention of every head; each query's
/// log-sum-exp [B, H, T] into lse when given.
template <typename T> void localAttentionForward(const LocalAttentionArgs<T> &a, T *out, T *lse);
/// Overwrites dq, dk, dv (row stride ldg) given dout (row stride a.ldo),
/// as lshAttentionBackward: with savedLse `out` is the forward's output;
/// without, the forward runs again and `out` (optional) receives it.
template <typename T>
void localAttentionBackward(const LocalAttentionArgs<T> &a, const T *dout, T *dq, T *dk, T *dv,
                            int64_t ldg, T *out, const T *savedLse);

/// The score scale of `p` for head size dh: p->scale, or its default,
/// 1/sqrt(dh) (1 for Hugging Face's LSH, whose keys carry the 1/sqrt(dh)).
template <typename T> T attentionScaleOf(const nncc_attention_params *p, int64_t dh) {
  if (p->scale != 0)
    return T(p->scale);
  if (p->kind == NNCC_ATTN_LSH && p->lsh_convention == NNCC_LSH_HF)
    return T(1);
  return T(1) / nsqrt(T(dh));
}

/// out (row stride a.ldo) = LSH attention of every head; the buckets
/// [B, H, rounds, T] and the combined log-sum-exp [B, H, T] when asked.
template <typename T>
void lshAttentionForward(const LshAttentionArgs<T> &a, T *out, int32_t *bucketsOut, T *lseOut);
/// Overwrites dqk (query and key path) and dv (row stride ldg) given dout
/// (row stride a.ldo). With savedLse (the forward's combined log-sum-exp)
/// `out` is the forward's output; without, the forward runs again and
/// `out` (optional) receives its output.
template <typename T>
void lshAttentionBackward(const LshAttentionArgs<T> &a, const T *dout, T *dqk, T *dv,
                          int64_t ldg, T *out, const T *savedLse);

} // namespace kernels
} // namespace nncc

#endif
