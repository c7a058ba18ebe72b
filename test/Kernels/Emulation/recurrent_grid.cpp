// CUDA-emulation parity of the cooperative-grid persistent recurrent kernel
// (Recurrent.cuh rnn_grid_kernel, launched by launch_rnn_scan_ckpt under
// NNCC_CUDA_RNN=grid) against the CPU kernel nncc_rnn_layer_zoneout of
// libnncc_kernels.so, f64 and f32: every cell kind, forward and reverse,
// lengths (i32 and i64, zeros and full rows), one of two directions written
// into a shared output (ld_out / col_off), h0/c0 and h_n/c_n present or
// not, biases or not, the saved gates, LSTM zoneout; several emulated SM
// counts, so that the unit slices of the CTAs do not divide H, and batches
// that do not fill the warps' register tiles. Then the selection: auto,
// the fallbacks and the errors of a forced grid kernel that cannot run.
//
// usage: recurrent_grid [SMS...]  (default 1 3 5 132)
#include "nncc/Kernels/CUDA/Recurrent.cuh"
#include "nncc/Kernels/Kernels.h"

#include "emu_test.h"

#include <string>

using namespace nncc::kernels;
using namespace nncc::kernels::cuda;

CPU2(rnn_layer_zoneout)

static emutest::Group *cur = nullptr;

template <typename R, typename Len, int Kind>
void layerCase(int64_t B, int64_t T, int64_t H, int64_t D, int dir, bool withLen, bool states,
               bool bias, bool save, double zo) {
  const int G = cell_gates(Kind), NS = cell_saved_slots(Kind);
  const int64_t GH = G * H, DH = D * H, sd = 1 + dir; // state slot l*D + d of a 2-layer stack
  const int64_t S = 2 * D + 1;                        // state slots allocated
  const bool reverse = dir == 1;
  std::string tag = "cell" + std::to_string(Kind) + " B" + std::to_string(B) + " T" +
                    std::to_string(T) + " H" + std::to_string(H) + " D" + std::to_string(D) +
                    " rev" + std::to_string(reverse) + " len" + std::to_string(withLen) + "/" +
                    std::to_string(sizeof(Len)) + " st" + std::to_string(states) + " b" +
                    std::to_string(bias) + " sv" + std::to_string(save) + " zo" +
                    std::to_string(zo) + " sms" + std::to_string(emu::g.sms);
  auto xg = emutest::rnd<R>(B * T * GH, 1.0), whh = emutest::rnd<R>(GH * H),
       bhh = emutest::rnd<R>(GH), h0 = emutest::rnd<R>(S * B * H),
       c0 = emutest::rnd<R>(S * B * H);
  std::vector<int32_t> l32;
  std::vector<int64_t> l64;
  std::vector<Len> lg;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = withLen ? (b == 0 ? T : (b * 3 + 1) % (T + 1)) : T;
    l32.push_back((int32_t)n);
    l64.push_back(n);
    lg.push_back((Len)n);
  }
  const int32_t *lc32 = withLen && sizeof(Len) == 4 ? l32.data() : nullptr;
  const int64_t *lc64 = withLen && sizeof(Len) == 8 ? l64.data() : nullptr;
  const R *h0p = states ? h0.data() : nullptr;
  const R *c0p = states && Kind == CellLstm ? c0.data() : nullptr;
  const R *bp = bias ? bhh.data() : nullptr;
  const size_t nsv = (size_t)(S * B * T * NS * H);
  std::vector<R> yC = emutest::nanv<R>(B * T * DH), yG = yC, hnC = emutest::nanv<R>(S * B * H),
                 hnG = hnC, cnC = hnC, cnG = hnC, svC = emutest::nanv<R>(nsv), svG = svC;
  R *cnCp = states && Kind == CellLstm ? cnC.data() : nullptr;
  R *cnGp = states && Kind == CellLstm ? cnG.data() : nullptr;
  std::vector<char> ws(nncc_rnn_layer_workspace_size(Kind, B, H, sizeof(R)) + 64);
  const uint64_t seed = 0x5eed, offset = 40;
  int rc = cpu_rnn_layer_zoneout<R>(Kind, B, T, H, D, sd, (int)reverse, xg.data(), whh.data(),
                                    bp, h0p, c0p, lc32, lc64, yC.data(),
                                    states ? hnC.data() : nullptr, cnCp, (void *)ws.data(),
                                    save ? svC.data() : nullptr, zo, seed, offset);
  if (!cur->ok(tag + " cpu", rc))
    return;
  std::vector<R> scratch = emutest::nanv<R>(GH * H);
  const long coop = emu::g.coop_launches;
  const int64_t so = sd * B * H;
  cudaError_t e = launch_rnn_scan_ckpt<R, Len, Kind>(
      (int)B, (int)T, (int)H, (int)reverse, DH, reverse && D == 2 ? (int)H : 0,
      withLen ? lg.data() : nullptr, xg.data(), whh.data(), bp, h0p ? h0p + so : nullptr,
      c0p ? c0p + so : nullptr, yG.data(), states ? hnG.data() + so : nullptr,
      cnGp ? cnGp + so : nullptr, save ? svG.data() + sd * B * T * NS * H : nullptr, NS * H,
      (R *)nullptr, 0, scratch.data(), nullptr, zo, seed, offset, sd);
  if (!cur->ok(tag + " launch", e) ||
      !cur->ok(tag + " cooperative launches", emu::g.coop_launches - coop - 1))
    return;
  cur->cmp(tag + " y", yC.data(), yG.data(), yC.size());
  cur->cmp(tag + " hn", hnC.data(), hnG.data(), hnC.size());
  if (Kind == CellLstm)
    cur->cmp(tag + " cn", cnC.data(), cnG.data(), cnC.size());
  if (save)
    cur->cmp(tag + " saved", svC.data(), svG.data(), svC.size());
}

