// CUDA-emulation parity of the bf16_t instantiation of the recurrent layer
// launcher (Recurrent.cuh launch_rnn_scan_ckpt: rnn_scan_kernel with W_hh^T
// in shared memory or streamed, and the cooperative rnn_grid_kernel) against
// its float instantiation run on the same bf16 values widened to float:
// Elman (tanh, relu), LSTM, PyTorch's GRU and Cho's GRU; forward and
// reverse; lengths (i32 and i64, including 0 and T) or none; one of two
// directions written into a shared output (ld_out / col_off); h0/c0 and
// h_n/c_n present or not; b_hh or not; hidden sizes that are not multiples
// of 4 or of the warp size; batches that do not fill the grid kernel's
// register tiles; a step in place (y aliasing h0 and h_n). Then the shared
// memory sizes of the bf16 layout (fp32 state, bf16 weights) and the grid
// kernel's exchange-buffer limit (forced: the error; auto: the scan kernel).
//
// Tolerance: 0 ulps. The bf16 kernels keep the recurrent state in fp32 and
// do the float kernels' arithmetic in the same order, so every bf16 output
// must be the float output rounded once (NaN-aware: the other direction's
// columns stay untouched in both). A state rounded to bf16 per step, a
// truncating store or a wrong weight fails. The training outputs (the
// saved gates, the LSTM's cell checkpoints and zoneout) are compared too.
//
// usage: recurrent_bf16
#include "nncc/Kernels/CUDA/Recurrent.cuh"

#include "emu_bf16.h"

#include <string>

using namespace nncc::kernels;
using namespace nncc::kernels::cuda;
using namespace emutest;

