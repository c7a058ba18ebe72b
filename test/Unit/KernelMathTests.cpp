//===- KernelMathTests.cpp - the shared NNCC_HD math of the kernel headers ===//
//
// The CPU kernels use branch-free polynomial exp/tanh/erf for float so that their
// loops vectorise; these tests pin their accuracy against the double-precision
// math library and their behaviour at the limits. They also pin the other
// math the CPU and CUDA kernels share: the masks' use of the runtime's Philox,
// the ODE tableaus and step controller, the dilated key walk, the LSH bucket
// count and the strided-copy / reduction index math.
//
//===----------------------------------------------------------------------===//
#include "nncc/Kernels/AttentionMath.h"
#include "nncc/Kernels/Common.h"
#include "nncc/Kernels/IndexMath.h"
#include "nncc/Kernels/ODESolver.h"
#include "nncc/Kernels/RandomMasks.h"

#include <cmath>
#include <limits>
#include <vector>

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


// The kernels' masks are stream 0 of the runtime's Philox, with `offset`
// counting draws: the same bits as nncc_rng_u32(seed, 0, offset + i).
TEST(SharedMath, MaskBitsAreRuntimePhiloxStreamZero) {
  EXPECT_EQ(philox_bits(0, 0, 0), 0x6627e8d5u); // Random123 KAT, zero key/counter
  const uint64_t seeds[] = {0, 1, 0x0123456789abcdefull};
  const uint64_t offsets[] = {0, 3, 12, 0xfffffffffull, 1ull << 42};
  for (uint64_t seed : seeds)
    for (uint64_t off : offsets) {
      for (uint64_t i = 0; i < 64; ++i) {
        const uint64_t g = off + i;
        ASSERT_EQ(philox_bits(seed, off, i), nncc_rng_u32(seed, 0, g));
        nncc_philox_u32x4 c = {{(uint32_t)(g / 4), (uint32_t)((g / 4) >> 32), 0, 0}};
        ASSERT_EQ(philox_bits(seed, off, i),
                  nncc_philox_bijection(c, (uint32_t)seed, (uint32_t)(seed >> 32)).x[g & 3]);
        ASSERT_EQ(philox_uniform(seed, off, i), nncc_rng_uniform(seed, 0, g));
        // A shifted call draws the same stream (micro-batches' rows).
        ASSERT_EQ(philox_bits(seed, off + 5, i), philox_bits(seed, off, i + 5));
      }
      // The batched chunks equal the element-wise bits, aligned or not.
      uint32_t chunk[4 * kMaskBatch];
      for (uint64_t c : {0ull, 3ull}) {
        philox_mask_chunk(seed, off, c, chunk);
        for (int j = 0; j < 4 * kMaskBatch; ++j)
          ASSERT_EQ(chunk[j], philox_bits(seed, off, c * 4 * kMaskBatch + j));
      }
    }
}

TEST(SharedMath, AttentionDropoutRowMatchesElementwise) {
  const uint64_t seed = 77, offset = 5;
  const float p = 0.4f;
  for (uint64_t first : {0ull, 1ull, 2ull, 3ull, 13ull}) {
    double mult[23];
    attention_dropout_row<double>(seed, offset, first, 23, p, 2.5, mult);
    for (int i = 0; i < 23; ++i)
      ASSERT_EQ(mult[i], attention_dropout_keep(seed, offset, first + i, p) ? 2.5 : 0.0);
  }
}

TEST(SharedMath, OdeTableausAreConsistent) {
  for (int m : {OdeEuler, OdeRk4, OdeDopri5}) {
    const int S = ode_stages(m);
    double sb = 0;
    for (int j = 0; j < S; ++j)
      sb += ode_b(m, j);
    EXPECT_NEAR(sb, 1.0, 1e-15) << m;
    for (int s = 0; s < S; ++s) {
      double sa = 0;
      for (int j = 0; j < s; ++j)
        sa += ode_a(m, s, j);
      EXPECT_NEAR(sa, ode_c(m, s), 1e-14) << m << " stage " << s;
    }
  }
  double se = 0;
  for (int j = 0; j < 7; ++j)
    se += ode_e(j);
  for (int j = 0; j < 6; ++j) // the last stage's input is the 5th-order solution
    EXPECT_EQ(ode_a(OdeDopri5, 6, j), ode_b(OdeDopri5, j)) << "FSAL column " << j;
  EXPECT_EQ(ode_b(OdeDopri5, 6), 0.0);
  EXPECT_NEAR(se, 0.0, 1e-15); // both orders' weights sum to 1
}

