//===- RuntimeRngTests.cpp - Philox determinism and distributions ---------===//

#include "nncc/Runtime/Philox.h"
#include "nncc/Runtime/nncc_runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

TEST(Philox, MatchesRandom123KnownAnswers) {
  struct Kat {
    uint32_t ctr[4], key[2], out[4];
  } kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat &k : kats) {
    nncc_philox_u32x4 c;
    std::memcpy(c.x, k.ctr, sizeof c.x);
    nncc_philox_u32x4 r = nncc_philox_bijection(c, k.key[0], k.key[1]);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(r.x[i], k.out[i]) << "word " << i;
  }
}

TEST(Philox, CounterLayoutIsSeedStreamIndex) {
  // Element i of (seed, stream) is word i % 4 of the block at counter
  // (i / 4, stream) under key seed.
  uint64_t seed = 0x0123456789abcdefull, stream = 0xfedcba9876543210ull, index = 0x1234567ull;
  nncc_philox_u32x4 c = {{static_cast<uint32_t>(index >> 2), 0,
                          static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)}};
  nncc_philox_u32x4 b = nncc_philox_bijection(c, 0x89abcdefu, 0x01234567u);
  EXPECT_EQ(nncc_rng_u32(seed, stream, index), b.x[index & 3]);
}

TEST(Philox, FillsAreReproducibleAndOffsetable) {
  std::vector<uint32_t> a(1000), b(1000), tail(500);
  nncc_rng_fill_u32(a.data(), a.size(), 42, 7, 0);
  nncc_rng_fill_u32(b.data(), b.size(), 42, 7, 0);
  EXPECT_EQ(a, b);
  nncc_rng_fill_u32(tail.data(), tail.size(), 42, 7, 500);
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), a.begin() + 500));
  nncc_rng_fill_u32(b.data(), b.size(), 42, 8, 0); // another stream
  int same = 0;
  for (size_t i = 0; i < a.size(); ++i)
    same += a[i] == b[i];
  EXPECT_LT(same, 3);
  nncc_rng_fill_u32(b.data(), b.size(), 43, 7, 0); // another seed
  same = 0;
  for (size_t i = 0; i < a.size(); ++i)
    same += a[i] == b[i];
  EXPECT_LT(same, 3);

  std::vector<float> n1(777), n2(300);
  nncc_rng_fill_normal_f32(n1.data(), n1.size(), 1, 2, 3, 0.f, 1.f);
  nncc_rng_fill_normal_f32(n2.data(), n2.size(), 1, 2, 3 + 401, 0.f, 1.f);
  for (size_t i = 0; i < n2.size(); ++i) {
    ASSERT_EQ(n2[i], n1[401 + i]);
    ASSERT_EQ(n1[401 + i], nncc_rng_normal(1, 2, 3 + 401 + i));
  }
}

