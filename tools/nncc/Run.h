//===- Run.h - the `inspect`, `run` and `train` subcommands -----*- C++ -*-===//
#ifndef NNCC_TOOLS_NNCC_RUN_H
#define NNCC_TOOLS_NNCC_RUN_H

#include "nncc/Driver/ModuleLoader.h"
#include "nncc/Target/Compile.h"
#include "nncc/Target/Precision.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"

#include <map>
#include <string>
#include <vector>

namespace nncc::tool {
extern llvm::cl::OptionCategory runCategory;
extern llvm::cl::SubCommand inspectCmd;
extern llvm::cl::SubCommand runCmd;
extern llvm::cl::SubCommand trainCmd;
extern llvm::cl::SubCommand evalCmd;
int runInspect();

/// The value of a --memory-budget option: a size or `min`, checked by
/// MemoryBudget::parse later; an empty one is refused here (otherwise it
/// would read as no budget at all).
struct MemoryBudgetParser : llvm::cl::parser<std::string> {
  using llvm::cl::parser<std::string>::parser;
  bool parse(llvm::cl::Option &option, llvm::StringRef argName, llvm::StringRef arg,
             std::string &value) {
    if (arg.trim().empty())
      return option.error("expects a size (bytes, NNNKiB, NNNMiB, NNNGiB) or min, got ''");
    value = arg.str();
    return false;
  }
};
using MemoryBudgetOpt = llvm::cl::opt<std::string, false, MemoryBudgetParser>;

/// --memory-budget X for the dims `dims` (precision f64: sizeof(real_t) 8):
/// `module` becomes a copy of `source` (the model as loadModule built it from
/// `path`, not yet lowered) differentiated (training-mode loss when
/// `trainMode`), rematerialised and lowered to nnk; `remat` records the
/// choice (without a budget, everything is kept and `remat` has the report).
/// Returns the exit status.
int lowerWithMemoryBudget(llvm::StringRef budget, mlir::ModuleOp source,
                          mlir::OwningOpRef<mlir::ModuleOp> &module,
                          llvm::StringRef path, const std::vector<std::string> &modelDims,
                          const std::map<std::string, int64_t> &dims,
                          driver::GradKind grad, bool trainMode, Precision precision,
                          driver::RematRequest &remat,
                          TargetKind target = TargetKind::CPU);
/// 0 when the model's dim `dim` may be `size` (ModelSignature::dimRanges:
/// e.g. T no larger than a position table); else reports why (--dim ...)
/// and returns 1.
int checkDimRange(const ModelSignature &sig, llvm::StringRef dim, int64_t size);
int runRun();
int runTrain();
/// `nncc eval`: the loss and the classification metrics of trained weights on a
/// data file (Train.cpp).
int runEval();
} // namespace nncc::tool

#endif
