// CUDA-emulation parity of attention training: the training forwards
// (launch_{flash,dilated,lsh}_attention_train of Attention.cuh /
// LshAttention.cuh: output and log-sum-exp, dropout) and their backwards
// (AttentionBackward.cuh: launch_{flash,dilated,lsh}_attention_backward from
// the saved output and lse, and recomputing the forward with and without
// `core`) against nncc_attention_* / nncc_attention_backward_* of
// libnncc_kernels.so, with the parameters lib/Target/Launch/AttentionLaunch.cpp
// gives each side. Cases from a throwaway launcher harness (dense causal /
// padded / dh 24 / DHS 32; the tile backwards at dh 32, 64, 128 with empty
// causal rows, dense and banded; dilated window, dilation, global tokens with
// duplicates and one >= T, the CPU's dense-tile mode; LSH rounds, chunks,
// chunk 1 (self-only queries), same-bucket, given rotations), each with and
// without dropout.
#include "nncc/Kernels/CUDA/AttentionBackward.cuh"
#include "nncc/Kernels/Kernels.h"

#include "emu_test.h"

using namespace nncc::kernels::cuda;
using namespace emutest;

CPU2(attention)
CPU2(attention_backward)

struct Case {
  const char *name;
  int kind, B, Tn, H, dh;
  bool causal;
  int pad; // 1: keys t >= T - 4 - 3b and t % 9 == 2 padded; 2: also keys 0, 1 (causal: empty rows)
  double scale = 0; // 0: 1/sqrt(dh) on both sides
  int window = 0, dilation = 1;
  std::vector<int32_t> globals;
  int hashes = 0, buckets = 0, chunk = 0, same = 0;
  int hf = 0; // LSH: 1 = Hugging Face's convention (NNCC_LSH_HF; launcher flag kLshHfConvention)
};

/// The LSH launchers' flags argument of case `c`.
static int lshFlags(const Case &c) { return c.same | (c.hf ? kLshHfConvention : 0); }

template <typename T> std::vector<T> normal(size_t n) {
  std::normal_distribution<double> nd(0, 1);
  std::vector<T> v(n);
  for (auto &x : v) x = (T)nd(rng);
  return v;
}

/// The CPU kernels' parameter block of case `c` (rot: the LSH rotations or
/// null) with attention dropout `dropout` at (seed, offset).
static nncc_attention_params paramsOf(const Case &c, const void *rot, double dropout,
                                      uint64_t seed, uint64_t offset) {
  nncc_attention_params p;
  memset(&p, 0, sizeof(p));
  p.kind = c.kind;
  p.causal = c.causal;
  p.scale = c.scale;
  p.window = c.window;
  p.dilation = c.dilation;
  p.global_pos = c.globals.empty() ? nullptr : c.globals.data();
  p.n_global = (int)c.globals.size();
  p.rotations = rot;
  p.n_hashes = c.hashes;
  p.n_buckets = c.buckets;
  p.chunk = c.chunk;
  p.same_bucket_only = c.same;
  p.lsh_convention = c.hf ? NNCC_LSH_HF : NNCC_LSH_NNCC;
  p.dropout = dropout;
  p.dropout_seed = seed;
  p.dropout_offset = offset;
  return p;
}

/// The TF32 kernel ran: its output `tf32` differs from the fp32 kernel's
/// `fp32` by more than fp32 rounding (relative to the largest output).
template <typename T>
void tf32Ran(Group &G, const std::string &tag, const std::vector<T> &tf32,
             const std::vector<T> &fp32) {
  double md = 0, mx = 1e-30;
  for (size_t x = 0; x < tf32.size(); ++x) {
    md = std::max(md, std::fabs((double)tf32[x] - fp32[x]));
    mx = std::max(mx, std::fabs((double)fp32[x]));
  }
  G.ok(tag + " differs from the FP32 kernel (TF32 ran)", md / mx > 1e-5 ? 0 : 1);
}

