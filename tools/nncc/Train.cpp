//===- Train.cpp - `nncc train` --------------------------------------------===//
//
//   nncc train M.nn --data D.safetensors [--epochs N] [--batch B] [--lr X]
//        [--seed S] [--log L.csv] [-o W.safetensors] [--weights init.safetensors]
//        [--precision f32|f64] [--max-steps K] [--progress] [--quiet]
//
// Compiles the model with gradients (cached, as `nncc run --grad`), loads the
// data file (one tensor per model input, leading dim = samples), and runs
// the model's train clause through the generated `train_step`: batches are
// slices of the leading dim in a permutation drawn from the seed each epoch
// (the last partial batch is kept). See docs/training.md.
//
//===----------------------------------------------------------------------===//
#include "Run.h"

#include "nncc/Runtime/nncc_model.h"
#include "nncc/Target/Compile.h"
#include "dialects/NN/Transforms/Passes.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <numeric>
#include <random>
#include <unistd.h>

namespace cl = llvm::cl;

namespace nncc::tool {

cl::SubCommand trainCmd("train", "Train a model on a safetensors data file with its train clause");

namespace {
enum class TPrecision { F32, F64 };
cl::opt<std::string> trainInput(cl::Positional, cl::desc("<model.nn>"), cl::Required,
                                cl::sub(trainCmd));
cl::opt<std::string> dataFile("data",
                              cl::desc("safetensors with one tensor per model input, "
                                       "leading dim = samples"),
                              cl::value_desc("D.safetensors"), cl::sub(trainCmd),
                              cl::cat(runCategory));
cl::opt<int64_t> epochsOpt("epochs", cl::desc("Epochs (default: the train clause)"),
                           cl::init(-1), cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<int64_t> batchOpt("batch", cl::desc("Batch size (default: the train clause)"),
                          cl::init(-1), cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<double> lrOpt("lr", cl::desc("Base learning rate (default: the train clause)"),
                      cl::init(-1.0), cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<int64_t> seedOpt("seed",
                         cl::desc("Seed of the weight init and of the shuffling (default: "
                                  "the train clause, else 0)"),
                         cl::init(-1), cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<std::string> logFile("log", cl::desc("CSV log: epoch,step,lr,loss,grad_norm per step"),
                             cl::value_desc("L.csv"), cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<std::string> outWeights("o",
                                cl::desc("Where to save the trained weights (default: "
                                         "<model>.safetensors)"),
                                cl::value_desc("W.safetensors"), cl::sub(trainCmd),
                                cl::cat(runCategory));
cl::opt<std::string> initWeights("weights", cl::desc("Start from these weights"),
                                 cl::value_desc("init.safetensors"), cl::sub(trainCmd),
                                 cl::cat(runCategory));
cl::opt<TPrecision> trainPrecision(
    "precision", cl::desc("Float precision"), cl::init(TPrecision::F32),
    cl::values(clEnumValN(TPrecision::F32, "f32", "float"),
               clEnumValN(TPrecision::F64, "f64", "double")),
    cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<int64_t> maxSteps("max-steps", cl::desc("Stop after this many steps (0: no limit)"),
                          cl::init(0), cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<bool> progressOpt("progress", cl::desc("Progress bar on stderr even when not a TTY"),
                          cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<bool> noSchedule("no-schedule",
                         cl::desc("Constant learning rate (ignore the clause's schedule)"),
                         cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<bool> noShuffle("no-shuffle", cl::desc("Batches in data order"), cl::sub(trainCmd),
                        cl::cat(runCategory));
cl::opt<bool> trainQuiet("quiet", cl::desc("No per-epoch lines on stdout"), cl::sub(trainCmd),
                         cl::cat(runCategory));

int tfail(const llvm::Twine &msg) {
  llvm::errs() << "nncc: error: " << msg << "\n";
  return 1;
}

std::string shapeString(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

std::string sigString(const TensorSignature &t) {
  return t.dtype + " [" + llvm::join(t.dims, ", ") + "]";
}

/// One model input: all samples, in the dtype the library takes.
struct DataTensor {
  std::string name;
  nncc_dtype dtype;
  std::vector<int64_t> shape; // [N, ...]
  uint64_t rowBytes = 0;
  std::vector<uint64_t> storage;
  std::vector<uint64_t> batch;
  char *data() { return reinterpret_cast<char *>(storage.data()); }
};

bool isFloat(nncc_dtype d) {
  return d == NNCC_DTYPE_F32 || d == NNCC_DTYPE_F64 || d == NNCC_DTYPE_F16 ||
         d == NNCC_DTYPE_BF16;
}

double readAs(nncc_dtype d, const void *p, uint64_t i) {
  const char *c = static_cast<const char *>(p);
  switch (d) {
  case NNCC_DTYPE_F32: { float v; memcpy(&v, c + 4 * i, 4); return v; }
  case NNCC_DTYPE_F64: { double v; memcpy(&v, c + 8 * i, 8); return v; }
  case NNCC_DTYPE_I32: { int32_t v; memcpy(&v, c + 4 * i, 4); return v; }
  case NNCC_DTYPE_I64: { int64_t v; memcpy(&v, c + 8 * i, 8); return (double)v; }
  case NNCC_DTYPE_U8: case NNCC_DTYPE_BOOL: return (double)(uint8_t)c[i];
  default: return NAN;
  }
}

} // namespace

int runTrain() {
  if (dataFile.empty())
    return tfail("nncc train needs --data D.safetensors (one tensor per model input, "
                 "leading dim = samples)");
  const bool f64 = trainPrecision == TPrecision::F64;
  mlir::MLIRContext context;
  context.disableMultithreading();
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  std::string source;
  auto module = loadModelFile(context, sourceMgr, trainInput, source);
  if (!module)
    return 1;
  {
    mlir::PassManager pm(module->getContext());
    pm.addPass(nncc::nn::createNNAutodiff());
    if (mlir::failed(pm.run(*module)))
      return tfail("cannot differentiate model '" + trainInput + "'");
  }
  mlir::FailureOr<ModelSignature> sig = getSignature(*module);
  if (mlir::failed(sig))
    return 1;

  // ---- The data (checked before compiling). ----
  nncc_safetensors *file = nullptr;
  nncc_error err;
  if (nncc_safetensors_open(dataFile.c_str(), &file, &err) != NNCC_OK)
    return tfail(llvm::Twine("reading data: ") + err.message);
  auto closeFile = llvm::make_scope_exit([&] { nncc_safetensors_close(file); });
  std::vector<DataTensor> data;
  int64_t N = -1;
  std::string nFrom;
  for (const TensorSignature &s : sig->inputs) {
    nncc_tensor_view view;
    if (nncc_safetensors_find(file, s.name.c_str(), &view, &err) != NNCC_OK) {
      std::string have;
      for (size_t k = 0; k < nncc_safetensors_count(file); ++k) {
        nncc_tensor_view o;
        if (nncc_safetensors_tensor_at(file, k, &o, nullptr) == NNCC_OK)
          have += (have.empty() ? "" : ", ") + std::string(o.name);
      }
      return tfail("input '" + s.name + "' (" + sigString(s) + ") is missing from '" +
                   dataFile + "' (it has: " + (have.empty() ? "nothing" : have) + ")");
    }
    std::vector<int64_t> shape(view.shape, view.shape + view.rank);
    if ((size_t)view.rank != s.dims.size() || s.dims.empty())
      return tfail("'" + dataFile + "': tensor '" + s.name + "' has shape " +
                   shapeString(shape) + ", expected " + sigString(s) +
                   " with the samples along the first dim");
    int64_t lead;
    if (!llvm::StringRef(s.dims[0]).getAsInteger(10, lead))
      return tfail("input '" + s.name + "' of model '" + sig->model + "' is " + sigString(s) +
                   ": its first dim is static, so it cannot be sliced into batches");
    for (size_t k = 1; k < s.dims.size(); ++k) {
      int64_t x;
      if (!llvm::StringRef(s.dims[k]).getAsInteger(10, x) && x != shape[k])
        return tfail("'" + dataFile + "': tensor '" + s.name + "' has shape " +
                     shapeString(shape) + ", expected " + sigString(s));
    }
    if (N >= 0 && shape[0] != N)
      return tfail("'" + dataFile + "': tensors disagree on the number of samples: '" + nFrom +
                   "' has " + std::to_string(N) + ", '" + s.name + "' has " +
                   std::to_string(shape[0]));
    N = shape[0];
    nFrom = s.name;
    DataTensor t;
    t.name = s.name;
    nncc_dtype want = nncc_dtype_from_name(s.dtype.c_str());
    if (f64 && want == NNCC_DTYPE_F32)
      want = NNCC_DTYPE_F64;
    bool srcFloat = isFloat(view.dtype), dstFloat = isFloat(want);
    if (srcFloat != dstFloat && view.dtype != want)
      return tfail("'" + dataFile + "': tensor '" + s.name + "' is " +
                   nncc_dtype_name(view.dtype) + ", expected " + sigString(s));
    t.dtype = want;
    t.shape = shape;
    uint64_t per = 1;
    for (size_t k = 1; k < shape.size(); ++k)
      per *= (uint64_t)shape[k];
    t.rowBytes = per * nncc_dtype_size(want);
    uint64_t bytes = (uint64_t)N * t.rowBytes;
    t.storage.assign((bytes + 7) / 8, 0);
    if (view.dtype == want) {
      if (view.nbytes)
        memcpy(t.data(), view.data, view.nbytes);
    } else {
      for (uint64_t i = 0; i < view.numel; ++i) {
        double v = readAs(view.dtype, view.data, i);
        if (std::isnan(v) && !srcFloat)
          return tfail("'" + dataFile + "': tensor '" + s.name + "': unsupported dtype " +
                       nncc_dtype_name(view.dtype));
        char *dst = t.data() + i * nncc_dtype_size(want);
        switch (want) {
        case NNCC_DTYPE_F32: { float f = (float)v; memcpy(dst, &f, 4); break; }
        case NNCC_DTYPE_F64: memcpy(dst, &v, 8); break;
        case NNCC_DTYPE_I32: {
          if (v != std::floor(v) || v < INT32_MIN || v > INT32_MAX)
            return tfail("'" + dataFile + "': tensor '" + s.name + "': value " +
                         std::to_string(v) + " does not fit in I32");
          int32_t x = (int32_t)v; memcpy(dst, &x, 4); break;
        }
        case NNCC_DTYPE_I64: { int64_t x = (int64_t)v; memcpy(dst, &x, 8); break; }
        default:
          return tfail("'" + dataFile + "': tensor '" + s.name + "': cannot convert " +
                       nncc_dtype_name(view.dtype) + " to " + nncc_dtype_name(want));
        }
      }
    }
    data.push_back(std::move(t));
  }
  if (N <= 0)
    return tfail("'" + dataFile + "' holds no samples");

  // ---- Compile, load, configure. ----
  std::string libPath;
  if (!compileModelCached(*module, source, /*grad=*/true, f64, libPath))
    return 1;
  void *lib = dlopen(libPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return tfail("cannot load '" + libPath + "': " + dlerror());
  auto getAbi = reinterpret_cast<nncc_model_get_abi_fn>(dlsym(lib, "nncc_model_get_abi"));
  const nncc_model_abi *abi = getAbi ? getAbi() : nullptr;
  if (!abi || abi->abi_version != NNCC_MODEL_ABI_VERSION)
    return tfail("'" + libPath + "' has an incompatible ABI version");
  if (!abi->train_step)
    return tfail("model '" + sig->model + "' was compiled without train_step");
  nncc_train_config cfg = *abi->train_config;
  if (epochsOpt > 0)
    cfg.epochs = epochsOpt;
  if (batchOpt > 0)
    cfg.batch = batchOpt;
  if (lrOpt > 0)
    cfg.lr = lrOpt;
  if (seedOpt >= 0)
    cfg.seed = seedOpt;
  if (noSchedule)
    cfg.schedule = NNCC_SCHEDULE_CONSTANT;
  if (epochsOpt.getNumOccurrences() && epochsOpt <= 0)
    return tfail("--epochs must be positive");
  if (batchOpt.getNumOccurrences() && batchOpt <= 0)
    return tfail("--batch must be positive");
  const int64_t B = std::min<int64_t>(cfg.batch, N);
  const int64_t stepsPerEpoch = (N + B - 1) / B;
  if (cfg.total <= 0)
    cfg.total = cfg.epochs * stepsPerEpoch;

  nncc_model *model = nullptr;
  if (abi->create(NNCC_TARGET_CPU, &model, &err) != NNCC_OK)
    return tfail(llvm::Twine("creating the model: ") + err.message);
  auto destroy = llvm::make_scope_exit([&] { abi->destroy(model); });
  if (!initWeights.empty()) {
    if (abi->load_weights(model, initWeights.c_str(), &err) != NNCC_OK)
      return tfail(err.message);
  } else if (abi->init_weights(model, (uint64_t)cfg.seed, &err) != NNCC_OK) {
    return tfail(llvm::Twine("init_weights: ") + err.message);
  }

  FILE *log = nullptr;
  if (!logFile.empty()) {
    log = fopen(logFile.c_str(), "w");
    if (!log)
      return tfail("cannot write '" + logFile + "': " + strerror(errno));
    fprintf(log, "epoch,step,lr,loss,grad_norm\n");
  }
  auto closeLog = llvm::make_scope_exit([&] {
    if (log)
      fclose(log);
  });
  const bool bar = progressOpt || isatty(2);
  if (!trainQuiet)
    llvm::outs() << "nncc train: " << sig->model << ", " << N << " samples, batch " << B
                 << ", " << stepsPerEpoch << " steps/epoch, " << cfg.epochs << " epochs, "
                 << (cfg.optimizer == NNCC_OPTIM_SGD    ? "sgd"
                     : cfg.optimizer == NNCC_OPTIM_ADAM ? "adam"
                                                        : "adamw")
                 << " lr " << llvm::format("%g", cfg.lr) << "\n";

  std::vector<int64_t> perm(N);
  std::iota(perm.begin(), perm.end(), 0);
  std::mt19937_64 rng((uint64_t)cfg.seed * 0x9E3779B97F4A7C15ull + 12345);
  int64_t step = 0;
  bool stop = false;
  for (int64_t epoch = 1; epoch <= cfg.epochs && !stop; ++epoch) {
    if (!noShuffle)
      std::shuffle(perm.begin(), perm.end(), rng);
    double lossSum = 0.0;
    int64_t lossCount = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t b = 0; b < stepsPerEpoch; ++b) {
      int64_t lo = b * B, hi = std::min(N, lo + B), n = hi - lo;
      for (DataTensor &t : data) {
        t.batch.assign((n * t.rowBytes + 7) / 8, 0);
        char *dst = reinterpret_cast<char *>(t.batch.data());
        for (int64_t r = 0; r < n; ++r)
          memcpy(dst + r * t.rowBytes, t.data() + perm[lo + r] * t.rowBytes, t.rowBytes);
        std::vector<int64_t> shape = t.shape;
        shape[0] = n;
        if (abi->set_input(model, t.name.c_str(), t.dtype, (int32_t)shape.size(), shape.data(),
                           dst, &err) != NNCC_OK)
          return tfail("'" + dataFile + "': " + err.message);
      }
      if (abi->train_step(model, &cfg, &err) != NNCC_OK)
        return tfail(llvm::Twine("train_step ") + std::to_string(step + 1) + ": " +
                     err.message);
      ++step;
      nncc_dtype dt;
      int32_t rank;
      const int64_t *shape;
      const void *ld;
      if (abi->get_output(model, "loss", &dt, &rank, &shape, &ld, &err) != NNCC_OK)
        return tfail(err.message);
      double loss = readAs(dt, ld, 0);
      nncc_train_stats st;
      abi->train_stats(model, &st, nullptr);
      lossSum += loss;
      ++lossCount;
      if (log)
        fprintf(log, "%lld,%lld,%.9g,%.9g,%.9g\n", (long long)epoch, (long long)step, st.lr,
                loss, st.grad_norm);
      if (bar) {
        int width = 30, done = (int)((b + 1) * width / stepsPerEpoch);
        std::string s(done, '#');
        s.resize(width, ' ');
        fprintf(stderr, "\repoch %lld/%lld [%s] %lld/%lld loss %.5g", (long long)epoch,
                (long long)cfg.epochs, s.c_str(), (long long)(b + 1),
                (long long)stepsPerEpoch, loss);
        fflush(stderr);
      }
      if (maxSteps > 0 && step >= maxSteps) {
        stop = true;
        break;
      }
    }
    if (bar)
      fprintf(stderr, "\n");
    double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!trainQuiet)
      llvm::outs() << llvm::format("epoch %lld/%lld  loss %.6g  (%lld steps, %.2f s)\n",
                                   (long long)epoch, (long long)cfg.epochs,
                                   lossSum / std::max<int64_t>(1, lossCount),
                                   (long long)lossCount, secs);
  }
  std::string out = outWeights.empty() ? sig->model + ".safetensors" : std::string(outWeights);
  if (abi->save_weights(model, out.c_str(), &err) != NNCC_OK)
    return tfail(llvm::Twine("saving weights: ") + err.message);
  if (!trainQuiet)
    llvm::outs() << "saved weights to " << out << "\n";
  return 0;
}

} // namespace nncc::tool
