// CUDA-emulation parity: runtime/include/nncc/Kernels/CUDA/Token.cuh and
// TokenBackward.cuh (launch_mask_tokens i32 / i64, launch_sample with and
// without the rows mask, launch_linear_sample over several chunks,
// launch_axial_position and its backward) against nncc_mask_tokens_* /
// nncc_sample_* / nncc_linear_sample_* / nncc_axial_position{,_backward}_* of
// libnncc_kernels.so. Masks, masked tokens and samples must match exactly;
// the axial sums too (the same double accumulation in the same order).
// The bf16 instantiations against the float ones on the widened values:
// the same samples, and the axial forward's outputs rounded once.
#include "nncc/Kernels/CUDA/Token.cuh"
#include "nncc/Kernels/CUDA/TokenBackward.cuh"
#include "nncc/Kernels/Kernels.h"

#include "emu_bf16.h"
#include "emu_test.h"

using namespace nncc::kernels;
using namespace nncc::kernels::cuda;
using namespace emutest;

CPU2(sample)
CPU2(linear_sample)
CPU2(axial_position)
CPU2(axial_position_backward)

/// Exact comparison of integer (or bit-identical) arrays.
template <typename A, typename B>
void same(Group &G, const std::string &what, const std::vector<A> &ref, const std::vector<B> &got) {
  G.cmp(what, ref.data(), got.data(), std::min(ref.size(), got.size()), 1.0, 0.0);
}

template <typename I> void maskTokens(Group &G) {
  // The last shape is longer than kMaskSharedKeys: keys recomputed, not in
  // shared memory.
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{1, 1}, {3, 10}, {4, 100}, {2, 1000},
                         {1, kMaskSharedKeys + 12}})
    for (double p : {0.0, 0.005, 0.15, 0.29, 0.5, 0.9}) {
      if (n > kMaskSharedKeys && p > 0.01) continue; // O(n k) per position: keep it small
      std::vector<I> tok(rows * n);
      for (int64_t i = 0; i < rows * n; ++i)
        tok[i] = (I)(sizeof(I) == 8 ? (int64_t)1e12 + i * 977 : i * 31 + 5);
      const int64_t maskId = sizeof(I) == 8 ? (int64_t)5e12 : 103;
      std::vector<I> mC(rows * n, (I)-7), mG(rows * n, (I)-7);
      std::vector<uint8_t> fC(rows * n, 7), fG(rows * n, 7);
      int rc;
      if constexpr (sizeof(I) == 8)
        rc = nncc_mask_tokens_i64(rows, n, p, maskId, 42, 11, tok.data(), mC.data(), fC.data());
      else
        rc = nncc_mask_tokens_i32(rows, n, p, maskId, 42, 11, tok.data(), mC.data(), fC.data());
      G.ok("cpu mask_tokens", rc);
      G.ok("cuda mask_tokens", launch_mask_tokens<I>(rows, n, p, maskId, 42, 11, tok.data(),
                                                     mG.data(), fG.data(), nullptr));
      const std::string tag = "mask " + std::to_string(rows) + "x" + std::to_string(n) + " p" +
                              std::to_string(p);
      same(G, tag + " tokens", mC, mG);
      same(G, tag + " mask", fC, fG);
    }
}

template <typename T> void sample(Group &G) {
  for (auto [rows, V] : {std::pair<int64_t, int64_t>{1, 1}, {5, 7}, {6, 300}, {3, 1000}})
    for (int withMask = 0; withMask < 2; ++withMask) {
      auto logits = rnd<T>(rows * V, 3.0);
      if (rows > 2) {
        for (int64_t v = 0; v < V; ++v) logits[1 * V + v] = (T)0.25; // constant row
        for (int64_t v = 0; v < V; v += 2) logits[2 * V + v] = (T)-INFINITY;
      }
      std::vector<uint8_t> rm(rows);
      for (int64_t r = 0; r < rows; ++r) rm[r] = r % 3 != 1;
      std::vector<int32_t> oC(rows, -1), oG(rows, -1);
      const uint8_t *m = withMask ? rm.data() : nullptr;
      G.ok("cpu sample", cpu_sample<T>(rows, V, (uint64_t)9, (uint64_t)rows, logits.data(), m,
                                       oC.data()));
      G.ok("cuda sample",
           launch_sample<T>(rows, V, 9, (uint64_t)rows, logits.data(), m, oG.data(), nullptr));
      same(G, "sample " + std::to_string(rows) + "x" + std::to_string(V), oC, oG);
    }
  {
    // A row of -inf only: no class beats -inf; both return 0.
    const int64_t V = 40;
    std::vector<T> logits(V, (T)-INFINITY);
    std::vector<int32_t> oC(1, -1), oG(1, -1);
    G.ok("cpu sample", cpu_sample<T>(1, V, (uint64_t)1, (uint64_t)0, logits.data(),
                                     (const uint8_t *)nullptr, oC.data()));
    G.ok("cuda sample", launch_sample<T>(1, V, 1, 0, logits.data(), nullptr, oG.data(), nullptr));
    same(G, "sample -inf row", oC, oG);
  }
}

