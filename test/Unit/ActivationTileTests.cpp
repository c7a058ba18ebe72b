//===- ActivationTileTests.cpp - The exact-GELU linear epilogue -----------===//
//
// geluErfBlockF32 (runtime/lib/Kernels/ActivationTile.cpp: 16 lanes on
// AVX-512) against 0.5 x (1 + erf(x / sqrt 2)) in double: both branches of
// the erf (|x / sqrt 2| below and above 1), the tails, every column count
// to 40 with and without bias and residual, a sub-block of a wider matrix
// (nothing outside it written), NaN. Where AVX-512 is absent or
// NNCC_KERNELS_PORTABLE is set it declines, and nncc_linear's portable
// epilogue (the same formula) must agree as well.
//
//===----------------------------------------------------------------------===//
#include "ActivationTile.h"
#include "nncc/Kernels/Kernels.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

using namespace nncc::kernels;

namespace {

double geluRef(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

/// |got - want| within the float formula's error: its erf is good to 2e-7
/// absolute, x's rounding and the products add a few ulps of the result.
void expectGelu(float got, double x, double add, const char *what, int64_t i, int64_t j) {
  const double want = geluRef(x) + add;
  EXPECT_NEAR(got, want, 2.5e-7 * std::fabs(x) + 4e-7 * std::fabs(want) + 1e-30)
      << what << " row " << i << " col " << j << " x " << x;
}

} // namespace

TEST(ActivationTile, GeluErfEveryWidthBiasResidual) {
  for (int64_t N = 1; N <= 40; ++N)
    for (int mode = 0; mode < 4; ++mode) {
      const bool withBias = mode & 1, withRes = mode & 2;
      const int64_t M = 3;
      std::vector<float> y(M * N), bias(N), res(M * N);
      for (int64_t i = 0; i < M * N; ++i) {
        y[i] = float(std::sin(0.7 * double(i) + double(N)) * 4.0);
        res[i] = float(std::cos(0.3 * double(i)));
      }
      for (int64_t j = 0; j < N; ++j)
        bias[j] = float(0.25 * std::sin(double(j)));
      const std::vector<float> y0 = y;
      const float *b = withBias ? bias.data() : nullptr, *r = withRes ? res.data() : nullptr;
      const bool ran = geluErfBlockF32(y.data(), N, 0, M, 0, N, b, r);
      if (!ran) { // the portable epilogue through the public entry
        ASSERT_EQ(nncc_linear_f32(M, N, 1, y0.data(), std::vector<float>(N, 0.0f).data(), b, r,
                                  NNCC_ACT_GELU, 0.0, y.data()),
                  0);
      }
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          const double x = double(ran ? y0[i * N + j] : 0.0f) + (b ? double(b[j]) : 0.0);
          expectGelu(y[i * N + j], double(float(x)), r ? double(r[i * N + j]) : 0.0,
                     ran ? "avx512" : "portable", i, j);
        }
    }
}

TEST(ActivationTile, GeluErfRangeAndSpecialValues) {
  std::vector<float> x;
  for (double v = -12.0; v <= 12.0; v += 0.0137)
    x.push_back(float(v));
  for (float v : {0.0f, -0.0f, 1.41421354f, -1.41421354f, 1e-20f, -1e-20f, 30.0f, -30.0f, 1e30f,
                  -1e30f})
    x.push_back(v);
  std::vector<float> y = x;
  const int64_t n = (int64_t)y.size();
  if (!geluErfBlockF32(y.data(), n, 0, 1, 0, n, nullptr, nullptr))
    GTEST_SKIP() << "no AVX-512 here (or NNCC_KERNELS_PORTABLE): the portable epilogue ran above";
  for (int64_t j = 0; j < n; ++j)
    expectGelu(y[j], double(x[j]), 0.0, "range", 0, j);
  float nan = std::numeric_limits<float>::quiet_NaN();
  ASSERT_TRUE(geluErfBlockF32(&nan, 1, 0, 1, 0, 1, nullptr, nullptr));
  EXPECT_TRUE(std::isnan(nan));
}

TEST(ActivationTile, GeluErfWritesOnlyItsBlock) {
  const int64_t M = 5, N = 37;
  std::vector<float> y(M * N);
  for (int64_t i = 0; i < M * N; ++i)
    y[i] = float(i % 11) - 5.0f;
  const std::vector<float> y0 = y;
  if (!geluErfBlockF32(y.data(), N, 1, 4, 3, 30, nullptr, nullptr))
    GTEST_SKIP() << "no AVX-512 here (or NNCC_KERNELS_PORTABLE)";
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      if (i >= 1 && i < 4 && j >= 3 && j < 30)
        expectGelu(y[i * N + j], double(y0[i * N + j]), 0.0, "block", i, j);
      else
        EXPECT_EQ(y[i * N + j], y0[i * N + j]) << "row " << i << " col " << j;
    }
}
