//===- Remat.cpp - keep or recompute what the backward pass reads ---------===//
#include "dialects/NN/Transforms/Remat.h"

#include "dialects/NN/IR/BPTTCheckpoint.h"
#include "dialects/NN/IR/NNOps.h"
#include "dialects/NN/IR/NNTypes.h"
#include "dialects/NN/Transforms/Passes.h"
#include "nncc/Kernels/Revolve.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

namespace nncc::nn {
#define GEN_PASS_DEF_NNREMATAPPLY
#include "dialects/NN/Transforms/Passes.h.inc"
} // namespace nncc::nn

using namespace mlir;

namespace nncc::nn {

//===----------------------------------------------------------------------===//
// Cost model
//===----------------------------------------------------------------------===//

static std::optional<double> numElements(Type type, const RematCostEnv &env) {
  auto t = dyn_cast<TensorType>(type);
  if (!t)
    return std::nullopt;
  double n = 1;
  for (nncc::Dim d : t.getDims()) {
    if (d.isStatic())
      n *= static_cast<double>(d.getSize());
    else if (d.isSymbolic() && env.dims.count(d.getSymbol().getValue()))
      n *= static_cast<double>(env.dims.lookup(d.getSymbol().getValue()));
    else
      return std::nullopt;
  }
  return n;
}

uint64_t tensorBytes(Value value, const RematCostEnv &env) {
  auto t = dyn_cast<TensorType>(value.getType());
  std::optional<double> n = numElements(value.getType(), env);
  if (!t || !n)
    return 0;
  Type elt = t.getElementType();
  int64_t size = elt.isF32() || elt.isF64() ? env.realSize
                                             : std::max<int64_t>(1, elt.getIntOrFloatBitWidth() / 8);
  return static_cast<uint64_t>(*n) * static_cast<uint64_t>(size);
}

static double elementsOf(Value v, const RematCostEnv &env) {
  return numElements(v.getType(), env).value_or(0.0);
}

/// Size of dim `i` of a tensor value (1 when unknown).
static double dimOf(Value v, int64_t i, const RematCostEnv &env) {
  auto t = dyn_cast<TensorType>(v.getType());
  if (!t || i < 0 || i >= t.getRank())
    return 1;
  nncc::Dim d = t.getDim(i);
  if (d.isStatic())
    return static_cast<double>(d.getSize());
  if (d.isSymbolic() && env.dims.count(d.getSymbol().getValue()))
    return static_cast<double>(env.dims.lookup(d.getSymbol().getValue()));
  return 1;
}

static int64_t intAttr(Operation *op, StringRef name, int64_t dflt) {
  if (auto a = op->getAttrOfType<IntegerAttr>(name))
    return a.getInt();
  return dflt;
}

/// Recurrent stack: per step and layer, the gate GEMMs over [x, h].
static double recurrentFlops(Operation *op, int64_t gates, const RematCostEnv &env) {
  Value x = op->getOperand(0);
  auto xt = cast<TensorType>(x.getType());
  double B = dimOf(x, 0, env), T = dimOf(x, 1, env), I = dimOf(x, xt.getRank() - 1, env);
  double H = static_cast<double>(intAttr(op, "hidden_size", 1));
  double L = static_cast<double>(intAttr(op, "num_layers", 1));
  auto bidir = op->getAttrOfType<BoolAttr>("bidirectional");
  double D = bidir && bidir.getValue() ? 2 : 1;
  double first = 2 * B * T * gates * H * (I + H) * D;
  double rest = 2 * B * T * gates * H * (D * H + H) * D * (L - 1);
  return first + rest;
}

double estimateFlops(Operation *op, const RematCostEnv &env) {
  double out = 0;
  for (Value r : op->getResults())
    out += elementsOf(r, env);
  double own =
      llvm::TypeSwitch<Operation *, double>(op)
          .Case<LinearOp, MatmulOp>([&](Operation *o) {
            Value lhs = o->getOperand(0);
            auto t = cast<TensorType>(lhs.getType());
            return 2 * elementsOf(o->getResult(0), env) * dimOf(lhs, t.getRank() - 1, env);
          })
          .Case<AttentionOp>([&](AttentionOp o) {
            Value x = o->getOperand(0);
            double B = dimOf(x, 0, env), T = dimOf(x, 1, env), E = dimOf(x, 2, env);
            double A = dimOf(o.getOutProjWeight(), 1, env);
            // Projections (3 in, 1 out) and a dense core (an upper bound
            // for the sparse kinds).
            return 8 * B * T * E * A + 4 * B * T * T * A;
          })
          .Case<RNNOp>([&](Operation *o) { return recurrentFlops(o, 1, env); })
          .Case<LSTMOp>([&](Operation *o) { return recurrentFlops(o, 4, env); })
          .Case<GRUOp>([&](Operation *o) { return recurrentFlops(o, 3, env); })
          .Case<LayerNormOp>([&](Operation *) { return 8 * out; })
          .Case<SoftmaxOp>([&](Operation *) { return 5 * out; })
          .Case<GetParameterOp, ConstantOp, SaveOp>([](Operation *) { return 0.0; })
          .Default([&](Operation *) { return out; });
  // Region bodies (reversible F and G, ODE dynamics) run at least once.
  for (Region &region : op->getRegions())
    for (Operation &inner : region.getOps())
      own += estimateFlops(&inner, env);
  return own;
}

/// Bytes the lowering keeps for a reserve (nnk/kernels decide the exact
/// layout; this is the cost model's estimate): attention keeps its packed
/// projection, core output and log-sum-exp, a recurrent stack its layer
/// outputs and gates.
static uint64_t reserveBytes(Operation *forward, const RematCostEnv &env) {
  uint64_t out = 0;
  for (Value r : forward->getResults())
    out += tensorBytes(r, env);
  return llvm::TypeSwitch<Operation *, uint64_t>(forward)
      .Case<AttentionOp>([&](Operation *) { return 4 * out; })
      // Checkpointed: the gates (4H, 3H per step) no longer kept.
      .Case<LSTMOp>([&](Operation *) { return 4 * out; })
      .Case<GRUOp>([&](Operation *) { return 3 * out; })
      .Default([&](Operation *) { return 2 * out; });
}

/// The segment length a recomputed recurrent reserve is checkpointed with,
/// ceil(sqrt(T)) (Chen et al. 2016), or nullopt for other reserves.
static std::optional<int64_t> bpttSegment(Operation *forward, const RematCostEnv &env) {
  if (!isa<RNNOp, LSTMOp, GRUOp>(forward))
    return std::nullopt;
  double T = dimOf(forward->getOperand(0), 1, env);
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::sqrt(T))));
}