template <typename T> void linearSample(Group &G, bool big) {
  cublasHandle_t blas;
  cublasCreate(&blas);
  struct S {
    int64_t N, K, V;
  };
  std::vector<S> shapes = {{1, 1, 1}, {9, 4, 17}, {20, 8, 300}};
  if (big) shapes.push_back({7, 3, (1 << 19) + 3}); // chunks of 3 rows: 3 + 3 + 1
  for (S s : shapes)
    for (int var = 0; var < 4; ++var) {
      const bool bias = var & 1, withMask = var & 2;
      auto x = rnd<T>(s.N * s.K, 2.0), w = rnd<T>(s.V * s.K, 2.0), b = rnd<T>(s.V, 2.0);
      std::vector<uint8_t> rm(s.N);
      for (int64_t r = 0; r < s.N; ++r) rm[r] = r % 3 != 1;
      const uint8_t *m = withMask ? rm.data() : nullptr;
      std::vector<int32_t> oC(s.N, -1), oG(s.N, -1);
      auto wsC = garbage(nncc_linear_sample_workspace_size(s.N, s.K, s.V, sizeof(T)));
      auto wsG = garbage(linear_sample_scratch_bytes(s.N, s.V, sizeof(T)));
      G.ok("cpu linear_sample",
           cpu_linear_sample<T>(s.N, s.K, s.V, (uint64_t)3, (uint64_t)77, x.data(), w.data(),
                                bias ? b.data() : nullptr, m, (void *)wsC.data(), oC.data()));
      G.ok("cuda linear_sample",
           launch_linear_sample<T>(blas, s.N, s.K, s.V, 3, 77, x.data(), w.data(),
                                   bias ? b.data() : nullptr, m, wsG.data(), oG.data(), nullptr));
      same(G,
           "linear_sample N" + std::to_string(s.N) + " V" + std::to_string(s.V) + " chunk" +
               std::to_string(nncc_linear_ce_chunk_rows(s.N, s.V)) + " v" + std::to_string(var),
           oC, oG);
    }
  cublasDestroy(blas);
}

template <typename T> void axial(Group &G) {
  struct S {
    int64_t B, Tn, n1, n2, d1, d2;
  };
  for (S s : {S{1, 1, 1, 1, 1, 1}, S{2, 12, 3, 4, 2, 3}, S{3, 10, 3, 4, 5, 1},
              S{2, 70, 8, 9, 4, 6}, S{0, 5, 2, 3, 2, 2}}) {
    const int64_t E = s.d1 + s.d2, n = s.B * s.Tn * E;
    auto x = rnd<T>(n), w0 = rnd<T>(s.n1 * s.d1), w1 = rnd<T>(s.n2 * s.d2), dy = rnd<T>(n);
    auto yC = nanv<T>(n), yG = nanv<T>(n);
    const std::string tag = "axial B" + std::to_string(s.B) + " T" + std::to_string(s.Tn);
    G.ok("cpu axial", cpu_axial_position<T>(s.B, s.Tn, s.n1, s.n2, s.d1, s.d2, x.data(),
                                            w0.data(), w1.data(), yC.data()));
    G.ok("cuda axial", launch_axial_position<T>(s.B, s.Tn, s.n2, s.d1, s.d2, x.data(), w0.data(),
                                                w1.data(), yG.data(), nullptr));
    same(G, tag + " y", yC, yG);
    auto d0C = nanv<T>(s.n1 * s.d1), d0G = nanv<T>(s.n1 * s.d1), d1C = nanv<T>(s.n2 * s.d2),
         d1G = nanv<T>(s.n2 * s.d2);
    G.ok("cpu axial backward",
         cpu_axial_position_backward<T>(s.B, s.Tn, s.n1, s.n2, s.d1, s.d2, dy.data(), d0C.data(),
                                        d1C.data()));
    G.ok("cuda axial backward",
         launch_axial_position_backward<T>(s.B, s.Tn, s.n1, s.n2, s.d1, s.d2, dy.data(),
                                           d0G.data(), d1G.data(), nullptr));
    same(G, tag + " dw0", d0C, d0G);
    same(G, tag + " dw1", d1C, d1G);
  }
}

