// CUDA-emulation parity of runtime/include/nncc/Kernels/CUDA/ODE.cuh: the
// device drivers against the CPU's, with the same host dynamics, VJPs and
// cell on both sides. Both run the same driver code (ode_integrate_with,
// ode_grad_with, ode_rnn_grad_with), so this checks the device's element
// kernels (cuda::OdeDeviceOps) against the host loops (OdeHostOps) inside
// them: ode_integrate_device (CUDA nnk.ode_solve and nnk.ode_rnn) against
// ode_integrate, ode_grad_device against nncc::grad::ode_grad (CPU
// nnk.ode_solve_grad), ode_rnn_grad_device against nncc::grad::ode_rnn_grad
// (CPU nnk.ode_rnn_grad): adjoint and through the steps, every method,
// fixed and adaptive steps, with and without row scales.
#include "nncc/Kernels/CUDA/ODE.cuh"

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

/// ode_integrate_device (CUDA nnk.ode_solve, nnk.ode_rnn and the training
/// drivers' solves) against ode_integrate: every method with 1 and 5 fixed
/// steps, one dt or one per row (the ODE-RNN's scale), from 1 to 1000
/// elements (one CTA to several); adaptive dopri5 with loose and tight
/// tolerances, backwards in time and with row scales (the accepted steps,
/// their sizes and the final state).
template <typename T> void integrateDevice(Group &G) {
  struct Case {
    int method;
    int64_t steps, n, rows;
    double span, rtol, atol;
  };
  std::vector<Case> cases;
  for (int m : {(int)OdeEuler, (int)OdeRk4, (int)OdeDopri5})
    for (auto [n, rows] : {std::pair<int64_t, int64_t>{1, 0}, {300, 0}, {1000, 4}})
      for (int64_t steps : {1, 5})
        cases.push_back({m, steps, n, rows, 1.0, 1e-6, 1e-8});
  for (Case c : std::vector<Case>{{OdeDopri5, 0, 1, 0, 2.0, 1e-6, 1e-8},
                                  {OdeDopri5, 0, 300, 0, 2.0, 1e-6, 1e-8},
                                  {OdeDopri5, 0, 1000, 0, 3.0, 1e-9, 1e-11},
                                  {OdeDopri5, 0, 200, 0, -1.5, 1e-5, 1e-7},
                                  {OdeDopri5, 0, 120, 4, 1.0, 1e-6, 1e-8}})
    cases.push_back(c);
  for (const Case &c : cases) {
    const int64_t n = c.n, rowLen = c.rows ? n / c.rows : n;
    const int S = ode_stages(c.method);
    std::vector<T> scale(c.rows ? c.rows : 1);
    for (size_t r = 0; r < scale.size(); ++r) scale[r] = (T)(0.5 + 0.3 * (double)r);
    const T *rowScale = c.rows ? scale.data() : nullptr;
    auto h0 = rnd<T>(n, 1.0);
    auto dyn = [&](double s, const T *in, T *out) {
      dynamics<T>(s, in, out, n);
      return 0;
    };
    std::vector<double> accC, accG;
    auto run = [&](bool device, std::vector<T> &h, int64_t &nSteps, std::vector<double> &acc) {
      auto slots = garbage((size_t)(S + 2) * n * sizeof(T));
      T *w = (T *)slots.data();
      std::vector<T *> k(S);
      for (int s = 0; s < S; ++s) k[s] = w + (int64_t)s * n;
      T *err = c.steps == 0 ? w + (int64_t)(S + 1) * n : nullptr;
      auto onAccept = [&](double s, double ds) { acc.push_back(s), acc.push_back(ds); };
      if (!device)
        return ode_integrate<T>(c.method, c.steps, c.rtol, c.atol, n, rowLen, rowScale, 0.0, c.span,
                                h.data(), k.data(), w + (int64_t)S * n, err, dyn, &nSteps,
                                onAccept);
      auto normScratch = garbage(loss_scratch_bytes());
      double normD = NAN;
      OdeDevice dev;
      dev.norm_scratch = normScratch.data();
      dev.norm = &normD;
      return ode_integrate_device<T>(dev, c.method, c.steps, c.rtol, c.atol, n, rowLen, rowScale, 0.0,
                                     c.span, h.data(), k.data(), w + (int64_t)S * n, err, dyn,
                                     &nSteps, onAccept);
    };
    auto hC = h0, hG = h0;
    int64_t nC = -1, nG = -2;
    G.ok("cpu ode_integrate", run(false, hC, nC, accC));
    G.ok("cuda ode_integrate_device", run(true, hG, nG, accG));
    const std::string tag = "integrate method" + std::to_string(c.method) + " steps" +
                            std::to_string(c.steps) + " n" + std::to_string(n) + " rows" +
                            std::to_string(c.rows);
    const double sC = (double)nC, sG = (double)nG;
    G.cmp(tag + " accepted steps", &sC, &sG, 1, 1.0, 0.0);
    // The sizes of adaptive steps compound the error norms' rounding.
    G.cmp(tag + " step sizes", accC.data(), accG.data(), std::min(accC.size(), accG.size()),
          1e-30, c.steps == 0 ? 1e-9 : -1);
    G.cmp(tag + " h", hC, hG);
    accC.clear();
    accG.clear();
  }
}