template <typename T, int DHS> void run(Group &G, const Case &c, double dropout) {
  const int B = c.B, Tn = c.Tn, H = c.H, dh = c.dh, E = H * dh;
  const bool lsh = c.kind == NNCC_ATTN_LSH;
  // Packed rows as the generated code passes them: [q | k | v] (LSH: [qk | v]).
  const int P = lsh ? 2 : 3, ld = P * E;
  const uint64_t seed = 123, offset = 9;
  auto qkv = normal<T>((size_t)B * Tn * ld), dout = normal<T>((size_t)B * Tn * E);
  std::vector<uint8_t> kpm((size_t)B * Tn, 0);
  if (c.pad)
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < Tn; ++t)
        kpm[(size_t)b * Tn + t] = (t >= Tn - 4 - 3 * b) || (t % 9 == 2) || (c.pad > 1 && t < 2);
  const uint8_t *kp = c.pad ? kpm.data() : nullptr;
  std::vector<T> rot;
  // HF: per-head rotations [H, dh, hashes, buckets / 2].
  if (lsh) rot = normal<T>((size_t)(c.hf ? H : 1) * c.hashes * dh * (c.buckets / 2));
  const int ng = (int)c.globals.size();

  nncc_attention_params p = paramsOf(c, lsh ? rot.data() : nullptr, dropout, seed, offset);
  const T scale = c.scale != 0 ? (T)c.scale : c.hf ? T(1) : T(1) / std::sqrt(T(dh));

  const T *q = qkv.data(), *k = lsh ? qkv.data() : qkv.data() + E, *v = qkv.data() + (P - 1) * E;
  const int64_t wsBytes =
      std::max(nncc_attention_backward_workspace_size(&p, B, Tn, H, dh, sizeof(T)),
               nncc_attention_workspace_size(&p, B, Tn, H, dh, sizeof(T)));
  auto wsC = garbage(wsBytes);
  // CPU: training forward, backward from it, backward recomputing it.
  auto outC = nanv<T>((size_t)B * Tn * E), lseC = nanv<T>((size_t)B * H * Tn),
       outC2 = nanv<T>(outC.size());
  auto dC = nanv<T>(qkv.size()), dC2 = nanv<T>(qkv.size());
  G.ok("cpu attention", cpu_attention<T>(&p, (int64_t)B, (int64_t)Tn, (int64_t)H, (int64_t)dh, q,
                                         k, v, (int64_t)ld, outC.data(), (int64_t)E, kp,
                                         (void *)wsC.data(), (int32_t *)nullptr, lseC.data()));
  for (int rec = 0; rec < 2; ++rec) {
    T *d = rec ? dC2.data() : dC.data();
    G.ok("cpu attention_backward",
         cpu_attention_backward<T>(&p, (int64_t)B, (int64_t)Tn, (int64_t)H, (int64_t)dh, q, k, v,
                                   (int64_t)ld, dout.data(), (int64_t)E, d, lsh ? nullptr : d + E,
                                   d + (P - 1) * E, (int64_t)ld, kp, (void *)wsC.data(),
                                   rec ? outC2.data() : outC.data(),
                                   rec ? (const T *)nullptr : lseC.data()));
  }

  // CUDA training forward.
  const std::string tag = std::string(c.name) + " drop" + std::to_string(dropout).substr(0, 4);
  auto out = nanv<T>(outC.size()), lse = nanv<T>(lseC.size());
  if (c.kind == NNCC_ATTN_DENSE) {
    G.ok(tag + " fwd", launch_flash_attention_train<T, DHS>(dh, B, Tn, H, q, k, v, ld, out.data(),
                                                            E, kp, c.causal, scale, lse.data(),
                                                            dropout, seed, offset, nullptr));
  } else if (c.kind == NNCC_ATTN_DILATED) {
    auto ws = garbage(dilated_attention_scratch_bytes(Tn, ng));
    G.ok(tag + " fwd", launch_dilated_attention_train<T, DHS>(
                           dh, B, Tn, H, q, k, v, ld, out.data(), E, kp, c.causal, scale,
                           c.window, c.dilation, ng ? c.globals.data() : nullptr, ng, lse.data(),
                           dropout, seed, offset, ws.data(), nullptr));
  } else {
    auto ws = garbage(lsh_attention_scratch_bytes(B, Tn, H, dh, c.hashes, sizeof(T)));
    G.ok(tag + " fwd", launch_lsh_attention_train<T, DHS>(
                           dh, B, Tn, H, c.hashes, c.buckets, c.chunk, c.causal, scale, lshFlags(c),
                           q, v, ld, rot.data(), out.data(), E, kp, lse.data(), dropout, seed,
                           offset, ws.data(), nullptr));
  }
  G.cmp(tag + " out", outC, out);
  G.cmp(tag + " lse", lseC, lse);

  // CUDA backward: 0 from the saved output and lse, 1 recomputing into
  // `core`, 2 recomputing into the scratch (saved_lse NULL).
  for (int mode = 0; mode < 3; ++mode) {
    const bool recompute = mode > 0;
    auto d = nanv<T>(qkv.size()), core = nanv<T>(outC.size());
    const T *so = recompute ? nullptr : out.data(), *sl = recompute ? nullptr : lse.data();
    T *co = mode == 1 ? core.data() : nullptr;
    int64_t bytes;
    if (c.kind == NNCC_ATTN_DENSE)
      bytes = flash_attention_backward_workspace_bytes(B, Tn, H, dh, sizeof(T), recompute);
    else if (c.kind == NNCC_ATTN_DILATED)
      bytes = dilated_attention_backward_workspace_bytes(B, Tn, H, dh, ng, sizeof(T), recompute);
    else
      bytes = lsh_attention_backward_workspace_bytes(B, Tn, H, dh, c.hashes, sizeof(T),
                                                     recompute);
    auto ws = garbage(bytes);
    int rc;
    if (c.kind == NNCC_ATTN_DENSE)
      rc = launch_flash_attention_backward<T, DHS>(
          dh, B, Tn, H, q, k, v, ld, dout.data(), E, d.data(), d.data() + E, d.data() + 2 * E, ld,
          kp, c.causal, scale, dropout, seed, offset, so, sl, co, ws.data(), nullptr);
    else if (c.kind == NNCC_ATTN_DILATED)
      rc = launch_dilated_attention_backward<T, DHS>(
          dh, B, Tn, H, q, k, v, ld, dout.data(), E, d.data(), d.data() + E, d.data() + 2 * E, ld,
          kp, c.causal, scale, c.window, c.dilation, ng ? c.globals.data() : nullptr, ng,
          dropout, seed, offset, so, sl, co, ws.data(), nullptr);
    else
      rc = launch_lsh_attention_backward<T, DHS>(
          dh, B, Tn, H, c.hashes, c.buckets, c.chunk, c.causal, scale, lshFlags(c), q, v, ld,
          rot.data(), dout.data(), E, d.data(), d.data() + E, ld, kp, dropout, seed, offset, so,
          sl, co, ws.data(), nullptr);
    static const char *modes[] = {" d(saved)", " d(recompute+core)", " d(recompute)"};
    G.ok(tag + modes[mode] + " launch", rc);
    G.cmp(tag + modes[mode], recompute ? dC2 : dC, d);
    if (mode == 1) G.cmp(tag + " core", outC2, core);
  }
}

