// CUDA-emulation parity of bf16 attention training: the bf16_t
// instantiations of the training forwards (launch_{flash,dilated,lsh}_
// attention_train with a bf16 lse, as generated code calls them) and of the
// backwards (launch_{flash,dilated,lsh}_attention_backward of
// AttentionBackward.cuh) against their float instantiations on the same
// bf16 values widened to fp32 (exact). The bf16 forward stages q, k, v
// widened into the fp32 SIMT kernels and rounds out and lse once; the bf16
// backward at other head sizes than 32/64/128 (and LSH's) runs the f32
// launcher in recompute mode on fp32 copies of q, k, v and dout in its
// workspace and rounds dq, dk, dv and the recomputed output (`core`) once.
// So those checks are bit for bit: every bf16 output is the f32 output
// rounded to nearest even (0 ulps; NaN matches NaN, and the f32 reference
// must have written every element). The dense and dilated bf16 backwards
// at dh 32/64/128 run on BF16 tensor cores (the forward recomputed by the
// BF16 kernel, P and dS rounded to bf16 as mma operands): their gradients
// and `core` are held to a tolerance instead (kTcTol). The saved bf16 output
// and lse are never read by the bf16 backward (passed NaN-filled, and as
// the bf16 forward kept them: a backward reading that lse would differ); the
// bf16 launches run with NNCC_CUDA_ALLOW_TF32 set (the f32 references
// without): they must not use TF32. Operands are the models' packed rows
// (ld_in = 3E, LSH 2E), some cases with extra columns in the q/k/v, dout
// and gradient rows (the gaps must stay untouched) and odd strides (no
// 16-byte loads). Workspaces carry a guard after their size.
#include "nncc/Kernels/CUDA/AttentionBackward.cuh"

#include "emu_bf16.h"

#include <cstring>

using namespace nncc::kernels;
using namespace nncc::kernels::cuda;
using namespace emutest;

struct Case {
  const char *name;
  int kind, B, Tn, H, dh;
  int dhs; // the launchers' DHS template argument: 0 (run-time dispatch) or, dense only, 32
  bool causal, pad;
  int window = 0, dilation = 1;
  std::vector<int32_t> globals;
  int hashes = 0, buckets = 0, chunk = 0;
  int ldExtra = 0, doutExtra = 0, gradExtra = 0; // extra columns of the rows
};

static const uint64_t kSeed = 123, kOffset = 9;

/// The call's operands (storage T): q, k (null for LSH), v rows of stride
/// ld, lse [B, H, T], LSH rotations in fp32.
template <typename T> struct Fwd {
  const T *q, *k, *v;
  int64_t ld;
  T *out, *lse;
  const float *rot;
  void *ws;
};

template <typename T, int DHS>
static int forwardAt(const Case &c, const Fwd<T> &a, float scale, const uint8_t *kp,
                     double dropout) {
  const int E = c.H * c.dh, ng = (int)c.globals.size();
  if (c.kind == NNCC_ATTN_DENSE)
    return launch_flash_attention_train<T, DHS>(c.dh, c.B, c.Tn, c.H, a.q, a.k, a.v, a.ld, a.out, E,
                                                kp, c.causal, scale, a.lse, dropout, kSeed, kOffset,
                                                nullptr);
  if constexpr (DHS == 0) { // (the other kinds' DHS > 0 kernels: the same as DHS 0's)
    if (c.kind == NNCC_ATTN_DILATED)
      return launch_dilated_attention_train<T, DHS>(c.dh, c.B, c.Tn, c.H, a.q, a.k, a.v, a.ld,
                                                    a.out, E, kp, c.causal, scale, c.window,
                                                    c.dilation, ng ? c.globals.data() : nullptr, ng,
                                                    a.lse, dropout, kSeed, kOffset, a.ws, nullptr);
    return launch_lsh_attention_train<T, DHS>(c.dh, c.B, c.Tn, c.H, c.hashes, c.buckets, c.chunk,
                                              c.causal, scale, 0, a.q, a.v, a.ld, a.rot, a.out, E,
                                              kp, a.lse, dropout, kSeed, kOffset, a.ws, nullptr);
  }
  return -1;
}

template <typename T>
static int forward(const Case &c, const Fwd<T> &a, float scale, const uint8_t *kp, double dropout) {
  return c.dhs == 32 ? forwardAt<T, 32>(c, a, scale, kp, dropout)
                     : forwardAt<T, 0>(c, a, scale, kp, dropout);
}

