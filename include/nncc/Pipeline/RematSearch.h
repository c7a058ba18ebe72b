//===- RematSearch.h - choosing what to recompute under a memory budget -*- C++ -*-===//
//
// The search of the `nncc-remat` pass (include/nncc/Pipeline/Passes.td):
// candidate plans are sets of residuals to recompute (nncc::nn::applyRemat),
// each with its recomputation chains cloned per save or shared, each judged
// by the exact memory plan of the lowered training step
// (nncc::target::trainingPeak) and by its recomputation FLOPs (the cost
// model of dialects/NN/Transforms/Remat.h), each set planned at most once
// per search: every subset for at most `exhaustiveLimit` candidates, else
// the prefixes of the cost model's order (plus, for at most `pruneLimit`,
// the greedy path and pruned prefixes, and the first `costOrderLimit`
// subsets in order of FLOPs). The plans considered do not depend on the
// budget, and the choice is the cheapest one that fits, so a larger budget
// never recomputes more.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_PIPELINE_REMATSEARCH_H
#define NNCC_PIPELINE_REMATSEARCH_H

#include "nncc/Target/TargetKind.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <string>
#include <vector>

namespace nncc {

struct MemoryBudget {
  enum class Kind { Unlimited, Bytes, Min };
  Kind kind = Kind::Unlimited;
  uint64_t bytes = 0;

  /// "123", "64KiB", "512MiB", "2GiB", "1.5GiB" or "min"; on failure the
  /// message says what is accepted.
  static mlir::FailureOr<MemoryBudget> parse(llvm::StringRef text, std::string &error);
  std::string str() const;
};

/// "12.3 MiB" (binary units).
std::string formatBytes(uint64_t bytes);

/// One line of the plan's report (nncc::nn::RematEntry, with the forward
/// op kept as its name and location: the module is lowered afterwards).
struct RematReportEntry {
  int64_t id = -1;           // candidate id; -1 for reconstructions
  std::string kind;          // "save", "reserve", "reversible"
  std::string decision;      // "kept", "recomputed", "reconstructed"
  std::string op;            // the forward op computing the value
  mlir::LocationAttr loc;
  uint64_t bytes = 0;
  double flops = 0;
  std::string schedule;      // recomputed recurrent reserves: "sqrt_t" or
                             // "binomial:<snapshots>"
  bool stored = false;       // kept as part of a stored reversible block
};

/// One candidate plan, evaluated exactly.
struct RematPlan {
  llvm::SmallVector<int64_t> recompute; // candidate ids (collectRematCandidates)
  uint64_t peakBytes = 0;               // the training step's planned high-water mark
  double flops = 0;                     // recomputation FLOPs
  /// Recomputed recurrent reserves reversed by the binomial schedule:
  /// (candidate id, snapshots); the others are checkpointed every sqrt(T).
  llvm::SmallVector<std::pair<int64_t, int64_t>> bpttSnapshots;
  /// The recomputed saves share their chains (nn::RematCostEnv::shareChains).
  bool shareChains = false;
  /// How many of the last top-level reversible blocks of @forward are
  /// stored instead of reconstructed (nn::storeReversibleBlocks, before
  /// differentiation: the driver's forms of the model), and the FLOPs of
  /// reconstructing the others.
  unsigned storedReversible = 0;
  double reconstructFlops = 0;
  std::vector<RematReportEntry> report; // filled by applyMemoryBudget
};

struct RematSearchOptions;

/// Exact plans already evaluated, by (subset, chains shared or not), for
/// one module and one binding: a search given one
/// (RematSearchOptions::memo) reads and fills it, so searches for several
/// budgets on the same module plan each set once.
struct RematMemo {
  llvm::StringMap<RematPlan> plans;
  /// The plan of recomputing `ids` (with `options.shareChains`), from the
  /// memo or evaluated (evaluateRemat) and remembered.
  mlir::FailureOr<RematPlan> get(mlir::ModuleOp module, llvm::ArrayRef<int64_t> ids,
                                 const RematSearchOptions &options);
};

struct RematSearchOptions {
  llvm::StringMap<int64_t> dims;
  int64_t realSize = 4;
  /// The target planned for (trainingPeak's): CUDA's plan leaves out the
  /// workspace only the CPU kernels use.
  TargetKind target = TargetKind::CPU;
  /// Up to this many candidates, every subset is planned (2^n lowerings).
  size_t exhaustiveLimit = 12;
  /// Up to this many candidates, each prefix is also pruned (candidates
  /// dropped again while the peak stays within the prefix's).
  size_t pruneLimit = 20;
  /// Recurrent reserves (candidate id) to reverse by the binomial schedule
  /// with that many snapshots when recomputed (evaluateRemat).
  llvm::SmallVector<std::pair<int64_t, int64_t>> bpttSnapshots;
  /// evaluateRemat: the recomputed saves share their chains.
  bool shareChains = false;
  /// Above `exhaustiveLimit` and up to `pruneLimit` candidates, at most this
  /// many (subset, chains shared or not) pairs are planned in order of
  /// FLOPs (chooseRemat).
  size_t costOrderLimit = 16384;
  /// Plans evaluated by earlier searches on the same module with the same
  /// dims and element size (null: each search keeps its own).
  RematMemo *memo = nullptr;
};

/// The plan of `module` (nn, with @forward_backward) recomputing `ids`.
mlir::FailureOr<RematPlan> evaluateRemat(mlir::ModuleOp module, llvm::ArrayRef<int64_t> ids,
                                         const RematSearchOptions &options);

/// The plans the search considers (the first keeps everything).
mlir::FailureOr<llvm::SmallVector<RematPlan>> rematPlans(mlir::ModuleOp module,
                                                         const RematSearchOptions &options);

/// The cheapest plan within `budget` (Unlimited: keep everything; Min:
/// the smallest peak, then the fewest FLOPs). An error at the module
/// names the smallest feasible budget when none fits.
mlir::FailureOr<RematPlan> chooseRemat(mlir::ModuleOp module, const MemoryBudget &budget,
                                       const RematSearchOptions &options);

/// chooseRemat, then the rewrite of @forward_backward, with the report
/// (Unlimited: no search, nothing changes, the report only).
mlir::FailureOr<RematPlan> applyMemoryBudget(mlir::ModuleOp module, const MemoryBudget &budget,
                                             const RematSearchOptions &options);

/// The rewrite of @forward_backward for a plan chooseRemat returned (on
/// this module or an equal one), with the report filled in.
mlir::FailureOr<RematPlan> applyRematPlan(mlir::ModuleOp module, RematPlan plan,
                                          const RematSearchOptions &options);

} // namespace nncc

#endif // NNCC_PIPELINE_REMATSEARCH_H