/// FLOPs of recomputing a recurrent reserve: one forward of its gates, and
/// under the binomial schedule (env.bpttSnapshots) also the forward steps
/// that rebuild the LSTM's cell states (revolve_forward_steps per layer and
/// direction; GRU / RNN states are the kept layer outputs).
static double reserveFlops(Operation *forward, int64_t id, const RematCostEnv &env) {
  double flops = estimateFlops(forward, env);
  auto it = env.bpttSnapshots.find(id);
  if (it == env.bpttSnapshots.end() || !isa<LSTMOp>(forward))
    return flops;
  double T = dimOf(forward->getOperand(0), 1, env);
  if (T < 1)
    return flops;
  return flops * (1 + kernels::revolve_forward_steps(static_cast<int64_t>(T), it->second) / T);
}

//===----------------------------------------------------------------------===//
// Candidates
//===----------------------------------------------------------------------===//

static Value reserveOperand(Operation *op) {
  if (op->getNumOperands() == 0)
    return {};
  for (Value v : op->getOperands())
    if (isa<ReserveType>(v.getType()))
      return v;
  return {};
}

/// Whether `v` is computed by a stored reversible block (storeReversibleBlocks).
static bool isStored(Value v) {
  Operation *def = v.getDefiningOp();
  return def && def->hasAttr(kStoredAttrName);
}

