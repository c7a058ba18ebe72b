// CUDA-emulation parity of LSTM zoneout in training: the zoneout arguments
// of runtime/include/nncc/Kernels/CUDA/RecurrentBackward.cuh's stack
// launchers (training forward with the plain, the checkpointed and the
// outputs-only reserve, backward from the reserve, with the forward
// recomputed, checkpointed, by the binomial schedule) and of Recurrent.cuh's
// launch_rnn_scan, against the CPU kernels of libnncc_kernels.so
// (nncc_rnn_forward_train and nncc_rnn_backward with each schedule and
// without a reserve, nncc_rnn_layer_zoneout) in f64: rates 0,
// 0.3, 0.7, one and two layers, both directions, lengths (i32 / i64),
// states, checkpoint_every 1, 2, 4 and T + 3, 1 and 3 snapshots.
//
// Masks: besides the CPU comparison (a different mask changes h, c and the
// gradients by O(1)), every valid (layer, direction, row, step, unit) of the
// CUDA forward is checked bit for bit: h_t == h_{t-1} and the reserve's
// c_t == c_{t-1} exactly iff Philox.h's lstm_zoneout_keep_prev(seed, offset,
// sd, t, b, j, T, H, p) says the unit is zoned out.
//
// usage: zoneout [OPTIN_BYTES]  (small: W_hh read from global memory)
#include "nncc/Kernels/CUDA/RecurrentBackward.cuh"
#include "nncc/Kernels/Kernels.h"
#include "nncc/Kernels/RandomMasks.h"

#include "emu_test.h"
#include "rnn_stack.h"

#include <cstring>
#include <string>

using namespace nncc::kernels;
using namespace nncc::kernels::cuda;
typedef double R;

using emutest::rnd;
static std::vector<R> nanv(size_t n) { return emutest::nanv<R>(n); }
static emutest::Group *cur = nullptr;
static void cmp(const char *what, const std::string &tag, const R *a, const R *b, size_t n) {
  cur->cmp(tag + " " + what, a, b, n);
}

static const uint64_t kSeed = 0x9e3779b97f4a7c15ULL, kOffset = 4242;
static long maskChecked = 0, maskZoned = 0, maskBad = 0;

static bool bitEq(R a, R b) { return std::memcmp(&a, &b, sizeof(R)) == 0; }

/// The mask check on a CUDA forward: outs [L, B*T, D*H] (layer outputs),
/// c slots (plain reserve: gates [L*D, B, T, 5*H], slot 4) or null.
static void checkMasks(const std::string &tag, double p, int64_t B, int64_t T, int64_t H,
                       int64_t L, int64_t D, const int32_t *len, const R *h0, const R *c0,
                       const R *outs, const R *gates) {
  const int64_t DH = D * H, BT = B * T;
  long bad = 0;
  for (int64_t l = 0; l < L; ++l)
    for (int64_t d = 0; d < D; ++d) {
      const int64_t sd = l * D + d;
      const R *y = outs + l * BT * DH;
      for (int64_t b = 0; b < B; ++b) {
        const int ln = len ? len[b] : (int)T;
        for (int s = 0; s < ln; ++s) {
          const int64_t t = rnn_time_index(s, ln, d == 1), tp = d == 1 ? t + 1 : t - 1;
          for (int64_t j = 0; j < H; ++j) {
            const bool m = p > 0 && lstm_zoneout_keep_prev(kSeed, kOffset, sd, t, b, j, T, H,
                                                           (float)p);
            const R hp = s > 0 ? y[(b * T + tp) * DH + d * H + j]
                               : (h0 ? h0[(sd * B + b) * H + j] : R(0));
            bool same = bitEq(y[(b * T + t) * DH + d * H + j], hp);
            if (gates) {
              const R *g = gates + (sd * BT) * 5 * H;
              const R cp = s > 0 ? g[(b * T + tp) * 5 * H + 4 * H + j]
                                 : (c0 ? c0[(sd * B + b) * H + j] : R(0));
              same = same && bitEq(g[(b * T + t) * 5 * H + 4 * H + j], cp);
            }
            ++maskChecked;
            maskZoned += m;
            if (same != m)
              ++bad;
          }
        }
      }
    }
  maskBad += bad;
  cur->ok(tag + " masks (" + std::to_string(bad) + " units differ)", bad);
}

