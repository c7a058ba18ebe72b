// CUDA-emulation parity: runtime/include/nncc/Kernels/CUDA/Ode.cuh
// (launch_ode_combine, launch_ode_error_norm) against the CPU ODE solver it
// mirrors (nncc::kernels::ode_integrate of ODESolver.h, what the CPU
// nnk.ode_solve / nnk.ode_rnn run). The CUDA side is the host loop that
// lib/Target/Cuda/CudaEmitter.cpp emits (emitOdeSteps: one combination
// kernel per stage input, one for the new state and dopri5's error; the
// adaptive loop's error norm on the device), with the same host dynamics on
// both sides: euler, rk4, fixed-step dopri5, with one dt or one per row
// (ODE-RNN), and adaptive dopri5 (accepted steps and the final state).
#include "nncc/Kernels/CUDA/Ode.cuh"

#include "emu_test.h"

using namespace nncc::kernels;
using namespace nncc::kernels::cuda;
using namespace emutest;

/// The dynamics, the same function on both sides: dy/ds = f(s, y).
template <typename T> void dynamics(double s, const T *y, T *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = (T)(-0.7 * (double)y[i] + 0.3 * std::sin(s * (1.0 + 0.01 * (double)i)) +
                 0.1 * (double)y[(i * 7 + 1) % n]);
}

/// The CUDA host loop of CudaEmitter::emitOdeSteps: slots of n elements in
/// `work` (k_0..k_{S-1}, the stage input, dopri5's error).
template <typename T> struct CudaOde {
  int method;
  int64_t n, rowLen;
  std::vector<T> work;
  CudaOde(int m, int64_t n_, int64_t rl) : method(m), n(n_), rowLen(rl) {
    work = nanv<T>((size_t)9 * n);
  }
  int stageStep(Group &G, T *h, T dt, const T *dtRows, double t, double dsForTime,
                bool withErr) {
    const int S = ode_stages(method), in = S == 1 ? 1 : S;
    T *w = work.data();
    for (int s = 0; s < S; ++s) {
      T *yin = s == 0 ? h : w + (int64_t)in * n;
      if (s > 0) {
        OdeCombine c{};
        c.nk = s;
        for (int j = 0; j < s; ++j) c.a[j] = ode_a(method, s, j);
        if (!G.ok("cuda ode_combine", launch_ode_combine<T>(c, n, rowLen, h, w, n, dt, dtRows,
                                                            yin, (T *)nullptr, nullptr)))
          return 1;
      }
      dynamics<T>(t + ode_c(method, s) * dsForTime, yin, w + (int64_t)s * n, n);
    }
    OdeCombine c{};
    c.nk = S;
    for (int j = 0; j < S; ++j) {
      c.a[j] = ode_b(method, j);
      c.e[j] = method == OdeDopri5 ? ode_e(j) : 0.0;
    }
    return !G.ok("cuda ode_combine final",
                 launch_ode_combine<T>(c, n, rowLen, h, w, n, dt, dtRows,
                                       withErr ? w + (int64_t)in * n : h,
                                       withErr ? w + (int64_t)(S + 1) * n : (T *)nullptr,
                                       nullptr));
  }
};

/// Fixed steps over [0, 1]; rowScale: per-row dt = ds * rowScale[r] (the
/// ODE-RNN's per-row observation intervals), else one dt.
template <typename T> void fixedSteps(Group &G) {
  for (int method : {(int)OdeEuler, (int)OdeRk4, (int)OdeDopri5})
    for (auto [n, rows] : {std::pair<int64_t, int64_t>{1, 0}, {300, 0}, {1000, 4}})
      for (int64_t steps : {1, 5}) {
        const int64_t rowLen = rows ? n / rows : n;
        auto h0 = rnd<T>(n, 1.0);
        std::vector<T> scale(rows ? rows : 1);
        for (int64_t r = 0; r < (int64_t)scale.size(); ++r) scale[r] = (T)(0.5 + 0.3 * r);
        const T *rowScale = rows ? scale.data() : nullptr;
        // CPU.
        const int S = ode_stages(method);
        std::vector<std::vector<T>> kC(S, nanv<T>(n));
        std::vector<T *> kp(S);
        for (int s = 0; s < S; ++s) kp[s] = kC[s].data();
        auto hC = h0, stageIn = nanv<T>(n);
        int64_t nSteps = 0;
        G.ok("cpu ode_integrate",
             ode_integrate<T>(method, steps, 1e-6, 1e-8, n, rowLen, rowScale, 0.0, 1.0,
                              hC.data(), kp.data(), stageIn.data(), (T *)nullptr,
                              [&](double s, const T *in, T *out) {
                                dynamics<T>(s, in, out, n);
                                return 0;
                              },
                              &nSteps));
        // CUDA: the emitted loop.
        CudaOde<T> cu(method, n, rowLen);
        auto hG = h0;
        const double ds = 1.0 / (double)steps;
        std::vector<T> dtRows(scale.size());
        for (size_t r = 0; r < dtRows.size(); ++r) dtRows[r] = (T)(ds * (double)scale[r]);
        for (int64_t it = 0; it < steps; ++it)
          if (cu.stageStep(G, hG.data(), (T)ds, rows ? dtRows.data() : nullptr,
                           0.0 + (double)it * ds, ds, false))
            break;
        G.cmp("ode method" + std::to_string(method) + " n" + std::to_string(n) + " rows" +
                  std::to_string(rows) + " steps" + std::to_string(steps),
              hC, hG);
      }
}

