//===- nncc.cpp - The nncc compiler driver --------------------------------===//
//
//   nncc compile M.nn --emit ast|nn [-o FILE]
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
enum class EmitLevel { AST, NN };

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
                          "the verified module in the nn dialect")),
    cl::sub(compileCmd), cl::cat(nnccCategory));
cl::opt<std::string> outputFile("o", cl::desc("Output file (default: stdout)"),
                                cl::value_desc("FILE"), cl::init("-"),
                                cl::sub(compileCmd), cl::cat(nnccCategory));

void printVersion(llvm::raw_ostream &os) {
  os << "nncc " << NNCC_VERSION << "\n"
     << "  built with LLVM/MLIR " << LLVM_VERSION_STRING << "\n";
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
  case EmitLevel::NN: {
    mlir::OwningOpRef<mlir::ModuleOp> module = mlirGen(context, *model, diag);
    if (!module)
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
  cl::HideUnrelatedOptions(nnccCategory);
  cl::ParseCommandLineOptions(argc, argv,
                              "nncc: compiles neural-network models written "
                              "in the .nn language\n");
  if (compileCmd)
    return runCompile();
  llvm::errs() << "nncc: error: no subcommand given; try 'nncc --help'\n";
  return 1;
}
