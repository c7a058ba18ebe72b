// CUDA-emulation parity: runtime/include/nncc/Kernels/CUDA/Optim.cuh (sum of
// squares, SGD with momentum / nesterov, Adam, AdamW) against
// nncc_sum_squares_* / nncc_sgd_step_* / nncc_adam_step_*.
#include "nncc/Kernels/CUDA/Optim.cuh"
#include "nncc/Kernels/Kernels.h"

#include "emu_test.h"

using namespace nncc::kernels::cuda;
using namespace emutest;

template <typename T> double cpu_sum_squares(int64_t n, const T *g) {
  if constexpr (std::is_same_v<T, double>) return nncc_sum_squares_f64(n, g);
  else return nncc_sum_squares_f32(n, g);
}
template <typename T, typename... A> int cpu_sgd(A... a) {
  if constexpr (std::is_same_v<T, double>) return nncc_sgd_step_f64(a...);
  else return nncc_sgd_step_f32(a...);
}
template <typename T, typename... A> int cpu_adam(A... a) {
  if constexpr (std::is_same_v<T, double>) return nncc_adam_step_f64(a...);
  else return nncc_adam_step_f32(a...);
}

template <typename T> void sumSquares(Group &G) {
  for (int64_t n : {0, 1, 5, 255, 257, 70000}) {
    auto g = rnd<T>(n, 2.0);
    const double ref = cpu_sum_squares<T>(n, g.data());
    std::vector<double> part(kSumSquaresBlocks, NAN), out(1, NAN);
    G.ok("cuda partials", launch_sum_squares_partials<T>(n, g.data(), part.data(), nullptr));
    G.ok("cuda sum", launch_sum_partials(kSumSquaresBlocks, part.data(), out.data(), nullptr));
    G.cmp("sum_squares n" + std::to_string(n), &ref, out.data(), 1, 1e-30);
  }
}

template <typename T> void sgd(Group &G) {
  const int64_t n = 1000;
  for (double momentum : {0.0, 0.9})
    for (int nesterov = 0; nesterov < 2; ++nesterov)
      for (double wd : {0.0, 0.01})
        for (double gscale : {1.0, 0.5}) {
          if (nesterov && momentum == 0) continue;
          auto p0 = rnd<T>(n), g = rnd<T>(n), b0 = rnd<T>(n);
          auto pC = p0, pG = p0, bC = b0, bG = b0;
          T *bc = momentum ? bC.data() : nullptr, *bg = momentum ? bG.data() : nullptr;
          // Two steps: the first initialises the buffer.
          for (int first = 1; first >= 0; --first) {
            G.ok("cpu sgd", cpu_sgd<T>(n, pC.data(), g.data(), bc, gscale, 0.1, momentum, wd,
                                       nesterov, first));
            G.ok("cuda sgd", launch_sgd_step<T>(n, pG.data(), g.data(), bg, gscale, 0.1, momentum,
                                                wd, nesterov, first, nullptr));
          }
          const std::string tag = "sgd m" + std::to_string(momentum) + " nest" +
                                  std::to_string(nesterov) + " wd" + std::to_string(wd);
          G.cmp(tag + " p", pC, pG);
          if (momentum) G.cmp(tag + " buf", bC, bG);
        }
}

template <typename T> void adam(Group &G) {
  const int64_t n = 700;
  for (int decoupled = 0; decoupled < 2; ++decoupled)
    for (double wd : {0.0, 0.05})
      for (double gscale : {1.0, 0.25}) {
        auto p0 = rnd<T>(n), m0 = rnd<T>(n, 0.1), v0 = rnd<T>(n, 0.1);
        for (auto &x : v0) x = x * x;
        auto pC = p0, pG = p0, mC = m0, mG = m0, vC = v0, vG = v0;
        for (int64_t step = 1; step <= 3; ++step) {
          auto g = rnd<T>(n);
          G.ok("cpu adam", cpu_adam<T>(n, pC.data(), g.data(), mC.data(), vC.data(), gscale, 1e-2,
                                       0.9, 0.999, 1e-8, wd, decoupled, step));
          G.ok("cuda adam", launch_adam_step<T>(n, pG.data(), g.data(), mG.data(), vG.data(),
                                                gscale, 1e-2, 0.9, 0.999, 1e-8, wd, decoupled,
                                                step, nullptr));
        }
        const std::string tag = std::string(decoupled ? "adamw" : "adam") + " wd" +
                                std::to_string(wd) + " gs" + std::to_string(gscale);
        G.cmp(tag + " p", pC, pG);
        G.cmp(tag + " m", mC, mG);
        G.cmp(tag + " v", vC, vG);
      }
}

int main() {
  { Group G("sum_squares f64", 1e-13); sumSquares<double>(G); }
  { Group G("sum_squares f32", 1e-12); sumSquares<float>(G); }
  { Group G("sgd f64", 1e-14); sgd<double>(G); }
  { Group G("sgd f32", 1e-6); sgd<float>(G); }
  { Group G("adam/adamw f64", 1e-14); adam<double>(G); }
  { Group G("adam/adamw f32", 1e-6); adam<float>(G); }
  return finish();
}