/// Adaptive dopri5 over [0, span]: the CUDA loop of CudaEmitter::emitOdeSolve
/// (error norm on the device, no FSAL) against ode_integrate's.
void adaptive(Group &G) {
  using T = double;
  for (auto [n, rtol, atol, span] : {std::tuple<int64_t, double, double, double>{1, 1e-6, 1e-8, 2.0},
                                     {300, 1e-6, 1e-8, 2.0},
                                     {1000, 1e-9, 1e-11, 3.0},
                                     {200, 1e-5, 1e-7, -1.5}}) {
    auto h0 = rnd<T>(n, 1.0);
    std::vector<std::vector<T>> kC(7, nanv<T>(n));
    std::vector<T *> kp(7);
    for (int s = 0; s < 7; ++s) kp[s] = kC[s].data();
    auto hC = h0, stageIn = nanv<T>(n), err = nanv<T>(n);
    int64_t nC = 0;
    G.ok("cpu ode_integrate dopri5",
         ode_integrate<T>(OdeDopri5, 0, rtol, atol, n, n, (const T *)nullptr, 0.0, span,
                          hC.data(), kp.data(), stageIn.data(), err.data(),
                          [&](double s, const T *in, T *out) {
                            dynamics<T>(s, in, out, n);
                            return 0;
                          },
                          &nC));
    CudaOde<T> cu(OdeDopri5, n, n);
    auto hG = h0;
    auto scratch = garbage(loss_scratch_bytes());
    double normD = NAN;
    const double t1 = span;
    double t = 0, dt = ode_first_step(t1);
    const bool up = t1 > 0;
    int64_t nG = 0;
    for (int64_t iter = 0; up ? t < t1 : t > t1; ++iter) {
      if (iter >= 100000) {
        G.ok("cuda adaptive loop did not finish", 1);
        break;
      }
      if (up ? t + dt > t1 : t + dt < t1) dt = t1 - t;
      if (cu.stageStep(G, hG.data(), dt, nullptr, t, dt, true)) break;
      T *w = cu.work.data();
      if (!G.ok("cuda ode_error_norm",
                launch_ode_error_norm<T>(n, hG.data(), w + 7 * n, w + 8 * n, atol, rtol,
                                         scratch.data(), &normD, nullptr)))
        break;
      const double norm = std::sqrt(normD);
      if (ode_step_accepted(norm)) {
        t += dt;
        std::copy(w + 7 * n, w + 8 * n, hG.begin());
        ++nG;
      }
      dt = dt * ode_step_factor(norm);
    }
    const std::string tag = "dopri5 adaptive n" + std::to_string(n) + " rtol" + std::to_string(rtol);
    const double sC = (double)nC, sG = (double)nG;
    G.cmp(tag + " accepted steps", &sC, &sG, 1, 1.0, 0.0);
    G.cmp(tag + " h", hC, hG);
  }
}

/// launch_ode_error_norm alone: mean of ode_error_ratio^2 (the CPU solver's
/// per-element formula, summed in order here) over 1 to 70000 elements
/// (one CTA to the most partial sums).
template <typename T> void errorNorm(Group &G) {
  for (int64_t n : {1, 257, 70000}) {
    auto h = rnd<T>(n, 2.0), hn = rnd<T>(n, 2.0), e = rnd<T>(n, 1e-5);
    double ref = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double q = ode_error_ratio((double)e[i], (double)h[i], (double)hn[i], 1e-7, 1e-5);
      ref += q * q;
    }
    ref /= (double)n;
    auto scratch = garbage(loss_scratch_bytes());
    double got = NAN;
    G.ok("cuda ode_error_norm", launch_ode_error_norm<T>(n, h.data(), hn.data(), e.data(), 1e-7,
                                                         1e-5, scratch.data(), &got, nullptr));
    G.cmp("error norm n" + std::to_string(n), &ref, &got, 1);
  }
}

int main() {
  // f64: the combinations are the CPU's arithmetic term for term (coefficients
  // in double, the same order and association: bit-identical today); only
  // the device's summation order of the error norm differs, which moves the
  // adaptive steps by rounding (worst seen 1.1e-15).
  { Group G("ode fixed steps f64", 1e-15); fixedSteps<double>(G); }
  { Group G("ode fixed steps f32", 1e-5); fixedSteps<float>(G); }
  { Group G("ode adaptive dopri5 f64", 1e-13); adaptive(G); }
  { Group G("ode error norm f64", 1e-14); errorNorm<double>(G); }
  { Group G("ode error norm f32", 1e-14); errorNorm<float>(G); }
  return finish();
}
