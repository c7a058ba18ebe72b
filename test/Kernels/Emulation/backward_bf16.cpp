// CUDA-emulation parity of the bf16_t instantiations of the backward
// launchers: LossBackward.cuh (mse, BCE-with-logits and cross-entropy
// backward), NormBackward.cuh (layer norm), TokenBackward.cuh (embedding
// and axial position backward) and TensorBackward.cuh (broadcast_axes). Each runs on bf16 inputs and is compared with
// the float instantiation run on the same values widened to float (exact),
// whose outputs are rounded to bf16 here.
//
// Tolerance 0 ulps: the bf16 kernels do the float kernels' arithmetic in
// the same order (double for the losses, layer norm, broadcasts and axial
// sums; fp32 for the embedding segment sums) and round once when storing,
// so every bf16 output must be the rounded float output. (1 ulp would pass
// a store that truncates instead of rounding.) NaN outputs must be NaN in
// both. The float outputs start as NaN and the bf16 ones as a finite
// garbage value, so an element either kernel leaves unwritten fails;
// scratch starts as 0xff bytes.
#include "nncc/Kernels/CUDA/LossBackward.cuh"
#include "nncc/Kernels/CUDA/NormBackward.cuh"
#include "nncc/Kernels/CUDA/TensorBackward.cuh"
#include "nncc/Kernels/CUDA/Token.cuh"
#include "nncc/Kernels/CUDA/TokenBackward.cuh"

#include "emu_bf16.h"

#include <tuple>

using namespace nncc::kernels;
using namespace nncc::kernels::cuda;
using namespace emutest;

