// CUDA-emulation parity: runtime/include/nncc/Kernels/CUDA/Optim.cuh (sum of
// squares, SGD with momentum / nesterov, Adam, AdamW; one tensor and many
// tensors per launch) against nncc_sum_squares_* / nncc_sgd_step_* /
// nncc_adam_step_*; the bf16 (mixed-precision) updates against the float
// kernels on the fp32 master copies.
#include "nncc/Kernels/CUDA/Optim.cuh"
#include "nncc/Kernels/Kernels.h"

#include "emu_bf16.h"
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
    const T *gs[1] = {g.data()};
    OptimTensors<T> ts;
    ts.count = 1, ts.n = &n, ts.g = gs;
    std::vector<double> scratch(sum_squares_scratch_bytes(1, &n) / sizeof(double), NAN), out(1, NAN);
    G.ok("cuda sum_squares", launch_sum_squares<T>(ts, scratch.data(), out.data(), nullptr));
    G.cmp("sum_squares n" + std::to_string(n), &ref, out.data(), 1, 1e-30);
  }
}

/// Many tensors per launch: 40 tensors (more than a launch's table slots),
/// sizes 0 to 20000 with 64-element chunks (a tensor's chunks spilling into
/// the next launch), each with its own lr and weight decay; every tensor
/// against the CPU's single-tensor kernels, and the gradient norm.
template <typename T> void multiTensor(Group &G) {
  constexpr int N = 40;
  constexpr int64_t chunk = 64;
  std::vector<int64_t> n(N);
  std::vector<std::vector<T>> p0(N), g(N), m0(N), v0(N);
  std::vector<double> lr(N), wd(N);
  for (int i = 0; i < N; ++i) {
    n[i] = i == 3 ? 0 : i == 17 ? 20000 : (i * 37) % 300 + 1;
    p0[i] = rnd<T>(n[i]), g[i] = rnd<T>(n[i]), m0[i] = rnd<T>(n[i], 0.1), v0[i] = rnd<T>(n[i], 0.1);
    for (auto &x : v0[i]) x = x * x;
    lr[i] = 1e-3 * (1 + i % 5), wd[i] = i % 3 ? 0.01 * (i % 4) : 0.0;
  }
  auto gPtrs = [&](std::vector<const T *> &gs) {
    gs.resize(N);
    for (int i = 0; i < N; ++i) gs[i] = g[i].data();
  };
  std::vector<const T *> gs;
  gPtrs(gs);
  // The gradient norm.
  {
    double ref = 0;
    for (int i = 0; i < N; ++i) ref += cpu_sum_squares<T>(n[i], g[i].data());
    OptimTensors<T> ts;
    ts.count = N, ts.n = n.data(), ts.g = gs.data();
    std::vector<double> scratch(sum_squares_scratch_bytes(N, n.data(), chunk) / sizeof(double),
                                NAN);
    G.ok("cuda sum_squares multi",
         launch_sum_squares<T>(ts, scratch.data(), scratch.data() + scratch.size() - 1, nullptr,
                               chunk));
    G.cmp("sum_squares 40 tensors", &ref, &scratch.back(), 1, 1e-30);
  }
  for (int decoupled = 0; decoupled < 2; ++decoupled) {
    auto pC = p0, pG = p0, mC = m0, mG = m0, vC = v0, vG = v0;
    std::vector<T *> pp(N), mp(N), vp(N);
    for (int i = 0; i < N; ++i) pp[i] = pG[i].data(), mp[i] = mG[i].data(), vp[i] = vG[i].data();
    OptimTensors<T> ts;
    ts.count = N, ts.n = n.data(), ts.p = pp.data(), ts.g = gs.data(), ts.s1 = mp.data(),
    ts.s2 = vp.data(), ts.lr = lr.data(), ts.wd = wd.data();
    for (int64_t step = 1; step <= 2; ++step) {
      for (int i = 0; i < N; ++i)
        G.ok("cpu adam", cpu_adam<T>(n[i], pC[i].data(), g[i].data(), mC[i].data(),
                                     vC[i].data(), 0.5, lr[i], 0.9, 0.999, 1e-8, wd[i],
                                     decoupled, step));
      G.ok("cuda adam multi", launch_adam_steps<T>(ts, 0.5, 0.9, 0.999, 1e-8, decoupled, step,
                                                   nullptr, chunk));
    }
    for (int i = 0; i < N; ++i) {
      const std::string tag = std::string(decoupled ? "adamw" : "adam") + " multi tensor " +
                              std::to_string(i);
      G.cmp(tag + " p", pC[i], pG[i]);
      G.cmp(tag + " m", mC[i], mG[i]);
      G.cmp(tag + " v", vC[i], vG[i]);
    }
  }
  {
    auto pC = p0, pG = p0, bC = m0, bG = m0;
    std::vector<T *> pp(N), bp(N);
    for (int i = 0; i < N; ++i) pp[i] = pG[i].data(), bp[i] = bG[i].data();
    OptimTensors<T> ts;
    ts.count = N, ts.n = n.data(), ts.p = pp.data(), ts.g = gs.data(), ts.s1 = bp.data(),
    ts.lr = lr.data(), ts.wd = wd.data();
    for (int first = 1; first >= 0; --first) {
      for (int i = 0; i < N; ++i)
        G.ok("cpu sgd", cpu_sgd<T>(n[i], pC[i].data(), g[i].data(), bC[i].data(), 1.0, lr[i],
                                   0.9, wd[i], 1, first));
      G.ok("cuda sgd multi", launch_sgd_steps<T>(ts, 1.0, 0.9, 1, first, nullptr, chunk));
    }
    for (int i = 0; i < N; ++i) {
      G.cmp("sgd multi tensor " + std::to_string(i) + " p", pC[i], pG[i]);
      G.cmp("sgd multi tensor " + std::to_string(i) + " buf", bC[i], bG[i]);
    }
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

/// bf16 parameters and gradients, fp32 state and master copies: the bf16
/// launches must leave the master copies, m, v and momentum exactly as the
/// float launches leave them when run on the masters with the gradients
/// widened, and p = master rounded once (0 ulps). The first step sets the
/// masters from p (their NaN contents ignored), the later ones update them.
/// The gradient norm equals float's on the widened gradients.
void mixedBf16(Group &G) {
  using nncc::kernels::bf16_t;
  using nncc::kernels::bf16_from_float;
  constexpr int N = 40;
  constexpr int64_t chunk = 64;
  std::vector<int64_t> n(N);
  std::vector<Bf16Values> p0(N), g(N);
  std::vector<double> lr(N), wd(N);
  for (int i = 0; i < N; ++i) {
    n[i] = i == 3 ? 0 : i == 17 ? 20000 : (i * 37) % 300 + 1;
    p0[i] = normal_bf16(n[i]), g[i] = normal_bf16(n[i]);
    lr[i] = 1e-2 * (1 + i % 5), wd[i] = i % 3 ? 0.01 * (i % 4) : 0.0;
  }
  std::vector<const bf16_t *> gb(N);
  std::vector<const float *> gf(N);
  for (int i = 0; i < N; ++i) gb[i] = g[i].b.data(), gf[i] = g[i].f.data();
  {
    OptimTensors<bf16_t> tb;
    tb.count = N, tb.n = n.data(), tb.g = gb.data();
    OptimTensors<float> tf;
    tf.count = N, tf.n = n.data(), tf.g = gf.data();
    std::vector<double> sb(sum_squares_scratch_bytes(N, n.data(), chunk) / sizeof(double), NAN),
        sf = sb;
    G.ok("bf16 sum_squares", launch_sum_squares<bf16_t>(tb, sb.data(), &sb.back(), nullptr, chunk));
    G.ok("f32 sum_squares", launch_sum_squares<float>(tf, sf.data(), &sf.back(), nullptr, chunk));
    G.cmp("bf16 sum_squares", &sf.back(), &sb.back(), 1, 1e-30, 0.0);
  }
  auto bitsEqual = [&](const std::string &what, const std::vector<float> &w,
                       const std::vector<bf16_t> &p) {
    bool same = true;
    for (size_t k = 0; k < w.size() && same; ++k)
      same = bf16_from_float(w[k]).bits == p[k].bits;
    G.ok(what + " p is the master rounded", same ? 0 : 1);
  };
  for (int kind = 0; kind < 3; ++kind) { // adam, adamw, sgd nesterov
    std::vector<std::vector<float>> wF(N), w(N, std::vector<float>()), s1F(N), s1(N), s2F(N),
        s2(N);
    std::vector<std::vector<bf16_t>> p(N);
    std::vector<float *> wFp(N), wp(N), s1Fp(N), s1p(N), s2Fp(N), s2p(N);
    std::vector<bf16_t *> pp(N);
    for (int i = 0; i < N; ++i) {
      wF[i] = p0[i].f, p[i] = p0[i].b;
      w[i].assign(n[i], NAN);
      s1F[i].assign(n[i], 0.f), s2F[i].assign(n[i], 0.f), s1[i] = s1F[i], s2[i] = s2F[i];
      wFp[i] = wF[i].data(), wp[i] = w[i].data(), pp[i] = p[i].data();
      s1Fp[i] = s1F[i].data(), s1p[i] = s1[i].data(), s2Fp[i] = s2F[i].data(),
      s2p[i] = s2[i].data();
    }
    OptimTensors<float> tf;
    tf.count = N, tf.n = n.data(), tf.p = wFp.data(), tf.g = gf.data(), tf.s1 = s1Fp.data(),
    tf.s2 = s2Fp.data(), tf.lr = lr.data(), tf.wd = wd.data();
    OptimTensors<bf16_t> tb;
    tb.count = N, tb.n = n.data(), tb.p = pp.data(), tb.g = gb.data(), tb.s1 = s1p.data(),
    tb.s2 = s2p.data(), tb.lr = lr.data(), tb.wd = wd.data(), tb.master = wp.data();
    for (int64_t step = 1; step <= 3; ++step) {
      tb.init_master = step == 1;
      const double gscale = step == 2 ? 0.5 : 1.0;
      if (kind < 2) {
        G.ok("f32 adam", launch_adam_steps<float>(tf, gscale, 0.9, 0.999, 1e-8, kind, step,
                                                  nullptr, chunk));
        G.ok("bf16 adam", launch_adam_steps<bf16_t>(tb, gscale, 0.9, 0.999, 1e-8, kind, step,
                                                    nullptr, chunk));
      } else {
        G.ok("f32 sgd", launch_sgd_steps<float>(tf, gscale, 0.9, 1, step == 1, nullptr, chunk));
        G.ok("bf16 sgd", launch_sgd_steps<bf16_t>(tb, gscale, 0.9, 1, step == 1, nullptr, chunk));
      }
    }
    const char *name = kind == 0 ? "adam" : kind == 1 ? "adamw" : "sgd";
    for (int i = 0; i < N; ++i) {
      const std::string tag = std::string("bf16 ") + name + " tensor " + std::to_string(i);
      G.cmp(tag + " master", wF[i], w[i], 1e-30);
      G.cmp(tag + " s1", s1F[i], s1[i], 1e-30);
      if (kind < 2) G.cmp(tag + " s2", s2F[i], s2[i], 1e-30);
      bitsEqual(tag, wF[i], p[i]);
    }
  }
  // A bf16 update without master copies, and an f32 one with them, are refused.
  {
    int64_t one = 4;
    std::vector<bf16_t> pb(4), gbv(4);
    std::vector<float> m(4), v(4), wv(4), pf(4), gfv(4);
    bf16_t *ppb = pb.data();
    const bf16_t *pgb = gbv.data();
    float *pm = m.data(), *pv = v.data(), *pw = wv.data(), *ppf = pf.data();
    const float *pgf = gfv.data();
    double l = 1e-3, d = 0;
    OptimTensors<bf16_t> tb;
    tb.count = 1, tb.n = &one, tb.p = &ppb, tb.g = &pgb, tb.s1 = &pm, tb.s2 = &pv, tb.lr = &l,
    tb.wd = &d;
    G.ok("bf16 adam without master copies is refused",
         launch_adam_steps<bf16_t>(tb, 1, 0.9, 0.999, 1e-8, 0, 1, nullptr) ==
                 cudaErrorInvalidValue ? 0 : 1);
    OptimTensors<float> tf;
    tf.count = 1, tf.n = &one, tf.p = &ppf, tf.g = &pgf, tf.s1 = &pm, tf.lr = &l, tf.wd = &d,
    tf.master = &pw;
    G.ok("f32 sgd with master copies is refused",
         launch_sgd_steps<float>(tf, 1, 0.9, 0, 1, nullptr) == cudaErrorInvalidValue ? 0 : 1);
  }
}

int main() {
  { Group G("sum_squares f64", 1e-13); sumSquares<double>(G); }
  { Group G("sum_squares f32", 1e-12); sumSquares<float>(G); }
  { Group G("sgd f64", 1e-14); sgd<double>(G); }
  { Group G("sgd f32", 1e-6); sgd<float>(G); }
  { Group G("adam/adamw f64", 1e-14); adam<double>(G); }
  { Group G("adam/adamw f32", 1e-6); adam<float>(G); }
  { Group G("multi-tensor f64", 1e-14); multiTensor<double>(G); }
  { Group G("multi-tensor f32", 1e-6); multiTensor<float>(G); }
  { Group G("mixed bf16", 0.0); mixedBf16(G); }
  return finish();
}