TEST(Philox, FillsEqualThePerElementFunctions) {
  // The fills share one Philox block (and one Box-Muller pair) between
  // neighbouring elements; every element must still be the per-element
  // function's value, for every alignment of offset and length to a block.
  const uint64_t seed = 0x5eedull, stream = 3;
  for (uint64_t offset : {0, 1, 2, 3, 5, 1000001}) {
    for (uint64_t n : {0, 1, 2, 3, 4, 5, 7, 8, 9, 13, 64, 67}) {
      SCOPED_TRACE("offset " + std::to_string(offset) + " n " + std::to_string(n));
      std::vector<uint32_t> u(n);
      std::vector<float> uf(n), nf(n);
      std::vector<double> ud(n), nd(n);
      std::vector<uint8_t> bern(n);
      nncc_rng_fill_u32(u.data(), n, seed, stream, offset);
      nncc_rng_fill_uniform_f32(uf.data(), n, seed, stream, offset, -0.5f, 0.25f);
      nncc_rng_fill_normal_f32(nf.data(), n, seed, stream, offset, 0.1f, 0.02f);
      nncc_rng_fill_uniform_f64(ud.data(), n, seed, stream, offset, -2.0, 3.0);
      nncc_rng_fill_normal_f64(nd.data(), n, seed, stream, offset, 1.0, 0.5);
      nncc_rng_fill_bernoulli_u8(bern.data(), n, seed, stream, offset, 0.3f);
      for (uint64_t i = 0; i < n; ++i) {
        uint64_t e = offset + i;
        ASSERT_EQ(u[i], nncc_rng_u32(seed, stream, e)) << i;
        ASSERT_EQ(uf[i], nncc_rng_uniform_range(seed, stream, e, -0.5f, 0.25f)) << i;
        ASSERT_EQ(nf[i], NNCC_RNG_FMA(0.02f, nncc_rng_normal(seed, stream, e), 0.1f)) << i;
        ASSERT_EQ(ud[i], -2.0 + 5.0 * nncc_rng_uniform_double(seed, stream, e)) << i;
        ASSERT_EQ(nd[i], 1.0 + 0.5 * nncc_rng_normal_double(seed, stream, e)) << i;
        ASSERT_EQ(bern[i], nncc_rng_bernoulli(seed, stream, e, 0.3f)) << i;
      }
    }
  }
}

TEST(Philox, FrozenValues) {
  // Regression anchors: changing the element mapping or the float math
  // changes every model's initialisation. Update only deliberately.
  EXPECT_EQ(nncc_rng_u32(0, 0, 0), 0x6627e8d5u);
  EXPECT_EQ(nncc_rng_u32(0, 0, 3), 0x9b00dbd8u);
  EXPECT_EQ(nncc_rng_uniform(0, 0, 0), static_cast<float>(0x6627e8d5u >> 8) / 16777216.f);
  // Box-Muller of the first block: words 0, 1 -> elements 0 (cos) and 1 (sin).
  float u1 = static_cast<float>((0x6627e8d5u >> 8) + 1) / 16777216.f;
  double theta = 2 * M_PI * ((0xe169c58du >> 8) / 16777216.0);
  double r = std::sqrt(-2 * std::log(static_cast<double>(u1)));
  EXPECT_NEAR(nncc_rng_normal(0, 0, 0), r * std::cos(theta), 2e-6);
  EXPECT_NEAR(nncc_rng_normal(0, 0, 1), r * std::sin(theta), 2e-6);
}

TEST(Philox, DeterministicMathIsAccurate) {
  double worstLog = 0;
  for (uint32_t k = 1; k <= (1u << 24); k += 997) {
    float x = static_cast<float>(k) * 5.9604644775390625e-08f;
    worstLog = std::max(worstLog, std::fabs(nncc_rng_logf(x) - std::log(static_cast<double>(x))));
  }
  EXPECT_LT(worstLog, 2e-6); // |ln x| <= 16.6: a few ulps
  double worstTrig = 0;
  for (uint32_t w24 = 0; w24 < (1u << 24); w24 += 613) {
    float c, s;
    nncc_rng_sincos_turn(w24 << 8, &c, &s);
    double theta = 2 * M_PI * (w24 / 16777216.0);
    worstTrig = std::max({worstTrig, std::fabs(c - std::cos(theta)), std::fabs(s - std::sin(theta))});
  }
  EXPECT_LT(worstTrig, 3e-7);
}

namespace {
template <typename T> void moments(const std::vector<T> &v, double &mean, double &var) {
  double s = 0, s2 = 0;
  for (T x : v) {
    s += x;
    s2 += static_cast<double>(x) * x;
  }
  mean = s / v.size();
  var = s2 / v.size() - mean * mean;
}
} // namespace

