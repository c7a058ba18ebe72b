//===- RuntimeArenaTests.cpp - planned arena offsets and limits -----------===//

#include "RuntimeTestUtil.h"

TEST(Arena, CpuArenaIsAlignedAndZeroed) {
  nncc_arena *a = nullptr;
  nncc_error err;
  ASSERT_EQ(nncc_arena_create_cpu(1000, &a, &err), NNCC_OK) << err.message;
  EXPECT_EQ(nncc_arena_device(a), NNCC_DEVICE_CPU);
  EXPECT_EQ(nncc_arena_capacity(a), 1000u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(nncc_arena_base(a)) % NNCC_ARENA_ALIGNMENT, 0u);
  const auto *bytes = static_cast<const unsigned char *>(nncc_arena_base(a));
  for (int i = 0; i < 1000; ++i)
    ASSERT_EQ(bytes[i], 0);
  nncc_arena_destroy(a);
}

TEST(Arena, PlannedRegionsAreBoundsCheckedAndTracked) {
  nncc_arena *a = nullptr;
  nncc_error err;
  ASSERT_EQ(nncc_arena_create_cpu(1024, &a, &err), NNCC_OK);
  void *p = nullptr;
  EXPECT_EQ(nncc_arena_high_water(a), 0u);
  ASSERT_EQ(nncc_arena_region(a, 0, 256, "lstm.gates", &p, &err), NNCC_OK);
  EXPECT_EQ(p, nncc_arena_base(a));
  ASSERT_EQ(nncc_arena_region(a, 512, 512, "lstm.h", &p, &err), NNCC_OK);
  EXPECT_EQ(p, static_cast<char *>(nncc_arena_base(a)) + 512);
  EXPECT_EQ(nncc_arena_high_water(a), 1024u);
  ASSERT_EQ(nncc_arena_region(a, 1024, 0, "empty", &p, &err), NNCC_OK);

  EXPECT_STATUS_MSG(nncc_arena_region(a, 1000, 100, "attn.scores", &p, &err), err,
                    NNCC_ERROR_OUT_OF_MEMORY,
                    "arena: 'attn.scores' needs bytes [1000, 1100) but the CPU arena holds "
                    "1024 bytes (76 bytes short)");
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(nncc_arena_high_water(a), 1024u);
  EXPECT_STATUS_MSG(nncc_arena_region(a, ~0ull - 10, 100, nullptr, &p, &err), err,
                    NNCC_ERROR_OUT_OF_MEMORY, "overflows 64-bit offsets");
  nncc_arena_reset_high_water(a);
  EXPECT_EQ(nncc_arena_high_water(a), 0u);
  ASSERT_EQ(nncc_arena_region(a, 100, 28, "x", &p, &err), NNCC_OK);
  EXPECT_EQ(nncc_arena_high_water(a), 128u);
  nncc_arena_destroy(a);
}

TEST(Arena, BumpAllocationRespectsAlignmentAndCapacity) {
  nncc_arena *a = nullptr;
  nncc_error err;
  ASSERT_EQ(nncc_arena_create_cpu(256, &a, &err), NNCC_OK);
  uint64_t off = 99;
  ASSERT_EQ(nncc_arena_alloc(a, 10, 0, "a", &off, &err), NNCC_OK);
  EXPECT_EQ(off, 0u);
  ASSERT_EQ(nncc_arena_alloc(a, 10, 0, "b", &off, &err), NNCC_OK);
  EXPECT_EQ(off, 64u);
  ASSERT_EQ(nncc_arena_alloc(a, 8, 8, "c", &off, &err), NNCC_OK);
  EXPECT_EQ(off, 80u);
  EXPECT_EQ(nncc_arena_high_water(a), 88u);
  EXPECT_STATUS_MSG(nncc_arena_alloc(a, 200, 64, "big", &off, &err), err,
                    NNCC_ERROR_OUT_OF_MEMORY,
                    "'big' needs bytes [128, 328) but the CPU arena holds 256 bytes (72 bytes short)");
  EXPECT_STATUS_MSG(nncc_arena_alloc(a, 8, 3, "odd", &off, &err), err, NNCC_ERROR_INVALID_ARGUMENT,
                    "alignment 3 is not a power of two");
  nncc_arena_reset(a);
  ASSERT_EQ(nncc_arena_alloc(a, 200, 64, "big", &off, &err), NNCC_OK);
  EXPECT_EQ(off, 0u);
  EXPECT_EQ(nncc_arena_high_water(a), 200u);
  nncc_arena_destroy(a);
}

TEST(Arena, ZeroCapacityAndHugeRequests) {
  nncc_arena *a = nullptr;
  nncc_error err;
  ASSERT_EQ(nncc_arena_create_cpu(0, &a, &err), NNCC_OK);
  EXPECT_EQ(nncc_arena_base(a), nullptr);
  void *p;
  EXPECT_STATUS_MSG(nncc_arena_region(a, 0, 1, "x", &p, &err), err, NNCC_ERROR_OUT_OF_MEMORY,
                    "holds 0 bytes (1 bytes short)");
  nncc_arena_destroy(a);
  a = reinterpret_cast<nncc_arena *>(0x1);
  EXPECT_STATUS_MSG(nncc_arena_create_cpu(~0ull - 5, &a, &err), err, NNCC_ERROR_OUT_OF_MEMORY,
                    "arena: cannot allocate 18446744073709551610 bytes of host memory");
  EXPECT_EQ(a, nullptr);
  EXPECT_STATUS_MSG(nncc_arena_create_cpu(1, nullptr, &err), err, NNCC_ERROR_INVALID_ARGUMENT,
                    "out is NULL");
}
