//===- ModelSupportTests.cpp - libnncc_model_support without generated code ===//
//
// A hand-written model definition (what the emitters generate): dims B, T;
// inputs x f32[B, T, 4] and lengths i32[B]; parameters w f32[3, 4] (uniform),
// b f32[3] (zeros), g f32[3] (ones), c f32[2] (constant 0.5), n f32[4096]
// (normal 0, 2); output y f32[B, T, 3] = x w^T + b through an arena buffer.
//
//===----------------------------------------------------------------------===//
#include "nncc/ModelSupport/ModelSupport.h"

#include "RuntimeTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

const char *const kDimNames[] = {"B", "T"};
const int64_t kXDims[] = {-1, -2, 4};
const int64_t kLenDims[] = {-1};
const int64_t kWDims[] = {3, 4};
const int64_t kBDims[] = {3};
const int64_t kCDims[] = {2};
const int64_t kNDims[] = {4096};
const int64_t kYDims[] = {-1, -2, 3};

const nncc_tensor_info kInputs[] = {
    {"x", NNCC_DTYPE_F32, 3, kXDims},
    {"lengths", NNCC_DTYPE_I32, 1, kLenDims},
};
const nncc_tensor_info kOutputs[] = {{"y", NNCC_DTYPE_F32, 3, kYDims}};
const nncc_tensor_info kParams[] = {
    {"fc.weight", NNCC_DTYPE_F32, 2, kWDims}, {"fc.bias", NNCC_DTYPE_F32, 1, kBDims},
    {"ln.weight", NNCC_DTYPE_F32, 1, kBDims}, {"c", NNCC_DTYPE_F32, 1, kCDims},
    {"emb.weight", NNCC_DTYPE_F32, 1, kNDims},
};
const nncc_ms_init kInits[] = {
    {NNCC_MS_INIT_UNIFORM, -0.5, 0.5}, {NNCC_MS_INIT_ZEROS, 0, 0},
    {NNCC_MS_INIT_ONES, 0, 0},         {NNCC_MS_INIT_CONSTANT, 0.5, 0},
    {NNCC_MS_INIT_NORMAL, 0.0, 2.0},
};
const int64_t kTmpDims[] = {-1, -2, 3};
const nncc_ms_buffer kBuffers[] = {
    {"xw", 3, kTmpDims, 4, 0, 1},
    {"workspace", -1, nullptr, 1, 0, 0},
};

uint64_t workspaceBytes(int32_t, const int64_t *dims) {
  return static_cast<uint64_t>(dims[0] * 100);
}

nncc_status forwardCpu(nncc_model *m, nncc_error *err) {
  const int64_t *d = nncc_ms_dims(m);
  int64_t rows = d[0] * d[1];
  const float *x = static_cast<const float *>(nncc_ms_input(m, 0));
  const float *w = static_cast<const float *>(nncc_ms_param(m, 0));
  const float *b = static_cast<const float *>(nncc_ms_param(m, 1));
  float *xw = static_cast<float *>(nncc_ms_buffer_ptr(m, 0));
  float *y = static_cast<float *>(nncc_ms_output(m, 0));
  if (!xw || !nncc_ms_buffer_ptr(m, 1))
    return nncc_error_set(err, NNCC_ERROR_INTERNAL, "no buffer");
  for (int64_t r = 0; r < rows; ++r)
    for (int j = 0; j < 3; ++j) {
      float s = 0;
      for (int k = 0; k < 4; ++k)
        s += x[r * 4 + k] * w[j * 4 + k];
      xw[r * 3 + j] = s;
    }
  for (int64_t r = 0; r < rows; ++r)
    for (int j = 0; j < 3; ++j)
      y[r * 3 + j] = xw[r * 3 + j] + b[j];
  return NNCC_OK;
}

nncc_status fakeCudaForward(nncc_model *, nncc_error *err) {
  return nncc_error_set(err, NNCC_ERROR_INTERNAL, "not reached");
}

