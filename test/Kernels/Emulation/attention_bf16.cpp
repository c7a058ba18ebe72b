// CUDA-emulation parity of the BF16 attention forwards: Attention.cuh's
// launchers with bf16_t q, k, v and output (attention_tile_bf16_kernel:
// m16n8k16 BF16 mma with fp32 accumulation; the global rows of dilated
// attention widened to fp32) against the fp32 CPU kernels of
// libnncc_kernels.so run on the same bf16 inputs widened to fp32 (exact).
// The differences are the rounding of the weights to bf16 before P.V and of
// the output: about 2^-9 of the output's scale. The log-sum-exp is fp32 on
// both sides (products of bf16 are exact in fp32). Dropout masks must be the
// CPU's, element for element. Head sizes above 128 are refused.
#include "nncc/Kernels/CUDA/Attention.cuh"
#include "nncc/Kernels/Kernels.h"

#include "emu_bf16.h"

using namespace nncc::kernels;
using namespace nncc::kernels::cuda;
using namespace emutest;

struct Case {
  const char *name;
  int kind, B, Tn, H, dh;
  bool causal, pad;
  double scale = 0; // 0: 1/sqrt(dh)
  int window = 0, dilation = 1;
  std::vector<int32_t> globals;
};

static void run(Group &G, Group &L, const Case &c, double dropout) {
  const int B = c.B, Tn = c.Tn, H = c.H, dh = c.dh, E = H * dh, ld = 3 * E;
  const uint64_t seed = 5, offset = 11;
  Bf16Values drawn = normal_bf16((size_t)B * Tn * ld);
  const std::vector<bf16_t> &qkv = drawn.b;
  const std::vector<float> &qkvF = drawn.f;
  std::vector<uint8_t> kpm((size_t)B * Tn, 0);
  if (c.pad)
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < Tn; ++t)
        kpm[(size_t)b * Tn + t] = (t >= Tn - 5 - 7 * b) || (t % 11 == 4);
  const uint8_t *kp = c.pad ? kpm.data() : nullptr;
  const int ng = (int)c.globals.size();
  const int32_t *gl = ng ? c.globals.data() : nullptr;
  const float scale = c.scale != 0 ? (float)c.scale : 1.f / std::sqrt((float)dh);

  nncc_attention_params p;
  memset(&p, 0, sizeof(p));
  p.kind = c.kind;
  p.causal = c.causal;
  p.scale = c.scale;
  p.window = c.window;
  p.dilation = c.dilation;
  p.global_pos = gl;
  p.n_global = ng;
  p.dropout = dropout;
  p.dropout_seed = seed;
  p.dropout_offset = offset;
  auto wsC = garbage(nncc_attention_workspace_size(&p, B, Tn, H, dh, sizeof(float)));
  auto outC = nanv<float>((size_t)B * Tn * E), lseC = nanv<float>((size_t)B * H * Tn);
  G.ok("cpu attention",
       nncc_attention_f32(&p, B, Tn, H, dh, qkvF.data(), qkvF.data() + E, qkvF.data() + 2 * E,
                          ld, outC.data(), E, kp, (void *)wsC.data(), (int32_t *)nullptr,
                          lseC.data()));

  const bf16_t *q = qkv.data(), *k = q + E, *v = q + 2 * E;
  const bf16_t nanBf16 = bf16_from_float(NAN);
  std::vector<bf16_t> out(outC.size(), nanBf16);
  auto lse = nanv<float>(lseC.size());
  auto ws = garbage(dilated_attention_scratch_bytes(Tn, ng));
  const std::string tag = std::string(c.name) + (dropout > 0 ? " train drop0.2" : "");
  int rc;
  if (dropout > 0 && c.kind == NNCC_ATTN_DENSE)
    rc = launch_flash_attention_train<bf16_t>(dh, B, Tn, H, q, k, v, ld, out.data(), E, kp,
                                              c.causal, scale, lse.data(), dropout, seed, offset,
                                              nullptr);
  else if (dropout > 0)
    rc = launch_dilated_attention_train<bf16_t>(dh, B, Tn, H, q, k, v, ld, out.data(), E, kp,
                                                c.causal, scale, c.window, c.dilation, gl, ng,
                                                lse.data(), dropout, seed, offset, ws.data(),
                                                nullptr);
  else if (c.kind == NNCC_ATTN_DENSE && dh == 64)
    rc = launch_flash_attention<bf16_t, 64>(B, Tn, H, q, k, v, ld, out.data(), E, kp, c.causal,
                                            scale, lse.data(), nullptr);
  else if (c.kind == NNCC_ATTN_DENSE)
    rc = launch_flash_attention_dyn<bf16_t>(dh, B, Tn, H, q, k, v, ld, out.data(), E, kp,
                                            c.causal, scale, lse.data(), nullptr);
  else
    rc = launch_dilated_attention_dyn<bf16_t>(dh, B, Tn, H, q, k, v, ld, out.data(), E, kp,
                                              c.causal, scale, c.window, c.dilation, gl, ng,
                                              ws.data(), nullptr);
  if (!G.ok(tag + " launch", rc))
    return;
  std::vector<float> outF(out.size());
  for (size_t x = 0; x < out.size(); ++x)
    outF[x] = bf16_to_float(out[x]);
  G.cmp(tag + " out", outC, outF);
  // The inference launchers of dilated attention keep no lse.
  if (dropout > 0 || c.kind == NNCC_ATTN_DENSE)
    L.cmp(tag + " lse", lseC, lse);
}

