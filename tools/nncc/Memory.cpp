//===- Memory.cpp - memory plans and figures as JSON ----------------------===//
#include "Memory.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/Twine.h"

using namespace mlir;

namespace nncc::tool {

std::string sourceLocation(Location loc) {
  if (auto fl = dyn_cast<FileLineColLoc>(loc))
    return (fl.getFilename().getValue() + ":" + llvm::Twine(fl.getLine()) + ":" +
            llvm::Twine(fl.getColumn()))
        .str();
  if (auto nl = dyn_cast<NameLoc>(loc))
    return sourceLocation(nl.getChildLoc());
  if (auto cl = dyn_cast<CallSiteLoc>(loc))
    return sourceLocation(cl.getCallee());
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (std::string s = sourceLocation(l); !s.empty())
        return s;
  return "";
}

static llvm::json::Object opJSON(Operation *op) {
  if (!op)
    return {};
  return llvm::json::Object{{"op", op->getName().getStringRef().str()},
                            {"loc", sourceLocation(op->getLoc())}};
}

llvm::json::Object memoryPlanJSON(const target::MemoryPlan &plan, llvm::StringRef model,
                                  const std::map<std::string, int64_t> &dims, bool training,
                                  llvm::StringRef precision) {
  llvm::json::Object dimObj;
  for (const auto &[k, v] : dims)
    dimObj[k] = v;
  llvm::json::Array launches;
  for (const target::PlannedLaunch &l : plan.launches) {
    llvm::json::Object o = opJSON(l.op);
    o["launch"] = l.index;
    o["live_bytes"] = static_cast<int64_t>(l.liveBytes);
    launches.push_back(std::move(o));
  }
  llvm::json::Array slots;
  for (const target::PlannedSlot &s : plan.slots) {
    llvm::json::Object o = opJSON(s.owner);
    o["name"] = s.name;
    o["kind"] = s.workspace ? "workspace" : "temporary";
    o["bytes"] = static_cast<int64_t>(s.bytes);
    o["offset"] = static_cast<int64_t>(s.offset);
    o["first"] = s.first;
    o["last"] = s.last;
    slots.push_back(std::move(o));
  }
  llvm::json::Object obj{{"model", model.str()},
                         {"mode", training ? "training" : "forward"},
                         {"dims", std::move(dimObj)},
                         {"precision", precision.str()},
                         {"arena_bytes", static_cast<int64_t>(plan.arenaBytes)},
                         {"peak_bytes", static_cast<int64_t>(plan.peakBytes)}};
  if (plan.peakLaunch >= 0) {
    const target::PlannedLaunch &p = plan.launches[plan.peakLaunch];
    llvm::json::Object peak = opJSON(p.op);
    peak["launch"] = p.index;
    peak["live_bytes"] = static_cast<int64_t>(p.liveBytes);
    obj["peak"] = std::move(peak);
  }
  if (plan.highWaterSlot >= 0) {
    const target::PlannedSlot &s = plan.slots[plan.highWaterSlot];
    llvm::json::Object hw = opJSON(s.owner);
    hw["slot"] = s.name;
    hw["end"] = static_cast<int64_t>(plan.peakBytes);
    obj["high_water"] = std::move(hw);
  }
  obj["launches"] = std::move(launches);
  obj["slots"] = std::move(slots);
  return obj;
}

llvm::json::Object rematJSON(const driver::RematRequest &remat) {
  llvm::json::Array kept, recomputed, reconstructed;
  uint64_t keptBytes = 0, recomputedBytes = 0, reconstructedBytes = 0;
  double recomputedFlops = 0, reconstructedFlops = 0;
  for (const RematReportEntry &e : remat.chosen.report) {
    llvm::json::Object o{{"kind", e.kind},
                         {"op", e.op},
                         {"loc", e.loc ? sourceLocation(e.loc) : std::string()},
                         {"bytes", static_cast<int64_t>(e.bytes)},
                         {"flops", e.flops}};
    if (e.id >= 0)
      o["id"] = e.id;
    if (!e.schedule.empty())
      o["schedule"] = e.schedule;
    if (e.stored)
      o["stored_block"] = true;
    if (e.decision == "kept") {
      keptBytes += e.bytes;
      kept.push_back(std::move(o));
    } else if (e.decision == "recomputed") {
      recomputedBytes += e.bytes;
      recomputedFlops += e.flops;
      recomputed.push_back(std::move(o));
    } else {
      reconstructedBytes += e.bytes;
      reconstructedFlops += e.flops;
      reconstructed.push_back(std::move(o));
    }
  }
  return llvm::json::Object{
      {"budget", remat.budget.str()},
      {"fused_loss_heads", remat.fusedHeads},
      {"shared_chains", remat.chosen.shareChains},
      {"stored_reversible_blocks", static_cast<int64_t>(remat.chosen.storedReversible)},
      {"kept_bytes", static_cast<int64_t>(keptBytes)},
      {"recomputed_bytes", static_cast<int64_t>(recomputedBytes)},
      {"recomputed_flops", recomputedFlops},
      {"reconstructed_bytes", static_cast<int64_t>(reconstructedBytes)},
      {"reconstructed_flops", reconstructedFlops},
      {"kept", std::move(kept)},
      {"recomputed", std::move(recomputed)},
      {"reconstructed", std::move(reconstructed)}};
}

} // namespace nncc::tool
