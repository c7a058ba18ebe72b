//===- AttentionBackward.cpp - Backward of dense / dilated / LSH attention ===//
//
// Flash-style: nothing of size T x T is stored. Every kind works in BLAS
// tiles: dense attention in DenseAttention.cpp, dilated attention in residue-class tiles
// (DilatedAttention.cpp), LSH attention in chunk tiles of each hash round's
// sorted order (LshAttention.cpp). Each recomputes the forward's softmax
// statistics unless the caller kept them, then with p = exp(s - lse) and
// c the attention-dropout multiplier (1 without dropout)
//   dv_j += c p dO_i,  ds = p (c dO_i.v_j - dO_i.O_i),
//   dq_i += scale ds k_j,  dk_j += scale ds q_i.
// One task owns one head of one batch row, so dk/dv accumulation has no
// races and the result does not depend on the thread count.
//
//===----------------------------------------------------------------------===//
#include "AttentionCommon.h"
#include "Internal.h"
#include "nncc/Kernels/AttentionMath.h"
#include "nncc/Kernels/BackwardMath.h"

#include <algorithm>
#include <cstring>
#include <vector>

using namespace nncc::kernels;

namespace {

template <typename T>
int attentionBackward(const nncc_attention_params *p, int64_t B, int64_t Tn,
                      int64_t H, int64_t dh, const T *q, const T *k,
                      const T *v, int64_t ldi, const T *dout, int64_t ldo,
                      T *dq, T *dk, T *dv, int64_t ldg, const uint8_t *kpm,
                      void *ws, T *out, const T *savedLse) {
  if (!attentionParamsValid(p, dh) || B < 0 || Tn < 0 || H <= 0 || !q || !v ||
      !dout || !dq || !dv || ldi < H * dh || ldo < H * dh || ldg < H * dh)
    return NNCC_K_EINVAL;
  const bool lsh = p->kind == NNCC_ATTN_LSH;
  if (!lsh && (!k || !dk))
    return NNCC_K_EINVAL;
  T scale = attentionScaleOf<T>(p, dh);
  AttentionDropout<T> drop = attentionDropoutOf<T>(p);
  if (lsh) {
    LshAttentionArgs<T> a{B, Tn, H, dh, ldi, ldo, q, v,
                          static_cast<const T *>(p->rotations),
                          p->n_hashes, p->n_buckets, p->chunk,
                          p->same_bucket_only != 0, p->causal != 0,
                          kpm, scale, drop};
    a.hf = p->lsh_convention == NNCC_LSH_HF;
    a.padMultiple = p->pad_to_multiple;
    a.padAbove = p->pad_above;
    lshAttentionBackward<T>(a, dout, dq, dv, ldg, out, savedLse);
    return NNCC_K_OK;
  }
  if (p->kind == NNCC_ATTN_LOCAL) {
    localAttentionBackward<T>(LocalAttentionArgs<T>{B, Tn, H, dh, ldi, ldo, q, k, v, kpm,
                                                    p->causal != 0, scale, drop, p->chunk,
                                                    p->local_chunks_before,
                                                    p->local_chunks_after, p->pad_to_multiple, p->pad_above},
                              dout, dq, dk, dv, ldg, out, savedLse);
    return NNCC_K_OK;
  }
  if (p->kind == NNCC_ATTN_DENSE) {
    denseAttentionBackward<T>(
        DenseAttentionArgs<T>{B, Tn, H, dh, ldi, ldo, q, k, v, out, nullptr,
                              kpm, p->causal != 0, scale, drop, savedLse},
        dout, dq, dk, dv, ldg);
    return NNCC_K_OK;
  }
  GlobalTokens globals;
  DenseAttentionArgs<T> a{B, Tn, H, dh, ldi, ldo, q, k, v, out, nullptr,
                          kpm, p->causal != 0, scale, drop, savedLse};
  if (int rc = setDilatedArgs(p, ws, globals, a))
    return rc;
  if (dilatedHf(p) && ldg < 6 * H * dh)
    return NNCC_K_EINVAL;
  dilatedAttentionBackward<T>(a, dout, dq, dk, dv, ldg);
  return NNCC_K_OK;
}

int64_t mhaBwdWs(const nncc_attention_params *p, int64_t B, int64_t Tn,
                 int64_t E, int64_t elem) {
  const int64_t P = packedProjections(p);
  Arena a(nullptr);
  a.take<char>(B * Tn * P * E * elem); // proj
  a.take<char>(B * Tn * E * elem);     // ctx
  a.take<char>(B * Tn * E * elem);     // dctx
  a.take<char>(B * Tn * P * E * elem); // dproj
  a.take<char>(attentionCoreWorkspace(p, B, Tn));
  return (int64_t)a.size();
}

template <typename T>
void colSum(int64_t rows, int64_t n, const T *a, T *out) {
#pragma omp parallel for schedule(static) if (rows * n > 65536)
  for (int64_t j = 0; j < n; ++j) {
    T s = T(0);
    for (int64_t r = 0; r < rows; ++r)
      s += a[r * n + j];
    out[j] = s;
  }
}

template <typename T>
int mhaBackward(const nncc_attention_params *p, int64_t B, int64_t Tn,
                int64_t E, int64_t H, const T *x, const T *inW, const T *inB,
                const T *outW, const T *outB, const uint8_t *kpm, const T *dy,
                T *dx, T *dInW, T *dInB, T *dOutW, T *dOutB, void *ws) {
  (void)outB;
  if (!p || H <= 0 || E % H != 0 || !x || !inW || !outW || !dy || !ws)
    return NNCC_K_EINVAL;
  const bool lsh = p->kind == NNCC_ATTN_LSH;
  const int64_t P = packedProjections(p), BT = B * Tn, dh = E / H;
  Arena a(ws);
  T *proj = a.take<T>(BT * P * E);
  T *ctx = a.take<T>(BT * E);
  T *dctx = a.take<T>(BT * E);
  T *dproj = a.take<T>(BT * P * E);
  void *core = a.take<char>(attentionCoreWorkspace(p, B, Tn));
  // Recompute the in-projection; the core's backward recomputes the context.
  if (inB)
    for (int64_t r = 0; r < BT; ++r)
      std::memcpy(proj + r * P * E, inB, sizeof(T) * P * E);
  gemm(false, true, BT, P * E, E, T(1), x, E, inW, E, inB ? T(1) : T(0), proj,
       P * E);
  // Out-projection y = ctx W_o^T + b_o: dctx first, dW_o once ctx exists.
  gemm(false, false, BT, E, E, T(1), dy, E, outW, E, T(0), dctx, E);
  const int64_t vCol = lsh ? E : 2 * E;
  int rc = attentionBackward<T>(p, B, Tn, H, dh, proj, lsh ? nullptr : proj + E,
                                proj + vCol, P * E, dctx, E, dproj,
                                lsh ? nullptr : dproj + E, dproj + vCol,
                                P * E, kpm, core, ctx, nullptr);
  if (rc)
    return rc;
  if (dOutW)
    gemm(true, false, E, E, BT, T(1), dy, E, ctx, E, T(0), dOutW, E);
  if (dOutB)
    colSum(BT, E, dy, dOutB);
  // In-projection: proj = x W_in^T + b_in.
  if (dInW)
    gemm(true, false, P * E, E, BT, T(1), dproj, P * E, x, E, T(0), dInW, E);
  if (dInB)
    colSum(BT, P * E, dproj, dInB);
  if (dx)
    gemm(false, false, BT, E, P * E, T(1), dproj, P * E, inW, E, T(0), dx, E);
  return NNCC_K_OK;
}

} // namespace

