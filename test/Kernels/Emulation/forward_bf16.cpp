// CUDA-emulation parity of the bf16_t instantiations of the forward
// launchers with bf16 storage and fp32 arithmetic: layer norm (both kernels),
// the GEMM epilogue (vector and scalar paths), dropout / zoneout, copy_nd,
// embedding, reduce, the losses and the sinusoidal position encoding. Each runs on bf16 inputs and is compared
// with the float instantiation run on the same values widened to float
// (exact), whose outputs are rounded to bf16 here.
//
// Tolerances: the bf16 kernels do the float kernels' arithmetic in the same
// order and round once when storing (reduce and the losses accumulate in
// double for every T), so every bf16 output must be the rounded float
// output: 0 ulps. (1 ulp would pass a store that truncates instead of
// rounding.) The fp32 statistics of layer norm are compared
// with the float instantiation's within 4 fp32 ulps (fp32 sums in the same
// order; the nearly constant rows make rstd sensitive to eps). Copies and
// gathers must reproduce the source bits, NaN payloads included.
#include "nncc/Kernels/CUDA/Elementwise.cuh"
#include "nncc/Kernels/CUDA/Loss.cuh"
#include "nncc/Kernels/CUDA/Norm.cuh"
#include "nncc/Kernels/CUDA/Tensor.cuh"
#include "nncc/Kernels/CUDA/Token.cuh"

#include "emu_bf16.h"
#include "emu_test.h"

#include <array>
#include <cstring>

using namespace nncc::kernels;
using namespace nncc::kernels::cuda;
using namespace emutest;

