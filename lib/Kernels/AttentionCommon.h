//===- AttentionCommon.h - Shared by attention forward and backward -*- C++ -*-===//
#ifndef NNCC_LIB_KERNELS_ATTENTIONCOMMON_H
#define NNCC_LIB_KERNELS_ATTENTIONCOMMON_H

#include "Internal.h"
#include "nncc/Kernels/AttentionMath.h"

namespace nncc {
namespace kernels {

/// Whether `p` describes a valid attention of its kind for head size `dh`.
inline bool attentionParamsValid(const nncc_attention_params *p, int64_t dh) {
  if (!p || dh <= 0 || !(p->dropout >= 0.0 && p->dropout < 1.0))
    return false;
  if (p->kind == NNCC_ATTN_DILATED)
    return p->window >= 1 && p->dilation >= 1 && p->n_global >= 0 &&
           (p->n_global == 0 || p->global_pos);
  if (p->kind == NNCC_ATTN_LSH)
    return p->rotations && p->n_hashes >= 1 && p->n_buckets >= 2 &&
           p->n_buckets % 2 == 0 && p->chunk >= 1;
  return p->kind == NNCC_ATTN_DENSE;
}

/// Workspace bytes of the attention core of `p`'s kind over T positions
/// (the dilated kind marks global positions).
inline int64_t attentionCoreWorkspace(const nncc_attention_params *p, int64_t T) {
  Arena a(nullptr);
  if (p->kind == NNCC_ATTN_DILATED) {
    a.take<uint8_t>(T);
    a.take<int32_t>(p->n_global);
  }
  return (int64_t)a.size();
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

/// Operands of the dense attention core (DenseAttention.cpp).
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
};

/// out = softmax(scale q kᵀ, masked) v per head, with attention dropout.
template <typename T> void denseAttentionForward(const DenseAttentionArgs<T> &a);
/// Overwrites dq, dk, dv (row stride ldg) given dout (row stride a.ldo).
/// With a.savedLse (the forward's log-sum-exp) a.out is the forward's output
/// and the forward is not run again; without, a.out (optional) receives the
/// recomputed forward output.
template <typename T>
void denseAttentionBackward(const DenseAttentionArgs<T> &a, const T *dout,
                            T *dq, T *dk, T *dv, int64_t ldg);

} // namespace kernels
} // namespace nncc

#endif
