//===- emu_test.h - helpers of the CUDA-emulation parity tests --*- C++ -*-===//
//
// A test program includes the rewritten .cuh it tests (rewrite_cuda.py's
// output first on the include path, then this directory for cuda_runtime.h /
// cublas_v2.h), then this header, compares each launcher's outputs with the
// CPU kernels of libnncc_kernels.so, prints one line per comparison group
// and, when every comparison passed and the emulation reported nothing,
// "EMULATION OK" (emu_finish()).
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_TEST_EMU_TEST_H
#define NNCC_TEST_EMU_TEST_H

#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

/// CPU2(name) defines cpu_<name><T>(args...), the libnncc_kernels kernel
/// nncc_<name>_f64 or _f32 for the element type T.
#define CPU2(name)                                                             \
  template <typename T, typename... A> int cpu_##name(A... a) {                \
    if constexpr (std::is_same_v<T, double>)                                   \
      return nncc_##name##_f64(a...);                                          \
    else                                                                       \
      return nncc_##name##_f32(a...);                                          \
  }

namespace emutest {

inline std::mt19937_64 rng(7);

template <typename T = double> std::vector<T> rnd(size_t n, double sc = 0.5) {
  std::uniform_real_distribution<double> u(-sc, sc);
  std::vector<T> v(n);
  for (auto &x : v)
    x = (T)u(rng);
  return v;
}
/// NaN-filled output buffer (every element the kernel should write).
/// (Never a null data(): kernels reject null outputs even when empty.)
template <typename T = double> std::vector<T> nanv(size_t n) {
  std::vector<T> v(n + 1, (T)NAN);
  v.resize(n);
  return v;
}
/// 0xff-filled scratch (NaN garbage for float/double reads).
inline std::vector<char> garbage(size_t n) { return std::vector<char>(n + 16, (char)0xff); }

inline int total_fails = 0;

/// What every comparison group counts: its checks, its failures (added to
/// total_fails when it reports) and launchers' return codes.
struct Tally {
  std::string name;
  int checks = 0, fails = 0;
  explicit Tally(std::string n) : name(std::move(n)) {}
  /// A launcher's or CPU kernel's return code.
  bool ok(const std::string &what, long rc) {
    ++checks;
    if (rc != 0) {
      ++fails;
      if (fails <= 10)
        printf("FAIL %s: %s returned %ld\n", name.c_str(), what.c_str(), rc);
      return false;
    }
    return true;
  }
  /// The group's one line; `worst` describes its largest error.
  void report(const std::string &worst) {
    total_fails += fails;
    if (fails)
      printf("%s: %d of %d comparisons FAILED\n", name.c_str(), fails, checks);
    else
      printf("%s: %d comparisons ok (%s)\n", name.c_str(), checks, worst.c_str());
    fflush(stdout);
  }
};

/// One comparison group: many comparisons, one line of output.
struct Group : Tally {
  double tol;
  double worst = 0;
  Group(std::string n, double t) : Tally(std::move(n)), tol(t) {}
  /// max |a - b| / max(|ref|, floor) over the array; NaNs must match.
  template <typename A, typename B>
  bool cmp(const std::string &what, const A *ref, const B *got, size_t n, double floor = 1e-30,
           double tolerance = -1) {
    const double tol = tolerance >= 0 ? tolerance : this->tol;
    ++checks;
    double md = 0, mx = floor;
    size_t where = 0;
    for (size_t i = 0; i < n; ++i) {
      const double a = (double)ref[i], b = (double)got[i];
      if (std::isnan(a) != std::isnan(b)) {
        md = INFINITY;
        where = i;
        break;
      }
      if (std::isnan(a))
        continue;
      if (std::fabs(a - b) > md)
        md = std::fabs(a - b), where = i;
      mx = std::max(mx, std::fabs(a));
    }
    const double rel = md / mx;
    worst = std::max(worst, rel);
    if (!(rel <= tol)) {
      ++fails;
      if (fails <= 10)
        printf("FAIL %s: %s: rel %.3g at [%zu] (cpu %.17g, cuda %.17g)\n", name.c_str(),
               what.c_str(), rel, where, n ? (double)ref[where] : 0.0,
               n ? (double)got[where] : 0.0);
      return false;
    }
    return true;
  }
  template <typename A, typename B>
  bool cmp(const std::string &what, const std::vector<A> &ref, const std::vector<B> &got,
           double floor = 1e-30) {
    if (ref.size() != got.size()) {
      ++checks, ++fails;
      printf("FAIL %s: %s: sizes %zu vs %zu\n", name.c_str(), what.c_str(), ref.size(),
             got.size());
      return false;
    }
    return cmp(what, ref.data(), got.data(), ref.size(), floor);
  }
  ~Group() {
    char w[64];
    snprintf(w, sizeof w, "worst rel %.2g, tol %.0g", worst, tol);
    report(w);
  }
};

inline auto t0 = std::chrono::steady_clock::now();

inline int finish() {
  fflush(stdout);
  const double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fprintf(stderr, "emulation: %ld launches (%ld cooperative), %ld CTAs, %ld problems, %.1f s\n",
          emu::g.launches, emu::g.coop_launches, emu::g.ctas, emu::g.problems, s);
  if (total_fails || emu::g.problems) {
    printf("EMULATION FAILED\n");
    return 1;
  }
  printf("EMULATION OK\n");
  return 0;
}

} // namespace emutest

#endif
