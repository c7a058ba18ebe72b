//===- nncc.cpp - The nncc compiler driver --------------------------------===//
//
//   nncc compile M.nn --emit ast|nn|nn-grad|nnk|cpp|cuda [-o FILE]
//   nncc compile M.nn -o DIR [--target cpu|cuda|all] [--cuda-arch sm_90]
//   (M.mlir instead of M.nn: an nn or nnk module, for the back end's tests)
//   nncc inspect M.nn                  the signature as JSON
//   nncc run M.nn [--weights W] (--inputs I | --random-inputs --dim B=2)
//            [-o O.safetensors] [--target cpu|cuda] [--seed N] (Run.cpp)
//   nncc train M.nn --data D.safetensors ... (Train.cpp)
//   nncc import-hf DIR -o OUT          a Hugging Face checkpoint (HuggingFace.cpp)
//   nncc export-hf M.nn --weights W -o DIR   and back
//   nncc --help | --version
//
// Subcommands are llvm::cl SubCommands; each has a run function. They share
// the front end, the pass pipeline (nncc/Pipeline) and the driver library
// (nncc/Driver: compile cache, loaded models, host tensors). New emission
// levels extend `EmitLevel` and `runCompile`.
//
//===----------------------------------------------------------------------===//
#include "HuggingFace.h"
#include "Run.h"

#include "nncc/Driver/CompileCache.h"
#include "nncc/Driver/ModuleLoader.h"
#include "nncc/Driver/Support.h"
#include "nncc/Frontend/AST.h"
#include "nncc/Pipeline/Pipeline.h"
#include "nncc/Target/Compile.h"
#include "nncc/Target/Emitters.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <exception>
#include <unistd.h>

#ifndef NNCC_VERSION
#define NNCC_VERSION "0.1.0"
#endif

namespace cl = llvm::cl;
using namespace nncc::frontend;

namespace {
enum class EmitLevel { AST, NN, NNGrad, NNK, CPP, CUDA };

cl::OptionCategory nnccCategory("nncc options");
cl::SubCommand compileCmd("compile", "Compile a .nn model");

cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.nn>"),
                               cl::Required, cl::sub(compileCmd),
                               cl::cat(nnccCategory));
cl::opt<EmitLevel> emitLevel(
    "emit", cl::desc("What to produce"), cl::init(EmitLevel::NN),
    cl::values(clEnumValN(EmitLevel::AST, "ast",
                          "the checked abstract syntax tree"),
               clEnumValN(EmitLevel::NN, "nn",
                          "the verified module in the nn dialect"),
               clEnumValN(EmitLevel::NNGrad, "nn-grad",
                          "the nn module with @forward_backward added by "
                          "nncc-autodiff (loss, outputs, grad.<param>)"),
               clEnumValN(EmitLevel::NNK, "nnk",
                          "the module in the nnk (kernel) dialect"),
               clEnumValN(EmitLevel::CPP, "cpp",
                          "the generated host C++ (<model>.cpp)"),
               clEnumValN(EmitLevel::CUDA, "cuda",
                          "the generated CUDA C++ (<model>.cu)")),
    cl::sub(compileCmd), cl::cat(nnccCategory));
cl::opt<std::string> outputFile(
    "o",
    cl::desc("With --emit: output file (default: stdout). Without --emit: the "
             "directory that receives <model>.{cpp,cu,h} and lib<model>.so"),
    cl::value_desc("FILE|DIR"), cl::init("-"), cl::sub(compileCmd),
    cl::cat(nnccCategory));
cl::opt<nncc::CudaCode> compileCuda(
    "target", cl::desc("What lib<model>.so runs on"),
    cl::init(nncc::CudaCode::None),
    cl::values(clEnumValN(nncc::CudaCode::None, "cpu", "the CPU only"),
               clEnumValN(nncc::CudaCode::Required, "cuda",
                          "the CPU and CUDA (needs nvcc)"),
               clEnumValN(nncc::CudaCode::WhenNvccFound, "all",
                          "the CPU, and CUDA when nvcc is present")),
    cl::sub(compileCmd), cl::cat(nnccCategory));
cl::opt<std::string> cudaArch("cuda-arch", cl::desc("nvcc -arch (default sm_90)"),
                              cl::init("sm_90"), cl::sub(compileCmd),
                              cl::cat(nnccCategory));

cl::opt<bool> compileGrad(
    "grad",
    cl::desc("Also differentiate (forward_train, backward, train_step): library "
             "builds and --emit nnk|cpp|cuda"),
    cl::sub(compileCmd), cl::cat(nnccCategory));
cl::opt<bool> compileVJP(
    "vjp",
    cl::desc("With --grad (or --emit nn-grad): the backward is the vector-Jacobian "
             "product: a cotangent for every float output and the loss "
             "(set_cotangent), gradients for every parameter and every float input "
             "(grad.<input>); ABI 5"),
    cl::sub(compileCmd), cl::cat(nnccCategory));
