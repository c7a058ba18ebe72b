//===- RematSearch.cpp - choosing what to recompute under a memory budget -===//
#include "nncc/Pipeline/RematSearch.h"

#include "dialects/NN/IR/NNDialect.h"
#include "dialects/NN/IR/NNOps.h"
#include "dialects/NN/IR/NNTypes.h"
#include "dialects/NN/Transforms/Remat.h"
#include "nncc/Conversion/NNToNNK/NNToNNK.h"
#include "nncc/Pipeline/Passes.h"
#include "nncc/Pipeline/Pipeline.h"
#include "nncc/Target/MemoryPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Format.h"

#include <cmath>
#include <optional>
#include <queue>

namespace nncc {
#define GEN_PASS_DEF_NNCCREMAT
#include "nncc/Pipeline/Passes.h.inc"
} // namespace nncc

using namespace mlir;

namespace nncc {

//===----------------------------------------------------------------------===//
// Budgets
//===----------------------------------------------------------------------===//

FailureOr<MemoryBudget> MemoryBudget::parse(StringRef text, std::string &error) {
  MemoryBudget b;
  StringRef t = text.trim();
  if (t == "min") {
    b.kind = Kind::Min;
    return b;
  }
  uint64_t unit = 1;
  for (auto [suffix, scale] : {std::pair<StringRef, uint64_t>{"KiB", 1ull << 10},
                               {"MiB", 1ull << 20},
                               {"GiB", 1ull << 30}})
    if (t.consume_back(suffix)) {
      unit = scale;
      break;
    }
  double value = 0;
  if (t.empty() || t.trim() != t || t.getAsDouble(value) || !(value > 0) ||
      value * static_cast<double>(unit) >= 1.8e19 ||
      (unit == 1 && value != std::floor(value))) {
    error = ("memory budget '" + text +
             "' is not a size: give bytes (e.g. 268435456), NNNKiB, NNNMiB, NNNGiB "
             "(e.g. 512MiB, 1.5GiB) or min")
                .str();
    return failure();
  }
  b.kind = Kind::Bytes;
  b.bytes = static_cast<uint64_t>(std::floor(value * static_cast<double>(unit)));
  return b;
}

std::string formatBytes(uint64_t bytes) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (bytes < 1024)
    os << bytes << " B";
  else if (bytes < (1ull << 20))
    os << llvm::format("%.1f KiB", bytes / 1024.0);
  else if (bytes < (1ull << 30))
    os << llvm::format("%.1f MiB", bytes / 1048576.0);
  else
    os << llvm::format("%.2f GiB", bytes / 1073741824.0);
  return s;
}

std::string MemoryBudget::str() const {
  switch (kind) {
  case Kind::Unlimited:
    return "unlimited";
  case Kind::Min:
    return "min";
  case Kind::Bytes:
    return std::to_string(bytes) + " bytes (" + formatBytes(bytes) + ")";
  }
  return "";
}

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

static func::FuncOp trainingFunction(ModuleOp module) {
  return module.lookupSymbol<func::FuncOp>("forward_backward");
}

/// trainingFunction, or an error at the module when it has none.
static FailureOr<func::FuncOp> requireTrainingFunction(ModuleOp module) {
  if (func::FuncOp fn = trainingFunction(module))
    return fn;
  return mlir::emitError(module.getLoc(),
                         "the memory budget applies to a differentiated module "
                         "(@forward_backward; nncc compile --grad)");
}

static nn::RematCostEnv costEnv(const RematSearchOptions &options) {
  nn::RematCostEnv env;
  for (const auto &d : options.dims)
    env.dims[d.getKey()] = d.getValue();
  env.realSize = options.realSize;
  for (auto [id, snapshots] : options.bpttSnapshots)
    env.bpttSnapshots[id] = snapshots;
  env.shareChains = options.shareChains;
  env.fusedIntoConsumer = [](Operation *op) { return isFusedIntoConsumer(op); };
  return env;
}

