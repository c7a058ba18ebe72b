// CUDA-emulation parity: runtime/include/nncc/Kernels/CUDA/{Loss,Norm,
// Token,Tensor}Backward.cuh (loss, layer-norm, embedding backward,
// broadcast_axes) against the CPU
// kernels of libnncc_kernels.so and nncc::grad::broadcast_axes.
#include "nncc/Kernels/CUDA/LossBackward.cuh"
#include "nncc/Kernels/CUDA/NormBackward.cuh"
#include "nncc/Kernels/CUDA/TensorBackward.cuh"
#include "nncc/Kernels/CUDA/TokenBackward.cuh"
#include "nncc/Kernels/GradKernels.h"
#include "nncc/Kernels/Kernels.h"

#include "emu_test.h"

using namespace nncc::kernels::cuda;
using namespace emutest;

CPU2(mse_loss_backward)
CPU2(bce_with_logits_backward)
CPU2(cross_entropy_backward)
CPU2(layer_norm_backward)
CPU2(embedding_backward)
CPU2(embedding_backward_i32)

template <typename T> void losses(Group &G) {
  for (int64_t n : {1, 7, 300, 1000}) {
    auto a = rnd<T>(n), b = rnd<T>(n);
    for (int withG = 0; withG < 2; ++withG) {
      T g = (T)0.75;
      auto dC = nanv<T>(n), dtC = nanv<T>(n), dG = nanv<T>(n);
      G.ok("cpu mse", cpu_mse_loss_backward<T>(n, a.data(), b.data(), withG ? &g : nullptr,
                                               dC.data(), dtC.data()));
      G.ok("cuda mse", launch_mse_loss_backward<T>(n, a.data(), b.data(), withG ? &g : nullptr,
                                                   dG.data(), nullptr));
      G.cmp("mse n" + std::to_string(n), dC, dG);
    }
  }
  for (auto [N, C] : {std::pair<int64_t, int64_t>{1, 1}, {5, 3}, {33, 17}, {300, 2}}) {
    auto x = rnd<T>(N * C, 3.0), y = rnd<T>(N * C, 0.5), pw = rnd<T>(C, 0.5);
    for (auto &v : y) v += (T)0.5;
    for (auto &v : pw) v += (T)1.0;
    for (int withPw = 0; withPw < 2; ++withPw) {
      T g = (T)-1.5;
      auto dC = nanv<T>(N * C), dG = nanv<T>(N * C);
      G.ok("cpu bce", cpu_bce_with_logits_backward<T>(N, C, x.data(), y.data(),
                                                      withPw ? pw.data() : nullptr, &g, dC.data()));
      G.ok("cuda bce", launch_bce_with_logits_backward<T>(N, C, x.data(), y.data(),
                                                          withPw ? pw.data() : nullptr, &g,
                                                          dG.data(), nullptr));
      G.cmp("bce", dC, dG);
    }
  }
}

template <typename T, typename I> void crossEntropy(Group &G) {
  for (auto [N, C] : {std::pair<int64_t, int64_t>{1, 1}, {4, 5}, {9, 300}, {70, 3}})
    for (int64_t ignore : {-100L, 2L})
      for (int allIgnored = 0; allIgnored < 2; ++allIgnored) {
        auto logits = rnd<T>(N * C, 4.0);
        std::vector<int64_t> t64(N);
        std::vector<I> tI(N);
        for (int64_t i = 0; i < N; ++i) {
          t64[i] = allIgnored ? ignore : (i * 7 + 3) % C;
          if (!allIgnored && i % 3 == 1) t64[i] = ignore;
          tI[i] = (I)t64[i];
        }
        T g = (T)0.5;
        for (int withG = 0; withG < 2; ++withG) {
          auto dC = nanv<T>(N * C), dG = nanv<T>(N * C);
          auto scratch = garbage(cross_entropy_backward_scratch_bytes());
          G.ok("cpu ce", cpu_cross_entropy_backward<T>(N, C, logits.data(), t64.data(), ignore,
                                                       withG ? &g : nullptr, dC.data()));
          G.ok("cuda ce", launch_cross_entropy_backward<T, I>(N, C, logits.data(), tI.data(),
                                                              ignore, withG ? &g : nullptr,
                                                              dG.data(), scratch.data(), nullptr));
          G.cmp("ce N" + std::to_string(N) + " C" + std::to_string(C), dC, dG);
        }
      }
}

template <typename T> void layerNorm(Group &G) {
  for (auto [rows, N] : {std::pair<int64_t, int64_t>{1, 1}, {3, 7}, {5, 300}, {9, 256}, {2, 1000}, {2, 1500}, {300, 5}, {1100, 40}})
    for (int var = 0; var < 4; ++var) {
      const bool res = var & 1, gam = var & 2, dsum = var == 3, grads = var != 1;
      auto x = rnd<T>(rows * N, 2.0), r = rnd<T>(rows * N), gamma = rnd<T>(N, 1.0),
           dy = rnd<T>(rows * N), ds = rnd<T>(rows * N);
      const double eps = 1e-5;
      auto dxC = nanv<T>(rows * N), dxG = nanv<T>(rows * N), dgC = nanv<T>(N), dgG = nanv<T>(N),
           dbC = nanv<T>(N), dbG = nanv<T>(N);
      auto scratch = garbage(layer_norm_backward_scratch_bytes(rows, N));
      G.ok("cpu ln", cpu_layer_norm_backward<T>(
                         rows, N, x.data(), res ? r.data() : nullptr, gam ? gamma.data() : nullptr,
                         (const T *)nullptr, (const T *)nullptr, eps, dy.data(),
                         dsum ? ds.data() : nullptr, dxC.data(), grads ? dgC.data() : nullptr,
                         grads ? dbC.data() : nullptr));
      G.ok("cuda ln", launch_layer_norm_backward<T>(
                          rows, N, x.data(), res ? r.data() : nullptr, gam ? gamma.data() : nullptr,
                          eps, dy.data(), dsum ? ds.data() : nullptr, dxG.data(),
                          grads ? dgG.data() : nullptr, grads ? dbG.data() : nullptr,
                          scratch.data(), nullptr));
      const std::string tag = "ln " + std::to_string(rows) + "x" + std::to_string(N) + " v" +
                              std::to_string(var);
      G.cmp(tag + " dx", dxC, dxG, 1.0); // N = 1: dx = 0 up to rounding
      if (grads) {
        G.cmp(tag + " dgamma", dgC, dgG);
        G.cmp(tag + " dbeta", dbC, dbG);
      }
    }
}

