//===- Run.cpp - `nncc inspect` and `nncc run` ----------------------------===//
//
//   nncc inspect M.nn                      the signature as JSON
//   nncc run M.nn [--weights W.safetensors] (--inputs I.safetensors |
//            --random-inputs --dim B=2 ...) [-o O.safetensors]
//            [--target cpu|cuda] [--seed N] [--quiet] [--save-inputs F]
//
// `run` lowers the model with the nncc pipeline, compiles it into the
// content-addressed cache (nncc/Driver/CompileCache.h), dlopens the library
// and drives it through nncc_model.h. Every failure prints one
// `nncc: error: ...` message and exits with status 1.
//
//===----------------------------------------------------------------------===//
#include "Run.h"
#include "Memory.h"

#include "nncc/Driver/CompileCache.h"
#include "nncc/Driver/ModuleLoader.h"
#include "nncc/Driver/HostTensor.h"
#include "nncc/Driver/ModelHandle.h"
#include "nncc/Driver/Support.h"
#include "nncc/Runtime/nncc_model.h"
#include "nncc/Target/Compile.h"
#include "nncc/Target/MemoryPlan.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <map>

namespace cl = llvm::cl;
using namespace nncc::driver;

namespace nncc::tool {

cl::OptionCategory runCategory("nncc run/inspect options");
cl::SubCommand inspectCmd("inspect", "Print a model's signature (or, with --memory, its "
                                      "memory plan) as JSON");
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
cl::opt<TargetKind> runTarget("target", cl::desc("Where to run"), cl::init(TargetKind::CPU),
                             cl::values(clEnumValN(TargetKind::CPU, "cpu", "the CPU"),
                                        clEnumValN(TargetKind::CUDA, "cuda", "a CUDA GPU")),
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
cl::list<std::string> dimValues("dim",
                                cl::desc("NAME=SIZE of a symbolic dim (run --random-inputs; "
                                         "inspect --memory)"),
                                cl::value_desc("NAME=SIZE"), cl::sub(runCmd),
                                cl::sub(inspectCmd), cl::cat(runCategory));
cl::opt<bool> inspectMemory(
    "memory",
    cl::desc("Print the memory plan for the --dim binding instead of the signature: "
             "arena_bytes, peak_bytes (the high-water mark `nncc run --memory-stats` "
             "reports for the same run), live bytes per launch, every arena slot"),
    cl::sub(inspectCmd), cl::cat(runCategory));
enum class MemoryFormat { Auto, Text, Json };
cl::opt<MemoryFormat> memoryFormat(
    "format", cl::desc("How --memory prints the plan (default: text on a terminal, else json)"),
    cl::init(MemoryFormat::Auto),
    cl::values(clEnumValN(MemoryFormat::Text, "text",
                          "a summary: activations, parameters, gradients, optimizer state, "
                          "inputs, outputs and their total"),
               clEnumValN(MemoryFormat::Json, "json",
                          "the whole plan (every launch and slot) with the totals")),
    cl::sub(inspectCmd), cl::cat(runCategory));
MemoryBudgetOpt memoryBudget(
    "memory-budget",
    cl::desc("With --grad: the most arena memory the training step may use (bytes, "
             "NNNKiB, NNNMiB, NNNGiB or min), for the dims of this run; residuals are "
             "recomputed in the backward until the plan fits (nncc-remat)"),
    cl::value_desc("SIZE|min"), cl::sub(runCmd), cl::sub(inspectCmd), cl::cat(runCategory));
cl::opt<std::string> memoryStatsFile(
    "memory-stats",
    cl::desc("Write the runtime's memory figures (arena_bytes, peak_bytes) as JSON"),
    cl::value_desc("FILE"), cl::sub(runCmd), cl::cat(runCategory));
cl::opt<std::string> saveInputs("save-inputs",
                                cl::desc("Also write the inputs used (e.g. the generated "
                                         "ones) to this safetensors file"),
                                cl::value_desc("FILE"), cl::sub(runCmd), cl::cat(runCategory));

cl::opt<std::string> runThreads(
    "threads",
    cl::desc("Threads of the CPU kernels (OpenMP and OpenBLAS), N >= 1 (default: "
             "OMP_NUM_THREADS, else one per core; docs/runtime.md, \"Threads\")"),
    cl::value_desc("N"), cl::sub(runCmd), cl::cat(runCategory));

cl::opt<bool> inputsOnly("inputs-only",
                         cl::desc("Only write the inputs (--save-inputs) and stop: no compile"),
                         cl::sub(runCmd), cl::cat(runCategory));
cl::opt<bool> gradMode("grad", cl::sub(inspectCmd),
                       cl::desc("Also run the backward pass and write grad.<param> for "
                                "every parameter: the gradient of the loss this run "
                                "reports (inference mode: dropout and zoneout off, "
                                "unless --train-mode)"),
                       cl::sub(runCmd), cl::cat(runCategory));
cl::opt<bool> trainMode("train-mode",
                        cl::desc("With --grad: training mode, dropout active with its "
                                 "fixed per-op seeds (loss and gradients of that mode)"),
                        cl::sub(inspectCmd),
                        cl::sub(runCmd), cl::cat(runCategory));
cl::opt<Precision> precision(
    "precision", cl::desc("Float storage type of the library"), cl::init(Precision::F32),
    cl::sub(inspectCmd),
    cl::values(clEnumValN(Precision::F32, "f32", "float (default)"),
               clEnumValN(Precision::F64, "f64",
                          "double (CPU): f32 inputs and weights are widened on load, outputs "
                          "are F64"),
               clEnumValN(Precision::BF16, "bf16",
                          "bfloat16 storage with fp32 arithmetic (CUDA, inference): f32 "
                          "inputs and weights are rounded on load, outputs are BF16")),
    cl::sub(runCmd), cl::cat(runCategory));

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

/// Inputs, with whether inference needs each (false: only the loss reads
/// it; forward runs without it and leaves the loss out).
llvm::json::Array jsonInputs(const std::vector<TensorSignature> &ts) {
  llvm::json::Array a = jsonTensors(ts);
  for (size_t i = 0; i < ts.size(); ++i)
    (*a[i].getAsObject())["inference"] = ts[i].inference;
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
    double x = elementAsDouble(dtype, data, i);
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
                                shapeString({shape, (size_t)rank}));
  if (finite)
    llvm::outs() << llvm::format(" min %.6g max %.6g mean %.6g", mn, mx, sum / (double)finite);
  if (nonfinite)
    llvm::outs() << " non-finite " << nonfinite;
  llvm::outs() << "\n";
}

/// The command-line inputs of `run`, checked against the signature.
struct RunInputs {
  std::map<std::string, int64_t> dims; // --dim NAME=SIZE
  std::vector<HostTensor> tensors;     // the inputs given, in the model's order
  std::vector<std::string> leftOut;    // inputs only the loss reads, not given
  /// The signature of each given tensor.
  const TensorSignature &signatureOf(const ModelSignature &sig, size_t i) const {
    for (const TensorSignature &s : sig.inputs)
      if (s.name == tensors[i].name)
        return s;
    llvm_unreachable("a run input that is not a model input");
  }
};

} // namespace