FailureOr<RematPlan> evaluateRemat(ModuleOp module, ArrayRef<int64_t> ids,
                                   const RematSearchOptions &options) {
  OwningOpRef<ModuleOp> clone(cast<ModuleOp>(module->clone()));
  FailureOr<func::FuncOp> required = requireTrainingFunction(*clone);
  if (failed(required))
    return failure();
  func::FuncOp fn = *required;
  FailureOr<nn::RematCost> cost = nn::applyRemat(fn, ids, costEnv(options));
  if (failed(cost))
    return failure();
  // Only the training step is planned (trainingPeak), so the inference
  // function is not lowered.
  if (auto inference = clone->lookupSymbol<func::FuncOp>("forward"))
    inference.erase();
  // Only the plan of this clone is read: the chosen plan is applied again
  // and lowered by the verifying pipeline.
  PassManager pm(module.getContext());
  pm.enableVerifier(false);
  NNCCPipelineOptions lower;
  lower.stop = PipelineStage::NNK;
  buildNNCCPipeline(pm, lower);
  if (failed(pm.run(*clone)))
    return failure();
  FailureOr<uint64_t> peak = target::trainingPeak(*clone, options.dims, options.realSize,
                                                    options.target);
  if (failed(peak))
    return failure();
  RematPlan out;
  out.recompute.assign(ids.begin(), ids.end());
  llvm::sort(out.recompute);
  out.peakBytes = *peak;
  out.flops = cost->flops;
  out.shareChains = options.shareChains;
  for (auto [id, snapshots] : options.bpttSnapshots)
    if (llvm::is_contained(out.recompute, id))
      out.bpttSnapshots.push_back({id, snapshots});
  return out;
}

FailureOr<RematPlan> RematMemo::get(ModuleOp module, ArrayRef<int64_t> ids,
                                    const RematSearchOptions &options) {
  SmallVector<int64_t> sorted(ids);
  llvm::sort(sorted);
  std::string key = options.shareChains ? "shared:" : "per-save:";
  for (int64_t id : sorted)
    key += std::to_string(id) + ",";
  auto it = plans.find(key);
  if (it != plans.end())
    return it->second;
  FailureOr<RematPlan> p = evaluateRemat(module, sorted, options);
  if (succeeded(p))
    plans[key] = *p;
  return p;
}

/// The binomial (Revolve) variants of the plans that checkpoint a recurrent
/// reserve: for each plan on the (peak, FLOPs) Pareto front, every recurrent
/// reserve it recomputes reversed with s snapshots instead of sqrt(T)
/// segments, s in {2, ceil(log2 T), ceil(sqrt T)}. Budget-independent.
static LogicalResult appendBinomialVariants(ModuleOp module, SmallVector<RematPlan> &plans,
                                            const RematSearchOptions &options) {
  func::FuncOp fn = trainingFunction(module);
  llvm::DenseMap<int64_t, int64_t> steps; // recurrent reserve id -> T
  for (const nn::RematCandidate &c : nn::collectRematCandidates(fn)) {
    Operation *fwd = c.value.getDefiningOp();
    if (c.kind != nn::RematKind::Reserve || !fwd || !isa<nn::RNNOp, nn::LSTMOp, nn::GRUOp>(fwd))
      continue;
    nncc::Dim t = cast<nn::TensorType>(fwd->getOperand(0).getType()).getDim(1);
    int64_t T = t.isStatic()     ? t.getSize()
                : t.isSymbolic() ? options.dims.lookup(t.getSymbol().getValue())
                                 : 0;
    if (T > 1)
      steps[c.id] = T;
  }
  if (steps.empty())
    return success();
  SmallVector<RematPlan> front;
  for (const RematPlan &p : plans) {
    if (!llvm::any_of(p.recompute, [&](int64_t id) { return steps.contains(id); }))
      continue;
    bool dominated = llvm::any_of(plans, [&](const RematPlan &q) {
      return q.peakBytes <= p.peakBytes && q.flops <= p.flops &&
             (q.peakBytes < p.peakBytes || q.flops < p.flops);
    });
    if (!dominated)
      front.push_back(p);
  }
  for (const RematPlan &p : front)
    for (int kind = 0; kind < 3; ++kind) {
      RematSearchOptions variant = options;
      variant.shareChains = p.shareChains;
      for (int64_t id : p.recompute) {
        auto it = steps.find(id);
        if (it == steps.end())
          continue;
        const int64_t T = it->second;
        const int64_t s = kind == 0   ? 2
                          : kind == 1 ? static_cast<int64_t>(std::ceil(std::log2(double(T))))
                                      : static_cast<int64_t>(std::ceil(std::sqrt(double(T))));
        variant.bpttSnapshots.push_back({id, std::max<int64_t>(1, s)});
      }
      FailureOr<RematPlan> v = evaluateRemat(module, p.recompute, variant);
      if (failed(v))
        return failure();
      plans.push_back(*v);
    }
  return success();
}