namespace {

/// bf16 inputs and the same values as float.
struct Bf16Data {
  std::vector<bf16_t> b;
  std::vector<float> f;
};

Bf16Data rndB(size_t n, double sc = 0.5, double shift = 0) {
  Bf16Data d;
  std::uniform_real_distribution<double> u(-sc, sc);
  d.b.resize(n);
  d.f.resize(n);
  for (size_t i = 0; i < n; ++i) {
    d.b[i] = bf16_from_float((float)(u(rng) + shift));
    d.f[i] = bf16_to_float(d.b[i]);
  }
  return d;
}

std::vector<bf16_t> nanB(size_t n) { return std::vector<bf16_t>(n + 1, bf16_from_float(NAN)); }

using UlpGroup = Bf16UlpGroup;

/// Layer norm: warp-per-row widths (1, 7, 33, 300, 256, 1024) and
/// block-per-row ones (1025, 1999, 4099); var 0: plain, 1: residual and
/// affine, 2: also sum / mean / rstd outputs, 3: as 2 on nearly constant
/// rows (variance far below eps).
void layerNorm(UlpGroup &G, Group &S) {
  const float eps = 1e-5f; // not a bf16 value
  for (auto [rows, N] : {std::pair<int64_t, int64_t>{1, 1}, {3, 7}, {5, 33}, {4, 300}, {9, 256},
                         {2, 1024}, {2, 1025}, {3, 1999}, {2, 4099}})
    for (int var = 0; var < 4; ++var) {
      const bool res = var >= 1, affine = var >= 1, outs = var >= 2;
      const size_t n = (size_t)(rows * N);
      auto x = var == 3 ? rndB(n, 1e-3, 0.25) : rndB(n, 2.0), r = rndB(n),
           gamma = rndB(N, 1.0, 1.0), beta = rndB(N);
      if (var == 3)
        for (size_t i = 0; i < n; ++i)
          r.b[i] = bf16_from_float(0.f), r.f[i] = 0.f;
      auto yF = nanv<float>(n), sF = nanv<float>(n), mF = nanv<float>(rows),
           rF = nanv<float>(rows), mB = nanv<float>(rows), rB = nanv<float>(rows);
      auto yB = nanB(n), sB = nanB(n);
      yB.resize(n), sB.resize(n);
      G.ok("float ln", launch_layer_norm<float>(rows, N, x.f.data(), res ? r.f.data() : nullptr,
                                                affine ? gamma.f.data() : nullptr,
                                                affine ? beta.f.data() : nullptr, eps, yF.data(),
                                                outs ? sF.data() : nullptr,
                                                outs ? mF.data() : nullptr,
                                                outs ? rF.data() : nullptr, nullptr));
      G.ok("bf16 ln", launch_layer_norm<bf16_t>(rows, N, x.b.data(), res ? r.b.data() : nullptr,
                                                affine ? gamma.b.data() : nullptr,
                                                affine ? beta.b.data() : nullptr, eps, yB.data(),
                                                outs ? sB.data() : nullptr,
                                                outs ? mB.data() : nullptr,
                                                outs ? rB.data() : nullptr, nullptr));
      const std::string tag =
          "ln " + std::to_string(rows) + "x" + std::to_string(N) + " var" + std::to_string(var);
      G.cmp(tag + " y", yF, yB);
      if (outs) {
        G.cmp(tag + " sum", sF, sB);
        S.cmp(tag + " mean", mF, mB, 1e-3);
        S.cmp(tag + " rstd", rF, rB);
      }
    }
}

/// The epilogue in place: N % 8 == 0 with 16-byte aligned rows takes the
/// 8-wide bf16 vector path; N = 12 (vector for float, not for bf16), odd N
/// and buffers shifted by one element the scalar one; more rows than the
/// grid's kEpilogueGridRows; every activation.
void epilogue(UlpGroup &G) {
  struct Shape {
    int64_t M, N;
    int sh;
  };
  for (Shape sp : {Shape{3, 8, 0}, Shape{7, 1040, 0}, Shape{4, 12, 0}, Shape{5, 7, 0},
                   Shape{9, 16, 1}, Shape{2, 3, 0}, Shape{kEpilogueGridRows + 5, 8, 0}})
    for (int act : {(int)ActNone, (int)ActRelu, (int)ActLeakyRelu, (int)ActGeluErf,
                    (int)ActGeluTanh, (int)ActTanh, (int)ActSigmoid})
      for (int flags = 0; flags < 4; ++flags) {
        const bool hasBias = flags & 1, hasRes = flags & 2;
        const int64_t n = sp.M * sp.N;
        // 16-byte aligned starts: the vector path needs them.
        auto y0 = rndB(n + 8, 2.0), bias = rndB(sp.N + 8), res = rndB(n + 8);
        const float alpha = 0.01f;
        std::vector<float> yF = y0.f;
        std::vector<bf16_t> yB = y0.b;
        const int s = sp.sh;
        G.ok("float epilogue",
             launch_linear_epilogue<float>(sp.M, sp.N, yF.data() + s,
                                           hasBias ? bias.f.data() + s : nullptr, act, alpha,
                                           hasRes ? res.f.data() + s : nullptr, nullptr));
        G.ok("bf16 epilogue",
             launch_linear_epilogue<bf16_t>(sp.M, sp.N, yB.data() + s,
                                            hasBias ? bias.b.data() + s : nullptr, act, alpha,
                                            hasRes ? res.b.data() + s : nullptr, nullptr));
        G.cmp("epilogue " + std::to_string(sp.M) + "x" + std::to_string(sp.N) + " act " +
                  std::to_string(act) + " flags " + std::to_string(flags) +
                  (s ? " shifted" : ""),
              yF.data() + s, yB.data() + s, (size_t)n);
      }
}

/// Dropout: n % 4 == 0 with 8-byte aligned buffers takes the vector kernel;
/// other n and shifted buffers the scalar one. The masks must be the float
/// kernel's. Zoneout selects elements: bit-exact.
void dropout(UlpGroup &G) {
  for (int sh : {0, 1})
    for (int64_t n : {1, 1000, 1003, 4096})
      for (double p : {0.0, 0.1, 0.5, 0.9}) {
        auto x = rndB(n + sh, 2.0), prev = rndB(n + sh);
        auto yF = nanv<float>(n + sh);
        auto yB = nanB(n + sh);
        yB.resize(n + sh);
        std::vector<uint8_t> mF(n + sh, 7), mB(n + sh, 7);
        G.ok("float dropout", launch_dropout<float>(n, p, 1234, (uint64_t)n * 3, x.f.data() + sh,
                                                    yF.data() + sh, mF.data() + sh, nullptr));
        G.ok("bf16 dropout", launch_dropout<bf16_t>(n, p, 1234, (uint64_t)n * 3,
                                                    x.b.data() + sh, yB.data() + sh,
                                                    mB.data() + sh, nullptr));
        const std::string tag = "dropout n" + std::to_string(n) + " p" + std::to_string(p) +
                                (sh ? " shifted" : "");
        G.ok(tag + " mask differs", mF != mB);
        G.cmp(tag + " y", yF.data() + sh, yB.data() + sh, (size_t)n);
        std::vector<bf16_t> zB = nanB(n);
        zB.resize(n);
        G.ok("bf16 zoneout", launch_zoneout<bf16_t>(n, (float)p, 99, 5, x.b.data() + sh,
                                                    prev.b.data() + sh, zB.data(), nullptr));
        auto zF = nanv<float>(n);
        G.ok("float zoneout", launch_zoneout<float>(n, (float)p, 99, 5, x.f.data() + sh,
                                                    prev.f.data() + sh, zF.data(), nullptr));
        G.cmp("zoneout " + tag, zF, zB);
      }
}

/// Bit patterns as bf16 and as floats (0..65535, exact) for the copies:
/// the float instantiation moves the patterns, the bf16 one the elements.
/// Random patterns after a NaN with a payload, a signalling NaN, -inf and -0.
struct Patterns {
  std::vector<bf16_t> b;
  std::vector<float> f;
};
Patterns patterns(size_t n) {
  Patterns p;
  p.b.resize(n);
  p.f.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const uint16_t bits = (uint16_t)((i * 40503u + (uint64_t)rng()) & 0xffffu);
    p.b[i].bits = bits;
    p.f[i] = (float)bits;
  }
  const uint16_t special[] = {0x7fc1, 0x7f81, 0xff80, 0x8000};
  for (size_t i = 0; i < n && i < 4; ++i)
    p.b[i].bits = special[i], p.f[i] = (float)special[i];
  return p;
}
std::vector<uint16_t> asBits(const std::vector<float> &f) {
  std::vector<uint16_t> b(f.size());
  for (size_t i = 0; i < f.size(); ++i)
    b[i] = (uint16_t)f[i];
  return b;
}