int checkDimRange(const ModelSignature &sig, llvm::StringRef dim, int64_t size) {
  auto it = std::find(sig.dims.begin(), sig.dims.end(), dim.str());
  if (it == sig.dims.end() || sig.dimRanges.size() != sig.dims.size())
    return 0;
  std::string why = sig.dimRanges[it - sig.dims.begin()].rejection(dim, size);
  return why.empty() ? 0 : fail("--dim " + why);
}

namespace {
/// --dim NAME=SIZE for dims of the model.
int parseDims(const ModelSignature &sig, std::map<std::string, int64_t> &dimMap) {
  for (const std::string &d : dimValues) {
    auto [k, v] = llvm::StringRef(d).split('=');
    int64_t x;
    if (k.empty() || v.getAsInteger(10, x) || x < 1)
      return fail("--dim expects NAME=SIZE with SIZE >= 1, got '" + d + "'");
    if (std::find(sig.dims.begin(), sig.dims.end(), k.str()) == sig.dims.end())
      return fail("--dim " + k + ": model '" + sig.model + "' has no dim '" + k +
                  "' (dims: " + llvm::join(sig.dims, ", ") + ")");
    if (int rc = checkDimRange(sig, k, x))
      return rc;
    dimMap[k.str()] = x;
  }
  return 0;
}

/// --random-inputs: input `index` drawn from --seed.
int randomTensor(const TensorSignature &s, size_t index,
                 const std::map<std::string, int64_t> &dimMap, HostTensor &t) {
  for (const std::string &d : s.dims) {
    int64_t x;
    if (!llvm::StringRef(d).getAsInteger(10, x)) {
      t.shape.push_back(x);
      continue;
    }
    auto it = dimMap.find(d);
    if (it == dimMap.end())
      return fail("--random-inputs needs the size of dim '" + d + "' (input '" + s.name +
                  "' is " + signatureString(s) + "): add --dim " + d + "=N");
    t.shape.push_back(it->second);
  }
  // The draw holds two doubles per element beside the tensor.
  if (int rc = checkAllocation("input '" + s.name + "' (" + signatureString(s) + ")", t.shape,
                               16 + nncc_dtype_size(t.dtype)))
    return rc;
  randomInput(t, s, dimMap, 1000 + index);
  return 0;
}

/// --inputs: the tensor named like input `s`, converted losslessly.
int readTensor(const TensorSignature &s, nncc_safetensors *file, HostTensor &t) {
  nncc_tensor_view view;
  nncc_error err;
  if (nncc_safetensors_find(file, s.name.c_str(), &view, &err) != NNCC_OK)
    return failMissingInput(s, inputsFile, file);
  t.shape.assign(view.shape, view.shape + view.rank);
  if (precision == Precision::F64 && t.dtype == NNCC_DTYPE_F32 &&
      view.dtype == NNCC_DTYPE_F64)
    t.dtype = NNCC_DTYPE_F64; // already the run's precision
  if (precision == Precision::BF16 && t.dtype == NNCC_DTYPE_F32 &&
      view.dtype == NNCC_DTYPE_BF16)
    t.dtype = NNCC_DTYPE_BF16;
  t.resize(view.numel * nncc_dtype_size(t.dtype));
  if (view.dtype == t.dtype) {
    if (view.nbytes)
      memcpy(t.data(), view.data, view.nbytes);
    return 0;
  }
  if (!losslessPair(view.dtype, t.dtype))
    return fail("input '" + s.name + "' in '" + inputsFile + "': expected " +
                signatureString(s) + ", got " + nncc_dtype_name(view.dtype) + " " +
                shapeString({view.shape, (size_t)view.rank}) +
                " (only lossless conversions are done)");
  std::string why = convertLossless(view.dtype, view.data, t.dtype, t.data(), view.numel);
  if (!why.empty())
    return fail("input '" + s.name + "' in '" + inputsFile + "': cannot convert " +
                nncc_dtype_name(view.dtype) + " to " + s.dtype + ": " + why);
  return 0;
}

/// Every model input, from --inputs or --random-inputs (checked before any
/// compile); warns about tensors of --inputs the model does not take.
int collectInputs(const ModelSignature &sig, RunInputs &in) {
  if (int rc = parseDims(sig, in.dims))
    return rc;
  nncc_safetensors *file = nullptr;
  llvm::scope_exit closeFile([&] {
    if (file)
      nncc_safetensors_close(file);
  });
  if (!inputsFile.empty()) {
    nncc_error err;
    if (nncc_safetensors_open(inputsFile.c_str(), &file, &err) != NNCC_OK)
      return fail(llvm::Twine("reading inputs: ") + err.message);
  }
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    const TensorSignature &s = sig.inputs[i];
    HostTensor t;
    t.name = s.name;
    t.dtype = nncc_dtype_from_name(s.dtype.c_str());
    // Serving: an input only the loss reads may be left out (no loss then).
    nncc_tensor_view view;
    if (!randomInputs && !gradMode && !s.inference &&
        nncc_safetensors_find(file, s.name.c_str(), &view, nullptr) != NNCC_OK) {
      in.leftOut.push_back(s.name);
      continue;
    }
    if (int rc = randomInputs ? randomTensor(s, i, in.dims, t) : readTensor(s, file, t))
      return rc;
    in.tensors.push_back(std::move(t));
  }
  if (file && !quiet)
    for (size_t k = 0; k < nncc_safetensors_count(file); ++k) {
      nncc_tensor_view o;
      if (nncc_safetensors_tensor_at(file, k, &o, nullptr) != NNCC_OK)
        continue;
      bool known = false;
      for (const TensorSignature &s : sig.inputs)
        known |= s.name == o.name;
      if (!known)
        llvm::errs() << "nncc: warning: '" << printable(inputsFile) << "' has a tensor '"
                     << printable(o.name)
                     << "' that is not an input of model '" << sig.model << "'\n";
    }
  return 0;
}