SmallVector<RematCandidate> collectRematCandidates(func::FuncOp fn) {
  SmallVector<RematCandidate> out;
  if (fn.getBody().empty())
    return out;
  int64_t next = 0;
  for (auto save : fn.getBody().front().getOps<SaveOp>()) {
    next = std::max(next, save.getIndex() + 1);
    if (!isStored(save.getValue()))
      out.push_back({save.getIndex(), RematKind::Save, save, save.getValue()});
  }
  llvm::sort(out, [](const RematCandidate &a, const RematCandidate &b) { return a.id < b.id; });
  // Reserve ids count the stored blocks' reserves too, so that the ids of
  // the others do not depend on which blocks are stored.
  for (Operation &op : fn.getBody().front())
    if (Value reserve = reserveOperand(&op)) {
      int64_t id = next++;
      if (!isStored(reserve))
        out.push_back({id, RematKind::Reserve, &op, reserve});
    }
  return out;
}

double reconstructionFlops(func::FuncOp fn, const RematCostEnv &env) {
  double flops = 0;
  for (ReversibleOp rev : topLevelReversibleBlocks(fn))
    flops += estimateFlops(rev, env);
  return flops;
}

/// Ops recomputed by cloning rather than kept: no cost, no memory.
static bool isFree(Operation *op) {
  return isa<GetParameterOp, ConstantOp>(op) ||
         (op->getNumOperands() == 0 && op->getNumRegions() == 0 && isPure(op));
}

namespace {

/// Candidate bookkeeping shared by the order and the rewrite.
struct RematState {
  const RematCostEnv &env;
  llvm::DenseMap<Value, SaveOp> saveOf; // forward value -> its save
  llvm::DenseSet<Operation *> recomputedSaves;

  RematState(func::FuncOp fn, const RematCostEnv &env) : env(env) {
    for (auto save : fn.getBody().front().getOps<SaveOp>())
      saveOf[save.getValue()] = save;
  }
  /// The kept save of `v`, if any.
  SaveOp kept(Value v) const {
    SaveOp s = saveOf.lookup(v);
    return s && !recomputedSaves.contains(s) ? s : SaveOp();
  }

  /// FLOPs of recomputing `v` from kept values (each op once per chain).
  double chainFlops(Value v, llvm::DenseSet<Operation *> &seen) const {
    if (isa<BlockArgument>(v) || kept(v))
      return 0;
    Operation *def = v.getDefiningOp();
    if (!def || isFree(def) || !seen.insert(def).second)
      return 0;
    double f = estimateFlops(def, env);
    for (Value operand : def->getOperands())
      f += chainFlops(operand, seen);
    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(def->getRegions(), captured);
    for (Value c : captured)
      f += chainFlops(c, seen);
    return f;
  }
};

} // namespace

/// The top-level op of `block` containing `op`.
static Operation *topLevel(Operation *op, Block *block) {
  while (op && op->getBlock() != block)
    op = op->getParentOp();
  return op;
}

/// The top-level op that first reads `save`'s result (null when none does).
static Operation *firstReader(SaveOp save, Block *block) {
  Operation *first = nullptr;
  for (Operation *user : save.getResult().getUsers()) {
    Operation *top = topLevel(user, block);
    if (top && (!first || top->isBeforeInBlock(first)))
      first = top;
  }
  return first;
}

/// `saves` in the order the backward first reads them (unread ones last),
/// ties in their given order: the order their chains are cloned in, so that
/// a shared chain's clones come before every later reader.
static SmallVector<SaveOp> inReadOrder(ArrayRef<SaveOp> saves, Block *block) {
  SmallVector<std::pair<Operation *, SaveOp>> keyed;
  for (SaveOp s : saves)
    keyed.push_back({firstReader(s, block), s});
  llvm::stable_sort(keyed, [](const auto &a, const auto &b) {
    if (!a.first || !b.first)
      return a.first && !b.first;
    return a.first->isBeforeInBlock(b.first);
  });
  return llvm::to_vector(llvm::make_second_range(keyed));
}

