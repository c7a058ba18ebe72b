//===- nncc.cpp - The nncc compiler driver --------------------------------===//
//
//   nncc compile M.nn --emit ast|nn|nn-grad|nnk|cpp|cuda [-o FILE]
//   nncc compile M.nn -o DIR [--target cpu|cuda|all] [--cuda-arch sm_90]
//   (M.mlir instead of M.nn: an nn or nnk module, for the back end's tests)
//   nncc inspect M.nn                  the signature as JSON
//   nncc run M.nn [--weights W] (--inputs I | --random-inputs --dim B=2)
//            [-o O.safetensors] [--target cpu|cuda] [--seed N] (Run.cpp)
//   nncc --help | --version
//
// Subcommands are llvm::cl SubCommands; each has a run function below, and
// new emission levels extend `EmitLevel` and `runCompile`.
//
//===----------------------------------------------------------------------===//
#include "nncc/Frontend/AST.h"
#include "nncc/Frontend/Diagnostics.h"
#include "nncc/Frontend/Parser.h"
#include "nncc/Frontend/Sema.h"
#include "nncc/Frontend/MLIRGen.h"
#include "nncc/Target/Compile.h"
#include "nncc/Target/Emitters.h"
#include "Run.h"

#include "dialects/NNK/IR/NNKDialect.h"
#include "dialects/NN/IR/NNDialect.h"
#include "dialects/NN/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

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
cl::opt<nncc::CompileTarget> compileTarget(
    "target", cl::desc("What lib<model>.so runs on"),
    cl::init(nncc::CompileTarget::CPU),
    cl::values(clEnumValN(nncc::CompileTarget::CPU, "cpu", "the CPU only"),
               clEnumValN(nncc::CompileTarget::CUDA, "cuda",
                          "the CPU and CUDA (needs nvcc)"),
               clEnumValN(nncc::CompileTarget::All, "all",
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
cl::opt<bool> compileF64("f64", cl::desc("Library build: CPU code in double precision"),
                         cl::sub(compileCmd), cl::cat(nnccCategory));

void printVersion(llvm::raw_ostream &os) {
  os << "nncc " << NNCC_VERSION << "\n"
     << "  built with LLVM/MLIR " << LLVM_VERSION_STRING << "\n";
}

/// --emit nn-grad: adds @forward_backward (nncc-autodiff) and verifies.
mlir::LogicalResult addBackward(mlir::ModuleOp module) {
  mlir::PassManager pm(module.getContext());
  pm.addPass(nncc::nn::createNNAutodiff());
  return pm.run(module);
}

int runCompile() {
  llvm::SourceMgr sourceMgr;
  mlir::MLIRContext context;
  context.disableMultithreading();
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);

  auto bufOrErr = llvm::MemoryBuffer::getFileOrSTDIN(inputFile);
  if (std::error_code ec = bufOrErr.getError()) {
    llvm::errs() << "nncc: error: cannot read '" << inputFile
                 << "': " << ec.message() << "\n";
    return 1;
  }
  unsigned bufId = sourceMgr.AddNewSourceBuffer(std::move(*bufOrErr),
                                                llvm::SMLoc());
  llvm::StringRef source = sourceMgr.getMemoryBuffer(bufId)->getBuffer();
  llvm::StringRef bufName =
      sourceMgr.getMemoryBuffer(bufId)->getBufferIdentifier();
  DiagEngine diag(context, bufName);
  context.loadDialect<nncc::nn::NNDialect, nncc::nnk::NNKDialect,
                      mlir::func::FuncDialect, mlir::arith::ArithDialect,
                      mlir::math::MathDialect>();

  // Back-end stages: from an nn module (the front end's, or a .mlir file).
  bool build = emitLevel.getNumOccurrences() == 0 && outputFile != "-";
  bool backEnd = build || emitLevel == EmitLevel::NNK ||
                 emitLevel == EmitLevel::CPP || emitLevel == EmitLevel::CUDA;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  if (llvm::StringRef(inputFile.getValue()).ends_with(".mlir")) {
    if (emitLevel == EmitLevel::AST)
      return llvm::errs() << "nncc: error: --emit ast needs a .nn source\n", 1;
    module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
    if (!module || mlir::failed(mlir::verify(*module)))
      return 1;
  }
  if (backEnd) {
    if (!module) {
      std::unique_ptr<FileAST> ast = parseBuffer(source, diag);
      if (!ast)
        return 1;
      std::unique_ptr<ModelInfo> model = analyzeModel(*ast, diag);
      if (!model)
        return 1;
      module = mlirGen(context, *model, diag);
      if (!module)
        return 1;
    }
    if (compileGrad && mlir::failed(addBackward(*module)))
      return 1;
    if (build) {
      nncc::CompileOptions opts;
      opts.f64 = compileF64;
      opts.outputDir = outputFile;
      opts.target = compileTarget;
      opts.cudaArch = cudaArch;
      nncc::CompileArtifacts artifacts;
      if (mlir::failed(nncc::compileModel(*module, opts, artifacts)))
        return 1;
      if (compileTarget == nncc::CompileTarget::All && !artifacts.builtCuda)
        llvm::errs() << "nncc: note: nvcc not found: lib" << artifacts.modelName
                     << ".so runs on the CPU only\n";
      return 0;
    }
    if (mlir::failed(nncc::lowerToNNK(*module)))
      return 1;
    std::string errorMessage;
    auto output = mlir::openOutputFile(outputFile, &errorMessage);
    if (!output) {
      llvm::errs() << "nncc: error: " << errorMessage << "\n";
      return 1;
    }
    mlir::LogicalResult r = mlir::success();
    if (emitLevel == EmitLevel::NNK)
      module->print(output->os());
    else if (emitLevel == EmitLevel::CPP)
      r = nncc::target::emitCpp(*module, output->os(),
                                compileTarget != nncc::CompileTarget::CPU);
    else
      r = nncc::target::emitCuda(*module, output->os());
    if (mlir::failed(r))
      return 1;
    output->keep();
    return 0;
  }
  if (module) {
    if (emitLevel == EmitLevel::NNGrad && mlir::failed(addBackward(*module)))
      return 1;
    std::string errorMessage;
    auto output = mlir::openOutputFile(outputFile, &errorMessage);
    if (!output)
      return llvm::errs() << "nncc: error: " << errorMessage << "\n", 1;
    module->print(output->os());
    output->os() << "\n";
    output->keep();
    return 0;
  }

  std::unique_ptr<FileAST> ast = parseBuffer(source, diag);
  if (!ast)
    return 1;
  std::unique_ptr<ModelInfo> model = analyzeModel(*ast, diag);
  if (!model)
    return 1;

  std::string errorMessage;
  auto output = mlir::openOutputFile(outputFile, &errorMessage);
  if (!output) {
    llvm::errs() << "nncc: error: " << errorMessage << "\n";
    return 1;
  }

  switch (emitLevel) {
  case EmitLevel::AST:
    dumpAST(*ast, output->os());
    break;
  case EmitLevel::NNK:
  case EmitLevel::CPP:
  case EmitLevel::CUDA:
  case EmitLevel::NN:
  case EmitLevel::NNGrad: {
    mlir::OwningOpRef<mlir::ModuleOp> module = mlirGen(context, *model, diag);
    if (!module)
      return 1;
    if (emitLevel == EmitLevel::NNGrad && mlir::failed(addBackward(*module)))
      return 1;
    module->print(output->os());
    output->os() << "\n";
    break;
  }
  }
  output->keep();
  return 0;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::SetVersionPrinter(printVersion);
  // libLLVM registers many global options; show only ours in --help.
  const cl::OptionCategory *cats[] = {&nnccCategory, &nncc::tool::runCategory};
  cl::HideUnrelatedOptions(cats);
  cl::ParseCommandLineOptions(argc, argv,
                              "nncc: compiles neural-network models written "
                              "in the .nn language\n");
  if (compileCmd)
    return runCompile();
  if (nncc::tool::inspectCmd)
    return nncc::tool::runInspect();
  if (nncc::tool::runCmd)
    return nncc::tool::runRun();
  if (nncc::tool::trainCmd)
    return nncc::tool::runTrain();
  llvm::errs() << "nncc: error: no subcommand given; try 'nncc --help'\n";
  return 1;
}
