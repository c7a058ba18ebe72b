//===- Run.h - the `inspect` and `run` subcommands of nncc ------*- C++ -*-===//
#ifndef NNCC_TOOLS_NNCC_RUN_H
#define NNCC_TOOLS_NNCC_RUN_H

#include "llvm/Support/CommandLine.h"

namespace nncc::tool {
extern llvm::cl::OptionCategory runCategory;
/// True when `inspect` or `run` was given.
bool runSubcommand();
int runInspect();
int runRun();
extern llvm::cl::SubCommand inspectCmd;
extern llvm::cl::SubCommand runCmd;
} // namespace nncc::tool

#endif
