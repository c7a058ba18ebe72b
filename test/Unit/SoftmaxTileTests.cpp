//===- SoftmaxTileTests.cpp - The CPU attention's score rows --------------===//
//
// tileMaxF32 / expTileSumF32 (runtime/lib/Kernels/SoftmaxTile.cpp: 16 lanes
// on AVX-512, else tile_max / exp_tile_sum) against double-precision exp:
// every tail length, masked scores (exactly 0), NaN (kept), saturation.
//
//===----------------------------------------------------------------------===//
#include "AttentionCommon.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

using namespace nncc::kernels;

TEST(SoftmaxTile, RowsOfEveryLengthAgainstDouble) {
  for (int64_t n = 0; n <= 70; ++n) {
    std::vector<float> s(n);
    for (int64_t j = 0; j < n; ++j)
      s[j] = float(std::sin(0.37 * double(j) + double(n)) * 30.0);
    if (n > 3)
      s[2] = neg_big<float>(); // masked
    float m = neg_big<float>();
    for (float v : s)
      m = v > m ? v : m;
    ASSERT_EQ(tileMaxF32(s.data(), n), m) << "n " << n;
    std::vector<float> p = s;
    const float sum = expTileSumF32(p.data(), n, m);
    double want = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      const double e = s[j] <= neg_big<float>() ? 0.0 : std::exp(double(s[j] - m)); // the kernel's float difference
      want += e;
      if (e == 0.0)
        EXPECT_EQ(p[j], 0.0f) << "n " << n << " j " << j;
      else
        EXPECT_NEAR(p[j], e, 4e-7 * e + 1e-38) << "n " << n << " j " << j;
    }
    EXPECT_NEAR(sum, want, 1e-6 * (want + 1.0)) << "n " << n;
  }
}

TEST(SoftmaxTile, SaturationAndNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> s = {0.0f, -200.0f, 100.0f, -80.0f, nan, 88.0f, 1e-30f, -1e30f,
                          5.0f, 5.0f, 5.0f, 5.0f, 5.0f, 5.0f, 5.0f, 5.0f, 5.0f, -3.0f};
  EXPECT_EQ(tileMaxF32(s.data(), (int64_t)s.size()), 100.0f); // NaN skipped
  std::vector<float> p = s;
  expTileSumF32(p.data(), (int64_t)p.size(), 0.0f);
  EXPECT_EQ(p[0], 1.0f);
  EXPECT_EQ(p[1], 0.0f);                                // e^-200 underflows
  EXPECT_EQ(p[2], std::numeric_limits<float>::infinity()); // e^100 overflows
  EXPECT_NEAR(p[3], std::exp(-80.0), 4e-7 * std::exp(-80.0));
  EXPECT_TRUE(std::isnan(p[4]));
  EXPECT_NEAR(p[5], std::exp(88.0), 4e-7 * std::exp(88.0));
  EXPECT_EQ(p[6], 1.0f);
  EXPECT_EQ(p[7], 0.0f); // masked
  EXPECT_NEAR(p[17], std::exp(-3.0), 4e-7);
}
