/*===- Kernels.h - C ABI of libnncc_kernels (CPU kernels) -----------------===
 *
 * Plain C interface used by generated host code and by the Python (ctypes)
 * parity tests. Every tensor is row-major and batch-first; sizes are int64.
 * Every function returns 0 on success or a negative NNCC_K_* code on bad
 * arguments; nothing aborts, nothing allocates in hot loops (callers pass
 * workspace sized by the *_workspace_size functions, in bytes).
 * Each kernel exists as _f32 and _f64. See docs/kernels.md.
 *===----------------------------------------------------------------------===*/
#ifndef NNCC_KERNELS_KERNELS_H
#define NNCC_KERNELS_KERNELS_H

#include "nncc/Kernels/Codes.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  NNCC_K_OK = 0,
  NNCC_K_EINVAL = -1,    /* bad size / null pointer / bad enum */
  NNCC_K_ERANGE = -2,    /* index out of range (embedding, cross entropy) */
  NNCC_K_EUNSUPPORTED = -3
};

/* Cell, activation and attention-kind codes: NNCC_CELL_*, NNCC_ACT_*,
   NNCC_ATTN_* (Codes.h). */

/* Options of the attention core and of nncc_mha_forward_*. */
typedef struct nncc_attention_params {
  int32_t kind;             /* NNCC_ATTN_* */
  int32_t causal;           /* key j > query i masked */
  double scale;             /* 0: 1/sqrt(head_dim) */
  /* dilated */
  int32_t window;           /* w: w/2 neighbours each side */
  int32_t dilation;         /* d >= 1 */
  const int32_t *global_pos;/* sorted or not, duplicates allowed */
  int32_t n_global;
  /* lsh */
  /* rotations, element type of the call: NNCC_LSH_NNCC
     [n_hashes, head_dim, n_buckets/2] shared by the heads; NNCC_LSH_HF
     [H, head_dim, n_hashes, n_buckets/2] (Hugging Face's random_rotations) */
  const void *rotations;
  int32_t n_hashes;
  int32_t n_buckets;        /* even */
  int32_t chunk;            /* chunk length m */
  int32_t same_bucket_only; /* 1: also require bucket(q) == bucket(k) (NNCC_LSH_NNCC only) */
  int32_t lsh_convention;   /* NNCC_LSH_NNCC (0) or NNCC_LSH_HF (Codes.h, docs/kernels.md) */
  /* dropout on the attention probabilities (training; 0 = off): weight
     (query i, key j) of head h, batch b is kept, scaled by 1/(1-dropout),
     iff attention_dropout_keep(dropout_seed, dropout_offset, counter) with
     counter = ((b*H + h)*T + i)*T + j, and for LSH
     ((((b*H + h)*n_hashes + r)*T + i)*T + j) in hash round r (AttentionMath.h;
     NNCC_LSH_HF: r = 0 when T <= chunk, and a key j seen twice by one query,
     from two rounds, has one draw).
     The backward given the same three values reuses the mask. */
  double dropout;
  uint64_t dropout_seed;
  uint64_t dropout_offset;
  /* dilated, per example (NULL: none; exclusive with global_pos):
     global_mask[b*T + j] != 0 makes position j of batch row b a global
     token (Hugging Face's global_attention_mask, 1 = global); a padded
     position (key_padding_mask) is never global. */
  const uint8_t *global_mask;
  /* dilated: NNCC_DILATED_NNCC (0) or NNCC_DILATED_HF (Codes.h). With HF's,
     the projections are packed [Q | K | V | Qg | Kg | Vg] (ld_in >= 6 H dh):
     a global query attends with Qg, Kg, Vg, which sit 3 H dh elements after
     q, k, v (their gradients as far after dq, dk, dv), and a padded query
     row is zero. */
  int32_t dilated_convention;
  /* local (Hugging Face's LocalSelfAttention; `chunk` is its chunk length):
     with T > chunk, the queries of chunk c attend to the keys of chunks
     c - local_chunks_before ... c + local_chunks_after, indices wrapping
     around the sequence; with T <= chunk, to all T keys. Masked keys
     (padding, causal) score -1e9 rather than dropping out. */
  int32_t local_chunks_before;
  int32_t local_chunks_after;
  /* local, and lsh in NNCC_LSH_HF: ReformerModel's padding — a T above
     pad_above that is not a multiple of pad_to_multiple (0: never) runs as the next
     multiple, the added positions padded (the least common multiple and the
     shortest of the model's chunk lengths). */
  int32_t pad_to_multiple;
  int32_t pad_above;
} nncc_attention_params;

