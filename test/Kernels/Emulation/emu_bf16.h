//===- emu_bf16.h - bf16 inputs and checks for emulation tests --*- C++ -*-===//
//
// Test-only, beside emu_test.h for the tests of bf16 kernels (it needs the
// runtime's include directory, which some emulation tests do not pass).
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_TEST_EMU_BF16_H
#define NNCC_TEST_EMU_BF16_H

#include "emu_test.h"
#include "nncc/Kernels/Bf16.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

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

/// n bf16 values drawn uniformly from shift + [-sc, sc), and the same
/// values widened to float.
inline Bf16Values uniform_bf16(size_t n, double sc = 0.5, double shift = 0) {
  std::uniform_real_distribution<double> u(-sc, sc);
  Bf16Values v{std::vector<nncc::kernels::bf16_t>(n), std::vector<float>(n)};
  for (size_t i = 0; i < n; ++i) {
    v.b[i] = nncc::kernels::bf16_from_float((float)(u(rng) + shift));
    v.f[i] = nncc::kernels::bf16_to_float(v.b[i]);
  }
  return v;
}

/// n bf16 elements of the given bits (e.g. an output buffer's garbage).
inline std::vector<nncc::kernels::bf16_t> fill_bf16(size_t n, uint16_t bits) {
  return std::vector<nncc::kernels::bf16_t>(n, nncc::kernels::bf16_t{bits});
}

/// Distance of two bf16 values in bf16 steps (NaN to NaN: 0; NaN to a
/// number: 2^20; -0 and +0: 0).
inline long bf16_ulps(nncc::kernels::bf16_t a, nncc::kernels::bf16_t b) {
  const bool na = (a.bits & 0x7fff) > 0x7f80, nb = (b.bits & 0x7fff) > 0x7f80;
  if (na || nb)
    return na && nb ? 0 : 1L << 20;
  auto ord = [](nncc::kernels::bf16_t x) -> long {
    return (x.bits & 0x8000) ? -(long)(x.bits & 0x7fff) : (long)x.bits;
  };
  return std::labs(ord(a) - ord(b));
}

/// Comparison groups of bf16 outputs against float outputs rounded once to
/// bf16 (nearest even), in bf16 steps; `tol` 0 asks for the rounded float
/// output exactly.
struct Bf16UlpGroup : Tally {
  long tol;
  long worst = 0;
  Bf16UlpGroup(std::string n, long t) : Tally(std::move(n)), tol(t) {}
  bool cmp(const std::string &what, const float *ref, const nncc::kernels::bf16_t *got,
           size_t n) {
    ++checks;
    long md = 0;
    size_t where = 0;
    for (size_t i = 0; i < n; ++i) {
      const long d = bf16_ulps(nncc::kernels::bf16_from_float(ref[i]), got[i]);
      if (d > md)
        md = d, where = i;
    }
    worst = std::max(worst, md);
    if (md > tol) {
      ++fails;
      if (fails <= 10)
        printf("FAIL %s: %s: %ld ulps at [%zu] (float %.9g, bf16 %.9g)\n", name.c_str(),
               what.c_str(), md, where, (double)ref[where],
               (double)nncc::kernels::bf16_to_float(got[where]));
      return false;
    }
    return true;
  }
  bool cmp(const std::string &what, const std::vector<float> &ref,
           const std::vector<nncc::kernels::bf16_t> &got) {
    if (ref.size() != got.size()) {
      ++checks, ++fails;
      printf("FAIL %s: %s: sizes differ\n", name.c_str(), what.c_str());
      return false;
    }
    return cmp(what, ref.data(), got.data(), ref.size());
  }
  /// Bit equality (copies and gathers).
  bool same(const std::string &what, const uint16_t *ref, const nncc::kernels::bf16_t *got,
            size_t n) {
    ++checks;
    for (size_t i = 0; i < n; ++i)
      if (ref[i] != got[i].bits) {
        ++fails;
        worst = std::max(worst, 1L << 20);
        if (fails <= 10)
          printf("FAIL %s: %s: bits %04x, expected %04x at [%zu]\n", name.c_str(),
                 what.c_str(), got[i].bits, ref[i], i);
        return false;
      }
    return true;
  }
  ~Bf16UlpGroup() {
    report("worst " + std::to_string(worst) + " ulps, tol " + std::to_string(tol));
  }
};

/// How many of the rows x cols elements of `got` (bf16, row stride ldg)
/// are not those of `ref` (fp32, row stride ldr) rounded once to bf16, bit
/// for bit (a NaN matches any NaN); `first` (optional) describes the first.
inline size_t bf16_mismatches(const nncc::kernels::bf16_t *got, int64_t ldg, const float *ref,
                              int64_t ldr, int64_t rows, int64_t cols,
                              std::string *first = nullptr) {
  size_t bad = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const nncc::kernels::bf16_t g = got[r * ldg + c];
      const float f = ref[r * ldr + c];
      const float gw = nncc::kernels::bf16_to_float(g);
      const bool same = std::isnan(f) ? std::isnan(gw)
                                      : !std::isnan(gw) &&
                                            g.bits == nncc::kernels::bf16_from_float(f).bits;
      if (!same && bad++ == 0 && first) {
        char w[160];
        snprintf(w, sizeof w, "[%lld, %lld]: bf16 %.9g (0x%04x), f32 %.9g rounds to 0x%04x",
                 (long long)r, (long long)c, gw, g.bits, f,
                 nncc::kernels::bf16_from_float(f).bits);
        *first = w;
      }
    }
  return bad;
}

/// Device scratch of `bytes` for a launch under the emulation, 0xff-filled
/// (NaN for fp32 reads), with a guard after it the launch must leave alone.
struct GuardedScratch {
  static constexpr size_t kGuard = 4096;
  std::vector<char> m;
  size_t n;
  explicit GuardedScratch(size_t bytes) : m(bytes + kGuard, (char)0xff), n(bytes) {
    memset(m.data() + n, 0x5a, kGuard);
  }
  char *data() { return m.data(); }
  bool guardIntact() const {
    for (size_t i = n; i < m.size(); ++i)
      if (m[i] != 0x5a)
        return false;
    return true;
  }
};

} // namespace emutest

#endif