/// The recomputation FLOPs of `ids` (what applyRemat returns), without the
/// rewrite and the lowering.
static double rematFlops(func::FuncOp fn, ArrayRef<int64_t> ids, const nn::RematCostEnv &env) {
  double flops = 0;
  for (const nn::RematEntry &e : nn::describeRemat(fn, ids, env))
    if (e.decision == nn::RematEntry::Decision::Recomputed)
      flops += e.flops;
  return flops;
}

namespace {
/// Exact plans of subsets of the candidates, chains per save or shared,
/// each evaluated once per search (or once for all searches sharing
/// `options.memo`); walks over subsets use bit masks (at most 64
/// candidates).
struct PlanCache {
  ModuleOp module;
  func::FuncOp fn;
  const RematSearchOptions &options;
  SmallVector<int64_t> order; // the candidates in nn::rematOrder's order
  SmallVector<int64_t> ids;   // sorted
  RematMemo ownMemo;
  RematMemo &memo;

  PlanCache(ModuleOp module, func::FuncOp fn, const RematSearchOptions &options,
            SmallVector<int64_t> order)
      : module(module), fn(fn), options(options), order(std::move(order)), ids(this->order),
        memo(options.memo ? *options.memo : ownMemo) {
    llvm::sort(ids);
  }
  SmallVector<int64_t> members(uint64_t mask) const {
    SmallVector<int64_t> out;
    for (size_t i = 0; i < ids.size() && i < 64; ++i)
      if (mask >> i & 1)
        out.push_back(ids[i]);
    return out;
  }
  /// The plan of `subset`; with `shared`, its chains shared, or the plain
  /// plan when no two chains have an op in common (the same rewrite).
  FailureOr<RematPlan> get(ArrayRef<int64_t> subset, bool shared = false) {
    RematSearchOptions mode = options;
    mode.shareChains = shared && sharesWork(subset);
    return memo.get(module, subset, mode);
  }
  FailureOr<RematPlan> get(uint64_t mask, bool shared = false) {
    return get(members(mask), shared);
  }
  /// The cost model's FLOPs of recomputing `subset`, chains shared or not.
  double flops(ArrayRef<int64_t> subset, bool shared) const {
    RematSearchOptions mode = options;
    mode.shareChains = shared;
    return rematFlops(fn, subset, costEnv(mode));
  }
  /// Whether sharing the chains of `subset` saves any recomputation.
  bool sharesWork(ArrayRef<int64_t> subset) const {
    return flops(subset, true) < flops(subset, false);
  }
};
} // namespace