/// --save-inputs F.
int writeInputs(std::vector<HostTensor> &inputs) {
  nncc_error err;
  nncc_safetensors_writer *w = nullptr;
  nncc_safetensors_writer_create(&w, nullptr);
  llvm::scope_exit destroy([&] { nncc_safetensors_writer_destroy(w); });
  for (HostTensor &t : inputs)
    if (nncc_safetensors_writer_add(w, t.name.c_str(), t.dtype, (int32_t)t.shape.size(),
                                    t.shape.data(), t.data(), t.nbytes(), &err) != NNCC_OK)
      return fail(llvm::Twine("--save-inputs: ") + err.message);
  if (nncc_safetensors_writer_write(w, saveInputs.c_str(), &err) != NNCC_OK)
    return fail(llvm::Twine("--save-inputs: ") + err.message);
  return 0;
}

/// Prints a summary of every output (and grad.<param> with --grad) and
/// writes them to -o.
int writeOutputs(const ModelHandle &h, const RunInputs &in) {
  nncc_error err;
  nncc_safetensors_writer *w = nullptr;
  if (!runOutput.empty())
    nncc_safetensors_writer_create(&w, nullptr);
  llvm::scope_exit destroyWriter([&] {
    if (w)
      nncc_safetensors_writer_destroy(w);
  });
  int32_t numWritten = h.abi->num_outputs + (gradMode ? h.abi->num_grads : 0);
  for (int32_t i = 0; i < numWritten; ++i) {
    const char *name = i < h.abi->num_outputs ? h.abi->outputs[i].name
                                              : h.abi->grads[i - h.abi->num_outputs].name;
    if (!in.leftOut.empty() && i + 1 == h.abi->num_outputs && llvm::StringRef(name) == "loss") {
      if (!quiet)
        llvm::errs() << "nncc: note: no loss: '" << printable(llvm::join(in.leftOut, "', '")) << "'"
                     << (in.leftOut.size() == 1 ? " (which only the loss reads) is"
                                                : " (which only the loss reads) are")
                     << " not in '" << printable(inputsFile) << "'\n";
      continue;
    }
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

/// The dims of this run: --dim, and for the others the shapes of the inputs.
std::map<std::string, int64_t> boundDims(const ModelSignature &sig, const RunInputs &in) {
  std::map<std::string, int64_t> dims = in.dims;
  for (size_t i = 0; i < in.tensors.size(); ++i)
    for (size_t k = 0; k < in.signatureOf(sig, i).dims.size() && k < in.tensors[i].shape.size();
         ++k) {
      const std::string &d = in.signatureOf(sig, i).dims[k];
      if (std::find(sig.dims.begin(), sig.dims.end(), d) != sig.dims.end())
        dims.emplace(d, in.tensors[i].shape[k]);
    }
  return dims;
}

int lowerWithBudget(mlir::ModuleOp source, mlir::OwningOpRef<mlir::ModuleOp> &module,
                    llvm::StringRef path, const ModelSignature &sig,
                    const std::map<std::string, int64_t> &dims, RematRequest &remat) {
  if (!gradMode)
    return fail("--memory-budget applies to the training step: add --grad");
  return lowerWithMemoryBudget(memoryBudget, source, module, path, sig.dims, dims,
                               GradKind::Loss, trainMode, precision, remat,
                               runTarget);
}

/// inspect --memory: the plan of the --dim binding as JSON.
int inspectMemoryPlan(mlir::ModuleOp source, mlir::ModuleOp module,
                      const ModelSignature &sig) {
  std::map<std::string, int64_t> dims;
  if (int rc = parseDims(sig, dims))
    return rc;
  llvm::StringMap<int64_t> binding;
  for (const std::string &d : sig.dims) {
    auto it = dims.find(d);
    if (it == dims.end())
      return fail("--memory needs the size of every dim of '" + sig.model + "': add --dim " +
                  d + "=N");
    binding[d] = it->second;
  }
  mlir::OwningOpRef<mlir::ModuleOp> rematerialised;
  RematRequest remat;
  if (gradMode) {
    if (int rc = lowerWithBudget(source, rematerialised, inspectInput, sig, dims, remat))
      return rc;
    module = *rematerialised;
  }
  mlir::FailureOr<nncc::target::MemoryPlan> plan = nncc::target::planMemory(
      module, binding,
      gradMode ? nncc::target::PlanMode::Training : nncc::target::PlanMode::Forward,
      realBytes(precision));
  if (mlir::failed(plan))
    return 1;
  nncc::nn::OptimizerAttr optimizer;
  if (auto tr = module->getAttrOfType<nncc::nn::TrainAttr>("nn.train"))
    optimizer = tr.getOptimizer();
  MemoryTotals totals = memoryTotals(*plan, sig, dims, precision, gradMode, optimizer);
  bool text = memoryFormat == MemoryFormat::Text ||
              (memoryFormat == MemoryFormat::Auto && llvm::outs().is_displayed());
  if (text) {
    printMemorySummary(llvm::outs(), *plan, totals, sig.model, dims, gradMode,
                       precisionName(precision), gradMode ? &remat : nullptr);
    return 0;
  }
  llvm::json::Object obj =
      memoryPlanJSON(*plan, sig.model, dims, gradMode, precisionName(precision));
  obj["totals"] = totalsJSON(totals);
  if (gradMode)
    obj["remat"] = rematJSON(remat);
  llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(obj))) << "\n";
  return 0;
}

