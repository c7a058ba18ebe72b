//===- Memory.h - memory plans and figures as JSON -----------------*- C++ -*-===//
#ifndef NNCC_TOOLS_NNCC_MEMORY_H
#define NNCC_TOOLS_NNCC_MEMORY_H

#include "dialects/NN/IR/NNAttrs.h"
#include "nncc/Driver/ModuleLoader.h"
#include "nncc/Target/Compile.h"
#include "nncc/Target/MemoryPlan.h"
#include "nncc/Target/Precision.h"

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

/// What a run holds besides the activation arena, in bytes at one binding:
/// the parameters, their gradients and the optimizer's state (training
/// only; Adam's two moments, SGD's momentum buffer, bf16's fp32 master
/// weights), the inputs and the outputs.
struct MemoryTotals {
  uint64_t arena = 0, parameters = 0, gradients = 0, optimizerState = 0, inputs = 0,
           outputs = 0;
  uint64_t total() const {
    return arena + parameters + gradients + optimizerState + inputs + outputs;
  }
};

/// The totals of `sig` at `dims` (every symbolic dim bound) with the arena
/// of `plan`; `optimizer`: the train clause's (null for inference).
MemoryTotals memoryTotals(const target::MemoryPlan &plan, const ModelSignature &sig,
                          const std::map<std::string, int64_t> &dims, Precision precision,
                          bool training, nn::OptimizerAttr optimizer);

/// The totals as the JSON object `totals` of `nncc inspect --memory`.
llvm::json::Object totalsJSON(const MemoryTotals &t);

/// `nncc inspect --memory --format text`: a short summary for people —
/// the totals, the peak's launch and source, and what the budget decided.
void printMemorySummary(llvm::raw_ostream &os, const target::MemoryPlan &plan,
                        const MemoryTotals &totals, llvm::StringRef model,
                        const std::map<std::string, int64_t> &dims, bool training,
                        llvm::StringRef precision, const driver::RematRequest *remat);

/// What nncc-remat decided: the budget, and every residual kept,
/// recomputed or reconstructed with its bytes and FLOPs.
llvm::json::Object rematJSON(const driver::RematRequest &remat);

} // namespace nncc::tool

#endif
