// CUDA-emulation parity of the bf16 stack training launchers
// (RecurrentBackward.cuh, "bf16 stacks": launch_rnn_forward_train(_ckpt,
// _revolve), launch_rnn_backward_reserved, launch_rnn_backward,
// launch_rnn_backward_ckpt, launch_rnn_backward_revolve with T = bf16_t)
// against the float launchers run on the same bf16 values widened to float:
// every cell kind, stacked and bidirectional, biases or not, lengths (i32,
// i64) or none, states or none, BPTT checkpoints, the binomial schedule and
// LSTM zoneout, absent outputs (dx, one weight gradient); and the single-step
// cell backward (launch_rnn_cell_backward, the ODE-RNN's) likewise.
//
// Tolerance: 0 ulps. A bf16 launch is the float launch on widened copies
// with its outputs rounded once, and its backward reads the bf16 reserve the
// bf16 forward wrote; so every bf16 output must be the float output (of the
// float backward given that reserve widened) rounded once. A weight widened
// into the wrong place, a size off by one layer, a missing copy or an
// output not rounded fails. The scratch is sized by
// rnn_stack_forward_scratch_bytes / rnn_stack_backward_scratch_bytes at
// sizeof(bf16_t) and followed by a canary that must stay untouched.
//
// usage: recurrent_train_bf16
#include "nncc/Kernels/CUDA/RecurrentBackward.cuh"

#include "emu_bf16.h"
#include "rnn_stack.h"

#include <string>

using namespace nncc::kernels;
using namespace nncc::kernels::cuda;
using namespace emutest;