template <typename Len>
void stackCase(double p, int64_t B, int64_t T, int64_t I, int64_t H, int64_t L, int64_t D,
               int hb, bool withLen, bool states, int64_t every, int64_t snaps = 0) {
  const int cell = CellLstm, Kind = CellLstm;
  const int64_t GH = 4 * H, DH = D * H, BT = B * T;
  std::string tag = "p" + std::to_string(p).substr(0, 3) + " B" + std::to_string(B) + " T" +
                    std::to_string(T) + " L" + std::to_string(L) + " D" + std::to_string(D) +
                    " hb" + std::to_string(hb) + " len" + std::to_string(withLen) + "/" +
                    std::to_string(sizeof(Len)) + " st" + std::to_string(states) + " k" +
                    std::to_string(every) + " s" + std::to_string(snaps);
  emutest::RnnStack<Len> S(B, T, I, H, L, D, 4, hb, withLen);
  auto &W = S.W;
  auto &w = S.w;
  auto &x = S.x;
  const int32_t *lc = S.lc();
  const Len *lg = S.lg();
  const R *h0p = states ? S.h0.data() : nullptr, *c0p = states ? S.c0.data() : nullptr;
  // Forward.
  int64_t resBytes = every ? nncc_rnn_reserve_ckpt_size(cell, B, T, H, L, D, every, 8)
                     : snaps ? L * BT * DH * 8
                             : nncc_rnn_reserve_size(cell, B, T, H, L, D, 8);
  std::vector<R> resC(resBytes / 8 + 1, NAN), resG(resBytes / 8 + 1, NAN);
  std::vector<R> yC = nanv(BT * DH), yG = nanv(BT * DH), hnC = nanv(L * D * B * H),
                 hnG = nanv(L * D * B * H), cnC = nanv(L * D * B * H), cnG = nanv(L * D * B * H);
  std::vector<char> ws(nncc_rnn_forward_train_workspace_size(cell, B, T, H, 8) + 64);
  const nncc_rnn_params prm =
      emutest::rnnParams(cell, B, T, I, H, L, D, hb, lc, p, kSeed, kOffset, every, snaps);
  int rc = nncc_rnn_forward_train_f64(&prm, x.data(), w.data(), h0p, c0p, yC.data(), hnC.data(),
                                      cnC.data(), resC.data(), ws.data());
  if (rc) { printf("CPU fwd rc %d %s\n", rc, tag.c_str()); cur->ok(tag, 1); return; }
  std::vector<char> gs(rnn_forward_train_scratch_bytes(cell, B, T, H, 8), (char)0xff);
  cudaError_t e = every
      ? launch_rnn_forward_train_ckpt<R, Len, Kind>(nullptr, B, T, I, H, L, D, hb, x.data(),
            w.data(), h0p, c0p, lg, yG.data(), hnG.data(), cnG.data(), resG.data(), every,
            gs.data() + 8, nullptr, p, kSeed, kOffset)
      : snaps ? launch_rnn_forward_train_revolve<R, Len, Kind>(nullptr, B, T, I, H, L, D, hb,
            x.data(), w.data(), h0p, c0p, lg, yG.data(), hnG.data(), cnG.data(), resG.data(),
            gs.data() + 8, nullptr, p, kSeed, kOffset)
      : launch_rnn_forward_train<R, Len, Kind>(nullptr, B, T, I, H, L, D, hb, x.data(), w.data(),
            h0p, c0p, lg, yG.data(), hnG.data(), cnG.data(), resG.data(), gs.data() + 8, nullptr,
            p, kSeed, kOffset);
  if (e) { printf("GPU fwd err %d %s\n", (int)e, tag.c_str()); cur->ok(tag, 1); return; }
  cmp("y", tag, yC.data(), yG.data(), yC.size());
  cmp("hn", tag, hnC.data(), hnG.data(), hnC.size());
  cmp("cn", tag, cnC.data(), cnG.data(), cnC.size());
  cmp("reserve", tag, resC.data(), resG.data(), resC.size());
  checkMasks(tag, p, B, T, H, L, D, lc, h0p, c0p, resG.data(),
             every || snaps ? nullptr : resG.data() + L * BT * DH);
  // Backward (each side from its own reserve).
  auto dy = rnd(BT * DH), dhn = rnd(L * D * B * H), dcn = rnd(L * D * B * H);
  std::vector<R> dxC = nanv(BT * I), dxG = nanv(BT * I), dh0C = nanv(L * D * B * H),
                 dh0G = nanv(L * D * B * H), dc0C = nanv(L * D * B * H), dc0G = nanv(L * D * B * H);
  std::vector<std::vector<R>> dWC, dWG;
  for (auto &v : W) { dWC.push_back(nanv(v.size())); dWG.push_back(nanv(v.size())); }
  std::vector<R *> dwC, dwG;
  for (size_t i = 0; i < W.size(); ++i) { dwC.push_back(dWC[i].data()); dwG.push_back(dWG[i].data()); }
  std::vector<char> bws(every ? nncc_rnn_backward_ckpt_workspace_size(cell, B, T, I, H, L, D, every, 8)
                        : snaps ? nncc_rnn_backward_revolve_workspace_size(cell, B, T, I, H, L, D, snaps, 8)
                              : nncc_rnn_backward_reserved_workspace_size(cell, B, T, H, L, D, 8));
  rc = nncc_rnn_backward_f64(&prm, x.data(), w.data(), h0p, c0p, resC.data(), dy.data(),
                             dhn.data(), dcn.data(), dxC.data(), dh0C.data(), dc0C.data(),
                             dwC.data(), bws.data(), nullptr);
  if (rc) { printf("CPU bwd rc %d %s\n", rc, tag.c_str()); cur->ok(tag, 1); return; }
  uint64_t gb = every ? rnn_backward_ckpt_scratch_bytes(cell, B, T, I, H, L, D, every, 8)
                : snaps ? rnn_backward_revolve_scratch_bytes(cell, B, T, I, H, L, D, snaps, 8)
                      : rnn_backward_reserved_scratch_bytes(cell, B, T, H, L, D, 8);
  std::vector<char> gbs(gb, (char)0xff);
  e = every ? launch_rnn_backward_ckpt<R, Len, Kind>(nullptr, B, T, I, H, L, D, hb, x.data(),
                  w.data(), h0p, c0p, lg, resG.data(), dy.data(), dhn.data(), dcn.data(),
                  dxG.data(), dh0G.data(), dc0G.data(), dwG.data(), every, gbs.data() + 8,
                  nullptr, p, kSeed, kOffset)
      : snaps ? launch_rnn_backward_revolve<R, Len, Kind>(nullptr, B, T, I, H, L, D, hb, x.data(),
                  w.data(), h0p, c0p, lg, resG.data(), dy.data(), dhn.data(), dcn.data(),
                  dxG.data(), dh0G.data(), dc0G.data(), dwG.data(), snaps, nullptr,
                  gbs.data() + 8, nullptr, p, kSeed, kOffset)
            : launch_rnn_backward_reserved<R, Len, Kind>(nullptr, B, T, I, H, L, D, hb, x.data(),
                  w.data(), h0p, c0p, lg, resG.data(), dy.data(), dhn.data(), dcn.data(),
                  dxG.data(), dh0G.data(), dc0G.data(), dwG.data(), gbs.data() + 8, nullptr, p,
                  kSeed, kOffset);
  if (e) { printf("GPU bwd err %d %s\n", (int)e, tag.c_str()); cur->ok(tag, 1); return; }
  cmp("dx", tag, dxC.data(), dxG.data(), dxC.size());
  cmp("dh0", tag, dh0C.data(), dh0G.data(), dh0C.size());
  cmp("dc0", tag, dc0C.data(), dc0G.data(), dc0C.size());
  for (size_t i = 0; i < W.size(); ++i)
    cmp(("dw" + std::to_string(i)).c_str(), tag, dWC[i].data(), dWG[i].data(), W[i].size());
  if (every || snaps)
    return;
  // No reserve: the CPU's nncc_rnn_backward (forward re-run) against the CUDA
  // launch_rnn_backward (the forward recomputed with the same masks).
  std::vector<R> dx3 = nanv(BT * I), dh03 = nanv(L * D * B * H), dc03 = nanv(L * D * B * H);
  std::vector<R> dx2 = nanv(BT * I), dh02 = nanv(L * D * B * H), dc02 = nanv(L * D * B * H);
  std::vector<std::vector<R>> dW2, dW3;
  std::vector<R *> dw2, dw3;
  for (auto &v : W) { dW2.push_back(nanv(v.size())); dW3.push_back(nanv(v.size())); }
  for (size_t i = 0; i < W.size(); ++i) { dw2.push_back(dW2[i].data()); dw3.push_back(dW3[i].data()); }
  std::vector<char> cws(nncc_rnn_backward_workspace_size(cell, B, T, I, H, L, D, 8));
  rc = nncc_rnn_backward_f64(&prm, x.data(), w.data(), h0p, c0p, nullptr, dy.data(), dhn.data(),
                             dcn.data(), dx3.data(), dh03.data(), dc03.data(), dw3.data(),
                             cws.data(), nullptr);
  if (rc) { printf("CPU bwd2 rc %d %s\n", rc, tag.c_str()); cur->ok(tag, 1); return; }
  std::vector<char> g2(rnn_backward_scratch_bytes(cell, B, T, H, L, D, 8), (char)0xff);
  e = launch_rnn_backward<R, Len, Kind>(nullptr, B, T, I, H, L, D, hb, x.data(), w.data(), h0p,
          c0p, lg, dy.data(), dhn.data(), dcn.data(), dx2.data(), dh02.data(), dc02.data(),
          dw2.data(), g2.data(), nullptr, p, kSeed, kOffset);
  if (e) { printf("GPU bwd2 err %d %s\n", (int)e, tag.c_str()); cur->ok(tag, 1); return; }
  cmp("dx(recompute)", tag, dx3.data(), dx2.data(), dx3.size());
  cmp("dh0(recompute)", tag, dh03.data(), dh02.data(), dh03.size());
  cmp("dc0(recompute)", tag, dc03.data(), dc02.data(), dc03.size());
  cmp("dx(recompute vs reserved)", tag, dxC.data(), dx2.data(), dxC.size());
  for (size_t i = 0; i < W.size(); ++i)
    cmp("dw(recompute)", tag, dW3[i].data(), dW2[i].data(), W[i].size());
}