//===--- gradients ----------------------------------------------------------===//

/// Parametric dynamics f(t, y; θ)_i = -θ[i % P] y_i + 0.3 sin(t_r + 0.01 i)
/// + 0.1 tanh(y_{(7i+1) % n}) (t_r: the time of i's row, rows of rowLen) and
/// its VJP (out_h = aᵀ∂f/∂y, out_θ = aᵀ∂f/∂θ, both overwritten).
template <typename T> struct ParamDyn {
  int64_t n, rowLen, P;
  std::vector<T> theta;
  double time(const T *t, double s, int64_t i) const {
    return t ? (double)t[i / rowLen] : s;
  }
  void f(double s, const T *t, const T *y, T *out) const {
    for (int64_t i = 0; i < n; ++i)
      out[i] = (T)(-(double)theta[i % P] * (double)y[i] +
                   0.3 * std::sin(time(t, s, i) + 0.01 * (double)i) +
                   0.1 * std::tanh((double)y[(i * 7 + 1) % n]));
  }
  void vjp(const T *y, const T *a, T *oh, T *ot) const {
    for (int64_t i = 0; i < n; ++i)
      oh[i] = (T)(-(double)theta[i % P] * (double)a[i]);
    for (int64_t p = 0; p < P; ++p)
      ot[p] = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t j = (i * 7 + 1) % n;
      const double th = std::tanh((double)y[j]);
      oh[j] = (T)((double)oh[j] + 0.1 * (1 - th * th) * (double)a[i]);
      ot[i % P] = (T)((double)ot[i % P] - (double)y[i] * (double)a[i]);
    }
  }
};

