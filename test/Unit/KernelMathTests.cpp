//===- KernelMathTests.cpp - host float exp/tanh/sigmoid/erf of Common.h --===//
//
// The CPU kernels use branch-free polynomial exp/tanh/erf for float so that their
// loops vectorise; these tests pin their accuracy against the double-precision
// math library and their behaviour at the limits.
//
//===----------------------------------------------------------------------===//
#include "nncc/Kernels/Common.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

using namespace nncc::kernels;

namespace {

// Every float in [-100, 100] on a fine grid, plus the ends.
template <typename F> void forGrid(F f) {
  for (double x = -100.0; x <= 100.0; x += 1.0 / 1024)
    f(static_cast<float>(x));
}

TEST(KernelMath, ExpRelativeErrorBelow2e7) {
  double worst = 0;
  forGrid([&](float x) {
    double ref = std::exp(static_cast<double>(x));
    if (ref > 1e-37 && ref < 3e38)
      worst = std::max(worst, std::fabs(nexp(x) - ref) / ref);
  });
  EXPECT_LT(worst, 2e-7);
}

TEST(KernelMath, ExpLimits) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(nexp(-inf), 0.0f);
  EXPECT_EQ(nexp(-1000.0f), 0.0f);
  EXPECT_EQ(nexp(inf), inf);
  EXPECT_EQ(nexp(89.0f), inf);
  EXPECT_TRUE(std::isfinite(nexp(88.7f)));
  EXPECT_TRUE(std::isnan(nexp(std::nanf(""))));
  EXPECT_EQ(nexp(0.0f), 1.0f);
}

TEST(KernelMath, TanhAbsoluteErrorBelow2e7) {
  double worst = 0;
  forGrid([&](float x) {
    worst = std::max(worst, std::fabs(ntanh(x) - std::tanh(static_cast<double>(x))));
  });
  EXPECT_LT(worst, 2e-7);
  // Small arguments keep their relative accuracy (no cancellation).
  for (float x : {1e-20f, -3e-8f, 1e-4f, -0.1f})
    EXPECT_NEAR(ntanh(x) / x, std::tanh(static_cast<double>(x)) / x, 1e-6) << x;
  EXPECT_EQ(ntanh(std::numeric_limits<float>::infinity()), 1.0f);
  EXPECT_EQ(ntanh(-std::numeric_limits<float>::infinity()), -1.0f);
}

TEST(KernelMath, SigmoidAbsoluteErrorBelow2e7) {
  double worst = 0;
  forGrid([&](float x) {
    double ref = 1.0 / (1.0 + std::exp(-static_cast<double>(x)));
    worst = std::max(worst, std::fabs(sigmoid(x) - ref));
  });
  EXPECT_LT(worst, 2e-7);
  EXPECT_EQ(sigmoid(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(sigmoid(std::numeric_limits<float>::infinity()), 1.0f);
}

TEST(KernelMath, ErfAbsoluteErrorBelow2e7) {
  double worst = 0;
  forGrid([&](float x) {
    worst = std::max(worst, std::fabs(nerf(x) - std::erf(static_cast<double>(x))));
  });
  EXPECT_LT(worst, 2e-7);
  // Small arguments keep their relative accuracy (the series branch).
  for (float x : {1e-30f, -3e-8f, 1e-4f, -0.3f, 0.99f})
    EXPECT_NEAR(nerf(x) / x, std::erf(static_cast<double>(x)) / x, 3e-7) << x;
  EXPECT_EQ(nerf(std::numeric_limits<float>::infinity()), 1.0f);
  EXPECT_EQ(nerf(-std::numeric_limits<float>::infinity()), -1.0f);
  EXPECT_TRUE(std::isnan(nerf(std::nanf(""))));
}

TEST(KernelMath, DoubleUsesTheMathLibrary) {
  for (double x : {-30.0, -1.5, 0.25, 7.0})
    EXPECT_EQ(nexp(x), std::exp(x));
}

} // namespace