/// Backward operands: dout rows of stride ld_dout, gradients (dq, dk, dv;
/// LSH dqk, dv) of stride ld_grad, the saved forward or `core`.
template <typename T> struct Bwd {
  const T *q, *k, *v;
  int64_t ld;
  const T *dout;
  int64_t ld_dout;
  T *dq, *dk, *dv;
  int64_t ld_grad;
  const T *saved_out, *saved_lse;
  T *core;
  const float *rot;
  char *ws;
};

template <typename T, int DHS>
static int backwardAt(const Case &c, const Bwd<T> &a, float scale, const uint8_t *kp,
                      double dropout) {
  const int ng = (int)c.globals.size();
  if (c.kind == NNCC_ATTN_DENSE)
    return launch_flash_attention_backward<T, DHS>(c.dh, c.B, c.Tn, c.H, a.q, a.k, a.v, a.ld,
                                                   a.dout, a.ld_dout, a.dq, a.dk, a.dv, a.ld_grad,
                                                   kp, c.causal, scale, dropout, kSeed, kOffset,
                                                   a.saved_out, a.saved_lse, a.core, a.ws, nullptr);
  if constexpr (DHS == 0) {
    if (c.kind == NNCC_ATTN_DILATED)
      return launch_dilated_attention_backward<T, DHS>(
          c.dh, c.B, c.Tn, c.H, a.q, a.k, a.v, a.ld, a.dout, a.ld_dout, a.dq, a.dk, a.dv, a.ld_grad,
          kp, c.causal, scale, c.window, c.dilation, ng ? c.globals.data() : nullptr, ng, dropout,
          kSeed, kOffset, a.saved_out, a.saved_lse, a.core, a.ws, nullptr);
    return launch_lsh_attention_backward<T, DHS>(
        c.dh, c.B, c.Tn, c.H, c.hashes, c.buckets, c.chunk, c.causal, scale, 0, a.q, a.v, a.ld,
        a.rot, a.dout, a.ld_dout, a.dq, a.dv, a.ld_grad, kp, dropout, kSeed, kOffset, a.saved_out,
        a.saved_lse, a.core, a.ws, nullptr);
  }
  return -1;
}

template <typename T>
static int backward(const Case &c, const Bwd<T> &a, float scale, const uint8_t *kp,
                    double dropout) {
  return c.dhs == 32 ? backwardAt<T, 32>(c, a, scale, kp, dropout)
                     : backwardAt<T, 0>(c, a, scale, kp, dropout);
}

/// The backward workspace of the case for element size `elem`.
static int64_t backwardBytes(const Case &c, int64_t elem, int recompute) {
  if (c.kind == NNCC_ATTN_DENSE)
    return flash_attention_backward_workspace_bytes(c.B, c.Tn, c.H, c.dh, elem, recompute);
  if (c.kind == NNCC_ATTN_DILATED)
    return dilated_attention_backward_workspace_bytes(c.B, c.Tn, c.H, c.dh,
                                                      (int64_t)c.globals.size(), elem, recompute);
  return lsh_attention_backward_workspace_bytes(c.B, c.Tn, c.H, c.dh, c.hashes, elem, recompute);
}

/// The forward scratch of the case (none for dense).
static int64_t forwardBytes(const Case &c) {
  if (c.kind == NNCC_ATTN_DILATED)
    return dilated_attention_scratch_bytes(c.Tn, (int64_t)c.globals.size());
  if (c.kind == NNCC_ATTN_LSH)
    return lsh_attention_scratch_bytes(c.B, c.Tn, c.H, c.dh, c.hashes, sizeof(float));
  return 0;
}

/// NaNs among rows x cols of an f32 reference (elements it left unwritten).
static long nansIn(const float *x, int64_t ld, int64_t rows, int64_t cols) {
  long n = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t col = 0; col < cols; ++col)
      n += std::isnan(x[r * ld + col]) ? 1 : 0;
  return n;
}

/// Elements of columns [c0, ld) of rows x ld bf16 that are not `bits`.
static long gapTouched(const bf16_t *x, int64_t ld, int64_t rows, int64_t c0, uint16_t bits) {
  long n = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t col = c0; col < ld; ++col)
      n += x[r * ld + col].bits != bits ? 1 : 0;
  return n;
}

