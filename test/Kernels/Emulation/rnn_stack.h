// The operands of one recurrent-stack case of the emulation tests
// (recurrent.cpp, zoneout.cpp): weights per layer and direction in PyTorch's
// _flat_weights order, x, h0 and c0, drawn in that order from emutest's
// generator, and the lengths as i32 (the CPU kernels) and as Len (CUDA).
#ifndef NNCC_TEST_EMULATION_RNN_STACK_H
#define NNCC_TEST_EMULATION_RNN_STACK_H

#include "emu_test.h"
#include "nncc/Kernels/Kernels.h"

#include <cstdint>
#include <vector>

namespace emutest {

template <typename Len> struct RnnStack {
  std::vector<std::vector<double>> W;
  std::vector<const double *> w;
  std::vector<double> x, h0, c0;
  std::vector<int32_t> len32;
  std::vector<Len> lenE;
  bool withLen;

  RnnStack(int64_t B, int64_t T, int64_t I, int64_t H, int64_t L, int64_t D, int gates,
           int hb, bool withLen)
      : withLen(withLen) {
    const int64_t GH = gates * H, DH = D * H;
    for (int64_t l = 0; l < L; ++l)
      for (int64_t d = 0; d < D; ++d) {
        W.push_back(rnd(GH * (l == 0 ? I : DH)));
        W.push_back(rnd(GH * H));
        if (hb) {
          W.push_back(rnd(GH));
          W.push_back(rnd(GH));
        }
      }
    for (auto &v : W)
      w.push_back(v.data());
    x = rnd(B * T * I + 1, 1.0);
    x.resize(B * T * I);
    h0 = rnd(L * D * B * H);
    c0 = rnd(L * D * B * H);
    // Lengths in [0, T], the first row full.
    for (int64_t b = 0; b < B; ++b) {
      int32_t n = withLen ? (int32_t)((b * 5 + 3) % (T + 1)) : (int32_t)T;
      if (withLen && b == 0)
        n = (int32_t)T;
      len32.push_back(n);
      lenE.push_back((Len)n);
    }
  }
  const int32_t *lc() const { return withLen ? len32.data() : nullptr; }
  const Len *lg() const { return withLen ? lenE.data() : nullptr; }
};

/// The nncc_rnn_params of a case for the CPU stack kernels.
inline nncc_rnn_params rnnParams(int cell, int64_t B, int64_t T, int64_t I, int64_t H, int64_t L,
                                 int64_t D, int hb, const int32_t *lengths, double zoneout,
                                 uint64_t seed, uint64_t offset, int64_t every,
                                 int64_t snapshots) {
  nncc_rnn_params p = {};
  p.cell = cell;
  p.has_bias = hb;
  p.batch = B;
  p.steps = T;
  p.input_size = I;
  p.hidden_size = H;
  p.num_layers = L;
  p.num_directions = D;
  p.lengths = lengths;
  p.zoneout = zoneout;
  p.seed = seed;
  p.offset = offset;
  p.checkpoint_every = every;
  p.checkpoint_snapshots = snapshots;
  return p;
}

} // namespace emutest

#endif