std::vector<Case> cases() {
  std::vector<Case> cs;
  cs.push_back({"dense", NNCC_ATTN_DENSE, 1, 33, 2, 32, false, false});
  cs.push_back({"dense causal pad", NNCC_ATTN_DENSE, 2, 70, 2, 32, true, true});
  cs.push_back({"dense pad dh24 scale0.3", NNCC_ATTN_DENSE, 2, 37, 2, 24, false, true, 0.3});
  // The tile backward at dh 64 and 128 (fp64: other tile shapes), empty causal rows.
  cs.push_back({"dense dh64 causal empty rows", NNCC_ATTN_DENSE, 2, 100, 3, 64, true, 2});
  cs.push_back({"dense dh128 pad", NNCC_ATTN_DENSE, 1, 45, 1, 128, false, true});
  Case d{"dilated w6 d2 globals", NNCC_ATTN_DILATED, 2, 70, 2, 32, false, true};
  d.window = 6, d.dilation = 2, d.globals = {3, 0, 3, 90, 41};
  cs.push_back(d);
  d.name = "dilated causal dh24", d.causal = true, d.dh = 24;
  cs.push_back(d);
  {
    Case e{"dilated dense-tile mode dh24", NNCC_ATTN_DILATED, 2, 70, 2, 24, false, true};
    e.window = 20, e.dilation = 1, e.globals = {3, 0, 3, 90, 41};
    cs.push_back(e);
    e.name = "dilated no globals w3 d3", e.window = 3, e.dilation = 3, e.globals = {};
    e.dh = 32;
    cs.push_back(e);
    // Band tile backward: dilation 1 with globals over several CTAs per
    // class, causal with empty rows, dh 64 and 128.
    Case f{"dilated dh64 w8 d1 globals causal empty rows", NNCC_ATTN_DILATED, 2, 140, 2, 64,
           true, 2};
    f.window = 8, f.dilation = 1, f.globals = {0, 70, 139};
    cs.push_back(f);
    f.name = "dilated dh32 w4 d3 globals causal", f.Tn = 100, f.dh = 32, f.window = 4,
    f.dilation = 3, f.globals = {1, 50}, f.H = 3, f.pad = 1;
    cs.push_back(f);
    f.name = "dilated dh128 w4 d2 globals", f.Tn = 50, f.dh = 128, f.B = 1, f.H = 1,
    f.causal = false, f.dilation = 2, f.globals = {7};
    cs.push_back(f);
  }
  Case l{"lsh causal pad", NNCC_ATTN_LSH, 2, 61, 2, 32, true, true};
  l.hashes = 3, l.buckets = 4, l.chunk = 8;
  cs.push_back(l);
  l.name = "lsh chunk1 pad dh24", l.chunk = 1, l.dh = 24, l.causal = false;
  cs.push_back(l);
  l.name = "lsh same-bucket pad", l.chunk = 6, l.same = 1, l.buckets = 8, l.hashes = 2;
  cs.push_back(l);
  {
    Case m{"lsh no pad", NNCC_ATTN_LSH, 1, 40, 2, 32, false, false};
    m.hashes = 2, m.buckets = 4, m.chunk = 5;
    cs.push_back(m);
    m.name = "lsh chunk1 causal", m.chunk = 1, m.causal = true;
    cs.push_back(m);
    // Chunks of more than one 64-query tile CTA, keys over several tiles.
    Case t{"lsh chunk70 dh64 pad", NNCC_ATTN_LSH, 1, 150, 2, 64, false, true};
    t.hashes = 2, t.buckets = 4, t.chunk = 70;
    cs.push_back(t);
    // dh 128 on the tile backward (f64: 16 keys per dK/dV CTA), causal, padded.
    Case u{"lsh dh128 causal pad", NNCC_ATTN_LSH, 1, 45, 1, 128, true, true};
    u.hashes = 3, u.buckets = 4, u.chunk = 20;
    cs.push_back(u);
    // Past the tile kernels' head sizes: one query per thread.
    t.name = "lsh dh136 causal", t.dh = 136, t.Tn = 23, t.chunk = 6, t.causal = true;
    cs.push_back(t);
  }
  {
    // Hugging Face's convention: one sorted sequence over the rounds with
    // wrap-around look-back (T > chunk, also T not a multiple of chunk),
    // padded keys in their own bucket, causal self-only queries (pad 2), the
    // standard path (T <= chunk), dh past the tile sizes.
    Case h{"lsh hf causal pad", NNCC_ATTN_LSH, 2, 61, 2, 32, true, 2};
    h.hashes = 3, h.buckets = 4, h.chunk = 8, h.hf = 1;
    cs.push_back(h);
    h.name = "lsh hf pad dh24 chunk5", h.causal = false, h.pad = 1, h.dh = 24, h.chunk = 5;
    h.hashes = 2, h.buckets = 8;
    cs.push_back(h);
    h.name = "lsh hf no pad 1 round", h.pad = 0, h.hashes = 1, h.Tn = 40, h.chunk = 4;
    cs.push_back(h);
    h.name = "lsh hf standard path causal pad", h.Tn = 20, h.chunk = 32, h.causal = true;
    h.pad = 1, h.hashes = 2;
    cs.push_back(h);
    h.name = "lsh hf dh136 causal", h.dh = 136, h.Tn = 23, h.chunk = 6, h.B = 1, h.H = 1;
    cs.push_back(h);
  }
  return cs;
}

