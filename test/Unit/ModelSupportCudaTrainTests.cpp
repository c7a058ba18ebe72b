//===- ModelSupportCudaTrainTests.cpp - train_step on the CUDA target ------===//
//
// libnncc_model_support's CUDA training path (gradients and optimizer state
// in device memory, copies to the host only when read) against
// test/Runtime/FakeCudaDriver.c, whose device memory is host memory: the
// hand-written "device" functions below run on the host. A linear model
// y = x w^T + b with loss 0.5 sum(y^2): grad.w = y^T x, grad.b = sum_rows y.
// The tests skip unless NNCC_CUDA_DRIVER names the fake driver
// (test/Runtime/cuda-fake-train.test runs them).
//
//===----------------------------------------------------------------------===//
#include "nncc/ModelSupport/ModelSupport.h"

#include "RuntimeTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

const char *const kDimNames[] = {"N"};
const int64_t kXDims[] = {-1, 4};
const int64_t kYDims[] = {-1, 3};
const int64_t kWDims[] = {3, 4};
const int64_t kBDims[] = {3};
const int64_t kSDims[] = {2};

const nncc_tensor_info kInputs[] = {{"x", NNCC_DTYPE_F32, 2, kXDims}};
const nncc_tensor_info kOutputs[] = {{"y", NNCC_DTYPE_F32, 2, kYDims}};
const nncc_tensor_info kParams[] = {{"fc.weight", NNCC_DTYPE_F32, 2, kWDims},
                                    {"fc.bias", NNCC_DTYPE_F32, 1, kBDims},
                                    {"scale", NNCC_DTYPE_F32, 1, kSDims}};
const nncc_tensor_info kGrads[] = {{"grad.fc.weight", NNCC_DTYPE_F32, 2, kWDims},
                                   {"grad.fc.bias", NNCC_DTYPE_F32, 1, kBDims},
                                   {"grad.scale", NNCC_DTYPE_F32, 1, kSDims}};
// `scale` has no initialiser: init_weights keeps its value.
const nncc_ms_init kInits[] = {{NNCC_MS_INIT_CONSTANT, 0.25, 0},
                               {NNCC_MS_INIT_ZEROS, 0, 0},
                               {NNCC_MS_INIT_NONE, 0, 0}};
const nncc_param_group kGroups[] = {{1, 0}, {0, 0}, {0, 1}};
const int64_t kTmpDims[] = {-1, 3};
const nncc_ms_buffer kBuffers[] = {{"xw", 2, kTmpDims, 4, 0, 2}};

const float *in(nncc_model *m, int i) { return static_cast<const float *>(nncc_ms_input(m, i)); }
float *par(nncc_model *m, int i) { return static_cast<float *>(nncc_ms_param(m, i)); }
float *grad(nncc_model *m, int i) { return static_cast<float *>(nncc_ms_grad(m, i)); }

/// y = x w^T + b ("device" pointers: host memory under the fake driver).
nncc_status forwardOn(nncc_model *m) {
  int64_t n = nncc_ms_dims(m)[0];
  const float *x = in(m, 0), *w = par(m, 0), *b = par(m, 1);
  float *xw = static_cast<float *>(nncc_ms_buffer_ptr(m, 0));
  float *y = static_cast<float *>(nncc_ms_output(m, 0));
  for (int64_t r = 0; r < n; ++r)
    for (int j = 0; j < 3; ++j) {
      float s = 0;
      for (int k = 0; k < 4; ++k)
        s += x[r * 4 + k] * w[j * 4 + k];
      xw[r * 3 + j] = s;
      y[r * 3 + j] = s + b[j];
    }
  return NNCC_OK;
}

nncc_status cudaForward(nncc_model *m, nncc_error *) { return forwardOn(m); }
nncc_status cudaForwardTrain(nncc_model *m, nncc_error *) { return forwardOn(m); }

nncc_status cudaBackward(nncc_model *m, nncc_error *) {
  int64_t n = nncc_ms_dims(m)[0];
  const float *x = in(m, 0);
  const float *y = static_cast<const float *>(nncc_ms_output(m, 0));
  float *dw = grad(m, 0), *db = grad(m, 1), *ds = grad(m, 2);
  for (int j = 0; j < 3; ++j) {
    db[j] = 0;
    for (int k = 0; k < 4; ++k)
      dw[j * 4 + k] = 0;
    for (int64_t r = 0; r < n; ++r) {
      db[j] += y[r * 3 + j];
      for (int k = 0; k < 4; ++k)
        dw[j * 4 + k] += y[r * 3 + j] * x[r * 4 + k];
    }
  }
  ds[0] = 1.0f; // a constant gradient for the parameter outside the model
  ds[1] = -2.0f;
  return NNCC_OK;
}