/// --memory-stats FILE: the runtime's arena size and high-water mark.
int writeMemoryStats(const ModelHandle &h) {
  uint64_t arena = 0, peak = 0;
  nncc_error err;
  if (h.abi->memory_stats(h.model, &arena, &peak, &err) != NNCC_OK)
    return fail(llvm::Twine("memory_stats: ") + err.message);
  llvm::json::Object obj{{"model", std::string(h.abi->model_name)},
                         {"mode", gradMode ? "training" : "forward"},
                         {"arena_bytes", static_cast<int64_t>(arena)},
                         {"peak_bytes", static_cast<int64_t>(peak)}};
  return replaceFile(memoryStatsFile,
                     llvm::formatv("{0:2}", llvm::json::Value(std::move(obj))).str() + "\n",
                     "--memory-stats");
}

/// Loads the library, sets the weights and inputs, runs forward (or
/// forward_backward) and writes the outputs.
int execute(const std::string &libPath, TargetKind target, RunInputs &in) {
  ModelHandle h;
  if (int rc = h.load(libPath, target))
    return rc;
  if (int rc = h.initWeights(weightsFile, seed))
    return rc;
  if (weightsFile.empty() && h.abi->num_params > 0 && !quiet)
    llvm::errs() << "nncc: note: no --weights: the weights are random (PyTorch's default "
                    "init, --seed "
                 << seed << ")\n";
  nncc_error err;
  for (HostTensor &t : in.tensors)
    if (h.abi->set_input(h.model, t.name.c_str(), t.dtype, (int32_t)t.shape.size(),
                         t.shape.data(), t.data(), &err) != NNCC_OK)
      return fail((inputsFile.empty() ? std::string() : "'" + inputsFile + "': ") +
                  err.message);
  if (!saveInputs.empty())
    if (int rc = writeInputs(in.tensors))
      return rc;
  if (gradMode) {
    if (h.abi->forward_backward(h.model, &err) != NNCC_OK)
      return fail(llvm::Twine("forward_backward: ") + err.message);
  } else if (h.abi->forward(h.model, &err) != NNCC_OK) {
    return fail(llvm::Twine("forward: ") + err.message);
  }
  if (!memoryStatsFile.empty())
    if (int rc = writeMemoryStats(h))
      return rc;
  return writeOutputs(h, in);
}
} // namespace