/// ode_grad_device (the augmented adjoint solve, or the steps replayed and
/// backpropagated) against nncc::grad::ode_grad on the same inputs.
template <typename T> void odeGrad(Group &G, bool adaptiveOnly) {
  struct Case {
    int method;
    int64_t steps, n, rows;
    double span;
  };
  std::vector<Case> cases;
  if (adaptiveOnly) {
    cases = {{OdeDopri5, 0, 40, 0, 1.0}, {OdeDopri5, 0, 300, 0, 2.0},
             {OdeDopri5, 0, 120, 4, 1.0}, {OdeDopri5, 0, 64, 0, -1.5}};
  } else {
    for (int m : {(int)OdeEuler, (int)OdeRk4, (int)OdeDopri5})
      for (auto [n, rows] : {std::pair<int64_t, int64_t>{1, 0}, {200, 0}, {120, 4}})
        cases.push_back({m, m == OdeEuler ? 7 : 3, n, rows, 1.0});
  }
  for (const Case &c : cases)
    for (int adjoint : {1, 0}) {
      const int64_t n = c.n, P = 5, rowLen = c.rows ? n / c.rows : n, maxSteps = 500;
      ParamDyn<T> d{n, rowLen, P, rnd<T>(P, 1.0)};
      for (auto &v : d.theta) v = (T)(1.0 + (double)v);
      std::vector<T> scale(c.rows ? c.rows : 1);
      for (size_t r = 0; r < scale.size(); ++r) scale[r] = (T)(0.5 + 0.3 * (double)r);
      const T *rowScale = c.rows ? scale.data() : nullptr;
      auto h = rnd<T>(n, 1.0), a0 = rnd<T>(n, 1.0);
      auto dyn = [&](double s, const T *y, T *out) {
        d.f(s, nullptr, y, out);
        return 0;
      };
      auto vjp = [&](double, const T *y, const T *a, T *oh, T *ot) {
        d.vjp(y, a, oh, ot);
        return 0;
      };
      const int64_t bytes = nncc::grad::ode_grad_layout(c.method, c.steps, maxSteps, adjoint, n,
                                                        P, sizeof(T)).bytes;
      // CPU.
      std::vector<char> wsC(bytes + 64);
      auto aC = a0;
      std::vector<T> gC(P, (T)0.25);
      G.ok("cpu ode_grad", nncc::grad::ode_grad<T>(c.method, c.steps, maxSteps, 1e-6, 1e-8,
                                                   adjoint, n, rowLen, rowScale, 0.0, c.span,
                                                   h.data(), aC.data(), P, gC.data(),
                                                   wsC.data(), dyn, vjp));
      // CUDA: device scratch starts as NaN garbage.
      auto wsG = garbage(bytes + 64);
      auto normScratch = garbage(loss_scratch_bytes());
      double normD = NAN;
      OdeDevice dev;
      dev.norm_scratch = normScratch.data();
      dev.norm = &normD;
      auto aG = a0;
      std::vector<T> gG(P, (T)0.25);
      G.ok("cuda ode_grad_device",
           ode_grad_device<T>(dev, c.method, c.steps, maxSteps, 1e-6, 1e-8, adjoint, n, rowLen,
                              rowScale, 0.0, c.span, h.data(), aG.data(), P, gG.data(),
                              wsG.data(), dyn, vjp));
      const std::string tag = std::string(adjoint ? "adjoint" : "steps") + " method" +
                              std::to_string(c.method) + " steps" + std::to_string(c.steps) +
                              " n" + std::to_string(n) + " rows" + std::to_string(c.rows);
      G.cmp(tag + " dh0", aC, aG);
      G.cmp(tag + " dtheta", gC, gG);
    }
  if (!adaptiveOnly)
    return;
  // Through the steps with fewer max_steps than the solve accepts: both
  // stop with OdeGradTooManySteps.
  const int64_t n = 50, P = 5;
  ParamDyn<double> d{n, n, P, std::vector<double>(P, 1.5)};
  auto h = rnd<double>(n, 1.0), aC = rnd<double>(n, 1.0), aG = aC;
  std::vector<double> gC(P, 0.0), gG(P, 0.0);
  auto dyn = [&](double s, const double *y, double *out) { d.f(s, nullptr, y, out); return 0; };
  auto vjp = [&](double, const double *y, const double *a, double *oh, double *ot) {
    d.vjp(y, a, oh, ot);
    return 0;
  };
  const int64_t bytes = nncc::grad::ode_grad_layout(OdeDopri5, 0, 2, 0, n, P, 8).bytes;
  std::vector<char> wsC(bytes + 64);
  auto wsG = garbage(bytes + 64), normScratch = garbage(loss_scratch_bytes());
  double normD = NAN;
  OdeDevice dev;
  dev.norm_scratch = normScratch.data();
  dev.norm = &normD;
  const double rcC = nncc::grad::ode_grad<double>(OdeDopri5, 0, 2, 1e-9, 1e-11, 0, n, n, nullptr,
                                                  0.0, 2.0, h.data(), aC.data(), P, gC.data(),
                                                  wsC.data(), dyn, vjp);
  const double rcG = ode_grad_device<double>(dev, OdeDopri5, 0, 2, 1e-9, 1e-11, 0, n, n, nullptr,
                                             0.0, 2.0, h.data(), aG.data(), P, gG.data(),
                                             wsG.data(), dyn, vjp);
  const double want = nncc::grad::OdeGradTooManySteps;
  G.cmp("max_steps exceeded: cpu status", &want, &rcC, 1, 1.0, 0.0);
  G.cmp("max_steps exceeded: cuda status", &want, &rcG, 1, 1.0, 0.0);
}