nncc_status cudaSumSquares(nncc_model *m, double *out, nncc_error *) {
  const int64_t numel[] = {12, 3, 2};
  double s = 0;
  for (int i = 0; i < 3; ++i)
    for (int64_t k = 0; k < numel[i]; ++k)
      s += double(grad(m, i)[k]) * double(grad(m, i)[k]);
  *out = s;
  return NNCC_OK;
}

/// What the last update received, and SGD applied to the device copy
/// (state1 counts the steps each buffer has seen: 0 when freshly zeroed).
struct UpdateLog {
  int calls = 0;
  nncc_ms_cuda_update u{};
  std::vector<double> lr, wd;
  std::vector<void *> state1, state2;
  std::vector<float> state1Before;
} gLog;

nncc_status cudaUpdate(nncc_model *m, const nncc_ms_cuda_update *u, nncc_error *) {
  const int64_t numel[] = {12, 3, 2};
  ++gLog.calls;
  gLog.u = *u;
  gLog.lr.assign(u->lr, u->lr + 3);
  gLog.wd.assign(u->weight_decay, u->weight_decay + 3);
  gLog.state1.assign(u->state1, u->state1 + 3);
  gLog.state2.assign(u->state2, u->state2 + 3);
  gLog.state1Before.clear();
  for (int i = 0; i < 3; ++i) {
    float *s1 = static_cast<float *>(u->state1[i]);
    gLog.state1Before.push_back(s1 ? s1[0] : -1.0f);
    for (int64_t k = 0; k < numel[i]; ++k) {
      par(m, i)[k] -= float(u->lr[i] * u->grad_scale) * grad(m, i)[k];
      if (s1)
        s1[k] += 1.0f;
    }
  }
  return NNCC_OK;
}

/// Gradient accumulation's running mean (Optim.cuh's launch_grad_mean on
/// the host): the means of every call, and how often it ran per mode.
int gMeanCalls[3];
std::vector<void *> gMeans;
nncc_status cudaGradMean(nncc_model *m, void *const *means, int32_t mode, double alpha,
                         nncc_error *) {
  const int64_t numel[] = {12, 3, 2};
  ++gMeanCalls[mode];
  gMeans.assign(means, means + 3);
  for (int i = 0; i < 3; ++i) {
    float *mean = static_cast<float *>(means[i]);
    for (int64_t k = 0; k < numel[i]; ++k) {
      float &g = grad(m, i)[k];
      if (mode == 0)
        mean[k] = g;
      else if (mode == 1)
        mean[k] += float(alpha) * (g - mean[k]);
      else
        g = mean[k];
    }
  }
  return NNCC_OK;
}

const char *trainSupported() { return nullptr; }
const char *trainUnsupported() {
  return "toy.nn:3:7: 'nnk.foo_grad' op has no CUDA kernel yet, so this model trains on the "
         "CPU target only";
}

nncc_status forwardCpu(nncc_model *m, nncc_error *) { return forwardOn(m); }
nncc_status unusedCpu(nncc_model *, nncc_error *err) {
  return nncc_error_set(err, NNCC_ERROR_INTERNAL, "the CPU halves are not used here");
}

const nncc_train_config kTrain = {NNCC_OPTIM_SGD, 0.5, 0.9, 0.999, 1e-8, 0.1, 0.0, 0,
                                  /*clip=*/1.0, 1.0, NNCC_SCHEDULE_CONSTANT, 0, 0.0, 0, 1.0,
                                  1, 0.1, 1, 4, 0};

extern const nncc_ms_model_def kTrainDef, kUnsupportedDef;
nncc_status createTrain(nncc_target t, nncc_model **out, nncc_error *err) {
  return nncc_ms_create(&kTrainDef, t, out, err);
}