namespace {

/// bf16 output buffers start as this (about 1.3e7): finite, so it differs
/// from the float buffers' NaN.
std::vector<bf16_t> outB(size_t n) { return fill_bf16(n, 0x4b4b); }

/// A bf16 scalar (the loss adjoint g) and its float.
struct Scalar {
  bf16_t b;
  float f;
};
Scalar scalar(double v) {
  const bf16_t b = bf16_from_float((float)v);
  return {b, bf16_to_float(b)};
}

std::string dims(std::initializer_list<int64_t> d) {
  std::string s;
  for (int64_t v : d)
    s += (s.empty() ? "" : "x") + std::to_string(v);
  return s;
}

/// mse: n not a multiple of the block, g absent / exact / rounded.
void mse(Bf16UlpGroup &G) {
  for (int64_t n : {1, 7, 300, 1003, 4099})
    for (int gi = 0; gi < 3; ++gi) {
      auto a = uniform_bf16(n, 2.0), b = uniform_bf16(n, 0.5, 0.125);
      const Scalar g = scalar(gi == 1 ? 0.75 : -1.3);
      auto dF = nanv<float>(n);
      auto dB = outB(n);
      G.ok("float mse", launch_mse_loss_backward<float>(n, a.f.data(), b.f.data(),
                                                        gi ? &g.f : nullptr, dF.data(), nullptr));
      G.ok("bf16 mse", launch_mse_loss_backward<bf16_t>(n, a.b.data(), b.b.data(),
                                                        gi ? &g.b : nullptr, dB.data(), nullptr));
      G.cmp("mse n" + std::to_string(n) + " g" + std::to_string(gi), dF, dB);
    }
}

/// BCE with logits: with and without pos_weight, g absent or rounded.
void bce(Bf16UlpGroup &G) {
  for (auto [N, C] : {std::pair<int64_t, int64_t>{1, 1}, {5, 3}, {33, 17}, {300, 2}, {7, 301}})
    for (int withPw = 0; withPw < 2; ++withPw)
      for (int gi = 0; gi < 2; ++gi) {
        auto x = uniform_bf16(N * C, 3.0), y = uniform_bf16(N * C, 0.5, 0.5),
             pw = uniform_bf16(C, 0.5, 1.0);
        const Scalar g = scalar(-1.7);
        auto dF = nanv<float>(N * C);
        auto dB = outB(N * C);
        G.ok("float bce", launch_bce_with_logits_backward<float>(
                              N, C, x.f.data(), y.f.data(), withPw ? pw.f.data() : nullptr,
                              gi ? &g.f : nullptr, dF.data(), nullptr));
        G.ok("bf16 bce", launch_bce_with_logits_backward<bf16_t>(
                             N, C, x.b.data(), y.b.data(), withPw ? pw.b.data() : nullptr,
                             gi ? &g.b : nullptr, dB.data(), nullptr));
        G.cmp("bce " + dims({N, C}) + (withPw ? " pw" : "") + " g" + std::to_string(gi), dF,
              dB);
      }
}

/// Cross-entropy: rows ignored (ignore_index -100 or a class id), every row
/// ignored (inf: g / 0), a target out of range (its row 0); C below and
/// above the block size; g exact or rounded (both only with some rows
/// ignored). (The kernel has no label smoothing.)
template <typename I> void crossEntropy(Bf16UlpGroup &G, const char *iname) {
  for (auto [N, C] : {std::pair<int64_t, int64_t>{1, 1}, {4, 5}, {9, 300}, {37, 3}, {3, 1000}})
    for (int64_t ignore : {-100L, 2L})
      for (int var = 0; var < 3; ++var) { // 0: some ignored, 1: all, 2: one out of range
        auto logits = uniform_bf16(N * C, 4.0);
        std::vector<I> t(N);
        for (int64_t i = 0; i < N; ++i) {
          t[i] = (I)(var == 1 ? ignore : (i * 7 + 3) % C);
          if (var != 1 && i % 3 == 1)
            t[i] = (I)ignore;
        }
        if (var == 2)
          t[0] = (I)(N % 2 ? C : -5);
        for (int gi = var == 1; gi < (var == 2 ? 1 : 2); ++gi) {
          const Scalar g = scalar(gi ? -1.3 : 0.5);
          auto sF = garbage(cross_entropy_backward_scratch_bytes()),
               sB = garbage(cross_entropy_backward_scratch_bytes());
          auto dF = nanv<float>(N * C);
          auto dB = outB(N * C);
          G.ok("float ce", launch_cross_entropy_backward<float, I>(
                               N, C, logits.f.data(), t.data(), ignore, &g.f, dF.data(),
                               sF.data(), nullptr));
          G.ok("bf16 ce", launch_cross_entropy_backward<bf16_t, I>(
                              N, C, logits.b.data(), t.data(), ignore, &g.b, dB.data(),
                              sB.data(), nullptr));
          G.cmp(std::string("ce ") + iname + " " + dims({N, C}) + " ignore" +
                    std::to_string(ignore) + " var" + std::to_string(var) + " g" +
                    std::to_string(gi),
                dF, dB);
        }
      }
}

/// Layer norm backward: warp-per-row widths (every values-per-lane count,
/// rows not a multiple of the CTA's 4) and CTA-per-row ones (N > 1024);
/// 270 and 300 rows: two-pass column sums of dgamma / dbeta (more than 256
/// rows) through the scratch.
/// var bit 0: residual, bit 1: gamma, 3: also dsum, 1: dx only (no
/// dgamma / dbeta), 4: everything on nearly constant rows (variance about
/// eps: rstd depends on eps, which is not a bf16 value). Rows of 1000
/// columns and more run vars 1, 3 and 4 only (their column sums are slow
/// under the emulation).
void layerNorm(Bf16UlpGroup &G) {
  const double eps = 1e-5;
  for (auto [rows, N] :
       {std::pair<int64_t, int64_t>{1, 1}, {3, 7}, {5, 33}, {6, 100}, {9, 256}, {7, 300},
        {2, 1000}, {3, 1025}, {2, 1500}, {300, 5}, {270, 40}})
    for (int var = 0; var < 5; ++var) {
      if (N >= 1000 && (var == 0 || var == 2))
        continue;
      const bool flat = var == 4;
      const bool res = (var & 1) || flat, gam = (var & 2) || flat, dsum = var == 3 || flat,
                 grads = var != 1;
      const size_t n = (size_t)(rows * N);
      auto x = flat ? uniform_bf16(n, 2e-3, 0.25) : uniform_bf16(n, 2.0),
           r = flat ? uniform_bf16(n, 0.0) : uniform_bf16(n), gamma = uniform_bf16(N, 1.0, 0.5),
           dy = uniform_bf16(n), ds = uniform_bf16(n);
      auto sF = garbage(layer_norm_backward_scratch_bytes(rows, N)),
           sB = garbage(layer_norm_backward_scratch_bytes(rows, N));
      auto dxF = nanv<float>(n), dgF = nanv<float>(N), dbF = nanv<float>(N);
      auto dxB = outB(n), dgB = outB(N), dbB = outB(N);
      G.ok("float ln", launch_layer_norm_backward<float>(
                           rows, N, x.f.data(), res ? r.f.data() : nullptr,
                           gam ? gamma.f.data() : nullptr, eps, dy.f.data(),
                           dsum ? ds.f.data() : nullptr, dxF.data(),
                           grads ? dgF.data() : nullptr, grads ? dbF.data() : nullptr,
                           sF.data(), nullptr));
      G.ok("bf16 ln", launch_layer_norm_backward<bf16_t>(
                          rows, N, x.b.data(), res ? r.b.data() : nullptr,
                          gam ? gamma.b.data() : nullptr, eps, dy.b.data(),
                          dsum ? ds.b.data() : nullptr, dxB.data(), grads ? dgB.data() : nullptr,
                          grads ? dbB.data() : nullptr, sB.data(), nullptr));
      const std::string tag = "ln " + dims({rows, N}) + " var" + std::to_string(var);
      G.cmp(tag + " dx", dxF, dxB);
      if (grads) {
        G.cmp(tag + " dgamma", dgF, dgB);
        G.cmp(tag + " dbeta", dbF, dbB);
      }
    }
}

/// Embedding backward: padding ids, ids out of range (they add nothing),
/// several radix tiles and digit passes (V > 255, V > 65535), ids whose
/// runs are longer than a stage of the segment sums (128 positions), E over
/// one CTA's 128 columns and not a multiple of it.
template <typename I> void embedding(Bf16UlpGroup &G, const char *iname, bool big) {
  std::vector<std::tuple<int64_t, int64_t, int64_t>> shapes = {
      {0, 3, 2}, {1, 1, 1}, {20, 7, 5}, {50, 11, 130}, {700, 3, 131}};
  if (big)
    shapes.insert(shapes.end(), {{2100, 300, 3}, {1500, 70000, 2}});
  for (auto [n, V, E] : shapes)
    for (int64_t pad : {-1L, 2L}) {
      std::vector<I> idx(n);
      for (int64_t i = 0; i < n; ++i)
        idx[i] = n > 1000 ? (i % 3 == 0 ? (I)7
                                        : (I)((uint64_t)(i * 2654435761u + 1) % (uint64_t)V))
                          : (I)((i * 5 + 1) % V);
      if (n > 3)
        idx[3] = (I)-1, idx[n - 1] = (I)V;
      auto dy = uniform_bf16(n * E);
      auto sF = garbage(embedding_backward_scratch_bytes(n, V)),
           sB = garbage(embedding_backward_scratch_bytes(n, V));
      auto dF = nanv<float>(V * E);
      auto dB = outB(V * E);
      G.ok("float emb", launch_embedding_backward<float, I>(n, V, E, idx.data(), dy.f.data(), pad,
                                                            dF.data(), sF.data(), nullptr));
      G.ok("bf16 emb", launch_embedding_backward<bf16_t, I>(n, V, E, idx.data(), dy.b.data(),
                                                            pad, dB.data(), sB.data(), nullptr));
      G.cmp(std::string("emb ") + iname + " " + dims({n, V, E}) + " pad" + std::to_string(pad),
            dF, dB);
    }
}

/// broadcast_axes: every mask of ranks 0-3, sum and mean (scale m / n, not
/// a bf16 value); an inf and a NaN among dy's values when there are enough.
void broadcastAxes(Bf16UlpGroup &G) {
  const std::vector<std::vector<int64_t>> shapes = {{},        {5},          {3, 4},
                                                    {2, 3, 70}, {2, 1, 3, 5}, {3, 7, 11}};
  for (auto &shape : shapes) {
    const int rank = (int)shape.size();
    int64_t n = 1;
    for (auto s : shape)
      n *= s;
    for (uint32_t mask = 0; mask < (1u << rank); ++mask)
      for (int mean = 0; mean < 2; ++mean) {
        int64_t m = 1;
        for (int d = 0; d < rank; ++d)
          if (!(mask >> d & 1))
            m *= shape[d];
        auto dy = uniform_bf16(m, 3.0);
        if (m > 4) {
          dy.b[1] = bf16_from_float(INFINITY), dy.f[1] = INFINITY;
          dy.b[m - 2] = bf16_from_float(NAN), dy.f[m - 2] = NAN;
        }
        ReduceNd r{};
        r.rank = rank;
        r.mask = mask;
        for (int d = 0; d < rank; ++d)
          r.shape[d] = shape[d];
        auto oF = nanv<float>(n);
        auto oB = outB(n);
        G.ok("float broadcast",
             launch_broadcast_axes<float>(r, mean, dy.f.data(), oF.data(), nullptr));
        G.ok("bf16 broadcast",
             launch_broadcast_axes<bf16_t>(r, mean, dy.b.data(), oB.data(), nullptr));
        G.cmp("broadcast rank" + std::to_string(rank) + " mask" + std::to_string(mask) +
                  (mean ? " mean" : " sum"),
              oF, oB);
      }
  }
}

/// Axial position backward: grids larger and smaller than Tn, B = 0.
void axial(Bf16UlpGroup &G) {
  struct S {
    int64_t B, Tn, n1, n2, d1, d2;
  };
  for (S s : {S{1, 1, 1, 1, 1, 1}, S{2, 12, 3, 4, 2, 3}, S{3, 10, 3, 4, 5, 1},
              S{2, 70, 8, 9, 4, 6}, S{0, 5, 2, 3, 2, 2}, S{4, 64, 8, 8, 24, 40}}) {
    const int64_t E = s.d1 + s.d2, n = s.B * s.Tn * E;
    auto dy = uniform_bf16(n, 2.0);
    auto d0F = nanv<float>(s.n1 * s.d1), d1F = nanv<float>(s.n2 * s.d2);
    auto d0B = outB(s.n1 * s.d1), d1B = outB(s.n2 * s.d2);
    G.ok("float axial backward",
         launch_axial_position_backward<float>(s.B, s.Tn, s.n1, s.n2, s.d1, s.d2, dy.f.data(),
                                               d0F.data(), d1F.data(), nullptr));
    G.ok("bf16 axial backward",
         launch_axial_position_backward<bf16_t>(s.B, s.Tn, s.n1, s.n2, s.d1, s.d2, dy.b.data(),
                                                d0B.data(), d1B.data(), nullptr));
    const std::string tag = "axial B" + std::to_string(s.B) + " T" + std::to_string(s.Tn) +
                            " " + dims({s.n1, s.n2, s.d1, s.d2});
    G.cmp(tag + " dw0", d0F, d0B);
    G.cmp(tag + " dw1", d1F, d1B);
  }
}

} // namespace

int main() {
  { Bf16UlpGroup G("bf16 mse_loss backward", 0); mse(G); }
  { Bf16UlpGroup G("bf16 bce_with_logits backward", 0); bce(G); }
  {
    Bf16UlpGroup G("bf16 cross_entropy backward", 0);
    crossEntropy<int32_t>(G, "i32");
    crossEntropy<int64_t>(G, "i64");
  }
  { Bf16UlpGroup G("bf16 layer_norm backward", 0); layerNorm(G); }
  {
    Bf16UlpGroup G("bf16 embedding backward", 0);
    embedding<int32_t>(G, "i32", false);
    embedding<int64_t>(G, "i64", true);
  }
  { Bf16UlpGroup G("bf16 broadcast_axes", 0); broadcastAxes(G); }
  { Bf16UlpGroup G("bf16 axial_position backward", 0); axial(G); }
  return finish();
}
