//===- ModelSupportValidationTests.cpp - what the ABI refuses --------------===//
//
// A hand-written CPU training model (y = x w^T + b; backward from the
// cotangent of y, as a --vjp library) driven through nncc_model.h with
// values the ABI must refuse: training configurations that would turn the
// weights into NaN, set_frozen's arguments (and what a frozen parameter
// gets from a step), ranks that do not match the caller's shape array (read
// through a guard page: a read past the array crashes the test), and names
// that must not reach a message unescaped.
//
//===----------------------------------------------------------------------===//
#include "nncc/ModelSupport/ModelSupport.h"

#include "RuntimeTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

const char *const kDimNames[] = {"N"};
const int64_t kXDims[] = {-1, 4};
const int64_t kYDims[] = {-1, 3};
const int64_t kWDims[] = {3, 4};
const int64_t kBDims[] = {3};

const nncc_tensor_info kInputs[] = {{"x", NNCC_DTYPE_F32, 2, kXDims}};
const nncc_tensor_info kOutputs[] = {{"y", NNCC_DTYPE_F32, 2, kYDims}};
const nncc_tensor_info kParams[] = {{"fc.weight", NNCC_DTYPE_F32, 2, kWDims},
                                    {"fc.bias", NNCC_DTYPE_F32, 1, kBDims}};
const nncc_tensor_info kGrads[] = {{"grad.fc.weight", NNCC_DTYPE_F32, 2, kWDims},
                                   {"grad.fc.bias", NNCC_DTYPE_F32, 1, kBDims}};
const nncc_tensor_info kCotangents[] = {{"cotangent.y", NNCC_DTYPE_F32, 2, kYDims}};
const nncc_ms_init kInits[] = {{NNCC_MS_INIT_UNIFORM, -0.5, 0.5}, {NNCC_MS_INIT_CONSTANT, 0.1, 0}};
const nncc_param_group kGroups[] = {{1, 1}, {0, 0}};

nncc_status forwardCpu(nncc_model *m, nncc_error *) {
  int64_t n = nncc_ms_dims(m)[0];
  const float *x = static_cast<const float *>(nncc_ms_input(m, 0));
  const float *w = static_cast<const float *>(nncc_ms_param(m, 0));
  const float *b = static_cast<const float *>(nncc_ms_param(m, 1));
  float *y = static_cast<float *>(nncc_ms_output(m, 0));
  for (int64_t r = 0; r < n; ++r)
    for (int j = 0; j < 3; ++j) {
      float s = b[j];
      for (int k = 0; k < 4; ++k)
        s += x[r * 4 + k] * w[j * 4 + k];
      y[r * 3 + j] = s;
    }
  return NNCC_OK;
}

/// grad.w = c^T x, grad.b = sum of the rows of c (c: the cotangent of y).
nncc_status backwardCpu(nncc_model *m, nncc_error *) {
  int64_t n = nncc_ms_dims(m)[0];
  const float *x = static_cast<const float *>(nncc_ms_input(m, 0));
  const float *c = static_cast<const float *>(nncc_ms_cotangent(m, 0));
  float *dw = static_cast<float *>(nncc_ms_grad(m, 0));
  float *db = static_cast<float *>(nncc_ms_grad(m, 1));
  for (int j = 0; j < 3; ++j) {
    db[j] = 0;
    for (int k = 0; k < 4; ++k)
      dw[j * 4 + k] = 0;
    for (int64_t r = 0; r < n; ++r) {
      db[j] += c[r * 3 + j];
      for (int k = 0; k < 4; ++k)
        dw[j * 4 + k] += c[r * 3 + j] * x[r * 4 + k];
    }
  }
  return NNCC_OK;
}

// SGD with momentum, warm-up cosine: every field a step reads is valid.
const nncc_train_config kTrain = {NNCC_OPTIM_SGD, 0.1, 0.9, 0.999, 1e-8, 0.01, 0.9, 0,
                                  /*clip=*/1.0, 0.5, NNCC_SCHEDULE_WARMUP_COSINE, 2, 0.0, 10,
                                  0.5, 1, 0.1, 1, 4, 0};

extern const nncc_ms_model_def kDef;
nncc_status create(nncc_target t, nncc_model **out, nncc_error *err) {
  return nncc_ms_create(&kDef, t, out, err);
}

