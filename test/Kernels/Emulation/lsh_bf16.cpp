// CUDA-emulation parity of the bf16 LSH attention forward:
// launch_lsh_attention<bf16_t> (bf16 qk, v and out; fp32 rotations,
// normalised keys, per-round outputs and arithmetic) against
// launch_lsh_attention<float> on the same values widened to fp32 (exact)
// with the same fp32 rotations. The bf16 launch widens every row it reads
// and computes what the fp32 launch computes, in the same order: the same
// buckets, the same fp32 output, rounded once to bf16. So the check is bit
// for bit: bf16 out == bf16_from_float(f32 out) for every element (any
// bf16 rounding inside, a wrong bucket or a mixed-up intermediate breaks
// it). The fp32 launch is checked against the CPU kernel too (loosely:
// the f32 parity itself is cuda-emu-attention.test's). Rotations: drawn
// (lsh_rotations_kernel<bf16_t>: the f32 draw, bit for bit) or given as
// bf16 (lsh_rotations_acc<bf16_t>: widened). The launch must stay inside
// lsh_attention_scratch_bytes(..., sizeof(float)) (a guard after it).
// Nncc's convention and Hugging Face's (flags kLshHfConvention).
#include "nncc/Kernels/CUDA/LshAttention.cuh"
#include "nncc/Kernels/Kernels.h"

#include "emu_bf16.h"

#include <cstring>

using namespace nncc::kernels;
using namespace nncc::kernels::cuda;
using namespace emutest;

struct Case {
  const char *name;
  int B, Tn, H, dh, hashes, chunk;
  bool causal, pad;
  int buckets = 0;  // 0: drawn rotations (lsh_num_buckets); else given
  int ldExtra = 0;  // row stride 2 E + ldExtra (odd: no 16-byte loads)
  int same = 0;     // same_bucket flags: kLshSameBucket, or kLshHfConvention (Hugging Face's)
  int dhs = 0;      // the launchers' DHS
};

template <int DHS, typename T>
static int launch(const Case &c, int nb, acc_t<T> scale, const T *qk, const T *v, int64_t ld,
                  const acc_t<T> *rot, T *out, const uint8_t *kp, void *ws) {
  return launch_lsh_attention<T, DHS>(c.dh, c.B, c.Tn, c.H, c.hashes, nb, c.chunk, c.causal,
                                      scale, c.same, qk, v, ld, rot, out, (int64_t)c.H * c.dh,
                                      kp, ws, nullptr);
}

template <typename T>
static int launchCase(const Case &c, int nb, acc_t<T> scale, const T *qk, const T *v,
                      int64_t ld, const acc_t<T> *rot, T *out, const uint8_t *kp, void *ws) {
  if (c.dhs == 64)
    return launch<64>(c, nb, scale, qk, v, ld, rot, out, kp, ws);
  return launch<0>(c, nb, scale, qk, v, ld, rot, out, kp, ws);
}

/// Scratch of `bytes` (0xff: NaN for fp32 reads) and a guard after it.
struct Scratch {
  static constexpr size_t kGuard = 4096;
  std::vector<char> m;
  size_t n;
  explicit Scratch(size_t bytes) : m(bytes + kGuard, (char)0xff), n(bytes) {
    memset(m.data() + n, 0x5a, kGuard);
  }
  bool guardIntact() const {
    for (size_t i = n; i < m.size(); ++i)
      if (m[i] != 0x5a)
        return false;
    return true;
  }
};

