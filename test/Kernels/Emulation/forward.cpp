// CUDA-emulation parity of forward kernels with a CPU twin: layer norm
// (Norm.cuh), dropout / zoneout masks (Elementwise.cuh), reduce
// (Tensor.cuh), the losses (Loss.cuh), dense flash attention (Attention.cuh) at small shapes.
#include "nncc/Kernels/CUDA/Attention.cuh"
#include "nncc/Kernels/CUDA/Elementwise.cuh"
#include "nncc/Kernels/CUDA/Loss.cuh"
#include "nncc/Kernels/CUDA/Norm.cuh"
#include "nncc/Kernels/CUDA/Tensor.cuh"
#include "nncc/Kernels/CUDA/Token.cuh"
#include "nncc/Kernels/Kernels.h"

#include "emu_test.h"

using namespace nncc::kernels;
using namespace nncc::kernels::cuda;
using namespace emutest;

CPU2(layer_norm)
CPU2(dropout)
CPU2(zoneout)
CPU2(mse_loss)
CPU2(cross_entropy)
CPU2(bce_with_logits)
CPU2(attention)

template <typename T> void layerNorm(Group &G) {
  for (auto [rows, N] : {std::pair<int64_t, int64_t>{1, 1}, {3, 7}, {4, 300}, {9, 256}, {2, 1025}, {2, 7000}})
    for (int var = 0; var < 3; ++var) {
      const bool res = var >= 1, affine = var >= 1, outs = var == 2;
      auto x = rnd<T>(rows * N, 2.0), r = rnd<T>(rows * N), gamma = rnd<T>(N, 1.0),
           beta = rnd<T>(N);
      auto yC = nanv<T>(rows * N), yG = nanv<T>(rows * N), sC = nanv<T>(rows * N),
           sG = nanv<T>(rows * N), mC = nanv<T>(rows), mG = nanv<T>(rows), rC = nanv<T>(rows),
           rG = nanv<T>(rows);
      G.ok("cpu ln", cpu_layer_norm<T>(rows, N, x.data(), res ? r.data() : nullptr,
                                       affine ? gamma.data() : nullptr,
                                       affine ? beta.data() : nullptr, 1e-5, yC.data(),
                                       outs ? sC.data() : nullptr, outs ? mC.data() : nullptr,
                                       outs ? rC.data() : nullptr));
      G.ok("cuda ln", launch_layer_norm<T>(rows, N, x.data(), res ? r.data() : nullptr,
                                           affine ? gamma.data() : nullptr,
                                           affine ? beta.data() : nullptr, (T)1e-5, yG.data(),
                                           outs ? sG.data() : nullptr, outs ? mG.data() : nullptr,
                                           outs ? rG.data() : nullptr, nullptr));
      const std::string tag = "ln " + std::to_string(rows) + "x" + std::to_string(N);
      G.cmp(tag + " y", yC, yG, 1e-3);
      if (outs) {
        G.cmp(tag + " sum", sC, sG);
        G.cmp(tag + " mean", mC, mG, 1e-3);
        G.cmp(tag + " rstd", rC, rG);
      }
    }
}

/// Dropout (and zoneout) of n elements starting `sh` elements into the
/// buffers: n % 4 == 0 with aligned buffers takes the vector kernel, other
/// n and shifted buffers the scalar one.
template <typename T> void dropoutCase(Group &G, int64_t n, double p, int sh) {
  auto xs = rnd<T>(n + sh), prev = rnd<T>(n);
  auto yC = nanv<T>(n + sh), yG = nanv<T>(n + sh);
  std::vector<uint8_t> mC(n + sh, 7), mG(n + sh, 7);
  const T *x = xs.data() + sh;
  G.ok("cpu dropout", cpu_dropout<T>(n, p, (uint64_t)1234, (uint64_t)n * 3, x, yC.data() + sh,
                                     mC.data() + sh));
  G.ok("cuda dropout", launch_dropout<T>(n, p, 1234, (uint64_t)n * 3, x, yG.data() + sh,
                                         mG.data() + sh, nullptr));
  const std::string tag = "dropout n" + std::to_string(n) + " p" + std::to_string(p) +
                          (sh ? " shifted" : "");
  G.cmp(tag + " mask", mC, mG);
  // p is a double on both sides: the same scale 1 / (1 - p), bit for bit.
  G.cmp(tag + " y", yC.data() + sh, yG.data() + sh, n, 1e-30, 0.0);
  auto zC = nanv<T>(n), zG = nanv<T>(n);
  G.ok("cpu zoneout",
       cpu_zoneout<T>(n, p, (uint64_t)99, (uint64_t)5, x, prev.data(), zC.data()));
  G.ok("cuda zoneout",
       launch_zoneout<T>(n, (float)p, 99, 5, x, prev.data(), zG.data(), nullptr));
  G.cmp("zoneout n" + std::to_string(n), zC, zG);
}

