//===- RuntimeErrorTests.cpp - statuses, messages, dtypes, conversions ----===//

#include "RuntimeTestUtil.h"

#include "nncc/Kernels/Bf16.h"

#include <cmath>
#include <cstring>
#include <set>
#include <string>

extern "C" int nncc_runtime_c_api_smoke(char *message, size_t capacity);

TEST(Status, EveryCodeHasAStableNameAndText) {
  std::set<std::string> names, texts;
  for (int s = NNCC_OK; s <= NNCC_ERROR_INTERNAL; ++s) {
    names.insert(nncc_status_name(static_cast<nncc_status>(s)));
    texts.insert(nncc_status_string(static_cast<nncc_status>(s)));
  }
  EXPECT_EQ(names.size(), 12u);
  EXPECT_EQ(texts.size(), 12u);
  EXPECT_STREQ(nncc_status_name(NNCC_ERROR_SHAPE_MISMATCH), "NNCC_ERROR_SHAPE_MISMATCH");
  EXPECT_STREQ(nncc_status_string(NNCC_ERROR_CUDA_UNAVAILABLE), "CUDA unavailable");
  EXPECT_STREQ(nncc_status_name(static_cast<nncc_status>(1234)), "NNCC_ERROR_UNKNOWN");
  EXPECT_EQ(NNCC_OK, 0);
}

TEST(Status, SetPrefixClearAndTruncate) {
  nncc_error err;
  EXPECT_EQ(nncc_error_set(&err, NNCC_ERROR_SHAPE_MISMATCH, "input %s: %d", "x", 3),
            NNCC_ERROR_SHAPE_MISMATCH);
  EXPECT_STREQ(err.message, "input x: 3");
  EXPECT_EQ(nncc_error_prefix(&err, "model %s: ", "lstm"), NNCC_ERROR_SHAPE_MISMATCH);
  EXPECT_STREQ(err.message, "model lstm: input x: 3");
  nncc_error_clear(&err);
  EXPECT_EQ(err.status, NNCC_OK);
  EXPECT_STREQ(err.message, "");
  EXPECT_EQ(nncc_error_set(nullptr, NNCC_ERROR_IO, "ignored"), NNCC_ERROR_IO);
  EXPECT_EQ(nncc_error_prefix(nullptr, "x"), NNCC_OK);
  std::string huge(5000, 'a');
  nncc_error_set(&err, NNCC_ERROR_INTERNAL, "%s", huge.c_str());
  EXPECT_EQ(std::strlen(err.message), NNCC_ERROR_MESSAGE_CAPACITY - 1u);
  nncc_error_prefix(&err, "%s", huge.c_str());
  EXPECT_EQ(std::strlen(err.message), NNCC_ERROR_MESSAGE_CAPACITY - 1u);
}

TEST(Dtype, NamesSizesAndParsing) {
  const char *names[] = {"F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL"};
  size_t sizes[] = {8, 4, 2, 2, 8, 4, 2, 1, 1, 1};
  for (int i = 0; i < 10; ++i) {
    nncc_dtype d = nncc_dtype_from_name(names[i]);
    EXPECT_EQ(d, static_cast<nncc_dtype>(i + 1));
    EXPECT_STREQ(nncc_dtype_name(d), names[i]);
    EXPECT_EQ(nncc_dtype_size(d), sizes[i]);
  }
  EXPECT_EQ(nncc_dtype_from_name("F8_E4M3"), NNCC_DTYPE_INVALID);
  EXPECT_EQ(nncc_dtype_from_name(nullptr), NNCC_DTYPE_INVALID);
  EXPECT_EQ(nncc_dtype_size(NNCC_DTYPE_INVALID), 0u);
}

TEST(Dtype, HalfAndBfloatConversions) {
  EXPECT_EQ(nncc_f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(nncc_f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(nncc_f32_to_f16(65504.f), 0x7bff);
  EXPECT_EQ(nncc_f32_to_f16(65520.f), 0x7c00); // rounds to inf
  EXPECT_EQ(nncc_f32_to_f16(5.9604645e-08f), 0x0001); // smallest subnormal
  EXPECT_EQ(nncc_f32_to_f16(2.9802322e-08f), 0x0000); // half of it: ties to even
  EXPECT_EQ(nncc_f32_to_f16(1.0009765625f), 0x3c01);
  EXPECT_EQ(nncc_f32_to_f16(1.00048828125f), 0x3c00); // tie -> even
  EXPECT_EQ(nncc_f32_to_f16(1.00146484375f), 0x3c02); // tie -> even (up)
  EXPECT_TRUE(std::isnan(nncc_f16_to_f32(nncc_f32_to_f16(NAN))));
  EXPECT_EQ(nncc_f16_to_f32(0x3555), 0.333251953125f);
  EXPECT_EQ(nncc_f16_to_f32(0x0001), 5.9604644775390625e-08f);
  EXPECT_EQ(nncc_f16_to_f32(0x8400), -6.103515625e-05f);
  EXPECT_EQ(nncc_f16_to_f32(0xfc00), -INFINITY);
  // Every finite half survives a round trip.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00)
      continue;
    ASSERT_EQ(nncc_f32_to_f16(nncc_f16_to_f32(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
  EXPECT_EQ(nncc_f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(nncc_f32_to_bf16(3.140625f), 0x4049);
  EXPECT_EQ(nncc_bf16_to_f32(0xc040), -3.0f);
  EXPECT_EQ(nncc_f32_to_bf16(1.00390625f), 0x3f80); // tie -> even
  EXPECT_EQ(nncc_f32_to_bf16(1.01171875f), 0x3f82); // tie -> even (up)
  EXPECT_TRUE(std::isnan(nncc_bf16_to_f32(nncc_f32_to_bf16(NAN))));
}

// The kernels' bf16_t conversions (nncc/Kernels/Bf16.h) are the runtime's,
// bit for bit: every bf16 widens exactly, and floats round the same way
// (every exponent, the rounding bits around ties, infinities, NaNs).
TEST(Dtype, KernelBf16MatchesRuntime) {
  using nncc::kernels::bf16_from_float;
  using nncc::kernels::bf16_t;
  using nncc::kernels::bf16_to_float;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float a = nncc_bf16_to_f32(static_cast<uint16_t>(h));
    const float b = bf16_to_float(bf16_t{static_cast<uint16_t>(h)});
    ASSERT_EQ(std::memcmp(&a, &b, sizeof a), 0) << std::hex << h;
  }
  const uint32_t lows[] = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff, 0x18000, 0x17fff};
  for (uint32_t hi = 0; hi < 0x10000; ++hi)
    for (uint32_t lo : lows) {
      const uint32_t bits = (hi << 16) + lo;
      float f;
      std::memcpy(&f, &bits, sizeof f);
      ASSERT_EQ(bf16_from_float(f).bits, nncc_f32_to_bf16(f)) << std::hex << bits;
    }
  EXPECT_EQ(nncc::kernels::load_acc(bf16_t{0x3f80}), 1.0f);
  EXPECT_EQ(nncc::kernels::store_acc<bf16_t>(-3.0f).bits, 0xc040);
}

TEST(CApi, HeadersWorkFromC99) {
  char message[512] = {0};
  EXPECT_EQ(nncc_runtime_c_api_smoke(message, sizeof message), 0) << message;
}