SmallVector<int64_t> rematOrder(func::FuncOp fn, const RematCostEnv &env) {
  SmallVector<RematCandidate> cands = collectRematCandidates(fn);
  RematState state(fn, env);
  SmallVector<int64_t> order;
  llvm::DenseSet<int64_t> chosen;
  while (order.size() < cands.size()) {
    const RematCandidate *best = nullptr;
    double bestScore = -1, bestBytes = -1;
    for (const RematCandidate &c : cands) {
      if (chosen.contains(c.id))
        continue;
      double bytes, flops;
      if (c.kind == RematKind::Save) {
        // While it is kept, its own save does not count as recomputable.
        bytes = static_cast<double>(tensorBytes(c.value, env));
        auto save = cast<SaveOp>(c.op);
        state.recomputedSaves.insert(save);
        llvm::DenseSet<Operation *> seen;
        flops = state.chainFlops(c.value, seen);
        state.recomputedSaves.erase(save);
      } else {
        Operation *forward = c.value.getDefiningOp();
        bytes = static_cast<double>(reserveBytes(forward, env));
        flops = estimateFlops(forward, env);
      }
      double score = bytes / (flops + 1.0);
      if (score > bestScore || (score == bestScore && bytes > bestBytes)) {
        best = &c;
        bestScore = score;
        bestBytes = bytes;
      }
    }
    chosen.insert(best->id);
    order.push_back(best->id);
    if (best->kind == RematKind::Save)
      state.recomputedSaves.insert(best->op);
  }
  return order;
}

SmallVector<RematEntry> describeRemat(func::FuncOp fn, ArrayRef<int64_t> ids,
                                      const RematCostEnv &env) {
  SmallVector<RematCandidate> cands = collectRematCandidates(fn);
  llvm::DenseSet<int64_t> wanted(ids.begin(), ids.end());
  RematState state(fn, env);
  for (const RematCandidate &c : cands)
    if (c.kind == RematKind::Save && wanted.contains(c.id))
      state.recomputedSaves.insert(c.op);
  // A recomputed save's FLOPs: its chain, less what earlier chains already
  // cloned when chains are shared.
  llvm::DenseMap<Operation *, double> saveFlops;
  SmallVector<SaveOp> recomputed;
  for (Operation *save : state.recomputedSaves)
    recomputed.push_back(cast<SaveOp>(save));
  llvm::sort(recomputed, [](SaveOp a, SaveOp b) { return a.getIndex() < b.getIndex(); });
  llvm::DenseSet<Operation *> sharedSeen;
  for (SaveOp save : inReadOrder(recomputed, &fn.getBody().front())) {
    llvm::DenseSet<Operation *> ownSeen;
    saveFlops[save] = state.chainFlops(save.getValue(), env.shareChains ? sharedSeen : ownSeen);
  }
  SmallVector<RematEntry> out;
  for (const RematCandidate &c : cands) {
    RematEntry e;
    e.id = c.id;
    e.kind = c.kind;
    e.producer = c.value.getDefiningOp();
    bool recompute = wanted.contains(c.id);
    e.decision = recompute ? RematEntry::Decision::Recomputed : RematEntry::Decision::Kept;
    if (c.kind == RematKind::Save) {
      e.bytes = tensorBytes(c.value, env);
      e.flops = recompute ? saveFlops.lookup(c.op) : 0;
    } else {
      e.bytes = reserveBytes(e.producer, env);
      e.flops = recompute ? reserveFlops(e.producer, c.id, env) : 0;
    }
    out.push_back(e);
  }
  // Stored reversible blocks: everything their backward reads is kept.
  for (auto save : fn.getBody().front().getOps<SaveOp>())
    if (isStored(save.getValue())) {
      RematEntry e;
      e.id = save.getIndex();
      e.producer = save.getValue().getDefiningOp();
      e.bytes = tensorBytes(save.getValue(), env);
      e.stored = true;
      out.push_back(e);
    }
  for (Operation &op : fn.getBody().front())
    if (Value reserve = reserveOperand(&op); reserve && isStored(reserve)) {
      RematEntry e;
      e.kind = RematKind::Reserve;
      e.producer = reserve.getDefiningOp();
      e.bytes = reserveBytes(e.producer, env);
      e.stored = true;
      out.push_back(e);
    }
  // Reversible blocks rebuild their input from their output (the rule of
  // nn.reversible): one F and one G evaluation.
  for (auto rev : fn.getBody().front().getOps<ReversibleOp>()) {
    RematEntry e;
    e.decision = RematEntry::Decision::Reconstructed;
    e.producer = rev;
    e.bytes = tensorBytes(rev->getOperand(0), env);
    e.flops = estimateFlops(rev, env);
    out.push_back(e);
  }
  return out;
}