/// bf16 logits and tables: the bf16 launchers against the float ones on the
/// same values widened (the float launchers are checked against the CPU
/// above). Samples must be the same (the noise is double, the widened
/// logits exact; linear_sample's fp32 logits are the float GEMM's sums);
/// axial outputs the float outputs rounded once (0 ulps; the backward's
/// bf16 instantiation is backward_bf16.cpp's).
void sampleBf16(Group &G) {
  cublasHandle_t blas;
  cublasCreate(&blas);
  for (auto [rows, V] : {std::pair<int64_t, int64_t>{1, 1}, {5, 7}, {6, 300}, {3, 1000}})
    for (int withMask = 0; withMask < 2; ++withMask) {
      Bf16Values logits = normal_bf16((size_t)(rows * V));
      std::vector<uint8_t> rm(rows);
      for (int64_t r = 0; r < rows; ++r) rm[r] = r % 3 != 1;
      const uint8_t *m = withMask ? rm.data() : nullptr;
      std::vector<int32_t> oF(rows, -1), oB(rows, -1);
      G.ok("float sample", launch_sample<float>(rows, V, 9, (uint64_t)rows, logits.f.data(), m,
                                                oF.data(), nullptr));
      G.ok("bf16 sample", launch_sample<bf16_t>(rows, V, 9, (uint64_t)rows, logits.b.data(), m,
                                                oB.data(), nullptr));
      same(G, "bf16 sample " + std::to_string(rows) + "x" + std::to_string(V), oF, oB);
    }
  struct S {
    int64_t N, K, V;
  };
  // The last shape takes chunks of 3 rows (3 + 3 + 1).
  for (S s : {S{1, 1, 1}, S{9, 4, 17}, S{20, 8, 300}, S{7, 3, (1 << 19) + 3}})
    for (int var = 0; var < 4; ++var) {
      const bool bias = var & 1, withMask = var & 2;
      Bf16Values x = normal_bf16((size_t)(s.N * s.K)), w = normal_bf16((size_t)(s.V * s.K)),
                 b = normal_bf16((size_t)s.V);
      std::vector<uint8_t> rm(s.N);
      for (int64_t r = 0; r < s.N; ++r) rm[r] = r % 3 != 1;
      const uint8_t *m = withMask ? rm.data() : nullptr;
      std::vector<int32_t> oF(s.N, -1), oB(s.N, -1);
      auto wsF = garbage(linear_sample_scratch_bytes(s.N, s.V, sizeof(float)));
      auto wsB = garbage(linear_sample_scratch_bytes(s.N, s.V, sizeof(bf16_t)));
      G.ok("float linear_sample",
           launch_linear_sample<float>(blas, s.N, s.K, s.V, 3, 77, x.f.data(), w.f.data(),
                                       bias ? b.f.data() : nullptr, m, wsF.data(), oF.data(),
                                       nullptr));
      G.ok("bf16 linear_sample",
           launch_linear_sample<bf16_t>(blas, s.N, s.K, s.V, 3, 77, x.b.data(), w.b.data(),
                                        bias ? b.b.data() : nullptr, m, wsB.data(), oB.data(),
                                        nullptr));
      same(G, "bf16 linear_sample N" + std::to_string(s.N) + " V" + std::to_string(s.V) + " v" +
                  std::to_string(var),
           oF, oB);
    }
  cublasDestroy(blas);
}

void axialBf16(Bf16UlpGroup &G) {
  struct S {
    int64_t B, Tn, n1, n2, d1, d2;
  };
  for (S s : {S{1, 1, 1, 1, 1, 1}, S{2, 12, 3, 4, 2, 3}, S{3, 10, 3, 4, 5, 1},
              S{2, 70, 8, 9, 4, 6}}) {
    const int64_t E = s.d1 + s.d2, n = s.B * s.Tn * E;
    Bf16Values x = normal_bf16((size_t)n), w0 = normal_bf16((size_t)(s.n1 * s.d1)),
               w1 = normal_bf16((size_t)(s.n2 * s.d2));
    auto yF = nanv<float>(n);
    auto yB = fill_bf16((size_t)n, 0x7fc1);
    const std::string tag = "bf16 axial B" + std::to_string(s.B) + " T" + std::to_string(s.Tn);
    G.ok("float axial", launch_axial_position<float>(s.B, s.Tn, s.n2, s.d1, s.d2, x.f.data(),
                                                     w0.f.data(), w1.f.data(), yF.data(),
                                                     nullptr));
    G.ok("bf16 axial", launch_axial_position<bf16_t>(s.B, s.Tn, s.n2, s.d1, s.d2, x.b.data(),
                                                     w0.b.data(), w1.b.data(), yB.data(),
                                                     nullptr));
    G.cmp(tag + " y", yF, yB);
  }
}

int main() {
  { Group G("mask_tokens i32", 0); maskTokens<int32_t>(G); }
  { Group G("mask_tokens i64", 0); maskTokens<int64_t>(G); }
  { Group G("sample f64", 0); sample<double>(G); }
  { Group G("sample f32", 0); sample<float>(G); }
  { Group G("linear_sample f64", 0); linearSample<double>(G, true); }
  { Group G("linear_sample f32", 0); linearSample<float>(G, false); }
  { Group G("axial_position f64", 0); axial<double>(G); }
  { Group G("axial_position f32", 0); axial<float>(G); }
  { Group G("sample bf16", 0); sampleBf16(G); }
  { Bf16UlpGroup G("axial_position bf16", 0); axialBf16(G); }
  return finish();
}