const nncc_model_abi kAbi = {
    NNCC_MODEL_ABI_VERSION, "toy", "f32", 1, kDimNames, 1, kInputs, 1, kOutputs, 2, kParams,
    create, nncc_ms_destroy, nncc_ms_load_weights, nncc_ms_init_weights,
    nncc_ms_save_weights, nncc_ms_set_input, nncc_ms_forward, nncc_ms_get_output,
    nncc_ms_memory_stats, nncc_ms_forward_train, nncc_ms_backward, nncc_ms_forward_backward,
    2, kGrads, nncc_ms_train_step, &kTrain, nncc_ms_train_stats, nncc_ms_reset_optimizer,
    nncc_ms_schedule_lr, nncc_ms_param_group, kGroups, 1, kCotangents, 0, nullptr,
    nncc_ms_set_cotangent, nncc_ms_bind, nncc_ms_set_step, nncc_ms_set_cuda_stream,
    nncc_ms_save_train_state, nncc_ms_load_train_state, nncc_ms_accumulate_gradients,
    nncc_ms_apply_gradients, nullptr, nncc_ms_set_seed, nncc_ms_set_sample_offset,
    nncc_ms_set_frozen, nncc_ms_get_frozen,
};
const nncc_ms_model_def kDef = {&kAbi,      kInits,      0,       nullptr, nullptr,
                                forwardCpu, nullptr,     nullptr, nullptr, forwardCpu,
                                backwardCpu, 1,          2,       3};

std::string tempPath(const char *tag) {
  const char *dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/nncc-msv-" + tag + "-" +
         std::to_string(getpid()) + ".safetensors";
}

/// `dims` at the very end of a readable page, the next page unreadable.
struct GuardedShape {
  void *base = nullptr;
  size_t page = 0;
  int64_t *shape = nullptr;
  GuardedShape(std::initializer_list<int64_t> dims) {
    page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    base = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(base, MAP_FAILED);
    EXPECT_EQ(mprotect(static_cast<char *>(base) + page, page, PROT_NONE), 0);
    shape = reinterpret_cast<int64_t *>(static_cast<char *>(base) + page) - dims.size();
    std::copy(dims.begin(), dims.end(), shape);
  }
  ~GuardedShape() { munmap(base, 2 * page); }
};

class Validation : public ::testing::Test {
protected:
  nncc_model *m = nullptr;
  nncc_error err;
  std::vector<float> x = std::vector<float>(8);
  void SetUp() override {
    ASSERT_EQ(kAbi.create(NNCC_TARGET_CPU, &m, &err), NNCC_OK) << err.message;
    ASSERT_EQ(kAbi.init_weights(m, 3, &err), NNCC_OK) << err.message;
    for (int i = 0; i < 8; ++i)
      x[i] = 0.25f * float(i) - 1.0f;
    int64_t shape[] = {2, 4};
    ASSERT_EQ(kAbi.set_input(m, "x", NNCC_DTYPE_F32, 2, shape, x.data(), &err), NNCC_OK)
        << err.message;
  }
  void TearDown() override { kAbi.destroy(m); }
  std::vector<float> weights() {
    std::vector<float> w(15);
    std::memcpy(w.data(), nncc_ms_param(m, 0), 12 * sizeof(float));
    std::memcpy(w.data() + 12, nncc_ms_param(m, 1), 3 * sizeof(float));
    return w;
  }
  int64_t steps() {
    nncc_train_stats st{};
    EXPECT_EQ(kAbi.train_stats(m, &st, &err), NNCC_OK);
    return st.step;
  }
};

struct BadConfig {
  std::function<void(nncc_train_config &)> change;
  const char *message; // after "<call>: the configuration's "
};

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