static void run(Group &G, Group &C, const Case &c) {
  const int B = c.B, Tn = c.Tn, H = c.H, dh = c.dh, E = H * dh;
  const int64_t ld = 2 * E + c.ldExtra;
  std::normal_distribution<float> nd(0, 1);
  Bf16Values drawn = normal_bf16((size_t)B * Tn * ld);
  const std::vector<bf16_t> &qkv = drawn.b;
  const std::vector<float> &qkvF = drawn.f;
  std::vector<uint8_t> kpm((size_t)B * Tn, 0);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < Tn; ++t)
      kpm[(size_t)b * Tn + t] = c.pad && ((t >= Tn - 4 - 3 * b) || (t % 9 == 2));
  const uint8_t *kp = c.pad ? kpm.data() : nullptr;
  const std::string tag = c.name;

  // Rotations [hashes, dh, nb/2] (HF: [H, dh, hashes, nb/2]): the bf16
  // launch's (fp32) and the f32 one's.
  const bool given = c.buckets > 0, hf = (c.same & kLshHfConvention) != 0;
  const int nb = given ? c.buckets : (int)lsh_num_buckets(Tn, c.chunk);
  const int64_t nrot = (int64_t)(hf ? H : 1) * c.hashes * dh * (nb / 2);
  std::vector<float> rot(nrot, NAN), rotF(nrot, NAN);
  std::vector<bf16_t> rotB(nrot);
  if (given) {
    for (auto &r : rotB)
      r = bf16_from_float(nd(rng));
    for (int64_t i = 0; i < nrot; ++i)
      rotF[i] = bf16_to_float(rotB[i]);
    const float *w = lsh_rotations_acc<bf16_t>(rotB.data(), nrot, rot.data(), nullptr);
    G.ok(tag + " given rotations widened", w == rot.data() && rot == rotF ? 0 : 1);
    G.ok(tag + " f32 rotations in place",
         lsh_rotations_acc<float>(rotF.data(), nrot, nullptr, nullptr) == rotF.data() ? 0 : 1);
  } else {
    // (The emulation's spelling of kernel<<<grid, 256>>>(args).)
    ::emu::launch(lsh_rotations_kernel<bf16_t>, dim3(grid_for(nrot, 256)), dim3(256), 0, nullptr,
                  "lsh_rotations_kernel", [&](auto... a) { lsh_rotations_kernel<bf16_t>(a...); })(
        nrot, (uint64_t)9, rot.data());
    ::emu::launch(lsh_rotations_kernel<float>, dim3(grid_for(nrot, 256)), dim3(256), 0, nullptr,
                  "lsh_rotations_kernel", [&](auto... a) { lsh_rotations_kernel<float>(a...); })(
        nrot, (uint64_t)9, rotF.data());
    G.ok(tag + " drawn rotations = the f32 draw",
         memcmp(rot.data(), rotF.data(), nrot * sizeof(float)) == 0 ? 0 : 1);
  }

  const float scale = hf ? 1.f : 1.f / std::sqrt((float)dh);
  const int64_t bytes = lsh_attention_scratch_bytes(B, Tn, H, dh, c.hashes, sizeof(float));
  // f32 reference launch on the widened values (fp32 SIMT kernels: no TF32).
  unsetenv("NNCC_CUDA_ALLOW_TF32");
  Scratch wsF(bytes);
  auto outF = nanv<float>((size_t)B * Tn * E);
  if (!G.ok(tag + " f32 launch", launchCase<float>(c, nb, scale, qkvF.data(), qkvF.data() + E,
                                                   ld, rotF.data(), outF.data(), kp,
                                                   wsF.m.data())))
    return;
  // bf16 launch (TF32 allowed: it must not change the bf16 path).
  setenv("NNCC_CUDA_ALLOW_TF32", "1", 1);
  Scratch ws(bytes);
  std::vector<bf16_t> out(outF.size(), bf16_from_float(NAN));
  const int rc = launchCase<bf16_t>(c, nb, scale, qkv.data(), qkv.data() + E, ld, rot.data(),
                                    out.data(), kp, ws.m.data());
  unsetenv("NNCC_CUDA_ALLOW_TF32");
  if (!G.ok(tag + " bf16 launch", rc))
    return;
  G.ok(tag + " scratch guard", ws.guardIntact() ? 0 : 1);
  size_t bad = 0, firstBad = 0;
  std::vector<float> outW(out.size());
  for (size_t x = 0; x < out.size(); ++x) {
    outW[x] = bf16_to_float(out[x]);
    if (out[x].bits != bf16_from_float(outF[x]).bits && bad++ == 0)
      firstBad = x;
  }
  if (bad)
    printf("  %s: %zu of %zu outputs differ from bf16(f32 out), first at [%zu]: %.9g vs %.9g\n",
           c.name, bad, out.size(), firstBad, outW[firstBad], outF[firstBad]);
  G.ok(tag + " out == bf16(f32 out)", (long)bad);
  // What the rounding costs: at most 2^-8 relative per element.
  G.cmp(tag + " out vs f32 out", outF, outW);

  // The f32 launch against the CPU kernel (rounding, and fp32 sums in
  // another order: 1e-5 of the scale).
  nncc_attention_params p;
  memset(&p, 0, sizeof(p));
  p.kind = NNCC_ATTN_LSH;
  p.causal = c.causal;
  p.rotations = rotF.data();
  p.n_hashes = c.hashes;
  p.n_buckets = nb;
  p.chunk = c.chunk;
  p.same_bucket_only = c.same & kLshSameBucket;
  p.lsh_convention = hf ? NNCC_LSH_HF : NNCC_LSH_NNCC;
  auto wsC = garbage(nncc_attention_workspace_size(&p, B, Tn, H, dh, sizeof(float)));
  auto outC = nanv<float>(outF.size());
  if (C.ok(tag + " cpu", nncc_attention_f32(&p, B, Tn, H, dh, qkvF.data(), qkvF.data(),
                                             qkvF.data() + E, ld, outC.data(), E, kp,
                                             (void *)wsC.data(), (int32_t *)nullptr, nullptr)))
    C.cmp(tag + " f32 out vs cpu", outC, outF);
}

