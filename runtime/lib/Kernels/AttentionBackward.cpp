//===- AttentionBackward.cpp - Backward of dense / dilated / LSH attention ===//
//
// Flash-style: nothing of size T x T is stored. Dense attention works in
// BLAS tiles (DenseAttention.cpp), LSH attention in BLAS chunk tiles of
// each hash round's sorted order (LshAttention.cpp). Dilated attention, per
// (batch, head) task and per query, rebuilds the key list of the forward
// (the dilated band plus global tokens), recomputes the softmax statistics
// (log-sum-exp) and the output row in a first streaming pass, then a second
// pass recomputes every probability p = exp(s - lse) and accumulates, with
// c the attention-dropout multiplier (1 without dropout),
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

struct Dims {
  int64_t B, T, H, dh, ldi, ldo, ldg;
};

/// Streaming statistics of one query over an explicit key list: returns the
/// log-sum-exp (neg_big when empty) and writes the normalised output row
/// (with dropout; key j's counter is rowCounter + j).
template <typename T>
T listForward(const T *qr, const int32_t *keys, int nk, const T *kb,
              int64_t ldk, const T *vb, int64_t ldv, int64_t dh, T scale,
              T *o, const AttentionDropout<T> &drop, uint64_t rowCounter) {
  OnlineSoftmax<T> sm;
  sm.init();
  for (int64_t d = 0; d < dh; ++d)
    o[d] = T(0);
  for (int jj = 0; jj < nk; ++jj) {
    const T *kr = kb + keys[jj] * ldk;
    const T s = laneDot(qr, kr, dh) * scale;
    T p;
    T alpha = sm.push(s, p);
    p *= drop.mult(rowCounter + (uint64_t)keys[jj]);
    const T *vr = vb + keys[jj] * ldv;
    for (int64_t d = 0; d < dh; ++d)
      o[d] = o[d] * alpha + p * vr[d];
  }
  T inv = sm.inv();
  for (int64_t d = 0; d < dh; ++d)
    o[d] *= inv;
  return sm.lse();
}

/// Second pass for one query: gradients with p = exp(s - lse).
template <typename T>
void listBackward(const T *qr, const T *dor, const int32_t *keys, int nk,
                  const T *kb, int64_t ldk, const T *vb, int64_t ldv,
                  int64_t dh, T scale, T lse, T Dq, T *dqr, T *dkb,
                  int64_t lddk, T *dvb, int64_t lddv,
                  const AttentionDropout<T> &drop, uint64_t rowCounter) {
  for (int jj = 0; jj < nk; ++jj) {
    const T *kr = kb + keys[jj] * ldk;
    const T *vr = vb + keys[jj] * ldv;
    T s, dp;
    laneDot2(qr, kr, dor, vr, dh, s, dp);
    const T p = nexp(s * scale - lse);
    const T c = drop.mult(rowCounter + (uint64_t)keys[jj]);
    const T ds = softmax_score_grad(p, c * dp, Dq) * scale;
    T *dkr = dkb + keys[jj] * lddk;
    T *dvr = dvb + keys[jj] * lddv;
    // Three loops of two streams each (one fused loop over six pointers is
    // past the vectoriser's alias-check budget and stays scalar).
    const T cp = c * p;
    for (int64_t d = 0; d < dh; ++d)
      dqr[d] += ds * kr[d];
    for (int64_t d = 0; d < dh; ++d)
      dkr[d] += ds * qr[d];
    for (int64_t d = 0; d < dh; ++d)
      dvr[d] += cp * dor[d];
  }
}

template <typename T> T dot(const T *a, const T *b, int64_t n) {
  return laneDot(a, b, n);
}