template <typename R, int Kind> void allFor() {
  const double zo = Kind == CellLstm ? 0.3 : 0.0;
  // Shapes: H not a multiple of the vector length (f32 4, f64 2), batches
  // of 1, 4, 5 rows (one, full, and a partial second register tile).
  layerCase<R, int32_t, Kind>(4, 5, 7, 1, 0, false, true, true, false, 0.0);
  layerCase<R, int32_t, Kind>(5, 6, 9, 2, 1, true, true, false, true, zo);
  layerCase<R, int64_t, Kind>(5, 6, 9, 2, 0, true, false, true, true, 0.0);
  layerCase<R, int64_t, Kind>(1, 4, 12, 1, 1, true, true, true, true, zo);
  layerCase<R, int32_t, Kind>(3, 7, 10, 2, 1, true, true, true, false, 0.0);
}

template <typename R> void errorCases(const char *name, double tol) {
  emutest::Group Gr(std::string("recurrent grid errors ") + name, tol);
  cur = &Gr;
  const int B = 2, T = 3, H = 8, G = 4;
  auto xg = emutest::rnd<R>(B * T * G * H), whh = emutest::rnd<R>(G * H * H);
  std::vector<R> y(B * T * H), y2(B * T * H), scratch(G * H * H);
  auto run = [&](std::vector<R> &out) {
    return launch_rnn_scan_ckpt<R, int32_t, CellLstm>(
        B, T, H, 0, H, 0, nullptr, xg.data(), whh.data(), nullptr, nullptr, nullptr, out.data(),
        nullptr, nullptr, nullptr, 0, (R *)nullptr, 0, scratch.data(), nullptr);
  };
  setenv("NNCC_CUDA_RNN", "grid", 1);
  long coop = emu::g.coop_launches;
  Gr.ok("grid", run(y));
  Gr.ok("grid launched cooperatively", emu::g.coop_launches - coop - 1);
  setenv("NNCC_CUDA_RNN", "scan", 1);
  coop = emu::g.coop_launches;
  Gr.ok("scan", run(y2));
  Gr.ok("scan launched no cooperative kernel", emu::g.coop_launches - coop);
  Gr.cmp("grid vs scan y", y2.data(), y.data(), y.size());
  // auto: H < kRnnGridMinHidden takes the scan kernel.
  setenv("NNCC_CUDA_RNN", "auto", 1);
  coop = emu::g.coop_launches;
  Gr.ok("auto", run(y2));
  Gr.ok("auto H 8 takes the scan kernel", emu::g.coop_launches - coop);
  // A forced grid kernel that cannot run says why; auto falls back.
  setenv("NNCC_CUDA_RNN", "grid", 1);
  emu::g.coop = 0;
  Gr.ok("no cooperative launch: cudaErrorNotSupported", run(y2) != cudaErrorNotSupported);
  emu::g.coop = 1;
  const int optin = emu::g.optin;
  emu::g.optin = 128; // not even one unit's weight rows
  Gr.ok("slices too large: cudaErrorCooperativeLaunchTooLarge",
        run(y2) != cudaErrorCooperativeLaunchTooLarge);
  emu::g.optin = optin;
  setenv("NNCC_CUDA_RNN", "fast", 1);
  Gr.ok("NNCC_CUDA_RNN=fast: cudaErrorInvalidValue", run(y2) != cudaErrorInvalidValue);
  // auto picks the grid kernel for a small batch at H >= 64, and falls back
  // to the scan kernel when cooperative launches are missing.
  {
    const int Hb = 64;
    auto xb = emutest::rnd<R>(B * T * G * Hb, 1.0), wb = emutest::rnd<R>(G * Hb * Hb);
    std::vector<R> ya(B * T * Hb), ys(B * T * Hb), sb(G * Hb * Hb);
    auto runb = [&](std::vector<R> &out) {
      return launch_rnn_scan_ckpt<R, int32_t, CellLstm>(
          B, T, Hb, 1, Hb, 0, nullptr, xb.data(), wb.data(), nullptr, nullptr, nullptr,
          out.data(), nullptr, nullptr, nullptr, 0, (R *)nullptr, 0, sb.data(), nullptr);
    };
    setenv("NNCC_CUDA_RNN", "auto", 1);
    coop = emu::g.coop_launches;
    Gr.ok("auto B 2 H 64", runb(ya));
    Gr.ok("auto B 2 H 64 takes the grid kernel", emu::g.coop_launches - coop - 1);
    emu::g.coop = 0;
    Gr.ok("auto without cooperative launch", runb(ys));
    emu::g.coop = 1;
    Gr.ok("auto without cooperative launch takes the scan kernel",
          emu::g.coop_launches - coop - 1);
    Gr.cmp("auto grid vs scan y", ys.data(), ya.data(), ys.size());
  }
  setenv("NNCC_CUDA_RNN", "grid", 1);
}

