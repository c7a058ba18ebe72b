//===- RuntimeCudaTests.cpp - driver loading, unavailability, fake driver -===//
//
// Without a GPU (the usual case), every CUDA entry must fail cleanly with
// NNCC_ERROR_CUDA_UNAVAILABLE. The CudaFake tests run the CUDA code paths
// against test/Runtime/FakeCudaDriver.c; they need NNCC_CUDA_DRIVER to point
// at it before the process loads the driver (test/Runtime/cuda-fake-driver.test).
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtil.h"

#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <vector>

namespace {
bool driverOverridden() {
  const char *env = std::getenv("NNCC_CUDA_DRIVER");
  return env && *env;
}
} // namespace

TEST(CudaUnavailable, EveryEntryReportsItCleanly) {
  if (driverOverridden())
    GTEST_SKIP() << "NNCC_CUDA_DRIVER is set";
  nncc_error err;
  const nncc_cuda_driver *d = nullptr;
  if (nncc_cuda_driver_get(&d, &err) == NNCC_OK)
    GTEST_SKIP() << "a CUDA driver is installed here";
  EXPECT_EQ(d, nullptr);
  EXPECT_EQ(err.status, NNCC_ERROR_CUDA_UNAVAILABLE);
  std::string msg = err.message;
  EXPECT_TRUE(msg.find("CUDA driver libcuda.so.1 not found: ") == 0 ||
              msg.find("cuInit failed") != std::string::npos)
      << msg;
  EXPECT_NE(msg.find("; run with --target cpu"), std::string::npos) << msg;
  EXPECT_EQ(nncc_cuda_available(), 0);

  int count = 7;
  EXPECT_STATUS_MSG(nncc_cuda_device_count(&count, &err), err, NNCC_ERROR_CUDA_UNAVAILABLE,
                    "run with --target cpu");
  EXPECT_EQ(count, 0);
  nncc_cuda_context *ctx = reinterpret_cast<nncc_cuda_context *>(0x1);
  EXPECT_STATUS_MSG(nncc_cuda_context_create(0, &ctx, &err), err, NNCC_ERROR_CUDA_UNAVAILABLE,
                    "run with --target cpu");
  EXPECT_EQ(ctx, nullptr);
  nncc_arena *arena = reinterpret_cast<nncc_arena *>(0x1);
  EXPECT_STATUS_MSG(nncc_arena_create_cuda(nullptr, 1024, &arena, &err), err,
                    NNCC_ERROR_CUDA_UNAVAILABLE, "run with --target cpu");
  EXPECT_EQ(arena, nullptr);
  nncc_stream *stream = nullptr;
  EXPECT_STATUS_MSG(nncc_stream_create_cuda(nullptr, &stream, &err), err,
                    NNCC_ERROR_INVALID_ARGUMENT, "ctx is NULL");
  // Results are cached: asking again gives the same answer.
  nncc_error again;
  EXPECT_EQ(nncc_cuda_driver_get(&d, &again), NNCC_ERROR_CUDA_UNAVAILABLE);
  EXPECT_STREQ(again.message, msg.c_str());
}

TEST(CudaProbe, ExplainsEachWayLoadingFails) {
  nncc_error err;
  EXPECT_STATUS_MSG(nncc_cuda_driver_probe("/nonexistent/libcuda.so.1", &err), err,
                    NNCC_ERROR_CUDA_UNAVAILABLE,
                    "CUDA driver /nonexistent/libcuda.so.1 not found: /nonexistent/libcuda.so.1: "
                    "cannot open shared object file");
  EXPECT_STATUS_MSG(nncc_cuda_driver_probe("libm.so.6", &err), err, NNCC_ERROR_CUDA_UNAVAILABLE,
                    "CUDA driver libm.so.6 lacks cuInit (driver too old?); run with --target cpu");
  const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (access(stub, R_OK) == 0)
    EXPECT_STATUS_MSG(nncc_cuda_driver_probe(stub, &err), err, NNCC_ERROR_CUDA_UNAVAILABLE,
                      "cuInit failed: ");
  EXPECT_EQ(nncc_cuda_driver_probe(NNCC_FAKE_CUDA_DRIVER, &err), NNCC_OK) << err.message;
  EXPECT_STATUS_MSG(nncc_cuda_driver_probe(nullptr, &err), err, NNCC_ERROR_INVALID_ARGUMENT,
                    "library_path is NULL");
}

TEST(CudaCheck, MapsDriverResults) {
  nncc_error err;
  EXPECT_EQ(nncc_cuda_check(0, "x", &err), NNCC_OK);
  EXPECT_STATUS_MSG(nncc_cuda_check(2, "cuMemAlloc", &err), err, NNCC_ERROR_OUT_OF_MEMORY,
                    "cuMemAlloc failed: ");
  EXPECT_STATUS_MSG(nncc_cuda_check(100, "cuDeviceGet", &err), err, NNCC_ERROR_CUDA_UNAVAILABLE,
                    "cuDeviceGet failed: ");
  EXPECT_STATUS_MSG(nncc_cuda_check(700, "cuStreamSynchronize", &err), err, NNCC_ERROR_CUDA,
                    "cuStreamSynchronize failed: ");
}