std::vector<BadConfig> badConfigs() {
  return {
      {[](nncc_train_config &c) { c.optimizer = 42; },
       "optimizer = 42 is not one of 0 (sgd), 1 (adam), 2 (adamw)"},
      {[](nncc_train_config &c) { c.optimizer = -1; }, "optimizer = -1 is not one of"},
      {[](nncc_train_config &c) { c.lr = kNaN; },
       "lr = nan is outside its range: finite and > 0"},
      {[](nncc_train_config &c) { c.lr = kInf; }, "lr = inf is outside its range"},
      {[](nncc_train_config &c) { c.lr = -1; }, "lr = -1 is outside its range"},
      {[](nncc_train_config &c) { c.lr = 0; }, "lr = 0 is outside its range"},
      {[](nncc_train_config &c) { c.weight_decay = -0.5; },
       "weight_decay = -0.5 is outside its range: finite and >= 0"},
      {[](nncc_train_config &c) { c.weight_decay = kInf; }, "weight_decay = inf"},
      {[](nncc_train_config &c) { c.momentum = kNaN; },
       "momentum = nan is outside its range: finite and >= 0"},
      {[](nncc_train_config &c) { c.momentum = -0.1; }, "momentum = -0.1 is outside"},
      {[](nncc_train_config &c) { c.nesterov = 2; }, "nesterov = 2 is outside its range: 0 or 1"},
      {[](nncc_train_config &c) { c.optimizer = NNCC_OPTIM_ADAM, c.beta1 = 1.0; },
       "beta1 = 1 is outside its range: [0, 1)"},
      {[](nncc_train_config &c) { c.optimizer = NNCC_OPTIM_ADAMW, c.beta2 = 2.0; },
       "beta2 = 2 is outside its range: [0, 1)"},
      {[](nncc_train_config &c) { c.optimizer = NNCC_OPTIM_ADAM, c.beta2 = kNaN; },
       "beta2 = nan"},
      {[](nncc_train_config &c) { c.optimizer = NNCC_OPTIM_ADAM, c.eps = 0; },
       "eps = 0 is outside its range: finite and > 0"},
      {[](nncc_train_config &c) { c.optimizer = NNCC_OPTIM_ADAMW, c.eps = kNaN; }, "eps = nan"},
      {[](nncc_train_config &c) { c.clip = kNaN; },
       "clip = nan is outside its range: a number (<= 0 or infinite: no clipping)"},
      {[](nncc_train_config &c) { c.layer_decay = 0; },
       "layer_decay = 0 is outside its range: (0, 1]"},
      {[](nncc_train_config &c) { c.layer_decay = 1.5; }, "layer_decay = 1.5"},
      {[](nncc_train_config &c) { c.layer_decay = kNaN; }, "layer_decay = nan"},
      {[](nncc_train_config &c) { c.schedule = 9; },
       "schedule = 9 is not one of 0 (constant), 1 (warmup_cosine), 2 "
       "(cosine), 3 (linear), 4 (step)"},
      {[](nncc_train_config &c) { c.cycles = 1.5; }, "cycles = 1.5 is outside its range: [0, 1]"},
      {[](nncc_train_config &c) { c.cycles = kNaN; }, "cycles = nan"},
      {[](nncc_train_config &c) { c.warmup = -1, c.warmup_fraction = 1.0; },
       "warmup_fraction = 1 is outside its range: [0, 1)"},
      {[](nncc_train_config &c) {
         c.schedule = NNCC_SCHEDULE_LINEAR, c.warmup = -1, c.warmup_fraction = kNaN;
       },
       "warmup_fraction = nan"},
      {[](nncc_train_config &c) { c.schedule = NNCC_SCHEDULE_STEP, c.step_size = 0; },
       "step_size = 0 is outside its range: >= 1"},
      {[](nncc_train_config &c) { c.schedule = NNCC_SCHEDULE_STEP, c.gamma = 0; },
       "gamma = 0 is outside its range: finite and > 0"},
      {[](nncc_train_config &c) { c.schedule = NNCC_SCHEDULE_STEP, c.gamma = kNaN; },
       "gamma = nan"},
  };
}

} // namespace

// Each bad field is refused with its name, value and range; the weights,
// the optimizer state and the step counter stay as they were, and the same
// configuration with the field fixed trains.
TEST_F(Validation, TrainStepRefusesBadConfigurations) {
  for (const BadConfig &b : badConfigs()) {
    nncc_train_config c = kTrain;
    b.change(c);
    std::vector<float> before = weights();
    int64_t step = steps();
    EXPECT_STATUS_MSG(kAbi.train_step(m, &c, &err), err, NNCC_ERROR_INVALID_ARGUMENT,
                      std::string("train_step: the configuration's ") + b.message);
    EXPECT_EQ(weights(), before) << b.message;
    EXPECT_EQ(steps(), step) << b.message;
  }
  std::vector<float> before = weights();
  ASSERT_EQ(kAbi.train_step(m, &kTrain, &err), NNCC_OK) << err.message;
  ASSERT_EQ(kAbi.train_step(m, nullptr, &err), NNCC_OK) << err.message;
  EXPECT_EQ(steps(), 2);
  std::vector<float> after = weights();
  EXPECT_NE(after, before);
  for (float v : after)
    EXPECT_TRUE(std::isfinite(v));
}