/* Which code runs the f32 products (nncc_gemm_f32, nncc_linear_f32 and the
   GEMMs inside the other f32 kernels): "nncc-avx512" (nncc's own AVX-512
   micro-kernel, runtime/lib/Kernels/Gemm.cpp, on a CPU with AVX-512F/DQ)
   or "openblas" (elsewhere, with NNCC_KERNELS_PORTABLE set, and for
   products under 4096 multiply-adds). f64 is always OpenBLAS. */
const char *nncc_gemm_f32_backend(void);

/* The shape and training options of a recurrent layer stack: the first
   argument of nncc_rnn_forward, nncc_rnn_forward_train and
   nncc_rnn_backward. Zero-initialise it and set what applies; weights are
   PyTorch's _flat_weights order. */
typedef struct nncc_rnn_params {
  int cell;     /* NNCC_CELL_* (Codes.h) */
  int has_bias; /* the weights hold b_ih and b_hh */
  /* B, T, I, H, L and D of the shapes below. */
  int64_t batch, steps, input_size, hidden_size;
  int64_t num_layers, num_directions; /* directions: 1 or 2 */
  /* [B] valid steps per row, each in [0, T]; NULL: every row has T. */
  const int32_t *lengths;
  /* Training: LSTM zoneout (0: none; the cell must be lstm otherwise) with
     its Philox stream, RandomMasks.h's lstm_zoneout_keep_prev(seed,
     offset, layer*D + direction, t, b, j, T, H, zoneout). */
  double zoneout;
  uint64_t seed, offset;
  /* Training: the reserve's schedule. checkpoint_every > 0: BPTT
     checkpointing, the cell states entering each segment of that many
     steps; checkpoint_snapshots > 0: the binomial (Revolve) schedule with
     that many cell-state snapshots in the backward's workspace; both 0:
     every step's gates. At most one is set. */
  int64_t checkpoint_every;
  int64_t checkpoint_snapshots;
} nncc_rnn_params;