TEST(CpuStream, RunsInOrderAndKeepsTheFirstError) {
  nncc_stream *s = nullptr;
  nncc_error err;
  ASSERT_EQ(nncc_stream_create_cpu(&s, &err), NNCC_OK);
  EXPECT_EQ(nncc_stream_device(s), NNCC_DEVICE_CPU);
  EXPECT_EQ(nncc_stream_cuda_handle(s), nullptr);
  std::vector<int> order;
  auto push = [](void *user, nncc_error *) -> nncc_status {
    auto *v = static_cast<std::vector<int> *>(user);
    v->push_back(static_cast<int>(v->size()));
    return NNCC_OK;
  };
  auto failing = [](void *, nncc_error *e) -> nncc_status {
    return nncc_error_set(e, NNCC_ERROR_SHAPE_MISMATCH, "kernel 'gemm': bad shape");
  };
  EXPECT_EQ(nncc_stream_enqueue_host(s, push, &order, &err), NNCC_OK);
  EXPECT_EQ(nncc_stream_enqueue_host(s, push, &order, &err), NNCC_OK);
  EXPECT_EQ(order, (std::vector<int>{0, 1}));
  EXPECT_EQ(nncc_stream_synchronize(s, &err), NNCC_OK);
  EXPECT_STATUS_MSG(nncc_stream_enqueue_host(s, failing, nullptr, &err), err,
                    NNCC_ERROR_SHAPE_MISMATCH, "kernel 'gemm': bad shape");
  EXPECT_STATUS_MSG(nncc_stream_enqueue_host(s, push, &order, &err), err,
                    NNCC_ERROR_SHAPE_MISMATCH, "kernel 'gemm': bad shape");
  EXPECT_EQ(order.size(), 2u); // skipped after the failure
  EXPECT_STATUS_MSG(nncc_stream_synchronize(s, &err), err, NNCC_ERROR_SHAPE_MISMATCH,
                    "kernel 'gemm'");
  nncc_stream_destroy(s);
}

// --- the CUDA code paths against the fake driver -------------------------

class CudaFake : public ::testing::Test {
protected:
  void SetUp() override {
    const char *env = std::getenv("NNCC_CUDA_DRIVER");
    if (!env || std::strcmp(env, NNCC_FAKE_CUDA_DRIVER) != 0)
      GTEST_SKIP() << "run with NNCC_CUDA_DRIVER=" << NNCC_FAKE_CUDA_DRIVER;
    ASSERT_EQ(nncc_cuda_context_create(0, &ctx, &err), NNCC_OK) << err.message;
  }
  void TearDown() override { nncc_cuda_context_destroy(ctx); }
  nncc_cuda_context *ctx = nullptr;
  nncc_error err;
};

TEST_F(CudaFake, DevicesAndContexts) {
  int count = 0;
  EXPECT_EQ(nncc_cuda_device_count(&count, &err), NNCC_OK);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(nncc_cuda_available(), 1);
  nncc_cuda_context *other = nullptr;
  EXPECT_STATUS_MSG(nncc_cuda_context_create(3, &other, &err), err, NNCC_ERROR_INVALID_ARGUMENT,
                    "CUDA device 3 requested but 1 device(s) present (valid: 0..0)");
  const nncc_cuda_driver *d = nullptr;
  ASSERT_EQ(nncc_cuda_driver_get(&d, &err), NNCC_OK);
  int version = 0;
  EXPECT_EQ(d->cuDriverGetVersion(&version), 0);
  EXPECT_EQ(version, 13000);
}

TEST_F(CudaFake, MemoryAndStreams) {
  nncc_CUdeviceptr p = 0;
  ASSERT_EQ(nncc_cuda_malloc(ctx, 64, &p, &err), NNCC_OK);
  float in[16], out[16] = {};
  for (int i = 0; i < 16; ++i)
    in[i] = i * 0.5f;
  ASSERT_EQ(nncc_cuda_memcpy_htod(ctx, p, in, sizeof in, nullptr, &err), NNCC_OK);
  ASSERT_EQ(nncc_cuda_memcpy_dtoh(ctx, out, p, sizeof out, nullptr, &err), NNCC_OK);
  EXPECT_EQ(std::memcmp(in, out, sizeof in), 0);
  nncc_stream *s = nullptr;
  ASSERT_EQ(nncc_stream_create_cuda(ctx, &s, &err), NNCC_OK) << err.message;
  EXPECT_EQ(nncc_stream_device(s), NNCC_DEVICE_CUDA);
  EXPECT_NE(nncc_stream_cuda_handle(s), nullptr);
  std::memset(out, 0, sizeof out);
  ASSERT_EQ(nncc_cuda_memcpy_dtoh(ctx, out, p, sizeof out, s, &err), NNCC_OK) << err.message;
  ASSERT_EQ(nncc_stream_synchronize(s, &err), NNCC_OK);
  EXPECT_EQ(std::memcmp(in, out, sizeof in), 0);
  EXPECT_EQ(nncc_cuda_free(ctx, p, &err), NNCC_OK);
  nncc_stream_destroy(s);

  EXPECT_STATUS_MSG(nncc_cuda_malloc(ctx, 2ull << 30, &p, &err), err, NNCC_ERROR_OUT_OF_MEMORY,
                    "cuMemAlloc(2147483648 bytes) on device 0 failed: CUDA_ERROR_OUT_OF_MEMORY "
                    "(out of memory)");
}