/// copy_nd: a transpose, a slice and a strided concat part (odd extents).
void copyNd(UlpGroup &G) {
  struct C {
    const char *name;
    std::vector<int64_t> shape, dst, src;
    int64_t nsrc, ndst;
  };
  const std::vector<C> cs = {
      {"transpose 3x5x7 (2,0,1)", {7, 3, 5}, {15, 5, 1}, {1, 35, 7}, 105, 105},
      {"slice [1:4, 2:9] of 5x11", {3, 7}, {7, 1}, {11, 1}, 55, 21},
      {"concat part 4x3 into 4x(3+5)", {4, 3}, {8, 1}, {3, 1}, 12, 32},
      {"rank 1 n 1", {1}, {1}, {1}, 1, 1},
  };
  for (const C &c : cs) {
    CopyNd d{};
    d.rank = (int32_t)c.shape.size();
    for (int k = 0; k < d.rank; ++k)
      d.shape[k] = c.shape[k], d.dst_stride[k] = c.dst[k], d.src_stride[k] = c.src[k];
    const int64_t srcOff = std::string(c.name).rfind("slice", 0) == 0 ? 11 + 2 : 0;
    auto src = patterns(c.nsrc);
    std::vector<float> dF(c.ndst, 3.f);
    std::vector<bf16_t> dB(c.ndst, bf16_t{3});
    G.ok("float copy_nd", launch_copy_nd<float>(d, dF.data(), src.f.data() + srcOff, nullptr));
    G.ok("bf16 copy_nd", launch_copy_nd<bf16_t>(d, dB.data(), src.b.data() + srcOff, nullptr));
    G.same(std::string("copy_nd ") + c.name, asBits(dF).data(), dB.data(), dB.size());
  }
}

