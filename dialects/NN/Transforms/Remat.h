//===- Remat.h - keep or recompute what the backward pass reads -*- C++ -*-===//
//
// The rematerialisation choices of a differentiated function
// (@forward_backward, docs/autodiff.md): every forward value the backward
// reads is either an `nn.save` (kept across the forward/backward boundary)
// or the reserve of a fused recurrent / attention op (`!nn.reserve`). A
// candidate is one such value; recomputing it means
//
//  - for a save: cloning the ops that compute the value from kept saves,
//    arguments, parameters and constants into the backward, right before
//    its first reader, and dropping the save. Each save's chain is cloned
//    on its own, or (shared chains) a chain reuses every clone an earlier
//    one made: the saves of one segment between kept values are then
//    recomputed once, as in Chen et al.'s checkpointing, and the clones
//    stay live until their last reader;
//  - for a reserve: dropping the gradient op's `reserve` operand (it then
//    recomputes the forward's internals from the saved input); for a
//    recurrent stack, checkpointing its BPTT scan instead (`checkpoint_every`
//    = ceil(sqrt(T)): the reserve keeps layer outputs and segment states,
//    the backward recomputes one segment's gates at a time), or, when the
//    cost environment names its id in `bpttSnapshots`, reversing it by the
//    binomial (Revolve) schedule with that many cell-state snapshots.
//
// A reversible block (nn.reversible) rebuilds its input from its output in
// the backward (docs/autodiff.md). Storing its activations instead is a
// choice made before differentiation: storeReversibleBlocks inlines the
// block as plain ops marked `nn.stored`, and the backward then reads their
// saves like any other layer's. Those saves and reserves are kept, never
// candidates: a block is either stored whole or reconstructed.
//
// The cost model gives each candidate its bytes and the FLOPs of its
// recomputation for a binding of the dims. Choosing the set under a budget
// needs the exact memory plan of the lowered module; that search lives with
// the back end (nncc/Pipeline/RematSearch.h, the `nncc-remat` pass).
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_DIALECT_NN_TRANSFORMS_REMAT_H
#define NNCC_DIALECT_NN_TRANSFORMS_REMAT_H

#include "dialects/NN/IR/NNOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <functional>

namespace nncc::nn {

/// The unit attribute of the ops of a stored reversible block.
inline constexpr llvm::StringLiteral kStoredAttrName = "nn.stored";

/// The nn.reversible ops at the top level of `fn`, in order.
llvm::SmallVector<ReversibleOp> topLevelReversibleBlocks(mlir::func::FuncOp fn);

/// Inlines `blocks` (top-level nn.reversible ops of one function, before
/// differentiation) as nn-expand-reversible does, each created op marked
/// `nn.stored`, and folds the function's split(concat) pairs.
mlir::LogicalResult storeReversibleBlocks(llvm::ArrayRef<ReversibleOp> blocks);

enum class RematKind { Save, Reserve };

struct RematCandidate {
  /// Stable id: a save's `index`; reserves are numbered after the largest
  /// save index, in block order of their gradient ops.
  int64_t id = 0;
  RematKind kind = RematKind::Save;
  mlir::Operation *op = nullptr; // the nn.save, or the gradient op
  mlir::Value value;             // the saved value, or the reserve
};

/// The candidates of `fn`, in id order.
llvm::SmallVector<RematCandidate> collectRematCandidates(mlir::func::FuncOp fn);

/// A binding of the dims and the size of a float element.
struct RematCostEnv {
  llvm::StringMap<int64_t> dims;
  int64_t realSize = 4;
  /// Recomputed recurrent reserves (candidate id) reversed by the binomial
  /// schedule with that many snapshots instead of sqrt(T) checkpointing.
  llvm::DenseMap<int64_t, int64_t> bpttSnapshots;
  /// Recomputed saves share their chains: a clone made for one save is
  /// reused by the later ones (in the order the backward first reads them).
  bool shareChains = false;
  /// Whether an op is fused into its (single) consumer's kernel by the
  /// lowering (nncc::isFusedIntoConsumer). Shared chains do not reuse such
  /// a clone of an earlier chain: a second reader would split that kernel
  /// (a GEMM and its epilogue, an elementwise group), which costs a pass
  /// over memory that the FLOP count does not show; the op is cloned again.
  std::function<bool(mlir::Operation *)> fusedIntoConsumer;
};

/// FLOPs of the reversible blocks' reconstructions in `fn`'s backward (one
/// F and one G evaluation per top-level nn.reversible).
double reconstructionFlops(mlir::func::FuncOp fn, const RematCostEnv &env);

/// Bytes of a tensor value in `env` (0 when a dim is unbound).
uint64_t tensorBytes(mlir::Value value, const RematCostEnv &env);
/// Estimated floating-point operations of one execution of `op`
/// (nested regions included).
double estimateFlops(mlir::Operation *op, const RematCostEnv &env);

/// What recomputing a candidate set costs and frees.
struct RematCost {
  double flops = 0;     // FLOPs of the recomputations (clones, and the
                        // forward a reserve-less gradient op runs again)
  uint64_t bytes = 0;   // bytes of the candidates no longer kept
  /// Per recomputed save (by candidate id): the FLOPs of the clones made
  /// for it, which describeRemat estimates before the rewrite.
  llvm::DenseMap<int64_t, double> saveFlops;
};

/// The candidates in the order a growing budget pressure recomputes them:
/// repeatedly the one that frees the most bytes per FLOP of recomputation,
/// given the ones already chosen (its recomputation cannot start from
/// them). Independent of any budget, so prefixes of it are nested.
llvm::SmallVector<int64_t> rematOrder(mlir::func::FuncOp fn, const RematCostEnv &env);

/// One line of the memory report: a candidate (kept or recomputed), or a
/// value a reversible block reconstructs from its output.
struct RematEntry {
  enum class Decision { Kept, Recomputed, Reconstructed };
  int64_t id = -1;               // candidate id; -1 for reconstructions
  RematKind kind = RematKind::Save;
  Decision decision = Decision::Kept;
  mlir::Operation *producer = nullptr; // the forward op of the value
  uint64_t bytes = 0;            // of the value (reserves: the estimate)
  double flops = 0;              // of recomputing / reconstructing it
  bool stored = false;           // kept as part of a stored reversible block
};

/// The report of `fn` if `ids` are recomputed (before applyRemat).
llvm::SmallVector<RematEntry> describeRemat(mlir::func::FuncOp fn, llvm::ArrayRef<int64_t> ids,
                                            const RematCostEnv &env);

/// Recomputes the candidates `ids` of `fn` (see the file comment). Clones
/// get the unit attribute `nn.recomputed`. Returns the cost in `env`.
mlir::FailureOr<RematCost> applyRemat(mlir::func::FuncOp fn, llvm::ArrayRef<int64_t> ids,
                                      const RematCostEnv &env);

} // namespace nncc::nn

#endif // NNCC_DIALECT_NN_TRANSFORMS_REMAT_H
