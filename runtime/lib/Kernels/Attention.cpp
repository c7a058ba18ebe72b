//===- Attention.cpp - CPU twins of dense / dilated / LSH attention -------===//
//
// No T x T score matrix is ever formed; every kind works in single-threaded
// OpenBLAS tiles inside OpenMP tasks. Dense attention (DenseAttention.cpp,
// flash-style); dilated attention in residue-class tiles
// (DilatedAttention.cpp); LSH
// attention sorts each hash round by (bucket, position) and multiplies each
// chunk's queries with the own and previous chunk's keys
// (LshAttention.cpp); local attention does the same in position order
// (LocalAttention.cpp). Attention dropout (training) scales each kept weight
// by 1/(1-p) after the softmax statistics, with the Philox counters of
// Kernels.h.
//
// The workspace argument carries the per-call tables (global-token flags)
// and the MHA projections; per-thread tiles are allocated once per call.
//
//===----------------------------------------------------------------------===//
#include "AttentionCommon.h"
#include "Internal.h"
#include "nncc/Kernels/AttentionMath.h"

#include <algorithm>
#include <cstring>
#include <vector>

using namespace nncc::kernels;

namespace {

template <typename T>
int attentionCore(const nncc_attention_params *p, int64_t B, int64_t Tn,
                  int64_t H, int64_t dh, const T *q, const T *k, const T *v,
                  int64_t ldi, T *out, int64_t ldo, const uint8_t *kpm,
                  void *ws, int32_t *bucketsOut, T *lse) {
  if (!attentionParamsValid(p, dh) || B < 0 || Tn < 0 || H <= 0 || !q || !v || !out ||
      ldi < H * dh || ldo < H * dh)
    return NNCC_K_EINVAL;
  if (p->kind != NNCC_ATTN_LSH && !k)
    return NNCC_K_EINVAL;
  T scale = attentionScaleOf<T>(p, dh);
  bool causal = p->causal != 0;
  AttentionDropout<T> drop = attentionDropoutOf<T>(p);
  if (p->kind == NNCC_ATTN_DENSE) {
    denseAttentionForward<T>(DenseAttentionArgs<T>{
        B, Tn, H, dh, ldi, ldo, q, k, v, out, lse, kpm, causal, scale, drop});
  } else if (p->kind == NNCC_ATTN_DILATED) {
    GlobalTokens globals;
    DenseAttentionArgs<T> a{B, Tn, H, dh, ldi, ldo, q, k, v, out, lse, kpm, causal, scale,
                            drop};
    if (int rc = setDilatedArgs(p, ws, globals, a))
      return rc;
    dilatedAttentionForward<T>(a);
  } else if (p->kind == NNCC_ATTN_LOCAL) {
    localAttentionForward<T>(LocalAttentionArgs<T>{B, Tn, H, dh, ldi, ldo, q, k, v, kpm, causal,
                                                   scale, drop, p->chunk, p->local_chunks_before,
                                                   p->local_chunks_after, p->pad_to_multiple, p->pad_above},
                             out, lse);
  } else {
    LshAttentionArgs<T> a{B, Tn, H, dh, ldi, ldo, q, v,
                          static_cast<const T *>(p->rotations),
                          p->n_hashes, p->n_buckets, p->chunk,
                          p->same_bucket_only != 0, causal, kpm,
                          scale, drop};
    a.hf = p->lsh_convention == NNCC_LSH_HF;
    a.padMultiple = p->pad_to_multiple;
    a.padAbove = p->pad_above;
    lshAttentionForward<T>(a, out, bucketsOut, lse);
  }
  return NNCC_K_OK;
}

int64_t mhaWorkspace(const nncc_attention_params *p, int64_t B, int64_t Tn,
                     int64_t E, int64_t elem) {
  const int64_t P = packedProjections(p);
  Arena a(nullptr);
  a.take<char>(B * Tn * P * E * elem);
  a.take<char>(B * Tn * E * elem);
  a.take<char>(attentionCoreWorkspace(p, B, Tn));
  return (int64_t)a.size();
}

template <typename T>
int mhaForward(const nncc_attention_params *p, int64_t B, int64_t Tn,
               int64_t E, int64_t H, const T *x, const T *inW, const T *inB,
               const T *outW, const T *outB, const uint8_t *kpm, void *ws,
               T *y) {
  if (!p || H <= 0 || E % H != 0 || !x || !inW || !outW || !y || !ws)
    return NNCC_K_EINVAL;
  const int64_t P = packedProjections(p);
  Arena a(ws);
  T *proj = a.take<T>(B * Tn * P * E);
  T *ctx = a.take<T>(B * Tn * E);
  void *core = a.take<char>(attentionCoreWorkspace(p, B, Tn));
  // In-projection: proj = x in_w^T + in_b, [B*T, P*E].
  if (inB) {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < B * Tn; ++r)
      std::memcpy(proj + r * P * E, inB, sizeof(T) * P * E);
  }
  gemm(false, true, B * Tn, P * E, E, T(1), x, E, inW, E, inB ? T(1) : T(0),
       proj, P * E);
  const int64_t dh = E / H;
  int rc;
  if (p->kind == NNCC_ATTN_LSH)
    rc = attentionCore<T>(p, B, Tn, H, dh, proj, nullptr, proj + E, P * E,
                          ctx, E, kpm, core, nullptr, nullptr);
  else
    rc = attentionCore<T>(p, B, Tn, H, dh, proj, proj + E, proj + 2 * E,
                          P * E, ctx, E, kpm, core, nullptr, nullptr);
  if (rc)
    return rc;
  // Out-projection: y = ctx out_w^T + out_b.
  if (outB) {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < B * Tn; ++r)
      std::memcpy(y + r * E, outB, sizeof(T) * E);
  }
  gemm(false, true, B * Tn, E, E, T(1), ctx, E, outW, E, outB ? T(1) : T(0), y,
       E);
  return NNCC_K_OK;
}

} // namespace