int main() {
  std::vector<Case> cs;
  cs.push_back({"dense dh64 causal pad", NNCC_ATTN_DENSE, 2, 150, 2, 64, true, true});
  cs.push_back({"dense dh128", NNCC_ATTN_DENSE, 1, 100, 1, 128, false, false});
  // Unmasked 128-key tiles (dh <= 64) and a partial last one.
  cs.push_back({"dense dh64 T300", NNCC_ATTN_DENSE, 1, 300, 2, 64, false, false});
  cs.push_back({"dense dh32 T64", NNCC_ATTN_DENSE, 1, 64, 2, 32, true, false});
  cs.push_back({"dense dh15 causal pad", NNCC_ATTN_DENSE, 2, 97, 2, 15, true, true});
  cs.push_back({"dense dh40 pad scale0.3", NNCC_ATTN_DENSE, 1, 70, 2, 40, false, true, 0.3});
  {
    Case d{"dilated dh64 w8 d2 pad", NNCC_ATTN_DILATED, 2, 200, 2, 64, false, true};
    d.window = 8, d.dilation = 2, d.globals = {0, 151, 150};
    cs.push_back(d);
    d.name = "dilated dh32 w6 d3 causal pad", d.Tn = 150, d.dh = 32, d.window = 6;
    d.dilation = 3, d.causal = true, d.globals = {77, 5};
    cs.push_back(d);
    d.name = "dilated dh128 w10 d1", d.Tn = 130, d.dh = 128, d.window = 10, d.dilation = 1;
    d.causal = false, d.pad = false, d.B = 1, d.globals = {};
    cs.push_back(d);
    d.name = "dilated dh24 w4 d5 pad", d.Tn = 90, d.dh = 24, d.window = 4, d.dilation = 5;
    d.pad = true, d.B = 2, d.H = 2, d.globals = {89, 2};
    cs.push_back(d);
  }
  {
    // bf16 rounding of the weights and the output: 2^-9 of the output's
    // scale each, a few of them at worst (seen: 4e-3).
    Group G("bf16 attention forward out", 1e-2);
    Group L("bf16 attention forward lse", 1e-5);
    for (const Case &c : cs)
      for (double dropout : {0.0, 0.2})
        run(G, L, c, dropout);
  }
  {
    // Head sizes beyond the tile kernels have no bf16 kernel: refused.
    Group G("bf16 attention dh > 128 refused", 0);
    std::vector<bf16_t> x(3 * 136 * 8), o(136 * 8);
    const int rc = launch_flash_attention_dyn<bf16_t>(136, 1, 8, 1, x.data(), x.data() + 136,
                                                      x.data() + 272, 408, o.data(), 136,
                                                      nullptr, 0, 0.1f, nullptr, nullptr);
    G.ok("dh 136 gives cudaErrorInvalidValue", rc == cudaErrorInvalidValue ? 0 : 1);
  }
  return finish();
}