/// The plans with per-save chains: every subset, or the prefixes of
/// `order` (and for at most `pruneLimit` candidates the greedy path and the
/// pruned prefixes).
static FailureOr<SmallVector<RematPlan>> perSavePlans(PlanCache &cache, ArrayRef<int64_t> order,
                                                      const RematSearchOptions &options) {
  SmallVector<RematPlan> plans;
  // Few candidates: every subset (the exact optimum for every budget).
  if (order.size() <= options.exhaustiveLimit) {
    for (uint64_t mask = 0; mask < (uint64_t{1} << order.size()); ++mask) {
      FailureOr<RematPlan> p = cache.get(mask);
      if (failed(p))
        return failure();
      plans.push_back(*p);
    }
    return plans;
  }
  for (size_t k = 0; k <= order.size(); ++k) {
    FailureOr<RematPlan> p = cache.get(order.take_front(k));
    if (failed(p))
      return failure();
    plans.push_back(*p);
  }
  if (order.size() > options.pruneLimit)
    return plans;
  // Small graphs: the exact greedy path too, each step adding the candidate
  // whose plan has the smallest peak (then the fewest FLOPs).
  {
    SmallVector<int64_t> chosen;
    llvm::DenseSet<int64_t> used;
    while (chosen.size() < order.size()) {
      std::optional<RematPlan> bestStep;
      int64_t bestId = -1;
      for (int64_t id : order) {
        if (used.contains(id))
          continue;
        SmallVector<int64_t> ids(chosen);
        ids.push_back(id);
        FailureOr<RematPlan> p = cache.get(ids);
        if (failed(p))
          return failure();
        if (!bestStep || p->peakBytes < bestStep->peakBytes ||
            (p->peakBytes == bestStep->peakBytes && p->flops < bestStep->flops)) {
          bestStep = *p;
          bestId = id;
        }
      }
      chosen.push_back(bestId);
      used.insert(bestId);
      plans.push_back(*bestStep);
    }
  }
  // Small graphs: each prefix without the candidates it does not need for
  // its peak (the most expensive to recompute dropped first).
  size_t prefixes = order.size() + 1;
  for (size_t k = 1; k < prefixes; ++k) {
    RematPlan best = plans[k];
    for (int64_t id : llvm::reverse(order.take_front(k))) {
      SmallVector<int64_t> without;
      for (int64_t m : best.recompute)
        if (m != id)
          without.push_back(m);
      if (without.size() == best.recompute.size())
        continue;
      FailureOr<RematPlan> p = cache.get(without);
      if (failed(p))
        return failure();
      if (p->peakBytes <= plans[k].peakBytes && p->flops <= best.flops)
        best = *p;
    }
    if (best.recompute.size() < plans[k].recompute.size())
      plans.push_back(best);
  }
  return plans;
}

/// perSavePlans, and the same subsets with shared chains where the cost
/// model says sharing saves recomputation.
static FailureOr<SmallVector<RematPlan>> rematPlans(PlanCache &cache, ArrayRef<int64_t> order,
                                                    const RematSearchOptions &options) {
  FailureOr<SmallVector<RematPlan>> plans = perSavePlans(cache, order, options);
  if (failed(plans))
    return failure();
  size_t perSave = plans->size();
  for (size_t i = 0; i < perSave; ++i) {
    // The plain plan again (a memo hit) when sharing saves nothing.
    FailureOr<RematPlan> p = cache.get((*plans)[i].recompute, /*shared=*/true);
    if (failed(p))
      return failure();
    if (p->shareChains)
      plans->push_back(*p);
  }
  return plans;
}

FailureOr<SmallVector<RematPlan>> rematPlans(ModuleOp module,
                                             const RematSearchOptions &options) {
  FailureOr<func::FuncOp> fn = requireTrainingFunction(module);
  if (failed(fn))
    return failure();
  PlanCache cache(module, *fn, options, nn::rematOrder(*fn, costEnv(options)));
  return rematPlans(cache, cache.order, options);
}

/// Better for a budget: fewer FLOPs, then a smaller peak.
static bool cheaper(const RematPlan &a, const RematPlan &b) {
  return a.flops < b.flops || (a.flops == b.flops && a.peakBytes < b.peakBytes);
}