#define NNCC_DECLARE_KERNELS(S, T)                                              \
  /* C[M,N] = alpha op(A) op(B) + beta C  (row-major, cblas) */                \
  int nncc_gemm_##S(int trans_a, int trans_b, int64_t M, int64_t N,           \
                    int64_t K, T alpha, const T *A, int64_t lda, const T *B,   \
                    int64_t ldb, T beta, T *C, int64_t ldc);                   \
  /* y[M,N] = act(x[M,K] w[N,K]^T + bias[N]) + residual[M,N] */               \
  int nncc_linear_##S(int64_t M, int64_t N, int64_t K, const T *x,             \
                      const T *w, const T *bias, const T *residual, int act,   \
                      double alpha, T *y);                                     \
  int nncc_activation_##S(int64_t n, const T *x, int act, double alpha,        \
                          T *y);                                               \
  /* y = x + residual elementwise (residual may alias y) */                    \
  int nncc_add_##S(int64_t n, const T *x, const T *residual, T *y);            \
  /* Inference forward of a recurrent layer stack (p: no zoneout, no      \
     schedule). saved (optional): every layer and direction's gates        \
     [L*D, B*T*slots*H] (nncc_rnn_saved_size elements). */                 \
  int nncc_rnn_forward_##S(const nncc_rnn_params *p, const T *x,              \
                           const T *const *weights, const T *h0, const T *c0, \
                           T *y, T *h_n, T *c_n, void *workspace, T *saved);  \
  /* One layer and direction over a precomputed input projection          \
     xproj [B,T,G*H] (= x W_ih^T + b_ih): the time loop of                    \
     nncc_rnn_forward (same gate math, active rows shrink as sequences end,  \
     reverse starts at each row's own last step). Reads state slot           \
     `state_index` of h0/c0 [L*D,B,H] (NULL: zeros), writes columns          \
     [d*H,(d+1)*H) of y [B,T,D*H] (d = reverse && D == 2), zeros past a      \
     length, and slot state_index of h_n/c_n (may be NULL). Lengths: at     \
     most one of lengths (i32) / lengths64 (i64), each in [0, T]. saved as   \
     in nncc_rnn_forward indexed by state_index, or NULL. */                  \
  int nncc_rnn_layer_##S(int cell, int64_t B, int64_t T_, int64_t H,          \
                         int64_t D, int64_t state_index, int reverse,          \
                         const T *xproj, const T *w_hh, const T *b_hh,         \
                         const T *h0, const T *c0, const int32_t *lengths,     \
                         const int64_t *lengths64, T *y, T *h_n, T *c_n,       \
                         void *workspace, T *saved);                           \
  /* nncc_rnn_layer with LSTM zoneout (training; cell must be lstm when     \
     zoneout > 0): per unit j of row b at time t, with probability zoneout  \
     h_t = h_{t-1} and c_t = c_{t-1} (one mask): RandomMasks.h's            \
     lstm_zoneout_keep_prev(seed, offset, state_index, t, b, j, T, H, p).    \
     zoneout = 0 is nncc_rnn_layer exactly. */                               \
  int nncc_rnn_layer_zoneout_##S(                                              \
      int cell, int64_t B, int64_t T_, int64_t H, int64_t D,                   \
      int64_t state_index, int reverse, const T *xproj, const T *w_hh,         \
      const T *b_hh, const T *h0, const T *c0, const int32_t *lengths,         \
      const int64_t *lengths64, T *y, T *h_n, T *c_n, void *workspace,         \
      T *saved, double zoneout, uint64_t seed, uint64_t offset);               \
  /* One step of a cell for B rows: xproj [B,G*H], h/c [B,H] (c: lstm, NULL \
     = zeros), h_out/c_out [B,H] (c_out: lstm only). */                       \
  int nncc_rnn_cell_##S(int cell, int64_t B, int64_t H, const T *xproj,       \
                        const T *h, const T *c, const T *w_hh,                 \
                        const T *b_hh, T *h_out, T *c_out, void *workspace);   \
  /* Attention core on projected q,k,v (rows of stride ld_in), out stride     \
     ld_out. LSH: q is the shared QK, k unused; lsh_buckets (optional)        \
     [B,H,hashes,T]. lse (optional) [B,H,T]: each query's log-sum-exp of its \
     (undropped) scores, what nncc_attention_backward_S can reuse. */         \
  int nncc_attention_##S(const nncc_attention_params *p, int64_t B,            \
                         int64_t T_, int64_t H, int64_t dh, const T *q,        \
                         const T *k, const T *v, int64_t ld_in, T *out,        \
                         int64_t ld_out, const uint8_t *key_padding_mask,      \
                         void *workspace, int32_t *lsh_buckets, T *lse);       \
  /* Full nn.attention: in-proj, attention core, out-proj. */                 \
  int nncc_mha_forward_##S(const nncc_attention_params *p, int64_t B,          \
                           int64_t T_, int64_t E, int64_t H, const T *x,       \
                           const T *in_w, const T *in_b, const T *out_w,       \
                           const T *out_b, const uint8_t *key_padding_mask,    \
                           void *workspace, T *y);                             \
  /* y = LN(x + residual) * gamma + beta over the last N; optional outputs   \
     sum_out = x + residual, mean[rows], rstd[rows]. */                       \
  int nncc_layer_norm_##S(int64_t rows, int64_t N, const T *x,                 \
                          const T *residual, const T *gamma, const T *beta,    \
                          double eps, T *y, T *sum_out, T *mean, T *rstd);     \
  /* softmax along the middle axis of [outer, N, inner] */                    \
  int nncc_softmax_##S(int64_t outer, int64_t N, int64_t inner, const T *x,    \
                       T *y);                                                  \
  /* max / argmax along the middle axis of [outer, N, inner]: values and    \
     indices [outer, inner], either may be NULL; the first of equal maxima,  \
     a NaN counting as the largest (torch.max(x, dim), torch.argmax);        \
     backward: dx = dy at that element, 0 elsewhere (overwritten). */        \
  int nncc_max_axis_##S(int64_t outer, int64_t N, int64_t inner, const T *x,   \
                        T *values, int32_t *indices);                          \
  int nncc_max_axis_backward_##S(int64_t outer, int64_t N, int64_t inner,      \
                                 const T *x, const T *dy, T *dx);              \
  /* running sums along the middle axis of [outer, N, inner]: y[.., i, ..]  \
     = sum of x[.., j, ..] for j <= i (reverse: j >= i); y may be x.        \
     Also as _i32 and _i64 for integer tensors. */                          \
  int nncc_cumsum_axis_##S(int64_t outer, int64_t N, int64_t inner,            \
                           int reverse, const T *x, T *y);                     \
  /* topk along the middle axis of [outer, N, inner]: values and indices   \
     [outer, k, inner] (1 <= k <= N), descending, a NaN counting as the      \
     largest, equal elements by ascending index (torch.sort(descending,      \
     stable)'s first k); backward: dx = 0, then dy at the indices. */         \
  int nncc_topk_axis_##S(int64_t outer, int64_t N, int64_t inner, int64_t k,   \
                         const T *x, T *values, int32_t *indices);             \
  int nncc_topk_axis_backward_##S(int64_t outer, int64_t N, int64_t inner,     \
                                  int64_t k, const int32_t *indices,           \
                                  const T *dy, T *dx);                         \
  int nncc_embedding_##S(int64_t n, int64_t V, int64_t E, const int64_t *idx,  \
                         const T *table, T *out);                              \
  int nncc_embedding_i32_##S(int64_t n, int64_t V, int64_t E,                  \
                             const int32_t *idx, const T *table, T *out);      \
  /* y[b,t,:] = x[b,t,:] + PE(t) */                                            \
  int nncc_sinusoidal_position_##S(int64_t B, int64_t T_, int64_t E,           \
                                   const T *x, T *y);                          \
  /* y = keep ? x/(1-p) : 0; keep_i = philox_uniform(seed,offset,i) >= p */   \
  int nncc_dropout_##S(int64_t n, double p, uint64_t seed, uint64_t offset,    \
                       const T *x, T *y, uint8_t *mask);                       \
  /* y = keep_prev ? prev : new; keep_prev_i = philox_uniform(seed,offset,i) \
     < p (zoneout; the complement of dropout's keep for the same draw) */    \
  int nncc_zoneout_##S(int64_t n, double p, uint64_t seed, uint64_t offset,    \
                       const T *new_state, const T *prev, T *y);               \
  int nncc_mse_loss_##S(int64_t n, const T *pred, const T *target, T *out);    \
  int nncc_cross_entropy_##S(int64_t N, int64_t C, const T *logits,            \
                             const int64_t *target, int64_t ignore_index,      \
                             T *out);                                          \
  int nncc_bce_with_logits_##S(int64_t N, int64_t C, const T *logits,          \
                               const T *target, const T *pos_weight, T *out);

