//===- Train.cpp - `nncc train` --------------------------------------------===//
//
//   nncc train M.nn --data D.safetensors [--epochs N] [--batch B] [--lr X]
//        [--seed S] [--log L.csv] [-o W.safetensors] [--weights init.safetensors
//        [--partial-weights] [--weights-prefix P]]
//        [--precision f32|f64|bf16] [--max-steps K] [--progress] [--quiet]
//        [--target cpu|cuda] [--memory-budget SIZE|min]
//        [--save-state S.safetensors [--save-every N]] [--resume S.safetensors]
//        [--micro-batch M|auto] [--validation V.safetensors [--keep-best] [--patience N]]
//        [--freeze PATTERN]... [--freeze-file F]
//
// Compiles the model with gradients (cached, as `nncc run --grad`), loads the
// data file (one tensor per model input, leading dim = samples), and runs
// the model's train clause through the generated `train_step`: batches are
// slices of the leading dim in a permutation drawn from the seed each epoch
// (the last partial batch is kept). --save-state writes the parameters, the
// optimizer state and the step after every epoch; --resume continues such
// a run at its next step, as if it had not stopped. See docs/training.md.
//
//===----------------------------------------------------------------------===//
#include "Run.h"

#include "nncc/Driver/CompileCache.h"
#include "nncc/Driver/ModuleLoader.h"
#include "nncc/Driver/HostTensor.h"
#include "nncc/Driver/ModelHandle.h"
#include "nncc/Driver/Support.h"
#include "dialects/NN/IR/NNAttrs.h"
#include "nncc/Pipeline/RematSearch.h"
#include "nncc/Runtime/nncc_model.h"
#include "nncc/Runtime/nncc_runtime.h"
#include "nncc/Target/Compile.h"
#include "nncc/Target/MemoryPlan.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <unistd.h>

namespace cl = llvm::cl;
using namespace nncc::driver;