namespace {

std::vector<bf16_t> toBf16(const std::vector<double> &v) {
  std::vector<bf16_t> b(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    b[i] = bf16_from_float((float)v[i]);
  return b;
}

std::vector<float> widen(const std::vector<bf16_t> &b) {
  std::vector<float> f(b.size());
  for (size_t i = 0; i < b.size(); ++i)
    f[i] = bf16_to_float(b[i]);
  return f;
}

/// n NaNs; data() is not null even for n = 0 (launchers reject a null y).
template <typename T> std::vector<T> nans(size_t n) {
  std::vector<T> v;
  v.reserve(n + 1);
  if constexpr (std::is_same_v<T, bf16_t>)
    v.assign(n, bf16_t{0x7fc0});
  else
    v.assign(n, NAN);
  return v;
}

/// A device scratch of `bytes` (0xff-filled) followed by a canary.
struct Scratch {
  static constexpr size_t kCanary = 4096;
  std::vector<char> buf;
  explicit Scratch(uint64_t bytes) : buf(bytes + kCanary, (char)0xff) {
    for (size_t i = 0; i < kCanary; ++i)
      buf[bytes + i] = (char)(i * 7 + 1);
  }
  char *data() { return buf.data(); }
  bool intact() const {
    const size_t bytes = buf.size() - kCanary;
    for (size_t i = 0; i < kCanary; ++i)
      if (buf[bytes + i] != (char)(i * 7 + 1))
        return false;
    return true;
  }
};

/// The operands of one case in both element types (bf16, and the same
/// values widened to float).
template <typename Len> struct Operands {
  std::vector<std::vector<bf16_t>> Wb;
  std::vector<std::vector<float>> Wf;
  std::vector<const bf16_t *> wb;
  std::vector<const float *> wf;
  std::vector<bf16_t> xb, h0b, c0b, dyb, dhnb, dcnb;
  std::vector<float> xf, h0f, c0f, dyf, dhnf, dcnf;
  RnnStack<Len> S;
  Operands(int64_t B, int64_t T, int64_t I, int64_t H, int64_t L, int64_t D, int gates, int hb,
           bool withLen)
      : S(B, T, I, H, L, D, gates, hb, withLen) {
    for (auto &v : S.W) {
      Wb.push_back(toBf16(v));
      Wf.push_back(widen(Wb.back()));
    }
    for (size_t i = 0; i < Wb.size(); ++i) {
      wb.push_back(Wb[i].data());
      wf.push_back(Wf[i].data());
    }
    xb = toBf16(S.x), h0b = toBf16(S.h0), c0b = toBf16(S.c0);
    xf = widen(xb), h0f = widen(h0b), c0f = widen(c0b);
    const int64_t states = L * D * B * H;
    dyb = toBf16(rnd(B * T * D * H)), dhnb = toBf16(rnd(states)), dcnb = toBf16(rnd(states));
    dyf = widen(dyb), dhnf = widen(dhnb), dcnf = widen(dcnb);
  }
};

struct Case {
  int64_t B, T, I, H, L, D;
  int hb;
  int lens;    // 0: none, 4: int32, 8: int64
  bool states; // h0/c0, h_n/c_n, dh_n/dc_n and dh0/dc0
  int64_t every;
  double zoneout;
  bool someNull; // dx and the first weight gradient not wanted
  int64_t snapshots = 0; // the binomial schedule (every = 0)
};

/// Gradients of one backward, in element type T.
template <typename T> struct Grads {
  std::vector<T> dx, dh0, dc0;
  std::vector<std::vector<T>> dW;
  std::vector<T *> dw;
  Grads(const Case &c, const std::vector<std::vector<double>> &W) {
    const int64_t states = c.L * c.D * c.B * c.H;
    dx = nans<T>(c.B * c.T * c.I), dh0 = nans<T>(states), dc0 = nans<T>(states);
    for (auto &v : W)
      dW.push_back(nans<T>(v.size()));
    for (size_t i = 0; i < dW.size(); ++i)
      dw.push_back(c.someNull && i == 0 ? nullptr : dW[i].data());
  }
};

template <typename Len, int Kind> void stackCase(Bf16UlpGroup &Gr, const Case &c) {
  const int64_t B = c.B, T = c.T, I = c.I, H = c.H, L = c.L, D = c.D, every = c.every;
  const int64_t snaps = c.snapshots;
  const int64_t BT = B * T, DH = D * H, states = L * D * B * H;
  const bool lstm = Kind == CellLstm;
  std::string tag = "B" + std::to_string(B) + " T" + std::to_string(T) + " L" +
                    std::to_string(L) + " D" + std::to_string(D) + " hb" + std::to_string(c.hb) +
                    " len" + std::to_string(c.lens) + " st" + std::to_string(c.states) + " k" +
                    std::to_string(every) + " s" + std::to_string(snaps) +
                    (c.zoneout > 0 ? " zoneout" : "") +
                    (c.someNull ? " null-grads" : "");
  Operands<Len> O(B, T, I, H, L, D, cell_gates(Kind), c.hb, c.lens != 0);
  const Len *lens = O.S.lg();
  const bool st = c.states;
  const uint64_t seed = 7, offset = 3;
  auto same = [&](const std::string &what, const std::vector<bf16_t> &got,
                  const std::vector<float> &ref) {
    ++Gr.checks;
    std::string first;
    const size_t bad = got.size() == ref.size()
                           ? bf16_mismatches(got.data(), 0, ref.data(), 0, 1, (int64_t)got.size(),
                                             &first)
                           : 1;
    if (bad) {
      ++Gr.fails;
      printf("FAIL %s: %s %s: %zu of %zu differ, first %s\n", Gr.name.c_str(), tag.c_str(),
             what.c_str(), bad, got.size(), first.c_str());
    }
  };
  auto ok = [&](const std::string &what, cudaError_t e) {
    Gr.ok(tag + " " + what, (long)e);
  };

  // Forward, both element types.
  const int64_t resElems = rnn_reserve_elems(Kind, B, T, H, L, D, every, snaps);
  std::vector<float> yF = nans<float>(BT * DH), hnF = nans<float>(states),
                     cnF = nans<float>(states), resF = nans<float>(resElems);
  std::vector<bf16_t> yB = nans<bf16_t>(BT * DH), hnB = nans<bf16_t>(states),
                      cnB = nans<bf16_t>(states), resB = nans<bf16_t>(resElems);
  Scratch sF(rnn_stack_forward_scratch_bytes(Kind, B, T, I, H, L, D, c.hb, every, snaps, 4));
  Scratch sB(rnn_stack_forward_scratch_bytes(Kind, B, T, I, H, L, D, c.hb, every, snaps, 2));
  const float *h0f = st ? O.h0f.data() : nullptr, *c0f = st && lstm ? O.c0f.data() : nullptr;
  const bf16_t *h0b = st ? O.h0b.data() : nullptr, *c0b = st && lstm ? O.c0b.data() : nullptr;
  float *hnf = st ? hnF.data() : nullptr, *cnf = st && lstm ? cnF.data() : nullptr;
  bf16_t *hnb = st ? hnB.data() : nullptr, *cnb = st && lstm ? cnB.data() : nullptr;
  if (every) {
    ok("f32 forward", launch_rnn_forward_train_ckpt<float, Len, Kind>(
                          nullptr, B, T, I, H, L, D, c.hb, O.xf.data(), O.wf.data(), h0f, c0f,
                          lens, yF.data(), hnf, cnf, resF.data(), every, sF.data(), nullptr,
                          c.zoneout, seed, offset));
    ok("bf16 forward", launch_rnn_forward_train_ckpt<bf16_t, Len, Kind>(
                           nullptr, B, T, I, H, L, D, c.hb, O.xb.data(), O.wb.data(), h0b, c0b,
                           lens, yB.data(), hnb, cnb, resB.data(), every, sB.data(), nullptr,
                           c.zoneout, seed, offset));
  } else if (snaps) {
    ok("f32 forward", launch_rnn_forward_train_revolve<float, Len, Kind>(
                          nullptr, B, T, I, H, L, D, c.hb, O.xf.data(), O.wf.data(), h0f, c0f,
                          lens, yF.data(), hnf, cnf, resF.data(), sF.data(), nullptr, c.zoneout,
                          seed, offset));
    ok("bf16 forward", launch_rnn_forward_train_revolve<bf16_t, Len, Kind>(
                           nullptr, B, T, I, H, L, D, c.hb, O.xb.data(), O.wb.data(), h0b, c0b,
                           lens, yB.data(), hnb, cnb, resB.data(), sB.data(), nullptr,
                           c.zoneout, seed, offset));
  } else {
    ok("f32 forward", launch_rnn_forward_train<float, Len, Kind>(
                          nullptr, B, T, I, H, L, D, c.hb, O.xf.data(), O.wf.data(), h0f, c0f,
                          lens, yF.data(), hnf, cnf, resF.data(), sF.data(), nullptr, c.zoneout,
                          seed, offset));
    ok("bf16 forward", launch_rnn_forward_train<bf16_t, Len, Kind>(
                           nullptr, B, T, I, H, L, D, c.hb, O.xb.data(), O.wb.data(), h0b, c0b,
                           lens, yB.data(), hnb, cnb, resB.data(), sB.data(), nullptr,
                           c.zoneout, seed, offset));
  }
  same("y", yB, yF);
  same("h_n", hnB, hnF);
  if (lstm)
    same("c_n", cnB, cnF);
  same("reserve", resB, resF);
  Gr.ok(tag + " forward scratch canary", !sB.intact() || !sF.intact());

  // Backwards: reserved (or checkpointed), then recomputed; the float side
  // reads the bf16 reserve widened.
  const std::vector<float> resW = widen(resB);
  const float *dyf = O.dyf.data(), *dhnf = st ? O.dhnf.data() : nullptr,
              *dcnf = st && lstm ? O.dcnf.data() : nullptr;
  const bf16_t *dyb = O.dyb.data(), *dhnb = st ? O.dhnb.data() : nullptr,
               *dcnb = st && lstm ? O.dcnb.data() : nullptr;
  for (int recompute = 0; recompute < (every || snaps ? 1 : 2); ++recompute) {
    const std::string kind = every       ? "checkpointed"
                             : snaps     ? "binomial"
                             : recompute ? "recomputed"
                                         : "reserved";
    Grads<float> gF(c, O.S.W);
    Grads<bf16_t> gB(c, O.S.W);
    Scratch bF(rnn_stack_backward_scratch_bytes(Kind, B, T, I, H, L, D, c.hb, every, snaps,
                                                !recompute, 4));
    Scratch bB(rnn_stack_backward_scratch_bytes(Kind, B, T, I, H, L, D, c.hb, every, snaps,
                                                !recompute, 2));
    float *dxf = c.someNull ? nullptr : gF.dx.data(), *dh0f = st ? gF.dh0.data() : nullptr,
          *dc0f = st && lstm ? gF.dc0.data() : nullptr;
    bf16_t *dxb = c.someNull ? nullptr : gB.dx.data(), *dh0b = st ? gB.dh0.data() : nullptr,
           *dc0b = st && lstm ? gB.dc0.data() : nullptr;
    if (every) {
      ok("f32 " + kind, launch_rnn_backward_ckpt<float, Len, Kind>(
                            nullptr, B, T, I, H, L, D, c.hb, O.xf.data(), O.wf.data(), h0f, c0f,
                            lens, resW.data(), dyf, dhnf, dcnf, dxf, dh0f, dc0f, gF.dw.data(),
                            every, bF.data(), nullptr, c.zoneout, seed, offset));
      ok("bf16 " + kind, launch_rnn_backward_ckpt<bf16_t, Len, Kind>(
                             nullptr, B, T, I, H, L, D, c.hb, O.xb.data(), O.wb.data(), h0b,
                             c0b, lens, resB.data(), dyb, dhnb, dcnb, dxb, dh0b, dc0b,
                             gB.dw.data(), every, bB.data(), nullptr, c.zoneout, seed, offset));
    } else if (snaps) {
      int64_t stepsF = -1, stepsB = -1;
      ok("f32 " + kind, launch_rnn_backward_revolve<float, Len, Kind>(
                            nullptr, B, T, I, H, L, D, c.hb, O.xf.data(), O.wf.data(), h0f, c0f,
                            lens, resW.data(), dyf, dhnf, dcnf, dxf, dh0f, dc0f, gF.dw.data(),
                            snaps, &stepsF, bF.data(), nullptr, c.zoneout, seed, offset));
      ok("bf16 " + kind, launch_rnn_backward_revolve<bf16_t, Len, Kind>(
                             nullptr, B, T, I, H, L, D, c.hb, O.xb.data(), O.wb.data(), h0b,
                             c0b, lens, resB.data(), dyb, dhnb, dcnb, dxb, dh0b, dc0b,
                             gB.dw.data(), snaps, &stepsB, bB.data(), nullptr, c.zoneout, seed,
                             offset));
      Gr.ok(tag + " recomputed steps", stepsB != stepsF || (lstm && stepsB <= 0));
    } else if (!recompute) {
      ok("f32 " + kind, launch_rnn_backward_reserved<float, Len, Kind>(
                            nullptr, B, T, I, H, L, D, c.hb, O.xf.data(), O.wf.data(), h0f, c0f,
                            lens, resW.data(), dyf, dhnf, dcnf, dxf, dh0f, dc0f, gF.dw.data(),
                            bF.data(), nullptr, c.zoneout, seed, offset));
      ok("bf16 " + kind, launch_rnn_backward_reserved<bf16_t, Len, Kind>(
                             nullptr, B, T, I, H, L, D, c.hb, O.xb.data(), O.wb.data(), h0b,
                             c0b, lens, resB.data(), dyb, dhnb, dcnb, dxb, dh0b, dc0b,
                             gB.dw.data(), bB.data(), nullptr, c.zoneout, seed, offset));
    } else {
      ok("f32 " + kind, launch_rnn_backward<float, Len, Kind>(
                            nullptr, B, T, I, H, L, D, c.hb, O.xf.data(), O.wf.data(), h0f, c0f,
                            lens, dyf, dhnf, dcnf, dxf, dh0f, dc0f, gF.dw.data(), bF.data(),
                            nullptr, c.zoneout, seed, offset));
      ok("bf16 " + kind, launch_rnn_backward<bf16_t, Len, Kind>(
                             nullptr, B, T, I, H, L, D, c.hb, O.xb.data(), O.wb.data(), h0b,
                             c0b, lens, dyb, dhnb, dcnb, dxb, dh0b, dc0b, gB.dw.data(),
                             bB.data(), nullptr, c.zoneout, seed, offset));
    }
    same(kind + " dx", gB.dx, gF.dx);
    same(kind + " dh0", gB.dh0, gF.dh0);
    if (lstm)
      same(kind + " dc0", gB.dc0, gF.dc0);
    for (size_t i = 0; i < gB.dW.size(); ++i)
      same(kind + " dW" + std::to_string(i), gB.dW[i], gF.dW[i]);
    Gr.ok(tag + " " + kind + " scratch canary", !bB.intact() || !bF.intact());
  }
}

template <int Kind> void cellCases(const std::string &name) {
  Bf16UlpGroup Gr("bf16 " + name + " stack training", 0);
  const int64_t I = 5, H = 6, T = 7;
  stackCase<int32_t, Kind>(Gr, {3, T, I, H, 2, 2, 1, 4, true, 0, 0.0, false});
  stackCase<int64_t, Kind>(Gr, {4, T, I, H, 1, 1, 0, 8, false, 0, 0.0, true});
  stackCase<int32_t, Kind>(Gr, {2, T, I, H, 2, 1, 1, 0, true, 0, 0.0, false});
  if (Kind == CellLstm) {
    // BPTT checkpoints every 2 and 3 steps, zoneout with and without.
    stackCase<int32_t, Kind>(Gr, {3, T, I, H, 2, 2, 1, 4, true, 2, 0.0, false});
    stackCase<int64_t, Kind>(Gr, {4, T, I, H, 1, 2, 0, 8, true, 3, 0.25, true});
    stackCase<int32_t, Kind>(Gr, {3, T, I, H, 2, 1, 1, 4, true, 0, 0.25, false});
    // The binomial schedule, with and without zoneout.
    stackCase<int32_t, Kind>(Gr, {3, T, I, H, 2, 2, 1, 4, true, 0, 0.0, false, 2});
    stackCase<int64_t, Kind>(Gr, {4, T, I, H, 1, 2, 0, 8, true, 0, 0.25, true, 1});
  } else {
    stackCase<int32_t, Kind>(Gr, {3, T, I, H, 2, 2, 1, 4, true, 2, 0.0, false});
    stackCase<int32_t, Kind>(Gr, {3, T, I, H, 2, 2, 1, 4, true, 0, 0.0, false, 3});
  }
  // T = 0 and B = 0.
  stackCase<int32_t, Kind>(Gr, {3, 0, I, H, 2, 2, 1, 0, true, 0, 0.0, false});
  stackCase<int32_t, Kind>(Gr, {0, T, I, H, 1, 1, 1, 0, true, 0, 0.0, false});
}

/// launch_rnn_cell_backward<bf16_t> (one step, the ODE-RNN's cell) against
/// the float launcher on the widened values: 0 ulps for dxproj, dh, dc and
/// the accumulated dW_hh, db_hh (both start from a nonzero bf16 value, as
/// the launcher adds to them). `full`: c, b_hh, dh_out and dc_out given;
/// otherwise absent (null).
template <int Kind> void cellBackwardCase(Bf16UlpGroup &Gr, int64_t B, int64_t H, bool full) {
  const int64_t GH = cell_gates(Kind) * H;
  const bool lstm = Kind == CellLstm;
  auto draw = [](int64_t n) {
    Bf16Values v = normal_bf16((size_t)n);
    return v;
  };
  Bf16Values xproj = draw(B * GH), h = draw(B * H), c = draw(B * H), whh = draw(GH * H),
             bhh = draw(GH), dho = draw(B * H), dco = draw(B * H), dw0 = draw(GH * H),
             db0 = draw(GH);
  const bool withC = lstm && full;
  auto dxB = nans<bf16_t>(B * GH), dhB = nans<bf16_t>(B * H), dcB = nans<bf16_t>(B * H);
  auto dxF = nans<float>(B * GH), dhF = nans<float>(B * H), dcF = nans<float>(B * H);
  std::vector<bf16_t> dwB = dw0.b, dbB = db0.b;
  std::vector<float> dwF = dw0.f, dbF = db0.f;
  cublasHandle_t blas;
  cublasCreate(&blas);
  Scratch sB(rnn_cell_backward_scratch_bytes(Kind, B, H, sizeof(bf16_t)));
  Scratch sF(rnn_cell_backward_scratch_bytes(Kind, B, H, sizeof(float)));
  const std::string tag = "cell B" + std::to_string(B) + (full ? " full" : " bare");
  Gr.ok(tag + " float", launch_rnn_cell_backward<float, Kind>(
                            blas, B, H, xproj.f.data(), h.f.data(), withC ? c.f.data() : nullptr,
                            whh.f.data(), full ? bhh.f.data() : nullptr,
                            full ? dho.f.data() : nullptr, withC ? dco.f.data() : nullptr,
                            dxF.data(), dhF.data(), lstm ? dcF.data() : nullptr, dwF.data(),
                            full ? dbF.data() : nullptr, sF.data(), nullptr));
  Gr.ok(tag + " bf16", launch_rnn_cell_backward<bf16_t, Kind>(
                           blas, B, H, xproj.b.data(), h.b.data(), withC ? c.b.data() : nullptr,
                           whh.b.data(), full ? bhh.b.data() : nullptr,
                           full ? dho.b.data() : nullptr, withC ? dco.b.data() : nullptr,
                           dxB.data(), dhB.data(), lstm ? dcB.data() : nullptr, dwB.data(),
                           full ? dbB.data() : nullptr, sB.data(), nullptr));
  Gr.ok(tag + " scratch canary", !sB.intact());
  Gr.cmp(tag + " dxproj", dxF, dxB);
  Gr.cmp(tag + " dh", dhF, dhB);
  if (lstm)
    Gr.cmp(tag + " dc", dcF, dcB);
  Gr.cmp(tag + " dW_hh", dwF, dwB);
  if (full)
    Gr.cmp(tag + " db_hh", dbF, dbB);
  cublasDestroy(blas);
}

template <int Kind> void cellBackwardCases(const std::string &name) {
  Bf16UlpGroup Gr("bf16 " + name + " cell backward", 0);
  cellBackwardCase<Kind>(Gr, 3, 6, true);
  cellBackwardCase<Kind>(Gr, 2, 5, false);
  cellBackwardCase<Kind>(Gr, 0, 4, true);
}

} // namespace

int main() {
  cellCases<CellRnnTanh>("rnn_tanh");
  cellCases<CellRnnRelu>("rnn_relu");
  cellCases<CellLstm>("lstm");
  cellCases<CellGru>("gru");
  cellCases<CellGruCho>("gru_cho");
  cellBackwardCases<CellRnnTanh>("rnn_tanh");
  cellBackwardCases<CellLstm>("lstm");
  cellBackwardCases<CellGru>("gru");
  cellBackwardCases<CellGruCho>("gru_cho");
  {
    // The scratch functions: f32 / f64 sizes are the f32 launchers' own;
    // bf16 adds the fp32 copies.
    Bf16UlpGroup Gr("bf16 stack scratch sizes", 0);
    for (int64_t elem : {4, 8}) {
      Gr.ok("forward f32/f64", rnn_stack_forward_scratch_bytes(CellLstm, 3, 7, 5, 6, 2, 2, 1, 0,
                                                               0, elem) !=
                                   rnn_forward_train_scratch_bytes(CellLstm, 3, 7, 6, elem));
      Gr.ok("backward reserved f32/f64",
            rnn_stack_backward_scratch_bytes(CellGru, 3, 7, 5, 6, 2, 2, 1, 0, 0, 1, elem) !=
                rnn_backward_reserved_scratch_bytes(CellGru, 3, 7, 6, 2, 2, elem));
      Gr.ok("backward recomputed f32/f64",
            rnn_stack_backward_scratch_bytes(CellGru, 3, 7, 5, 6, 2, 2, 1, 0, 0, 0, elem) !=
                rnn_backward_scratch_bytes(CellGru, 3, 7, 6, 2, 2, elem));
      Gr.ok("backward checkpointed f32/f64",
            rnn_stack_backward_scratch_bytes(CellLstm, 3, 7, 5, 6, 2, 2, 1, 2, 0, 1, elem) !=
                rnn_backward_ckpt_scratch_bytes(CellLstm, 3, 7, 5, 6, 2, 2, 2, elem));
      Gr.ok("backward binomial f32/f64",
            rnn_stack_backward_scratch_bytes(CellLstm, 3, 7, 5, 6, 2, 2, 1, 0, 3, 1, elem) !=
                rnn_backward_revolve_scratch_bytes(CellLstm, 3, 7, 5, 6, 2, 2, 3, elem));
    }
    Gr.ok("bf16 forward > f32 forward",
          rnn_stack_forward_scratch_bytes(CellLstm, 3, 7, 5, 6, 2, 2, 1, 0, 0, 2) <=
              rnn_forward_train_scratch_bytes(CellLstm, 3, 7, 6, 4));
  }
  return finish();
}
