//===- emu_bf16.h - bf16 inputs for the emulation tests ---------*- C++ -*-===//
//
// Test-only, beside emu_test.h for the tests of bf16 kernels (it needs the
// runtime's include directory, which some emulation tests do not pass).
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_TEST_EMU_BF16_H
#define NNCC_TEST_EMU_BF16_H

#include "emu_test.h"
#include "nncc/Kernels/Bf16.h"

namespace emutest {

/// n bf16 values drawn N(0, 1), and the same values widened to float (the
/// f32 twin's inputs).
struct Bf16Values {
  std::vector<nncc::kernels::bf16_t> b;
  std::vector<float> f;
};
inline Bf16Values normal_bf16(size_t n) {
  std::normal_distribution<float> nd(0, 1);
  Bf16Values v{std::vector<nncc::kernels::bf16_t>(n), std::vector<float>(n)};
  for (size_t i = 0; i < n; ++i) {
    v.b[i] = nncc::kernels::bf16_from_float(nd(rng));
    v.f[i] = nncc::kernels::bf16_to_float(v.b[i]);
  }
  return v;
}

} // namespace emutest

#endif
