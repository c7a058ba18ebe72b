//===- Run.cpp - `nncc inspect` and `nncc run` ----------------------------===//
//
//   nncc inspect M.nn                      the signature as JSON
//   nncc run M.nn [--weights W.safetensors] (--inputs I.safetensors |
//            --random-inputs --dim B=2 ...) [-o O.safetensors]
//            [--target cpu|cuda] [--seed N] [--quiet] [--save-inputs F]
//
// `run` compiles the model into a content-addressed cache (key: the source,
// the compiler's fingerprint, the target and the options), dlopens the
// library and drives it through nncc_model.h. Every failure prints one
// `nncc: error: ...` message and exits with status 1.
//
//===----------------------------------------------------------------------===//
#include "Run.h"

#include "nncc/Frontend/Diagnostics.h"
#include "nncc/Frontend/MLIRGen.h"
#include "nncc/Frontend/Parser.h"
#include "nncc/Frontend/Sema.h"
#include "nncc/Runtime/nncc_model.h"
#include "nncc/Target/Compile.h"
#include "nncc/Target/Emitters.h"

#include "dialects/Kernel/IR/NNKDialect.h"
#include "dialects/NN/IR/NNDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "dialects/NN/Transforms/Passes.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <unistd.h>

namespace cl = llvm::cl;
using namespace nncc::frontend;