// Fields the step does not read are not checked: another optimizer's
// (Adam's eps for SGD), another schedule's (gamma without the step
// schedule), warmup_fraction when warmup is given; a clip of 0 or infinity
// means none.
TEST_F(Validation, FieldsAStepDoesNotReadAreFree) {
  nncc_train_config c = kTrain;
  c.eps = 0, c.beta2 = 7, c.gamma = kNaN, c.step_size = 0, c.warmup_fraction = kNaN;
  c.clip = kInf;
  ASSERT_EQ(kAbi.train_step(m, &c, &err), NNCC_OK) << err.message;
  c = kTrain;
  c.optimizer = NNCC_OPTIM_ADAMW, c.momentum = kNaN, c.nesterov = 5, c.clip = 0;
  c.schedule = NNCC_SCHEDULE_CONSTANT, c.cycles = 3;
  ASSERT_EQ(kAbi.reset_optimizer(m, &err), NNCC_OK);
  ASSERT_EQ(kAbi.train_step(m, &c, &err), NNCC_OK) << err.message;
  for (float v : weights())
    EXPECT_TRUE(std::isfinite(v));
}

// apply_gradients checks the same way and keeps the accumulation pending.
TEST_F(Validation, ApplyGradientsRefusesBadConfigurations) {
  ASSERT_EQ(kAbi.accumulate_gradients(m, 2.0, &err), NNCC_OK) << err.message;
  std::vector<float> before = weights();
  for (const BadConfig &b : badConfigs()) {
    nncc_train_config c = kTrain;
    b.change(c);
    EXPECT_STATUS_MSG(kAbi.apply_gradients(m, &c, &err), err, NNCC_ERROR_INVALID_ARGUMENT,
                      std::string("apply_gradients: the configuration's ") + b.message);
    EXPECT_EQ(weights(), before) << b.message;
  }
  EXPECT_EQ(steps(), 0);
  nncc_train_config good = kTrain;
  good.schedule = NNCC_SCHEDULE_CONSTANT; // the warm-up's first lr is 0
  ASSERT_EQ(kAbi.apply_gradients(m, &good, &err), NNCC_OK) << err.message;
  EXPECT_EQ(steps(), 1);
  EXPECT_NE(weights(), before);
}

TEST_F(Validation, ParamGroupRefusesABadLayerDecay) {
  nncc_train_config c = kTrain;
  double scale = -1;
  ASSERT_EQ(kAbi.param_group(m, 0, &c, nullptr, &scale, &err), NNCC_OK) << err.message;
  EXPECT_EQ(scale, 0.5);
  c.layer_decay = kNaN;
  scale = -1;
  EXPECT_STATUS_MSG(kAbi.param_group(m, 0, &c, nullptr, &scale, &err), err,
                    NNCC_ERROR_INVALID_ARGUMENT,
                    "param_group: the configuration's layer_decay = nan is outside its range");
  EXPECT_EQ(scale, -1);
}

// A rank that is not the tensor's is refused before the shape array is
// read past the tensor's rank: the arrays below end at a guard page.
TEST_F(Validation, ReadsNoMoreDimsThanTheTensorHas) {
  GuardedShape two({2, 4});
  std::vector<float> data(64);
  EXPECT_STATUS_MSG(kAbi.set_input(m, "x", NNCC_DTYPE_F32, 1000000, two.shape, data.data(), &err),
                    err, NNCC_ERROR_SHAPE_MISMATCH,
                    "input 'x': expected rank 2 [N, 4], got rank 1000000 [2, 4, ... (1000000 "
                    "dims)]");
  EXPECT_STATUS_MSG(kAbi.bind(m, NNCC_BIND_INPUT, "x", NNCC_DTYPE_F32, 3, two.shape,
                              data.data(), &err),
                    err, NNCC_ERROR_SHAPE_MISMATCH, "got rank 3 [2, 4, ... (3 dims)]");
  EXPECT_STATUS_MSG(kAbi.bind(m, NNCC_BIND_OUTPUT, "y", NNCC_DTYPE_F32, 1000000, two.shape,
                              data.data(), &err),
                    err, NNCC_ERROR_SHAPE_MISMATCH,
                    "bind output 'y': expected [N, 3], got [2, 4, ... (1000000 dims)]");
  GuardedShape one({5});
  EXPECT_STATUS_MSG(kAbi.bind(m, NNCC_BIND_PARAM, "fc.bias", NNCC_DTYPE_F32, 7, one.shape,
                              data.data(), &err),
                    err, NNCC_ERROR_SHAPE_MISMATCH, "expected [3], got [5, ... (7 dims)]");
  ASSERT_EQ(kAbi.forward_train(m, &err), NNCC_OK) << err.message;
  EXPECT_STATUS_MSG(kAbi.set_cotangent(m, "cotangent.y", NNCC_DTYPE_F32, 1000000, two.shape,
                                       data.data(), &err),
                    err, NNCC_ERROR_SHAPE_MISMATCH,
                    "cotangent 'cotangent.y': expected shape [2, 3], got [2, 4, ... (1000000 "
                    "dims)]");
  // Right ranks still read every dim.
  EXPECT_STATUS_MSG(kAbi.set_cotangent(m, "cotangent.y", NNCC_DTYPE_F32, 2, two.shape,
                                       data.data(), &err),
                    err, NNCC_ERROR_SHAPE_MISMATCH, "expected shape [2, 3], got [2, 4]");
}