extern "C" int64_t nncc_attention_workspace_size(const nncc_attention_params *p,
                                                 int64_t B, int64_t Tn,
                                                 int64_t H, int64_t dh,
                                                 int64_t elem) {
  (void)H, (void)dh, (void)elem;
  if (!p)
    return -1;
  return attentionCoreWorkspace(p, B, Tn) + 64;
}

extern "C" int64_t nncc_attention_core_workspace_bytes(int kind, int64_t B, int64_t Tn,
                                                       int64_t n_global,
                                                       int per_example_globals) {
  return attentionCoreWorkspace(kind, B, Tn, n_global, per_example_globals != 0) + 64;
}

extern "C" int64_t nncc_mha_workspace_size(const nncc_attention_params *p,
                                           int64_t B, int64_t Tn, int64_t E,
                                           int64_t H, int64_t elem) {
  (void)H;
  if (!p)
    return -1;
  return mhaWorkspace(p, B, Tn, E, elem) + 64;
}

#define NNCC_DEFINE_ATTN(S, T)                                                 \
  extern "C" int nncc_attention_##S(                                           \
      const nncc_attention_params *p, int64_t B, int64_t Tn, int64_t H,        \
      int64_t dh, const T *q, const T *k, const T *v, int64_t ldi, T *out,     \
      int64_t ldo, const uint8_t *kpm, void *ws, int32_t *buckets, T *lse) {   \
    return attentionCore<T>(p, B, Tn, H, dh, q, k, v, ldi, out, ldo, kpm, ws,  \
                            buckets, lse);                                     \
  }                                                                            \
  extern "C" int nncc_mha_forward_##S(                                         \
      const nncc_attention_params *p, int64_t B, int64_t Tn, int64_t E,        \
      int64_t H, const T *x, const T *inW, const T *inB, const T *outW,        \
      const T *outB, const uint8_t *kpm, void *ws, T *y) {                     \
    return mhaForward<T>(p, B, Tn, E, H, x, inW, inB, outW, outB, kpm, ws, y); \
  }

NNCC_DEFINE_ATTN(f32, float)
NNCC_DEFINE_ATTN(f64, double)