/// Tolerance of the BF16 tensor-core backward (dense and dilated, dh
/// 32/64/128) against the f32 launcher on the widened inputs, relative to
/// the largest |f32| element of each gradient (and of the recomputed
/// output). Both see the same bf16 inputs; the tensor-core path rounds P
/// (forward and backward) and dS to bf16 as mma operands (relative errors
/// up to 2^-9 each), D comes from the bf16-rounded recomputed output, and
/// each output is rounded once: half an ulp, up to 2^-8 of the largest
/// element on its own. The gradients are differences (dS sums to 0 over a
/// query's keys), so the error is set against the gradient's scale, not
/// each element: 2^-6, four times that rounding. The worst seen here is
/// 6.3e-3 (dK, dense dh 128; printed with each report); a broken mask,
/// dropout scale or tile edge gives errors of order 0.1 to 1 (dV without
/// the dropout scale: 0.2).
static const double kTcTol = 1.0 / 64;
static double tcWorst = 0; // largest |bf16 - f32| / max|f32| seen

/// Whether the case's bf16 backward runs on tensor cores (dense and
/// dilated at dh 32/64/128).
static bool tcBackward(const Case &c) {
  return c.kind != NNCC_ATTN_LSH && attn_bf16_tc_backward_covers(c.dh);
}

/// got (bf16, stride ldg) against ref (f32, stride ldr), rows x cols, to
/// kTcTol of max|ref| (a NaN in got fails).
static void near(Tally &G, const std::string &what, const bf16_t *got, int64_t ldg,
                 const float *ref, int64_t ldr, int64_t rows, int64_t cols) {
  G.ok(what + ": the f32 reference wrote every element", nansIn(ref, ldr, rows, cols));
  double top = 0, err = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t col = 0; col < cols; ++col) {
      const double f = ref[r * ldr + col], d = std::fabs(bf16_to_float(got[r * ldg + col]) - f);
      top = std::max(top, std::fabs(f));
      err = std::isnan(d) ? INFINITY : std::max(err, d);
    }
  const double rel = top > 0 ? err / top : err;
  tcWorst = std::max(tcWorst, rel);
  if (rel > kTcTol)
    printf("  %s: |bf16 - f32| up to %.3g of max|f32| %.3g\n", what.c_str(), rel, top);
  G.ok(what + " within tolerance of f32", rel > kTcTol ? 1 : 0);
}

/// got (bf16, stride ldg) against ref (f32, stride ldr) rounded, rows x cols.
static void same(Tally &G, const std::string &what, const bf16_t *got, int64_t ldg,
                 const float *ref, int64_t ldr, int64_t rows, int64_t cols) {
  G.ok(what + ": the f32 reference wrote every element", nansIn(ref, ldr, rows, cols));
  std::string first;
  const size_t bad = bf16_mismatches(got, ldg, ref, ldr, rows, cols, &first);
  if (bad)
    printf("  %s: %zu of %lld differ from bf16(f32), first %s\n", what.c_str(), bad,
           (long long)(rows * cols), first.c_str());
  G.ok(what + " == bf16(f32)", (long)bad);
}

static void setTf32(bool on) {
  if (on)
    setenv("NNCC_CUDA_ALLOW_TF32", "1", 1);
  else
    unsetenv("NNCC_CUDA_ALLOW_TF32");
}