extern "C" int64_t
nncc_attention_backward_workspace_size(const nncc_attention_params *p,
                                       int64_t B, int64_t Tn, int64_t H,
                                       int64_t dh, int64_t elem) {
  (void)H, (void)dh, (void)elem;
  if (!p)
    return -1;
  return attentionCoreWorkspace(p, B, Tn) + 64;
}

extern "C" int64_t
nncc_mha_backward_workspace_size(const nncc_attention_params *p, int64_t B,
                                 int64_t Tn, int64_t E, int64_t H,
                                 int64_t elem) {
  (void)H;
  if (!p || (elem != 4 && elem != 8))
    return -1;
  return mhaBwdWs(p, B, Tn, E, elem) + 64;
}

#define NNCC_DEFINE_ATTN_BWD(S, T)                                             \
  extern "C" int nncc_attention_backward_##S(                                  \
      const nncc_attention_params *p, int64_t B, int64_t Tn, int64_t H,        \
      int64_t dh, const T *q, const T *k, const T *v, int64_t ldi,             \
      const T *dout, int64_t ldo, T *dq, T *dk, T *dv, int64_t ldg,            \
      const uint8_t *kpm, void *ws, T *out, const T *lse) {                    \
    if (lse && !out)                                                           \
      return NNCC_K_EINVAL;                                                    \
    return attentionBackward<T>(p, B, Tn, H, dh, q, k, v, ldi, dout, ldo, dq,  \
                                dk, dv, ldg, kpm, ws, out, lse);               \
  }                                                                            \
  extern "C" int nncc_mha_backward_##S(                                        \
      const nncc_attention_params *p, int64_t B, int64_t Tn, int64_t E,        \
      int64_t H, const T *x, const T *inW, const T *inB, const T *outW,        \
      const T *outB, const uint8_t *kpm, const T *dy, T *dx, T *dInW,          \
      T *dInB, T *dOutW, T *dOutB, void *ws) {                                 \
    return mhaBackward<T>(p, B, Tn, E, H, x, inW, inB, outW, outB, kpm, dy,    \
                          dx, dInW, dInB, dOutW, dOutB, ws);                   \
  }

NNCC_DEFINE_ATTN_BWD(f32, float)
NNCC_DEFINE_ATTN_BWD(f64, double)