namespace nncc::tool {

cl::SubCommand trainCmd("train", "Train a model on a safetensors data file with its train clause");
cl::SubCommand evalCmd("eval", "The loss and classification metrics of weights on a data file");

namespace {
/// The most epochs a run may ask for (their step count must fit in 64 bits).
constexpr int64_t kMostEpochs = 1000000000;

cl::opt<std::string> trainInput(cl::Positional, cl::desc("<model.nn>"), cl::Required,
                                cl::sub(trainCmd), cl::sub(evalCmd));
cl::opt<std::string> dataFile("data",
                              cl::desc("safetensors with one tensor per model input, "
                                       "leading dim = samples"),
                              cl::value_desc("D.safetensors"), cl::sub(trainCmd),
                              cl::sub(evalCmd), cl::cat(runCategory));
cl::opt<int64_t> epochsOpt("epochs", cl::desc("Epochs (default: the train clause)"),
                           cl::init(-1), cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<int64_t> batchOpt("batch", cl::desc("Batch size (default: the train clause)"),
                          cl::init(-1), cl::sub(trainCmd), cl::sub(evalCmd),
                          cl::cat(runCategory));
cl::opt<std::string> microBatchArg(
    "micro-batch",
    cl::desc("Run each batch as micro-batches of at most M samples whose gradients are "
             "averaged (weighted by their sizes) before one optimizer step (ABI 8 "
             "accumulate_gradients / apply_gradients): the step of the whole batch in the "
             "memory of a micro-batch; --memory-budget and validation then work per "
             "micro-batch. auto (with --memory-budget): as few micro-batches, of even size, as "
             "fit the budget keeping every residual"),
    cl::value_desc("M|auto"), cl::sub(trainCmd), cl::cat(runCategory));
/// --micro-batch as decided by runTrain: 0 for whole batches.
int64_t microBatch = 0;

cl::opt<double> lrOpt("lr", cl::desc("Base learning rate (default: the train clause)"),
                      cl::init(-1.0), cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<int64_t> seedOpt("seed",
                         cl::desc("Seed of the weight init, the shuffling and the random "
                                  "streams (dropout masks, token masks, samples; default: the "
                                  "train clause, else 0)"),
                         cl::init(-1), cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<std::string> logFile("log", cl::desc("CSV log: epoch,step,lr,loss,grad_norm per step, "
                                             "then the model's other scalar outputs"),
                             cl::value_desc("L.csv"), cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<std::string> outWeights("o",
                                cl::desc("Where to save the trained weights (default: "
                                         "<model>.safetensors)"),
                                cl::value_desc("W.safetensors"), cl::sub(trainCmd),
                                cl::cat(runCategory));
cl::opt<std::string> initWeights("weights",
                                 cl::desc("Start from these weights (nncc eval: the weights "
                                          "evaluated)"),
                                 cl::value_desc("init.safetensors"), cl::sub(trainCmd),
                                 cl::sub(evalCmd), cl::cat(runCategory));
cl::opt<bool> partialWeights(
    "partial-weights",
    cl::desc("With --weights: load the parameters the file has by name and keep the others "
             "at their initialisation (--seed); report the missing and unexpected names "
             "(torch's load_state_dict(strict=False)). Default: every parameter and nothing "
             "else"),
    cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<std::string> weightsPrefix(
    "weights-prefix",
    cl::desc("With --weights: take the file's tensor PREFIX<name> as parameter <name> and "
             "skip the tensors without the prefix (e.g. discriminator. for an ELECTRA run)"),
    cl::value_desc("PREFIX"), cl::sub(trainCmd), cl::cat(runCategory));
cl::list<std::string> freezeOpt(
    "freeze",
    cl::desc("Freeze the parameters whose names (as nncc inspect lists them) match this glob "
             "pattern or name (repeatable; e.g. 'embed.*'): the optimizer leaves them and "
             "their state unchanged, and their gradients out of the clipping norm (ABI 10 "
             "set_frozen; torch's requires_grad=False)"),
    cl::value_desc("PATTERN"), cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<std::string> freezeFile(
    "freeze-file",
    cl::desc("Patterns for --freeze, one a line ('#' comments and blank lines skipped)"),
    cl::value_desc("F"), cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<std::string> validationFile(
    "validation",
    cl::desc("Held-out samples (the --data format): after every epoch, the sample-weighted "
             "mean of the loss (and of the other scalar outputs) in inference mode, in "
             "batches of the training batch size"),
    cl::value_desc("V.safetensors"), cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<bool> keepBest("keep-best",
                       cl::desc("With --validation: -o gets the weights of the epoch with the "
                                "lowest val_loss, not the last epoch's"),
                       cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<int64_t> patience("patience",
                          cl::desc("With --validation: stop when val_loss has not improved "
                                   "for this many epochs (0: never)"),
                          cl::init(0), cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<std::string> saveState(
    "save-state",
    cl::desc("After every epoch (and at --max-steps, and every --save-every steps), write "
             "the training state: parameters, optimizer state and step (ABI 7 "
             "save_train_state), for --resume; '{step}' in the path becomes the step"),
    cl::value_desc("S.safetensors"), cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<int64_t> saveEvery(
    "save-every",
    cl::desc("With --save-state: also write the state every N steps (0: after every epoch "
             "only); '{step}' in the --save-state path keeps one file per step"),
    cl::init(0), cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<std::string> resumeState(
    "resume",
    cl::desc("Continue the run that wrote this training state (--save-state) at its next "
             "step: same model, data, batch, seed and epochs give the uninterrupted run"),
    cl::value_desc("S.safetensors"), cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<Precision> trainPrecision(
    "precision", cl::desc("Float precision"), cl::init(Precision::F32),
    cl::values(clEnumValN(Precision::F32, "f32", "float"),
               clEnumValN(Precision::F64, "f64", "double (CPU)"),
               clEnumValN(Precision::BF16, "bf16",
                          "bf16 storage, fp32 arithmetic, fp32 master weights and optimizer "
                          "state (CUDA)")),
    cl::sub(trainCmd), cl::sub(evalCmd), cl::cat(runCategory));
cl::opt<int64_t> maxSteps("max-steps", cl::desc("Stop after this many steps (0: no limit)"),
                          cl::init(0), cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<bool> progressOpt("progress", cl::desc("Progress bar on stderr even when not a TTY"),
                          cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<bool> noSchedule("no-schedule",
                         cl::desc("Constant learning rate (ignore the clause's schedule)"),
                         cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<bool> noShuffle("no-shuffle", cl::desc("Batches in data order"), cl::sub(trainCmd),
                        cl::cat(runCategory));
MemoryBudgetOpt trainBudget(
    "memory-budget",
    cl::desc("The most arena memory a training step may use (bytes, NNNKiB, NNNMiB, "
             "NNNGiB or min), for a full batch of this data (a micro-batch with "
             "--micro-batch); residuals are recomputed in the backward until the plan fits "
             "(nncc-remat)"),
    cl::value_desc("SIZE|min"), cl::sub(trainCmd), cl::cat(runCategory));
cl::opt<bool> trainQuiet("quiet", cl::desc("No per-epoch lines on stdout"), cl::sub(trainCmd),
                         cl::sub(evalCmd), cl::cat(runCategory));
cl::opt<TargetKind> trainTarget(
    "target", cl::desc("Where to train"), cl::init(TargetKind::CPU),
    cl::values(clEnumValN(TargetKind::CPU, "cpu", "the CPU"),
               clEnumValN(TargetKind::CUDA, "cuda",
                          "a CUDA GPU (models whose every training launch has a CUDA "
                          "kernel; docs/cuda.md)")),
    cl::sub(trainCmd), cl::sub(evalCmd), cl::cat(runCategory));
cl::opt<std::string> metricsOpt(
    "metrics",
    cl::desc("Classification metrics of the validation set (nncc eval: the data), "
             "accumulated over all of it from the argmax of the logits: a comma-separated "
             "list of accuracy, macro_f1, micro_f1, macro_precision, macro_recall, or "
             "classification for all of them"),
    cl::value_desc("LIST"), cl::sub(trainCmd), cl::sub(evalCmd), cl::cat(runCategory));
cl::opt<std::string> logitsOpt(
    "logits",
    cl::desc("With --metrics: the output holding the logits [..., C] (default: the one "
             "float output shaped as the class targets and their number of classes)"),
    cl::value_desc("NAME"), cl::sub(trainCmd), cl::sub(evalCmd), cl::cat(runCategory));
cl::opt<std::string> targetsOpt(
    "targets",
    cl::desc("With --metrics: the class-target input (default: the only one)"),
    cl::value_desc("NAME"), cl::sub(trainCmd), cl::sub(evalCmd), cl::cat(runCategory));
cl::opt<std::string> metricsJson(
    "metrics-json",
    cl::desc("With --metrics: a JSON file with the metrics, the per-class precision, recall "
             "and F1 and the confusion matrix (nncc train: of every validated epoch)"),
    cl::value_desc("F.json"), cl::sub(trainCmd), cl::sub(evalCmd), cl::cat(runCategory));
cl::opt<std::string> bestBy(
    "best-by",
    cl::desc("With --validation: what --keep-best and --patience follow: val_loss (the "
             "lowest; default) or val_<metric> of --metrics (the highest)"),
    cl::init("val_loss"), cl::value_desc("val_loss|val_METRIC"), cl::sub(trainCmd),
    cl::cat(runCategory));

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

/// The data file's tensors, checked against the inputs and converted.
struct TrainData {
  std::string path; // the safetensors file, for messages
  std::vector<DataTensor> tensors;
  int64_t numSamples = -1;
};

/// Checks the shape of data tensor `view` against input `s`; sets or checks
/// the number of samples.
int checkDataShape(const ModelSignature &sig, const TensorSignature &s,
                   const nncc_tensor_view &view, TrainData &data, std::string &nFrom) {
  std::vector<int64_t> shape(view.shape, view.shape + view.rank);
  if ((size_t)view.rank != s.dims.size() || s.dims.empty())
    return fail("'" + data.path + "': tensor '" + s.name + "' has shape " +
                shapeString(shape) + ", expected " + signatureString(s) +
                " with the samples along the first dim");
  int64_t lead;
  if (!llvm::StringRef(s.dims[0]).getAsInteger(10, lead))
    return fail("input '" + s.name + "' of model '" + sig.model + "' is " +
                signatureString(s) +
                ": its first dim is static, so it cannot be sliced into batches");
  for (size_t k = 1; k < s.dims.size(); ++k) {
    int64_t x;
    if (!llvm::StringRef(s.dims[k]).getAsInteger(10, x) && x != shape[k])
      return fail("'" + data.path + "': tensor '" + s.name + "' has shape " +
                  shapeString(shape) + ", expected " + signatureString(s));
  }
  if (data.numSamples >= 0 && shape[0] != data.numSamples)
    return fail("'" + data.path + "': tensors disagree on the number of samples: '" + nFrom +
                "' has " + std::to_string(data.numSamples) + ", '" + s.name + "' has " +
                std::to_string(shape[0]));
  data.numSamples = shape[0];
  nFrom = s.name;
  return 0;
}

/// Copies `view` into `t` (dtype t.dtype), converting element by element.
int convertData(const TensorSignature &s, const nncc_tensor_view &view, DataTensor &t,
                const std::string &path) {
  if (view.dtype == t.dtype) {
    if (view.nbytes)
      memcpy(t.data(), view.data, view.nbytes);
    return 0;
  }
  bool srcFloat = isFloatDType(view.dtype);
  for (uint64_t i = 0; i < view.numel; ++i) {
    double v = elementAsDouble(view.dtype, view.data, i);
    if (std::isnan(v) && !srcFloat)
      return fail("'" + path + "': tensor '" + s.name + "': unsupported dtype " +
                  nncc_dtype_name(view.dtype));
    char *dst = t.data() + i * nncc_dtype_size(t.dtype);
    switch (t.dtype) {
    case NNCC_DTYPE_F32: { float f = (float)v; memcpy(dst, &f, 4); break; }
    case NNCC_DTYPE_F64: memcpy(dst, &v, 8); break;
    case NNCC_DTYPE_BF16: { // as every f32 input of a bf16 library: rounded once from f32
      uint16_t b = nncc_f32_to_bf16((float)v); memcpy(dst, &b, 2); break;
    }
    case NNCC_DTYPE_I32: {
      if (v != std::floor(v) || v < INT32_MIN || v > INT32_MAX)
        return fail("'" + path + "': tensor '" + s.name + "': value " +
                    std::to_string(v) + " does not fit in I32");
      int32_t x = (int32_t)v; memcpy(dst, &x, 4); break;
    }
    case NNCC_DTYPE_I64: { int64_t x = (int64_t)v; memcpy(dst, &x, 8); break; }
    default:
      return fail("'" + path + "': tensor '" + s.name + "': cannot convert " +
                  nncc_dtype_name(view.dtype) + " to " + nncc_dtype_name(t.dtype));
    }
  }
  return 0;
}

/// --data (and --validation): one tensor per model input, samples along
/// the leading dim.
int loadData(const ModelSignature &sig, Precision precision, const std::string &path,
             llvm::StringRef what, TrainData &data) {
  data.path = path;
  nncc_safetensors *file = nullptr;
  nncc_error err;
  if (nncc_safetensors_open(data.path.c_str(), &file, &err) != NNCC_OK)
    return fail("reading " + what + ": " + err.message);
  llvm::scope_exit closeFile([&] { nncc_safetensors_close(file); });
  std::string nFrom;
  for (const TensorSignature &s : sig.inputs) {
    nncc_tensor_view view;
    if (nncc_safetensors_find(file, s.name.c_str(), &view, &err) != NNCC_OK)
      return failMissingInput(s, data.path, file);
    if (int rc = checkDataShape(sig, s, view, data, nFrom))
      return rc;
    DataTensor t;
    t.name = s.name;
    nncc_dtype want = nncc_dtype_from_name(s.dtype.c_str());
    if (want == NNCC_DTYPE_F32)
      want = precision == Precision::F64    ? NNCC_DTYPE_F64
             : precision == Precision::BF16 ? NNCC_DTYPE_BF16
                                            : NNCC_DTYPE_F32;
    if (isFloatDType(view.dtype) != isFloatDType(want) && view.dtype != want)
      return fail("'" + data.path + "': tensor '" + s.name + "' is " +
                  nncc_dtype_name(view.dtype) + ", expected " + signatureString(s));
    t.dtype = want;
    t.shape.assign(view.shape, view.shape + view.rank);
    uint64_t per = 1;
    for (size_t k = 1; k < t.shape.size(); ++k)
      per *= (uint64_t)t.shape[k];
    if (per == 0)
      return fail("'" + data.path + "': tensor '" + s.name + "' has shape " +
                  shapeString(t.shape) + ": its samples hold no elements");
    if (int rc = checkAllocation("'" + data.path + "': tensor '" + s.name + "'", t.shape,
                                 nncc_dtype_size(want)))
      return rc;
    t.rowBytes = per * nncc_dtype_size(want);
    t.storage.assign(((uint64_t)data.numSamples * t.rowBytes + 7) / 8, 0);
    if (int rc = convertData(s, view, t, data.path))
      return rc;
    data.tensors.push_back(std::move(t));
  }
  if (data.numSamples <= 0)
    return fail("'" + data.path + "' holds no samples");
  return 0;
}

/// The train clause's configuration with the command line's overrides.
int configure(const nncc_model_abi *abi, int64_t N, nncc_train_config &cfg) {
  cfg = *abi->train_config;
  // checkTrainOptions refused every value out of range.
  if (epochsOpt.getNumOccurrences())
    cfg.epochs = epochsOpt;
  if (batchOpt.getNumOccurrences())
    cfg.batch = batchOpt;
  if (lrOpt.getNumOccurrences())
    cfg.lr = lrOpt;
  if (seedOpt.getNumOccurrences())
    cfg.seed = seedOpt;
  if (noSchedule)
    cfg.schedule = NNCC_SCHEDULE_CONSTANT;
  const int64_t B = std::min<int64_t>(cfg.batch, N);
  int64_t total;
  if (cfg.total <= 0) {
    if (__builtin_mul_overflow(cfg.epochs, (N + B - 1) / B, &total))
      return fail(std::to_string(cfg.epochs) + " epochs of " + std::to_string((N + B - 1) / B) +
                  " steps overflow the step count");
    cfg.total = total;
  }
  return 0;
}

/// Sets the inputs to rows perm[lo, lo + n) of the data.
int setBatch(const ModelHandle &h, TrainData &data, const std::vector<int64_t> &perm,
             int64_t lo, int64_t n) {
  nncc_error err;
  for (DataTensor &t : data.tensors) {
    t.batch.assign((n * t.rowBytes + 7) / 8, 0);
    char *dst = reinterpret_cast<char *>(t.batch.data());
    for (int64_t r = 0; r < n; ++r)
      memcpy(dst + r * t.rowBytes, t.data() + perm[lo + r] * t.rowBytes, t.rowBytes);
    std::vector<int64_t> shape = t.shape;
    shape[0] = n;
    if (h.abi->set_input(h.model, t.name.c_str(), t.dtype, (int32_t)shape.size(),
                         shape.data(), dst, &err) != NNCC_OK)
      return fail("'" + data.path + "': " + err.message);
  }
  return 0;
}

/// The model's scalar float outputs other than the loss (an ELECTRA model's
/// generator and discriminator losses): reported beside the loss.
std::vector<std::string> scalarMetrics(const ModelSignature &sig) {
  std::vector<std::string> names;
  for (const TensorSignature &o : sig.outputs)
    if (o.name != "loss" && o.dims.empty() && (o.dtype == "F32" || o.dtype == "F64"))
      names.push_back(o.name);
  return names;
}

void progressBar(int64_t epoch, int64_t epochs, int64_t b, int64_t steps, double loss,
                 const std::vector<std::string> &metrics, const std::vector<double> &values) {
  int width = 30, done = (int)((b + 1) * width / steps);
  std::string s(done, '#');
  s.resize(width, ' ');
  fprintf(stderr, "\repoch %lld/%lld [%s] %lld/%lld loss %.5g", (long long)epoch,
          (long long)epochs, s.c_str(), (long long)(b + 1), (long long)steps, loss);
  for (size_t k = 0; k < metrics.size(); ++k)
    fprintf(stderr, "  %s %.5g", metrics[k].c_str(), values[k]);
  fflush(stderr);
}

/// The first element of output `name` after a step, as a double.
int readScalar(const ModelHandle &h, const std::string &name, double &value) {
  nncc_error err;
  nncc_dtype dt;
  int32_t rank;
  const int64_t *shape;
  const void *data;
  if (h.abi->get_output(h.model, name.c_str(), &dt, &rank, &shape, &data, &err) != NNCC_OK)
    return fail(err.message);
  value = elementAsDouble(dt, data, 0);
  return 0;
}

/// The classification metrics --metrics may ask for, in their order.
const char *const kMetricNames[] = {"accuracy", "macro_f1", "micro_f1", "macro_precision",
                                    "macro_recall"};

/// --metrics as resolved against the signature: the chosen metrics, the
/// logits output and the class-target input.
struct MetricsSpec {
  std::vector<std::string> names;
  std::string logits, targets;
  size_t targetIndex = 0;      // in sig.inputs (and TrainData::tensors)
  std::string limit;           // the number of classes: a size or a dim name
  std::vector<int64_t> exempt; // targets that count as none (ignore_index)
  /// Binary targets (a bce_with_logits'): one yes/no per label, predicted
  /// by logit > 0; `limit` is the number of labels.
  bool multiLabel = false;
  bool active() const { return !names.empty(); }
};

/// A confusion matrix accumulated over a whole data set. Single-label:
/// classes x classes counts. Multi-label: per label the 2 x 2 counts
/// [[tn, fp], [fn, tp]] (sklearn's multilabel_confusion_matrix), and the
/// samples whose labels all match.
struct ClassMetrics {
  int64_t classes = 0;
  bool multiLabel = false;
  std::vector<int64_t> confusion; // [target * classes + predicted], or [label * 4 + 2 t + p]
  int64_t counted = 0, ignored = 0, exact = 0;
  void reset(int64_t c, bool multi = false) {
    classes = c;
    multiLabel = multi;
    confusion.assign(size_t(multi ? 4 * c : c * c), 0);
    counted = ignored = exact = 0;
  }
  int64_t at(int64_t t, int64_t p) const { return confusion[size_t(t * classes + p)]; }
  /// Multi-label: label c's count of (target t, prediction p), t, p in {0, 1}.
  int64_t label(int64_t c, int t, int p) const { return confusion[size_t(4 * c + 2 * t + p)]; }
  int64_t tp(int64_t c) const { return multiLabel ? label(c, 1, 1) : at(c, c); }
  int64_t support(int64_t c) const {
    if (multiLabel)
      return label(c, 1, 0) + label(c, 1, 1);
    int64_t s = 0;
    for (int64_t p = 0; p < classes; ++p)
      s += at(c, p);
    return s;
  }
  int64_t predicted(int64_t c) const {
    if (multiLabel)
      return label(c, 0, 1) + label(c, 1, 1);
    int64_t s = 0;
    for (int64_t t = 0; t < classes; ++t)
      s += at(t, c);
    return s;
  }
  static double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }
  double precision(int64_t c) const { return ratio(tp(c), predicted(c)); }
  double recall(int64_t c) const { return ratio(tp(c), support(c)); }
  double f1(int64_t c) const {
    return ratio(2.0 * tp(c), double(predicted(c)) + double(support(c)));
  }
  /// The mean of `f` over the classes that occur as a target or a
  /// prediction (sklearn's labels of y_true and y_pred); multi-label: over
  /// every label (sklearn's columns).
  template <typename F> double macro(F f) const {
    double sum = 0;
    int64_t n = 0;
    for (int64_t c = 0; c < classes; ++c)
      if (multiLabel || support(c) > 0 || predicted(c) > 0) {
        sum += f(c);
        ++n;
      }
    return ratio(sum, double(n));
  }
  double value(llvm::StringRef name) const {
    int64_t hits = 0;
    for (int64_t c = 0; c < classes; ++c)
      hits += tp(c);
    if (name == "accuracy") // multi-label: all labels right (subset accuracy)
      return ratio(double(multiLabel ? exact : hits), double(counted));
    if (name == "micro_f1" && multiLabel) { // 2 tp / (2 tp + fp + fn) over every label
      int64_t errors = 0;
      for (int64_t c = 0; c < classes; ++c)
        errors += label(c, 0, 1) + label(c, 1, 0);
      return ratio(2.0 * double(hits), 2.0 * double(hits) + double(errors));
    }
    if (name == "micro_f1") // single-label: every miss is one fp and one fn
      return ratio(2.0 * double(hits), 2.0 * double(counted));
    if (name == "macro_f1")
      return macro([&](int64_t c) { return f1(c); });
    if (name == "macro_precision")
      return macro([&](int64_t c) { return precision(c); });
    return macro([&](int64_t c) { return recall(c); });
  }
};

/// Parses --metrics and --best-by (before any work).
int parseMetrics(MetricsSpec &spec, bool training) {
  spec.names.clear();
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(metricsOpt).split(parts, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef p : parts) {
    p = p.trim();
    if (p == "classification") {
      for (const char *n : kMetricNames)
        if (!llvm::is_contained(spec.names, n))
          spec.names.push_back(n);
      continue;
    }
    if (!llvm::is_contained(kMetricNames, p))
      return fail("--metrics: unknown metric '" + p +
                  "' (known: accuracy, macro_f1, micro_f1, macro_precision, macro_recall, "
                  "classification)");
    if (!llvm::is_contained(spec.names, p))
      spec.names.push_back(p.str());
  }
  if (metricsOpt.getNumOccurrences() && spec.names.empty())
    return fail("--metrics: no metric named (known: accuracy, macro_f1, micro_f1, "
                "macro_precision, macro_recall, classification)");
  if (!spec.active()) {
    for (const char *flag : {"logits", "targets", "metrics-json"}) {
      bool given = llvm::StringRef(flag) == "logits"    ? logitsOpt.getNumOccurrences()
                   : llvm::StringRef(flag) == "targets" ? targetsOpt.getNumOccurrences()
                                                        : metricsJson.getNumOccurrences();
      if (given)
        return fail(llvm::Twine("--") + flag +
                    " goes with the classification metrics: add --metrics LIST");
    }
  }
  if (training) {
    if (spec.active() && validationFile.empty())
      return fail("--metrics are measured on the validation set: add --validation "
                  "V.safetensors");
    llvm::StringRef by = bestBy;
    if (bestBy.getNumOccurrences() && validationFile.empty())
      return fail("--best-by compares validation epochs: add --validation V.safetensors");
    if (by != "val_loss") {
      llvm::StringRef m = by;
      if (!m.consume_front("val_") || !llvm::is_contained(kMetricNames, m))
        return fail("--best-by '" + by +
                    "': expected val_loss or val_ and a classification metric "
                    "(val_accuracy, val_macro_f1, ...)");
      if (!llvm::is_contained(spec.names, m))
        return fail("--best-by " + by + ": add " + m + " to --metrics");
    }
  }
  return 0;
}

/// Finds the logits output and the class-target input of --metrics in the
/// signature and checks their shapes agree.
int resolveMetrics(const ModelSignature &sig, MetricsSpec &spec) {
  if (!spec.active())
    return 0;
  // Class targets (a cross-entropy's) first, else binary ones (multi-label).
  auto targetsOf = [&](InputRole role) {
    std::vector<size_t> found;
    for (size_t i = 0; i < sig.inputs.size(); ++i)
      if (targetsOpt.empty() ? sig.inputs[i].role == role : sig.inputs[i].name == targetsOpt)
        found.push_back(i);
    return found;
  };
  std::vector<size_t> targets = targetsOf(InputRole::ClassTargets);
  if (targetsOpt.empty() && targets.empty())
    targets = targetsOf(InputRole::BinaryTargets);
  if (!targetsOpt.empty()) {
    if (targets.empty())
      return fail("--targets: model '" + sig.model + "' has no input '" + targetsOpt + "'");
    InputRole role = sig.inputs[targets[0]].role;
    if (role != InputRole::ClassTargets && role != InputRole::BinaryTargets)
      return fail("--targets: input '" + targetsOpt + "' of model '" + sig.model + "' is " +
                  signatureString(sig.inputs[targets[0]]) +
                  ", not class targets (a cross-entropy's) or binary targets (a "
                  "binary_cross_entropy_with_logits')");
  } else if (targets.empty()) {
    return fail("--metrics: model '" + sig.model +
                "' has no class-target input (a cross-entropy's targets) or binary targets (a "
                "binary_cross_entropy_with_logits') to measure against");
  } else if (targets.size() > 1) {
    return fail("--metrics: model '" + sig.model +
                "' has several target inputs of one kind: name one with --targets");
  }
  const TensorSignature &t = sig.inputs[targets[0]];
  spec.targetIndex = targets[0];
  spec.targets = t.name;
  spec.multiLabel = t.role == InputRole::BinaryTargets;
  if (spec.multiLabel && t.dims.empty())
    return fail("--metrics: binary targets '" + t.name + "' are a scalar; multi-label metrics "
                "need a label axis (e.g. [B, L])");
  spec.limit = spec.multiLabel ? t.dims.back() : t.limit;
  spec.exempt = t.exempt;
  // Logits: the targets' dims and the classes (single-label), or the same
  // dims as the targets (multi-label: one logit per label).
  const size_t lead = spec.multiLabel ? t.dims.size() - 1 : t.dims.size();
  auto fits = [&](const TensorSignature &o) {
    if (o.dims.size() != lead + 1 || o.dims.back() != spec.limit)
      return false;
    for (size_t k = 0; k < lead; ++k)
      if (o.dims[k] != t.dims[k])
        return false;
    return true;
  };
  std::string expected = "[";
  for (size_t k = 0; k < lead; ++k)
    expected += t.dims[k] + ", ";
  expected += spec.limit + "]";
  if (!logitsOpt.empty()) {
    const TensorSignature *o = nullptr;
    for (const TensorSignature &x : sig.outputs)
      if (x.name == logitsOpt)
        o = &x;
    if (!o)
      return fail("--logits: model '" + sig.model + "' has no output '" + logitsOpt + "'");
    if (!(o->dtype == "F32" || o->dtype == "F64" || o->dtype == "BF16") || !fits(*o))
      return fail("--logits: output '" + logitsOpt + "' is " + signatureString(*o) +
                  ", expected float " + expected + " for targets '" + t.name + "' (" +
                  signatureString(t) + ", " + spec.limit +
                  (spec.multiLabel ? " labels)" : " classes)"));
    spec.logits = o->name;
    return 0;
  }
  std::vector<std::string> found;
  for (const TensorSignature &o : sig.outputs)
    if ((o.dtype == "F32" || o.dtype == "F64" || o.dtype == "BF16") && fits(o))
      found.push_back(o.name);
  if (found.empty())
    return fail("--metrics: model '" + sig.model + "' has no float output " + expected +
                " (logits for targets '" + t.name + "'); add one or name it with --logits");
  if (found.size() > 1)
    return fail("--metrics: model '" + sig.model + "' has several outputs shaped " + expected +
                " (" + llvm::join(found, ", ") + "): name the logits with --logits");
  spec.logits = found[0];
  return 0;
}

/// The number of classes of `spec` for `data`'s binding.
int metricsClasses(const ModelSignature &sig, const MetricsSpec &spec,
                   const std::map<std::string, int64_t> &dims, int64_t &classes) {
  if (!llvm::StringRef(spec.limit).getAsInteger(10, classes))
    return 0;
  auto it = dims.find(spec.limit);
  if (it == dims.end())
    return fail("--metrics: the number of classes of '" + spec.targets + "' (" + spec.limit +
                ") is not set by the data");
  classes = it->second;
  return 0;
}

/// accumulateMetrics for binary targets: label c of a row is predicted yes
/// when its logit is > 0 (sigmoid > 0.5; NaN: no), and is yes when its
/// target is >= 0.5.
int accumulateMultiLabel(const MetricsSpec &spec, const DataTensor &t, const char *targets,
                         int64_t lo, int64_t n, nncc_dtype dt, const void *logits, int32_t rank,
                         const int64_t *shape, uint64_t numel, ClassMetrics &cm) {
  const int64_t L = cm.classes;
  const uint64_t perSample = t.rowBytes / nncc_dtype_size(t.dtype);
  if (rank < 1 || shape[rank - 1] != L || numel != uint64_t(n) * perSample)
    return fail("--metrics: output '" + spec.logits + "' has shape " +
                shapeString(std::vector<int64_t>(shape, shape + rank)) + ", expected " +
                std::to_string(uint64_t(n) * perSample / uint64_t(L)) + " rows of " +
                std::to_string(L) + " labels");
  for (uint64_t row = 0; row < numel / uint64_t(L); ++row) {
    bool allRight = true;
    for (int64_t c = 0; c < L; ++c) {
      const uint64_t i = row * uint64_t(L) + uint64_t(c);
      const int yes = elementAsDouble(t.dtype, targets, uint64_t(lo) * perSample + i) >= 0.5;
      const int said = elementAsDouble(dt, logits, i) > 0.0;
      ++cm.confusion[size_t(4 * c + 2 * yes + said)];
      allRight &= yes == said;
    }
    cm.exact += allRight;
    ++cm.counted;
  }
  return 0;
}

/// Adds the batch of `n` rows from row `lo` of `val` (after forward) to `cm`:
/// the argmax of the logits' last axis (the first of equal maxima, NaN the
/// largest, as torch.argmax) against the targets, exempt targets skipped.
int accumulateMetrics(const ModelHandle &h, const MetricsSpec &spec, TrainData &val,
                      int64_t lo, int64_t n, ClassMetrics &cm) {
  nncc_error err;
  nncc_dtype dt;
  int32_t rank;
  const int64_t *shape;
  const void *data;
  if (h.abi->get_output(h.model, spec.logits.c_str(), &dt, &rank, &shape, &data, &err) !=
      NNCC_OK)
    return fail(llvm::Twine("--metrics: ") + err.message);
  const DataTensor &t = val.tensors[spec.targetIndex];
  const uint64_t esize = nncc_dtype_size(t.dtype);
  const uint64_t perRow = t.rowBytes / esize;
  uint64_t numel = 1;
  for (int32_t k = 0; k < rank; ++k)
    numel *= (uint64_t)shape[k];
  const int64_t C = cm.classes;
  if (cm.multiLabel)
    return accumulateMultiLabel(spec, t, val.tensors[spec.targetIndex].data(), lo, n, dt,
                                data, rank, shape, numel, cm);
  if (rank < 1 || shape[rank - 1] != C || numel != uint64_t(n) * perRow * uint64_t(C))
    return fail("--metrics: output '" + spec.logits + "' has shape " +
                shapeString(std::vector<int64_t>(shape, shape + rank)) + ", expected " +
                std::to_string(n * (int64_t)perRow) + " rows of " + std::to_string(C) +
                " classes");
  const char *rows = const_cast<TrainData &>(val).tensors[spec.targetIndex].data();
  for (uint64_t i = 0; i < uint64_t(n) * perRow; ++i) {
    const uint64_t e = uint64_t(lo) * perRow + i;
    int64_t target = (int64_t)elementAsDouble(t.dtype, rows, e);
    if (target < 0 || target >= C) { // checkDataValues admitted only exempt ones
      ++cm.ignored;
      continue;
    }
    int64_t best = 0;
    double bestV = elementAsDouble(dt, data, i * C);
    for (int64_t c = 1; c < C && !std::isnan(bestV); ++c) {
      double v = elementAsDouble(dt, data, i * C + c);
      if (std::isnan(v) || v > bestV) {
        bestV = v;
        best = c;
      }
    }
    ++cm.confusion[size_t(target * C + best)];
    ++cm.counted;
  }
  return 0;
}

/// `v` for JSON: 17 digits, null when not finite.
std::string jsonNumber(double v) {
  if (!std::isfinite(v))
    return "null";
  char buf[40];
  snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

/// The JSON object of one evaluation: the loss, the metrics, the per-class
/// figures and the confusion matrix (rows: targets, columns: predictions).
std::string metricsEntryJson(const ClassMetrics &cm, double loss, llvm::StringRef indent) {
  std::string s;
  auto list = [&](auto f) {
    std::string l = "[";
    for (int64_t c = 0; c < cm.classes; ++c)
      l += (c ? ", " : "") + f(c);
    return l + "]";
  };
  s += std::string(indent) + "\"samples\": " + std::to_string(cm.counted) + ",\n";
  s += std::string(indent) + "\"ignored\": " + std::to_string(cm.ignored) + ",\n";
  s += std::string(indent) + "\"loss\": " + jsonNumber(loss) + ",\n";
  for (const char *n : kMetricNames)
    s += std::string(indent) + "\"" + n + "\": " + jsonNumber(cm.value(n)) + ",\n";
  s += std::string(indent) + "\"precision\": " +
       list([&](int64_t c) { return jsonNumber(cm.precision(c)); }) + ",\n";
  s += std::string(indent) + "\"recall\": " +
       list([&](int64_t c) { return jsonNumber(cm.recall(c)); }) + ",\n";
  s += std::string(indent) + "\"f1\": " + list([&](int64_t c) { return jsonNumber(cm.f1(c)); }) +
       ",\n";
  s += std::string(indent) + "\"support\": " +
       list([&](int64_t c) { return std::to_string(cm.support(c)); }) + ",\n";
  s += std::string(indent) + "\"confusion\": [";
  for (int64_t t = 0; t < cm.classes; ++t) {
    if (cm.multiLabel) // label t: [[tn, fp], [fn, tp]]
      s += std::string(t ? ", " : "") + "[[" + std::to_string(cm.label(t, 0, 0)) + ", " +
           std::to_string(cm.label(t, 0, 1)) + "], [" + std::to_string(cm.label(t, 1, 0)) +
           ", " + std::to_string(cm.label(t, 1, 1)) + "]]";
    else
      s += (t ? ", " : "") + list([&](int64_t p) { return std::to_string(cm.at(t, p)); });
  }
  s += "]";
  return s;
}

/// The header of a --metrics-json file.
std::string metricsJsonHead(const ModelSignature &sig, const MetricsSpec &spec,
                            int64_t classes) {
  std::string s = "{\n  \"model\": \"" + sig.model + "\",\n  \"logits\": \"" + spec.logits +
                  "\",\n  \"targets\": \"" + spec.targets + "\",\n  \"" +
                  (spec.multiLabel ? "labels" : "classes") + "\": " + std::to_string(classes) +
                  ",\n";
  return s;
}

/// The loss and `metrics` on `val` in inference mode: per batch of `B`
/// samples in data order, weighted by the batch's size.
/// With `cm`, also the confusion matrix of `spec` over all of `val`.
int evaluate(const ModelHandle &h, TrainData &val, int64_t B,
             const std::vector<std::string> &metrics, std::vector<double> &means,
             const MetricsSpec *spec = nullptr, ClassMetrics *cm = nullptr) {
  const int64_t N = val.numSamples;
  std::vector<int64_t> order(N);
  std::iota(order.begin(), order.end(), 0);
  means.assign(metrics.size() + 1, 0.0);
  nncc_error err;
  for (int64_t lo = 0; lo < N; lo += B) {
    int64_t n = std::min(N, lo + B) - lo;
    if (int rc = setBatch(h, val, order, lo, n))
      return rc;
    // Random ops of the forward (ELECTRA's masks and samples) draw by the
    // sample's row in the validation set, whatever the batch.
    if (h.abi->set_sample_offset(h.model, lo, &err) != NNCC_OK ||
        h.abi->forward(h.model, &err) != NNCC_OK)
      return fail(llvm::Twine("validation: ") + err.message);
    for (size_t k = 0; k <= metrics.size(); ++k) {
      double v = 0;
      if (int rc = readScalar(h, k == 0 ? std::string("loss") : metrics[k - 1], v))
        return rc;
      means[k] += v * double(n) / double(N);
    }
    if (cm)
      if (int rc = accumulateMetrics(h, *spec, val, lo, n, *cm))
        return rc;
  }
  if (h.abi->set_sample_offset(h.model, 0, &err) != NNCC_OK)
    return fail(llvm::Twine("validation: ") + err.message);
  return 0;
}

/// Writes `path` with `save` (save_weights or save_train_state), which
/// writes a private temporary beside it and renames it into place, so that
/// an interrupted write leaves the previous file; errors start with `what`.
int writeAside(const ModelHandle &h, const std::string &path, llvm::StringRef what,
               nncc_status (*save)(nncc_model *, const char *, nncc_error *)) {
  nncc_error err;
  if (save(h.model, path.c_str(), &err) != NNCC_OK)
    return fail(what + ": " + err.message);
  return 0;
}

/// One optimizer step on rows perm[lo, lo + n): train_step, or with
/// --micro-batch M < n the micro-batches of at most M rows through
/// accumulate_gradients (weighted by their sizes) and apply_gradients.
/// `loss` and `values` (the metrics) are the batch's sample-weighted means.
int trainBatch(const ModelHandle &h, nncc_train_config &cfg, TrainData &data,
               const std::vector<int64_t> &perm, int64_t lo, int64_t n, int64_t step,
               const std::vector<std::string> &metrics, double &loss,
               std::vector<double> &values) {
  nncc_error err;
  const int64_t M = microBatch > 0 ? std::min<int64_t>(microBatch, n) : n;
  loss = 0.0;
  std::fill(values.begin(), values.end(), 0.0);
  for (int64_t off = 0; off < n; off += M) {
    const int64_t m = std::min(n - off, M);
    if (int rc = setBatch(h, data, perm, lo + off, m))
      return rc;
    // Micro-batch rows draw their masks and samples as row off + r of the
    // batch (the whole batch's draws: docs/training.md, "Random streams").
    if (h.abi->set_sample_offset(h.model, off, &err) != NNCC_OK)
      return fail(llvm::Twine("train_step ") + std::to_string(step) + ": " + err.message);
    nncc_status s = M == n ? h.abi->train_step(h.model, &cfg, &err)
                           : h.abi->accumulate_gradients(h.model, double(m), &err);
    if (s != NNCC_OK)
      return fail(llvm::Twine("train_step ") + std::to_string(step) + ": " + err.message);
    const double w = double(m) / double(n);
    double v = 0;
    if (int rc = readScalar(h, "loss", v))
      return rc;
    loss += w * v;
    for (size_t k = 0; k < metrics.size(); ++k) {
      if (int rc = readScalar(h, metrics[k], v))
        return rc;
      values[k] += w * v;
    }
  }
  if (M < n && h.abi->apply_gradients(h.model, &cfg, &err) != NNCC_OK)
    return fail(llvm::Twine("train_step ") + std::to_string(step) + ": " + err.message);
  return 0;
}

/// --save-state after `step` steps ('{step}' in the path replaced), with the
/// log flushed first: a state on disk never runs ahead of its log.
int saveTrainState(const ModelHandle &h, FILE *log, int64_t step) {
  if (log)
    fflush(log);
  std::string path = saveState;
  for (size_t at = path.find("{step}"); at != std::string::npos; at = path.find("{step}", at))
    path.replace(at, 6, std::to_string(step));
  return writeAside(h, path, "--save-state", h.abi->save_train_state);
}

/// The best validation loss so far and what --keep-best saved.
struct BestEpoch {
  double value = INFINITY; // of --best-by, negated when the highest is best
  int64_t epoch = 0;
  int64_t sinceBest = 0; // epochs validated since the best one
};

/// What the epochs report of --metrics: the spec, the confusion matrix of
/// each validation and the JSON entries so far.
struct EpochMetrics {
  const MetricsSpec *spec = nullptr;
  int64_t classes = 0;
  std::string jsonHead;
  std::vector<std::string> entries;
};

/// `v` for the CSV log, reading back as the run's value: 9 digits for f32
/// and bf16, 17 for f64.
std::string csvNumber(double v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.*g", trainPrecision == Precision::F64 ? 17 : 9, v);
  return std::string(buf);
}

/// What the epochs of trainLoop share: the run's inputs, its sizes, and
/// the step, the stop and the pending log row carried from step to step.
struct TrainRun {
  const ModelHandle &h;
  nncc_train_config &cfg;
  TrainData &data, &validation;
  const std::vector<std::string> &metrics;
  FILE *log;
  const std::string &outPath;
  BestEpoch &best;
  EpochMetrics &em;
  int64_t B = 0, stepsPerEpoch = 0;
  bool bar = false, validating = false;
  std::vector<std::string> classMetrics; // --metrics (of the validation)
  std::string pendingRow;      // the last step's log row, waiting for its validation
  std::string emptyValidation; // the commas of a row without the validation columns
  int64_t step = 0;
  bool stop = false;
};

/// One epoch's training figures: the last batch's metrics and the sums of
/// the batches' losses and metrics.
struct EpochTotals {
  std::vector<double> values, sums;
  double lossSum = 0.0;
  int64_t lossCount = 0;
};

/// The log row of step `r.step`: the row before it goes out with empty
/// validation columns, this one waits for the epoch's validation (written
/// at once without validation).
void logStep(TrainRun &r, int64_t epoch, double loss, const nncc_train_stats &st,
             const std::vector<double> &values) {
  if (!r.log)
    return;
  // With validation the row's last columns wait for the epoch's end.
  if (!r.pendingRow.empty())
    fprintf(r.log, "%s%s\n", r.pendingRow.c_str(), r.emptyValidation.c_str());
  r.pendingRow = std::to_string(epoch) + "," + std::to_string(r.step) + "," +
                 csvNumber(st.lr) + "," + csvNumber(loss) + "," + csvNumber(st.grad_norm);
  for (double v : values)
    r.pendingRow += "," + csvNumber(v);
  if (!r.validating) {
    fprintf(r.log, "%s\n", r.pendingRow.c_str());
    r.pendingRow.clear();
  }
}

/// The batches of `epoch` from `firstBatch` (rows of `perm`), one optimizer
/// step each: summed into `t`, logged, saved every --save-every steps and
/// drawn on the progress bar; --max-steps stops the run.
int trainEpochBatches(TrainRun &r, int64_t epoch, int64_t firstBatch,
                      const std::vector<int64_t> &perm, EpochTotals &t) {
  const int64_t N = r.data.numSamples;
  for (int64_t b = firstBatch; b < r.stepsPerEpoch; ++b) {
    int64_t lo = b * r.B, n = std::min(N, lo + r.B) - lo;
    double loss = 0;
    if (int rc = trainBatch(r.h, r.cfg, r.data, perm, lo, n, r.step + 1, r.metrics, loss,
                            t.values))
      return rc;
    ++r.step;
    for (size_t k = 0; k < r.metrics.size(); ++k)
      t.sums[k] += t.values[k];
    nncc_train_stats st;
    r.h.abi->train_stats(r.h.model, &st, nullptr);
    t.lossSum += loss;
    ++t.lossCount;
    logStep(r, epoch, loss, st, t.values);
    // --save-every: mid-epoch states (the epoch's end and a --max-steps
    // stop are saved below); the log is written up to this step first,
    // so that a run resumed from this state continues it.
    if (saveEvery > 0 && r.step % saveEvery == 0 && b + 1 < r.stepsPerEpoch &&
        !(maxSteps > 0 && r.step >= maxSteps)) {
      if (r.log && !r.pendingRow.empty()) {
        fprintf(r.log, "%s%s\n", r.pendingRow.c_str(), r.emptyValidation.c_str());
        r.pendingRow.clear();
      }
      if (int rc = saveTrainState(r.h, r.log, r.step))
        return rc;
    }
    if (r.bar)
      progressBar(epoch, r.cfg.epochs, b, r.stepsPerEpoch, loss, r.metrics, t.values);
    if (maxSteps > 0 && r.step >= maxSteps) {
      r.stop = true;
      break;
    }
  }
  return 0;
}

/// The validation after `epoch`: the loss and metrics (`val`), the
/// classification metrics (`classVals`), their --metrics-json entry and the
/// last log row's validation columns.
int validateEpoch(TrainRun &r, int64_t epoch, std::vector<double> &val,
                  std::vector<double> &classVals) {
  EpochMetrics &em = r.em;
  ClassMetrics cm;
  cm.reset(em.classes, em.spec && em.spec->multiLabel);
  if (int rc = evaluate(r.h, r.validation,
                        microBatch > 0 ? std::min<int64_t>(microBatch, r.B) : r.B, r.metrics,
                        val, em.spec, em.spec ? &cm : nullptr))
    return rc;
  for (const std::string &m : r.classMetrics)
    classVals.push_back(cm.value(m));
  if (em.spec && !metricsJson.empty()) {
    em.entries.push_back("    {\n      \"epoch\": " + std::to_string(epoch) +
                         ",\n      \"step\": " + std::to_string(r.step) + ",\n" +
                         metricsEntryJson(cm, val[0], "      ") + "\n    }");
    if (int rc = replaceFile(metricsJson,
                             em.jsonHead + "  \"epochs\": [\n" + llvm::join(em.entries, ",\n") +
                                 "\n  ]\n}\n",
                             "--metrics-json"))
      return rc;
  }
  if (r.log && !r.pendingRow.empty()) {
    fprintf(r.log, "%s", r.pendingRow.c_str());
    for (double v : val)
      fprintf(r.log, ",%s", csvNumber(v).c_str());
    for (double v : classVals)
      fprintf(r.log, ",%s", csvNumber(v).c_str());
    fprintf(r.log, "\n");
    r.pendingRow.clear();
  }
  return 0;
}

/// The epoch's line on stdout, without its end: the training means, the
/// validation's figures, the steps and the seconds.
void printEpoch(const TrainRun &r, int64_t epoch, const EpochTotals &t,
                const std::vector<double> &val, const std::vector<double> &classVals,
                double secs) {
  const std::vector<std::string> &metrics = r.metrics;
  const double count = double(std::max<int64_t>(1, t.lossCount));
  llvm::outs() << llvm::format("epoch %lld/%lld  loss %.6g", (long long)epoch,
                               (long long)r.cfg.epochs, t.lossSum / count);
  for (size_t k = 0; k < metrics.size(); ++k)
    llvm::outs() << "  " << metrics[k] << llvm::format(" %.6g", t.sums[k] / count);
  for (size_t k = 0; k < val.size(); ++k)
    llvm::outs() << "  val_" << (k == 0 ? std::string("loss") : metrics[k - 1])
                 << llvm::format(" %.6g", val[k]);
  for (size_t k = 0; k < classVals.size(); ++k)
    llvm::outs() << "  val_" << r.classMetrics[k] << llvm::format(" %.6g", classVals[k]);
  llvm::outs() << llvm::format("  (%lld steps, %.2f s)", (long long)t.lossCount, secs);
}

/// After a validated epoch: the best epoch by --best-by (its weights saved
/// with --keep-best), and the --patience stop.
int trackBest(TrainRun &r, int64_t epoch, const std::vector<double> &val,
              const std::vector<double> &classVals) {
  BestEpoch &best = r.best;
  // --best-by: val_loss (the lowest) or a classification metric (the
  // highest, negated here); ties keep the earlier epoch.
  double score = val[0];
  for (size_t k = 0; k < r.classMetrics.size(); ++k)
    if ("val_" + r.classMetrics[k] == bestBy)
      score = -classVals[k];
  bool improved = score < best.value;
  if (improved) {
    best = {score, epoch, 0};
    if (keepBest)
      if (int rc = writeAside(r.h, r.outPath, "saving weights", r.h.abi->save_weights))
        return rc;
  } else {
    ++best.sinceBest;
  }
  if (!trainQuiet && improved && keepBest)
    llvm::outs() << "  best, saved";
  if (patience > 0 && best.sinceBest >= patience) {
    r.stop = true;
    if (!trainQuiet)
      llvm::outs() << "\nearly stop: " << bestBy
                   << llvm::format(" has not improved for %lld "
                                   "epoch(s); best %.6g at epoch %lld",
                                   (long long)best.sinceBest,
                                   bestBy == "val_loss" ? best.value : -best.value,
                                   (long long)best.epoch);
  }
  return 0;
}

/// The epochs: shuffled batches through train_step, logged. A resumed run
/// starts after `startStep` steps, with the permutations of the epochs
/// before drawn again.
int trainLoop(const ModelHandle &h, nncc_train_config &cfg, TrainData &data,
              TrainData &validation, const std::vector<std::string> &metrics, FILE *log,
              int64_t startStep, const std::string &outPath, BestEpoch &best,
              EpochMetrics &em) {
  const int64_t N = data.numSamples;
  const int64_t B = std::min<int64_t>(cfg.batch, N);
  TrainRun r{h, cfg, data, validation, metrics, log, outPath, best, em};
  r.B = B;
  r.stepsPerEpoch = (N + B - 1) / B;
  r.bar = progressOpt || isatty(2);
  std::vector<int64_t> perm(N);
  std::iota(perm.begin(), perm.end(), 0);
  std::mt19937_64 rng((uint64_t)cfg.seed * 0x9E3779B97F4A7C15ull + 12345);
  r.step = startStep;
  r.stop = maxSteps > 0 && r.step >= maxSteps;
  r.validating = validation.numSamples > 0;
  if (em.spec)
    r.classMetrics = em.spec->names;
  r.emptyValidation.assign(r.validating ? metrics.size() + 1 + r.classMetrics.size() : 0, ',');
  const int64_t firstEpoch = startStep / r.stepsPerEpoch + 1;
  for (int64_t epoch = 1; epoch < firstEpoch && !noShuffle; ++epoch)
    std::shuffle(perm.begin(), perm.end(), rng);
  for (int64_t epoch = firstEpoch; epoch <= cfg.epochs && !r.stop; ++epoch) {
    if (!noShuffle)
      std::shuffle(perm.begin(), perm.end(), rng);
    EpochTotals t;
    t.values.assign(metrics.size(), 0.0);
    t.sums.assign(metrics.size(), 0.0);
    auto t0 = std::chrono::steady_clock::now();
    const int64_t firstBatch = epoch == firstEpoch ? startStep % r.stepsPerEpoch : 0;
    if (int rc = trainEpochBatches(r, epoch, firstBatch, perm, t))
      return rc;
    if (r.bar)
      fprintf(stderr, "\n");
    double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::vector<double> val, classVals;
    if (r.validating && t.lossCount > 0)
      if (int rc = validateEpoch(r, epoch, val, classVals))
        return rc;
    if (!trainQuiet)
      printEpoch(r, epoch, t, val, classVals, secs);
    if (!val.empty())
      if (int rc = trackBest(r, epoch, val, classVals))
        return rc;
    if (!trainQuiet)
      llvm::outs() << "\n";
    if (!saveState.empty() && t.lossCount > 0)
      if (int rc = saveTrainState(h, log, r.step))
        return rc;
  }
  return 0;
}

/// The binding of `batch` samples (the data's count when 0 or larger) with
/// the data's other sizes.
std::map<std::string, int64_t> dataBinding(const ModelSignature &sig, const TrainData &data,
                                           int64_t batch) {
  std::map<std::string, int64_t> dims;
  for (size_t i = 0; i < sig.inputs.size() && i < data.tensors.size(); ++i)
    for (size_t k = 0; k < sig.inputs[i].dims.size(); ++k)
      dims.emplace(sig.inputs[i].dims[k],
                   k == 0 ? std::min<int64_t>(batch > 0 ? batch : data.numSamples,
                                              data.numSamples)
                          : data.tensors[i].shape[k]);
  return dims;
}

/// The values of `data` in the ranges their inputs' roles admit (token ids,
/// classes, lengths), checked once when the data is loaded.
int checkDataValues(const ModelSignature &sig, TrainData &data) {
  std::map<std::string, int64_t> dims = dataBinding(sig, data, 0);
  for (size_t i = 0; i < sig.inputs.size() && i < data.tensors.size(); ++i) {
    DataTensor &t = data.tensors[i];
    if (int rc = checkInputValues(sig.inputs[i], t.dtype, t.shape, t.data(), dims, data.path))
      return rc;
  }
  return 0;
}

/// --micro-batch auto: as few micro-batches of a batch as fit --memory-budget
/// with the training step keeping every residual, of even sizes; 1 sample
/// when not even that fits (the budget's rematerialisation then plans it)
/// or for `min`. A size fits when one of `forms` (the step lowered without
/// a budget, with the loss heads as written and fused) plans within the
/// budget keeping everything: the budget's search then finds a plan that
/// recomputes nothing. Sets microBatch.
int autoMicroBatch(llvm::ArrayRef<mlir::ModuleOp> forms, const ModelSignature &sig,
                   const TrainData &data, int64_t batch, Precision precision) {
  std::string error;
  mlir::FailureOr<nncc::MemoryBudget> budget = nncc::MemoryBudget::parse(trainBudget, error);
  if (mlir::failed(budget))
    return fail("--memory-budget: " + error);
  const int64_t most = std::min<int64_t>(batch > 0 ? batch : data.numSamples, data.numSamples);
  auto peakAt = [&](int64_t m) -> mlir::FailureOr<uint64_t> {
    llvm::StringMap<int64_t> binding;
    for (const auto &[name, size] : dataBinding(sig, data, m))
      binding[name] = size;
    uint64_t least = UINT64_MAX;
    for (mlir::ModuleOp form : forms) {
      mlir::FailureOr<nncc::target::MemoryPlan> plan = nncc::target::planMemory(
          form, binding, nncc::target::PlanMode::Training, realBytes(precision),
          trainTarget);
      if (mlir::failed(plan))
        return mlir::failure();
      least = std::min(least, plan->peakBytes);
    }
    return least;
  };
  // The plan grows with the micro-batch: the largest that fits, by bisection.
  int64_t lo = 0, hi = most;
  uint64_t fitPeak = 0;
  while (budget->kind == nncc::MemoryBudget::Kind::Bytes && lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    mlir::FailureOr<uint64_t> peak = peakAt(mid);
    if (mlir::failed(peak))
      return 1;
    if (*peak <= budget->bytes) {
      lo = mid;
      fitPeak = *peak;
    } else {
      hi = mid - 1;
    }
  }
  if (lo == 0) {
    microBatch = 1;
    if (!trainQuiet)
      llvm::outs() << "--micro-batch auto: 1 (not even one sample's step fits "
                   << budget->str() << " keeping every residual: residuals are recomputed)\n";
    return 0;
  }
  // As many micro-batches as the largest fitting size needs, evened out
  // (64 rows under a limit of 36: two of 32, not 36 + 28).
  const int64_t count = (most + lo - 1) / lo;
  microBatch = (most + count - 1) / count;
  if (microBatch != lo) {
    mlir::FailureOr<uint64_t> peak = peakAt(microBatch);
    if (mlir::failed(peak))
      return 1;
    fitPeak = *peak;
  }
  if (!trainQuiet)
    llvm::outs() << "--micro-batch auto: " << microBatch << " (" << count
                 << " micro-batch(es) per batch of " << most
                 << "; keeping every residual, its step plans " << nncc::formatBytes(fitPeak)
                 << " of the " << budget->str() << " budget)\n";
  return 0;
}

/// `v` as printf's %g.
std::string formatG(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// The numeric options, refused (never replaced by the clause's values)
/// when out of range.
int checkTrainOptions() {
  if (lrOpt.getNumOccurrences() && !(std::isfinite(lrOpt) && lrOpt > 0))
    return fail("--lr " + llvm::Twine(formatG(lrOpt)) +
                ": the learning rate must be a finite number > 0");
  if (seedOpt.getNumOccurrences() && seedOpt < 0)
    return fail("--seed " + std::to_string(seedOpt) + ": the seed must be >= 0");
  if (maxSteps.getNumOccurrences() && maxSteps < 1)
    return fail("--max-steps " + std::to_string(maxSteps) + ": expected at least 1 step");
  if (epochsOpt.getNumOccurrences() && (epochsOpt < 1 || epochsOpt > kMostEpochs))
    return fail("--epochs " + std::to_string(epochsOpt) + ": expected 1 to " +
                std::to_string(kMostEpochs));
  if (batchOpt.getNumOccurrences() && batchOpt < 1)
    return fail("--batch " + std::to_string(batchOpt) + ": expected at least 1 sample");
  return 0;
}

/// "a, b, c, ... and N more" for a list of names.
std::string nameList(const std::vector<std::string> &names, size_t shown = 8) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < shown; ++i)
    out += (i ? ", " : "") + names[i];
  if (names.size() > shown)
    out += ", ... and " + std::to_string(names.size() - shown) + " more";
  return out;
}

std::string shapeString(int32_t rank, const int64_t *dims) {
  std::string out = "[";
  for (int32_t i = 0; i < rank; ++i)
    out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + "]";
}

/// The tensors of a --weights file matched by name (after --weights-prefix)
/// against the parameters.
struct WeightsMatch {
  std::vector<nncc_tensor_view> views; // per parameter, where found
  std::vector<char> found;             // per parameter
  std::vector<std::string> unexpected, missing;
  size_t outside = 0, inside = 0; // tensors without and with the prefix
};

/// Matches the tensors of `file` (--weights `path`) with the parameters by
/// name; a matching name of another shape or dtype is an error.
int matchWeights(const nncc_model_abi *abi, nncc_safetensors *file, const std::string &path,
                 const std::string &prefix, WeightsMatch &m) {
  nncc_error err;
  llvm::StringMap<int32_t> paramIndex;
  for (int32_t i = 0; i < abi->num_params; ++i)
    paramIndex[abi->params[i].name] = i;
  m.views.resize(static_cast<size_t>(abi->num_params));
  m.found.assign(static_cast<size_t>(abi->num_params), 0);
  for (size_t k = 0, n = nncc_safetensors_count(file); k < n; ++k) {
    nncc_tensor_view v;
    if (nncc_safetensors_tensor_at(file, k, &v, &err) != NNCC_OK)
      return fail(llvm::Twine("--weights: ") + err.message);
    llvm::StringRef name(v.name);
    if (!name.consume_front(prefix)) {
      ++m.outside;
      continue;
    }
    ++m.inside;
    auto it = paramIndex.find(name);
    if (it == paramIndex.end()) {
      m.unexpected.push_back(name.str());
      continue;
    }
    int32_t i = it->second;
    const nncc_tensor_info &info = abi->params[i];
    // f64 and bf16 builds also take f32 tensors (load_weights converts them).
    bool dtypeOk = v.dtype == info.dtype ||
                   (v.dtype == NNCC_DTYPE_F32 &&
                    (info.dtype == NNCC_DTYPE_F64 || info.dtype == NNCC_DTYPE_BF16));
    bool shapeOk = v.rank == info.rank;
    for (int32_t d = 0; shapeOk && d < v.rank; ++d)
      shapeOk = info.dims[d] < 0 || info.dims[d] == v.shape[d];
    if (!dtypeOk || !shapeOk)
      return fail("--weights '" + path + "': parameter '" + info.name + "'" +
                  (prefix.empty() ? std::string() : " (tensor '" + std::string(v.name) + "')") +
                  ": expected " + nncc_dtype_name(info.dtype) + " " +
                  shapeString(info.rank, info.dims) + ", got " + nncc_dtype_name(v.dtype) +
                  " " + shapeString(v.rank, v.shape));
    m.views[i] = v;
    m.found[i] = 1;
  }
  for (int32_t i = 0; i < abi->num_params; ++i)
    if (!m.found[i])
      m.missing.push_back(abi->params[i].name);
  return 0;
}

/// Refuses a --weights-prefix that matches nothing and, without
/// --partial-weights, a missing or unexpected name; notes the skipped
/// tensors and, with --partial-weights, what was loaded and what was not.
int reportWeightsMatch(const nncc_model_abi *abi, const WeightsMatch &m,
                       const std::string &path, const std::string &prefix) {
  const std::vector<std::string> &missing = m.missing, &unexpected = m.unexpected;
  if (!prefix.empty() && m.inside == 0)
    return fail("--weights-prefix '" + prefix + "': no tensor of '" + path +
                "' starts with it");
  const std::string prefixNote =
      prefix.empty() ? std::string() : " (after --weights-prefix '" + prefix + "')";
  if (!partialWeights) {
    if (!missing.empty() || !unexpected.empty()) {
      std::string msg = "--weights '" + path + "' does not match the model's parameters" +
                        prefixNote + ":";
      if (!missing.empty())
        msg += " missing " + std::to_string(missing.size()) + ": " + nameList(missing) + ";";
      if (!unexpected.empty())
        msg += " unexpected " + std::to_string(unexpected.size()) + ": " +
               nameList(unexpected) + ";";
      return fail(msg + " --partial-weights loads what matches and keeps the rest at their "
                        "initialisation");
    }
  }
  if (m.outside)
    llvm::errs() << "nncc: note: --weights-prefix '" << prefix << "': " << m.outside
                 << " tensor(s) without the prefix skipped\n";
  if (partialWeights) {
    llvm::errs() << "nncc: note: --partial-weights: loaded "
                 << (abi->num_params - missing.size()) << " of " << abi->num_params
                 << " parameters from '" << path << "'" << prefixNote << "\n";
    llvm::errs() << "nncc: note: missing (left at their initialisation): "
                 << (missing.empty() ? "none" : nameList(missing, missing.size())) << "\n";
    llvm::errs() << "nncc: note: unexpected (ignored): "
                 << (unexpected.empty() ? "none" : nameList(unexpected, unexpected.size()))
                 << "\n";
  }
  return 0;
}

/// Loads the init of every parameter from `seed` with the matched tensors
/// of `m` over it: one merged file that load_weights reads (through the
/// ABI: every target and precision).
int loadMergedWeights(ModelHandle &h, uint64_t seed, const WeightsMatch &m) {
  const nncc_model_abi *abi = h.abi;
  nncc_error err;
  if (nncc_status s = abi->init_weights(h.model, seed, &err); s != NNCC_OK)
    return fail(llvm::Twine("init_weights: ") + err.message);
  llvm::SmallString<128> initPath, mergedPath;
  int fd = -1;
  if (llvm::sys::fs::createTemporaryFile("nncc-init", "safetensors", fd, initPath))
    return fail("--weights: cannot create a temporary file");
  ::close(fd);
  if (llvm::sys::fs::createTemporaryFile("nncc-weights", "safetensors", fd, mergedPath)) {
    llvm::sys::fs::remove(initPath);
    return fail("--weights: cannot create a temporary file");
  }
  ::close(fd);
  llvm::scope_exit removeTemps([&] {
    llvm::sys::fs::remove(initPath);
    llvm::sys::fs::remove(mergedPath);
  });
  if (abi->save_weights(h.model, initPath.c_str(), &err) != NNCC_OK)
    return fail(llvm::Twine("--weights: saving the initial weights: ") + err.message);
  nncc_safetensors *initFile = nullptr;
  if (nncc_safetensors_open(initPath.c_str(), &initFile, &err) != NNCC_OK)
    return fail(llvm::Twine("--weights: ") + err.message);
  llvm::scope_exit closeInit([&] { nncc_safetensors_close(initFile); });
  nncc_safetensors_writer *w = nullptr;
  if (nncc_safetensors_writer_create(&w, &err) != NNCC_OK)
    return fail(llvm::Twine("--weights: ") + err.message);
  llvm::scope_exit destroyWriter([&] { nncc_safetensors_writer_destroy(w); });
  for (int32_t i = 0; i < abi->num_params; ++i) {
    const char *name = abi->params[i].name;
    nncc_tensor_view v = m.views[i];
    if (!m.found[i] && nncc_safetensors_find(initFile, name, &v, &err) != NNCC_OK)
      return fail(llvm::Twine("--weights: the initial weights: ") + err.message);
    if (nncc_safetensors_writer_add(w, name, v.dtype, v.rank, v.shape, v.data, v.nbytes,
                                    &err) != NNCC_OK)
      return fail(llvm::Twine("--weights: ") + err.message);
  }
  if (nncc_safetensors_writer_write(w, mergedPath.c_str(), &err) != NNCC_OK)
    return fail(llvm::Twine("--weights: ") + err.message);
  if (abi->load_weights(h.model, mergedPath.c_str(), &err) != NNCC_OK)
    return fail(llvm::Twine("--weights: ") + err.message);
  return 0;
}

/// The starting weights of nncc train: PyTorch's default init from `seed`
/// without --weights; with it, every parameter by name (strict: a missing
/// or an unexpected name is an error), or with --partial-weights the
/// parameters the file has on top of that init, reporting the missing and
/// unexpected names as torch's load_state_dict(strict=False). A matching
/// name of another shape or dtype is an error either way.
int loadTrainWeights(ModelHandle &h, uint64_t seed) {
  if (initWeights.empty())
    return h.initWeights("", seed);
  const std::string path = initWeights;
  const std::string prefix = weightsPrefix;
  nncc_error err;
  nncc_safetensors *file = nullptr;
  if (nncc_safetensors_open(path.c_str(), &file, &err) != NNCC_OK)
    return fail(llvm::Twine("--weights: ") + err.message);
  llvm::scope_exit closeFile([&] { nncc_safetensors_close(file); });
  // Map the file's names onto the parameters.
  WeightsMatch m;
  if (int rc = matchWeights(h.abi, file, path, prefix, m))
    return rc;
  if (int rc = reportWeightsMatch(h.abi, m, path, prefix))
    return rc;
  if (m.missing.empty() && prefix.empty())
    return h.initWeights(path, seed); // every parameter: load_weights as it is
  // The file's tensors (views into it: still open) over the init.
  return loadMergedWeights(h, seed, m);
}

/// Every file the run writes, checked before any work: folders that exist
/// and can be written, regular files, none of them a file the run reads,
/// and no two of them the same.
int checkTrainOutputs(const std::string &out) {
  std::vector<InputPath> reads = {{"the model", trainInput},
                                  {"--data", dataFile},
                                  {"--validation", validationFile},
                                  {"--weights", initWeights},
                                  {"--resume", resumeState},
                                  {"--freeze-file", freezeFile}};
  if (int rc = checkOutputPath("-o", out, reads))
    return rc;
  reads.push_back({"-o", out});
  if (!logFile.empty())
    if (int rc = checkOutputPath("--log", logFile, reads))
      return rc;
  reads.push_back({"--log", logFile});
  if (!metricsJson.empty()) {
    if (int rc = checkOutputPath("--metrics-json", metricsJson, reads))
      return rc;
    reads.push_back({"--metrics-json", metricsJson});
  }
  if (!saveState.empty()) {
    // The state may replace the one the run resumed from.
    llvm::ArrayRef<InputPath> others(reads);
    std::vector<InputPath> notResume;
    for (const InputPath &r : others)
      if (r.flag != "--resume")
        notResume.push_back(r);
    if (int rc = checkOutputPath("--save-state", saveState, notResume, "{step}"))
      return rc;
  }
  return 0;
}

/// The model as nncc train compiles it (the training pipeline down to nnk)
/// and its signature, with the context and sources they live in. The model
/// is built once (`nnModule`, the nn module of the source); every lowering
/// works on a copy.
struct TrainingModel {
  mlir::MLIRContext context;
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler{sourceMgr, &context};
  std::string source;
  mlir::OwningOpRef<mlir::ModuleOp> nnModule;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  ModelSignature sig;

  /// 0, or 1 after the diagnostics were printed.
  int load(llvm::StringRef path) {
    prepareContext(context);
    nnModule = loadModule(context, sourceMgr, path, &source);
    if (!nnModule)
      return 1;
    module = nnModule->clone();
    if (mlir::failed(runPipeline(*module, GradKind::Loss, /*trainMode=*/true,
                                 nncc::PipelineStage::NNK, path)))
      return 1;
    mlir::FailureOr<ModelSignature> s = getSignature(*module);
    if (mlir::failed(s))
      return 1;
    sig = std::move(*s);
    return 0;
  }
};

} // namespace

/// One --freeze pattern and where it came from ("--freeze" or "F:line").
struct FreezePattern {
  std::string text, where;
};

/// The name closest to `pattern` among the parameters' names and their
/// module prefixes followed by ".*" (the form --freeze is mostly given in).
std::string closestFreezeName(const ModelSignature &sig, llvm::StringRef pattern) {
  std::string best;
  unsigned bestDistance = ~0u;
  auto consider = [&](llvm::StringRef candidate) {
    unsigned d = pattern.edit_distance(candidate, /*AllowReplacements=*/true);
    if (d < bestDistance)
      bestDistance = d, best = candidate.str();
  };
  for (const TensorSignature &p : sig.params) {
    llvm::StringRef name(p.name);
    consider(name);
    for (size_t dot = name.find('.'); dot != llvm::StringRef::npos;
         dot = name.find('.', dot + 1))
      consider((name.substr(0, dot) + ".*").str());
  }
  return best;
}

/// --freeze and --freeze-file against the model's parameters: `frozen` gets
/// one flag per parameter (sig order). A pattern that matches nothing, a bad
/// pattern and freezing every parameter are errors (one line).
int resolveFreeze(const ModelSignature &sig, std::vector<char> &frozen) {
  std::vector<FreezePattern> patterns;
  for (const std::string &p : freezeOpt)
    patterns.push_back({p, "--freeze"});
  if (!freezeFile.empty()) {
    auto buf = llvm::MemoryBuffer::getFile(freezeFile, /*IsText=*/true);
    if (!buf)
      return fail("--freeze-file: cannot read '" + freezeFile + "': " +
                  buf.getError().message());
    llvm::SmallVector<llvm::StringRef> lines;
    (*buf)->getBuffer().split(lines, '\n', -1, /*KeepEmpty=*/true);
    for (size_t k = 0; k < lines.size(); ++k) {
      llvm::StringRef line = lines[k].split('#').first.trim();
      if (!line.empty())
        patterns.push_back({line.str(), freezeFile + ":" + std::to_string(k + 1)});
    }
    if (patterns.size() == freezeOpt.size())
      return fail("--freeze-file '" + freezeFile + "' has no pattern");
  }
  frozen.assign(sig.params.size(), 0);
  std::vector<std::string> unmatched;
  for (const FreezePattern &fp : patterns) {
    auto glob = llvm::GlobPattern::create(fp.text);
    if (!glob)
      return fail(fp.where + " '" + printable(fp.text) + "': not a glob pattern: " +
                  llvm::toString(glob.takeError()));
    bool any = false;
    for (size_t i = 0; i < sig.params.size(); ++i)
      if (glob->match(sig.params[i].name))
        frozen[i] = 1, any = true;
    if (!any)
      unmatched.push_back(
          (fp.where == "--freeze" ? std::string() : fp.where + ": ") + "'" +
          printable(fp.text) + "' (did you mean '" + closestFreezeName(sig, fp.text) + "'?)");
  }
  if (!unmatched.empty())
    return fail("--freeze: no parameter of '" + sig.model + "' matches " +
                llvm::join(unmatched, ", ") + "; nncc inspect lists the parameters");
  if (!sig.params.empty() &&
      std::count(frozen.begin(), frozen.end(), 1) == (long)sig.params.size())
    return fail("--freeze: the patterns freeze every parameter of '" + sig.model + "' (" +
                std::to_string(sig.params.size()) + "): nothing would be trained");
  return 0;
}

/// Marks the parameters of `frozen` frozen in the context (the others
/// trainable) and says how many, or with --resume and no --freeze keeps
/// what the state recorded and says that.
int applyFreeze(ModelHandle &h, const std::vector<char> &frozen, bool resumed) {
  const nncc_model_abi *abi = h.abi;
  nncc_error err;
  const bool given = !freezeOpt.empty() || !freezeFile.empty();
  if (!given && !resumed)
    return 0;
  std::vector<std::string> names;
  int64_t elements = 0, total = 0;
  for (int32_t i = 0; i < abi->num_params; ++i) {
    const char *name = abi->params[i].name;
    int32_t flag = 0;
    if (given) {
      flag = frozen[i];
      if (abi->set_frozen(h.model, name, flag, &err) != NNCC_OK)
        return fail(llvm::Twine("--freeze: ") + err.message);
    } else if (abi->get_frozen(h.model, name, &flag, &err) != NNCC_OK) {
      return fail(llvm::Twine("--resume: ") + err.message);
    }
    int64_t numel = 1;
    for (int32_t d = 0; d < abi->params[i].rank; ++d)
      numel *= abi->params[i].dims[d];
    total += numel;
    if (flag)
      names.push_back(name), elements += numel;
  }
  if (names.empty())
    return 0;
  llvm::errs() << "nncc: note: " << (given ? "--freeze" : "--resume (as the state recorded)")
               << ": " << names.size() << " of " << abi->num_params
               << " parameters frozen (" << elements << " of " << total
               << " elements): " << nameList(names) << "\n";
  return 0;
}

namespace {
/// The command line of nncc train, checked before any work: the flags that
/// go together and the numbers in range; sets microBatch from --micro-batch.
int checkTrainCommandLine(MetricsSpec &metricsSpec) {
  if (dataFile.empty())
    return fail("nncc train needs --data D.safetensors (one tensor per model input, "
                "leading dim = samples)");
  if (!resumeState.empty() && !initWeights.empty())
    return fail("--resume and --weights both give the starting weights: use one");
  if ((partialWeights || weightsPrefix.getNumOccurrences()) && initWeights.empty())
    return fail(llvm::Twine(partialWeights ? "--partial-weights" : "--weights-prefix") +
                " applies to --weights init.safetensors: add it");
  if ((keepBest || patience.getNumOccurrences()) && validationFile.empty())
    return fail(llvm::Twine(keepBest ? "--keep-best" : "--patience") +
                " compares validation losses: add --validation V.safetensors");
  if (int rc = checkTrainOptions())
    return rc;
  if (int rc = parseMetrics(metricsSpec, /*training=*/true))
    return rc;
  if (patience < 0)
    return fail("--patience must be >= 0");
  if (saveEvery < 0)
    return fail("--save-every must be >= 0");
  if (saveEvery > 0 && saveState.empty())
    return fail("--save-every says how often to write --save-state: add --save-state "
                "S.safetensors");
  const bool microAuto = microBatchArg == "auto";
  microBatch = 0;
  if (!microBatchArg.empty() && !microAuto &&
      (llvm::StringRef(microBatchArg).getAsInteger(10, microBatch) || microBatch <= 0))
    return fail("--micro-batch must be a positive number of samples or auto, got '" +
                microBatchArg + "'");
  if (microAuto && trainBudget.empty())
    return fail("--micro-batch auto chooses the micro-batch for a memory budget: add "
                "--memory-budget");
  if (trainPrecision == Precision::BF16 && trainTarget != TargetKind::CUDA)
    return fail("--precision bf16 trains on the CUDA target only: add --target cuda");
  return 0;
}

/// --data and --validation, loaded and checked, and the number of classes
/// and --metrics-json header of the validation's --metrics.
int loadTrainingData(const ModelSignature &sig, Precision precision,
                     const MetricsSpec &metricsSpec, TrainData &data, TrainData &validation,
                     EpochMetrics &epochMetrics) {
  if (int rc = loadData(sig, precision, dataFile, "data", data))
    return rc;
  if (int rc = checkDataValues(sig, data))
    return rc;
  if (!validationFile.empty())
    if (int rc = loadData(sig, precision, validationFile, "validation data", validation);
        rc || (rc = checkDataValues(sig, validation)))
      return rc;
  if (metricsSpec.active()) {
    epochMetrics.spec = &metricsSpec;
    if (int rc = metricsClasses(sig, metricsSpec, dataBinding(sig, validation, 0),
                                epochMetrics.classes))
      return rc;
    epochMetrics.jsonHead = metricsJsonHead(sig, metricsSpec, epochMetrics.classes);
  }
  return 0;
}

/// --memory-budget: chooses the micro-batch of --micro-batch auto, then
/// lowers the model for the largest run (a batch or a micro-batch) within
/// the budget, `remat` getting the plan.
int lowerTrainingForBudget(TrainingModel &model, const TrainData &data, Precision precision,
                           RematRequest &remat) {
  mlir::OwningOpRef<mlir::ModuleOp> &module = model.module;
  const ModelSignature &sig = model.sig;
  // The binding of a full batch: its dim and the data's other sizes.
  int64_t batch = batchOpt > 0 ? int64_t(batchOpt) : 0;
  if (!batch)
    if (auto tr = (*module)->getAttrOfType<nncc::nn::TrainAttr>("nn.train"))
      batch = tr.getBatch();
  if (microBatchArg == "auto") {
    // The fused loss heads (on under any budget) may fit where the heads
    // as written do not.
    mlir::OwningOpRef<mlir::ModuleOp> fused = model.nnModule->clone();
    if (mlir::failed(runPipeline(*fused, GradKind::Loss, /*trainMode=*/true,
                                 nncc::PipelineStage::NNK, trainInput, /*fuseLossHeads=*/true)))
      return 1;
    if (int rc = autoMicroBatch({*module, *fused}, sig, data, batch, precision))
      return rc;
  }
  if (microBatch > 0) // the largest run is a micro-batch
    batch = batch > 0 ? std::min<int64_t>(batch, microBatch) : microBatch;
  std::map<std::string, int64_t> dims = dataBinding(sig, data, batch);
  return lowerWithMemoryBudget(trainBudget, *model.nnModule, module, trainInput, sig.dims, dims,
                               GradKind::Loss, /*trainMode=*/true, precision, remat, trainTarget);
}

/// Compiles the training library (cached) for --target and loads it into
/// `h`; a library without train_step is an error.
int compileTraining(TrainingModel &model, const RematRequest &remat, Precision precision,
                    ModelHandle &h) {
  const bool cuda = trainTarget == TargetKind::CUDA;
  if (cuda && precision == Precision::F64)
    return fail("--precision f64 trains on the CPU target only");

  if (cuda) {
    const nncc_cuda_driver *drv = nullptr;
    nncc_error err;
    if (nncc_cuda_driver_get(&drv, &err) != NNCC_OK)
      return fail("--target cuda: " + llvm::Twine(err.message));
  }
  std::string libPath;
  CacheKeyOptions key;
  key.remat = remat.key();
  key.grad = true;
  key.precision = precision;
  key.target = trainTarget;
  if (!compileCached(*model.module, model.source, key, libPath))
    return 1;
  if (int rc = h.load(libPath, trainTarget))
    return rc;
  if (!h.abi->train_step)
    return fail("model '" + model.sig.model + "' was compiled without train_step");
  return 0;
}

/// Where the run starts: the --resume state (its step in `startStep`) or
/// the starting weights, then --freeze and the run seed.
int startTraining(ModelHandle &h, const nncc_train_config &cfg, const std::vector<char> &frozen,
                  int64_t &startStep) {
  startStep = 0;
  if (!resumeState.empty()) {
    // The state replaces the initial weights, the optimizer and the step.
    nncc_error err;
    if (h.abi->load_train_state(h.model, resumeState.c_str(), &err) != NNCC_OK)
      return fail(llvm::Twine("--resume: ") + err.message);
    nncc_train_stats st;
    if (h.abi->train_stats(h.model, &st, &err) != NNCC_OK)
      return fail(llvm::Twine("--resume: ") + err.message);
    startStep = st.step;
    if (startStep < 0 || startStep > cfg.total)
      return fail("--resume: '" + resumeState + "' is at step " + std::to_string(startStep) +
                  ", past this run's " + std::to_string(cfg.total) +
                  " steps (same model, data, batch and epochs as the run that wrote it?)");
  } else if (int rc = loadTrainWeights(h, (uint64_t)cfg.seed)) {
    return rc;
  }
  if (int rc = applyFreeze(h, frozen, !resumeState.empty()))
    return rc;
  // The run seed reaches every random stream (dropout, zoneout, masks,
  // samples; docs/training.md, "Random streams").
  nncc_error err;
  if (h.abi->set_seed(h.model, (uint64_t)cfg.seed, &err) != NNCC_OK)
    return fail(llvm::Twine("--seed: ") + err.message);
  return 0;
}

/// The header row of the --log CSV.
std::string trainLogHeader(const std::vector<std::string> &metrics,
                           const MetricsSpec &metricsSpec) {
  std::string header = "epoch,step,lr,loss,grad_norm";
  for (const std::string &m : metrics)
    header += "," + m;
  if (!validationFile.empty()) {
    header += ",val_loss";
    for (const std::string &m : metrics)
      header += ",val_" + m;
    for (const std::string &m : metricsSpec.names)
      header += ",val_" + m;
  }
  return header;
}

/// --log, opened for appending after its header (a resumed run: and its
/// rows up to `startStep`) was written; `log` stays null without --log.
int openTrainLog(const std::vector<std::string> &metrics, const MetricsSpec &metricsSpec,
                 int64_t startStep, FILE *&log) {
  if (logFile.empty())
    return 0;
  std::string header = trainLogHeader(metrics, metricsSpec);
  // A resumed run continues its log: the rows up to the saved step stay,
  // the later ones (steps taken after the state was written) go.
  std::vector<std::string> kept{header};
  if (startStep > 0) {
    if (auto old = llvm::MemoryBuffer::getFile(logFile)) {
      llvm::SmallVector<llvm::StringRef> lines;
      (*old)->getBuffer().split(lines, '\n', -1, /*KeepEmpty=*/false);
      if (lines.empty() || lines.front() != header)
        return fail("--log: '" + logFile + "' is not this run's log (its columns differ); "
                    "give the resumed run another --log");
      for (llvm::StringRef row : llvm::ArrayRef(lines).drop_front()) {
        int64_t step = 0;
        if (!row.split(',').second.split(',').first.getAsInteger(10, step) &&
            step <= startStep)
          kept.push_back(row.str());
      }
    }
  }
  // The kept rows go to a temporary beside the log, renamed over it: a
  // kill during the rewrite leaves the old log whole.
  if (int rc = replaceFile(logFile, llvm::join(kept, "\n") + "\n", "--log"))
    return rc;
  log = fopen(logFile.c_str(), "a");
  if (!log)
    return fail("cannot write '" + logFile + "': " + strerror(errno));
  return 0;
}

/// The run's first line on stdout (and where a resumed run resumes).
void printTrainBanner(const ModelSignature &sig, const TrainData &data,
                      const nncc_train_config &cfg, int64_t startStep) {
  const int64_t B = std::min<int64_t>(cfg.batch, data.numSamples);
  if (!trainQuiet)
    llvm::outs() << "nncc train: " << sig.model << ", " << data.numSamples
                 << " samples, batch " << B
                 << (microBatch > 0 && microBatch < B
                         ? " in micro-batches of " + std::to_string(microBatch)
                         : std::string())
                 << ", " << (data.numSamples + B - 1) / B << " steps/epoch, " << cfg.epochs
                 << " epochs, "
                 << (cfg.optimizer == NNCC_OPTIM_SGD    ? "sgd"
                     : cfg.optimizer == NNCC_OPTIM_ADAM ? "adam"
                                                        : "adamw")
                 << " lr " << llvm::format("%g", cfg.lr) << "\n";
  if (startStep > 0 && !trainQuiet)
    llvm::outs() << "resuming at step " << startStep + 1 << " (" << resumeState << ")\n";
}

/// -o after the epochs: the last weights, or with --keep-best the note of
/// the best epoch's (saved when it was validated).
int saveTrainedWeights(const ModelHandle &h, const std::string &out, const BestEpoch &best) {
  if (keepBest && best.epoch > 0) {
    if (!trainQuiet)
      llvm::outs() << llvm::format("saved the weights of epoch %lld (", (long long)best.epoch)
                   << bestBy
                   << llvm::format(" %.6g) to ", bestBy == "val_loss" ? best.value : -best.value)
                   << out << "\n";
    return 0;
  }
  if (int rc = writeAside(h, out, "saving weights", h.abi->save_weights))
    return rc;
  if (!trainQuiet)
    llvm::outs() << "saved weights to " << out << "\n";
  return 0;
}
} // namespace

int runTrain() {
  MetricsSpec metricsSpec;
  if (int rc = checkTrainCommandLine(metricsSpec))
    return rc;
  const Precision precision = trainPrecision;
  TrainingModel model;
  if (int rc = model.load(trainInput))
    return rc;
  const ModelSignature *sig = &model.sig;
  const std::string out =
      outWeights.empty() ? sig->model + ".safetensors" : std::string(outWeights);
  if (int rc = resolveMetrics(*sig, metricsSpec))
    return rc;
  std::vector<char> frozen;
  if (int rc = resolveFreeze(*sig, frozen))
    return rc;
  if (int rc = checkTrainOutputs(out))
    return rc;

  // The data (checked before compiling), then compile, load, configure.
  TrainData data, validation;
  EpochMetrics epochMetrics;
  if (int rc = loadTrainingData(*sig, precision, metricsSpec, data, validation, epochMetrics))
    return rc;
  RematRequest remat;
  if (!trainBudget.empty())
    if (int rc = lowerTrainingForBudget(model, data, precision, remat))
      return rc;
  ModelHandle h;
  if (int rc = compileTraining(model, remat, precision, h))
    return rc;
  nncc_train_config cfg;
  if (int rc = configure(h.abi, data.numSamples, cfg))
    return rc;
  int64_t startStep = 0;
  if (int rc = startTraining(h, cfg, frozen, startStep))
    return rc;

  const std::vector<std::string> metrics = scalarMetrics(*sig);
  FILE *log = nullptr;
  llvm::scope_exit closeLog([&] {
    if (log)
      fclose(log);
  });
  if (int rc = openTrainLog(metrics, metricsSpec, startStep, log))
    return rc;
  printTrainBanner(*sig, data, cfg, startStep);
  BestEpoch best;
  if (int rc = trainLoop(h, cfg, data, validation, metrics, log, startStep, out, best,
                         epochMetrics))
    return rc;
  return saveTrainedWeights(h, out, best);
}

} // namespace nncc::tool

namespace nncc::tool {
namespace {
/// `s` as a JSON string.
std::string jsonString(llvm::StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += std::string("\\") + c;
    else if ((unsigned char)c < 0x20)
      out += llvm::formatv("\\u{0:x-4}", (unsigned)(unsigned char)c).str();
    else
      out += c;
  }
  return out + "\"";
}
} // namespace

int runEval() {
  if (dataFile.empty())
    return fail("nncc eval needs --data D.safetensors (one tensor per model input, leading "
                "dim = samples)");
  if (initWeights.empty())
    return fail("nncc eval needs --weights W.safetensors (the weights to evaluate)");
  if (int rc = checkTrainOptions())
    return rc;
  MetricsSpec spec;
  if (int rc = parseMetrics(spec, /*training=*/false))
    return rc;
  const Precision precision = trainPrecision;
  const bool cuda = trainTarget == TargetKind::CUDA;
  if (precision == Precision::BF16 && !cuda)
    return fail("--precision bf16 runs on the CUDA target only: add --target cuda");
  if (cuda && precision == Precision::F64)
    return fail("--precision f64 runs on the CPU target only");
  // Compiled as nncc train compiles it (the same cached library): its
  // forward in inference mode is what train's validation runs.
  TrainingModel model;
  if (int rc = model.load(trainInput))
    return rc;
  mlir::OwningOpRef<mlir::ModuleOp> &module = model.module;
  const ModelSignature *sig = &model.sig;
  if (int rc = resolveMetrics(*sig, spec))
    return rc;
  if (!metricsJson.empty())
    if (int rc = checkOutputPath("--metrics-json", metricsJson,
                                 {{"the model", trainInput},
                                  {"--data", dataFile},
                                  {"--weights", initWeights}}))
      return rc;
  TrainData data;
  if (int rc = loadData(*sig, precision, dataFile, "data", data))
    return rc;
  if (int rc = checkDataValues(*sig, data))
    return rc;
  int64_t classes = 0;
  if (spec.active())
    if (int rc = metricsClasses(*sig, spec, dataBinding(*sig, data, 0), classes))
      return rc;
  if (cuda) {
    const nncc_cuda_driver *drv = nullptr;
    nncc_error err;
    if (nncc_cuda_driver_get(&drv, &err) != NNCC_OK)
      return fail("--target cuda: " + llvm::Twine(err.message));
  }
  std::string libPath;
  CacheKeyOptions key;
  key.grad = true;
  key.precision = precision;
  key.target = trainTarget;
  if (!compileCached(*module, model.source, key, libPath))
    return 1;
  ModelHandle h;
  if (int rc = h.load(libPath, trainTarget))
    return rc;
  if (int rc = h.initWeights(initWeights, 0))
    return rc;
  const int64_t B = std::min<int64_t>(
      batchOpt > 0 ? int64_t(batchOpt) : std::max<int64_t>(1, h.abi->train_config->batch),
      data.numSamples);
  const std::vector<std::string> metrics = scalarMetrics(*sig);
  std::vector<double> means;
  ClassMetrics cm;
  cm.reset(classes, spec.multiLabel);
  if (int rc = evaluate(h, data, B, metrics, means, &spec, spec.active() ? &cm : nullptr))
    return rc;
  if (!trainQuiet) {
    llvm::outs() << "nncc eval: " << sig->model << ", " << data.numSamples << " samples, batch "
                 << B << "\n";
    llvm::outs() << llvm::format("loss %.6g", means[0]);
    for (size_t k = 0; k < metrics.size(); ++k)
      llvm::outs() << "  " << metrics[k] << llvm::format(" %.6g", means[k + 1]);
    for (const std::string &m : spec.names)
      llvm::outs() << "  " << m << llvm::format(" %.6g", cm.value(m));
    llvm::outs() << "\n";
  }
  if (!metricsJson.empty())
    if (int rc = replaceFile(metricsJson,
                             metricsJsonHead(*sig, spec, classes) + "  \"data\": " +
                                 jsonString(dataFile) + ",\n  \"metrics\": {\n" +
                                 metricsEntryJson(cm, means[0], "    ") + "\n  }\n}\n",
                             "--metrics-json"))
      return rc;
  return 0;
}

} // namespace nncc::tool