extern const nncc_ms_model_def kDef;
extern const nncc_ms_model_def kDefWithCuda;

nncc_status createToy(nncc_target target, nncc_model **out, nncc_error *err) {
  return nncc_ms_create(&kDef, target, out, err);
}

const nncc_model_abi kAbi = {
    NNCC_MODEL_ABI_VERSION, "toy", "f32", 2, kDimNames, 2, kInputs, 1, kOutputs, 5,
    kParams, createToy, nncc_ms_destroy, nncc_ms_load_weights, nncc_ms_init_weights,
    nncc_ms_save_weights, nncc_ms_set_input, nncc_ms_forward, nncc_ms_get_output,
    nncc_ms_memory_stats,
};
const nncc_ms_model_def kDef = {&kAbi, kInits, 2, kBuffers, workspaceBytes,
                                forwardCpu, nullptr, nullptr, nullptr,
                                nullptr, nullptr, 2, 2, 2};
const nncc_ms_model_def kDefWithCuda = {&kAbi, kInits, 2, kBuffers, workspaceBytes,
                                        forwardCpu, fakeCudaForward, nullptr, nullptr,
                                        nullptr, nullptr, 2, 2, 2};

std::string tempPath(const char *tag) {
  const char *dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/nncc-ms-" + tag + "-" +
         std::to_string(getpid()) + ".safetensors";
}

struct Model {
  nncc_model *m = nullptr;
  nncc_error err;
  Model() {
    EXPECT_EQ(kAbi.create(NNCC_TARGET_CPU, &m, &err), NNCC_OK) << err.message;
  }
  ~Model() { kAbi.destroy(m); }
  nncc_status setX(int64_t B, int64_t T, float fill = 1.0f) {
    std::vector<float> x(static_cast<size_t>(B * T * 4), fill);
    int64_t shape[] = {B, T, 4};
    return kAbi.set_input(m, "x", NNCC_DTYPE_F32, 3, shape, x.data(), &err);
  }
  nncc_status setLengths(int64_t B) {
    std::vector<int32_t> l(static_cast<size_t>(B), 1);
    int64_t shape[] = {B};
    return kAbi.set_input(m, "lengths", NNCC_DTYPE_I32, 1, shape, l.data(), &err);
  }
  std::vector<float> param(const char *name) {
    std::string path = tempPath("param");
    EXPECT_EQ(kAbi.save_weights(m, path.c_str(), &err), NNCC_OK) << err.message;
    nncc_safetensors *f = nullptr;
    std::vector<float> out;
    if (nncc_safetensors_open(path.c_str(), &f, &err) == NNCC_OK) {
      nncc_tensor_view v;
      if (nncc_safetensors_find(f, name, &v, &err) == NNCC_OK) {
        out.resize(v.numel);
        std::memcpy(out.data(), v.data, v.nbytes);
      }
      nncc_safetensors_close(f);
    }
    std::remove(path.c_str());
    return out;
  }
};

nncc_status t_forwardable(Model &t) {
  if (nncc_status s = t.setX(2, 2))
    return s;
  if (nncc_status s = t.setLengths(2))
    return s;
  return kAbi.forward(t.m, &t.err);
}

TEST(ModelSupport, PlanOffsetsReuseOnlyDisjointRanges) {
  uint64_t bytes[] = {100, 64, 200, 1, 0};
  int32_t first[] = {0, 1, 2, 0, 3};
  int32_t last[] = {1, 2, 3, 3, 3};
  uint64_t off[5];
  uint64_t total = nncc_ms_plan_offsets(5, bytes, first, last, off);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(off[i] % NNCC_ARENA_ALIGNMENT, 0u);
    EXPECT_LE(off[i] + bytes[i], total);
    for (int j = 0; j < i; ++j) {
      bool live = !(last[i] < first[j] || last[j] < first[i]);
      bool overlap = off[i] < off[j] + bytes[j] && off[j] < off[i] + bytes[i];
      if (live) {
        EXPECT_FALSE(overlap && bytes[i] && bytes[j]) << i << " vs " << j;
      }
    }
  }
  // 200 (live 2-3) can reuse 100's bytes (live 0-1): 200 + 64 + 64 at most.
  EXPECT_LE(total, 64u * 6);
  EXPECT_EQ(nncc_ms_plan_offsets(0, nullptr, nullptr, nullptr, nullptr), 0u);
}

