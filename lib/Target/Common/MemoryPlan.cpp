//===- MemoryPlan.cpp - the arena plan, computed before anything runs -----===//
#include "nncc/Target/MemoryPlan.h"

#include "ModelEmitter.h"
#include "SizeExpr.h"

#include "nncc/ModelSupport/ArenaPlan.h"

#include <algorithm>
#include <vector>

using namespace mlir;

namespace nncc::target {

namespace {

/// Bytes of one element as the generated code stores it.
FailureOr<int64_t> elementBytes(Operation *op, Type elt, int64_t realSize) {
  if (elt.isF32() || elt.isF64())
    return realSize;
  if (elt.isInteger(32))
    return int64_t(4);
  if (elt.isInteger(64))
    return int64_t(8);
  if (elt.isInteger(1))
    return int64_t(1);
  op->emitError() << "no memory plan for element type " << elt;
  return failure();
}

FailureOr<uint64_t> slotBytes(const PlannedBuffer &b, const SizeEnv &env) {
  if (!b.type) {
    llvm::Expected<int64_t> v = b.workspaceBytes->evaluate(env);
    if (!v) {
      b.owner->emitError() << llvm::toString(v.takeError());
      return failure();
    }
    return static_cast<uint64_t>(*v);
  }
  FailureOr<int64_t> elt = elementBytes(b.owner, b.type.getElementType(), env.realSize);
  if (failed(elt))
    return failure();
  uint64_t n = static_cast<uint64_t>(*elt);
  for (nncc::Dim d : b.type.getDims()) {
    int64_t size = -1;
    if (d.isStatic())
      size = d.getSize();
    else if (d.isSymbolic())
      size = env.dims.lookup(d.getSymbol().getValue());
    if (size < 0 || (d.isSymbolic() && !env.dims.count(d.getSymbol().getValue()))) {
      b.owner->emitError() << "the memory plan needs every dim bound: " << b.type;
      return failure();
    }
    n *= static_cast<uint64_t>(size);
  }
  return n;
}

} // namespace

/// planMemory; `stepPeakOnly` (Training): @forward's workspaces left out of
/// the plan and no slots or per-launch figures, only `peakBytes`.
static FailureOr<MemoryPlan> plan(ModuleOp module, const llvm::StringMap<int64_t> &dims,
                                  PlanMode mode, int64_t realSize, bool stepPeakOnly,
                                  TargetKind target) {
  MemoryPlan plan;
  auto planBuffers = [&](const ModelEmitter &e) -> LogicalResult {
    for (const std::string &d : e.dims)
      if (!dims.count(d))
        return module.emitError() << "the memory plan of '" << e.modelName
                                  << "' needs a size for dim '" << d << "' (--dim " << d
                                  << "=N)";
    if (mode == PlanMode::Training && !e.train)
      return module.emitError("a training memory plan needs a module compiled with "
                              "gradients (--grad)");
    SizeEnv env;
    env.realSize = realSize;
    env.target = target;
    for (const auto &d : dims)
      env.dims[d.getKey()] = d.getValue();

    const size_t n = e.buffers.size();
    std::vector<uint64_t> bytes(n), offsets(n);
    std::vector<int32_t> first(n), last(n);
    for (size_t i = 0; i < n; ++i) {
      FailureOr<uint64_t> b = slotBytes(e.buffers[i], env);
      if (failed(b))
        return failure();
      bytes[i] = *b;
      first[i] = e.buffers[i].first;
      last[i] = e.buffers[i].last;
    }
    plan.arenaBytes = nncc::plan::placeBuffers(static_cast<int32_t>(n), bytes.data(),
                                               first.data(), last.data(), offsets.data());

    // The launch ranges the run claims (ModelSupport's claimRegions).
    std::vector<std::pair<int, int>> ranges;
    if (mode == PlanMode::Forward)
      ranges = {{0, e.trainBegin}};
    else
      ranges = {{e.trainBegin, e.boundaryIndex}, {e.boundaryIndex + 1, e.numLaunches}};
    for (size_t i = 0; i < n; ++i) {
      const PlannedBuffer &b = e.buffers[i];
      if (!stepPeakOnly)
        plan.slots.push_back({b.name, !b.type, bytes[i], offsets[i], b.first, b.last, b.owner});
      for (auto [lo, hi] : ranges)
        if (nncc::plan::meets(b.first, b.last, lo, hi)) {
          // The runtime's high-water mark: the end of the region claimed.
          uint64_t end = offsets[i] + bytes[i];
          if (end > plan.peakBytes || plan.highWaterSlot < 0) {
            plan.peakBytes = std::max(plan.peakBytes, end);
            plan.highWaterSlot = static_cast<int>(i);
          }
        }
    }
    if (stepPeakOnly)
      return success();
    // Live bytes per launch in one sweep: each slot adds its bytes at its
    // first launch and takes them off after its last.
    std::vector<int64_t> delta(e.numLaunches + 1, 0);
    for (size_t i = 0; i < n; ++i) {
      int lo = std::max(first[i], 0), hi = std::min(last[i], e.numLaunches - 1);
      if (lo > hi)
        continue;
      delta[lo] += static_cast<int64_t>(nncc::plan::alignUp(bytes[i]));
      delta[hi + 1] -= static_cast<int64_t>(nncc::plan::alignUp(bytes[i]));
    }
    std::vector<uint64_t> live(e.numLaunches, 0);
    int64_t sum = 0;
    for (int k = 0; k < e.numLaunches; ++k)
      live[k] = static_cast<uint64_t>(sum += delta[k]);
    for (auto [lo, hi] : ranges)
      for (int k = lo; k < hi; ++k) {
        PlannedLaunch launch{k, e.launchOps[k], live[k]};
        if (plan.peakLaunch < 0 || launch.liveBytes > plan.launches[plan.peakLaunch].liveBytes)
          plan.peakLaunch = static_cast<int>(plan.launches.size());
        plan.launches.push_back(launch);
      }
    return success();
  };
  if (failed(withCpuBufferPlan(module, planBuffers, /*trainingOnly=*/stepPeakOnly)))
    return failure();
  return plan;
}

FailureOr<MemoryPlan> planMemory(ModuleOp module, const llvm::StringMap<int64_t> &dims,
                                 PlanMode mode, int64_t realSize, TargetKind target) {
  return plan(module, dims, mode, realSize, /*stepPeakOnly=*/false, target);
}

FailureOr<uint64_t> trainingPeak(ModuleOp module, const llvm::StringMap<int64_t> &dims,
                                 int64_t realSize, TargetKind target) {
  FailureOr<MemoryPlan> p = plan(module, dims, PlanMode::Training, realSize, true, target);
  if (failed(p))
    return failure();
  return p->peakBytes;
}

} // namespace nncc::target