/// Dilated: per (b,h), per query, key list then two passes.
template <typename T>
void dilatedBackward(const Dims &g, const nncc_attention_params *p, T scale,
                     const GlobalTokens &globals, const T *q, const T *k,
                     const T *v, const T *dout, T *dq, T *dk, T *dv,
                     const uint8_t *kpm, const AttentionDropout<T> &drop,
                     T *out, const T *savedLse) {
  const bool causal = p->causal != 0;
  const int dil = p->dilation, window = p->window;
  const int64_t tasks = g.B * g.H;
#pragma omp parallel
  {
    std::vector<int32_t> keys(g.T + 1);
    std::vector<T> o(g.dh);
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t b = task / g.H, h = task % g.H;
      const uint8_t *kpmRow = kpm ? kpm + b * g.T : nullptr;
      const int64_t io = b * g.T * g.ldi + h * g.dh;
      const int64_t go = b * g.T * g.ldg + h * g.dh;
      for (int64_t t = 0; t < g.T; ++t) {
        std::memset(dq + go + t * g.ldg, 0, sizeof(T) * g.dh);
        std::memset(dk + go + t * g.ldg, 0, sizeof(T) * g.dh);
        std::memset(dv + go + t * g.ldg, 0, sizeof(T) * g.dh);
      }
      for (int i = 0; i < (int)g.T; ++i) {
        const int nk = dilatedKeys(i, g.T, window, dil, globals, causal,
                                   kpmRow, keys.data());
        if (nk == 0) {
          if (out && !savedLse)
            std::memset(out + (b * g.T + i) * g.ldo + h * g.dh, 0,
                        sizeof(T) * g.dh);
          continue;
        }
        const T *qr = q + io + i * g.ldi;
        const T *dor = dout + b * g.T * g.ldo + h * g.dh + i * g.ldo;
        const uint64_t rowCounter = (uint64_t)(((b * g.H + h) * g.T + i) * g.T);
        T *orow = out ? out + (b * g.T + i) * g.ldo + h * g.dh : o.data();
        T lse = savedLse ? savedLse[(b * g.H + h) * g.T + i]
                         : listForward(qr, keys.data(), nk, k + io, g.ldi,
                                       v + io, g.ldi, g.dh, scale, orow, drop,
                                       rowCounter);
        T Dq = dot(dor, orow, g.dh);
        listBackward(qr, dor, keys.data(), nk, k + io, g.ldi, v + io, g.ldi,
                     g.dh, scale, lse, Dq, dq + go + i * g.ldg, dk + go,
                     g.ldg, dv + go, g.ldg, drop, rowCounter);
      }
    }
  }
}

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
  Dims g{B, Tn, H, dh, ldi, ldo, ldg};
  T scale = p->scale != 0 ? T(p->scale) : T(1) / nsqrt(T(dh));
  AttentionDropout<T> drop = attentionDropoutOf<T>(p);
  if (lsh) {
    lshAttentionBackward<T>(LshAttentionArgs<T>{B, Tn, H, dh, ldi, ldo, q, v,
                                                static_cast<const T *>(p->rotations),
                                                p->n_hashes, p->n_buckets, p->chunk,
                                                p->same_bucket_only != 0, p->causal != 0,
                                                kpm, scale, drop},
                            dout, dq, dv, ldg, out, savedLse);
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
  if (int rc = globalTokens(p, Tn, ws, globals))
    return rc;
  if (useDenseForDilated(p, Tn)) {
    DenseAttentionArgs<T> a{B, Tn, H, dh, ldi, ldo, q, k, v, out, nullptr,
                            kpm, p->causal != 0, scale, drop, savedLse};
    a.dilated = &globals;
    a.window = p->window;
    a.dilation = p->dilation;
    denseAttentionBackward<T>(a, dout, dq, dk, dv, ldg);
    return NNCC_K_OK;
  }
  dilatedBackward<T>(g, p, scale, globals, q, k, v, dout, dq, dk, dv, kpm,
                     drop, out, savedLse);
  return NNCC_K_OK;
}

int64_t mhaBwdWs(const nncc_attention_params *p, int64_t B, int64_t Tn,
                 int64_t E, int64_t elem) {
  const int64_t P = p->kind == NNCC_ATTN_LSH ? 2 : 3;
  Arena a(nullptr);
  a.take<char>(B * Tn * P * E * elem); // proj
  a.take<char>(B * Tn * E * elem);     // ctx
  a.take<char>(B * Tn * E * elem);     // dctx
  a.take<char>(B * Tn * P * E * elem); // dproj
  a.take<char>(attentionCoreWorkspace(p, Tn));
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
  const int64_t P = lsh ? 2 : 3, BT = B * Tn, dh = E / H;
  Arena a(ws);
  T *proj = a.take<T>(BT * P * E);
  T *ctx = a.take<T>(BT * E);
  T *dctx = a.take<T>(BT * E);
  T *dproj = a.take<T>(BT * P * E);
  void *core = a.take<char>(attentionCoreWorkspace(p, Tn));
  // Recompute the in-projection; the core's backward recomputes the context.
  if (inB)
    for (int64_t r = 0; r < BT; ++r)
      std::memcpy(proj + r * P * E, inB, sizeof(T) * P * E);
  gemm(false, true, BT, P * E, E, T(1), x, E, inW, E, inB ? T(1) : T(0), proj,
       P * E);
  // Out-projection y = ctx W_o^T + b_o: dctx first, dW_o once ctx exists.
  gemm(false, false, BT, E, E, T(1), dy, E, outW, E, T(0), dctx, E);
  int rc = attentionBackward<T>(p, B, Tn, H, dh, proj, lsh ? nullptr : proj + E,
                                proj + (P - 1) * E, P * E, dctx, E, dproj,
                                lsh ? nullptr : dproj + E, dproj + (P - 1) * E,
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
  (void)B, (void)H, (void)dh, (void)elem;
  if (!p)
    return -1;
  return attentionCoreWorkspace(p, Tn) + 64;
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