int lowerWithMemoryBudget(llvm::StringRef budget, mlir::ModuleOp source,
                          mlir::OwningOpRef<mlir::ModuleOp> &module,
                          llvm::StringRef path, const std::vector<std::string> &modelDims,
                          const std::map<std::string, int64_t> &dims, GradKind grad,
                          bool trainMode, Precision precision, RematRequest &remat,
                          TargetKind target) {
  if (!budget.empty()) {
    std::string error;
    mlir::FailureOr<nncc::MemoryBudget> b = nncc::MemoryBudget::parse(budget, error);
    if (mlir::failed(b))
      return fail("--memory-budget: " + error);
    remat.budget = *b;
  }
  remat.search.realSize = realBytes(precision);
  // A CUDA build's plan leaves out the workspace only the CPU kernels use.
  remat.search.target = target;
  for (const std::string &d : modelDims) {
    auto it = dims.find(d);
    if (it == dims.end())
      return fail("--memory-budget is for one binding of the dims: add --dim " + d + "=SIZE");
    remat.search.dims[d] = it->second;
  }
  module = source.clone();
  if (mlir::failed(runPipeline(*module, grad, trainMode, nncc::PipelineStage::NNK, remat, path)))
    return 1;
  return 0;
}

int runInspect() {
  mlir::MLIRContext context;
  prepareContext(context);
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  // The model is built once; each lowering works on a copy.
  mlir::OwningOpRef<mlir::ModuleOp> source = loadModule(context, sourceMgr, inspectInput);
  if (!inspectMemory && (gradMode || trainMode || precision.getNumOccurrences() ||
                         !dimValues.empty()))
    return fail("--grad, --train-mode, --precision and --dim of inspect apply to --memory");
  if (!source)
    return 1;
  mlir::OwningOpRef<mlir::ModuleOp> module = source->clone();
  if (mlir::failed(runPipeline(*module, gradMode ? GradKind::Loss : GradKind::None, trainMode,
                               nncc::PipelineStage::NNK, inspectInput)))
    return 1;
  mlir::FailureOr<ModelSignature> sig = getSignature(*module);
  if (mlir::failed(sig))
    return 1;
  if (!memoryBudget.empty() && !inspectMemory)
    return fail("--memory-budget of inspect applies to --memory --grad");
  if (inspectMemory)
    return inspectMemoryPlan(*source, *module, *sig);
  llvm::json::Array dims;
  for (const std::string &d : sig->dims)
    dims.push_back(d);
  // The dims that cannot take every size: [min, max] and the ops that say so.
  llvm::json::Object ranges;
  for (size_t i = 0; i < sig->dims.size() && i < sig->dimRanges.size(); ++i) {
    const nncc::DimRange &r = sig->dimRanges[i];
    if (r.min == 0 && r.max < 0)
      continue;
    llvm::json::Object o{{"min", r.min}};
    if (!r.minWhy.empty())
      o["min_why"] = r.minWhy;
    if (r.max >= 0) {
      o["max"] = r.max;
      o["max_why"] = r.maxWhy;
    }
    ranges[sig->dims[i]] = std::move(o);
  }
  llvm::json::Object obj{{"model", sig->model},
                         {"dims", std::move(dims)},
                         {"dim_ranges", std::move(ranges)},
                         {"inputs", jsonInputs(sig->inputs)},
                         {"outputs", jsonTensors(sig->outputs)},
                         {"parameters", jsonParams(sig->params)}};
  llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(obj))) << "\n";
  return 0;
}

