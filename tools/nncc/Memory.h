//===- Memory.h - memory plans and figures as JSON -----------------*- C++ -*-===//
#ifndef NNCC_TOOLS_NNCC_MEMORY_H
#define NNCC_TOOLS_NNCC_MEMORY_H

#include "nncc/Driver/FrontEnd.h"
#include "nncc/Target/MemoryPlan.h"

#include "mlir/IR/Location.h"
#include "llvm/Support/JSON.h"

#include <map>
#include <string>

namespace nncc::tool {

/// `file:line:col` of the source position behind `loc` (the file as given
/// on the command line), or "" when it has none.
std::string sourceLocation(mlir::Location loc);

/// `nncc inspect --memory`: the plan with its top-level `arena_bytes` and
/// `peak_bytes`, the peak's launch and source location, live bytes per
/// launch and every arena slot.
llvm::json::Object memoryPlanJSON(const target::MemoryPlan &plan, llvm::StringRef model,
                                  const std::map<std::string, int64_t> &dims,
                                  bool training, llvm::StringRef precision);

/// What nncc-remat decided: the budget, and every residual kept,
/// recomputed or reconstructed with its bytes and FLOPs.
llvm::json::Object rematJSON(const driver::RematRequest &remat);

} // namespace nncc::tool

#endif