NNCC_DECLARE_KERNELS(f32, float)
NNCC_DECLARE_KERNELS(f64, double)

/* Workspace sizes in bytes. elem_size = 4 (f32) or 8 (f64). */
int64_t nncc_rnn_workspace_size(int cell, int64_t B, int64_t T_, int64_t I,
                                int64_t H, int64_t L, int64_t D,
                                int64_t elem_size);
int64_t nncc_rnn_layer_workspace_size(int cell, int64_t B, int64_t H,
                                      int64_t elem_size);
int64_t nncc_rnn_cell_workspace_size(int cell, int64_t B, int64_t H,
                                     int64_t elem_size);
/* Whether the recurrent workspace sizes computed on the calling thread
   count the CPU-only workspace of the f32 time loops on AVX-512 (the packed
   W_hh, the second h buffer, the backward's row offsets); sets it to `on`
   and returns the previous setting. On by default, and it must stay on for
   any size a CPU kernel's workspace is allocated by; the compiler turns it
   off while it plans the memory of another target (CUDA). bf16 sizes
   (elem_size 2) never count it. */
int nncc_rnn_sizes_count_cpu_workspace(int on);
/* Number of elements of `saved` (gate activations for backward):
   [L, D, B, T, slots*H], slots = 1 rnn, 5 lstm (i f g o c), 4 gru
   (r z n hn), 3 cho (r z h~). */
int64_t nncc_rnn_saved_size(int cell, int64_t B, int64_t T_, int64_t H,
                            int64_t L, int64_t D);
/* The same as nncc_attention_workspace_size and
   nncc_attention_backward_workspace_size, from the only fields that size it
   (kind NNCC_ATTN_*, the batch and sequence length, the number of static
   global positions, whether a per-example global_mask is given): the form
   generated code and the compiler's memory plan evaluate. */
int64_t nncc_attention_core_workspace_bytes(int kind, int64_t B, int64_t T_, int64_t n_global,
                                            int per_example_globals);
int64_t nncc_attention_workspace_size(const nncc_attention_params *p,
                                      int64_t B, int64_t T_, int64_t H,
                                      int64_t dh, int64_t elem_size);
int64_t nncc_mha_workspace_size(const nncc_attention_params *p, int64_t B,
                                int64_t T_, int64_t E, int64_t H,
                                int64_t elem_size);