//===----------------------------------------------------------------------===//
// The rewrite
//===----------------------------------------------------------------------===//

/// `op` rebuilt at the builder's insertion point on `operands`, without
/// its trailing reserve result (region-free ops only: the reserve ops).
static Operation *createWithoutReserve(OpBuilder &b, Operation *op, ValueRange operands) {
  OperationState state(op->getLoc(), op->getName());
  state.addOperands(operands);
  state.addTypes(TypeRange(op->getResultTypes()).drop_back());
  state.addAttributes(op->getDiscardableAttrDictionary().getValue());
  state.propertiesAttr = op->getPropertiesAsAttribute();
  return b.create(state);
}

static bool hasReserveResult(Operation *op) {
  return op->getNumResults() && isa<ReserveType>(op->getResults().back().getType());
}

/// `op` cloned at the builder's insertion point with operands through
/// `map`; a trailing reserve result is left out (nothing reads it here).
static Operation *cloneForRecompute(OpBuilder &b, Operation *op, IRMapping &map) {
  Operation *clone;
  if (hasReserveResult(op)) {
    SmallVector<Value> operands;
    for (Value v : op->getOperands())
      operands.push_back(map.lookupOrDefault(v));
    clone = createWithoutReserve(b, op, operands);
  } else {
    clone = b.clone(*op, map);
  }
  for (auto [from, to] : llvm::zip(op->getResults(), clone->getResults()))
    map.map(from, to);
  clone->setAttr("nn.recomputed", b.getUnitAttr());
  return clone;
}

namespace {
struct Rewriter {
  RematState &state;
  OpBuilder &builder;
  double flops = 0;
  llvm::DenseSet<Operation *> chainClones; // the clones of the current chain

  /// Whether `m`, a value memoised in the map, is read again: always within
  /// a chain, and an earlier chain's clone unless that would split a fused
  /// kernel (RematCostEnv::fusedIntoConsumer).
  bool reusable(Value m) const {
    Operation *def = m.getDefiningOp();
    return !def || chainClones.contains(def) || !def->hasAttr("nn.recomputed") ||
           !state.env.fusedIntoConsumer || !state.env.fusedIntoConsumer(def);
  }

  /// `v` available at the insertion point: a kept save, an argument, or a
  /// recomputation (memoised in `map`: this chain's, or with shared chains
  /// every chain's so far).
  Value materialize(Value v, IRMapping &map) {
    if (Value m = map.lookupOrNull(v); m && reusable(m))
      return m;
    if (isa<BlockArgument>(v))
      return v;
    if (SaveOp s = state.kept(v))
      return s.getResult();
    Operation *def = v.getDefiningOp();
    for (Value operand : def->getOperands())
      map.map(operand, materialize(operand, map));
    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(def->getRegions(), captured);
    for (Value c : captured)
      map.map(c, materialize(c, map));
    if (!isFree(def))
      flops += estimateFlops(def, state.env);
    chainClones.insert(cloneForRecompute(builder, def, map));
    return map.lookup(v);
  }
};
} // namespace

/// Rebuilds `forward` without its (now unread) trailing reserve result.
static void dropReserveResult(Operation *forward) {
  OpBuilder b(forward);
  Operation *plain = createWithoutReserve(b, forward, forward->getOperands());
  for (auto [from, to] : llvm::zip(forward->getResults().drop_back(), plain->getResults()))
    from.replaceAllUsesWith(to);
  forward->erase();
}