static void run(Tally &F, Tally &G, const Case &c, double dropout) {
  const int B = c.B, Tn = c.Tn, H = c.H, dh = c.dh, E = H * dh;
  const bool lsh = c.kind == NNCC_ATTN_LSH;
  const int P = lsh ? 2 : 3; // packed [q | k | v], LSH [qk | v]
  const int64_t rows = (int64_t)B * Tn, ld = P * E + c.ldExtra, ldo = E + c.doutExtra,
                ldg = P * E + c.gradExtra;
  const std::string tag = std::string(c.name) + (dropout > 0 ? " drop0.2" : "");
  Bf16Values x = normal_bf16((size_t)(rows * ld)), dy = normal_bf16((size_t)(rows * ldo));
  std::vector<uint8_t> kpm((size_t)rows, 0);
  if (c.pad)
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < Tn; ++t)
        kpm[(size_t)b * Tn + t] = (t >= Tn - 4 - 3 * b) || (t % 9 == 2);
  const uint8_t *kp = c.pad ? kpm.data() : nullptr;
  std::vector<float> rot;
  if (lsh) {
    std::normal_distribution<float> nd(0, 1);
    rot.resize((size_t)c.hashes * dh * (c.buckets / 2));
    for (float &r : rot)
      r = nd(rng);
  }
  const float scale = 1.f / std::sqrt((float)dh);
  const uint16_t nanBits = bf16_from_float(NAN).bits;
  const float *qF = x.f.data(), *kF = lsh ? nullptr : qF + E, *vF = qF + (P - 1) * E;
  const bf16_t *qB = x.b.data(), *kB = lsh ? nullptr : qB + E, *vB = qB + (P - 1) * E;

  // Training forwards: f32 (no TF32) on the widened values, then bf16.
  const int64_t fb = forwardBytes(c);
  auto outF = nanv<float>((size_t)(rows * E)), lseF = nanv<float>((size_t)B * H * Tn);
  GuardedScratch wsF(fb), wsB(fb);
  setTf32(false);
  F.ok(tag + " f32 forward",
       forward<float>(c, {qF, kF, vF, ld, outF.data(), lseF.data(), rot.data(), wsF.data()}, scale,
                      kp, dropout));
  auto out = fill_bf16(outF.size(), nanBits), lse = fill_bf16(lseF.size(), nanBits);
  setTf32(true);
  const int rc = forward<bf16_t>(
      c, {qB, kB, vB, ld, out.data(), lse.data(), rot.data(), wsB.data()}, scale, kp, dropout);
  setTf32(false);
  F.ok(tag + " bf16 forward", rc);
  F.ok(tag + " forward scratch guard", wsB.guardIntact() ? 0 : 1);
  same(F, tag + " out", out.data(), E, outF.data(), E, rows, E);
  same(F, tag + " lse", lse.data(), Tn, lseF.data(), Tn, (int64_t)B * H, Tn);

  // f32 backward recomputing the forward, its output into core.
  auto dF = nanv<float>((size_t)(rows * ldg)), coreF = nanv<float>((size_t)(rows * ldo));
  {
    GuardedScratch ws(backwardBytes(c, sizeof(float), 1));
    G.ok(tag + " f32 backward",
         backward<float>(c,
                         {qF, kF, vF, ld, dy.f.data(), ldo, dF.data(),
                          lsh ? nullptr : dF.data() + E, dF.data() + (P - 1) * E, ldg, nullptr,
                          nullptr, coreF.data(), rot.data(), ws.data()},
                         scale, kp, dropout));
  }
  // bf16: 0 with a saved output and lse that are NaN (never read) and core
  // (untouched with them, as f32); 1 recomputing into core; 2 with the bf16
  // forward's own output and lse saved (a backward reading the bf16 lse
  // would differ).
  const int64_t bytes = backwardBytes(c, sizeof(bf16_t), 1);
  G.ok(tag + " bf16 workspace the same for recompute 0 and 1",
       backwardBytes(c, sizeof(bf16_t), 0) == bytes ? 0 : 1);
  auto nanOut = fill_bf16((size_t)(rows * ldo), nanBits), nanLse = fill_bf16(lse.size(), nanBits);
  auto keptOut = fill_bf16((size_t)(rows * ldo), nanBits);
  for (int64_t r = 0; r < rows; ++r)
    memcpy(&keptOut[r * ldo], &out[r * E], sizeof(bf16_t) * E);
  static const char *modes[] = {" saved NaN", " recompute+core", " saved"};
  for (int mode = 0; mode < 3; ++mode) {
    const std::string m = tag + modes[mode];
    GuardedScratch ws(bytes);
    auto d = fill_bf16((size_t)(rows * ldg), nanBits),
         core = fill_bf16((size_t)(rows * ldo), nanBits);
    const bf16_t *so = mode == 0 ? nanOut.data() : mode == 2 ? keptOut.data() : nullptr;
    const bf16_t *sl = mode == 0 ? nanLse.data() : mode == 2 ? lse.data() : nullptr;
    setTf32(true);
    const int brc = backward<bf16_t>(c,
                                     {qB, kB, vB, ld, dy.b.data(), ldo, d.data(),
                                      lsh ? nullptr : d.data() + E, d.data() + (P - 1) * E, ldg, so,
                                      sl, mode < 2 ? core.data() : nullptr, rot.data(), ws.data()},
                                     scale, kp, dropout);
    setTf32(false);
    G.ok(m + " bf16 backward", brc);
    G.ok(m + " workspace guard", ws.guardIntact() ? 0 : 1);
    static const char *names[2][3] = {{"dq", "dk", "dv"}, {"dqk", "dv", ""}};
    auto check = tcBackward(c) ? near : same;
    for (int i = 0; i < P; ++i)
      check(G, m + " " + names[lsh][i], d.data() + i * E, ldg, dF.data() + i * E, ldg, rows, E);
    G.ok(m + " gradient row gaps untouched", gapTouched(d.data(), ldg, rows, P * E, nanBits));
    if (mode == 1) {
      check(G, m + " core", core.data(), ldo, coreF.data(), ldo, rows, E);
      G.ok(m + " core row gaps untouched", gapTouched(core.data(), ldo, rows, E, nanBits));
    } else {
      G.ok(m + " core untouched", gapTouched(core.data(), ldo, rows, 0, nanBits));
    }
  }
}