const nncc_model_abi kAbi = {
    NNCC_MODEL_ABI_VERSION, "toy", "f32", 1, kDimNames, 1, kInputs, 1, kOutputs, 3, kParams,
    createTrain, nncc_ms_destroy, nncc_ms_load_weights, nncc_ms_init_weights,
    nncc_ms_save_weights, nncc_ms_set_input, nncc_ms_forward, nncc_ms_get_output,
    nncc_ms_memory_stats, nncc_ms_forward_train, nncc_ms_backward, nncc_ms_forward_backward,
    3, kGrads, nncc_ms_train_step, &kTrain, nncc_ms_train_stats, nncc_ms_reset_optimizer,
    nncc_ms_schedule_lr, nncc_ms_param_group, kGroups, 0, nullptr, 0, nullptr, nullptr,
    nncc_ms_bind, nncc_ms_set_step, nncc_ms_set_cuda_stream, nncc_ms_save_train_state,
    nncc_ms_load_train_state, nncc_ms_accumulate_gradients, nncc_ms_apply_gradients,
};
// Launch ranges: forward [0, 1), forward_train [1, 2), backward (2, 3).
const nncc_ms_model_def kTrainDef = {
    &kAbi,      kInits,         1,           kBuffers,       nullptr,
    forwardCpu, cudaForward,    nullptr,     nullptr,        unusedCpu,
    unusedCpu,  1,              2,           3,              cudaForwardTrain,
    cudaBackward, trainSupported, cudaSumSquares, cudaUpdate, nullptr, cudaGradMean};
const nncc_ms_model_def kUnsupportedDef = {
    &kAbi,      kInits,         1,           kBuffers,       nullptr,
    forwardCpu, cudaForward,    nullptr,     nullptr,        unusedCpu,
    unusedCpu,  1,              2,           3,              cudaForwardTrain,
    cudaBackward, trainUnsupported, cudaSumSquares, cudaUpdate};

bool fakeDriver() {
  const char *d = std::getenv("NNCC_CUDA_DRIVER");
  return d && std::strstr(d, "nncc_fake_cuda");
}

class CudaFakeTrain : public ::testing::Test {
protected:
  nncc_model *m = nullptr;
  nncc_error err;
  void SetUp() override {
    if (!fakeDriver())
      GTEST_SKIP() << "run with NNCC_CUDA_DRIVER=<build>/lib/libnncc_fake_cuda.so";
    gLog = UpdateLog{};
    ASSERT_EQ(nncc_ms_create(&kTrainDef, NNCC_TARGET_CUDA, &m, &err), NNCC_OK) << err.message;
    ASSERT_EQ(kAbi.init_weights(m, 1, &err), NNCC_OK) << err.message;
    std::vector<float> x(8);
    for (int i = 0; i < 8; ++i)
      x[i] = 0.5f * float(i) - 1.0f;
    int64_t shape[] = {2, 4};
    ASSERT_EQ(kAbi.set_input(m, "x", NNCC_DTYPE_F32, 2, shape, x.data(), &err), NNCC_OK)
        << err.message;
  }
  void TearDown() override { nncc_ms_destroy(m); }

  std::vector<float> saved(const char *name) {
    std::string path = std::string("/tmp/nncc-cuda-train-") + std::to_string(getpid()) +
                       ".safetensors";
    EXPECT_EQ(kAbi.save_weights(m, path.c_str(), &err), NNCC_OK) << err.message;
    std::vector<float> out;
    nncc_safetensors *f = nullptr;
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
  std::vector<float> output(const char *name, int64_t n) {
    const void *data = nullptr;
    EXPECT_EQ(kAbi.get_output(m, name, nullptr, nullptr, nullptr, &data, &err), NNCC_OK)
        << err.message;
    const float *f = static_cast<const float *>(data);
    return f ? std::vector<float>(f, f + n) : std::vector<float>();
  }
};

TEST_F(CudaFakeTrain, GradientsStayOnTheDeviceUntilRead) {
  ASSERT_EQ(kAbi.forward_train(m, &err), NNCC_OK) << err.message;
  ASSERT_EQ(kAbi.backward(m, &err), NNCC_OK) << err.message;
  // The generated code sees device pointers; get_output hands out a host
  // copy made when the gradient is read.
  const void *host = nullptr;
  ASSERT_EQ(kAbi.get_output(m, "grad.fc.bias", nullptr, nullptr, nullptr, &host, &err),
            NNCC_OK)
      << err.message;
  EXPECT_NE(host, static_cast<const void *>(grad(m, 1)));
  // w = 0.25 everywhere, b = 0: y[r, j] = 0.25 sum_k x[r, k]; rows sum to
  // -1 (row 0: -1 -0.5 +0 +0.5) and 3 (row 1: 1 1.5 2 2.5 = 7): y = -0.25, 1.75.
  std::vector<float> db = output("grad.fc.bias", 3);
  for (float v : db)
    EXPECT_FLOAT_EQ(v, 1.5f);
  std::vector<float> dw = output("grad.fc.weight", 12);
  const float x0[] = {-1.0f, -0.5f, 0.0f, 0.5f}, x1[] = {1.0f, 1.5f, 2.0f, 2.5f};
  for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 4; ++k)
      EXPECT_FLOAT_EQ(dw[j * 4 + k], -0.25f * x0[k] + 1.75f * x1[k]) << j << "," << k;
  std::vector<float> y = output("y", 6);
  EXPECT_FLOAT_EQ(y[0], -0.25f);
  EXPECT_FLOAT_EQ(y[3], 1.75f);
}