/// The forward paths alone at larger shapes: the inference launchers
/// (launch_flash_attention<T, dh> / _dyn, launch_dilated_attention_dyn<T,
/// dh|0>) and the training ones with dropout (out and lse), on the tile
/// kernels' head sizes (32/64/128 exact; 15, 24, 40 zero-padded, 15 with
/// unaligned rows: scalar loads), the one-query-per-thread kernels beyond 128
/// (dh 136), several query and key tiles with partial last tiles, and band
/// CTAs of every residue class (short classes, bands clipped at both ends,
/// global tokens inside and outside the bands, global queries over more
/// than one key tile). tf32: fp32 with NNCC_CUDA_ALLOW_TF32=1 (the TF32
/// tensor-core kernel, compared at TF32 accuracy; it must also differ from
/// the FP32 kernel's output, so the TF32 path is known to have run).
template <typename T> void forward(Group &G, bool tf32 = false) {
  std::vector<Case> cs;
  cs.push_back({"dense dh64 causal pad", NNCC_ATTN_DENSE, 2, 150, 2, 64, true, true});
  cs.push_back({"dense dh128", NNCC_ATTN_DENSE, 1, 100, 1, 128, false, false});
  cs.push_back({"dense dh32 T64", NNCC_ATTN_DENSE, 1, 64, 2, 32, true, false});
  cs.push_back({"dense dh15 causal pad", NNCC_ATTN_DENSE, 2, 97, 2, 15, true, true});
  cs.push_back({"dense dh40 pad scale0.3", NNCC_ATTN_DENSE, 1, 70, 2, 40, false, true, 0.3});
  cs.push_back({"dense dh136", NNCC_ATTN_DENSE, 1, 40, 1, 136, true, false});
  {
    Case d{"dilated dh64 w8 d2 pad", NNCC_ATTN_DILATED, 2, 200, 2, 64, false, true};
    d.window = 8, d.dilation = 2, d.globals = {0, 151, 150};
    cs.push_back(d);
    d.name = "dilated dh64 w64 d2 g0 (bench shape)", d.window = 64, d.globals = {0};
    d.pad = false, d.B = 1, d.H = 1;
    cs.push_back(d);
    d.name = "dilated dh32 w6 d3 causal pad", d.Tn = 150, d.dh = 32, d.window = 6;
    d.dilation = 3, d.causal = true, d.pad = true, d.B = 2, d.globals = {77, 5};
    cs.push_back(d);
    d.name = "dilated dh128 w10 d1", d.Tn = 130, d.dh = 128, d.window = 10, d.dilation = 1;
    d.causal = false, d.pad = false, d.B = 1, d.globals = {};
    cs.push_back(d);
    d.name = "dilated dh24 w4 d5 pad", d.Tn = 90, d.dh = 24, d.window = 4, d.dilation = 5;
    d.pad = true, d.B = 2, d.H = 2, d.globals = {89, 2};
    cs.push_back(d);
    // Global queries over more than one 256-key tile of their pass.
    d.name = "dilated dh32 w4 d3 T300 causal", d.Tn = 300, d.dh = 32, d.window = 4;
    d.dilation = 3, d.pad = true, d.causal = true, d.B = 1, d.H = 1, d.globals = {299, 0, 130};
    cs.push_back(d);
    // Dilation beyond T: one query per residue class, bands of one key.
    d.name = "dilated dh32 w4 d30 T20", d.Tn = 20, d.dilation = 30, d.causal = false;
    d.globals = {3};
    cs.push_back(d);
    d.name = "dilated dh136 w4 d2", d.Tn = 40, d.dh = 136, d.window = 4, d.dilation = 2;
    d.pad = false, d.B = 1, d.H = 1, d.globals = {0};
    cs.push_back(d);
  }
  for (const Case &c : cs)
    for (double dropout : {0.0, 0.2}) {
      if (tf32 && c.dh > 128) // the one-query-per-thread kernels have no TF32 form
        continue;
      const int B = c.B, Tn = c.Tn, H = c.H, dh = c.dh, E = H * dh, ld = 3 * E;
      const uint64_t seed = 5, offset = 11;
      auto qkv = normal<T>((size_t)B * Tn * ld);
      std::vector<uint8_t> kpm((size_t)B * Tn, 0);
      if (c.pad)
        for (int b = 0; b < B; ++b)
          for (int t = 0; t < Tn; ++t)
            kpm[(size_t)b * Tn + t] = (t >= Tn - 5 - 7 * b) || (t % 11 == 4);
      const uint8_t *kp = c.pad ? kpm.data() : nullptr;
      const int ng = (int)c.globals.size();
      nncc_attention_params p = paramsOf(c, nullptr, dropout, seed, offset);
      const T scale = c.scale != 0 ? (T)c.scale : T(1) / std::sqrt(T(dh));
      const T *q = qkv.data(), *k = q + E, *v = q + 2 * E;
      auto wsC = garbage(nncc_attention_workspace_size(&p, B, Tn, H, dh, sizeof(T)));
      auto outC = nanv<T>((size_t)B * Tn * E), lseC = nanv<T>((size_t)B * H * Tn);
      G.ok("cpu attention", cpu_attention<T>(&p, (int64_t)B, (int64_t)Tn, (int64_t)H,
                                             (int64_t)dh, q, k, v, (int64_t)ld, outC.data(),
                                             (int64_t)E, kp, (void *)wsC.data(),
                                             (int32_t *)nullptr, lseC.data()));
      const std::string tag = std::string(c.name) + (dropout > 0 ? " train drop0.2" : "");
      const int32_t *gl = ng ? c.globals.data() : nullptr;
      auto ws = garbage(dilated_attention_scratch_bytes(Tn, ng));
      auto launch = [&](std::vector<T> &out, std::vector<T> &lse) -> int {
        if (dropout > 0 && c.kind == NNCC_ATTN_DENSE)
          return launch_flash_attention_train<T>(dh, B, Tn, H, q, k, v, ld, out.data(), E, kp,
                                                 c.causal, scale, lse.data(), dropout, seed,
                                                 offset, nullptr);
        if (dropout > 0)
          return launch_dilated_attention_train<T>(dh, B, Tn, H, q, k, v, ld, out.data(), E, kp,
                                                   c.causal, scale, c.window, c.dilation, gl, ng,
                                                   lse.data(), dropout, seed, offset, ws.data(),
                                                   nullptr);
        if (c.kind == NNCC_ATTN_DENSE && dh == 64)
          return launch_flash_attention<T, 64>(B, Tn, H, q, k, v, ld, out.data(), E, kp,
                                               c.causal, scale, lse.data(), nullptr);
        if (c.kind == NNCC_ATTN_DENSE && dh == 128)
          return launch_flash_attention<T, 128>(B, Tn, H, q, k, v, ld, out.data(), E, kp,
                                                c.causal, scale, lse.data(), nullptr);
        if (c.kind == NNCC_ATTN_DENSE)
          return launch_flash_attention_dyn<T>(dh, B, Tn, H, q, k, v, ld, out.data(), E, kp,
                                               c.causal, scale, lse.data(), nullptr);
        if (dh == 64)
          return launch_dilated_attention_dyn<T, 64>(dh, B, Tn, H, q, k, v, ld, out.data(), E,
                                                     kp, c.causal, scale, c.window, c.dilation,
                                                     gl, ng, ws.data(), nullptr);
        return launch_dilated_attention_dyn<T>(dh, B, Tn, H, q, k, v, ld, out.data(), E, kp,
                                               c.causal, scale, c.window, c.dilation, gl, ng,
                                               ws.data(), nullptr);
      };
      auto out = nanv<T>(outC.size()), lse = nanv<T>(lseC.size());
      if (tf32) setenv("NNCC_CUDA_ALLOW_TF32", "1", 1);
      const int rc = launch(out, lse);
      if (tf32) {
        unsetenv("NNCC_CUDA_ALLOW_TF32");
        auto out32 = nanv<T>(outC.size()), lse32 = nanv<T>(lseC.size());
        G.ok(tag + " fp32 launch", launch(out32, lse32));
        tf32Ran(G, tag, out, out32);
      }
      G.ok(tag + " launch", rc);
      G.cmp(tag + " out", outC, out);
      // The inference launchers of dilated attention keep no lse.
      if (dropout > 0 || c.kind == NNCC_ATTN_DENSE)
        G.cmp(tag + " lse", lseC, lse);
    }
}