namespace {

enum Path { ScanSmem, ScanStreamed, Grid };
const char *pathName(Path p) {
  return p == ScanSmem ? "scan" : p == ScanStreamed ? "scan streamed" : "grid";
}

struct Shape {
  int64_t B, T, H, D;
  int dir;      // 1: the reverse direction
  int lens;     // 0: none, 4: int32, 8: int64
  bool states;  // h0/c0 and h_n/c_n
  bool bias;    // b_hh
  bool train;   // saved gates, LSTM cell checkpoints (every 2) and zoneout
};

std::vector<float> widen(const std::vector<bf16_t> &b) {
  std::vector<float> f(b.size());
  for (size_t i = 0; i < b.size(); ++i)
    f[i] = bf16_to_float(b[i]);
  return f;
}

/// An opt-in shared-memory limit that fits the state of the rows per CTA
/// rnn_scan_config picks first for B rows of hidden size H, not W_hh^T
/// (the scan kernel streams it).
template <int Kind> int streamedOptin(int64_t B, int64_t H) {
  const int64_t rows = std::min<int64_t>(8, (B + 2 * emu::g.sms - 1) / (2 * emu::g.sms));
  return (int)rnn_smem_bytes<bf16_t, Kind>((int)rows, (int)H, false);
}

/// Both instantiations of one layer on `path`; emu::g.sms and the opt-in
/// limit as the caller set them.
template <typename Len, int Kind>
void layerCase(Bf16UlpGroup &Gr, Path path, const Shape &c) {
  const int G = cell_gates(Kind), NS = cell_saved_slots(Kind);
  const int64_t B = c.B, T = c.T, H = c.H, D = c.D, GH = G * H, DH = D * H;
  const bool reverse = c.dir == 1, lstm = Kind == CellLstm;
  const std::string tag = std::string(pathName(path)) + " B" + std::to_string(B) + " T" +
                          std::to_string(T) + " H" + std::to_string(H) + " D" +
                          std::to_string(D) + " rev" + std::to_string(reverse) + " len" +
                          std::to_string(c.lens) + " st" + std::to_string(c.states) + " b" +
                          std::to_string(c.bias) + " tr" + std::to_string(c.train);
  Bf16Values xg = uniform_bf16(B * T * GH, 1.0), whh = uniform_bf16(GH * H, 0.5),
             bhh = uniform_bf16(GH, 0.5), h0 = uniform_bf16(2 * B * H, 0.5),
             c0 = uniform_bf16(2 * B * H, 1.0);
  std::vector<Len> len;
  for (int64_t b = 0; b < B; ++b)
    len.push_back((Len)(c.lens ? (b == 0 ? T : (b * 3 + 1) % (T + 1)) : T));
  const Len *lp = c.lens ? len.data() : nullptr;
  const int64_t so = c.dir * B * H; // this direction's state slot of two
  const int64_t every = 2, nck = T > 1 ? (T - 1) / every : 0;
  const double zo = c.train && lstm ? 0.3 : 0.0;
  const uint64_t seed = 0x5eed, offset = 40;
  const size_t nsv = (size_t)(B * T * NS * H);

  // float on the widened values
  std::vector<float> yF = nanv<float>(B * T * DH), hnF = nanv<float>(2 * B * H), cnF = hnF,
                     svF = nanv<float>(nsv), ckF = nanv<float>(nck * B * H);
  GuardedScratch wsF((size_t)GH * H * sizeof(float));
  // bf16
  const uint16_t nan16 = 0x7fc0;
  std::vector<bf16_t> yB = fill_bf16(B * T * DH, nan16), hnB = fill_bf16(2 * B * H, nan16),
                      cnB = hnB, svB = fill_bf16(nsv, nan16), ckB = fill_bf16(nck * B * H, nan16);
  GuardedScratch wsB((size_t)GH * H * sizeof(bf16_t));

  const bool ck = c.train && lstm && nck > 0;
  setenv("NNCC_CUDA_RNN", path == Grid ? "grid" : "scan", 1);
  long coop = emu::g.coop_launches;
  cudaError_t e = launch_rnn_scan_ckpt<float, Len, Kind>(
      (int)B, (int)T, (int)H, (int)reverse, DH, reverse && D == 2 ? (int)H : 0, lp,
      xg.f.data(), whh.f.data(), c.bias ? bhh.f.data() : nullptr,
      c.states ? h0.f.data() + so : nullptr, c.states && lstm ? c0.f.data() + so : nullptr,
      yF.data(), c.states ? hnF.data() + so : nullptr,
      c.states && lstm ? cnF.data() + so : nullptr, c.train ? svF.data() : nullptr, NS * H,
      ck ? ckF.data() : nullptr, (int)every, (float *)wsF.data(), nullptr, zo, seed, offset,
      c.dir);
  if (!Gr.ok(tag + " f32", e))
    return;
  const long coopF = emu::g.coop_launches - coop;
  coop = emu::g.coop_launches;
  e = launch_rnn_scan_ckpt<bf16_t, Len, Kind>(
      (int)B, (int)T, (int)H, (int)reverse, DH, reverse && D == 2 ? (int)H : 0, lp,
      xg.b.data(), whh.b.data(), c.bias ? bhh.b.data() : nullptr,
      c.states ? h0.b.data() + so : nullptr, c.states && lstm ? c0.b.data() + so : nullptr,
      yB.data(), c.states ? hnB.data() + so : nullptr,
      c.states && lstm ? cnB.data() + so : nullptr, c.train ? svB.data() : nullptr, NS * H,
      ck ? ckB.data() : nullptr, (int)every, (bf16_t *)wsB.data(), nullptr, zo, seed, offset,
      c.dir);
  if (!Gr.ok(tag + " bf16", e))
    return;
  const long coopB = emu::g.coop_launches - coop;
  // The path the bf16 layer took: the kernel, and where W_hh^T lived.
  Gr.ok(tag + " cooperative launches (f32, bf16)",
        coopF != (path == Grid) || coopB != (path == Grid));
  if (path != Grid) {
    int dev = 0, sms = 1, optin = 0, rows = 0;
    bool inSmem = false;
    size_t smem = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    Gr.ok(tag + " scan config",
          !rnn_scan_config<bf16_t, Kind>((int)B, (int)H, sms, optin, rows, inSmem, smem) ||
              inSmem != (path == ScanSmem));
  }
  Gr.cmp(tag + " y", yF, yB);
  Gr.cmp(tag + " h_n", hnF, hnB);
  if (lstm)
    Gr.cmp(tag + " c_n", cnF, cnB);
  if (c.train)
    Gr.cmp(tag + " saved", svF, svB);
  if (ck)
    Gr.cmp(tag + " cell checkpoints", ckF, ckB);
  Gr.ok(tag + " scratch guard", !wsF.guardIntact() || !wsB.guardIntact());
}

/// One step in place: y aliases h0 and h_n (every CTA reads all of h0).
template <int Kind> void inPlace(Bf16UlpGroup &Gr, Path path) {
  const int64_t B = 3, H = 12, G = cell_gates(Kind);
  const bool lstm = Kind == CellLstm;
  Bf16Values xg = uniform_bf16(B * G * H, 1.0), whh = uniform_bf16(G * H * H, 0.5),
             h0 = uniform_bf16(B * H, 0.5), c0 = uniform_bf16(B * H, 1.0);
  std::vector<float> hF = h0.f, cF = nanv<float>(B * H);
  std::vector<bf16_t> hB = h0.b, cB = fill_bf16(B * H, 0x7fc0);
  GuardedScratch wsF((size_t)G * H * H * sizeof(float)), wsB((size_t)G * H * H * sizeof(bf16_t));
  setenv("NNCC_CUDA_RNN", path == Grid ? "grid" : "scan", 1);
  const std::string tag = std::string("in place ") + pathName(path);
  Gr.ok(tag + " f32", launch_rnn_scan<float, int32_t, Kind>(
                          (int)B, 1, (int)H, 0, H, 0, nullptr, xg.f.data(), whh.f.data(),
                          nullptr, hF.data(), lstm ? c0.f.data() : nullptr, hF.data(),
                          hF.data(), lstm ? cF.data() : nullptr, nullptr, 0,
                          (float *)wsF.data(), nullptr));
  Gr.ok(tag + " bf16", launch_rnn_scan<bf16_t, int32_t, Kind>(
                           (int)B, 1, (int)H, 0, H, 0, nullptr, xg.b.data(), whh.b.data(),
                           nullptr, hB.data(), lstm ? c0.b.data() : nullptr, hB.data(),
                           hB.data(), lstm ? cB.data() : nullptr, nullptr, 0,
                           (bf16_t *)wsB.data(), nullptr));
  if (path != Grid) {
    int rows = 0;
    bool inSmem = false;
    size_t smem = 0;
    Gr.ok(tag + " scan config",
          !rnn_scan_config<bf16_t, Kind>((int)B, (int)H, emu::g.sms, emu::g.optin, rows, inSmem,
                                         smem) ||
              inSmem != (path == ScanSmem));
  }
  Gr.cmp(tag + " y", hF, hB);
  if (lstm)
    Gr.cmp(tag + " c_n", cF, cB);
}

template <int Kind> void allFor(const std::string &name) {
  // Shapes: H 20 and 12 (multiples of 4: the grid kernel's vector staging),
  // 21, 9 and 33 (not: element staging; 33 > a warp); batches of 1, 3, 4
  // and 5 rows (the grid's register tiles of 4: one, partial, full, and a
  // partial second); lengths of row b: T for b = 0, else (3b + 1) mod
  // (T + 1) (B 5, T 6: 6, 4, 0, 3, 6). Every shape fits the grid kernel's
  // bf16 exchange buffer (B <= G*H/4, Cho's B <= H/2).
  const Shape shapes[] = {
      {4, 5, 20, 1, 0, 0, true, true, false},  {5, 6, 21, 2, 1, 4, true, false, true},
      {1, 4, 9, 1, 1, 8, true, true, true},    {3, 7, 12, 2, 0, 4, false, true, false},
      {5, 6, 33, 2, 0, 8, true, true, false},
  };
  const int optin = emu::g.optin;
  for (Path path : {ScanSmem, ScanStreamed, Grid}) {
    Bf16UlpGroup Gr("bf16 " + name + " " + pathName(path), 0);
    for (const Shape &c : shapes) {
      // The scan kernel on 1 SM (CTAs of several rows, the last partial) or
      // 3; the grid kernel on 3 SMs (slices that do not divide H) or 132.
      emu::g.sms = path == Grid ? (c.H == 9 ? 132 : 3) : (c.B == 5 ? 1 : 3);
      if (path == ScanStreamed)
        emu::g.optin = streamedOptin<Kind>(c.B, c.H);
      if (c.lens == 8)
        layerCase<int64_t, Kind>(Gr, path, c);
      else
        layerCase<int32_t, Kind>(Gr, path, c);
      emu::g.optin = optin;
    }
    emu::g.sms = 3;
    if (path == ScanStreamed)
      emu::g.optin = streamedOptin<Kind>(3, 12);
    inPlace<Kind>(Gr, path);
    emu::g.optin = optin;
  }
}

/// The bf16 layout's shared memory (fp32 state, bf16 weights) against f32's
/// (unchanged), and the grid kernel's exchange-buffer limit.
void sizes() {
  Bf16UlpGroup Gr("bf16 smem sizes and grid limits", 0);
  auto eq = [&](const std::string &what, size_t got, size_t want) {
    if (!Gr.ok(what, got != want))
      printf("  %s: %zu, expected %zu\n", what.c_str(), got, want);
  };
  const int rows = 3, H = 21;
  // scan: h, (c), hg, (r*h) per row in the state type; W_hh^T G*H*H in T.
  eq("scan lstm bf16", rnn_smem_bytes<bf16_t, CellLstm>(rows, H, true),
     (size_t)rows * (H + H + 4 * H) * 4 + 4 * H * H * 2);
  eq("scan lstm bf16 streamed", rnn_smem_bytes<bf16_t, CellLstm>(rows, H, false),
     (size_t)rows * (H + H + 4 * H) * 4);
  eq("scan gru_cho bf16", rnn_smem_bytes<bf16_t, CellGruCho>(rows, H, true),
     (size_t)rows * (H + 3 * H + H) * 4 + 3 * H * H * 2);
  eq("scan rnn_tanh bf16", rnn_smem_bytes<bf16_t, CellRnnTanh>(rows, H, true),
     (size_t)rows * (H + H) * 4 + H * H * 2);
  eq("scan lstm f32", rnn_smem_bytes<float, CellLstm>(rows, H, true),
     ((size_t)rows * (H + H + 4 * H) + 4 * H * H) * 4);
  eq("scan gru f64", rnn_smem_bytes<double, CellGru>(rows, H, true),
     ((size_t)rows * (H + 3 * H) + 3 * H * H) * 8);
  // grid (us = 5 units, B = 6): weights [rp, hp] and xg [B, rp] in T; staged
  // h [B, hp], products [B, rp], h (and c) [B, us] in the state type; the
  // lengths. hp = 24 (H padded to 4 for bf16 and f32), rp = 20 (4 * 5).
  const int B = 6, us = 5, hp = 24, rp = 20;
  eq("grid lstm bf16", rnn_grid_smem_bytes<bf16_t, CellLstm>(B, H, us),
     (size_t)(rp * hp + B * rp) * 2 + (size_t)(B * hp + B * rp + 2 * B * us) * 4 + B * 4);
  eq("grid lstm f32", rnn_grid_smem_bytes<float, CellLstm>(B, H, us),
     (size_t)(rp * hp + B * hp + 2 * B * rp + 2 * B * us) * 4 + B * 4);
  eq("grid exchange lstm bf16", rnn_grid_exchange_bytes<bf16_t, CellLstm>(B, H),
     (size_t)2 * B * H * 4);
  eq("grid exchange gru_cho bf16", rnn_grid_exchange_bytes<bf16_t, CellGruCho>(B, H),
     (size_t)3 * B * H * 4);
  eq("grid exchange gru_cho f32", rnn_grid_exchange_bytes<float, CellGruCho>(B, H),
     (size_t)B * H * 4);
  eq("grid exchange lstm f32", rnn_grid_exchange_bytes<float, CellLstm>(B, H), 0);

  // The exchange buffer (fp32 h, two steps) fits the [G*H, H] bf16 scratch
  // up to B = G*H/4 rows: Elman at H 12 up to 3 rows. A forced grid kernel
  // says cudaErrorNotSupported beyond; auto (H >= 64) takes the scan kernel.
  emu::g.sms = 3;
  int nc = 0, u = 0;
  size_t smem = 0;
  Gr.ok("grid rnn_tanh bf16 B 3 H 12 fits",
        rnn_grid_config<bf16_t, int32_t, CellRnnTanh>(3, 12, nc, u, smem));
  Gr.ok("grid rnn_tanh bf16 B 4 H 12: cudaErrorNotSupported",
        rnn_grid_config<bf16_t, int32_t, CellRnnTanh>(4, 12, nc, u, smem) !=
            cudaErrorNotSupported);
  Gr.ok("grid gru_cho bf16 B 7 H 12: cudaErrorNotSupported",
        rnn_grid_config<bf16_t, int32_t, CellGruCho>(7, 12, nc, u, smem) !=
            cudaErrorNotSupported);
  Gr.ok("grid gru_cho bf16 B 6 H 12 fits",
        rnn_grid_config<bf16_t, int32_t, CellGruCho>(6, 12, nc, u, smem));
  Gr.ok("grid rnn_tanh f32 B 4 H 12 fits",
        rnn_grid_config<float, int32_t, CellRnnTanh>(4, 12, nc, u, smem));
  {
    const int Bb = 17, Hb = 64, Tb = 2;
    Bf16Values xg = uniform_bf16(Bb * Tb * Hb, 1.0), whh = uniform_bf16(Hb * Hb, 0.2);
    std::vector<float> yF = nanv<float>(Bb * Tb * Hb);
    std::vector<bf16_t> yB = fill_bf16(Bb * Tb * Hb, 0x7fc0);
    GuardedScratch wsF((size_t)Hb * Hb * 4), wsB((size_t)Hb * Hb * 2);
    setenv("NNCC_CUDA_RNN", "grid", 1);
    Gr.ok("forced grid rnn_tanh bf16 B 17 H 64: cudaErrorNotSupported",
          launch_rnn_scan<bf16_t, int32_t, CellRnnTanh>(
              Bb, Tb, Hb, 0, Hb, 0, nullptr, xg.b.data(), whh.b.data(), nullptr, nullptr,
              nullptr, yB.data(), nullptr, nullptr, nullptr, 0, (bf16_t *)wsB.data(),
              nullptr) != cudaErrorNotSupported);
    setenv("NNCC_CUDA_RNN", "auto", 1);
    const long coop = emu::g.coop_launches;
    Gr.ok("auto rnn_tanh bf16 B 17 H 64",
          launch_rnn_scan<bf16_t, int32_t, CellRnnTanh>(
              Bb, Tb, Hb, 0, Hb, 0, nullptr, xg.b.data(), whh.b.data(), nullptr, nullptr,
              nullptr, yB.data(), nullptr, nullptr, nullptr, 0, (bf16_t *)wsB.data(), nullptr));
    Gr.ok("auto rnn_tanh bf16 B 17 H 64 takes the scan kernel", emu::g.coop_launches - coop);
    setenv("NNCC_CUDA_RNN", "scan", 1);
    Gr.ok("scan rnn_tanh f32 B 17 H 64",
          launch_rnn_scan<float, int32_t, CellRnnTanh>(
              Bb, Tb, Hb, 0, Hb, 0, nullptr, xg.f.data(), whh.f.data(), nullptr, nullptr,
              nullptr, yF.data(), nullptr, nullptr, nullptr, 0, (float *)wsF.data(), nullptr));
    Gr.cmp("auto bf16 vs scan f32 y", yF, yB);
  }
  // W_hh^T in shared memory in bf16 where f32's does not fit.
  {
    const int Bb = 2, Hb = 24, Tb = 3, optin = emu::g.optin;
    emu::g.optin = (int)rnn_smem_bytes<bf16_t, CellLstm>(1, Hb, true);
    int rowsB = 0, rowsF = 0;
    bool inB = false, inF = false;
    size_t smB = 0, smF = 0;
    Gr.ok("bf16 W_hh^T fits where f32's does not",
          !rnn_scan_config<bf16_t, CellLstm>(Bb, Hb, 3, emu::g.optin, rowsB, inB, smB) ||
              !rnn_scan_config<float, CellLstm>(Bb, Hb, 3, emu::g.optin, rowsF, inF, smF) ||
              !inB || inF);
    Bf16Values xg = uniform_bf16(Bb * Tb * 4 * Hb, 1.0), whh = uniform_bf16(4 * Hb * Hb, 0.3);
    std::vector<float> yF = nanv<float>(Bb * Tb * Hb);
    std::vector<bf16_t> yB = fill_bf16(Bb * Tb * Hb, 0x7fc0);
    GuardedScratch wsF((size_t)4 * Hb * Hb * 4), wsB((size_t)4 * Hb * Hb * 2);
    setenv("NNCC_CUDA_RNN", "scan", 1);
    Gr.ok("lstm f32 streamed", launch_rnn_scan<float, int32_t, CellLstm>(
                                   Bb, Tb, Hb, 0, Hb, 0, nullptr, xg.f.data(), whh.f.data(),
                                   nullptr, nullptr, nullptr, yF.data(), nullptr, nullptr,
                                   nullptr, 0, (float *)wsF.data(), nullptr));
    Gr.ok("lstm bf16 in smem", launch_rnn_scan<bf16_t, int32_t, CellLstm>(
                                   Bb, Tb, Hb, 0, Hb, 0, nullptr, xg.b.data(), whh.b.data(),
                                   nullptr, nullptr, nullptr, yB.data(), nullptr, nullptr,
                                   nullptr, 0, (bf16_t *)wsB.data(), nullptr));
    Gr.cmp("lstm bf16 in smem vs f32 streamed y", yF, yB);
    emu::g.optin = optin;
  }
}

} // namespace

int main() {
  allFor<CellRnnTanh>("rnn_tanh");
  allFor<CellRnnRelu>("rnn_relu");
  allFor<CellLstm>("lstm");
  allFor<CellGru>("gru");
  allFor<CellGruCho>("gru_cho");
  sizes();
  return finish();
}