TEST_F(CudaFakeTrain, AccumulatedGradientsAreAveragedOnTheDevice) {
  gMeanCalls[0] = gMeanCalls[1] = gMeanCalls[2] = 0;
  // Micro-batch 1: the rows of SetUp (grad.fc.bias 1.5 each); micro-batch
  // 2: one row of ones (y = 1, grad.fc.bias 1), weight 3.
  ASSERT_EQ(kAbi.accumulate_gradients(m, 1.0, &err), NNCC_OK) << err.message;
  std::vector<void *> first = gMeans;
  std::vector<float> ones(4, 1.0f);
  int64_t shape[] = {1, 4};
  ASSERT_EQ(kAbi.set_input(m, "x", NNCC_DTYPE_F32, 2, shape, ones.data(), &err), NNCC_OK);
  ASSERT_EQ(kAbi.accumulate_gradients(m, 3.0, &err), NNCC_OK) << err.message;
  EXPECT_EQ(gMeans, first) << "the means stay in the same device buffers";
  EXPECT_EQ(gLog.calls, 0) << "no update before apply_gradients";
  EXPECT_STATUS_MSG(kAbi.train_step(m, nullptr, &err), err, NNCC_ERROR_INVALID_ARGUMENT,
                    "2 accumulated micro-batch(es) are waiting for apply_gradients");
  ASSERT_EQ(kAbi.apply_gradients(m, nullptr, &err), NNCC_OK) << err.message;
  EXPECT_EQ(gMeanCalls[0], 1);
  EXPECT_EQ(gMeanCalls[1], 1);
  EXPECT_EQ(gMeanCalls[2], 1);
  ASSERT_EQ(gLog.calls, 1);
  EXPECT_EQ(gLog.u.step, 1);
  // grad.<param> holds the weighted mean the update used: (1.5 + 3) / 4.
  for (float v : output("grad.fc.bias", 3))
    EXPECT_FLOAT_EQ(v, (1.5f + 3.0f * 1.0f) / 4.0f);
  EXPECT_STATUS_MSG(kAbi.apply_gradients(m, nullptr, &err), err, NNCC_ERROR_INVALID_ARGUMENT,
                    "no gradients accumulated since the last step");
}

TEST_F(CudaFakeTrain, TrainStepUpdatesTheDeviceCopy) {
  std::vector<float> before = saved("fc.weight");
  ASSERT_EQ(before.size(), 12u);
  ASSERT_EQ(kAbi.train_step(m, nullptr, &err), NNCC_OK) << err.message;
  ASSERT_EQ(gLog.calls, 1);
  EXPECT_EQ(gLog.u.optimizer, NNCC_OPTIM_SGD);
  EXPECT_EQ(gLog.u.step, 1);
  EXPECT_EQ(gLog.u.first, 1);
  // Parameter groups: the weight decays, bias and scale do not; scale sits
  // one layer deep (layer_decay 1 here: the same lr).
  EXPECT_DOUBLE_EQ(gLog.wd[0], 0.1);
  EXPECT_DOUBLE_EQ(gLog.wd[1], 0.0);
  EXPECT_DOUBLE_EQ(gLog.lr[0], 0.5);
  EXPECT_DOUBLE_EQ(gLog.lr[2], 0.5);
  // Momentum 0: SGD keeps no state.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(gLog.state1[i], nullptr);
    EXPECT_EQ(gLog.state2[i], nullptr);
  }
  // Clipping from the device's sum of squares: norm > 1, scale = 1 / (norm + 1e-6).
  nncc_train_stats st;
  ASSERT_EQ(kAbi.train_stats(m, &st, &err), NNCC_OK);
  EXPECT_GT(st.grad_norm, 1.0);
  EXPECT_NEAR(gLog.u.grad_scale, 1.0 / (st.grad_norm + 1e-6), 1e-12);
  // save_weights reads the device copy.
  std::vector<float> after = saved("fc.weight");
  std::vector<float> dw = output("grad.fc.weight", 12);
  for (int k = 0; k < 12; ++k)
    EXPECT_FLOAT_EQ(after[k], before[k] - float(0.5 * gLog.u.grad_scale) * dw[k]) << k;
  // The next forward runs on the updated device copy as it is.
  ASSERT_EQ(kAbi.forward(m, &err), NNCC_OK) << err.message;
  std::vector<float> y = output("y", 6);
  float want = 0;
  const float x0[] = {-1.0f, -0.5f, 0.0f, 0.5f};
  for (int k = 0; k < 4; ++k)
    want += x0[k] * after[k];
  EXPECT_NEAR(y[0], want + saved("fc.bias")[0], 1e-6);
}