/* ---- Backward kernels (docs/kernels.md, "Backward") -------------------- */
#define NNCC_DECLARE_BACKWARD_KERNELS(S, T)                                     \
  /* BPTT of one layer and direction. Needs the forward's `saved` gates      \
     (nncc_rnn_layer_* with saved, indexed by state_index) and its output y  \
     [B,T,D*H] (h_t in this direction's columns). dy [B,T,D*H] (same        \
     columns; NULL = 0), dh_n/dc_n slot state_index of [L*D,B,H] (NULL = 0). \
     Writes dh0/dc0 slot state_index (may be NULL) and dxproj [B,T,G*H]     \
     (optional: the adjoint of x W_ih^T + b_ih). ACCUMULATES dx [B,T,I]     \
     (+= dxproj W_ih), dw_ih, dw_hh, db_ih, db_hh (each may be NULL). */    \
  int nncc_rnn_layer_backward_##S(                                             \
      int cell, int64_t B, int64_t T_, int64_t I, int64_t H, int64_t D,        \
      int64_t state_index, int reverse, const T *x, const T *w_ih,             \
      const T *w_hh, const T *saved, const T *y, const T *h0, const T *c0,     \
      const int32_t *lengths, const int64_t *lengths64, const T *dy,           \
      const T *dh_n, const T *dc_n, T *dx, T *dh0, T *dc0, T *dw_ih,           \
      T *dw_hh, T *db_ih, T *db_hh, T *dxproj, void *workspace);               \
  /* Training forward of the stack: nncc_rnn_forward's y, h_n, c_n (h_n and \
     c_n may be NULL) plus the reserve the backward reads, by p's schedule: \
     every layer's output [L, B*T, D*H], then every layer and direction's   \
     saved gates [L*D, B*T*slots*H] (nncc_rnn_reserve_size bytes); with     \
     checkpoint_every, instead of the gates the LSTM cell states entering   \
     each segment after the first [L*D, (T-1)/every, B, H]                  \
     (nncc_rnn_reserve_ckpt_size); with checkpoint_snapshots, the layer     \
     outputs only (L*B*T*D*H elements). Workspace:                          \
     nncc_rnn_forward_train_workspace_size. */                              \
  int nncc_rnn_forward_train_##S(const nncc_rnn_params *p, const T *x,        \
                                 const T *const *weights, const T *h0,        \
                                 const T *c0, T *y, T *h_n, T *c_n,           \
                                 T *reserve, void *workspace);                \
  /* BPTT of the whole stack, layer by layer. reserve: nncc_rnn_forward_     \
     train's, same p (the checkpointed backward recomputes one segment's    \
     gates at a time, the binomial one reverses each scan a step at a time  \
     with the LSTM's cell states served from at most checkpoint_snapshots   \
     snapshots, nncc/Kernels/Revolve.h); NULL (p without a schedule): the   \
     forward re-runs into the workspace first. Zoneout regenerates the      \
     forward's masks (same zoneout, seed, offset). dy, dh_n, dc_n may be    \
     NULL (0). OVERWRITES dx, dh0, dc0 and dweights (pointers in            \
     _flat_weights order; any may be NULL). recomputed_steps (binomial      \
     schedule; may be NULL) receives the forward steps it advanced          \
     (nncc_rnn_revolve_forward_steps for full-length rows). Workspace:      \
     nncc_rnn_backward{,_reserved,_ckpt,_revolve}_workspace_size. */        \
  int nncc_rnn_backward_##S(                                                   \
      const nncc_rnn_params *p, const T *x, const T *const *weights,           \
      const T *h0, const T *c0, const T *reserve, const T *dy,                 \
      const T *dh_n, const T *dc_n, T *dx, T *dh0, T *dc0,                     \
      T *const *dweights, void *workspace, int64_t *recomputed_steps);         \
  /* One cell step: gates recomputed. Overwrites dxproj [B,G*H], dh, dc      \
     (lstm); accumulates dw_hh, db_hh (may be NULL). */                       \
  int nncc_rnn_cell_backward_##S(                                              \
      int cell, int64_t B, int64_t H, const T *xproj, const T *h, const T *c,  \
      const T *w_hh, const T *b_hh, const T *dh_out, const T *dc_out,          \
      T *dxproj, T *dh, T *dc, T *dw_hh, T *db_hh, void *workspace);           \
  /* Attention core backward: overwrites dq, dk, dv (row stride ld_grad) of  \
     every head. LSH: q is the shared QK, k/dk unused, dq gets both paths.    \
     With lse (nncc_attention_S's, [B,H,T]), out (row stride ld_dout) is the  \
     forward's output and the forward is not run again; without, out          \
     (optional) receives the forward output recomputed on the way. */         \
  int nncc_attention_backward_##S(                                             \
      const nncc_attention_params *p, int64_t B, int64_t T_, int64_t H,        \
      int64_t dh, const T *q, const T *k, const T *v, int64_t ld_in,           \
      const T *dout, int64_t ld_dout, T *dq, T *dk, T *dv, int64_t ld_grad,    \
      const uint8_t *key_padding_mask, void *workspace, T *out,                \
      const T *lse);                                                           \
  /* Full nn.attention backward (in-proj and context recomputed). Overwrites \
     dx, d_in_w, d_in_b, d_out_w, d_out_b (each may be NULL). */              \
  int nncc_mha_backward_##S(                                                   \
      const nncc_attention_params *p, int64_t B, int64_t T_, int64_t E,        \
      int64_t H, const T *x, const T *in_w, const T *in_b, const T *out_w,     \
      const T *out_b, const uint8_t *key_padding_mask, const T *dy, T *dx,     \
      T *d_in_w, T *d_in_b, T *d_out_w, T *d_out_b, void *workspace);          \
  /* dx = d(x + residual) (also the residual's gradient) of                  \
     y = LN(x + residual) gamma + beta, plus dsum (optional: adjoint of       \
     sum_out). mean/rstd: both or none (recomputed). dgamma/dbeta            \
     overwritten (may be NULL). */                                            \
  int nncc_layer_norm_backward_##S(                                            \
      int64_t rows, int64_t N, const T *x, const T *residual, const T *gamma,  \
      const T *mean, const T *rstd, double eps, const T *dy, const T *dsum,    \
      T *dx, T *dgamma, T *dbeta);                                             \
  int nncc_softmax_backward_##S(int64_t outer, int64_t N, int64_t inner,       \
                                const T *y, const T *dy, T *dx);               \
  /* dtable [V,E] overwritten; rows equal to padding_idx (< 0: none) get no \
     gradient. Deterministic (fixed summation order). */                    \
  int nncc_embedding_backward_##S(int64_t n, int64_t V, int64_t E,             \
                                  const int64_t *idx, const T *dy,             \
                                  int64_t padding_idx, T *dtable);             \
  int nncc_embedding_backward_i32_##S(int64_t n, int64_t V, int64_t E,         \
                                      const int32_t *idx, const T *dy,         \
                                      int64_t padding_idx, T *dtable);         \
  /* dx = dy * act'(.) from the pre-activation (is_output = 0) or the        \
     post-activation (is_output = 1: not for gelu). */                        \
  int nncc_activation_backward_##S(int64_t n, const T *x_or_y, int is_output, \
                                   int act, double alpha, const T *dy, T *dx); \
  /* y = act(x[M,K] w[N,K]^T + b): dz = dy act'(z_or_y); dx = dz w,          \
     dw = dz^T x, db = sum dz (each may be NULL; accumulate != 0 adds).      \
     dz (optional [M,N]) receives dz; else workspace of M*N elements is     \
     needed when act != none. */                                              \
  int nncc_linear_backward_##S(int64_t M, int64_t N, int64_t K, const T *x,    \
                               const T *w, const T *z_or_y, int is_output,     \
                               int act, double alpha, const T *dy, T *dx,      \
                               T *dw, T *db, int accumulate, T *dz,            \
                               void *workspace);                               \
  /* Loss gradients (mean reduction); dloss = adjoint of the scalar loss    \
     (NULL = 1). */                                                           \
  int nncc_mse_loss_backward_##S(int64_t n, const T *pred, const T *target,    \
                                 const T *dloss, T *dpred, T *dtarget);        \
  int nncc_cross_entropy_backward_##S(int64_t N, int64_t C, const T *logits,   \
                                      const int64_t *target,                   \
                                      int64_t ignore_index, const T *dloss,    \
                                      T *dlogits);                             \
  int nncc_bce_with_logits_backward_##S(int64_t N, int64_t C, const T *logits, \
                                        const T *target, const T *pos_weight,  \
                                        const T *dloss, T *dlogits);           \
  /* The forward's Philox mask applied to dy (same seed and offset). */      \
  int nncc_dropout_backward_##S(int64_t n, double p, uint64_t seed,            \
                                uint64_t offset, const T *dy, T *dx);