TEST_F(CudaFake, ArenaOnTheDevice) {
  nncc_arena *a = nullptr;
  ASSERT_EQ(nncc_arena_create_cuda(ctx, 4096, &a, &err), NNCC_OK) << err.message;
  EXPECT_EQ(nncc_arena_device(a), NNCC_DEVICE_CUDA);
  void *p = nullptr;
  ASSERT_EQ(nncc_arena_region(a, 1024, 1024, "h", &p, &err), NNCC_OK);
  unsigned char bytes[1024];
  ASSERT_EQ(nncc_cuda_memcpy_dtoh(ctx, bytes, reinterpret_cast<nncc_CUdeviceptr>(p), 1024,
                                  nullptr, &err),
            NNCC_OK);
  for (unsigned char b : bytes)
    ASSERT_EQ(b, 0); // zero-filled
  EXPECT_STATUS_MSG(nncc_arena_region(a, 4000, 100, "attn", &p, &err), err,
                    NNCC_ERROR_OUT_OF_MEMORY,
                    "'attn' needs bytes [4000, 4100) but the CUDA arena holds 4096 bytes");
  EXPECT_EQ(nncc_arena_high_water(a), 2048u);
  nncc_arena_destroy(a);
  EXPECT_STATUS_MSG(nncc_arena_create_cuda(ctx, 4ull << 30, &a, &err), err,
                    NNCC_ERROR_OUT_OF_MEMORY, "arena of 4294967296 bytes: cuMemAlloc(");
}

TEST_F(CudaFake, ModulesAndLaunches) {
  nncc_cuda_module *m = nullptr;
  EXPECT_STATUS_MSG(nncc_cuda_module_load(ctx, "garbage", &m, &err), err, NNCC_ERROR_CUDA,
                    "cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE");
  ASSERT_EQ(nncc_cuda_module_load(ctx, "FAKE image", &m, &err), NNCC_OK);
  nncc_CUfunction fn = nullptr;
  EXPECT_STATUS_MSG(nncc_cuda_module_function(m, "lstm_fwd", &fn, &err), err,
                    NNCC_ERROR_NOT_FOUND, "kernel 'lstm_fwd' not found in the CUDA module");
  ASSERT_EQ(nncc_cuda_module_function(m, "fill_f32", &fn, &err), NNCC_OK);
  nncc_CUdeviceptr dst = 0;
  ASSERT_EQ(nncc_cuda_malloc(ctx, 40, &dst, &err), NNCC_OK);
  float value = 2.5f;
  int n = 10;
  void *args[] = {&dst, &value, &n};
  unsigned grid[3] = {1, 1, 1}, block[3] = {32, 1, 1}, bad[3] = {2048, 1, 1};
  nncc_stream *s = nullptr;
  ASSERT_EQ(nncc_stream_create_cuda(ctx, &s, &err), NNCC_OK);
  ASSERT_EQ(nncc_cuda_launch(ctx, fn, grid, block, 0, s, args, "fill_f32", &err), NNCC_OK);
  float out[10];
  ASSERT_EQ(nncc_cuda_memcpy_dtoh(ctx, out, dst, sizeof out, s, &err), NNCC_OK);
  ASSERT_EQ(nncc_stream_synchronize(s, &err), NNCC_OK);
  for (float x : out)
    EXPECT_EQ(x, 2.5f);
  EXPECT_STATUS_MSG(nncc_cuda_launch(ctx, fn, grid, bad, 128, s, args, "fill_f32", &err), err,
                    NNCC_ERROR_CUDA,
                    "launching kernel 'fill_f32' (grid [1, 1, 1], block [2048, 1, 1], 128 bytes "
                    "shared) failed: CUDA_ERROR_INVALID_VALUE (invalid argument)");
  nncc_stream *cpu = nullptr;
  ASSERT_EQ(nncc_stream_create_cpu(&cpu, &err), NNCC_OK);
  EXPECT_STATUS_MSG(nncc_cuda_launch(ctx, fn, grid, block, 0, cpu, args, "fill_f32", &err), err,
                    NNCC_ERROR_INVALID_ARGUMENT, "given a CPU stream");
  nncc_stream_destroy(cpu);
  nncc_stream_destroy(s);
  nncc_cuda_free(ctx, dst, nullptr);
  nncc_cuda_module_unload(m);
}