// Names and paths from the caller reach messages escaped: no forged
// "nncc: error:" line, no terminal control sequence.
TEST_F(Validation, EscapesCallerNamesInMessages) {
  const char *evil = "\x1b[2J\nnncc: error: forged \xff";
  const char *shown = "'\\x1b[2J\\x0anncc: error: forged \\xff'";
  int64_t shape[] = {2, 4};
  auto clean = [&] {
    EXPECT_EQ(std::strpbrk(err.message, "\x1b\n\xff"), nullptr) << err.message;
  };
  EXPECT_STATUS_MSG(kAbi.set_input(m, evil, NNCC_DTYPE_F32, 2, shape, x.data(), &err), err,
                    NNCC_ERROR_NOT_FOUND, std::string("set_input: model 'toy' has no input ") + shown);
  clean();
  EXPECT_STATUS_MSG(kAbi.bind(m, NNCC_BIND_GRAD, evil, NNCC_DTYPE_F32, 2, shape, x.data(), &err),
                    err, NNCC_ERROR_NOT_FOUND, std::string("has no gradient ") + shown);
  clean();
  EXPECT_STATUS_MSG(kAbi.bind(m, 99, evil, NNCC_DTYPE_F32, 2, shape, x.data(), &err), err,
                    NNCC_ERROR_INVALID_ARGUMENT, std::string("bind ") + shown);
  clean();
  const void *data = nullptr;
  EXPECT_STATUS_MSG(kAbi.get_output(m, evil, nullptr, nullptr, nullptr, &data, &err), err,
                    NNCC_ERROR_NOT_FOUND, std::string("has no output ") + shown);
  clean();
  EXPECT_STATUS_MSG(kAbi.set_cotangent(m, evil, NNCC_DTYPE_F32, 2, shape, x.data(), &err), err,
                    NNCC_ERROR_NOT_FOUND, std::string("has no cotangent ") + shown);
  clean();
  std::string path = std::string("/nonexistent/") + evil;
  EXPECT_STATUS_MSG(kAbi.load_weights(m, path.c_str(), &err), err, NNCC_ERROR_NOT_FOUND,
                    "loading weights from '/nonexistent/\\x1b[2J\\x0a");
  clean();
  EXPECT_STATUS_MSG(kAbi.save_train_state(m, path.c_str(), &err), err, NNCC_ERROR_NOT_FOUND,
                    "saving the training state to '/nonexistent/\\x1b[2J\\x0a");
  clean();
}

// Strings from a file too: a training state's metadata.
TEST_F(Validation, EscapesFileMetadataInMessages) {
  std::string path = tempPath("meta");
  float w[12] = {}, b[3] = {};
  nncc_safetensors_writer *wr = nullptr;
  ASSERT_EQ(nncc_safetensors_writer_create(&wr, &err), NNCC_OK);
  ASSERT_EQ(nncc_safetensors_writer_add(wr, "fc.weight", NNCC_DTYPE_F32, 2, kWDims, w, sizeof w,
                                        &err),
            NNCC_OK);
  ASSERT_EQ(nncc_safetensors_writer_add(wr, "fc.bias", NNCC_DTYPE_F32, 1, kBDims, b, sizeof b,
                                        &err),
            NNCC_OK);
  ASSERT_EQ(nncc_safetensors_writer_set_metadata(wr, "nncc_train_state", "1", &err), NNCC_OK);
  ASSERT_EQ(nncc_safetensors_writer_set_metadata(wr, "nncc_model", "\x1b[31mtoy\xc2\x9b", &err),
            NNCC_OK);
  ASSERT_EQ(nncc_safetensors_writer_write(wr, path.c_str(), &err), NNCC_OK) << err.message;
  nncc_safetensors_writer_destroy(wr);
  EXPECT_STATUS_MSG(kAbi.load_train_state(m, path.c_str(), &err), err,
                    NNCC_ERROR_INVALID_ARGUMENT,
                    "it is of model '\\x1b[31mtoy\\xc2\\x9b', this library is 'toy'");
  EXPECT_EQ(std::strpbrk(err.message, "\x1b\xc2"), nullptr) << err.message;
  std::remove(path.c_str());
}