template <typename T> void dropout(Group &G) {
  for (int64_t n : {1, 1000, 1003, 5000})
    for (double p : {0.0, 0.1, 0.5, 0.9})
      dropoutCase<T>(G, n, p, 0);
  for (double p : {0.1, 0.5})
    dropoutCase<T>(G, 1000, p, 1);
}

/// The GEMM epilogue y = act(y + bias) + residual in place against
/// linear_epilogue (Common.h, the CPU's per-element function): N a multiple
/// of the vector width with aligned rows takes the vector kernel; odd N and
/// the buffers shifted by one element the scalar one. Rows beyond the
/// grid's kEpilogueGridRows (CTAs loop over rows), rows longer than a CTA,
/// every activation.
template <typename T> void epilogue(Group &G) {
  struct Shape {
    int64_t M, N;
    int sh;
  };
  for (Shape sp : {Shape{3, 8, 0}, Shape{7, 1040, 0}, Shape{5, 7, 0}, Shape{9, 16, 1},
                   Shape{2, 3, 0}, Shape{kEpilogueGridRows + 5, 8, 0},
                   Shape{kEpilogueGridRows + 3, 3, 0}})
    for (int act : {(int)ActNone, (int)ActRelu, (int)ActLeakyRelu, (int)ActGeluErf,
                    (int)ActGeluTanh, (int)ActTanh, (int)ActSigmoid})
      for (int flags = 0; flags < 4; ++flags) {
        const bool hasBias = flags & 1, hasRes = flags & 2;
        const int64_t n = sp.M * sp.N;
        auto y0 = rnd<T>(n + sp.sh, 2.0), bias = rnd<T>(sp.N + sp.sh), res = rnd<T>(n + sp.sh);
        const T alpha = (T)0.01;
        std::vector<T> ref(n);
        for (int64_t i = 0; i < n; ++i)
          ref[i] = linear_epilogue(y0[sp.sh + i], hasBias ? bias.data() + sp.sh : nullptr,
                                   (int)(i % sp.N), act, alpha,
                                   hasRes ? res.data() + sp.sh + i : nullptr);
        std::vector<T> y = y0;
        G.ok("cuda epilogue",
             launch_linear_epilogue<T>(sp.M, sp.N, y.data() + sp.sh,
                                       hasBias ? bias.data() + sp.sh : nullptr, act, alpha,
                                       hasRes ? res.data() + sp.sh : nullptr, nullptr));
        G.cmp("epilogue " + std::to_string(sp.M) + "x" + std::to_string(sp.N) + " act " +
                  std::to_string(act) + " flags " + std::to_string(flags) +
                  (sp.sh ? " shifted" : ""),
              ref.data(), y.data() + sp.sh, (size_t)n);
      }
}

/// Reference reduce: sum (or mean) over the masked axes, double.
template <typename T>
std::vector<T> reduceRef(const std::vector<int64_t> &shape, uint32_t mask, int mean,
                         const std::vector<T> &x) {
  const int rank = (int)shape.size();
  int64_t nout = 1, nred = 1;
  for (int d = 0; d < rank; ++d) (mask >> d & 1 ? nred : nout) *= shape[d];
  std::vector<double> acc(nout, 0.0);
  std::vector<int64_t> idx(rank, 0);
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t rest = (int64_t)i, o = 0;
    for (int d = rank - 1; d >= 0; --d) idx[d] = rest % shape[d], rest /= shape[d];
    for (int d = 0; d < rank; ++d)
      if (!(mask >> d & 1)) o = o * shape[d] + idx[d];
    acc[o] += (double)x[i];
  }
  std::vector<T> y(nout);
  for (int64_t o = 0; o < nout; ++o) y[o] = (T)(mean ? acc[o] / (double)nred : acc[o]);
  return y;
}

