// CUDA-emulation parity: runtime/include/nncc/Kernels/CUDA/RecurrentBackward.cuh
// (training forward with reserve / checkpoints / outputs only, backward from
// the reserve, recompute, checkpoint and binomial-schedule backward, the
// one-step cell backward) against the
// CPU kernels of libnncc_kernels.so, f64, every cell kind, stacked and
// bidirectional, with and without lengths (i32 and i64), states and biases.
// Ported from a colleague's prototype (5,578 comparisons, worst 1.4e-15).
//
// usage: recurrent [OPTIN_BYTES [MODE]]  OPTIN_BYTES small: W_hh is read from
// global memory instead of shared memory; MODE 0 everything, 1 the T = 0 /
// B = 0 cases, 2 two stacked cases with lengths.
#include "nncc/Kernels/CUDA/RecurrentBackward.cuh"
#include "nncc/Kernels/Kernels.h"

#include "emu_test.h"
#include "rnn_stack.h"

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

template <typename Len, int Kind>
void stackCase(int64_t B, int64_t T, int64_t I, int64_t H, int64_t L, int64_t D, int hb,
               bool withLen, bool states, bool adj, int64_t every, int64_t snaps = 0) {
  const int cell = Kind, G = cell_gates(Kind);
  const int64_t GH = G * H, DH = D * H, BT = B * T;
  std::string tag = "cell" + std::to_string(cell) + " B" + std::to_string(B) + " T" +
                    std::to_string(T) + " L" + std::to_string(L) + " D" + std::to_string(D) +
                    " hb" + std::to_string(hb) + " len" + std::to_string(withLen) + "/" +
                    std::to_string(sizeof(Len)) + " st" + std::to_string(states) + " adj" +
                    std::to_string(adj) + " k" + std::to_string(every) + " s" +
                    std::to_string(snaps);
  emutest::RnnStack<Len> S(B, T, I, H, L, D, G, hb, withLen);
  auto &W = S.W;
  auto &w = S.w;
  auto &x = S.x;
  const int32_t *lc = S.lc();
  const Len *lg = S.lg();
  const R *h0p = states ? S.h0.data() : nullptr;
  const R *c0p = states && Kind == CellLstm ? S.c0.data() : nullptr;
  // Forward.
  int64_t resBytes = every ? nncc_rnn_reserve_ckpt_size(cell, B, T, H, L, D, every, 8)
                     : snaps ? L * B * T * D * H * 8
                             : nncc_rnn_reserve_size(cell, B, T, H, L, D, 8);
  if ((uint64_t)resBytes / 8 != (uint64_t)rnn_reserve_elems(cell, B, T, H, L, D, every, snaps))
    cur->ok(tag + " reserve size", 1);
  std::vector<R> resC(resBytes / 8 + 1, NAN), resG(resBytes / 8 + 1, NAN);
  std::vector<R> yC = nanv(BT * DH), yG = nanv(BT * DH), hnC = nanv(L * D * B * H),
                 hnG = nanv(L * D * B * H), cnC = nanv(L * D * B * H), cnG = nanv(L * D * B * H);
  std::vector<char> ws(nncc_rnn_forward_train_workspace_size(cell, B, T, H, 8) + 64);
  const nncc_rnn_params prm =
      emutest::rnnParams(cell, B, T, I, H, L, D, hb, lc, 0, 0, 0, every, snaps);
  int rc = nncc_rnn_forward_train_f64(&prm, x.data(), w.data(), h0p, c0p, yC.data(), hnC.data(),
                                      Kind == CellLstm ? cnC.data() : nullptr, resC.data(),
                                      ws.data());
  if (rc) { printf("CPU fwd rc %d %s\n", rc, tag.c_str()); cur->ok(tag, 1); return; }
  std::vector<char> gs(rnn_forward_train_scratch_bytes(cell, B, T, H, 8), (char)0xff);
  cudaError_t e = every
      ? launch_rnn_forward_train_ckpt<R, Len, Kind>(nullptr, B, T, I, H, L, D, hb, x.data(),
            w.data(), h0p, c0p, lg, yG.data(), hnG.data(), Kind == CellLstm ? cnG.data() : nullptr,
            resG.data(), every, gs.data() + 8, nullptr)
      : snaps ? launch_rnn_forward_train_revolve<R, Len, Kind>(nullptr, B, T, I, H, L, D, hb,
            x.data(), w.data(), h0p, c0p, lg, yG.data(), hnG.data(),
            Kind == CellLstm ? cnG.data() : nullptr, resG.data(), gs.data() + 8, nullptr)
      : launch_rnn_forward_train<R, Len, Kind>(nullptr, B, T, I, H, L, D, hb, x.data(), w.data(),
            h0p, c0p, lg, yG.data(), hnG.data(), Kind == CellLstm ? cnG.data() : nullptr,
            resG.data(), gs.data() + 8, nullptr);
  if (e) { printf("GPU fwd err %d %s\n", (int)e, tag.c_str()); cur->ok(tag, 1); return; }
  cmp("y", tag, yC.data(), yG.data(), yC.size());
  cmp("hn", tag, hnC.data(), hnG.data(), hnC.size());
  if (Kind == CellLstm) cmp("cn", tag, cnC.data(), cnG.data(), cnC.size());
  cmp("reserve", tag, resC.data(), resG.data(), resC.size());
  // Backward (each side from its own reserve).
  auto dy = rnd(BT * DH), dhn = rnd(L * D * B * H), dcn = rnd(L * D * B * H);
  const R *dyp = adj ? dy.data() : nullptr, *dhnp = adj ? dhn.data() : nullptr;
  const R *dcnp = adj && Kind == CellLstm ? dcn.data() : nullptr;
  if (!adj) dyp = dy.data(); // dy always given unless tested null below
  std::vector<R> dxC = nanv(BT * I), dxG = nanv(BT * I), dh0C = nanv(L * D * B * H),
                 dh0G = nanv(L * D * B * H), dc0C = nanv(L * D * B * H), dc0G = nanv(L * D * B * H);
  std::vector<std::vector<R>> dWC, dWG;
  for (auto &v : W) { dWC.push_back(nanv(v.size())); dWG.push_back(nanv(v.size())); }
  std::vector<R *> dwC, dwG;
  for (size_t i = 0; i < W.size(); ++i) { dwC.push_back(dWC[i].data()); dwG.push_back(dWG[i].data()); }
  std::vector<char> bws(every ? nncc_rnn_backward_ckpt_workspace_size(cell, B, T, I, H, L, D, every, 8)
                        : snaps ? nncc_rnn_backward_revolve_workspace_size(cell, B, T, I, H, L, D, snaps, 8)
                              : nncc_rnn_backward_reserved_workspace_size(cell, B, T, H, L, D, 8));
  int64_t advancedC = -1, advancedG = -1;
  rc = nncc_rnn_backward_f64(&prm, x.data(), w.data(), h0p, c0p, resC.data(), dyp, dhnp, dcnp,
                             dxC.data(), dh0C.data(), Kind == CellLstm ? dc0C.data() : nullptr,
                             dwC.data(), bws.data(), snaps ? &advancedC : nullptr);
  if (rc) { printf("CPU bwd rc %d %s\n", rc, tag.c_str()); cur->ok(tag, 1); return; }
  uint64_t gb = every ? rnn_backward_ckpt_scratch_bytes(cell, B, T, I, H, L, D, every, 8)
                : snaps ? rnn_backward_revolve_scratch_bytes(cell, B, T, I, H, L, D, snaps, 8)
                      : rnn_backward_reserved_scratch_bytes(cell, B, T, H, L, D, 8);
  std::vector<char> gbs(gb, (char)0xff);
  e = every ? launch_rnn_backward_ckpt<R, Len, Kind>(nullptr, B, T, I, H, L, D, hb, x.data(),
                  w.data(), h0p, c0p, lg, resG.data(), dyp, dhnp, dcnp, dxG.data(), dh0G.data(),
                  Kind == CellLstm ? dc0G.data() : nullptr, dwG.data(), every, gbs.data() + 8, nullptr)
      : snaps ? launch_rnn_backward_revolve<R, Len, Kind>(nullptr, B, T, I, H, L, D, hb, x.data(),
                  w.data(), h0p, c0p, lg, resG.data(), dyp, dhnp, dcnp, dxG.data(), dh0G.data(),
                  Kind == CellLstm ? dc0G.data() : nullptr, dwG.data(), snaps, &advancedG,
                  gbs.data() + 8, nullptr)
            : launch_rnn_backward_reserved<R, Len, Kind>(nullptr, B, T, I, H, L, D, hb, x.data(),
                  w.data(), h0p, c0p, lg, resG.data(), dyp, dhnp, dcnp, dxG.data(), dh0G.data(),
                  Kind == CellLstm ? dc0G.data() : nullptr, dwG.data(), gbs.data() + 8, nullptr);
  if (e) { printf("GPU bwd err %d %s\n", (int)e, tag.c_str()); cur->ok(tag, 1); return; }
  cmp("dx", tag, dxC.data(), dxG.data(), dxC.size());
  cmp("dh0", tag, dh0C.data(), dh0G.data(), dh0C.size());
  if (Kind == CellLstm) cmp("dc0", tag, dc0C.data(), dc0G.data(), dc0C.size());
  for (size_t i = 0; i < W.size(); ++i)
    cmp(("dw" + std::to_string(i)).c_str(), tag, dWC[i].data(), dWG[i].data(), W[i].size());
  // The binomial schedule: as many recomputed forward steps as the CPU's
  // (its first row is full, so the longest length is T), the optimum.
  if (B > 0 && snaps && (advancedG != advancedC ||
                advancedG != (Kind == CellLstm ? L * D * revolve_forward_steps(T, snaps) : 0))) {
    printf("FAIL %s: recomputed steps %lld (CPU %lld)\n", tag.c_str(), (long long)advancedG,
           (long long)advancedC);
    cur->ok(tag + " recomputed steps", 1);
  }
  if (!every && !snaps) {
    // Recompute variant against the same CPU result.
    std::vector<R> dx2 = nanv(BT * I), dh02 = nanv(L * D * B * H), dc02 = nanv(L * D * B * H);
    std::vector<std::vector<R>> dW2;
    std::vector<R *> dw2;
    for (auto &v : W) dW2.push_back(nanv(v.size()));
    for (auto &v : dW2) dw2.push_back(v.data());
    std::vector<char> g2(rnn_backward_scratch_bytes(cell, B, T, H, L, D, 8), (char)0xff);
    e = launch_rnn_backward<R, Len, Kind>(nullptr, B, T, I, H, L, D, hb, x.data(), w.data(), h0p,
            c0p, lg, dyp, dhnp, dcnp, dx2.data(), dh02.data(),
            Kind == CellLstm ? dc02.data() : nullptr, dw2.data(), g2.data(), nullptr);
    if (e) { printf("GPU bwd2 err %d %s\n", (int)e, tag.c_str()); cur->ok(tag, 1); return; }
    cmp("dx(recompute)", tag, dxC.data(), dx2.data(), dxC.size());
    cmp("dh0(recompute)", tag, dh0C.data(), dh02.data(), dh0C.size());
    for (size_t i = 0; i < W.size(); ++i)
      cmp("dw(recompute)", tag, dWC[i].data(), dW2[i].data(), W[i].size());
  }
}