// save_weights and save_train_state write through the runtime's writer:
// a FIFO is not replaced, a link planted at the old PATH.tmp is left alone.
TEST_F(Validation, SavesRefuseWhatTheWriterRefuses) {
  std::string fifo = tempPath("fifo");
  std::remove(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_STATUS_MSG(kAbi.save_weights(m, fifo.c_str(), &err), err, NNCC_ERROR_IO,
                    "saving weights to '" + fifo + "': cannot write '" + fifo +
                        "': it is not a regular file (a FIFO)");
  EXPECT_STATUS_MSG(kAbi.save_train_state(m, fifo.c_str(), &err), err, NNCC_ERROR_IO,
                    "it is not a regular file (a FIFO)");
  struct stat st;
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  std::remove(fifo.c_str());

  std::string out = tempPath("state"), victim = tempPath("victim");
  { std::FILE *f = std::fopen(victim.c_str(), "w"); std::fputs("keep", f); std::fclose(f); }
  std::remove((out + ".tmp").c_str());
  ASSERT_EQ(symlink(victim.c_str(), (out + ".tmp").c_str()), 0);
  ASSERT_EQ(kAbi.save_train_state(m, out.c_str(), &err), NNCC_OK) << err.message;
  char text[16] = {};
  std::FILE *f = std::fopen(victim.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::fgets(text, sizeof text, f);
  std::fclose(f);
  EXPECT_STREQ(text, "keep");
  ASSERT_EQ(kAbi.load_train_state(m, out.c_str(), &err), NNCC_OK) << err.message;
  for (const std::string &p : {out, out + ".tmp", victim})
    std::remove(p.c_str());
}

//===--- ABI 10: set_frozen / get_frozen ------------------------------------===//

namespace {
// SGD with momentum and weight decay, a constant lr and a clip below the
// gradients' norm: every part of the step that a frozen parameter skips.
const nncc_train_config kFreezeTrain = {NNCC_OPTIM_SGD, 0.1, 0.9, 0.999, 1e-8, 0.01, 0.9, 0,
                                        /*clip=*/1.0, 1.0, NNCC_SCHEDULE_CONSTANT, 0, 0.0, 10,
                                        0.5, 1, 0.1, 1, 4, 0};

int32_t frozenFlag(nncc_model *m, const char *name) {
  int32_t flag = -1;
  nncc_error err;
  EXPECT_EQ(kAbi.get_frozen(m, name, &flag, &err), NNCC_OK) << err.message;
  return flag;
}
} // namespace

TEST_F(Validation, SetFrozenChecksItsArguments) {
  EXPECT_STATUS_MSG(kAbi.set_frozen(nullptr, "fc.weight", 1, &err), err,
                    NNCC_ERROR_INVALID_ARGUMENT, "set_frozen: model is NULL");
  EXPECT_STATUS_MSG(kAbi.set_frozen(m, nullptr, 1, &err), err, NNCC_ERROR_INVALID_ARGUMENT,
                    "set_frozen: name is NULL");
  EXPECT_STATUS_MSG(kAbi.set_frozen(m, "fc.weights", 1, &err), err,
                    NNCC_ERROR_INVALID_ARGUMENT,
                    "set_frozen: 'toy' has no parameter 'fc.weights'; its parameters: "
                    "'fc.weight', 'fc.bias'");
  // A gradient's name is not a parameter's; the name is quoted escaped.
  EXPECT_STATUS_MSG(kAbi.set_frozen(m, "grad.fc.bias", 1, &err), err,
                    NNCC_ERROR_INVALID_ARGUMENT, "has no parameter 'grad.fc.bias'");
  EXPECT_STATUS_MSG(kAbi.set_frozen(m, "fc\x1b[31m", 1, &err), err, NNCC_ERROR_INVALID_ARGUMENT,
                    "has no parameter");
  EXPECT_EQ(std::strchr(err.message, '\x1b'), nullptr) << err.message;
  for (int32_t bad : {2, -1, 0x7fffffff}) {
    EXPECT_STATUS_MSG(kAbi.set_frozen(m, "fc.weight", bad, &err), err,
                      NNCC_ERROR_INVALID_ARGUMENT,
                      "set_frozen: frozen must be 0 (trainable) or 1 (frozen), got " +
                          std::to_string(bad));
    EXPECT_EQ(frozenFlag(m, "fc.weight"), 0) << "a refused call changed the flag";
  }
  EXPECT_STATUS_MSG(kAbi.get_frozen(nullptr, "fc.weight", nullptr, &err), err,
                    NNCC_ERROR_INVALID_ARGUMENT, "get_frozen: model is NULL");
  EXPECT_STATUS_MSG(kAbi.get_frozen(m, nullptr, nullptr, &err), err,
                    NNCC_ERROR_INVALID_ARGUMENT, "get_frozen: name is NULL");
  int32_t flag = 7;
  EXPECT_STATUS_MSG(kAbi.get_frozen(m, "nope", &flag, &err), err, NNCC_ERROR_INVALID_ARGUMENT,
                    "get_frozen: 'toy' has no parameter 'nope'");
  EXPECT_EQ(flag, 7);
  // Valid calls: set, read (NULL out only checks the name), clear; err may be NULL.
  ASSERT_EQ(kAbi.set_frozen(m, "fc.weight", 1, nullptr), NNCC_OK);
  EXPECT_EQ(frozenFlag(m, "fc.weight"), 1);
  EXPECT_EQ(frozenFlag(m, "fc.bias"), 0);
  EXPECT_EQ(kAbi.get_frozen(m, "fc.weight", nullptr, &err), NNCC_OK) << err.message;
  ASSERT_EQ(kAbi.set_frozen(m, "fc.weight", 1, &err), NNCC_OK) << err.message; // idempotent
  ASSERT_EQ(kAbi.set_frozen(m, "fc.weight", 0, &err), NNCC_OK) << err.message;
  EXPECT_EQ(frozenFlag(m, "fc.weight"), 0);
  EXPECT_EQ(nncc_ms_frozen(m), nullptr); // none frozen: the CUDA tables take every parameter
}

// A frozen parameter gets nothing from a step: no update, no weight decay,
// no momentum, and its gradient is left out of the clipping norm; the
// other parameter trains as it would alone.
TEST_F(Validation, FrozenParameterIsLeftAloneByTheStep) {
  // The cotangent of y bound to ones, so that both gradients are nonzero.
  std::vector<float> ones(6, 1.0f);
  int64_t yShape[] = {2, 3};
  ASSERT_EQ(kAbi.bind(m, NNCC_BIND_COTANGENT, "cotangent.y", NNCC_DTYPE_F32, 2, yShape,
                      ones.data(), &err),
            NNCC_OK)
      << err.message;
  ASSERT_EQ(kAbi.set_frozen(m, "fc.weight", 1, &err), NNCC_OK) << err.message;
  ASSERT_NE(nncc_ms_frozen(m), nullptr);
  EXPECT_EQ(nncc_ms_frozen(m)[0], 1);
  EXPECT_EQ(nncc_ms_frozen(m)[1], 0);
  std::vector<float> before = weights();
  ASSERT_EQ(kAbi.train_step(m, &kFreezeTrain, &err), NNCC_OK) << err.message;
  std::vector<float> after = weights();
  EXPECT_EQ(std::memcmp(after.data(), before.data(), 12 * sizeof(float)), 0)
      << "the frozen fc.weight changed";
  // grad.fc.bias = the column sums of the cotangent (2 each), grad.fc.weight
  // is computed (and readable) but not counted: norm sqrt(12), not more.
  const float *gw = static_cast<const float *>(nncc_ms_grad(m, 0));
  const float *gb = static_cast<const float *>(nncc_ms_grad(m, 1));
  double sqW = 0, sqB = 0;
  for (int k = 0; k < 12; ++k)
    sqW += double(gw[k]) * gw[k];
  for (int k = 0; k < 3; ++k) {
    sqB += double(gb[k]) * gb[k];
    EXPECT_EQ(gb[k], 2.0f);
  }
  EXPECT_GT(sqW, 0.0);
  nncc_train_stats st{};
  ASSERT_EQ(kAbi.train_stats(m, &st, &err), NNCC_OK);
  EXPECT_DOUBLE_EQ(st.grad_norm, std::sqrt(sqB));
  EXPECT_DOUBLE_EQ(st.clip_scale, 1.0 / (std::sqrt(sqB) + 1e-6));
  // fc.bias (no decay group): p -= lr * clip_scale * g on the first step.
  for (int k = 0; k < 3; ++k)
    EXPECT_FLOAT_EQ(after[12 + k], before[12 + k] - float(0.1 * st.clip_scale * 2.0)) << k;

  // The state file: fc.weight's momentum buffer is zero, fc.bias's is not,
  // and the frozen set is recorded and restored by load_train_state.
  std::string path = tempPath("frozen-state");
  ASSERT_EQ(kAbi.save_train_state(m, path.c_str(), &err), NNCC_OK) << err.message;
  nncc_safetensors *f = nullptr;
  ASSERT_EQ(nncc_safetensors_open(path.c_str(), &f, &err), NNCC_OK) << err.message;
  EXPECT_STREQ(nncc_safetensors_metadata_get(f, "nncc_frozen"), "fc.weight");
  nncc_tensor_view v;
  ASSERT_EQ(nncc_safetensors_find(f, "optimizer.momentum_buffer.fc.weight", &v, &err), NNCC_OK);
  for (uint64_t k = 0; k < v.numel; ++k)
    EXPECT_EQ(static_cast<const float *>(v.data)[k], 0.0f);
  ASSERT_EQ(nncc_safetensors_find(f, "optimizer.momentum_buffer.fc.bias", &v, &err), NNCC_OK);
  EXPECT_NE(static_cast<const float *>(v.data)[0], 0.0f);
  nncc_safetensors_close(f);
  nncc_model *other = nullptr;
  ASSERT_EQ(kAbi.create(NNCC_TARGET_CPU, &other, &err), NNCC_OK) << err.message;
  EXPECT_EQ(frozenFlag(other, "fc.weight"), 0);
  ASSERT_EQ(kAbi.load_train_state(other, path.c_str(), &err), NNCC_OK) << err.message;
  EXPECT_EQ(frozenFlag(other, "fc.weight"), 1);
  EXPECT_EQ(frozenFlag(other, "fc.bias"), 0);
  // A state saved with nothing frozen clears the flags again.
  ASSERT_EQ(kAbi.set_frozen(m, "fc.weight", 0, &err), NNCC_OK) << err.message;
  ASSERT_EQ(kAbi.save_train_state(m, path.c_str(), &err), NNCC_OK) << err.message;
  ASSERT_EQ(kAbi.load_train_state(other, path.c_str(), &err), NNCC_OK) << err.message;
  EXPECT_EQ(frozenFlag(other, "fc.weight"), 0);
  kAbi.destroy(other);
  std::remove(path.c_str());
}

// With every parameter frozen a step is refused before it runs: the
// weights, the step counter and a pending accumulation stay.
TEST_F(Validation, AStepWithEveryParameterFrozenIsRefused) {
  ASSERT_EQ(kAbi.set_frozen(m, "fc.weight", 1, &err), NNCC_OK) << err.message;
  ASSERT_EQ(kAbi.set_frozen(m, "fc.bias", 1, &err), NNCC_OK) << err.message;
  std::vector<float> before = weights();
  EXPECT_STATUS_MSG(kAbi.train_step(m, &kFreezeTrain, &err), err, NNCC_ERROR_INVALID_ARGUMENT,
                    "train_step: every parameter of 'toy' is frozen (set_frozen): nothing to "
                    "train");
  ASSERT_EQ(kAbi.accumulate_gradients(m, 1.0, &err), NNCC_OK) << err.message;
  EXPECT_STATUS_MSG(kAbi.apply_gradients(m, &kFreezeTrain, &err), err,
                    NNCC_ERROR_INVALID_ARGUMENT, "apply_gradients: every parameter");
  EXPECT_EQ(weights(), before);
  EXPECT_EQ(steps(), 0);
  ASSERT_EQ(kAbi.set_frozen(m, "fc.bias", 0, &err), NNCC_OK) << err.message;
  ASSERT_EQ(kAbi.apply_gradients(m, &kFreezeTrain, &err), NNCC_OK) << err.message;
  EXPECT_EQ(steps(), 1);
}