TEST_F(CudaFakeTrain, AdamStateIsZeroedDeviceMemoryAndReset) {
  nncc_train_config c = kTrain;
  c.optimizer = NNCC_OPTIM_ADAMW;
  ASSERT_EQ(kAbi.train_step(m, &c, &err), NNCC_OK) << err.message;
  EXPECT_EQ(gLog.u.step, 1);
  for (int i = 0; i < 3; ++i) {
    ASSERT_NE(gLog.state1[i], nullptr);
    ASSERT_NE(gLog.state2[i], nullptr);
    EXPECT_EQ(gLog.state1Before[i], 0.0f) << "fresh state is zero";
  }
  std::vector<void *> first = gLog.state1;
  ASSERT_EQ(kAbi.train_step(m, &c, &err), NNCC_OK) << err.message;
  EXPECT_EQ(gLog.u.step, 2);
  EXPECT_EQ(gLog.u.first, 0);
  EXPECT_EQ(gLog.state1, first) << "the state persists between steps";
  EXPECT_EQ(gLog.state1Before[0], 1.0f);
  ASSERT_EQ(kAbi.reset_optimizer(m, &err), NNCC_OK);
  ASSERT_EQ(kAbi.train_step(m, &c, &err), NNCC_OK) << err.message;
  EXPECT_EQ(gLog.u.step, 1);
  EXPECT_EQ(gLog.u.first, 1);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(gLog.state1Before[i], 0.0f) << "reset gives zeroed state";
}

// ABI 7: the optimizer state lives on the device; save_train_state copies
// it out, load_train_state into a fresh context's device memory, and the
// next step continues the saved run (the toy update counts steps in state1).
TEST_F(CudaFakeTrain, TrainStateRoundTripsThroughTheDevice) {
  nncc_train_config c = kTrain;
  c.optimizer = NNCC_OPTIM_ADAMW;
  ASSERT_EQ(kAbi.train_step(m, &c, &err), NNCC_OK) << err.message;
  ASSERT_EQ(kAbi.train_step(m, &c, &err), NNCC_OK) << err.message;
  std::string path = std::string("/tmp/nncc-cuda-state-") + std::to_string(getpid()) +
                     ".safetensors";
  ASSERT_EQ(kAbi.save_train_state(m, path.c_str(), &err), NNCC_OK) << err.message;
  std::vector<float> weights = saved("fc.weight");

  nncc_model *other = nullptr;
  ASSERT_EQ(nncc_ms_create(&kTrainDef, NNCC_TARGET_CUDA, &other, &err), NNCC_OK);
  ASSERT_EQ(kAbi.load_train_state(other, path.c_str(), &err), NNCC_OK) << err.message;
  std::remove(path.c_str());
  std::vector<float> x(8);
  for (int i = 0; i < 8; ++i)
    x[i] = 0.5f * float(i) - 1.0f;
  int64_t shape[] = {2, 4};
  ASSERT_EQ(kAbi.set_input(other, "x", NNCC_DTYPE_F32, 2, shape, x.data(), &err), NNCC_OK);
  ASSERT_EQ(kAbi.train_step(other, &c, &err), NNCC_OK) << err.message;
  EXPECT_EQ(gLog.u.step, 3);
  EXPECT_EQ(gLog.u.first, 0);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(gLog.state1Before[i], 2.0f) << "the loaded state has seen two steps";
    EXPECT_NE(gLog.state2[i], nullptr);
  }
  nncc_model *mine = m;
  m = other;
  std::vector<float> resumed = saved("fc.weight");
  m = mine;
  ASSERT_EQ(kAbi.train_step(m, &c, &err), NNCC_OK) << err.message;
  EXPECT_EQ(saved("fc.weight"), resumed) << "the third step, uninterrupted and resumed";
  EXPECT_NE(resumed, weights);
  nncc_ms_destroy(other);
}