TEST(Philox, UniformDistribution) {
  const size_t n = 1 << 20;
  std::vector<float> u(n);
  nncc_rng_fill_uniform_f32(u.data(), n, 2024, 0, 0, 0.f, 1.f);
  double mean, var;
  moments(u, mean, var);
  // Standard error of the mean: sqrt(1/12 / n) ~ 2.8e-4.
  EXPECT_NEAR(mean, 0.5, 2e-3);
  EXPECT_NEAR(var, 1.0 / 12, 1e-3);
  std::vector<int> bins(16);
  for (float x : u) {
    ASSERT_GE(x, 0.f);
    ASSERT_LT(x, 1.f);
    ++bins[static_cast<int>(x * 16)];
  }
  for (int c : bins)
    EXPECT_NEAR(c, n / 16.0, 5 * std::sqrt(n / 16.0));

  std::vector<float> r(n);
  nncc_rng_fill_uniform_f32(r.data(), n, 2024, 1, 0, -0.0625f, 0.0625f);
  moments(r, mean, var);
  EXPECT_NEAR(mean, 0.0, 1e-3);
  EXPECT_NEAR(var, 0.125 * 0.125 / 12, 1e-4);

  std::vector<double> d(n);
  nncc_rng_fill_uniform_f64(d.data(), n, 5, 0, 0, 0.0, 1.0);
  moments(d, mean, var);
  EXPECT_NEAR(mean, 0.5, 2e-3);
  EXPECT_NEAR(var, 1.0 / 12, 1e-3);
}

TEST(Philox, NormalDistribution) {
  const size_t n = 1 << 20;
  std::vector<float> z(n);
  nncc_rng_fill_normal_f32(z.data(), n, 99, 3, 0, 0.f, 1.f);
  double mean, var;
  moments(z, mean, var);
  EXPECT_NEAR(mean, 0.0, 5e-3);
  EXPECT_NEAR(var, 1.0, 5e-3);
  size_t within1 = 0, within2 = 0;
  double m3 = 0, m4 = 0;
  for (float x : z) {
    ASSERT_TRUE(std::isfinite(x));
    within1 += std::fabs(x) < 1;
    within2 += std::fabs(x) < 2;
    m3 += std::pow(x, 3);
    m4 += std::pow(x, 4);
  }
  EXPECT_NEAR(within1 / double(n), 0.682689, 3e-3);
  EXPECT_NEAR(within2 / double(n), 0.954500, 2e-3);
  EXPECT_NEAR(m3 / n, 0.0, 2e-2); // skewness
  EXPECT_NEAR(m4 / n, 3.0, 5e-2); // kurtosis

  std::vector<float> scaled(n);
  nncc_rng_fill_normal_f32(scaled.data(), n, 99, 4, 0, 2.f, 0.5f);
  moments(scaled, mean, var);
  EXPECT_NEAR(mean, 2.0, 3e-3);
  EXPECT_NEAR(var, 0.25, 3e-3);

  std::vector<double> zd(n);
  nncc_rng_fill_normal_f64(zd.data(), n, 7, 0, 0, 0.0, 1.0);
  moments(zd, mean, var);
  EXPECT_NEAR(mean, 0.0, 5e-3);
  EXPECT_NEAR(var, 1.0, 5e-3);
}

TEST(Philox, BernoulliMasks) {
  const size_t n = 1 << 20;
  std::vector<uint8_t> m(n);
  for (float p : {0.0f, 0.1f, 0.5f, 0.9f, 1.0f}) {
    nncc_rng_fill_bernoulli_u8(m.data(), n, 11, 0, 0, p);
    size_t ones = 0;
    for (uint8_t b : m) {
      ASSERT_LE(b, 1);
      ones += b;
    }
    EXPECT_NEAR(ones / double(n), p, 3e-3) << "p = " << p;
  }
  // Masks for the same (seed, stream) agree with the per-element function.
  nncc_rng_fill_bernoulli_u8(m.data(), 100, 11, 5, 1000, 0.3f);
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(m[i], nncc_rng_bernoulli(11, 5, 1000 + i, 0.3f));
}
