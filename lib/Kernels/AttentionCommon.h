//===- AttentionCommon.h - Shared by attention forward and backward -*- C++ -*-===//
#ifndef NNCC_LIB_KERNELS_ATTENTIONCOMMON_H
#define NNCC_LIB_KERNELS_ATTENTIONCOMMON_H

#include "Internal.h"

namespace nncc {
namespace kernels {

/// Whether `p` describes a valid attention of its kind for head size `dh`.
inline bool attentionParamsValid(const nncc_attention_params *p, int64_t dh) {
  if (!p || dh <= 0)
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

} // namespace kernels
} // namespace nncc

#endif