template <typename T> void reduce(Group &G) {
  // The last two: reduced extents over kColSliceRows (256), so the
  // two-pass column sums (several slices, the last one partial) run too,
  // on the leading-dim fast path ([1100, 3] mask 1, [2, 600, 3] mask 3,
  // and every full reduction) and on the general one ([2, 600, 3] mask 2).
  const std::vector<std::vector<int64_t>> shapes = {
      {6}, {3, 5}, {2, 3, 40}, {2, 1, 3, 5}, {300, 7}, {3, 130, 2}, {1100, 3}, {2, 600, 3}};
  for (auto &shape : shapes) {
    const int rank = (int)shape.size();
    int64_t n = 1;
    for (auto s : shape) n *= s;
    for (uint32_t mask = 0; mask < (1u << rank); ++mask)
      for (int mean = 0; mean < 2; ++mean) {
        auto x = rnd<T>(n);
        auto yC = reduceRef<T>(shape, mask, mean, x);
        auto yG = nanv<T>(yC.size());
        ReduceNd r{};
        r.rank = rank;
        r.mask = mask;
        for (int d = 0; d < rank; ++d) r.shape[d] = shape[d];
        int64_t nout = 1, nred = 1;
        for (int d = 0; d < rank; ++d) (mask >> d & 1u ? nred : nout) *= shape[d];
        auto scratch = garbage(reduce_scratch_bytes(nout, nred));
        G.ok("cuda reduce",
             launch_reduce<T>(r, mean, x.data(), yG.data(), scratch.data(), nullptr));
        G.cmp("reduce rank" + std::to_string(rank) + " mask" + std::to_string(mask), yC, yG,
              1e-3);
      }
  }
}

template <typename T> void losses(Group &G) {
  auto scratch = garbage(loss_scratch_bytes());
  for (int64_t n : {1, 300, 70000}) {
    auto a = rnd<T>(n), b = rnd<T>(n);
    T oC = NAN, oG = NAN;
    G.ok("cpu mse", cpu_mse_loss<T>(n, a.data(), b.data(), &oC));
    G.ok("cuda mse", launch_mse_loss<T>(n, a.data(), b.data(), &oG, scratch.data(), nullptr));
    G.cmp("mse n" + std::to_string(n), &oC, &oG, 1);
  }
  for (auto [N, C] : {std::pair<int64_t, int64_t>{1, 1}, {7, 5}, {300, 3}, {40, 300}})
    for (int64_t ignore : {-100L, 1L}) {
      auto logits = rnd<T>(N * C, 4.0);
      std::vector<int64_t> t64(N);
      std::vector<int32_t> t32(N);
      for (int64_t i = 0; i < N; ++i) t32[i] = (int32_t)(t64[i] = (i * 7 + 2) % C);
      if (N > 2) t64[1] = t32[1] = (int32_t)ignore;
      T oC = NAN, oG = NAN, oG32 = NAN;
      int flag = 0;
      G.ok("cpu ce", cpu_cross_entropy<T>(N, C, logits.data(), t64.data(), ignore, &oC));
      G.ok("cuda ce", launch_cross_entropy<T, int64_t>(N, C, logits.data(), t64.data(), ignore,
                                                       &oG, scratch.data(), &flag, 5, nullptr));
      G.ok("cuda ce i32", launch_cross_entropy<T, int32_t>(N, C, logits.data(), t32.data(),
                                                           ignore, &oG32, scratch.data(), &flag, 5,
                                                           nullptr));
      G.ok("ce flag", flag);
      G.cmp("ce N" + std::to_string(N), &oC, &oG, 1);
      G.cmp("ce i32 N" + std::to_string(N), &oC, &oG32, 1);
    }
  {
    // An out-of-range target raises the flag with the launch's code.
    std::vector<int32_t> t = {0, 9, 1};
    auto logits = rnd<T>(3 * 4);
    T o = NAN;
    int flag = 0;
    launch_cross_entropy<T, int32_t>(3, 4, logits.data(), t.data(), -100, &o, scratch.data(),
                                     &flag, 17, nullptr);
    G.ok("ce out-of-range flag != 17", flag - 17);
  }
  for (auto [N, C] : {std::pair<int64_t, int64_t>{1, 1}, {7, 5}, {300, 300}})
    for (int withPw = 0; withPw < 2; ++withPw) {
      auto x = rnd<T>(N * C, 3.0), y = rnd<T>(N * C), pw = rnd<T>(C);
      for (auto &v : y) v += (T)0.5;
      for (auto &v : pw) v += (T)1;
      T oC = NAN, oG = NAN;
      G.ok("cpu bce", cpu_bce_with_logits<T>(N, C, x.data(), y.data(),
                                             withPw ? pw.data() : nullptr, &oC));
      G.ok("cuda bce", launch_bce_with_logits<T>(N, C, x.data(), y.data(),
                                                 withPw ? pw.data() : nullptr, &oG,
                                                 scratch.data(), nullptr));
      G.cmp("bce N" + std::to_string(N), &oC, &oG, 1);
    }
}