FailureOr<RematCost> applyRemat(func::FuncOp fn, ArrayRef<int64_t> ids,
                                const RematCostEnv &env) {
  SmallVector<RematCandidate> cands = collectRematCandidates(fn);
  llvm::DenseSet<int64_t> wanted(ids.begin(), ids.end());
  for (int64_t id : ids)
    if (!llvm::any_of(cands, [&](const RematCandidate &c) { return c.id == id; }))
      return fn.emitError() << "no rematerialisation candidate " << id << " in @"
                            << fn.getSymName() << " (it has " << cands.size() << ")";
  RematState state(fn, env);
  Block *block = &fn.getBody().front();
  RematCost cost;
  SmallVector<SaveOp> saves;
  for (const RematCandidate &c : cands) {
    if (!wanted.contains(c.id))
      continue;
    if (c.kind == RematKind::Save) {
      saves.push_back(cast<SaveOp>(c.op));
      state.recomputedSaves.insert(c.op);
      cost.bytes += tensorBytes(c.value, env);
      continue;
    }
    // A reserve: the gradient op recomputes its forward's internals.
    Operation *forward = c.value.getDefiningOp();
    cost.bytes += reserveBytes(forward, env);
    cost.flops += reserveFlops(forward, c.id, env);
    if (std::optional<int64_t> every = bpttSegment(forward, env)) {
      // Recurrent stacks: without a reserve the backward rebuilds all T
      // steps of gates at once; checkpointing keeps sqrt(T) segments, the
      // binomial schedule a few cell states.
      auto snapshots = env.bpttSnapshots.find(c.id);
      if (snapshots != env.bpttSnapshots.end()
              ? failed(setBPTTSnapshots(forward, c.op, snapshots->second))
              : failed(setBPTTCheckpoint(forward, c.op, *every)))
        return fn.emitError("cannot checkpoint the BPTT scan of ") << forward->getName();
      continue;
    }
    llvm::TypeSwitch<Operation *>(c.op).Case<RNNGradOp, LSTMGradOp, GRUGradOp, AttentionGradOp>(
        [](auto grad) { grad.getReserveMutable().clear(); });
    if (c.value.use_empty())
      dropReserveResult(forward);
  }
  OpBuilder builder(fn.getContext());
  Rewriter rewriter{state, builder};
  // In read order, each chain right before its save's first reader; shared
  // chains memoise every clone across saves (the earlier insertion points
  // dominate the later ones).
  IRMapping shared;
  for (SaveOp save : inReadOrder(saves, block)) {
    if (Operation *first = firstReader(save, block)) {
      builder.setInsertionPoint(first);
      IRMapping own;
      rewriter.chainClones.clear();
      double before = rewriter.flops;
      Value v = rewriter.materialize(save.getValue(), env.shareChains ? shared : own);
      save.getResult().replaceAllUsesWith(v);
      cost.saveFlops[save.getIndex()] = rewriter.flops - before;
    }
    save.erase();
  }
  cost.flops += rewriter.flops;
  return cost;
}

//===----------------------------------------------------------------------===//
// nn-remat-apply: a given set, for tests and for reading the rewrite
//===----------------------------------------------------------------------===//

namespace {
struct NNRematApply : impl::NNRematApplyBase<NNRematApply> {
  using NNRematApplyBase::NNRematApplyBase;
  void runOnOperation() override {
    auto fn = getOperation().lookupSymbol<func::FuncOp>(functionName);
    if (!fn) {
      getOperation().emitError() << "no function @" << functionName << " to rematerialise";
      return signalPassFailure();
    }
    SmallVector<int64_t> ids(recompute.begin(), recompute.end());
    RematCostEnv env;
    env.shareChains = shareChains;
    if (failed(applyRemat(fn, ids, env)))
      signalPassFailure();
  }
};
} // namespace

} // namespace nncc::nn