namespace nncc::tool {

cl::OptionCategory runCategory("nncc run/inspect options");
cl::SubCommand inspectCmd("inspect", "Print a model's signature as JSON");
cl::SubCommand runCmd("run", "Compile (cached), load and run a model on given inputs");

namespace {
cl::opt<std::string> inspectInput(cl::Positional, cl::desc("<model.nn>"), cl::Required,
                                  cl::sub(inspectCmd), cl::cat(runCategory));

cl::opt<std::string> runInput(cl::Positional, cl::desc("<model.nn>"), cl::Required,
                              cl::sub(runCmd), cl::cat(runCategory));
cl::opt<std::string> weightsFile("weights",
                                 cl::desc("Parameters (safetensors, PyTorch state_dict "
                                          "names); default: init_weights(--seed)"),
                                 cl::value_desc("W.safetensors"), cl::sub(runCmd),
                                 cl::cat(runCategory));
cl::opt<std::string> inputsFile("inputs", cl::desc("Every model input, by name"),
                                cl::value_desc("I.safetensors"), cl::sub(runCmd),
                                cl::cat(runCategory));
cl::opt<std::string> runOutput("o", cl::desc("Write the outputs (and loss) here"),
                               cl::value_desc("O.safetensors"), cl::sub(runCmd),
                               cl::cat(runCategory));
enum class RunTarget { CPU, CUDA };
cl::opt<RunTarget> runTarget("target", cl::desc("Where to run"), cl::init(RunTarget::CPU),
                             cl::values(clEnumValN(RunTarget::CPU, "cpu", "the CPU"),
                                        clEnumValN(RunTarget::CUDA, "cuda", "a CUDA GPU")),
                             cl::sub(runCmd), cl::cat(runCategory));
cl::opt<uint64_t> seed("seed",
                       cl::desc("Seed of init_weights and of --random-inputs (default 0)"),
                       cl::init(0), cl::sub(runCmd), cl::cat(runCategory));
cl::opt<bool> quiet("quiet", cl::desc("No per-output summary"), cl::sub(runCmd),
                    cl::cat(runCategory));
cl::opt<bool> randomInputs(
    "random-inputs",
    cl::desc("Generate valid inputs from --seed (token ids in range, lengths <= T, "
             "increasing times); sizes of symbolic dims from --dim"),
    cl::sub(runCmd), cl::cat(runCategory));
cl::list<std::string> dimValues("dim", cl::desc("NAME=SIZE of a symbolic dim (--random-inputs)"),
                                cl::value_desc("NAME=SIZE"), cl::sub(runCmd),
                                cl::cat(runCategory));
cl::opt<std::string> saveInputs("save-inputs",
                                cl::desc("Also write the inputs used (e.g. the generated "
                                         "ones) to this safetensors file"),
                                cl::value_desc("FILE"), cl::sub(runCmd), cl::cat(runCategory));

cl::opt<bool> inputsOnly("inputs-only",
                         cl::desc("Only write the inputs (--save-inputs) and stop: no compile"),
                         cl::sub(runCmd), cl::cat(runCategory));
cl::opt<bool> gradMode("grad",
                       cl::desc("Also run the backward pass and write grad.<param> for "
                                "every parameter: the gradient of the loss this run "
                                "reports (inference mode: dropout and zoneout off, "
                                "unless --train-mode)"),
                       cl::sub(runCmd), cl::cat(runCategory));
cl::opt<bool> trainMode("train-mode",
                        cl::desc("With --grad: training mode, dropout active with its "
                                 "fixed per-op seeds (loss and gradients of that mode)"),
                        cl::sub(runCmd), cl::cat(runCategory));
enum class Precision { F32, F64 };
cl::opt<Precision> precision("precision", cl::desc("Float precision of the CPU code"),
                             cl::init(Precision::F32),
                             cl::values(clEnumValN(Precision::F32, "f32", "float (default)"),
                                        clEnumValN(Precision::F64, "f64",
                                                   "double: f32 inputs and weights are "
                                                   "widened on load, outputs are F64")),
                             cl::sub(runCmd), cl::cat(runCategory));

int fail(const llvm::Twine &msg) {
  llvm::errs() << "nncc: error: " << msg << "\n";
  return 1;
}

/// Parses a .nn (or .mlir) file into an nn/nnk module; diagnostics printed.
mlir::OwningOpRef<mlir::ModuleOp> loadModule(mlir::MLIRContext &context,
                                             llvm::SourceMgr &sourceMgr,
                                             const std::string &path, std::string &source) {
  auto bufOrErr = llvm::MemoryBuffer::getFile(path);
  if (std::error_code ec = bufOrErr.getError()) {
    fail("cannot read '" + path + "': " + ec.message());
    return nullptr;
  }
  source = (*bufOrErr)->getBuffer().str();
  unsigned bufId = sourceMgr.AddNewSourceBuffer(std::move(*bufOrErr), llvm::SMLoc());
  llvm::StringRef text = sourceMgr.getMemoryBuffer(bufId)->getBuffer();
  context.loadDialect<nncc::nn::NNDialect, nncc::nnk::NNKDialect, mlir::func::FuncDialect,
                      mlir::arith::ArithDialect, mlir::math::MathDialect>();
  if (llvm::StringRef(path).ends_with(".mlir")) {
    auto module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
    if (!module || mlir::failed(mlir::verify(*module)))
      return nullptr;
    return module;
  }
  DiagEngine diag(context, sourceMgr.getMemoryBuffer(bufId)->getBufferIdentifier());
  std::unique_ptr<FileAST> ast = parseBuffer(text, diag);
  if (!ast)
    return nullptr;
  std::unique_ptr<ModelInfo> model = analyzeModel(*ast, diag);
  if (!model)
    return nullptr;
  return mlirGen(context, *model, diag);
}

llvm::json::Array jsonDims(const std::vector<std::string> &dims) {
  llvm::json::Array a;
  for (const std::string &d : dims) {
    int64_t v;
    if (!llvm::StringRef(d).getAsInteger(10, v))
      a.push_back(v);
    else
      a.push_back(d);
  }
  return a;
}

llvm::json::Array jsonTensors(const std::vector<TensorSignature> &ts) {
  llvm::json::Array a;
  for (const TensorSignature &t : ts)
    a.push_back(llvm::json::Object{
        {"name", t.name}, {"dtype", t.dtype}, {"shape", jsonDims(t.dims)}});
  return a;
}

/// Parameters with their optimizer group (docs/training.md).
llvm::json::Array jsonParams(const std::vector<TensorSignature> &ts) {
  llvm::json::Array a;
  for (const TensorSignature &t : ts)
    a.push_back(llvm::json::Object{{"name", t.name},
                                   {"dtype", t.dtype},
                                   {"shape", jsonDims(t.dims)},
                                   {"decay", t.decay},
                                   {"lr_depth", t.lrDepth}});
  return a;
}

std::string shapeStr(const int64_t *shape, int32_t rank) {
  std::string s = "[";
  for (int32_t i = 0; i < rank; ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string sigStr(const TensorSignature &t) {
  std::string s = t.dtype + " [";
  for (size_t i = 0; i < t.dims.size(); ++i)
    s += (i ? ", " : "") + t.dims[i];
  return s + "]";
}

std::string cacheRoot() {
  if (const char *d = std::getenv("NNCC_CACHE_DIR"); d && *d)
    return d;
  if (const char *d = std::getenv("XDG_CACHE_HOME"); d && *d)
    return (llvm::Twine(d) + "/nncc").str();
  if (const char *h = std::getenv("HOME"); h && *h)
    return (llvm::Twine(h) + "/.cache/nncc").str();
  return "/tmp/nncc-cache";
}

/// Compiles into the cache unless present; returns the library's path.
bool compileCached(mlir::ModuleOp module, const std::string &source, bool cuda,
                   std::string &libPath, bool grad, bool f64) {
  llvm::SHA256 h;
  h.update(source);
  h.update(llvm::StringRef("\0", 1));
  h.update(compilerFingerprint());
  h.update(cuda ? "|target=cuda" : "|target=cpu");
  h.update("|opts=O3");
  if (f64)
    h.update("|precision=f64");
  if (grad) {
    // Which loss the backward differentiates: inference mode (run --grad)
    // or training mode (run --grad --train-mode, nncc train).
    bool evalMode = false;
    module.walk([&](mlir::func::FuncOp fn) { evalMode |= fn->hasAttr("nn.eval_mode"); });
    h.update(evalMode ? "|grad|eval-mode" : "|grad|train-mode");
  }
  std::string key = llvm::toHex(h.final(), /*LowerCase=*/true).substr(0, 32);
  std::string model = nncc::target::modelIdentifier(module);
  std::string root = cacheRoot();
  std::string dir = root + "/" + key;
  libPath = dir + "/lib" + model + ".so";
  if (llvm::sys::fs::exists(libPath))
    return true;
  if (std::error_code ec = llvm::sys::fs::create_directories(root)) {
    fail("cannot create the cache directory '" + root + "': " + ec.message() +
         " (set NNCC_CACHE_DIR)");
    return false;
  }
  // Build in a private directory, then rename it into place: concurrent
  // runs never see a half-written library; the loser of a race keeps the
  // winner's (identical) result.
  llvm::SmallString<256> tmp;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory(root + "/tmp-" + key, tmp)) {
    fail("cannot create a directory in '" + root + "': " + ec.message());
    return false;
  }
  nncc::CompileOptions opts;
  opts.outputDir = std::string(tmp);
  opts.target = cuda ? nncc::CompileTarget::CUDA : nncc::CompileTarget::CPU;
  opts.f64 = f64;
  nncc::CompileArtifacts artifacts;
  if (mlir::failed(nncc::compileModel(module, opts, artifacts))) {
    llvm::sys::fs::remove_directories(tmp);
    return false;
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmp, dir)) {
    llvm::sys::fs::remove_directories(tmp);
    if (!llvm::sys::fs::exists(libPath)) {
      fail("cannot move the compiled library into the cache '" + dir + "': " + ec.message());
      return false;
    }
  }
  return true;
}

/// Converts `n` elements of `src` (dtype sd) into `dst` (dtype dd) when
/// every value is represented exactly; else returns the reason.
std::string convertLossless(nncc_dtype sd, const void *src, nncc_dtype dd, void *dst,
                            uint64_t n) {
  auto isInt = [](nncc_dtype d) {
    return d == NNCC_DTYPE_I64 || d == NNCC_DTYPE_I32 || d == NNCC_DTYPE_I16 ||
           d == NNCC_DTYPE_I8 || d == NNCC_DTYPE_U8 || d == NNCC_DTYPE_BOOL;
  };
  auto readInt = [&](uint64_t i) -> int64_t {
    const char *p = static_cast<const char *>(src) + i * nncc_dtype_size(sd);
    switch (sd) {
    case NNCC_DTYPE_I64: { int64_t v; memcpy(&v, p, 8); return v; }
    case NNCC_DTYPE_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case NNCC_DTYPE_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case NNCC_DTYPE_I8: return (int8_t)*p;
    default: return (uint8_t)*p;
    }
  };
  auto readFloat = [&](uint64_t i) -> double {
    const char *p = static_cast<const char *>(src) + i * nncc_dtype_size(sd);
    switch (sd) {
    case NNCC_DTYPE_F64: { double v; memcpy(&v, p, 8); return v; }
    case NNCC_DTYPE_F32: { float v; memcpy(&v, p, 4); return v; }
    case NNCC_DTYPE_F16: { uint16_t v; memcpy(&v, p, 2); return nncc_f16_to_f32(v); }
    case NNCC_DTYPE_BF16: { uint16_t v; memcpy(&v, p, 2); return nncc_bf16_to_f32(v); }
    default: return (double)readInt(i);
    }
  };
  char *out = static_cast<char *>(dst);
  for (uint64_t i = 0; i < n; ++i) {
    if (isInt(dd)) {
      int64_t v;
      if (isInt(sd)) {
        v = readInt(i);
      } else {
        double f = readFloat(i);
        if (!(f == std::floor(f)) || std::fabs(f) > 9.0e15)
          return "value " + llvm::formatv("{0}", f).str() + " at index " +
                 std::to_string(i) + " is not an integer";
        v = (int64_t)f;
      }
      switch (dd) {
      case NNCC_DTYPE_I64: memcpy(out + 8 * i, &v, 8); break;
      case NNCC_DTYPE_I32: {
        if (v < INT32_MIN || v > INT32_MAX)
          return "value " + std::to_string(v) + " at index " + std::to_string(i) +
                 " does not fit I32";
        int32_t w = (int32_t)v;
        memcpy(out + 4 * i, &w, 4);
        break;
      }
      case NNCC_DTYPE_BOOL:
        if (v != 0 && v != 1)
          return "value " + std::to_string(v) + " at index " + std::to_string(i) +
                 " is not 0 or 1";
        out[i] = (char)v;
        break;
      default:
        return "unsupported target type";
      }
    } else {
      double f = isInt(sd) ? (double)readInt(i) : readFloat(i);
      if (isInt(sd) && (int64_t)f != readInt(i))
        return "value at index " + std::to_string(i) + " is not exact in floating point";
      if (dd == NNCC_DTYPE_F64) {
        memcpy(out + 8 * i, &f, 8);
      } else if (dd == NNCC_DTYPE_F32) {
        float g = (float)f;
        if ((double)g != f && !(f != f))
          return "value " + llvm::formatv("{0}", f).str() + " at index " + std::to_string(i) +
                 " is not exact in F32";
        memcpy(out + 4 * i, &g, 4);
      } else {
        return "unsupported target type";
      }
    }
  }
  return "";
}

bool losslessPair(nncc_dtype from, nncc_dtype to) {
  switch (to) {
  case NNCC_DTYPE_F64:
    return from == NNCC_DTYPE_F32 || from == NNCC_DTYPE_F16 || from == NNCC_DTYPE_BF16 ||
           from == NNCC_DTYPE_I32 || from == NNCC_DTYPE_I16 || from == NNCC_DTYPE_I8 ||
           from == NNCC_DTYPE_U8;
  case NNCC_DTYPE_F32:
    return from == NNCC_DTYPE_F16 || from == NNCC_DTYPE_BF16 || from == NNCC_DTYPE_I16 ||
           from == NNCC_DTYPE_I8 || from == NNCC_DTYPE_U8;
  case NNCC_DTYPE_I64:
    return from == NNCC_DTYPE_I32 || from == NNCC_DTYPE_I16 || from == NNCC_DTYPE_I8 ||
           from == NNCC_DTYPE_U8 || from == NNCC_DTYPE_BOOL;
  case NNCC_DTYPE_I32:
    // I64 only when every value is in range (checked per value).
    return from == NNCC_DTYPE_I64 || from == NNCC_DTYPE_I16 || from == NNCC_DTYPE_I8 ||
           from == NNCC_DTYPE_U8 || from == NNCC_DTYPE_BOOL;
  case NNCC_DTYPE_BOOL:
    return from == NNCC_DTYPE_U8; // 0/1 checked per value
  default:
    return false;
  }
}

struct HostTensor {
  std::string name;
  nncc_dtype dtype;
  std::vector<int64_t> shape;
  std::vector<uint64_t> storage; // 8-byte aligned bytes
  void *data() { return storage.data(); }
  void resize(uint64_t bytes) { storage.assign((bytes + 7) / 8, 0); }
  uint64_t numelOf() const {
    uint64_t n = 1;
    for (int64_t d : shape)
      n *= (uint64_t)d;
    return n;
  }
};

/// Fills one input deterministically from (seed, stream) according to its role.
void randomInput(HostTensor &t, const TensorSignature &sig,
                 const std::map<std::string, int64_t> &dims, uint64_t stream) {
  uint64_t n = 1;
  for (int64_t d : t.shape)
    n *= (uint64_t)d;
  int64_t last = t.shape.empty() ? 1 : t.shape.back();
  std::vector<double> u(n);
  nncc_rng_fill_uniform_f64(u.data(), n, seed, stream, 0, 0.0, 1.0);
  std::vector<double> v(n);
  int64_t limit = 2;
  if (!sig.limit.empty()) {
    int64_t x;
    if (!llvm::StringRef(sig.limit).getAsInteger(10, x))
      limit = x;
    else if (auto it = dims.find(sig.limit); it != dims.end())
      limit = it->second;
  }
  switch (sig.role) {
  case InputRole::TokenIds:
  case InputRole::ClassTargets:
    for (uint64_t i = 0; i < n; ++i)
      v[i] = std::min<double>(limit - 1, std::floor(u[i] * limit));
    break;
  case InputRole::Lengths:
    // The first row has the full length; the others a length in [1, limit].
    for (uint64_t i = 0; i < n; ++i)
      v[i] = i == 0 ? limit : 1 + std::min<double>(limit - 1, std::floor(u[i] * limit));
    break;
  case InputRole::BinaryTargets:
    for (uint64_t i = 0; i < n; ++i)
      v[i] = u[i] < 0.5 ? 0 : 1;
    break;
  case InputRole::Times:
    // Per row: t_0 in [0, 1), then increments in [0.1, 1.1).
    for (uint64_t i = 0; i < n; ++i)
      v[i] = (i % last == 0) ? u[i] : v[i - 1] + 0.1 + u[i];
    break;
  case InputRole::Mask:
    // Odd rows pad a random tail of at most half the keys (true = padded).
    for (uint64_t i = 0; i < n; ++i) {
      int64_t row = (int64_t)(i / last), col = (int64_t)(i % last);
      int64_t pad = (row % 2) ? (int64_t)std::floor(u[row * last] * (last / 2 + 1)) : 0;
      v[i] = col >= last - pad ? 1 : 0;
    }
    break;
  case InputRole::Data:
    if (t.dtype == NNCC_DTYPE_F32 || t.dtype == NNCC_DTYPE_F64)
      nncc_rng_fill_normal_f64(v.data(), n, seed, stream, 0, 0.0, 1.0);
    else
      for (uint64_t i = 0; i < n; ++i)
        v[i] = u[i] < 0.5 ? 0 : 1;
    break;
  }
  t.resize(n * nncc_dtype_size(t.dtype));
  for (uint64_t i = 0; i < n; ++i) {
    char *p = reinterpret_cast<char *>(t.data()) + i * nncc_dtype_size(t.dtype);
    switch (t.dtype) {
    case NNCC_DTYPE_F64: memcpy(p, &v[i], 8); break;
    case NNCC_DTYPE_F32: { float f = (float)v[i]; memcpy(p, &f, 4); break; }
    case NNCC_DTYPE_I64: { int64_t x = (int64_t)v[i]; memcpy(p, &x, 8); break; }
    case NNCC_DTYPE_I32: { int32_t x = (int32_t)v[i]; memcpy(p, &x, 4); break; }
    default: *p = (char)(v[i] != 0); break;
    }
  }
}

void summary(const char *name, nncc_dtype dtype, int32_t rank, const int64_t *shape,
             const void *data) {
  uint64_t n = 1;
  for (int32_t i = 0; i < rank; ++i)
    n *= (uint64_t)shape[i];
  double mn = INFINITY, mx = -INFINITY, sum = 0;
  uint64_t nonfinite = 0;
  for (uint64_t i = 0; i < n; ++i) {
    double x;
    switch (dtype) {
    case NNCC_DTYPE_F64: x = static_cast<const double *>(data)[i]; break;
    case NNCC_DTYPE_F32: x = static_cast<const float *>(data)[i]; break;
    case NNCC_DTYPE_I64: x = (double)static_cast<const int64_t *>(data)[i]; break;
    case NNCC_DTYPE_I32: x = static_cast<const int32_t *>(data)[i]; break;
    default: x = static_cast<const uint8_t *>(data)[i]; break;
    }
    if (!std::isfinite(x)) {
      ++nonfinite;
      continue;
    }
    mn = std::min(mn, x);
    mx = std::max(mx, x);
    sum += x;
  }
  uint64_t finite = n - nonfinite;
  llvm::outs() << llvm::formatv("{0}: {1} {2}", name, nncc_dtype_name(dtype),
                                shapeStr(shape, rank));
  if (finite)
    llvm::outs() << llvm::format(" min %.6g max %.6g mean %.6g", mn, mx, sum / (double)finite);
  if (nonfinite)
    llvm::outs() << " non-finite " << nonfinite;
  llvm::outs() << "\n";
}

struct ModelHandle {
  void *lib = nullptr;
  const nncc_model_abi *abi = nullptr;
  nncc_model *model = nullptr;
  ~ModelHandle() {
    if (model)
      abi->destroy(model);
    // The library stays loaded: its OpenMP threads may still be parked.
  }
};
} // namespace

bool runSubcommand() { return inspectCmd || runCmd || trainCmd; }

int runInspect() {
  mlir::MLIRContext context;
  context.disableMultithreading();
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  std::string source;
  auto module = loadModule(context, sourceMgr, inspectInput, source);
  if (!module)
    return 1;
  mlir::FailureOr<ModelSignature> sig = getSignature(*module);
  if (mlir::failed(sig))
    return 1;
  llvm::json::Array dims;
  for (const std::string &d : sig->dims)
    dims.push_back(d);
  llvm::json::Object obj{{"model", sig->model},
                         {"dims", std::move(dims)},
                         {"inputs", jsonTensors(sig->inputs)},
                         {"outputs", jsonTensors(sig->outputs)},
                         {"parameters", jsonParams(sig->params)}};
  llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(obj))) << "\n";
  return 0;
}