template <typename T> void attention(Group &G) {
  for (int dh : {32, 20})
    for (int var = 0; var < 4; ++var) {
      const int B = 2, Tn = 70, H = 2;
      const bool causal = var & 1, withKpm = var & 2;
      const double drop = var == 3 ? 0.2 : 0.0;
      const int64_t ld = (int64_t)H * dh;
      auto q = rnd<T>((size_t)B * Tn * ld, 1.0), k = rnd<T>((size_t)B * Tn * ld, 1.0),
           v = rnd<T>((size_t)B * Tn * ld, 1.0);
      std::vector<uint8_t> kpm((size_t)B * Tn, 0);
      for (int t = 60; t < Tn; ++t) kpm[(size_t)1 * Tn + t] = 1;
      nncc_attention_params p{};
      p.kind = NNCC_ATTN_DENSE;
      p.causal = causal;
      p.dropout = drop;
      p.dropout_seed = 77;
      p.dropout_offset = 3;
      auto oC = nanv<T>(q.size()), oG = nanv<T>(q.size()), lC = nanv<T>((size_t)B * H * Tn),
           lG = nanv<T>((size_t)B * H * Tn);
      std::vector<char> ws(nncc_attention_workspace_size(&p, B, Tn, H, dh, sizeof(T)) + 64);
      G.ok("cpu attention", cpu_attention<T>(&p, (int64_t)B, (int64_t)Tn, (int64_t)H, (int64_t)dh,
                                             q.data(), k.data(), v.data(), ld, oC.data(), ld,
                                             withKpm ? kpm.data() : nullptr, (void *)ws.data(),
                                             (int32_t *)nullptr, lC.data()));
      G.ok("cuda attention",
           launch_flash_attention_train<T>(dh, B, Tn, H, q.data(), k.data(), v.data(), ld,
                                           oG.data(), ld, withKpm ? kpm.data() : nullptr, causal,
                                           (T)(1.0 / std::sqrt((double)dh)), lG.data(), drop, 77,
                                           3, nullptr));
      const std::string tag = "flash dh" + std::to_string(dh) + " v" + std::to_string(var);
      G.cmp(tag + " out", oC, oG, 1e-2);
      G.cmp(tag + " lse", lC, lG, 1);
    }
}

int main() {
  { Group G("layer_norm f64", 1e-13); layerNorm<double>(G); }
  { Group G("layer_norm f32", 2e-5); layerNorm<float>(G); }
  { Group G("dropout/zoneout f64", 0); dropout<double>(G); }
  { Group G("dropout/zoneout f32", 0); dropout<float>(G); }
  // The same per-element function on both sides (device math: erf, tanh, exp).
  { Group G("linear epilogue f64", 1e-15); epilogue<double>(G); }
  { Group G("linear epilogue f32", 1e-6); epilogue<float>(G); }
  // f64: the slices are added in another order than the CPU's single pass.
  { Group G("reduce f64", 1e-13); reduce<double>(G); }
  { Group G("reduce f32", 1e-6); reduce<float>(G); }
  { Group G("losses f64", 1e-13); losses<double>(G); }
  { Group G("losses f32", 1e-6); losses<float>(G); }
  { Group G("flash attention f64", 1e-13); attention<double>(G); }
  { Group G("flash attention f32", 2e-5); attention<float>(G); }
  return finish();
}