TEST_F(CudaFakeTrain, InitWeightsKeepsTheTrainedValueOfAnUninitialisedParameter) {
  ASSERT_EQ(kAbi.train_step(m, nullptr, &err), NNCC_OK) << err.message;
  std::vector<float> trained = saved("scale");
  ASSERT_EQ(trained.size(), 2u);
  EXPECT_NE(trained[0], 0.0f); // moved by its constant gradient
  ASSERT_EQ(kAbi.init_weights(m, 7, &err), NNCC_OK) << err.message;
  EXPECT_EQ(saved("scale"), trained);
  EXPECT_EQ(saved("fc.weight"), std::vector<float>(12, 0.25f));
}

// CUDA binding (ABI 6): "device" memory the caller owns is used in place;
// under the fake driver device pointers are host pointers, so the test can
// look into them.
TEST_F(CudaFakeTrain, BoundDeviceMemoryIsUsedInPlace) {
  std::vector<float> w(12, 0.5f), x(8), y(6, -7.0f), dw(12, -7.0f);
  for (int i = 0; i < 8; ++i)
    x[i] = float(i);
  const int64_t wShape[] = {3, 4}, xShape[] = {2, 4}, yShape[] = {2, 3};
  ASSERT_EQ(kAbi.bind(m, NNCC_BIND_PARAM, "fc.weight", NNCC_DTYPE_F32, 2, wShape, w.data(), &err),
            NNCC_OK)
      << err.message;
  ASSERT_EQ(kAbi.bind(m, NNCC_BIND_INPUT, "x", NNCC_DTYPE_F32, 2, xShape, x.data(), &err),
            NNCC_OK)
      << err.message;
  ASSERT_EQ(kAbi.bind(m, NNCC_BIND_OUTPUT, "y", NNCC_DTYPE_F32, 2, yShape, y.data(), &err),
            NNCC_OK)
      << err.message;
  ASSERT_EQ(kAbi.bind(m, NNCC_BIND_GRAD, "grad.fc.weight", NNCC_DTYPE_F32, 2, wShape, dw.data(),
                      &err),
            NNCC_OK)
      << err.message;
  // The generated code sees the caller's pointers.
  EXPECT_EQ(nncc_ms_param(m, 0), static_cast<void *>(w.data()));
  EXPECT_EQ(nncc_ms_input(m, 0), static_cast<void *>(x.data()));
  ASSERT_EQ(kAbi.forward_backward(m, &err), NNCC_OK) << err.message;
  // y = x w^T + b (b = 0): row 0 sums 0..3 = 6 -> 3; row 1 sums 4..7 = 22 -> 11.
  EXPECT_FLOAT_EQ(y[0], 3.0f);
  EXPECT_FLOAT_EQ(y[5], 11.0f);
  const void *got = nullptr;
  ASSERT_EQ(kAbi.get_output(m, "y", nullptr, nullptr, nullptr, &got, &err), NNCC_OK);
  EXPECT_EQ(got, static_cast<const void *>(y.data())) << "get_output returns the bound memory";
  ASSERT_EQ(kAbi.get_output(m, "grad.fc.weight", nullptr, nullptr, nullptr, &got, &err),
            NNCC_OK);
  EXPECT_EQ(got, static_cast<const void *>(dw.data()));
  EXPECT_FLOAT_EQ(dw[0], 3.0f * 0.0f + 11.0f * 4.0f); // y^T x, column 0
  // train_step updates the bound parameter in place; save_weights reads it.
  ASSERT_EQ(kAbi.train_step(m, nullptr, &err), NNCC_OK) << err.message;
  EXPECT_NE(w[0], 0.5f);
  EXPECT_FLOAT_EQ(saved("fc.weight")[0], w[0]);
  // load_weights / init_weights write into the caller's memory.
  ASSERT_EQ(kAbi.init_weights(m, 3, &err), NNCC_OK) << err.message;
  EXPECT_EQ(w, std::vector<float>(12, 0.25f));
  // Unbinding takes a copy of the current values; the caller's memory is
  // no longer written.
  w.assign(12, 2.0f);
  ASSERT_EQ(kAbi.bind(m, NNCC_BIND_PARAM, "fc.weight", NNCC_DTYPE_F32, 0, nullptr, nullptr, &err),
            NNCC_OK)
      << err.message;
  EXPECT_NE(nncc_ms_param(m, 0), static_cast<void *>(w.data()));
  EXPECT_EQ(saved("fc.weight"), std::vector<float>(12, 2.0f));
  ASSERT_EQ(kAbi.init_weights(m, 3, &err), NNCC_OK);
  EXPECT_EQ(w, std::vector<float>(12, 2.0f));
  // A set_input replaces a bound input.
  std::vector<float> x2(8, 1.0f);
  ASSERT_EQ(kAbi.set_input(m, "x", NNCC_DTYPE_F32, 2, xShape, x2.data(), &err), NNCC_OK);
  EXPECT_NE(nncc_ms_input(m, 0), static_cast<void *>(x2.data()));
  ASSERT_EQ(kAbi.forward(m, &err), NNCC_OK) << err.message;
  EXPECT_FLOAT_EQ(y[0], 1.0f) << "x = 1 everywhere, w = 0.25 (init_weights above): 4 * 0.25";
}

