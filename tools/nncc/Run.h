//===- Run.h - the `inspect`, `run` and `train` subcommands -----*- C++ -*-===//
#ifndef NNCC_TOOLS_NNCC_RUN_H
#define NNCC_TOOLS_NNCC_RUN_H

#include "llvm/Support/CommandLine.h"

namespace nncc::tool {
extern llvm::cl::OptionCategory runCategory;
extern llvm::cl::SubCommand inspectCmd;
extern llvm::cl::SubCommand runCmd;
extern llvm::cl::SubCommand trainCmd;
int runInspect();
int runRun();
int runTrain();
} // namespace nncc::tool

#endif