NNCC_DECLARE_BACKWARD_KERNELS(f32, float)
NNCC_DECLARE_BACKWARD_KERNELS(f64, double)

/* Fused language-model head (nnk.linear_cross_entropy, LossHead.cpp): the
   mean over targets != ignore_index of cross_entropy(x w^T + b) into *loss,
   and its gradients for a unit loss adjoint: dx [N, K], dw [V, K], db [V];
   b may be NULL (db is still written); logits [N, V] are written when not
   NULL. Rows go in chunks of nncc_linear_ce_chunk_rows(N, V); the chunk's
   logits live in the workspace of nncc_linear_ce_workspace_size(N, V,
   elem_size) bytes. */
int64_t nncc_linear_ce_chunk_rows(int64_t N, int64_t V);
int64_t nncc_linear_ce_workspace_size(int64_t N, int64_t V, int64_t elem_size);
#define NNCC_DECLARE_LOSS_HEAD_KERNELS(S, T)                                    \
  int nncc_linear_cross_entropy_##S(                                           \
      int64_t N, int64_t K, int64_t V, const T *x, const T *w, const T *b,     \
      const int64_t *target, int64_t ignore_index, T *loss, T *dx, T *dw,      \
      T *db, T *logits, void *workspace);
NNCC_DECLARE_LOSS_HEAD_KERNELS(f32, float)
NNCC_DECLARE_LOSS_HEAD_KERNELS(f64, double)