TEST_F(CudaFakeTrain, RunsOnTheCallersStream) {
  void *own = nncc_ms_cuda_stream(m);
  ASSERT_NE(own, nullptr);
  alignas(16) static char callerStream[16]; // a CUstream handle to the fake driver
  ASSERT_EQ(kAbi.set_cuda_stream(m, callerStream, &err), NNCC_OK) << err.message;
  EXPECT_EQ(nncc_ms_cuda_stream(m), static_cast<void *>(callerStream));
  ASSERT_EQ(kAbi.train_step(m, nullptr, &err), NNCC_OK) << err.message;
  ASSERT_EQ(kAbi.set_cuda_stream(m, nullptr, &err), NNCC_OK) << err.message;
  EXPECT_EQ(nncc_ms_cuda_stream(m), own) << "NULL: back to the context's own stream";
}

TEST(CudaFakeTrainCpu, CallersStreamIsForCudaContexts) {
  nncc_model *m = nullptr;
  nncc_error err;
  ASSERT_EQ(nncc_ms_create(&kTrainDef, NNCC_TARGET_CPU, &m, &err), NNCC_OK) << err.message;
  EXPECT_STATUS_MSG(kAbi.set_cuda_stream(m, nullptr, &err), err, NNCC_ERROR_UNSUPPORTED,
                    "set_cuda_stream: 'toy' runs on the CPU target");
  nncc_ms_destroy(m);
}

TEST(CudaFakeTrainUnsupported, SaysWhichLaunchHasNoKernel) {
  if (!fakeDriver())
    GTEST_SKIP() << "run with NNCC_CUDA_DRIVER=<build>/lib/libnncc_fake_cuda.so";
  nncc_model *m = nullptr;
  nncc_error err;
  ASSERT_EQ(nncc_ms_create(&kUnsupportedDef, NNCC_TARGET_CUDA, &m, &err), NNCC_OK)
      << err.message;
  ASSERT_EQ(kAbi.init_weights(m, 1, &err), NNCC_OK);
  std::vector<float> x(4, 1.0f);
  int64_t shape[] = {1, 4};
  ASSERT_EQ(kAbi.set_input(m, "x", NNCC_DTYPE_F32, 2, shape, x.data(), &err), NNCC_OK);
  EXPECT_STATUS_MSG(kAbi.forward_train(m, &err), err, NNCC_ERROR_UNSUPPORTED,
                    "'toy' cannot train on CUDA: toy.nn:3:7: 'nnk.foo_grad' op has no CUDA "
                    "kernel yet");
  EXPECT_STATUS_MSG(kAbi.train_step(m, nullptr, &err), err, NNCC_ERROR_UNSUPPORTED,
                    "train it with NNCC_TARGET_CPU");
  // The forward still runs on CUDA.
  EXPECT_EQ(kAbi.forward(m, &err), NNCC_OK) << err.message;
  nncc_ms_destroy(m);
}

} // namespace
