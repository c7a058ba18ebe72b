//===- Run.h - the `inspect` and `run` subcommands of nncc ------*- C++ -*-===//
#ifndef NNCC_TOOLS_NNCC_RUN_H
#define NNCC_TOOLS_NNCC_RUN_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"

#include <string>

namespace nncc::tool {
extern llvm::cl::OptionCategory runCategory;
/// True when `inspect`, `run` or `train` was given.
bool runSubcommand();
int runInspect();
int runRun();
extern llvm::cl::SubCommand inspectCmd;
extern llvm::cl::SubCommand runCmd;
extern llvm::cl::SubCommand trainCmd;
int runTrain();
/// Parses and checks a .nn (or .mlir) file; diagnostics printed.
mlir::OwningOpRef<mlir::ModuleOp> loadModelFile(mlir::MLIRContext &context,
                                                llvm::SourceMgr &sourceMgr,
                                                const std::string &path, std::string &source);
/// Compiles for the CPU into the cache (see `nncc run`); the library's path.
bool compileModelCached(mlir::ModuleOp module, const std::string &source, bool grad, bool f64,
                        std::string &libPath);
} // namespace nncc::tool

#endif