cl::opt<bool> compileBundle(
    "bundle",
    cl::desc("Library build: make -o DIR a self-contained deploy bundle: lib<model>.so "
             "relinked to find its libraries beside it, the nncc runtime and kernel "
             "libraries, OpenBLAS and the other libraries they load (not the C/C++ runtime "
             "or CUDA), nncc-runner and the ABI headers (docs/runtime.md)"),
    cl::sub(compileCmd), cl::cat(nnccCategory));
cl::opt<char> compileOptLevel(
    "O",
    cl::desc("Library build: optimisation level of the generated host code, -O0 to -O3 "
             "(default: $NNCC_OPT_LEVEL, else 3)"),
    cl::Prefix, cl::value_desc("0-3"), cl::sub(compileCmd), cl::cat(nnccCategory));
cl::opt<bool> compileF64("f64", cl::desc("Library build: the same as --precision f64"),
                         cl::sub(compileCmd), cl::cat(nnccCategory));
cl::opt<nncc::Precision> compilePrecision(
    "precision", cl::desc("Library build and --emit cpp|cuda: the float storage type"),
    cl::init(nncc::Precision::F32),
    cl::values(clEnumValN(nncc::Precision::F32, "f32", "float (default)"),
               clEnumValN(nncc::Precision::F64, "f64", "double (CPU code)"),
               clEnumValN(nncc::Precision::BF16, "bf16",
                          "bfloat16 storage with fp32 arithmetic: CUDA only, inference only "
                          "(the ops with a bf16 kernel: docs/design.md)")),
    cl::sub(compileCmd), cl::cat(nnccCategory));

/// --precision, or f64 for --f64 (the two must agree).
nncc::Precision compilePrecisionChoice() {
  return compileF64 ? nncc::Precision::F64 : compilePrecision.getValue();
}

nncc::tool::MemoryBudgetOpt compileBudget(
    "memory-budget",
    cl::desc("With --grad: the most arena memory the training step may use (bytes, "
             "NNNKiB, NNNMiB, NNNGiB or min) for the --dim binding; residuals are "
             "recomputed in the backward until the plan fits (nncc-remat)"),
    cl::value_desc("SIZE|min"), cl::sub(compileCmd), cl::cat(nnccCategory));
cl::list<std::string> compileDims("dim",
                                  cl::desc("NAME=SIZE: the binding --memory-budget is for"),
                                  cl::value_desc("NAME=SIZE"), cl::sub(compileCmd),
                                  cl::cat(nnccCategory));

void printVersion(llvm::raw_ostream &os) {
  os << "nncc " << NNCC_VERSION << "\n"
     << "  built with LLVM/MLIR " << LLVM_VERSION_STRING << "\n";
}

/// Opens -o (default stdout); null after printing the error.
std::unique_ptr<llvm::ToolOutputFile> openOutput() {
  std::string errorMessage;
  auto output = mlir::openOutputFile(outputFile, &errorMessage);
  if (!output)
    nncc::driver::fail(errorMessage);
  return output;
}

/// --emit ast: the checked syntax tree.
int emitAST(mlir::MLIRContext &context, llvm::SourceMgr &sourceMgr) {
  std::optional<unsigned> bufId = nncc::driver::readSourceFile(sourceMgr, inputFile);
  if (!bufId)
    return 1;
  if (llvm::StringRef(inputFile.getValue()).ends_with(".mlir"))
    return nncc::driver::fail("--emit ast needs a .nn source");
  nncc::driver::CheckedModel checked =
      nncc::driver::checkModel(context, sourceMgr, *bufId);
  if (!checked.model)
    return 1;
  auto output = openOutput();
  if (!output)
    return 1;
  dumpAST(*checked.ast, output->os());
  output->keep();
  return 0;
}

/// Without --emit, -o DIR: the sources and lib<model>.so.
int buildLibrary(mlir::ModuleOp module) {
  nncc::CompileOptions opts;
  opts.precision = compilePrecisionChoice();
  opts.bundle = compileBundle;
  opts.outputDir = outputFile;
  opts.cuda = compileCuda;
  opts.cudaArch = cudaArch;
  opts.pchDir = nncc::driver::pchRoot();
  if (compileOptLevel.getNumOccurrences()) {
    char c = compileOptLevel;
    if (c < '0' || c > '3')
      return nncc::driver::fail(std::string("-O") + c + ": expected -O0, -O1, -O2 or -O3");
    opts.optLevel = c - '0';
  } else {
    std::string error;
    std::optional<int> level = nncc::defaultOptLevel(error);
    if (!level)
      return nncc::driver::fail(error);
    opts.optLevel = *level;
  }
  nncc::CompileArtifacts artifacts;
  if (mlir::failed(nncc::compileModel(module, opts, artifacts)))
    return 1;
  if (compileCuda == nncc::CudaCode::WhenNvccFound && !artifacts.builtCuda)
    llvm::errs() << "nncc: note: nvcc not found: lib" << artifacts.modelName
                 << ".so runs on the CPU only\n";
  return 0;
}