int main() {
  std::vector<Case> dense, dilated, lsh;
  // dh 32 (DHS 32), the models' packed rows.
  dense.push_back({"dense dh32", NNCC_ATTN_DENSE, 2, 40, 2, 32, 32, false, false});
  // dh 64, causal, padding; odd q/k/v stride (no 16-byte loads) and padded
  // dout / gradient rows.
  {
    Case d{"dense dh64 causal pad odd-stride", NNCC_ATTN_DENSE, 1, 70, 2, 64, 0, true, true};
    d.ldExtra = 1, d.doutExtra = 3, d.gradExtra = 8;
    dense.push_back(d);
  }
  // dh 128 (32-query tiles in dK/dV), causal, padding, T = 75 (not a
  // multiple of the 64-row CTAs nor of the tiles).
  {
    Case d{"dense dh128 causal pad T75", NNCC_ATTN_DENSE, 1, 75, 1, 128, 0, true, true};
    d.gradExtra = 8;
    dense.push_back(d);
  }
  // dh 32, causal, three CTAs of rows (the last one partial): causal tile
  // skipping in both kernels.
  dense.push_back({"dense dh32 causal T130", NNCC_ATTN_DENSE, 1, 130, 1, 32, 0, true, false});
  // A head size without its own kernel (padded to 64), padding, two CTAs of
  // queries: the widened path (bit for bit).
  {
    Case d{"dense dh40 pad", NNCC_ATTN_DENSE, 2, 72, 2, 40, 0, false, true};
    d.gradExtra = 5;
    dense.push_back(d);
  }
  {
    Case d{"dilated dh32 w6 d2 globals pad", NNCC_ATTN_DILATED, 2, 64, 2, 32, 0, false, true};
    d.window = 6, d.dilation = 2, d.globals = {0, 3, 40, 3, 90};
    d.doutExtra = 2, d.gradExtra = 4;
    dilated.push_back(d);
    // dh 128, dilation 3 (three classes, 32-query dK/dV tiles), causal,
    // global tokens, no padding; T 70.
    Case e{"dilated dh128 w6 d3 causal globals", NNCC_ATTN_DILATED, 1, 70, 1, 128, 0, true,
           false};
    e.window = 6, e.dilation = 3, e.globals = {50, 4};
    dilated.push_back(e);
    d.name = "dilated dh24 w4 d2 causal globals", d.dh = 24, d.dhs = 0, d.causal = true;
    d.pad = false, d.Tn = 50, d.B = 1, d.globals = {7, 1};
    d.doutExtra = 0, d.gradExtra = 0, d.ldExtra = 0;
    dilated.push_back(d);
  }
  {
    // T a multiple of the chunk, padding; T not a multiple, causal, dh 64.
    Case l{"lsh dh32 T64 chunk16 r2 pad", NNCC_ATTN_LSH, 2, 64, 2, 32, 0, false, true};
    l.hashes = 2, l.buckets = 8, l.chunk = 16;
    lsh.push_back(l);
    l.name = "lsh dh64 T45 chunk16 r2 causal", l.dh = 64, l.B = 1, l.Tn = 45;
    l.causal = true, l.pad = false, l.buckets = 4, l.doutExtra = 1, l.gradExtra = 3;
    lsh.push_back(l);
  }
  struct Kind {
    const char *name;
    const std::vector<Case> &cases;
  };
  for (const Kind &k : {Kind{"dense", dense}, Kind{"dilated", dilated}, Kind{"lsh", lsh}}) {
    Tally F(std::string("bf16 ") + k.name + " attention train forward");
    Tally G(std::string("bf16 ") + k.name + " attention backward");
    tcWorst = 0;
    for (const Case &c : k.cases)
      for (double dropout : {0.0, 0.2})
        run(F, G, c, dropout);
    F.report("0 ulps");
    char tc[112];
    snprintf(tc, sizeof tc, "widened 0 ulps, tensor cores within %.2g of max|f32|", tcWorst);
    G.report(k.name == std::string("lsh") ? "0 ulps" : tc);
  }
  return finish();
}