/// Improves `best` (the cheapest plan of `plans` within `budget`) with the
/// subsets of the candidates, chains per save and shared, taken in order of
/// increasing FLOPs, stopping at the first one costing more than `best` or
/// after `limit` of them. The FLOPs of a set never fall when a candidate is
/// added (the chains of the others only grow; shared, their union does), so
/// a best-first walk of the tree in which a set's parent is the set without
/// its last candidate visits every (subset, mode) in order of
/// (FLOPs, mask, mode): the first `limit` are the same for every budget.
/// The order is the cost model's; a shared rewrite may clone an op again
/// rather than split a fused kernel, so its plan costs at least the
/// estimate, and stopping at the first estimate above `best` misses none.
static LogicalResult costOrderWalk(PlanCache &cache, uint64_t budget, size_t limit,
                                   RematPlan &best) {
  using Entry = std::tuple<double, uint64_t, bool>; // (FLOPs, mask, shared)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  queue.push({0.0, 0, false});
  queue.push({0.0, 0, true});
  size_t n = cache.ids.size();
  size_t visited = 0;
  while (!queue.empty()) {
    auto [flops, mask, shared] = queue.top();
    // Stop when every remaining subset costs more than `best`.
    if (flops > best.flops || visited == limit)
      return success();
    queue.pop();
    ++visited;
    FailureOr<RematPlan> p = cache.get(mask, shared);
    if (failed(p))
      return failure();
    if (p->peakBytes <= budget && cheaper(*p, best))
      best = *p;
    size_t next = mask ? 64 - llvm::countl_zero(mask) : 0;
    for (size_t j = next; j < n; ++j) {
      uint64_t child = mask | uint64_t{1} << j;
      // Kept at least the parent's, so the order holds even if the
      // estimate were not monotone.
      queue.push({std::max(flops, cache.flops(cache.members(child), shared)), child, shared});
    }
  }
  return success();
}

FailureOr<RematPlan> chooseRemat(ModuleOp module, const MemoryBudget &budget,
                                 const RematSearchOptions &options) {
  if (budget.kind == MemoryBudget::Kind::Unlimited)
    return evaluateRemat(module, {}, options);
  // Keeping everything is the cheapest plan: no search when it fits.
  if (budget.kind == MemoryBudget::Kind::Bytes) {
    FailureOr<RematPlan> keepAll = evaluateRemat(module, {}, options);
    if (failed(keepAll) || keepAll->peakBytes <= budget.bytes)
      return keepAll;
  }
  FailureOr<func::FuncOp> required = requireTrainingFunction(module);
  if (failed(required))
    return failure();
  func::FuncOp fn = *required;
  PlanCache cache(module, fn, options, nn::rematOrder(fn, costEnv(options)));
  ArrayRef<int64_t> order = cache.order;
  FailureOr<SmallVector<RematPlan>> plans = rematPlans(cache, order, options);
  if (failed(plans) || failed(appendBinomialVariants(module, *plans, options)))
    return failure();
  const RematPlan *smallest = &plans->front();
  for (const RematPlan &p : *plans)
    if (p.peakBytes < smallest->peakBytes ||
        (p.peakBytes == smallest->peakBytes && p.flops < smallest->flops))
      smallest = &p;
  // `min` is the budget of the smallest plan considered.
  uint64_t bytes = budget.kind == MemoryBudget::Kind::Min ? smallest->peakBytes : budget.bytes;
  if (budget.kind == MemoryBudget::Kind::Min && order.size() <= options.exhaustiveLimit)
    return *smallest;
  const RematPlan *fits = nullptr;
  for (const RematPlan &p : *plans)
    if (p.peakBytes <= bytes && (!fits || cheaper(p, *fits)))
      fits = &p;
  if (!fits) {
    std::string dims;
    for (const auto &d : options.dims)
      dims += (dims.empty() ? "" : ", ") + d.getKey().str() + "=" + std::to_string(d.getValue());
    return mlir::emitError(module.getLoc())
           << "memory budget " << budget.str()
                              << " is infeasible: the smallest training-step plan needs "
                              << smallest->peakBytes << " bytes ("
                              << formatBytes(smallest->peakBytes) << ") for " << dims
                              << "; give at least that, or --memory-budget min";
  }
  RematPlan best = *fits;
  // Up to `pruneLimit` candidates: the subsets cheaper than the heuristic's
  // choice, in order of FLOPs; the first that fits is the exact optimum.
  if (order.size() > options.exhaustiveLimit && order.size() <= options.pruneLimit) {
    if (failed(costOrderWalk(cache, bytes, options.costOrderLimit, best)))
      return failure();
  }
  return best;
}