template <typename T, typename I> void embedding(Group &G) {
  // The last shapes: several radix tiles (1024 positions), two and three
  // 8-bit digit passes (V > 255, V > 65535), an id whose run is longer than
  // one stage of the segment sums (128 positions).
  for (auto [n, V, E] : {std::tuple<int64_t, int64_t, int64_t>{0, 3, 2}, {1, 1, 1}, {20, 7, 5},
                         {50, 11, 130}, {2100, 300, 3}, {1500, 70000, 2}})
    for (int64_t pad : {-1L, 2L}) {
      std::vector<I> idx(n);
      for (int64_t i = 0; i < n; ++i)
        idx[i] = n > 1000 && i % 3 == 0 ? (I)7
                                        : (I)((uint64_t)(i * 2654435761u + 1) % (uint64_t)V);
      if (n <= 1000)
        for (int64_t i = 0; i < n; ++i)
          idx[i] = (I)((i * 5 + 1) % V);
      auto dy = rnd<T>(n * E);
      // Out-of-range ids add nothing on the GPU (the CPU rejects them): the
      // CPU reference gets a valid id with a zero dy row in their place.
      std::vector<I> idxC = idx;
      auto dyC = dy;
      if (n > 3) {
        idx[3] = (I)-1, idx[n - 1] = (I)V;
        for (int64_t i : {int64_t(3), n - 1}) {
          idxC[i] = 0;
          for (int64_t e = 0; e < E; ++e) dyC[i * E + e] = 0;
        }
      }
      auto dC = nanv<T>(V * E), dG = nanv<T>(V * E);
      int rc;
      if constexpr (std::is_same_v<I, int32_t>)
        rc = cpu_embedding_backward_i32<T>(n, V, E, idxC.data(), dyC.data(), pad, dC.data());
      else
        rc = cpu_embedding_backward<T>(n, V, E, idxC.data(), dyC.data(), pad, dC.data());
      G.ok("cpu emb", rc);
      std::vector<char> scratch(embedding_backward_scratch_bytes(n, V), (char)0xff);
      G.ok("cuda emb", launch_embedding_backward<T, I>(n, V, E, idx.data(), dy.data(), pad,
                                                       dG.data(), scratch.data(), nullptr));
      G.cmp("emb n" + std::to_string(n) + " E" + std::to_string(E), dC, dG);
    }
}

template <typename T> void broadcastAxes(Group &G) {
  const std::vector<std::vector<int64_t>> shapes = {{}, {5}, {3, 4}, {2, 3, 70}, {2, 1, 3, 5}};
  for (auto &shape : shapes) {
    const int rank = (int)shape.size();
    int64_t n = 1;
    for (auto s : shape) n *= s;
    for (uint32_t mask = 0; mask < (1u << rank); ++mask)
      for (int mean = 0; mean < 2; ++mean) {
        int64_t m = 1;
        for (int d = 0; d < rank; ++d)
          if (!(mask >> d & 1)) m *= shape[d];
        auto dy = rnd<T>(m);
        auto oC = nanv<T>(n), oG = nanv<T>(n);
        nncc::grad::broadcast_axes<T>(rank, shape.data(), mask, mean, dy.data(), oC.data());
        ReduceNd r{};
        r.rank = rank;
        r.mask = mask;
        for (int d = 0; d < rank; ++d) r.shape[d] = shape[d];
        G.ok("cuda broadcast", launch_broadcast_axes<T>(r, mean, dy.data(), oG.data(), nullptr));
        G.cmp("broadcast rank" + std::to_string(rank) + " mask" + std::to_string(mask), oC, oG);
      }
  }
}

int main() {
  {
    Group G("loss backward (mse, bce) f64", 1e-13);
    losses<double>(G);
  }
  {
    Group G("loss backward (mse, bce) f32", 1e-6);
    losses<float>(G);
  }
  {
    Group G("cross-entropy backward i64 f64", 1e-13);
    crossEntropy<double, int64_t>(G);
  }
  {
    Group G("cross-entropy backward i32 f64", 1e-13);
    crossEntropy<double, int32_t>(G);
  }
  {
    Group G("cross-entropy backward i32 f32", 1e-6);
    crossEntropy<float, int32_t>(G);
  }
  {
    Group G("layer_norm backward f64", 1e-12);
    layerNorm<double>(G);
  }
  {
    Group G("layer_norm backward f32", 1e-5);
    layerNorm<float>(G);
  }
  {
    Group G("embedding backward i64 f64", 0); // the CPU's order: same bits
    embedding<double, int64_t>(G);
  }
  {
    Group G("embedding backward i32 f32", 0);
    embedding<float, int32_t>(G);
  }
  {
    Group G("broadcast_axes f64", 1e-15);
    broadcastAxes<double>(G);
  }
  return finish();
}
