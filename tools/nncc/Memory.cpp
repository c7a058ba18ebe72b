//===- Memory.cpp - memory plans and figures as JSON ----------------------===//
#include "Memory.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

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

namespace {
/// Bytes of one tensor of `t` at `dims` (F32 elements in the run's precision).
uint64_t tensorBytes(const TensorSignature &t, const std::map<std::string, int64_t> &dims,
                     Precision precision) {
  uint64_t n = 1;
  for (const std::string &d : t.dims) {
    int64_t x;
    if (llvm::StringRef(d).getAsInteger(10, x)) {
      auto it = dims.find(d);
      x = it == dims.end() ? 0 : it->second;
    }
    n *= uint64_t(x);
  }
  uint64_t element = t.dtype == "F32"                       ? uint64_t(realBytes(precision))
                     : t.dtype == "F64" || t.dtype == "I64" ? 8
                     : t.dtype == "BOOL"                    ? 1
                     : t.dtype == "BF16" || t.dtype == "F16" ? 2
                                                             : 4;
  return n * element;
}
} // namespace

MemoryTotals memoryTotals(const target::MemoryPlan &plan, const ModelSignature &sig,
                          const std::map<std::string, int64_t> &dims, Precision precision,
                          bool training, nn::OptimizerAttr optimizer) {
  MemoryTotals t;
  t.arena = plan.arenaBytes;
  uint64_t masters = 0; // fp32 copies of bf16 parameters, and moments in fp32
  for (const TensorSignature &p : sig.params) {
    t.parameters += tensorBytes(p, dims, precision);
    masters += tensorBytes(p, dims, Precision::F32);
  }
  for (const TensorSignature &in : sig.inputs)
    t.inputs += tensorBytes(in, dims, precision);
  for (const TensorSignature &out : sig.outputs)
    t.outputs += tensorBytes(out, dims, precision);
  if (!training)
    return t;
  t.gradients = t.parameters;
  // Optimizer state in acc_t: fp32 for f32 and bf16, fp64 for f64.
  uint64_t stateCopy = precision == Precision::F64 ? t.parameters : masters;
  unsigned copies = 0;
  if (optimizer)
    copies = optimizer.getKind() == nn::OptimizerKind::sgd
                 ? (optimizer.getMomentum().isZero() ? 0 : 1)
                 : 2;
  t.optimizerState = copies * stateCopy + (precision == Precision::BF16 ? masters : 0);
  return t;
}

llvm::json::Object totalsJSON(const MemoryTotals &t) {
  return llvm::json::Object{{"activation_arena", static_cast<int64_t>(t.arena)},
                            {"parameters", static_cast<int64_t>(t.parameters)},
                            {"gradients", static_cast<int64_t>(t.gradients)},
                            {"optimizer_state", static_cast<int64_t>(t.optimizerState)},
                            {"inputs", static_cast<int64_t>(t.inputs)},
                            {"outputs", static_cast<int64_t>(t.outputs)},
                            {"total", static_cast<int64_t>(t.total())}};
}

void printMemorySummary(llvm::raw_ostream &os, const target::MemoryPlan &plan,
                        const MemoryTotals &totals, llvm::StringRef model,
                        const std::map<std::string, int64_t> &dims, bool training,
                        llvm::StringRef precision, const driver::RematRequest *remat) {
  std::string binding;
  for (const auto &[k, v] : dims)
    binding += (binding.empty() ? "" : ", ") + k + "=" + std::to_string(v);
  os << model << ", " << (training ? "one training step" : "inference") << " at " << binding
     << " (" << precision << "):\n";
  auto row = [&](llvm::StringRef what, uint64_t bytes, llvm::StringRef note) {
    os << llvm::formatv("  {0,-18} {1,12}", what, formatBytes(bytes));
    if (!note.empty())
      os << "  " << note;
    os << "\n";
  };
  std::string peakWhere;
  if (plan.peakLaunch >= 0) {
    const target::PlannedLaunch &p = plan.launches[plan.peakLaunch];
    std::string loc = p.op ? sourceLocation(p.op->getLoc()) : "";
    peakWhere = "peak " + formatBytes(plan.peakBytes) + " at launch " +
                std::to_string(p.index) +
                (p.op ? " (" + p.op->getName().getStringRef().str() +
                            (loc.empty() ? "" : ", " + loc) + ")"
                      : std::string());
  }
  row("activations", totals.arena, peakWhere);
  row("parameters", totals.parameters, "");
  if (training) {
    row("gradients", totals.gradients, "");
    row("optimizer state", totals.optimizerState, "");
  }
  row("inputs", totals.inputs, "");
  row("outputs", totals.outputs, "");
  row("total", totals.total(), "");
  if (remat && remat->budget.kind != MemoryBudget::Kind::Unlimited) {
    os << "--memory-budget " << remat->budget.str()
       << " bounds the activations (the arena) only; ";
    size_t recomputed = 0;
    for (const RematReportEntry &e : remat->chosen.report)
      recomputed += e.decision == "recomputed";
    os << recomputed << " residual(s) recomputed, " << remat->chosen.storedReversible
       << " reversible block(s) stored\n";
  }
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