/// LSH attention's chunk kernel on TF32 tensor cores (NNCC_CUDA_ALLOW_TF32=1:
/// lsh_chunk_tile_tf32_kernel) against the fp32 CPU kernel at TF32 accuracy,
/// with and without dropout, for every LSH case the tile kernels serve; it
/// must also differ from the fp32 kernel (the TF32 kernel ran).
void lshTf32(Group &G) {
  for (const Case &c : cases())
    for (double dropout : {0.0, 0.2}) {
      if (c.kind != NNCC_ATTN_LSH || c.dh > 128 || c.hf) // HF: no tile kernel yet
        continue;
      const int B = c.B, Tn = c.Tn, H = c.H, dh = c.dh, E = H * dh, ld = 2 * E;
      const uint64_t seed = 77, offset = 3;
      auto qkv = normal<float>((size_t)B * Tn * ld);
      auto rot = normal<float>((size_t)c.hashes * dh * (c.buckets / 2));
      std::vector<uint8_t> kpm((size_t)B * Tn, 0);
      for (int b = 0; b < B; ++b)
        for (int t = 0; t < Tn; ++t)
          kpm[(size_t)b * Tn + t] = c.pad && ((t >= Tn - 4 - 3 * b) || (t % 9 == 2));
      const uint8_t *kp = c.pad ? kpm.data() : nullptr;
      nncc_attention_params p = paramsOf(c, rot.data(), dropout, seed, offset);
      const float scale = 1.f / std::sqrt((float)dh);
      const float *qk = qkv.data(), *v = qkv.data() + E;
      auto wsC = garbage(nncc_attention_workspace_size(&p, B, Tn, H, dh, sizeof(float)));
      auto outC = nanv<float>((size_t)B * Tn * E), lseC = nanv<float>((size_t)B * H * Tn);
      G.ok("cpu attention", nncc_attention_f32(&p, B, Tn, H, dh, qk, qk, v, ld, outC.data(), E,
                                               kp, (void *)wsC.data(), (int32_t *)nullptr,
                                               lseC.data()));
      auto ws = garbage(lsh_attention_scratch_bytes(B, Tn, H, dh, c.hashes, sizeof(float)));
      auto launch = [&](std::vector<float> &out, std::vector<float> &lse) -> int {
        return launch_lsh_attention_train<float>(dh, B, Tn, H, c.hashes, c.buckets, c.chunk,
                                                 c.causal, scale, c.same, qk, v, ld, rot.data(),
                                                 out.data(), E, kp, lse.data(), dropout, seed,
                                                 offset, ws.data(), nullptr);
      };
      const std::string tag = std::string(c.name) + (dropout > 0 ? " drop0.2" : "");
      auto out = nanv<float>(outC.size()), lse = nanv<float>(lseC.size());
      auto out32 = nanv<float>(outC.size()), lse32 = nanv<float>(lseC.size());
      setenv("NNCC_CUDA_ALLOW_TF32", "1", 1);
      G.ok(tag + " tf32 launch", launch(out, lse));
      unsetenv("NNCC_CUDA_ALLOW_TF32");
      G.ok(tag + " fp32 launch", launch(out32, lse32));
      tf32Ran(G, tag, out, out32);
      G.cmp(tag + " out", outC, out);
      G.cmp(tag + " lse", lseC, lse);
    }
}

