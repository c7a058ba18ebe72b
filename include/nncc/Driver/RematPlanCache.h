//===- RematPlanCache.h - On-disk cache of memory-budget decisions -*- C++ -*-===//
//
// The memory-budget search (nncc::chooseRemat) lowers and plans many
// candidate rewrites of the training step: seconds for an encoder, paid
// again by every `nncc inspect`, `compile`, `run` and `train` of the same
// model, binding and budget, even when the compile cache then has the
// library. Its choice is a function of the differentiated module, the
// budget, the search options and nncc itself, so it is kept in the cache
// directory (driver::cacheRoot()/remat) under a hash of all four.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_DRIVER_REMATPLANCACHE_H
#define NNCC_DRIVER_REMATPLANCACHE_H

#include "nncc/Pipeline/RematSearch.h"

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace nncc::driver {

/// What runPipeline decided for a budget.
struct RematChoice {
  bool fusedHeads = false; // the plan is of the module with fused loss heads
  RematPlan plan;          // without its report (applyRematPlan fills it)
};

/// The key of the choice for `asWritten` (and `fusedHeads`, the same model
/// with fused loss heads, when that form is a candidate too) under `budget`
/// and `options`; it covers nncc's executable and runtime
/// (compilerFingerprint).
std::string rematChoiceKey(mlir::ModuleOp asWritten, mlir::ModuleOp fusedHeads,
                           const MemoryBudget &budget, const RematSearchOptions &options);

/// The choice stored under `key`; none when absent or unreadable (a
/// damaged entry is searched again and overwritten).
std::optional<RematChoice> loadRematChoice(const std::string &key);

/// Stores `choice` under `key` (written aside and renamed into place, so
/// concurrent runs are safe). A cache that cannot be written is skipped.
void storeRematChoice(const std::string &key, const RematChoice &choice);

} // namespace nncc::driver

#endif // NNCC_DRIVER_REMATPLANCACHE_H