/// launch_rnn_scan with zoneout (nnk.recurrent_scan in training) against
/// nncc_rnn_layer_zoneout: one layer and direction, state slot sd of a
/// two-direction, two-layer state array.
template <typename Len> void scanCase(double p, int64_t sd, int reverse, bool withLen) {
  const int64_t B = 5, T = 6, H = 4, GH = 4 * H, D = 2, LD = 4;
  std::string tag = "scan p" + std::to_string(p).substr(0, 3) + " sd" + std::to_string(sd) +
                    " rev" + std::to_string(reverse) + " len" + std::to_string(withLen);
  auto xp = rnd(B * T * GH, 1.0), whh = rnd(GH * H), bhh = rnd(GH), h0 = rnd(LD * B * H),
       c0 = rnd(LD * B * H);
  std::vector<int32_t> len32(B);
  std::vector<Len> lenE(B);
  for (int64_t b = 0; b < B; ++b) {
    len32[b] = withLen ? (int32_t)((b * 4 + 2) % (T + 1)) : (int32_t)T;
    lenE[b] = (Len)len32[b];
  }
  std::vector<R> yC(B * T * D * H, 0), yG(B * T * D * H, 0), hnC = nanv(LD * B * H),
                 hnG = nanv(LD * B * H), cnC = nanv(LD * B * H), cnG = nanv(LD * B * H);
  std::vector<char> ws(nncc_rnn_layer_workspace_size(CellLstm, B, H, 8) + 64);
  int rc = nncc_rnn_layer_zoneout_f64(CellLstm, B, T, H, D, sd, reverse, xp.data(), whh.data(),
                                      bhh.data(), h0.data(), c0.data(),
                                      withLen && sizeof(Len) == 4 ? len32.data() : nullptr,
                                      withLen && sizeof(Len) == 8 ? (const int64_t *)lenE.data()
                                                                  : nullptr,
                                      yC.data(), hnC.data(), cnC.data(), ws.data(), nullptr, p,
                                      kSeed, kOffset);
  if (rc) { printf("CPU scan rc %d %s\n", rc, tag.c_str()); cur->ok(tag, 1); return; }
  std::vector<R> wt(GH * H);
  const int64_t sl = sd * B * H;
  cudaError_t e = launch_rnn_scan<R, Len, CellLstm>(
      (int)B, (int)T, (int)H, reverse, D * H, reverse ? (int)H : 0, withLen ? lenE.data() : nullptr,
      xp.data(), whh.data(), bhh.data(), h0.data() + sl, c0.data() + sl, yG.data(),
      hnG.data() + sl, cnG.data() + sl, nullptr, 0, wt.data(), nullptr, p, kSeed, kOffset, sd);
  if (e) { printf("GPU scan err %d %s\n", (int)e, tag.c_str()); cur->ok(tag, 1); return; }
  cmp("y", tag, yC.data(), yG.data(), yC.size());
  cmp("hn", tag, hnC.data() + sl, hnG.data() + sl, B * H);
  cmp("cn", tag, cnC.data() + sl, cnG.data() + sl, B * H);
}