/// Embedding with i32 and i64 indices; an out-of-range index raises the
/// flag and zeroes its row.
template <typename I> void embedding(UlpGroup &G, const char *iname) {
  for (auto [n, V, E] : {std::tuple<int64_t, int64_t, int64_t>{5, 7, 3}, {17, 100, 33},
                         {1, 1, 1}, {6, 9, 64}})
    for (int bad = 0; bad < 2; ++bad) {
      auto table = patterns(V * E);
      std::vector<I> idx(n);
      for (int64_t i = 0; i < n; ++i)
        idx[i] = (I)((i * 5 + 3) % V);
      if (bad)
        idx[n - 1] = (I)(n % 2 ? V : -1);
      std::vector<float> oF(n * E, 3.f);
      std::vector<bf16_t> oB(n * E, bf16_t{3});
      int flagF = 0, flagB = 0;
      G.ok("float embedding", launch_embedding<float, I>(n, V, E, idx.data(), table.f.data(),
                                                         oF.data(), &flagF, 9, nullptr));
      G.ok("bf16 embedding", launch_embedding<bf16_t, I>(n, V, E, idx.data(), table.b.data(),
                                                         oB.data(), &flagB, 9, nullptr));
      const std::string tag = std::string("embedding ") + iname + " n" + std::to_string(n) +
                              " V" + std::to_string(V) + " E" + std::to_string(E) +
                              (bad ? " bad index" : "");
      G.ok(tag + " flag", flagB != (bad ? 9 : 0) || flagF != flagB);
      G.same(tag, asBits(oF).data(), oB.data(), oB.size());
    }
}

void reduce(UlpGroup &G) {
  // [1100, 3] and [2, 600, 3]: reduced extents over kColSliceRows, so the
  // two-pass column sums run too (fast path and general one).
  const std::vector<std::vector<int64_t>> shapes = {
      {6}, {3, 5}, {2, 3, 41}, {2, 1, 3, 5}, {300, 7}, {1100, 3}, {2, 600, 3}};
  for (auto &shape : shapes) {
    const int rank = (int)shape.size();
    int64_t n = 1;
    for (auto s : shape) n *= s;
    for (uint32_t mask = 0; mask < (1u << rank); ++mask)
      for (int mean = 0; mean < 2; ++mean) {
        auto x = rndB(n, 1.0, 0.25);
        ReduceNd r{};
        r.rank = rank;
        r.mask = mask;
        int64_t nout = 1, nred = 1;
        for (int d = 0; d < rank; ++d) {
          r.shape[d] = shape[d];
          (mask >> d & 1u ? nred : nout) *= shape[d];
        }
        auto scratch = garbage(reduce_scratch_bytes(nout, nred));
        auto yF = nanv<float>(nout);
        auto yB = nanB(nout);
        yB.resize(nout);
        G.ok("float reduce", launch_reduce<float>(r, mean, x.f.data(), yF.data(),
                                                  scratch.data(), nullptr));
        G.ok("bf16 reduce", launch_reduce<bf16_t>(r, mean, x.b.data(), yB.data(),
                                                  scratch.data(), nullptr));
        G.cmp("reduce rank" + std::to_string(rank) + " mask" + std::to_string(mask) +
                  (mean ? " mean" : " sum"),
              yF, yB);
      }
  }
}