int runRun() {
  if (inputsFile.empty() && !randomInputs)
    return fail("nncc run needs --inputs I.safetensors or --random-inputs");
  if (!inputsFile.empty() && randomInputs)
    return fail("--inputs and --random-inputs exclude each other");
  bool cuda = runTarget == RunTarget::CUDA;
  if (cuda) {
    const nncc_cuda_driver *drv = nullptr;
    nncc_error err;
    if (nncc_cuda_driver_get(&drv, &err) != NNCC_OK)
      return fail("--target cuda: " + llvm::Twine(err.message));
  }

  mlir::MLIRContext context;
  context.disableMultithreading();
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  std::string source;
  auto module = loadModule(context, sourceMgr, runInput, source);
  if (!module)
    return 1;
  if (gradMode) {
    mlir::PassManager pm(module->getContext());
    nncc::nn::NNAutodiffOptions options;
    options.regularizersActive = trainMode;
    pm.addPass(nncc::nn::createNNAutodiff(options));
    if (mlir::failed(pm.run(*module)))
      return fail("cannot differentiate model '" + runInput + "'");
  }
  mlir::FailureOr<ModelSignature> sig = getSignature(*module);
  if (mlir::failed(sig))
    return 1;

  // Inputs first (cheap errors before a compile).
  std::map<std::string, int64_t> dimMap;
  for (const std::string &d : dimValues) {
    auto [k, v] = llvm::StringRef(d).split('=');
    int64_t x;
    if (k.empty() || v.getAsInteger(10, x) || x < 0)
      return fail("--dim expects NAME=SIZE with SIZE >= 0, got '" + d + "'");
    if (std::find(sig->dims.begin(), sig->dims.end(), k.str()) == sig->dims.end())
      return fail("--dim " + k + ": model '" + sig->model + "' has no dim '" + k +
                  "' (dims: " + llvm::join(sig->dims, ", ") + ")");
    dimMap[k.str()] = x;
  }
  std::vector<HostTensor> inputs;
  nncc_safetensors *file = nullptr;
  auto closeFile = llvm::make_scope_exit([&] {
    if (file)
      nncc_safetensors_close(file);
  });
  if (!inputsFile.empty()) {
    nncc_error err;
    if (nncc_safetensors_open(inputsFile.c_str(), &file, &err) != NNCC_OK)
      return fail(llvm::Twine("reading inputs: ") + err.message);
  }
  for (size_t i = 0; i < sig->inputs.size(); ++i) {
    const TensorSignature &s = sig->inputs[i];
    HostTensor t;
    t.name = s.name;
    t.dtype = nncc_dtype_from_name(s.dtype.c_str());
    if (randomInputs) {
      for (const std::string &d : s.dims) {
        int64_t x;
        if (!llvm::StringRef(d).getAsInteger(10, x)) {
          t.shape.push_back(x);
          continue;
        }
        auto it = dimMap.find(d);
        if (it == dimMap.end())
          return fail("--random-inputs needs the size of dim '" + d + "' (input '" + s.name +
                      "' is " + sigStr(s) + "): add --dim " + d + "=N");
        t.shape.push_back(it->second);
      }
      randomInput(t, s, dimMap, 1000 + i);
      inputs.push_back(std::move(t));
      continue;
    }
    nncc_tensor_view view;
    nncc_error err;
    if (nncc_safetensors_find(file, s.name.c_str(), &view, &err) != NNCC_OK) {
      std::string have;
      for (size_t k = 0; k < nncc_safetensors_count(file); ++k) {
        nncc_tensor_view o;
        if (nncc_safetensors_tensor_at(file, k, &o, nullptr) == NNCC_OK)
          have += (have.empty() ? "" : ", ") + std::string(o.name);
      }
      return fail("input '" + s.name + "' (" + sigStr(s) + ") is missing from '" +
                  inputsFile + "' (it has: " + (have.empty() ? "nothing" : have) + ")");
    }
    t.shape.assign(view.shape, view.shape + view.rank);
    if (precision == Precision::F64 && t.dtype == NNCC_DTYPE_F32 &&
        view.dtype == NNCC_DTYPE_F64)
      t.dtype = NNCC_DTYPE_F64; // already the run's precision
    t.resize(view.numel * nncc_dtype_size(t.dtype));
    if (view.dtype == t.dtype) {
      if (view.nbytes)
        memcpy(t.data(), view.data, view.nbytes);
    } else {
      if (!losslessPair(view.dtype, t.dtype))
        return fail("input '" + s.name + "' in '" + inputsFile + "': expected " + sigStr(s) +
                    ", got " + nncc_dtype_name(view.dtype) + " " +
                    shapeStr(view.shape, view.rank) + " (only lossless conversions are done)");
      std::string why =
          convertLossless(view.dtype, view.data, t.dtype, t.data(), view.numel);
      if (!why.empty())
        return fail("input '" + s.name + "' in '" + inputsFile + "': cannot convert " +
                    nncc_dtype_name(view.dtype) + " to " + s.dtype + ": " + why);
    }
    inputs.push_back(std::move(t));
  }
  if (file)
    for (size_t k = 0; k < nncc_safetensors_count(file); ++k) {
      nncc_tensor_view o;
      if (nncc_safetensors_tensor_at(file, k, &o, nullptr) != NNCC_OK)
        continue;
      bool known = false;
      for (const TensorSignature &s : sig->inputs)
        known |= s.name == o.name;
      if (!known && !quiet)
        llvm::errs() << "nncc: warning: '" << inputsFile << "' has a tensor '" << o.name
                     << "' that is not an input of model '" << sig->model << "'\n";
    }

  if (trainMode && !gradMode)
    return fail("--train-mode applies to --grad runs");
  auto writeInputs = [&]() -> int {
    nncc_error err;
    nncc_safetensors_writer *w = nullptr;
    nncc_safetensors_writer_create(&w, nullptr);
    for (HostTensor &t : inputs) {
      uint64_t bytes = nncc_dtype_size(t.dtype);
      for (int64_t d : t.shape)
        bytes *= (uint64_t)d;
      if (nncc_safetensors_writer_add(w, t.name.c_str(), t.dtype, (int32_t)t.shape.size(),
                                      t.shape.data(), t.data(), bytes, &err) != NNCC_OK) {
        nncc_safetensors_writer_destroy(w);
        return fail(llvm::Twine("--save-inputs: ") + err.message);
      }
    }
    nncc_status st = nncc_safetensors_writer_write(w, saveInputs.c_str(), &err);
    nncc_safetensors_writer_destroy(w);
    if (st != NNCC_OK)
      return fail(llvm::Twine("--save-inputs: ") + err.message);
    return 0;
  };
  if (inputsOnly) {
    if (saveInputs.empty())
      return fail("--inputs-only needs --save-inputs F");
    return writeInputs();
  }
  if ((gradMode || precision == Precision::F64) && cuda)
    return fail("--grad and --precision f64 run on the CPU target only");
  if (precision == Precision::F64)
    for (HostTensor &t : inputs) {
      if (t.dtype != NNCC_DTYPE_F32)
        continue;
      uint64_t n = t.numelOf();
      std::vector<double> wide(n);
      for (uint64_t k = 0; k < n; ++k) {
        float f;
        memcpy(&f, static_cast<const char *>(t.data()) + 4 * k, 4);
        wide[k] = f;
      }
      t.dtype = NNCC_DTYPE_F64;
      t.resize(n * 8);
      if (n)
        memcpy(t.data(), wide.data(), n * 8);
    }
  std::string libPath;
  if (!compileCached(*module, source, cuda, libPath, gradMode, precision == Precision::F64))
    return 1;
  ModelHandle h;
  h.lib = dlopen(libPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h.lib)
    return fail("cannot load '" + libPath + "': " + dlerror());
  auto getAbi = reinterpret_cast<nncc_model_get_abi_fn>(dlsym(h.lib, "nncc_model_get_abi"));
  if (!getAbi)
    return fail("'" + libPath + "' is not a library generated by nncc (no nncc_model_get_abi)");
  h.abi = getAbi();
  if (!h.abi || h.abi->abi_version != NNCC_MODEL_ABI_VERSION)
    return fail("'" + libPath + "' has an incompatible ABI version");
  nncc_error err;
  if (h.abi->create(cuda ? NNCC_TARGET_CUDA : NNCC_TARGET_CPU, &h.model, &err) != NNCC_OK)
    return fail(llvm::Twine("creating the model: ") + err.message);
  if (!weightsFile.empty()) {
    if (h.abi->load_weights(h.model, weightsFile.c_str(), &err) != NNCC_OK)
      return fail(err.message);
  } else if (h.abi->init_weights(h.model, seed, &err) != NNCC_OK) {
    return fail(llvm::Twine("init_weights: ") + err.message);
  }
  for (HostTensor &t : inputs)
    if (h.abi->set_input(h.model, t.name.c_str(), t.dtype, (int32_t)t.shape.size(),
                         t.shape.data(), t.data(), &err) != NNCC_OK)
      return fail((inputsFile.empty() ? std::string() : "'" + inputsFile + "': ") +
                  err.message);
  if (!saveInputs.empty())
    if (int rc = writeInputs())
      return rc;
  if (gradMode) {
    if (h.abi->forward_backward(h.model, &err) != NNCC_OK)
      return fail(llvm::Twine("forward_backward: ") + err.message);
  } else if (h.abi->forward(h.model, &err) != NNCC_OK) {
    return fail(llvm::Twine("forward: ") + err.message);
  }

  nncc_safetensors_writer *w = nullptr;
  if (!runOutput.empty())
    nncc_safetensors_writer_create(&w, nullptr);
  auto destroyWriter = llvm::make_scope_exit([&] {
    if (w)
      nncc_safetensors_writer_destroy(w);
  });
  int32_t numWritten = h.abi->num_outputs + (gradMode ? h.abi->num_grads : 0);
  for (int32_t i = 0; i < numWritten; ++i) {
    const char *name = i < h.abi->num_outputs ? h.abi->outputs[i].name
                                              : h.abi->grads[i - h.abi->num_outputs].name;
    nncc_dtype dt;
    int32_t rank;
    const int64_t *shape;
    const void *data;
    if (h.abi->get_output(h.model, name, &dt, &rank, &shape, &data, &err) != NNCC_OK)
      return fail(err.message);
    if (!quiet)
      summary(name, dt, rank, shape, data);
    if (w) {
      uint64_t bytes = nncc_dtype_size(dt);
      for (int32_t k = 0; k < rank; ++k)
        bytes *= (uint64_t)shape[k];
      if (nncc_safetensors_writer_add(w, name, dt, rank, shape, data, bytes, &err) != NNCC_OK)
        return fail(llvm::Twine("writing outputs: ") + err.message);
    }
  }
  if (w && nncc_safetensors_writer_write(w, runOutput.c_str(), &err) != NNCC_OK)
    return fail(llvm::Twine("writing outputs: ") + err.message);
  return 0;
}

mlir::OwningOpRef<mlir::ModuleOp> loadModelFile(mlir::MLIRContext &context,
                                                llvm::SourceMgr &sourceMgr,
                                                const std::string &path, std::string &source) {
  return loadModule(context, sourceMgr, path, source);
}
bool compileModelCached(mlir::ModuleOp module, const std::string &source, bool grad, bool f64,
                        std::string &libPath) {
  return compileCached(module, source, /*cuda=*/false, libPath, grad, f64);
}

} // namespace nncc::tool