TEST(SharedMath, OdeStepController) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(ode_step_factor(0.0), 10.0);
  EXPECT_EQ(ode_step_factor(nan), 0.2);
  EXPECT_EQ(ode_step_factor(inf), 0.2);
  EXPECT_EQ(ode_step_factor(1.0), 0.9);
  EXPECT_EQ(ode_step_factor(1e-12), 10.0);
  EXPECT_EQ(ode_step_factor(1e12), 0.2);
  EXPECT_DOUBLE_EQ(ode_step_factor(2.0), 0.9 * std::pow(2.0, -0.2));
  EXPECT_TRUE(ode_step_accepted(1.0));
  EXPECT_FALSE(ode_step_accepted(1.0000001));
  EXPECT_FALSE(ode_step_accepted(nan));
  EXPECT_EQ(ode_error_ratio(0.3, -2.0, 1.0, 0.1, 0.5), 0.3 / (0.1 + 0.5 * 2.0));
  EXPECT_EQ(ode_first_step(-3.0), -0.03);
}

// for_each_dilated_key visits exactly the keys of the dilated + global rule
// (band, or either end global; then causal / padding), each once: ascending
// for a global query, else the band ascending, then the globals outside it.
TEST(SharedMath, DilatedKeyWalk) {
  const int T = 29, window = 4, dilation = 3;
  std::vector<uint8_t> isGlobal(T, 0), kpm(T, 0);
  const int32_t globals[] = {0, 7, 20};
  for (int g : globals)
    isGlobal[g] = 1;
  kpm[11] = kpm[26] = 1;
  for (bool causal : {false, true})
    for (const uint8_t *kpmRow : {(const uint8_t *)nullptr, (const uint8_t *)kpm.data()})
      for (int i = 0; i < T; ++i) {
        std::vector<int> got;
        for_each_dilated_key(i, T, window, dilation, isGlobal.data(), globals, 3, causal,
                             kpmRow, [&](int j) { got.push_back(j); });
        std::vector<int> band, outside;
        for (int j = 0; j < T; ++j) {
          if (!key_admissible(i, j, causal, kpmRow))
            continue;
          if (isGlobal[i] || dilated_band(i, j, window, dilation))
            band.push_back(j);
          else if (isGlobal[j])
            outside.push_back(j);
        }
        band.insert(band.end(), outside.begin(), outside.end());
        ASSERT_EQ(got, band) << "query " << i << " causal " << causal;
      }
}

TEST(SharedMath, LshBucketCount) {
  // max(2, 2^(bitlength(2 floor(T / chunk)) - 1)), HuggingFace's rule.
  auto ref = [](int64_t T, int64_t chunk) {
    int64_t n = 2 * (T / chunk);
    int64_t b = n ? (int64_t)1 << (int)std::floor(std::log2((double)n)) : 1;
    return b < 2 ? (int64_t)2 : b;
  };
  for (int64_t T : {1, 7, 8, 64, 100, 1000, 4096})
    for (int64_t chunk : {1, 4, 8, 64})
      EXPECT_EQ(lsh_num_buckets(T, chunk), ref(T, chunk)) << T << " " << chunk;
  EXPECT_EQ(lsh_num_buckets(64, 8), 16);
  EXPECT_EQ(lsh_num_buckets(4, 8), 2);
}

TEST(SharedMath, IndexMath) {
  // [2, 1, 3, 4, 5] reducing dims 2 and 3 -> kept [2 | 15 reduced | 5].
  const int64_t shape[] = {2, 1, 3, 4, 5};
  int64_t size[5];
  uint32_t merged = 0;
  ASSERT_EQ(merge_reduce_dims(5, shape, 0b01100u, size, &merged), 3);
  EXPECT_EQ(size[0], 2);
  EXPECT_EQ(size[1], 12);
  EXPECT_EQ(size[2], 5);
  EXPECT_EQ(merged, 0b010u);
  const int64_t ones[] = {1, 1};
  EXPECT_EQ(merge_reduce_dims(2, ones, 0b01u, size, &merged), 0);
  // Offsets against an explicit multi-index walk of the same shape.
  const int64_t sa[] = {1000, 999, 100, 10, 1}, sb[] = {1, 7, 2, 6, 24};
  int64_t flat = 0;
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t d = 0; d < 4; ++d)
        for (int64_t e = 0; e < 5; ++e, ++flat) {
          int64_t oa, ob;
          strided_offsets(flat, 5, shape, sa, &oa, sb, &ob);
          ASSERT_EQ(oa, a * 1000 + c * 100 + d * 10 + e);
          ASSERT_EQ(ob, a * 1 + c * 2 + d * 6 + e * 24);
        }
  // masked_offset: kept index (a, e) and reduced index (c, d) of dims 2, 3.
  EXPECT_EQ(masked_offset(1 * 5 + 3, 5, shape, sa, 0b01100u, 0u), 1000 + 3);
  EXPECT_EQ(masked_offset(2 * 4 + 1, 5, shape, sa, 0b01100u, 1u), 200 + 10);
}

} // namespace