static std::vector<RematReportEntry> report(func::FuncOp fn, ArrayRef<int64_t> ids,
                                            const nn::RematCostEnv &env) {
  auto recurrent = [](Operation *op) { return op && isa<nn::RNNOp, nn::LSTMOp, nn::GRUOp>(op); };
  std::vector<RematReportEntry> out;
  for (const nn::RematEntry &e : nn::describeRemat(fn, ids, env)) {
    RematReportEntry r;
    r.id = e.id;
    r.kind = e.decision == nn::RematEntry::Decision::Reconstructed ? "reversible"
             : e.kind == nn::RematKind::Save                       ? "save"
                                                                   : "reserve";
    r.decision = e.decision == nn::RematEntry::Decision::Kept         ? "kept"
                 : e.decision == nn::RematEntry::Decision::Recomputed ? "recomputed"
                                                                      : "reconstructed";
    r.op = e.producer ? e.producer->getName().getStringRef().str() : "";
    r.loc = e.producer ? LocationAttr(e.producer->getLoc()) : LocationAttr();
    r.bytes = e.bytes;
    r.flops = e.flops;
    r.stored = e.stored;
    if (e.kind == nn::RematKind::Reserve && r.decision == "recomputed" && recurrent(e.producer))
      r.schedule = env.bpttSnapshots.contains(e.id)
                       ? "binomial:" + std::to_string(env.bpttSnapshots.lookup(e.id))
                       : "sqrt_t";
    out.push_back(std::move(r));
  }
  return out;
}

FailureOr<RematPlan> applyMemoryBudget(ModuleOp module, const MemoryBudget &budget,
                                       const RematSearchOptions &options) {
  func::FuncOp fn = trainingFunction(module);
  if (budget.kind == MemoryBudget::Kind::Unlimited && fn) {
    RematPlan plan;
    plan.report = report(fn, {}, costEnv(options));
    return plan;
  }
  FailureOr<RematPlan> plan = chooseRemat(module, budget, options);
  if (failed(plan))
    return failure();
  return applyRematPlan(module, *plan, options);
}

FailureOr<RematPlan> applyRematPlan(ModuleOp module, RematPlan plan,
                                    const RematSearchOptions &options) {
  FailureOr<func::FuncOp> required = requireTrainingFunction(module);
  if (failed(required))
    return failure();
  func::FuncOp fn = *required;
  RematSearchOptions chosen = options;
  chosen.bpttSnapshots = plan.bpttSnapshots;
  chosen.shareChains = plan.shareChains;
  plan.report = report(fn, plan.recompute, costEnv(chosen));
  if (plan.recompute.empty())
    return plan;
  FailureOr<nn::RematCost> cost = nn::applyRemat(fn, plan.recompute, costEnv(chosen));
  if (failed(cost))
    return failure();
  // What the rewrite cloned for each save (shared chains clone an op again
  // rather than split a fused kernel, which the estimate does not know).
  for (RematReportEntry &e : plan.report)
    if (e.kind == "save" && e.decision == "recomputed")
      e.flops = cost->saveFlops.lookup(e.id);
  return plan;
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {
struct NNCCRemat : impl::NNCCRematBase<NNCCRemat> {
  using NNCCRematBase::NNCCRematBase;
  void runOnOperation() override {
    if (budget.empty())
      return;
    ModuleOp module = getOperation();
    std::string error;
    FailureOr<MemoryBudget> b = MemoryBudget::parse(budget, error);
    if (failed(b)) {
      mlir::emitError(module.getLoc(), error);
      return signalPassFailure();
    }
    RematSearchOptions options;
    options.realSize = f64 ? 8 : 4;
    for (const std::string &d : dims) {
      auto [name, size] = StringRef(d).split('=');
      int64_t v;
      if (name.empty() || size.getAsInteger(10, v) || v < 0) {
        mlir::emitError(module.getLoc()) << "dims expects NAME=SIZE, got '" << d << "'";
        return signalPassFailure();
      }
      options.dims[name] = v;
    }
    if (failed(applyMemoryBudget(module, *b, options)))
      signalPassFailure();
  }
};
} // namespace

} // namespace nncc