// nncc_ms_reduce against a per-element reference (div/mod of every index)
// over every mask of rank-4 shapes with size-1 dims, in f64 so sums compare
// exactly (both sum each output's inputs in row-major order).
TEST(ModelSupport, ReduceMatchesPerElementReference) {
  const int64_t shapes[][4] = {{2, 3, 4, 5}, {1, 3, 1, 5}, {4, 1, 1, 1}, {3, 2, 1, 7}};
  for (const auto &shape : shapes) {
    int64_t total = shape[0] * shape[1] * shape[2] * shape[3];
    std::vector<double> x(total);
    for (int64_t i = 0; i < total; ++i)
      x[i] = std::sin(0.37 * double(i)) + 0.01 * double(i);
    for (uint32_t mask = 0; mask < 16; ++mask)
      for (int mean = 0; mean < 2; ++mean) {
        int64_t kept = 1;
        for (int d = 0; d < 4; ++d)
          if (!(mask >> d & 1))
            kept *= shape[d];
        std::vector<double> want(kept, 0.0), got(kept, -1.0);
        for (int64_t i = 0; i < total; ++i) {
          int64_t rem = i, o = 0, stride = 1;
          for (int d = 3; d >= 0; --d) {
            int64_t c = rem % shape[d];
            rem /= shape[d];
            if (!(mask >> d & 1)) {
              o += c * stride;
              stride *= shape[d];
            }
          }
          want[o] += x[i];
        }
        if (mean)
          for (double &w : want)
            w /= double(total / kept);
        nncc_ms_reduce_f64(4, shape, mask, mean, x.data(), got.data());
        for (int64_t o = 0; o < kept; ++o)
          ASSERT_EQ(got[o], want[o]) << "mask " << mask << " mean " << mean << " o " << o;
      }
  }
}

// The optimizer groups come from the compiler's table (kParamGroups), not
// from the parameter names: the toy's names say nothing of the groups below.
TEST(ModelSupport, ParamGroupsComeFromTheCompilersTable) {
  static const nncc_param_group kGroups[] = {{1, 2}, {0, 2}, {0, 0}, {1, 0}, {1, 3}};
  nncc_model_abi abi = kAbi;
  abi.param_groups = kGroups;
  nncc_ms_model_def def = kDef;
  def.abi = &abi;
  nncc_model *m = nullptr;
  nncc_error err;
  ASSERT_EQ(nncc_ms_create(&def, NNCC_TARGET_CPU, &m, &err), NNCC_OK) << err.message;
  nncc_train_config c{};
  c.layer_decay = 0.5;
  const double want[] = {0.25, 0.25, 1.0, 1.0, 0.125};
  for (int32_t i = 0; i < 5; ++i) {
    int32_t decay = -1;
    double scale = -1.0;
    ASSERT_EQ(nncc_ms_param_group(m, i, &c, &decay, &scale, &err), NNCC_OK) << err.message;
    EXPECT_EQ(decay, kGroups[i].decay) << kParams[i].name;
    EXPECT_EQ(scale, want[i]) << kParams[i].name;
  }
  // layer_decay 1: no layer-wise decay.
  c.layer_decay = 1.0;
  double scale = -1.0;
  ASSERT_EQ(nncc_ms_param_group(m, 4, &c, nullptr, &scale, &err), NNCC_OK);
  EXPECT_EQ(scale, 1.0);
  EXPECT_EQ(nncc_ms_param_group(m, 5, &c, nullptr, &scale, &err),
            NNCC_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(err.message, "out of range"), nullptr) << err.message;
  nncc_ms_destroy(m);

  // A table without groups (a library of ABI 3): everything decays, multiplier 1.
  abi.param_groups = nullptr;
  ASSERT_EQ(nncc_ms_create(&def, NNCC_TARGET_CPU, &m, &err), NNCC_OK) << err.message;
  c.layer_decay = 0.5;
  for (int32_t i = 0; i < 5; ++i) {
    int32_t decay = -1;
    ASSERT_EQ(nncc_ms_param_group(m, i, &c, &decay, &scale, &err), NNCC_OK);
    EXPECT_EQ(decay, 1);
    EXPECT_EQ(scale, 1.0);
  }
  nncc_ms_destroy(m);
}