/// The CPU nnk.ode_rnn_grad loop (CppEmitter::emitODERNNGrad) on host
/// arrays; `dynamics`' time is `tcur` (each row's time).
/// ode_rnn_grad_device against the CPU's: a cell h' = tanh(w_j x[b, j % I]
/// + u_j h[b, j]) with φ = [w, u], the ParamDyn dynamics on each row's time.
template <typename T> void odeRnnGrad(Group &G) {
  for (int method : {(int)OdeEuler, (int)OdeRk4, (int)OdeDopri5})
    for (int64_t steps : {2, 0})
      for (int adjoint : {0, 1})
        for (bool withH0 : {true, false}) {
          if (steps == 0 && method != OdeDopri5)
            continue;
          const int64_t B = 3, Tn = 4, I = 2, H = 5, n = B * H, Pd = 3, Pc = 2 * H,
                        maxSteps = 200;
          ParamDyn<T> d{n, H, Pd, rnd<T>(Pd, 1.0)};
          for (auto &v : d.theta) v = (T)(1.0 + (double)v);
          auto phi = rnd<T>(Pc, 1.0);
          auto x = rnd<T>(B * Tn * I, 1.0), hs = rnd<T>(B * Tn * H, 1.0),
               dhs = rnd<T>(B * Tn * H, 1.0), h0 = rnd<T>(n, 1.0);
          std::vector<T> times(B * Tn);
          for (int64_t b = 0; b < B; ++b)
            for (int64_t i = 0; i < Tn; ++i)
              times[b * Tn + i] = (T)(0.3 * (double)i * (1.0 + 0.2 * (double)b) + 0.05 * (double)b);
          auto cell = [&](const T *xt, const T *h, const T *a, T *dxt, T *dh, T *dphi) {
            std::fill(dxt, dxt + B * I, (T)0);
            std::fill(dphi, dphi + Pc, (T)0);
            for (int64_t b = 0; b < B; ++b)
              for (int64_t j = 0; j < H; ++j) {
                const double xv = (double)xt[b * I + j % I], hv = (double)h[b * H + j];
                const double o = std::tanh((double)phi[j] * xv + (double)phi[H + j] * hv);
                const double g = (double)a[b * H + j] * (1 - o * o);
                dxt[b * I + j % I] = (T)((double)dxt[b * I + j % I] + (double)phi[j] * g);
                dh[b * H + j] = (T)((double)phi[H + j] * g);
                dphi[j] = (T)((double)dphi[j] + g * xv);
                dphi[H + j] = (T)((double)dphi[H + j] + g * hv);
              }
            return 0;
          };
          // The regions read the rows' time from `tcur` (the CPU's array,
          // or the device layout's).
          const T *tcur = nullptr;
          auto dyn = [&](double s, const T *y, T *out) {
            d.f(s, tcur, y, out);
            return 0;
          };
          auto vjp = [&](double, const T *y, const T *a, T *oh, T *ot) {
            d.vjp(y, a, oh, ot);
            return 0;
          };
          const T *h0p = withH0 ? h0.data() : nullptr;
          // The arena slot the CPU plan sizes (scratch + arrays) ...
          const OdeRnnGradLayout L = ode_rnn_grad_layout(method, steps, maxSteps, adjoint, B, I,
                                                         H, Pd, Pc, sizeof(T));
          // ... exactly (CppEmitter::emitODERNNGrad: ode_grad's scratch +
          // (Pd + 2 Pc + 1 + 3 B + (S + 7) n + 2 B I) elements).
          const double planned =
              (double)(nncc::grad::ode_grad_layout(method, steps, maxSteps, adjoint, n, Pd,
                                                   sizeof(T)).bytes +
                       (Pd + 2 * Pc + 1 + 3 * B + (ode_stages(method) + 7) * n + 2 * B * I) *
                           (int64_t)sizeof(T)),
                       used = (double)(L.scratch + L.elems * (int64_t)sizeof(T));
          G.cmp("ode_rnn workspace bytes", &planned, &used, 1, 1.0, 0.0);
          // CPU: the host loops (nncc::grad::ode_rnn_grad, the generated
          // CPU code's call).
          auto wsC = garbage(L.scratch + L.elems * sizeof(T) + 64);
          tcur = (const T *)(wsC.data() + L.scratch) + L.tcur;
          std::vector<T> dxC(B * Tn * I, (T)NAN), dh0C(n), dthC(Pd), dphC(Pc);
          G.ok("cpu ode_rnn_grad",
               nncc::grad::ode_rnn_grad<T>(method, steps, maxSteps, 1e-6, 1e-8, adjoint, B, Tn, I,
                                           H, x.data(), times.data(), h0p, hs.data(),
                                           dhs.data(), dxC.data(), dh0C.data(), Pd, dthC.data(),
                                           Pc, dphC.data(), wsC.data(), dyn, vjp, cell));
          // CUDA: the device kernels in the same driver.
          auto ws = garbage(L.scratch + L.elems * sizeof(T) + 64);
          tcur = (const T *)(ws.data() + L.scratch) + L.tcur;
          auto normScratch = garbage(loss_scratch_bytes());
          double normD = NAN;
          OdeDevice dev;
          dev.norm_scratch = normScratch.data();
          dev.norm = &normD;
          auto dxG = nanv<T>(B * Tn * I), dh0G = nanv<T>(n), dthG = nanv<T>(Pd),
               dphG = nanv<T>(Pc);
          G.ok("cuda ode_rnn_grad_device",
               ode_rnn_grad_device<T>(dev, method, steps, maxSteps, 1e-6, 1e-8, adjoint, B, Tn,
                                      I, H, x.data(), times.data(), h0p, hs.data(), dhs.data(),
                                      dxG.data(), dh0G.data(), Pd, dthG.data(), Pc, dphG.data(),
                                      ws.data(), dyn, vjp, cell));
          const std::string tag = "ode_rnn method" + std::to_string(method) + " steps" +
                                  std::to_string(steps) + (adjoint ? " adjoint" : " steps") +
                                  (withH0 ? " h0" : "");
          G.cmp(tag + " dx", dxC, dxG);
          G.cmp(tag + " dh0", dh0C, dh0G);
          G.cmp(tag + " dtheta", dthC, dthG);
          G.cmp(tag + " dphi", dphC, dphG);
        }
}

int main() {
  // The combinations are the CPU's arithmetic term for term (fixed steps:
  // bit-identical in f64 and f32); only the device's summation order of the
  // error norm differs: the adaptive step sizes compound its rounding (seen:
  // 3.7e-11 after 157 steps at rtol 1e-9), the accepted step counts and
  // the final states agree.
  { Group G("ode integrate device f64", 1e-13); integrateDevice<double>(G); }
  { Group G("ode integrate device f32", 1e-6); integrateDevice<float>(G); }
  // Gradients: the drivers are the CPU's and the device kernels repeat the
  // host loops' arithmetic (one rounding to T per element, as the CPU),
  // so fixed steps agree to the last bits in f64 and f32; adaptive dopri5
  // differs only by the error norm's summation order.
  { Group G("ode grad fixed f64", 1e-14); odeGrad<double>(G, false); }
  { Group G("ode grad fixed f32", 1e-6); odeGrad<float>(G, false); }
  { Group G("ode grad adaptive f64", 1e-12); odeGrad<double>(G, true); }
  { Group G("ode_rnn grad f64", 1e-12); odeRnnGrad<double>(G); }
  { Group G("ode_rnn grad f32", 1e-6); odeRnnGrad<float>(G); }
  return finish();
}