/// Rejected arguments: p >= 1, p < 0, p > 0 on another cell.
static void badArgs() {
  const R *w[4] = {};
  R z = 0;
  std::vector<char> s(64);
  cur->ok("p = 1 rejected", launch_rnn_forward_train<R, int32_t, CellLstm>(
                                nullptr, 1, 1, 1, 1, 1, 1, 0, &z, w, nullptr, nullptr, nullptr,
                                &z, nullptr, nullptr, &z, s.data(), nullptr, 1.0, 0, 0) !=
                                cudaErrorInvalidValue);
  cur->ok("p < 0 rejected", launch_rnn_backward_reserved<R, int32_t, CellLstm>(
                                nullptr, 1, 1, 1, 1, 1, 1, 0, &z, w, nullptr, nullptr, nullptr,
                                &z, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                s.data(), nullptr, -0.1, 0, 0) != cudaErrorInvalidValue);
  cur->ok("gru p > 0 rejected", launch_rnn_backward_ckpt<R, int32_t, CellGru>(
                                    nullptr, 1, 1, 1, 1, 1, 1, 0, &z, w, nullptr, nullptr,
                                    nullptr, &z, nullptr, nullptr, nullptr, nullptr, nullptr,
                                    nullptr, nullptr, 1, s.data(), nullptr, 0.5, 0, 0) !=
                                    cudaErrorInvalidValue);
  cur->ok("rnn p > 0 rejected", launch_rnn_backward<R, int32_t, CellRnnTanh>(
                                    nullptr, 1, 1, 1, 1, 1, 1, 0, &z, w, nullptr, nullptr,
                                    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                    nullptr, s.data(), nullptr, 0.5, 0, 0) !=
                                    cudaErrorInvalidValue);
}