TEST(ModelSupport, CreateErrors) {
  nncc_error err;
  nncc_model *m = reinterpret_cast<nncc_model *>(0x1);
  EXPECT_STATUS_MSG(nncc_ms_create(&kDef, static_cast<nncc_target>(7), &m, &err), err,
                    NNCC_ERROR_INVALID_ARGUMENT, "unknown target 7");
  EXPECT_EQ(m, nullptr);
  EXPECT_STATUS_MSG(nncc_ms_create(nullptr, NNCC_TARGET_CPU, &m, &err), err,
                    NNCC_ERROR_INVALID_ARGUMENT, "no model definition");
  EXPECT_EQ(nncc_ms_create(&kDef, NNCC_TARGET_CPU, nullptr, nullptr),
            NNCC_ERROR_INVALID_ARGUMENT);
  // Built without CUDA: unsupported, before the driver is even looked at.
  EXPECT_STATUS_MSG(nncc_ms_create(&kDef, NNCC_TARGET_CUDA, &m, &err), err,
                    NNCC_ERROR_UNSUPPORTED, "compiled without the CUDA target");
  EXPECT_EQ(m, nullptr);
}

TEST(ModelSupport, CudaUnavailableSaysWhy) {
  // The runtime caches the driver's outcome per process; this test binary
  // loads it only here, from a path that does not exist.
  setenv("NNCC_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  nncc_error err;
  nncc_model *m = nullptr;
  EXPECT_STATUS_MSG(nncc_ms_create(&kDefWithCuda, NNCC_TARGET_CUDA, &m, &err), err,
                    NNCC_ERROR_CUDA_UNAVAILABLE, "cannot run model 'toy' on CUDA");
  EXPECT_NE(std::string(err.message).find("--target cpu"), std::string::npos)
      << err.message;
  EXPECT_EQ(m, nullptr);
  // NULL err is fine too.
  EXPECT_EQ(nncc_ms_create(&kDefWithCuda, NNCC_TARGET_CUDA, &m, nullptr),
            NNCC_ERROR_CUDA_UNAVAILABLE);
}

TEST(ModelSupport, NullArguments) {
  nncc_error err;
  EXPECT_STATUS_MSG(kAbi.forward(nullptr, &err), err, NNCC_ERROR_INVALID_ARGUMENT,
                    "model is NULL");
  EXPECT_EQ(kAbi.set_input(nullptr, "x", NNCC_DTYPE_F32, 0, nullptr, nullptr, nullptr),
            NNCC_ERROR_INVALID_ARGUMENT);
  kAbi.destroy(nullptr);
  Model t;
  EXPECT_STATUS_MSG(kAbi.set_input(t.m, nullptr, NNCC_DTYPE_F32, 0, nullptr, nullptr,
                                   &t.err),
                    t.err, NNCC_ERROR_INVALID_ARGUMENT, "name is NULL");
  int64_t shape[] = {2, 3, 4};
  EXPECT_STATUS_MSG(kAbi.set_input(t.m, "x", NNCC_DTYPE_F32, 3, shape, nullptr, &t.err),
                    t.err, NNCC_ERROR_INVALID_ARGUMENT, "data is NULL");
  EXPECT_STATUS_MSG(kAbi.set_input(t.m, "x", NNCC_DTYPE_F32, 3, nullptr, nullptr, &t.err),
                    t.err, NNCC_ERROR_INVALID_ARGUMENT, "NULL shape");
  EXPECT_STATUS_MSG(kAbi.load_weights(t.m, nullptr, &t.err), t.err,
                    NNCC_ERROR_INVALID_ARGUMENT, "path is NULL");
}

TEST(ModelSupport, SetInputChecksNameDtypeRankAndStaticDims) {
  Model t;
  float data[64] = {};
  int64_t good[] = {2, 3, 4};
  EXPECT_STATUS_MSG(kAbi.set_input(t.m, "z", NNCC_DTYPE_F32, 3, good, data, &t.err),
                    t.err, NNCC_ERROR_NOT_FOUND, "no input 'z' (inputs: 'x', 'lengths')");
  EXPECT_STATUS_MSG(kAbi.set_input(t.m, "x", NNCC_DTYPE_F64, 3, good, data, &t.err),
                    t.err, NNCC_ERROR_DTYPE_MISMATCH,
                    "input 'x': expected element type F32, got F64");
  int64_t rank2[] = {6, 4};
  EXPECT_STATUS_MSG(kAbi.set_input(t.m, "x", NNCC_DTYPE_F32, 2, rank2, data, &t.err),
                    t.err, NNCC_ERROR_SHAPE_MISMATCH,
                    "expected rank 3 [B, T, 4], got rank 2 [6, 4]");
  int64_t wrong[] = {2, 3, 5};
  EXPECT_STATUS_MSG(kAbi.set_input(t.m, "x", NNCC_DTYPE_F32, 3, wrong, data, &t.err),
                    t.err, NNCC_ERROR_SHAPE_MISMATCH,
                    "dim 2 must be 4, got 5 (expected [B, T, 4], got [2, 3, 5])");
  int64_t negative[] = {2, -3, 4};
  EXPECT_STATUS_MSG(kAbi.set_input(t.m, "x", NNCC_DTYPE_F32, 3, negative, data, &t.err),
                    t.err, NNCC_ERROR_INVALID_ARGUMENT, "negative size -3");
  int64_t huge[] = {INT64_MAX / 2, 4, 4};
  EXPECT_STATUS_MSG(kAbi.set_input(t.m, "x", NNCC_DTYPE_F32, 3, huge, data, &t.err),
                    t.err, NNCC_ERROR_INVALID_ARGUMENT, "overflows");
  EXPECT_EQ(kAbi.set_input(t.m, "x", NNCC_DTYPE_F32, 3, good, data, &t.err), NNCC_OK)
      << t.err.message;
  EXPECT_EQ(t.err.status, NNCC_OK);
  EXPECT_STREQ(t.err.message, "");
}

TEST(ModelSupport, BindsSymbolicDimsAcrossInputs) {
  Model t;
  EXPECT_EQ(nncc_ms_bound_dim(t.m, 0), -1);
  ASSERT_EQ(t.setX(2, 5), NNCC_OK) << t.err.message;
  EXPECT_EQ(nncc_ms_bound_dim(t.m, 0), 2);
  EXPECT_EQ(nncc_ms_bound_dim(t.m, 1), 5);
  EXPECT_STATUS_MSG(t.setLengths(3), t.err, NNCC_ERROR_SHAPE_MISMATCH,
                    "input 'lengths': B = 3 (shape [3]) but input 'x' set B = 2 (shape "
                    "[2, 5, 4])");
  EXPECT_EQ(t.setLengths(2), NNCC_OK) << t.err.message;
  // Re-setting x with a new T in the same batch is fine; with a new B it is not.
  EXPECT_EQ(t.setX(2, 7), NNCC_OK) << t.err.message;
  EXPECT_EQ(nncc_ms_bound_dim(t.m, 1), 7);
  EXPECT_STATUS_MSG(t.setX(4, 7), t.err, NNCC_ERROR_SHAPE_MISMATCH,
                    "but input 'lengths' set B = 2");
}

TEST(ModelSupport, ForwardNeedsWeightsAndEveryInput) {
  Model t;
  ASSERT_EQ(t.setX(2, 3), NNCC_OK);
  EXPECT_STATUS_MSG(kAbi.forward(t.m, &t.err), t.err, NNCC_ERROR_INVALID_ARGUMENT,
                    "call load_weights or init_weights first");
  ASSERT_EQ(kAbi.init_weights(t.m, 1, &t.err), NNCC_OK) << t.err.message;
  EXPECT_STATUS_MSG(kAbi.forward(t.m, &t.err), t.err, NNCC_ERROR_NOT_FOUND,
                    "input 'lengths' [B] has not been set");
  const void *data;
  EXPECT_STATUS_MSG(kAbi.get_output(t.m, "y", nullptr, nullptr, nullptr, &data, &t.err),
                    t.err, NNCC_ERROR_INVALID_ARGUMENT, "no successful forward");
}

TEST(ModelSupport, ForwardComputesOutputsAndRebindsPerBatch) {
  Model t;
  ASSERT_EQ(kAbi.init_weights(t.m, 42, &t.err), NNCC_OK);
  ASSERT_EQ(t.setX(2, 3, 1.0f), NNCC_OK);
  ASSERT_EQ(t.setLengths(2), NNCC_OK);
  ASSERT_EQ(kAbi.forward(t.m, &t.err), NNCC_OK) << t.err.message;
  std::vector<float> w = t.param("fc.weight");
  ASSERT_EQ(w.size(), 12u);
  nncc_dtype dtype;
  int32_t rank;
  const int64_t *shape;
  const void *data;
  ASSERT_EQ(kAbi.get_output(t.m, "y", &dtype, &rank, &shape, &data, &t.err), NNCC_OK);
  EXPECT_EQ(dtype, NNCC_DTYPE_F32);
  ASSERT_EQ(rank, 3);
  EXPECT_EQ(shape[0], 2);
  EXPECT_EQ(shape[1], 3);
  EXPECT_EQ(shape[2], 3);
  const float *y = static_cast<const float *>(data);
  for (int r = 0; r < 6; ++r)
    for (int j = 0; j < 3; ++j)
      EXPECT_FLOAT_EQ(y[r * 3 + j], w[j * 4] + w[j * 4 + 1] + w[j * 4 + 2] + w[j * 4 + 3]);
  EXPECT_STATUS_MSG(kAbi.get_output(t.m, "loss", nullptr, nullptr, nullptr, &data, &t.err),
                    t.err, NNCC_ERROR_NOT_FOUND, "no output 'loss' (outputs: 'y')");

  uint64_t arena = 0, peak = 0;
  ASSERT_EQ(kAbi.memory_stats(t.m, &arena, &peak, &t.err), NNCC_OK);
  EXPECT_GE(arena, 2u * 3 * 3 * 4 + 200);
  // Both buffers are the forward's: its run claims both; the high-water
  // mark is the end of the higher one (xw, 72 bytes, placed after the
  // 200-byte workspace at its 64-byte aligned end, 256).
  EXPECT_EQ(peak, 256u + 2 * 3 * 3 * 4);
  EXPECT_EQ(arena, 256u + 128);

  // A new batch: x with B = 5 drops the stale lengths (B = 2) ...
  ASSERT_EQ(t.setX(5, 1, 2.0f), NNCC_OK) << t.err.message;
  EXPECT_STATUS_MSG(kAbi.forward(t.m, &t.err), t.err, NNCC_ERROR_NOT_FOUND,
                    "input 'lengths' [B] has not been set for these dims");
  ASSERT_EQ(t.setLengths(5), NNCC_OK);
  ASSERT_EQ(kAbi.forward(t.m, &t.err), NNCC_OK) << t.err.message;
  ASSERT_EQ(kAbi.get_output(t.m, "y", &dtype, &rank, &shape, &data, &t.err), NNCC_OK);
  EXPECT_EQ(shape[0], 5);
  EXPECT_EQ(shape[1], 1);
  uint64_t arena2 = 0;
  ASSERT_EQ(kAbi.memory_stats(t.m, &arena2, nullptr, &t.err), NNCC_OK);
  EXPECT_GE(arena2, 5u * 100);
}

TEST(ModelSupport, InitWeightsFollowsInitAttributesAndSeed) {
  Model a, b;
  ASSERT_EQ(kAbi.init_weights(a.m, 7, &a.err), NNCC_OK);
  ASSERT_EQ(kAbi.init_weights(b.m, 7, &b.err), NNCC_OK);
  std::vector<float> w = a.param("fc.weight");
  EXPECT_EQ(w, b.param("fc.weight"));
  for (float v : w) {
    EXPECT_GE(v, -0.5f);
    EXPECT_LT(v, 0.5f);
  }
  ASSERT_EQ(kAbi.init_weights(b.m, 8, &b.err), NNCC_OK);
  EXPECT_NE(w, b.param("fc.weight"));
  EXPECT_EQ(a.param("fc.bias"), std::vector<float>(3, 0.0f));
  EXPECT_EQ(a.param("ln.weight"), std::vector<float>(3, 1.0f));
  EXPECT_EQ(a.param("c"), std::vector<float>(2, 0.5f));
  std::vector<float> n = a.param("emb.weight");
  double mean = 0, sq = 0;
  for (float v : n)
    mean += v;
  mean /= n.size();
  for (float v : n)
    sq += (v - mean) * (v - mean);
  EXPECT_NEAR(mean, 0.0, 0.15);
  EXPECT_NEAR(std::sqrt(sq / n.size()), 2.0, 0.15);
}

class WeightsFile : public ::testing::Test {
protected:
  std::string path = tempPath("weights");
  void TearDown() override { std::remove(path.c_str()); }
  void writeBytes(const std::string &bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  std::string readBytes() {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  /// A valid file with every parameter, with `skip` left out and `override`
  /// given a different header entry.
  void writeParams(const char *skip, const char *name = nullptr, const char *dtype = "F32",
                   int64_t n = 0) {
    nncc_safetensors_writer *w = nullptr;
    ASSERT_EQ(nncc_safetensors_writer_create(&w, nullptr), NNCC_OK);
    static std::vector<double> storage(8192, 0.25);
    for (const nncc_tensor_info &p : kParams) {
      if (skip && std::string(p.name) == skip)
        continue;
      if (name && std::string(p.name) == name) {
        nncc_dtype dt = nncc_dtype_from_name(dtype);
        ASSERT_EQ(nncc_safetensors_writer_add(w, p.name, dt, 1, &n, storage.data(),
                                              n * nncc_dtype_size(dt), nullptr),
                  NNCC_OK);
        continue;
      }
      uint64_t numel = 1;
      for (int i = 0; i < p.rank; ++i)
        numel *= p.dims[i];
      ASSERT_EQ(nncc_safetensors_writer_add(w, p.name, p.dtype, p.rank, p.dims,
                                            storage.data(), numel * 4, nullptr),
                NNCC_OK);
    }
    ASSERT_EQ(nncc_safetensors_writer_write(w, path.c_str(), nullptr), NNCC_OK);
    nncc_safetensors_writer_destroy(w);
  }
};

TEST_F(WeightsFile, SaveLoadRoundTrip) {
  Model a, b;
  ASSERT_EQ(kAbi.init_weights(a.m, 3, &a.err), NNCC_OK);
  ASSERT_EQ(kAbi.save_weights(a.m, path.c_str(), &a.err), NNCC_OK) << a.err.message;
  ASSERT_EQ(kAbi.load_weights(b.m, path.c_str(), &b.err), NNCC_OK) << b.err.message;
  for (const nncc_tensor_info &p : kParams)
    EXPECT_EQ(a.param(p.name), b.param(p.name)) << p.name;
  // Unknown names in the file are ignored; the file loads into a fresh model.
  ASSERT_EQ(t_forwardable(b), NNCC_OK) << b.err.message;
}

TEST_F(WeightsFile, MissingTensor) {
  writeParams("fc.bias");
  Model t;
  EXPECT_STATUS_MSG(kAbi.load_weights(t.m, path.c_str(), &t.err), t.err,
                    NNCC_ERROR_NOT_FOUND, "parameter 'fc.bias'");
  // The failed load changed nothing: still uninitialised.
  ASSERT_EQ(t.setX(1, 1), NNCC_OK);
  ASSERT_EQ(t.setLengths(1), NNCC_OK);
  EXPECT_EQ(kAbi.forward(t.m, &t.err), NNCC_ERROR_INVALID_ARGUMENT);
}

TEST_F(WeightsFile, WrongShape) {
  writeParams(nullptr, "fc.bias", "F32", 4);
  Model t;
  EXPECT_STATUS_MSG(kAbi.load_weights(t.m, path.c_str(), &t.err), t.err,
                    NNCC_ERROR_SHAPE_MISMATCH, "parameter 'fc.bias'");
}

TEST_F(WeightsFile, WrongDtype) {
  writeParams(nullptr, "fc.bias", "F64", 3);
  Model t;
  EXPECT_STATUS_MSG(kAbi.load_weights(t.m, path.c_str(), &t.err), t.err,
                    NNCC_ERROR_DTYPE_MISMATCH, "parameter 'fc.bias'");
}

TEST_F(WeightsFile, FailedLoadKeepsPreviousWeights) {
  Model t;
  ASSERT_EQ(kAbi.init_weights(t.m, 5, &t.err), NNCC_OK);
  std::vector<float> before = t.param("fc.weight");
  writeParams(nullptr, "emb.weight", "F32", 7);
  EXPECT_EQ(kAbi.load_weights(t.m, path.c_str(), &t.err), NNCC_ERROR_SHAPE_MISMATCH);
  EXPECT_EQ(t.param("fc.weight"), before);
}

TEST_F(WeightsFile, CorruptAndTruncatedFiles) {
  Model t;
  writeBytes("definitely not safetensors");
  EXPECT_STATUS_MSG(kAbi.load_weights(t.m, path.c_str(), &t.err), t.err,
                    NNCC_ERROR_CORRUPT_FILE, "loading weights from");
  writeParams(nullptr);
  std::string good = readBytes();
  writeBytes(good.substr(0, good.size() - 100)); // truncated data
  EXPECT_STATUS_MSG(kAbi.load_weights(t.m, path.c_str(), &t.err), t.err,
                    NNCC_ERROR_CORRUPT_FILE, "loading weights from");
  writeBytes(good.substr(0, 20)); // truncated header
  EXPECT_STATUS_MSG(kAbi.load_weights(t.m, path.c_str(), &t.err), t.err,
                    NNCC_ERROR_CORRUPT_FILE, "loading weights from");
  // Out-of-range data offsets.
  writeBytes(nncc_test::stFile(
      R"({"fc.bias":{"dtype":"F32","shape":[3],"data_offsets":[0,4000]}})", "abc"));
  EXPECT_STATUS_MSG(kAbi.load_weights(t.m, path.c_str(), &t.err), t.err,
                    NNCC_ERROR_CORRUPT_FILE, "loading weights from");
  EXPECT_STATUS_MSG(kAbi.load_weights(t.m, "/nonexistent/w.safetensors", &t.err), t.err,
                    t.err.status, "/nonexistent/w.safetensors");
  EXPECT_NE(t.err.status, NNCC_OK);
}

} // namespace