template <int Kind> void cellCase(int64_t B, int64_t H, bool withC, bool adj, bool bias) {
  const int G = cell_gates(Kind);
  const int64_t GH = G * H;
  std::string tag = "cellstep" + std::to_string(Kind) + " c" + std::to_string(withC) + " adj" +
                    std::to_string(adj) + " b" + std::to_string(bias);
  auto xp = rnd(B * GH, 1.0), h = rnd(B * H), c = rnd(B * H), whh = rnd(GH * H), bhh = rnd(GH);
  auto dho = rnd(B * H), dco = rnd(B * H);
  std::vector<R> dxC = nanv(B * GH), dxG = nanv(B * GH), dhC = nanv(B * H), dhG = nanv(B * H),
                 dcC = nanv(B * H), dcG = nanv(B * H), dwC(GH * H, 0), dwG(GH * H, 0), dbC(GH, 0),
                 dbG(GH, 0);
  const R *cp = withC ? c.data() : nullptr, *bp = bias ? bhh.data() : nullptr;
  const R *dhop = adj ? dho.data() : nullptr, *dcop = adj ? dco.data() : nullptr;
  std::vector<char> ws(nncc_rnn_cell_backward_workspace_size(Kind, B, H, 8) + 64);
  int rc = nncc_rnn_cell_backward_f64(Kind, B, H, xp.data(), h.data(), cp, whh.data(), bp, dhop,
                                      dcop, dxC.data(), dhC.data(), dcC.data(), dwC.data(),
                                      dbC.data(), ws.data());
  if (rc) { printf("CPU cell rc %d\n", rc); cur->ok(tag, 1); return; }
  std::vector<char> gs(rnn_cell_backward_scratch_bytes(Kind, B, H, 8), (char)0xff);
  cudaError_t e = launch_rnn_cell_backward<R, Kind>(nullptr, B, H, xp.data(), h.data(), cp,
      whh.data(), bp, dhop, dcop, dxG.data(), dhG.data(), dcG.data(), dwG.data(), dbG.data(),
      gs.data() + 8, nullptr);
  if (e) { printf("GPU cell err %d\n", (int)e); cur->ok(tag, 1); return; }
  cmp("dxproj", tag, dxC.data(), dxG.data(), dxC.size());
  cmp("dh", tag, dhC.data(), dhG.data(), dhC.size());
  if (Kind == CellLstm) cmp("dc", tag, dcC.data(), dcG.data(), dcC.size());
  cmp("dwhh", tag, dwC.data(), dwG.data(), dwC.size());
  cmp("dbhh", tag, dbC.data(), dbG.data(), dbC.size());
}