int main() {
  std::vector<Case> cs = {
      // T a multiple of the chunk, drawn rotations, the DHS = 64 launcher.
      {"dh64 T128 chunk32 r2", 2, 128, 2, 64, 2, 32, false, false, 0, 0, 0, 64},
      // T not a multiple, causal, padding, given rotations.
      {"dh64 T100 chunk24 r1 causal pad given", 2, 100, 2, 64, 1, 24, true, true, 8},
      // Chunks of two 64-query CTAs, keys over several tiles.
      {"dh32 T150 chunk70 r2 pad", 1, 150, 2, 32, 2, 70, false, true},
      // Head size padded to 32 (scalar loads), three rounds, causal, padding.
      {"dh15 T61 chunk8 r3 causal pad given", 2, 61, 2, 15, 3, 8, true, true, 4},
      // Chunk 1: queries no round offers a key attend to themselves.
      {"dh32 T40 chunk1 r2 pad", 1, 40, 2, 32, 2, 1, false, true},
      // Rows not 16-byte aligned (odd stride): scalar widening loads.
      {"dh64 T70 chunk16 r2 odd stride causal", 1, 70, 2, 64, 2, 16, true, false, 0, 3},
      // Same-bucket attention, dh 128.
      {"dh128 T45 chunk20 r2 same-bucket pad given", 1, 45, 1, 128, 2, 20, false, true, 4, 0, 1},
      // Past the tile kernels' head sizes: one query per thread.
      {"dh136 T23 chunk6 r2 causal", 1, 23, 2, 136, 2, 6, true, false},
      // Hugging Face's convention: drawn per-head rotations, look-back across
      // rounds; given ones with causal padding; the standard path (T <= chunk).
      {"hf dh64 T100 chunk24 r2 drawn", 2, 100, 2, 64, 2, 24, false, false, 0, 0,
       kLshHfConvention},
      {"hf dh32 T61 chunk8 r3 causal pad given", 2, 61, 2, 32, 3, 8, true, true, 4, 3,
       kLshHfConvention},
      {"hf dh32 T20 chunk32 r2 causal pad", 1, 20, 2, 32, 2, 32, true, true, 4, 0,
       kLshHfConvention},
  };
  {
    // Bit for bit (see the top); the rounding, at most 2^-8 of an element
    // (half a bf16 ulp), stays below 4e-3 of the largest.
    Group G("bf16 lsh attention forward", 4e-3);
    Group C("f32 lsh attention forward vs cpu", 1e-5);
    for (const Case &c : cs)
      run(G, C, c);
  }
  return finish();
}