int runCompile() {
  llvm::SourceMgr sourceMgr;
  mlir::MLIRContext context;
  nncc::driver::prepareContext(context);
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  if (emitLevel == EmitLevel::AST)
    return emitAST(context, sourceMgr);
  if (compileF64 && compilePrecision.getNumOccurrences() &&
      compilePrecision != nncc::Precision::F64)
    return nncc::driver::fail("--f64 and --precision " +
                              std::string(nncc::precisionName(compilePrecision)) + " disagree");

  mlir::OwningOpRef<mlir::ModuleOp> module =
      nncc::driver::loadModule(context, sourceMgr, inputFile);
  if (!module)
    return 1;
  // Back-end stages lower to nnk (with --grad: differentiated first).
  bool build = emitLevel.getNumOccurrences() == 0 && outputFile != "-";
  if (compileBundle && !build)
    return nncc::driver::fail("--bundle applies to library builds (-o DIR, no --emit)");
  bool backEnd = build || emitLevel == EmitLevel::NNK ||
                 emitLevel == EmitLevel::CPP || emitLevel == EmitLevel::CUDA;
  bool grad = backEnd ? compileGrad.getValue() : emitLevel == EmitLevel::NNGrad;
  if (compileVJP && !grad)
    return nncc::driver::fail("--vjp applies to --grad builds and --emit nn-grad");
  nncc::driver::GradKind gradKind =
      !grad ? nncc::driver::GradKind::None
            : compileVJP ? nncc::driver::GradKind::VJP : nncc::driver::GradKind::Loss;
  if (!compileBudget.empty() || !compileDims.empty()) {
    if (!grad || !backEnd)
      return nncc::driver::fail("--memory-budget and --dim apply to --grad builds and "
                                "--emit nnk|cpp|cuda with --grad");
    std::vector<std::string> modelDims;
    if (auto arr = (*module)->getAttrOfType<mlir::ArrayAttr>("nn.dims"))
      for (mlir::Attribute a : arr)
        modelDims.push_back(mlir::cast<mlir::StringAttr>(a).getValue().str());
    std::map<std::string, int64_t> dims;
    for (const std::string &d : compileDims) {
      auto [k, v] = llvm::StringRef(d).split('=');
      int64_t x;
      if (k.empty() || v.getAsInteger(10, x) || x < 1)
        return nncc::driver::fail("--dim expects NAME=SIZE with SIZE >= 1, got '" + d + "'");
      if (std::find(modelDims.begin(), modelDims.end(), k.str()) == modelDims.end())
        return nncc::driver::fail("--dim " + k + ": the model has no dim '" + k + "'");
      dims[k.str()] = x;
    }
    nncc::driver::RematRequest remat;
    mlir::OwningOpRef<mlir::ModuleOp> source = std::move(module);
    if (int rc = nncc::tool::lowerWithMemoryBudget(compileBudget, *source, module, inputFile,
                                                   modelDims, dims, gradKind,
                                                   /*trainMode=*/true, compilePrecisionChoice(), remat,
                                                   emitLevel == EmitLevel::CUDA ||
                                                           compileCuda == nncc::CudaCode::Required
                                                       ? nncc::TargetKind::CUDA
                                                       : nncc::TargetKind::CPU))
      return rc;
    mlir::FailureOr<nncc::ModelSignature> sig = nncc::getSignature(*module);
    if (mlir::failed(sig))
      return 1;
    for (const auto &[name, size] : dims)
      if (int rc = nncc::tool::checkDimRange(*sig, name, size))
        return rc;
  } else if (mlir::failed(nncc::driver::runPipeline(
                 *module, gradKind, /*trainMode=*/true,
                 backEnd ? nncc::PipelineStage::NNK : nncc::PipelineStage::NN))) {
    return 1;
  }
  if (build)
    return buildLibrary(*module);

  auto output = openOutput();
  if (!output)
    return 1;
  mlir::LogicalResult r = mlir::success();
  if (emitLevel == EmitLevel::CPP)
    r = nncc::target::emitCpp(*module, output->os(),
                              compileCuda != nncc::CudaCode::None, compilePrecisionChoice());
  else if (emitLevel == EmitLevel::CUDA)
    r = nncc::target::emitCuda(*module, output->os(), compilePrecisionChoice());
  else
    module->print(output->os());
  // nn and nn-grad end with a newline; nnk as printed.
  if (!backEnd)
    output->os() << "\n";
  if (mlir::failed(r))
    return 1;
  output->keep();
  return 0;
}
} // namespace