template <typename T> void attention(Group &G, int kind) {
  for (double dr : {0.0, 0.2})
    for (const Case &c : cases()) {
      if (c.kind != kind) continue;
      run<T, 0>(G, c, dr);
      // The launchers built for one head size only (DHS = 32).
      if (c.dh == 32 && (c.Tn == 33 || c.Tn == 40)) run<T, 32>(G, c, dr);
    }
}

int main() {
  // f64: the same terms in the same order up to the block-wise online
  // softmax and the CPU's tiles: rounding only (worst seen 1.7e-15).
  { Group G("attention forward f64", 1e-13); forward<double>(G); }
  { Group G("attention forward f32", 1e-5); forward<float>(G); }
  // TF32 inputs (10-bit mantissas) against the fp32 CPU kernel.
  { Group G("attention forward tf32", 2e-3); forward<float>(G, true); }
  { Group G("lsh attention forward tf32", 2e-3); lshTf32(G); }
  for (auto [kind, name] : {std::pair<int, const char *>{NNCC_ATTN_DENSE, "dense"},
                            {NNCC_ATTN_DILATED, "dilated"},
                            {NNCC_ATTN_LSH, "lsh"}}) {
    { Group G(std::string(name) + " attention train/backward f64", 1e-13); attention<double>(G, kind); }
    { Group G(std::string(name) + " attention train/backward f32", 1e-5); attention<float>(G, kind); }
  }
  return finish();
}