int64_t nncc_rnn_layer_backward_workspace_size(int cell, int64_t B, int64_t T_,
                                               int64_t H, int64_t elem_size);
/* Bytes of nncc_rnn_forward_train's reserve (no schedule); its workspace
   (every schedule); the workspace of nncc_rnn_backward from that reserve. */
int64_t nncc_rnn_reserve_size(int cell, int64_t B, int64_t T_, int64_t H,
                              int64_t L, int64_t D, int64_t elem_size);
int64_t nncc_rnn_forward_train_workspace_size(int cell, int64_t B, int64_t T_,
                                              int64_t H, int64_t elem_size);
int64_t nncc_rnn_backward_reserved_workspace_size(int cell, int64_t B,
                                                  int64_t T_, int64_t H,
                                                  int64_t L, int64_t D,
                                                  int64_t elem_size);
/* BPTT checkpointing every `every` steps (checkpoint_every): bytes of
   nncc_rnn_forward_train's reserve and of nncc_rnn_backward's workspace. */
int64_t nncc_rnn_reserve_ckpt_size(int cell, int64_t B, int64_t T_, int64_t H,
                                   int64_t L, int64_t D, int64_t every,
                                   int64_t elem_size);
int64_t nncc_rnn_backward_ckpt_workspace_size(int cell, int64_t B, int64_t T_,
                                              int64_t I, int64_t H, int64_t L,
                                              int64_t D, int64_t every,
                                              int64_t elem_size);
/* The binomial schedule with `snapshots` cell-state snapshots
   (checkpoint_snapshots): bytes of nncc_rnn_backward's workspace, and the
   forward steps it
   recomputes to rebuild the cell states, over all layers and directions
   (0 for GRU / RNN, whose state h_t is a layer output). */
int64_t nncc_rnn_backward_revolve_workspace_size(int cell, int64_t B,
                                                 int64_t T_, int64_t I,
                                                 int64_t H, int64_t L,
                                                 int64_t D, int64_t snapshots,
                                                 int64_t elem_size);
int64_t nncc_rnn_revolve_forward_steps(int cell, int64_t T_, int64_t L,
                                       int64_t D, int64_t snapshots);
/* nncc_rnn_backward without a reserve (the forward re-run first). */
int64_t nncc_rnn_backward_workspace_size(int cell, int64_t B, int64_t T_,
                                         int64_t I, int64_t H, int64_t L,
                                         int64_t D, int64_t elem_size);
int64_t nncc_rnn_cell_backward_workspace_size(int cell, int64_t B, int64_t H,
                                              int64_t elem_size);
int64_t nncc_attention_backward_workspace_size(const nncc_attention_params *p,
                                               int64_t B, int64_t T_,
                                               int64_t H, int64_t dh,
                                               int64_t elem_size);
int64_t nncc_mha_backward_workspace_size(const nncc_attention_params *p,
                                         int64_t B, int64_t T_, int64_t E,
                                         int64_t H, int64_t elem_size);
/* Bytes of the scratch of the ODE backward loop nncc::grad::ode_grad
   (GradKernels.h; nnk.ode_solve_grad, nnk.ode_rnn_grad per segment): method
   NNCC_ODE_*, steps (0 = adaptive dopri5), max_steps (the accepted-step
   bound of adaptive dopri5 through the steps), adjoint 0/1, n state
   elements, P dynamics-parameter elements. adjoint: (S + 3)(2n + P) + n
   elements, independent of steps; through the steps: (N + 1) n states
   (N = steps, or max_steps adaptive, with 2 max_steps doubles) + 3 S n +
   2n + P; each piece 64-byte aligned. */
int64_t nncc_ode_grad_workspace_size(int method, int64_t steps,
                                     int64_t max_steps, int adjoint, int64_t n,
                                     int64_t P, int64_t elem_size);

/* ---- Optimizer kernels (runtime/lib/Kernels/Optim.cpp; math in OptimMath.h). One
 * fused pass per parameter tensor, in place. g is multiplied by gscale (the
 * global-norm clipping factor, 1 = none) first. Formulas follow torch.optim.
 * sgd: momentum buffer `buf` (may be NULL when momentum == 0), `first` = the
 * buffer is uninitialised (buf = g). adam: m, v moments; decoupled = AdamW
 * (p *= 1 - lr*wd), else L2 (g += wd*p); step >= 1 is the bias-correction
 * exponent. sum_squares: sum of g^2 in double (for the global norm).
 * grad_mean: gradient accumulation's running mean over micro-batches,
 * mean = g when `first`, else mean += alpha (g - mean). ---- */