void losses(UlpGroup &G) {
  auto scratch = garbage(loss_scratch_bytes());
  // 1 << 21: 32 elements per thread of the capped loss grid.
  for (int64_t n : {1, 301, 70000, 1 << 21}) {
    auto a = rndB(n), b = rndB(n, 0.5, 0.125);
    float oF = NAN;
    bf16_t oB = bf16_from_float(NAN);
    G.ok("float mse", launch_mse_loss<float>(n, a.f.data(), b.f.data(), &oF, scratch.data(),
                                             nullptr));
    G.ok("bf16 mse", launch_mse_loss<bf16_t>(n, a.b.data(), b.b.data(), &oB, scratch.data(),
                                             nullptr));
    G.cmp("mse n" + std::to_string(n), &oF, &oB, 1);
  }
  for (auto [N, C] : {std::pair<int64_t, int64_t>{1, 1}, {7, 5}, {300, 3}, {40, 301}})
    for (int64_t ignore : {-100L, 1L}) {
      auto logits = rndB(N * C, 4.0);
      std::vector<int64_t> t64(N);
      std::vector<int32_t> t32(N);
      for (int64_t i = 0; i < N; ++i) t32[i] = (int32_t)(t64[i] = (i * 7 + 2) % C);
      if (N > 2) t64[1] = t32[1] = (int32_t)ignore;
      float oF = NAN;
      bf16_t oB = bf16_from_float(NAN), oB32 = oB;
      int flag = 0;
      G.ok("float ce", launch_cross_entropy<float, int64_t>(N, C, logits.f.data(), t64.data(),
                                                            ignore, &oF, scratch.data(), &flag,
                                                            5, nullptr));
      G.ok("bf16 ce", launch_cross_entropy<bf16_t, int64_t>(N, C, logits.b.data(), t64.data(),
                                                            ignore, &oB, scratch.data(), &flag,
                                                            5, nullptr));
      G.ok("bf16 ce i32", launch_cross_entropy<bf16_t, int32_t>(N, C, logits.b.data(),
                                                                t32.data(), ignore, &oB32,
                                                                scratch.data(), &flag, 5,
                                                                nullptr));
      G.ok("ce flag", flag);
      G.cmp("ce N" + std::to_string(N) + " C" + std::to_string(C), &oF, &oB, 1);
      G.cmp("ce i32 N" + std::to_string(N) + " C" + std::to_string(C), &oF, &oB32, 1);
    }
  {
    std::vector<int32_t> t = {0, 9, 1};
    auto logits = rndB(3 * 4);
    bf16_t o{};
    int flag = 0;
    launch_cross_entropy<bf16_t, int32_t>(3, 4, logits.b.data(), t.data(), -100, &o,
                                          scratch.data(), &flag, 17, nullptr);
    G.ok("bf16 ce out-of-range flag != 17", flag - 17);
  }
  for (auto [N, C] : {std::pair<int64_t, int64_t>{1, 1}, {7, 5}, {300, 301}})
    for (int withPw = 0; withPw < 2; ++withPw) {
      auto x = rndB(N * C, 3.0), y = rndB(N * C, 0.5, 0.5), pw = rndB(C, 0.5, 1.0);
      float oF = NAN;
      bf16_t oB = bf16_from_float(NAN);
      G.ok("float bce", launch_bce_with_logits<float>(N, C, x.f.data(), y.f.data(),
                                                      withPw ? pw.f.data() : nullptr, &oF,
                                                      scratch.data(), nullptr));
      G.ok("bf16 bce", launch_bce_with_logits<bf16_t>(N, C, x.b.data(), y.b.data(),
                                                      withPw ? pw.b.data() : nullptr, &oB,
                                                      scratch.data(), nullptr));
      G.cmp("bce N" + std::to_string(N) + " C" + std::to_string(C) + (withPw ? " pw" : ""),
            &oF, &oB, 1);
    }
}

/// The sinusoidal position encoding added to x (launch_sinusoidal_position:
/// the fp32 sum rounded once), over a grid that is not a multiple of the
/// block and odd widths.
void sinusoidal(UlpGroup &G) {
  for (auto [B, Tn, E] : {std::array<int64_t, 3>{1, 1, 1}, {2, 9, 7}, {3, 130, 64}}) {
    const size_t n = (size_t)(B * Tn * E);
    auto x = rndB(n, 2.0);
    auto yF = nanv<float>(n);
    auto yB = nanB(n);
    yB.resize(n);
    G.ok("float sinusoidal",
         launch_sinusoidal_position<float>(B, Tn, E, x.f.data(), yF.data(), nullptr));
    G.ok("bf16 sinusoidal",
         launch_sinusoidal_position<bf16_t>(B, Tn, E, x.b.data(), yB.data(), nullptr));
    G.cmp("sinusoidal B" + std::to_string(B) + " T" + std::to_string(Tn) + " E" +
              std::to_string(E),
          yF, yB);
  }
}

} // namespace

int main() {
  {
    UlpGroup G("bf16 layer_norm", 0);
    // fp32 statistics, same order: a few fp32 ulps.
    Group S("bf16 layer_norm stats", 4 * 0x1p-24);
    layerNorm(G, S);
  }
  { UlpGroup G("bf16 linear epilogue", 0); epilogue(G); }
  { UlpGroup G("bf16 dropout/zoneout", 0); dropout(G); }
  {
    UlpGroup G("bf16 copy_nd/embedding", 0);
    copyNd(G);
    embedding<int32_t>(G, "i32");
    embedding<int64_t>(G, "i64");
  }
  // double accumulation for float and bf16 alike: the same sum, rounded.
  { UlpGroup G("bf16 reduce", 0); reduce(G); }
  { UlpGroup G("bf16 losses", 0); losses(G); }
  { UlpGroup G("bf16 sinusoidal position", 0); sinusoidal(G); }
  return finish();
}