/// rnn_col_sum_add alone (the bias gradients' column sums) at sizes the
/// stacks do not reach: rows over several passes of the CTA's 32 warps,
/// columns over several CTAs (the last one partial), a row stride past n,
/// adding into both outputs.
static void colSumCase(int64_t rows, int64_t n, int64_t lda) {
  std::vector<R> a = rnd((size_t)(rows * lda)), out = rnd((size_t)n), out2 = rnd((size_t)n);
  std::vector<R> refOut = out, refOut2 = out2;
  for (int64_t j = 0; j < n; ++j) {
    R s = 0;
    for (int64_t r = 0; r < rows; ++r) s += a[r * lda + j];
    refOut[j] += s, refOut2[j] += s;
  }
  const std::string tag = "col sums rows" + std::to_string(rows) + " n" + std::to_string(n);
  cur->ok(tag, (int)rnn_col_sum_add<R>(rows, n, a.data(), lda, out.data(), out2.data(), nullptr));
  cmp("out", tag, refOut.data(), out.data(), n);
  cmp("out2", tag, refOut2.data(), out2.data(), n);
}

static int mode = 0;
template <int Kind> void allFor() {
  const int64_t T = 5, I = 3, H = 4;
  if (mode == 1) {
    stackCase<int32_t, Kind>(3, 0, I, H, 2, 2, 1, false, true, true, 0);
    stackCase<int32_t, Kind>(3, 0, I, H, 2, 2, 1, false, true, true, 2);
    stackCase<int32_t, Kind>(0, T, I, H, 1, 1, 1, false, true, true, 0);
    stackCase<int32_t, Kind>(0, T, I, H, 1, 1, 1, false, true, true, 2);
    stackCase<int32_t, Kind>(3, 0, I, H, 2, 2, 1, false, true, true, 0, 2);
    stackCase<int32_t, Kind>(0, T, I, H, 1, 1, 1, false, true, true, 0, 2);
    return;
  }
  if (mode == 2) {
    stackCase<int64_t, Kind>(4, T, I, H, 2, 2, 1, true, true, true, 0);
    stackCase<int32_t, Kind>(4, T, I, H, 2, 2, 0, true, true, true, 2);
    stackCase<int32_t, Kind>(4, T, I, H, 2, 2, 1, true, true, true, 0, 2);
    return;
  }
  for (int64_t L : {1, 2})
    for (int64_t D : {1, 2})
      for (int wl = 0; wl < 3; ++wl)
        for (int64_t every : {0, 1, 2, 3, 5, 9}) {
          if (wl == 2) stackCase<int64_t, Kind>(4, T, I, H, L, D, (int)(L + D) % 2, true, D == 2, L == 1, every);
          else stackCase<int32_t, Kind>(wl ? 4 : 3, T, I, H, L, D, 1, wl == 1, L == 2, D == 1, every);
        }
  // The binomial schedule: 1, 2, T - 1 and more than T snapshots.
  for (int64_t snaps : {1, 2, 4, 9}) {
    stackCase<int32_t, Kind>(4, T, I, H, 2, 2, 1, true, true, true, 0, snaps);
    stackCase<int64_t, Kind>(3, T, I, H, 1, 1, 0, snaps % 2 == 0, false, false, 0, snaps);
  }
  stackCase<int32_t, Kind>(3, 0, I, H, 2, 2, 1, false, true, true, 0);   // T = 0
  stackCase<int32_t, Kind>(0, T, I, H, 1, 1, 1, false, true, true, 0);   // B = 0
  for (int wc = 0; wc < 2; ++wc)
    for (int adj = 0; adj < 2; ++adj) cellCase<Kind>(3, H, wc, adj, adj == wc);
}

int main(int argc, char **argv) {
  if (argc > 1) emu::g.optin = atoi(argv[1]); // small: W_hh from global memory
  if (argc > 2) mode = atoi(argv[2]);
  const std::string sfx = std::string(" f64") + (argc > 1 ? " optin " + std::string(argv[1]) : "") +
                          (mode ? " mode " + std::to_string(mode) : "");
  if (mode == 0) {
    emutest::Group G("recurrent col sums" + sfx, 1e-12);
    cur = &G;
    colSumCase(100, 70, 75);
    colSumCase(1, 33, 33);
  }
  { emutest::Group G("recurrent rnn_tanh" + sfx, 1e-11); cur = &G; allFor<CellRnnTanh>(); }
  { emutest::Group G("recurrent rnn_relu" + sfx, 1e-11); cur = &G; allFor<CellRnnRelu>(); }
  { emutest::Group G("recurrent lstm" + sfx, 1e-11); cur = &G; allFor<CellLstm>(); }
  { emutest::Group G("recurrent gru" + sfx, 1e-11); cur = &G; allFor<CellGru>(); }
  { emutest::Group G("recurrent gru_cho" + sfx, 1e-11); cur = &G; allFor<CellGruCho>(); }
  return emutest::finish();
}