/// One step in place (a recurrent cell whose output buffer is its input
/// h): y aliases h0 and h_n, which every CTA reads in full.
template <typename R, int Kind> void inPlace(emutest::Group &Gr) {
  const int B = 3, H = 9, G = cell_gates(Kind);
  auto xg = emutest::rnd<R>(B * G * H, 1.0), whh = emutest::rnd<R>(G * H * H),
       h0 = emutest::rnd<R>(B * H), c0 = emutest::rnd<R>(B * H);
  std::vector<R> yC = emutest::nanv<R>(B * H), cC = yC, cG = yC, h = h0;
  std::vector<char> ws(nncc_rnn_layer_workspace_size(Kind, B, H, sizeof(R)) + 64);
  const R *c0p = Kind == CellLstm ? c0.data() : nullptr;
  std::string tag = "in place cell" + std::to_string(Kind);
  if (!Gr.ok(tag + " cpu", cpu_rnn_layer_zoneout<R>(Kind, B, 1, H, 1, 0, 0, xg.data(), whh.data(),
                                                    nullptr, h0.data(), c0p, nullptr, nullptr,
                                                    yC.data(), nullptr, cC.data(),
                                                    (void *)ws.data(), nullptr, 0.0, 0, 0)))
    return;
  std::vector<R> scratch = emutest::nanv<R>(G * H * H);
  Gr.ok(tag, launch_rnn_scan_ckpt<R, int32_t, Kind>(
                 B, 1, H, 0, H, 0, nullptr, xg.data(), whh.data(), nullptr, h.data(), c0p,
                 h.data(), h.data(), cG.data(), nullptr, 0, (R *)nullptr, 0, scratch.data(),
                 nullptr));
  Gr.cmp(tag + " y", yC.data(), h.data(), h.size());
  if (Kind == CellLstm)
    Gr.cmp(tag + " cn", cC.data(), cG.data(), cC.size());
}

template <typename R> void allKinds(const char *name, double tol) {
  const std::string sfx = std::string(" ") + name + " sms " + std::to_string(emu::g.sms);
  { emutest::Group G("grid rnn_tanh" + sfx, tol); cur = &G; allFor<R, CellRnnTanh>(); }
  { emutest::Group G("grid rnn_relu" + sfx, tol); cur = &G; allFor<R, CellRnnRelu>(); }
  { emutest::Group G("grid lstm" + sfx, tol); cur = &G; allFor<R, CellLstm>(); }
  { emutest::Group G("grid gru" + sfx, tol); cur = &G; allFor<R, CellGru>(); }
  { emutest::Group G("grid gru_cho" + sfx, tol); cur = &G; allFor<R, CellGruCho>(); }
  {
    emutest::Group G("grid in place" + sfx, tol);
    inPlace<R, CellRnnTanh>(G);
    inPlace<R, CellLstm>(G);
    inPlace<R, CellGru>(G);
    inPlace<R, CellGruCho>(G);
  }
}

int main(int argc, char **argv) {
  std::vector<int> sms;
  for (int i = 1; i < argc; ++i)
    sms.push_back(atoi(argv[i]));
  if (sms.empty())
    sms = {1, 3, 5, 132};
  setenv("NNCC_CUDA_RNN", "grid", 1);
  for (int n : sms) {
    emu::g.sms = n;
    allKinds<double>("f64", 1e-11);
    allKinds<float>("f32", 1e-5);
  }
  emu::g.sms = 4;
  errorCases<double>("f64", 1e-11);
  errorCases<float>("f32", 1e-5);
  return emutest::finish();
}
