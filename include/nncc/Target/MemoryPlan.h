//===- MemoryPlan.h - the arena plan, computed before anything runs -*- C++ -*-===//
//
// The buffer plan of a generated CPU library for one binding of the model's
// dims: every arena slot (nnk.alloc temporaries and kernel workspaces) with
// its size, live range and offset, placed by the runtime's own algorithm
// (nncc/ModelSupport/ArenaPlan.h), and the high-water mark a run reaches.
// `peakBytes` is what the runtime's memory_stats reports as peak_bytes
// after the same run (`nncc run [--grad] --memory-stats`), byte for byte.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_TARGET_MEMORYPLAN_H
#define NNCC_TARGET_MEMORYPLAN_H

#include "nncc/Target/TargetKind.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringMap.h"

#include <string>
#include <vector>

namespace nncc::target {

/// Which functions a run executes: `forward` (inference), or
/// `forward_train` + `backward` (a training step).
enum class PlanMode { Forward, Training };

struct PlannedSlot {
  std::string name;        // t<N> (nnk.alloc) or ws<N> (workspace)
  bool workspace = false;
  uint64_t bytes = 0;      // unaligned
  uint64_t offset = 0;
  int first = 0, last = 0; // live range, launch indices
  mlir::Operation *owner = nullptr; // the alloc, or the launch of a workspace
};

struct PlannedLaunch {
  int index = 0;
  mlir::Operation *op = nullptr;
  uint64_t liveBytes = 0;  // aligned bytes of the slots live at this launch
};

struct MemoryPlan {
  uint64_t arenaBytes = 0; // the arena the runtime allocates (all functions)
  uint64_t peakBytes = 0;  // high-water mark of a run in this mode: the largest
                           // end (offset + unaligned bytes) of a slot it uses
  std::vector<PlannedSlot> slots;
  std::vector<PlannedLaunch> launches; // the launches of the mode, in order
  int peakLaunch = -1;     // index into `launches` with the most live bytes
  int highWaterSlot = -1;  // index into `slots` ending at peakBytes
};

/// The plan of `module` (at the nnk stage) for the dims in `dims` (every
/// symbolic dim of the model must be bound) and `sizeof(real_t)` =
/// `realSize`. Errors are emitted at the module or the op concerned.
/// `target`: the CPU's plan counts the workspace only the CPU kernels use
/// (the recurrent time loops' packed W_hh, ...); the CUDA target's plan is
/// derived from the same buffers without it.
mlir::FailureOr<MemoryPlan> planMemory(mlir::ModuleOp module,
                                       const llvm::StringMap<int64_t> &dims,
                                       PlanMode mode, int64_t realSize = 4,
                                       TargetKind target = TargetKind::CPU);

/// The training step's high-water mark: planMemory(module, dims,
/// PlanMode::Training, realSize)->peakBytes, planned without the launches
/// of @forward (the inference function), which share no launch with the
/// step, so the step's slots get the same offsets; `module` need not have
/// @forward at all. Faster; what the rematerialisation search compares.
mlir::FailureOr<uint64_t> trainingPeak(mlir::ModuleOp module,
                                       const llvm::StringMap<int64_t> &dims,
                                       int64_t realSize = 4,
                                       TargetKind target = TargetKind::CPU);

} // namespace nncc::target

#endif // NNCC_TARGET_MEMORYPLAN_H