int main(int argc, char **argv) {
  if (argc > 1) emu::g.optin = atoi(argv[1]); // small: W_hh from global memory
  const std::string sfx = std::string(" f64") + (argc > 1 ? " optin " + std::string(argv[1]) : "");
  const int64_t T = 6, I = 3, H = 4;
  for (double p : {0.0, 0.3, 0.7}) {
    emutest::Group G("zoneout lstm p=" + std::to_string(p).substr(0, 3) + sfx, 1e-11);
    cur = &G;
    for (int64_t L : {1, 2})
      for (int64_t D : {1, 2})
        for (int64_t every : {(int64_t)0, (int64_t)1, (int64_t)2, (int64_t)4, T + 3}) {
          const int v = (int)((L + D + every) % 3);
          if (v == 2)
            stackCase<int64_t>(p, 4, T, I, H, L, D, (int)(L + D) % 2, true, D == 2, every);
          else
            stackCase<int32_t>(p, v ? 4 : 3, T, I, H, L, D, 1, v == 1, L == 2, every);
        }
    stackCase<int32_t>(p, 3, 0, I, H, 2, 2, 1, false, true, 0); // T = 0
    stackCase<int32_t>(p, 3, 0, I, H, 2, 2, 1, false, true, 2);
    // The binomial schedule: the advanced c recursion regenerates the masks.
    stackCase<int32_t>(p, 4, T, I, H, 2, 2, 1, true, true, 0, 1);
    stackCase<int64_t>(p, 3, T, I, H, 1, 2, 0, true, false, 0, 3);
    for (int rev = 0; rev < 2; ++rev) {
      scanCase<int32_t>(p, 2 + rev, rev, rev == 0);
      scanCase<int64_t>(p, 1, rev, true);
    }
  }
  {
    emutest::Group G("zoneout masks" + sfx, 0);
    cur = &G;
    badArgs();
    const double frac = maskChecked ? (double)maskZoned / (double)maskChecked : 0;
    printf("zoneout masks: %ld units checked, %ld zoned out (%.3f), %ld differ\n", maskChecked,
           maskZoned, frac, maskBad);
    G.ok("mask mismatches", maskBad);
    G.ok("units checked", maskChecked == 0);
  }
  return emutest::finish();
}