/// LLVM's option errors ("nncc: Unknown command line argument '--x'.  Try:
/// ...", "nncc: Did you mean '--y'?") as one `nncc: error:` line.
static int failOptions(llvm::StringRef text, llvm::StringRef subcommand) {
  llvm::SmallVector<llvm::StringRef> lines, parts;
  text.split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef line : lines) {
    line = line.trim();
    if (line.starts_with("nncc")) // "nncc: " or "nncc run: "
      line = line.split(": ").second;
    line = line.split("  Try:").first.split(": See:").first;
    if (line.starts_with("for the ")) // "for the --dim option: requires a value!"
      line = line.substr(8);
    line = line.rtrim(" .!");
    if (!line.empty())
      parts.push_back(line);
  }
  std::string message;
  for (llvm::StringRef part : parts)
    message += (message.empty() ? part.substr(0, 1).lower() : "; " + part.substr(0, 1).lower()) +
               part.substr(1).str();
  if (message.empty())
    message = "invalid command line";
  return nncc::driver::fail(message + " (see 'nncc " +
                            (subcommand.empty() ? "" : subcommand.str() + " ") + "--help')");
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // Never an abort: an allocation that fails anyway (a size no check
  // foresaw) ends the process with one error line and status 1.
  llvm::install_bad_alloc_error_handler([](void *, const char *, bool) {
    static const char msg[] = "nncc: error: out of memory: an allocation failed (a size too "
                              "large for this machine?)\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(1);
  });
  std::set_terminate([] {
    static const char msg[] = "nncc: error: out of memory or a size out of range (the "
                              "standard library refused an allocation)\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(1);
  });
  // A mistyped subcommand: the nearest one (cl suggests flags itself).
  if (argc > 1 && argv[1][0] != '-') {
    llvm::StringRef given = argv[1];
    const llvm::StringRef commands[] = {"compile", "eval",    "export-hf", "import-hf",
                                         "inspect", "run",     "train"};
    if (!llvm::is_contained(commands, given)) {
      llvm::StringRef nearest;
      unsigned best = 3; // at most two edits away
      for (llvm::StringRef c : commands)
        if (unsigned d = given.edit_distance(c, /*AllowReplacements=*/true, best); d < best) {
          best = d;
          nearest = c;
        }
      return nncc::driver::fail(
          "unknown command '" + given + "'" +
          (nearest.empty() ? llvm::Twine("") : llvm::Twine(": did you mean '") + nearest + "'?") +
          " (commands: compile, eval, export-hf, import-hf, inspect, run, train; see 'nncc --help')");
    }
  }
  cl::SetVersionPrinter(printVersion);
  // libLLVM registers many global options; show only ours in --help.
  const cl::OptionCategory *cats[] = {&nnccCategory, &nncc::tool::runCategory,
                                      &nncc::tool::hfCategory};
  cl::HideUnrelatedOptions(cats);
  // Parse errors come back in clErrors; an option's own (a bad or missing
  // value) go to stderr, which a temporary file holds meanwhile.
  std::string clErrors;
  llvm::raw_string_ostream clErrorStream(clErrors);
  FILE *held = std::tmpfile();
  const int savedStderr = held ? ::dup(2) : -1;
  if (savedStderr >= 0)
    ::dup2(::fileno(held), 2);
  const bool parsed = cl::ParseCommandLineOptions(argc, argv,
                                                  "nncc: compiles neural-network models "
                                                  "written in the .nn language\n",
                                                  &clErrorStream);
  if (savedStderr >= 0) {
    ::dup2(savedStderr, 2);
    ::close(savedStderr);
    std::string optionErrors;
    char chunk[4096];
    std::rewind(held);
    for (size_t n; (n = std::fread(chunk, 1, sizeof chunk, held)) > 0;)
      optionErrors.append(chunk, n);
    clErrors = optionErrors + clErrors;
  }
  if (held)
    std::fclose(held);
  if (!parsed)
    return failOptions(clErrors, argc > 1 && argv[1][0] != '-' ? argv[1] : "");
  if (!clErrors.empty()) // a warning of an option (none are known): as it was
    llvm::errs() << clErrors;
  if (compileCmd)
    return runCompile();
  if (nncc::tool::inspectCmd)
    return nncc::tool::runInspect();
  if (nncc::tool::runCmd)
    return nncc::tool::runRun();
  if (nncc::tool::trainCmd)
    return nncc::tool::runTrain();
  if (nncc::tool::evalCmd)
    return nncc::tool::runEval();
  if (nncc::tool::importHfCmd)
    return nncc::tool::runImportHf();
  if (nncc::tool::exportHfCmd)
    return nncc::tool::runExportHf();
  llvm::errs() << "nncc: error: no subcommand given; try 'nncc --help'\n";
  return 1;
}