/// Every file nncc run writes, checked before any work (Support.h).
int checkRunOutputs() {
  std::vector<InputPath> reads = {
      {"the model", runInput}, {"--inputs", inputsFile}, {"--weights", weightsFile}};
  for (auto [flag, path] : {std::pair<llvm::StringRef, const std::string *>{"-o", &runOutput},
                            {"--save-inputs", &saveInputs},
                            {"--memory-stats", &memoryStatsFile}}) {
    if (path->empty())
      continue;
    if (int rc = checkOutputPath(flag, *path, reads))
      return rc;
    reads.push_back({flag, *path});
  }
  return 0;
}

/// --threads N (0 without it), or an error naming the value (-1).
int parseThreads() {
  if (runThreads.getNumOccurrences() == 0)
    return 0;
  int n = 0;
  llvm::StringRef v(runThreads);
  if (v.getAsInteger(10, n) || n < 1) {
    fail("--threads expects a whole number >= 1, got '" + v + "'");
    return -1;
  }
  return n;
}

/// Sets the threads of the CPU kernels: OpenMP's (their parallel loops and
/// GEMM panels) and OpenBLAS's (its pool, for a GEMM outside a parallel
/// region). nncc loads both with libnncc_kernels, the model libraries share
/// them.
int setKernelThreads(int n) {
  auto omp = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  auto blas = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (!omp && !blas)
    return fail("--threads: neither OpenMP nor OpenBLAS is loaded");
  if (omp)
    omp(n);
  if (blas)
    blas(n);
  return 0;
}