#define NNCC_DECLARE_OPTIM_KERNELS(S, T)                                        \
  double nncc_sum_squares_##S(int64_t n, const T *g);                           \
  int nncc_sgd_step_##S(int64_t n, T *p, const T *g, T *buf, double gscale,     \
                        double lr, double momentum, double wd, int nesterov,    \
                        int first);                                             \
  int nncc_adam_step_##S(int64_t n, T *p, const T *g, T *m, T *v,               \
                         double gscale, double lr, double beta1, double beta2,  \
                         double eps, double wd, int decoupled, int64_t step);  \
  int nncc_grad_mean_##S(int64_t n, T *mean, const T *g, double alpha, int first);

NNCC_DECLARE_OPTIM_KERNELS(f32, float)
NNCC_DECLARE_OPTIM_KERNELS(f64, double)

/* ---- Token kernels (runtime/lib/Kernels/Token.cpp; math in TokenMath.h) ----
 * mask_tokens: rows of n tokens; the floor(p*n) positions of each row with
 * the smallest Philox keys (seed, offset) become mask_id in `masked` (the
 * rest copies `tokens`) and 1 in `mask` (else 0); requires 0 <= p < 1.
 * sample: out[r] = argmax_v (logits[r,v] + Gumbel noise (seed, offset, r*V+v)),
 * a draw from softmax(logits[r]); rows with rows_mask[r] == 0 (when given)
 * are not drawn and get 0.
 * axial_position: y[b,t,:] = x[b,t,:] + [w0[t / n2] (d1), w1[t % n2] (d2)],
 * t < n1*n2 (w0 [n1,1,d1], w1 [1,n2,d2] as Hugging Face's Reformer);
 * axial_position_backward: dw0, dw1 = the sums of dy over the batch and the
 * grid positions that read each row (overwritten). ---- */
/* linear_sample: sample(x w^T + b, rows_mask) for x [N, K], w [V, K], b [V] or
 * NULL, without the [N, V] logits: the drawn rows in chunks of
 * nncc_linear_ce_chunk_rows(N, V) through a workspace of
 * nncc_linear_sample_workspace_size(N, K, V, elem_size) bytes. */
int64_t nncc_linear_sample_workspace_size(int64_t N, int64_t K, int64_t V,
                                          int64_t elem_size);
int nncc_cumsum_axis_i32(int64_t outer, int64_t N, int64_t inner, int reverse,
                         const int32_t *x, int32_t *y);
int nncc_cumsum_axis_i64(int64_t outer, int64_t N, int64_t inner, int reverse,
                         const int64_t *x, int64_t *y);
int nncc_mask_tokens_i32(int64_t rows, int64_t n, double p, int64_t mask_id,
                         uint64_t seed, uint64_t offset, const int32_t *tokens,
                         int32_t *masked, uint8_t *mask);
int nncc_mask_tokens_i64(int64_t rows, int64_t n, double p, int64_t mask_id,
                         uint64_t seed, uint64_t offset, const int64_t *tokens,
                         int64_t *masked, uint8_t *mask);
#define NNCC_DECLARE_TOKEN_KERNELS(S, T)                                        \
  int nncc_sample_##S(int64_t rows, int64_t V, uint64_t seed, uint64_t offset,  \
                      const T *logits, const uint8_t *rows_mask, int32_t *out); \
  int nncc_linear_sample_##S(int64_t N, int64_t K, int64_t V, uint64_t seed,    \
                             uint64_t offset, const T *x, const T *w,          \
                             const T *b, const uint8_t *rows_mask,             \
                             void *workspace, int32_t *out);                   \
  int nncc_axial_position_##S(int64_t B, int64_t T_, int64_t n1, int64_t n2,    \
                              int64_t d1, int64_t d2, const T *x, const T *w0,  \
                              const T *w1, T *y);                               \
  int nncc_axial_position_backward_##S(int64_t B, int64_t T_, int64_t n1,       \
                                       int64_t n2, int64_t d1, int64_t d2,      \
                                       const T *dy, T *dw0, T *dw1);

NNCC_DECLARE_TOKEN_KERNELS(f32, float)
NNCC_DECLARE_TOKEN_KERNELS(f64, double)

/* Raw Philox-4x32-10 block: out = philox(ctr, key). */
void nncc_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                        uint32_t out[4]);

#ifdef __cplusplus
}
#endif

#endif /* NNCC_KERNELS_KERNELS_H */