int runRun() {
  int threads = parseThreads();
  if (threads < 0 || (threads > 0 && setKernelThreads(threads)))
    return 1;
  if (inputsFile.empty() && !randomInputs)
    return fail("nncc run needs --inputs I.safetensors or --random-inputs");
  if (!inputsFile.empty() && randomInputs)
    return fail("--inputs and --random-inputs exclude each other");
  if (int rc = checkRunOutputs())
    return rc;
  const bool cuda = runTarget == TargetKind::CUDA;
  if (precision == Precision::BF16 && !cuda)
    return fail("--precision bf16 runs on the CUDA target only: add --target cuda");
  if (cuda) {
    const nncc_cuda_driver *drv = nullptr;
    nncc_error err;
    if (nncc_cuda_driver_get(&drv, &err) != NNCC_OK)
      return fail("--target cuda: " + llvm::Twine(err.message));
  }

  mlir::MLIRContext context;
  prepareContext(context);
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  std::string source;
  // The model is built once; each lowering works on a copy.
  mlir::OwningOpRef<mlir::ModuleOp> nnModule = loadModule(context, sourceMgr, runInput, &source);
  if (!nnModule)
    return 1;
  mlir::OwningOpRef<mlir::ModuleOp> module = nnModule->clone();
  if (mlir::failed(runPipeline(*module, gradMode ? GradKind::Loss : GradKind::None, trainMode,
                               nncc::PipelineStage::NNK, runInput)))
    return 1;
  mlir::FailureOr<ModelSignature> sig = getSignature(*module);
  if (mlir::failed(sig))
    return 1;

  // Inputs first (cheap errors before a compile).
  RunInputs in;
  if (int rc = collectInputs(*sig, in))
    return rc;
  if (!randomInputs) {
    std::map<std::string, int64_t> dims = boundDims(*sig, in);
    for (size_t i = 0; i < in.tensors.size(); ++i) {
      HostTensor &t = in.tensors[i];
      if (int rc = checkInputValues(in.signatureOf(*sig, i), t.dtype, t.shape, t.data(), dims,
                                    inputsFile))
        return rc;
    }
  }
  if (trainMode && !gradMode)
    return fail("--train-mode applies to --grad runs");
  if (inputsOnly) {
    if (saveInputs.empty())
      return fail("--inputs-only needs --save-inputs F");
    return writeInputs(in.tensors);
  }
  if (precision == Precision::F64 && cuda)
    return fail("--precision f64 runs on the CPU target only");
  for (HostTensor &t : in.tensors)
    if (precision == Precision::F64)
      t.widenToF64();
    else if (precision == Precision::BF16)
      t.narrowToBf16();
  RematRequest remat;
  if (!memoryBudget.empty())
    if (int rc = lowerWithBudget(*nnModule, module, runInput, *sig, boundDims(*sig, in), remat))
      return rc;
  std::string libPath;
  CacheKeyOptions key;
  key.remat = remat.key();
  key.target = runTarget;
  key.grad = gradMode;
  key.evalMode = !trainMode;
  key.precision = precision;
  if (!compileCached(*module, source, key, libPath))
    return 1;
  return execute(libPath, runTarget, in);
}

} // namespace nncc::tool
