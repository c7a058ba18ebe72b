//===- Autodiff.cpp - Reverse-mode autodiff of nn functions -----*- C++ -*-===//
//
// `nncc-autodiff`: builds @forward_backward = forward + explicit residuals
// (`nn.save`) + backward, driven by the per-op GradientOpInterface rules
// (<Family>Gradients.cpp). See docs/autodiff.md.
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/Transforms/Passes.h"

#include "dialects/NN/IR/NNOps.h"
#include "dialects/NN/Transforms/GradientRules.h"
#include "nncc/Interfaces/GradientOpInterface.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

namespace nncc::nn {
#define GEN_PASS_DEF_NNAUTODIFF
#include "dialects/NN/Transforms/Passes.h.inc"
} // namespace nncc::nn

using namespace mlir;
using namespace nncc;
using namespace nncc::nn;

namespace {

bool isFloatTensor(Value v) {
  auto type = dyn_cast<nncc::nn::TensorType>(v.getType());
  return type && isa<FloatType>(type.getElementType());
}

/// Fuses each nn.linear whose result is read only by one nn.cross_entropy,
/// possibly by nn.sample ops and by the return, into nn.linear_cross_entropy,
/// which also writes the logits when the function returns them, and one
/// nn.linear_sample per sample (ELECTRA's generator head).
void fuseLinearCrossEntropy(func::FuncOp fn) {
  SmallVector<CrossEntropyOp> losses;
  fn.walk([&](CrossEntropyOp op) { losses.push_back(op); });
  for (CrossEntropyOp ce : losses) {
    auto linear = ce.getLogits().getDefiningOp<LinearOp>();
    if (!linear || linear->getBlock() != ce->getBlock() ||
        cast<nncc::nn::TensorType>(linear.getX().getType()).getRank() < 2)
      continue;
    bool returned = false, other = false;
    SmallVector<SampleOp> samples;
    for (OpOperand &use : linear.getResult().getUses()) {
      if (use.getOwner() == ce.getOperation())
        continue;
      if (isa<func::ReturnOp>(use.getOwner()))
        returned = true;
      else if (auto sample = dyn_cast<SampleOp>(use.getOwner());
               sample && sample->getBlock() == ce->getBlock())
        samples.push_back(sample);
      else
        other = true;
    }
    if (other || !llvm::hasSingleElement(llvm::make_filter_range(
                     linear.getResult().getUsers(),
                     [](Operation *u) { return isa<CrossEntropyOp>(u); })))
      continue;
    OpBuilder b(ce);
    auto fused = LinearCrossEntropyOp::create(
        b, ce.getLoc(), linear.getX(), linear.getWeight(), ce.getTarget(),
        linear.getBias(), ce.getIgnoreIndex(), returned);
    ce.getResult().replaceAllUsesWith(fused.getLoss());
    ce.erase();
    for (SampleOp sample : samples) {
      b.setInsertionPoint(sample);
      auto drawn = LinearSampleOp::create(b, sample.getLoc(), linear.getX(),
                                          linear.getWeight(), linear.getBias(),
                                          sample.getRows(), sample.getSeed());
      sample.getResult().replaceAllUsesWith(drawn.getResult());
      sample.erase();
    }
    if (returned)
      linear.getResult().replaceAllUsesWith(fused.getLogits());
    linear.erase();
  }
}

/// The reverse-mode engine for one function: implements the services the
/// rules get (GradientBuilder) and the reverse sweeps.
class Engine : public GradientBuilder {
public:
  Engine(OpBuilder &builder, func::FuncOp original, func::FuncOp func,
         ModuleOp module)
      : GradientBuilder(builder), original(original), func(func),
        module(module) {}

  /// `vjp`: the seeds are arguments `cotangent.<result>` (one per float
  /// result, loss included) instead of 1 for the loss, and every float input
  /// is differentiated unless `wrtInputs` names some.
  LogicalResult run(ArrayRef<std::string> wrtInputs, bool vjp);

  // GradientBuilder.
  Value get(Value value) override;
  bool needsAdjoint(Value value) override;
  void setReconstructed(Value value, Value reconstruction) override {
    reconstructed[value] = reconstruction;
  }
  void addAdjoint(Value value, Value adjoint) override {
    accumulate(*adjointStack.back(), value, adjoint);
  }
  void addParameterGradient(StringAttr name, Value gradient) override {
    accumulateParameter(*parameterStack.back(), name, gradient);
  }
  Value keepReserve(Operation *forward, Type reserveType) override;
  FailureOr<RegionClone> cloneRegion(Region &region,
                                     ValueRange args) override;
  LogicalResult differentiate(const RegionClone &clone, ArrayRef<Value> seeds,
                              ArrayRef<Value> wrt,
                              SmallVectorImpl<Value> &wrtAdjoints,
                              ParameterGradients *parameters) override;

private:
  bool isForward(Value value) {
    Operation *def = value.getDefiningOp();
    return def && forwardOps.contains(def);
  }
  bool isFree(Value value) {
    if (auto arg = dyn_cast<BlockArgument>(value))
      return arg.getOwner() == &func.getBody().front();
    return isa_and_nonnull<GetParameterOp, ConstantOp>(value.getDefiningOp());
  }
  Value save(Value value, StringRef rule);
  void accumulate(DenseMap<Value, Value> &adjoints, Value value,
                  Value adjoint);
  void accumulateParameter(ParameterGradients &grads, StringAttr name,
                           Value gradient);
  void analyseActivity(ArrayRef<Value> seeded, ArrayRef<BlockArgument> wrtArgs);
  void planResiduals();
  void eraseDeadBackward(Operation *last);
  std::string resultName(unsigned i);
  /// The index of the result named 'loss' (required without vjp; a float
  /// scalar).
  FailureOr<std::optional<unsigned>> findLoss(bool vjp);
  /// The inputs named by `names` (float tensors).
  FailureOr<SmallVector<BlockArgument>> findWrtArgs(ArrayRef<std::string> names);
  /// Places the backward's start marker (`boundary`) before `ret` and
  /// returns the seeds: (loss, 1), or with vjp (result, cotangent.<result>)
  /// for every float result, the cotangents new arguments.
  FailureOr<SmallVector<std::pair<Value, Value>>>
  seedBackward(func::ReturnOp ret, std::optional<unsigned> lossIndex, bool vjp);
  /// Replaces `ret` by one returning the forward's results, grad.<param>
  /// for every parameter, then grad.<input> for `wrtNames`.
  void returnGradients(func::ReturnOp ret, ArrayRef<std::string> wrtNames,
                       ArrayRef<BlockArgument> wrtArgs,
                       const DenseMap<Value, Value> &adjoints,
                       const ParameterGradients &parameterGrads);
  /// Erases saves that nothing reads and numbers the others in order.
  void numberResiduals();
  LogicalResult sweep(ArrayRef<Operation *> ops,
                      DenseMap<Value, Value> &adjoints, bool topLevel);

  func::FuncOp original; // the differentiated function, for diagnostics
  func::FuncOp func;
  ModuleOp module;
  SmallVector<Operation *> forwardOrder;
  DenseSet<Operation *> forwardOps;
  DenseSet<Value> varied, useful;
  DenseSet<Operation *> active;
  DenseMap<Value, Value> saves, reconstructed;
  Operation *boundary = nullptr;
  int64_t numSaves = 0;
  SmallVector<DenseMap<Value, Value> *> adjointStack;
  SmallVector<ParameterGradients *> parameterStack;
  /// Forward ops replaced by keepReserve, erased after the sweep (the sweep
  /// and the rules may still hold them).
  SmallVector<std::pair<Operation *, Operation *>> replacedForwards;
};

Value Engine::save(Value value, StringRef rule) {
  auto it = saves.find(value);
  if (it != saves.end())
    return it->second;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(boundary);
  auto op = SaveOp::create(builder, value.getLoc(), value, numSaves++,
                           rule.empty() ? StringAttr()
                                        : builder.getStringAttr(rule));
  saves[value] = op.getResult();
  return op.getResult();
}

Value Engine::get(Value value) {
  if (Value v = reconstructed.lookup(value))
    return v;
  if (Value v = saves.lookup(value))
    return v;
  if (!isForward(value))
    return value; // an argument, or built by the backward pass
  Operation *def = value.getDefiningOp();
  if (isa<GetParameterOp, ConstantOp>(def))
    return builder.clone(*def)->getResult(0);
  // Not declared by the rule: still correct, saved on demand.
  return save(value, "");
}

bool Engine::needsAdjoint(Value value) {
  // Top-level forward values and the function's arguments: by activity.
  // Values of the backward pass (region copies) are all differentiated.
  if (isForward(value))
    return varied.contains(value);
  if (auto arg = dyn_cast<BlockArgument>(value))
    if (arg.getOwner() == &func.getBody().front())
      return varied.contains(value);
  return true;
}

void Engine::accumulate(DenseMap<Value, Value> &adjoints, Value value,
                        Value adjoint) {
  if (!adjoint)
    return;
  Value &slot = adjoints[value];
  slot = slot ? AddOp::create(builder, adjoint.getLoc(), slot, adjoint)
                    .getResult()
              : adjoint;
}

void Engine::accumulateParameter(ParameterGradients &grads, StringAttr name,
                                 Value gradient) {
  Value &slot = grads[name];
  slot = slot ? AddOp::create(builder, gradient.getLoc(), slot, gradient)
                    .getResult()
              : gradient;
}

Value Engine::keepReserve(Operation *forward, Type reserveType) {
  Block *top = &func.getBody().front();
  if (forward->getBlock() != top || builder.getInsertionBlock() != top ||
      forward->getNumRegions() != 0)
    return {};
  // The same op with a trailing reserve result; the old one keeps its
  // operands (the sweep still reads them) until the sweep is over.
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(forward);
  OperationState state(forward->getLoc(), forward->getName());
  state.addOperands(forward->getOperands());
  state.addTypes(forward->getResultTypes());
  state.addTypes(reserveType);
  state.addAttributes(forward->getDiscardableAttrDictionary().getValue());
  state.propertiesAttr = forward->getPropertiesAsAttribute();
  Operation *kept = builder.create(state);
  forward->replaceAllUsesWith(kept->getResults().drop_back());
  if (forwardOps.contains(forward))
    forwardOps.insert(kept);
  for (auto [before, after] :
       llvm::zip(forward->getResults(), kept->getResults()))
    if (varied.contains(before))
      varied.insert(after);
  replacedForwards.push_back({forward, kept});
  return kept->getResults().back();
}

FailureOr<RegionClone> Engine::cloneRegion(Region &region, ValueRange args) {
  Operation *parent = region.getParentOp();
  if (!llvm::hasSingleElement(region) ||
      region.front().getNumArguments() != args.size() ||
      !isa_and_nonnull<YieldOp>(region.front().getTerminator()))
    return parent->emitOpError("has a malformed region");
  Block &block = region.front();
  IRMapping mapping;
  mapping.map(block.getArguments(), args);
  RegionClone clone;
  for (Operation &op : block.without_terminator()) {
    op.walk([&](Operation *nested) {
      for (Value operand : nested->getOperands()) {
        if (region.isAncestor(operand.getParentRegion()) ||
            mapping.contains(operand))
          continue;
        Value inner = get(operand);
        mapping.map(operand, inner);
        clone.captures.push_back({operand, inner});
      }
    });
    clone.ops.push_back(builder.clone(op, mapping));
  }
  for (Value v : block.getTerminator()->getOperands())
    clone.results.push_back(mapping.lookupOrDefault(v));
  return clone;
}

LogicalResult Engine::differentiate(const RegionClone &clone,
                                    ArrayRef<Value> seeds, ArrayRef<Value> wrt,
                                    SmallVectorImpl<Value> &wrtAdjoints,
                                    ParameterGradients *parameters) {
  DenseMap<Value, Value> adjoints;
  for (auto [result, seed] : llvm::zip(clone.results, seeds))
    accumulate(adjoints, result, seed);
  adjointStack.push_back(&adjoints);
  if (parameters)
    parameterStack.push_back(parameters);
  LogicalResult result = sweep(clone.ops, adjoints, /*topLevel=*/false);
  if (parameters)
    parameterStack.pop_back();
  adjointStack.pop_back();
  if (failed(result))
    return failure();
  for (Value v : wrt)
    wrtAdjoints.push_back(adjoints.lookup(v));
  for (auto [outer, inner] : clone.captures) {
    Value adjoint = adjoints.lookup(inner);
    if (!adjoint)
      continue;
    if (auto param = inner.getDefiningOp<GetParameterOp>()) {
      accumulateParameter(parameters ? *parameters : *parameterStack.back(),
                          param.getNameAttr().getAttr(), adjoint);
    } else if (!parameters) {
      addAdjoint(outer, adjoint);
    } else if (isFloatTensor(outer) && (!isForward(outer) ||
                                        varied.contains(outer))) {
      return emitError(outer.getLoc())
             << "gradient through a value captured by a region that is "
                "differentiated on its own (ODE dynamics or cell) is not "
                "supported; read parameters inside the region instead";
    }
  }
  return success();
}

LogicalResult Engine::sweep(ArrayRef<Operation *> ops,
                            DenseMap<Value, Value> &adjoints, bool topLevel) {
  for (Operation *op : llvm::reverse(ops)) {
    if (topLevel && !active.contains(op))
      continue;
    SmallVector<Value> resultAdjoints;
    bool any = false;
    for (Value result : op->getResults()) {
      resultAdjoints.push_back(adjoints.lookup(result));
      any |= static_cast<bool>(resultAdjoints.back());
    }
    if (!any)
      continue;
    if (auto param = dyn_cast<GetParameterOp>(op)) {
      accumulateParameter(*parameterStack.back(), param.getNameAttr().getAttr(),
                          resultAdjoints.front());
      continue;
    }
    if (op->getNumOperands() == 0 && op->getNumRegions() == 0)
      continue; // constants
    auto rule = dyn_cast<GradientOpInterface>(op);
    if (!rule)
      return op->emitOpError("has no gradient rule (GradientOpInterface)");
    SmallVector<Value> operandAdjoints;
    if (failed(rule.buildGradient(*this, resultAdjoints, operandAdjoints)))
      return failure();
    if (operandAdjoints.size() != op->getNumOperands())
      return op->emitOpError("gradient rule returned ")
             << operandAdjoints.size() << " adjoints for "
             << op->getNumOperands() << " operands";
    for (auto [operand, adjoint] :
         llvm::zip_equal(op->getOperands(), operandAdjoints)) {
      if (!adjoint || !isFloatTensor(operand))
        continue;
      if (topLevel && !varied.contains(operand))
        continue;
      accumulate(adjoints, operand, adjoint);
    }
  }
  return success();
}

/// Values read inside the regions of `op` but defined outside it.
static void forEachCapture(Operation *op, function_ref<void(Value)> fn) {
  op->walk([&](Operation *nested) {
    if (nested == op)
      return;
    for (Value operand : nested->getOperands())
      if (!op->isAncestor(operand.getParentRegion()->getParentOp()))
        fn(operand);
  });
}

void Engine::analyseActivity(ArrayRef<Value> seeded,
                             ArrayRef<BlockArgument> wrtArgs) {
  for (BlockArgument arg : wrtArgs)
    varied.insert(arg);
  for (Operation *op : forwardOrder) {
    bool isVaried = isa<GetParameterOp>(op);
    for (Value operand : op->getOperands())
      isVaried |= varied.contains(operand);
    if (!isVaried && op->getNumRegions() != 0) {
      op->walk([&](GetParameterOp) { isVaried = true; });
      forEachCapture(op, [&](Value v) { isVaried |= varied.contains(v); });
    }
    if (isVaried)
      for (Value result : op->getResults())
        if (isFloatTensor(result))
          varied.insert(result);
  }
  useful.insert(seeded.begin(), seeded.end());
  for (Operation *op : llvm::reverse(forwardOrder)) {
    if (!llvm::any_of(op->getResults(),
                      [&](Value r) { return useful.contains(r); }))
      continue;
    bool isVaried = llvm::any_of(
        op->getResults(), [&](Value r) { return varied.contains(r); });
    if (isVaried)
      active.insert(op);
    for (Value operand : op->getOperands())
      useful.insert(operand);
    forEachCapture(op, [&](Value v) { useful.insert(v); });
  }
}

void Engine::planResiduals() {
  // What each active rule reads, and which values rules reconstruct.
  llvm::MapVector<Value, SmallVector<Operation *>> readers;
  DenseMap<Value, Operation *> reconstructors;
  for (Operation *op : forwardOrder) {
    if (!active.contains(op))
      continue;
    auto rule = dyn_cast<GradientOpInterface>(op);
    if (!rule)
      continue;
    SmallVector<Value> saved, rebuilt;
    rule.getSavedValues(saved);
    rule.getReconstructedOperands(rebuilt);
    for (Value v : saved)
      if (isForward(v) && !isFree(v))
        readers[v].push_back(op);
    for (Value v : rebuilt)
      reconstructors[v] = op;
  }
  for (auto &[value, ops] : readers) {
    // A reconstructed value needs no save when every other reader runs its
    // backward after the reconstruction (i.e. comes earlier in the forward).
    if (Operation *rebuilder = reconstructors.lookup(value)) {
      if (llvm::all_of(ops, [&](Operation *reader) {
            return reader == rebuilder || reader->isBeforeInBlock(rebuilder);
          }))
        continue;
    }
    save(value, ops.front()->getName().getStringRef());
  }
}

/// The reserve operand of gradient op `op` goes: it recomputes.
static void dropReserveOperand(Operation *op) {
  llvm::TypeSwitch<Operation *>(op)
      .Case<RNNGradOp, LSTMGradOp, GRUGradOp, AttentionGradOp>(
          [](auto grad) { grad.getReserveMutable().clear(); });
}

/// Drops what the rules built but nothing reads (adjoints of inactive
/// operands, unused reconstructions) after `last` (the last forward op or
/// save; null: from the start), in reverse order so chains go too. A
/// forward that survives only for its reserve (a reconstruction whose
/// values nothing else reads) loses it, its gradient recomputes, and the
/// forward goes in the next round.
void Engine::eraseDeadBackward(Operation *last) {
  Block &body = func.getBody().front();
  bool changed = true;
  while (changed) {
    changed = false;
    SmallVector<Operation *> backward;
    for (Operation *op = last ? last->getNextNode() : &body.front(); op;
         op = op->getNextNode())
      backward.push_back(op);
    for (Operation *op : llvm::reverse(backward))
      if (isOpTriviallyDead(op))
        op->erase();
    for (Operation *op = last ? last->getNextNode() : &body.front(); op;
         op = op->getNextNode()) {
      if (op->getNumResults() < 2 ||
          !isa<ReserveType>(op->getResults().back().getType()))
        continue;
      Value reserve = op->getResults().back();
      if (reserve.use_empty() ||
          !llvm::all_of(op->getResults().drop_back(),
                        [](Value v) { return v.use_empty(); }))
        continue;
      for (Operation *user : llvm::make_early_inc_range(reserve.getUsers()))
        dropReserveOperand(user);
      changed = true;
    }
  }
}

std::string Engine::resultName(unsigned i) {
  if (auto name = func.getResultAttrOfType<StringAttr>(i, "nn.name"))
    return name.getValue().str();
  return "result" + std::to_string(i);
}

FailureOr<std::optional<unsigned>> Engine::findLoss(bool vjp) {
  std::optional<unsigned> lossIndex;
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (resultName(i) == "loss")
      lossIndex = i;
  if (!lossIndex && !vjp)
    return original.emitError("function @")
           << original.getSymName()
           << " has no result named 'loss' (nn.name): nncc-autodiff "
              "differentiates a declared loss (or, with vjp, the outputs)";
  if (lossIndex) {
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    Value loss = ret.getOperand(*lossIndex);
    if (!isFloatTensor(loss) ||
        cast<nncc::nn::TensorType>(loss.getType()).getRank() != 0)
      return original.emitError("the loss must be a float scalar, got ")
             << loss.getType();
  }
  return lossIndex;
}

FailureOr<SmallVector<BlockArgument>>
Engine::findWrtArgs(ArrayRef<std::string> names) {
  SmallVector<BlockArgument> wrtArgs;
  for (const std::string &name : names) {
    BlockArgument found;
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (auto attr = func.getArgAttrOfType<StringAttr>(i, "nn.name"))
        if (attr.getValue() == name)
          found = func.getArgument(i);
    if (!found)
      return original.emitError("wrt-inputs: no input named '")
             << name << "'";
    if (!isFloatTensor(found))
      return original.emitError("wrt-inputs: input '")
             << name << "' is not a float tensor";
    wrtArgs.push_back(found);
  }
  return wrtArgs;
}

FailureOr<SmallVector<std::pair<Value, Value>>>
Engine::seedBackward(func::ReturnOp ret, std::optional<unsigned> lossIndex, bool vjp) {
  SmallVector<Value> forwardResults(ret.getOperands());
  SmallVector<std::pair<Value, Value>> seeds;
  builder.setInsertionPoint(ret);
  // Where the backward starts: the loss seed, or (vjp) a marker constant
  // that nothing reads and that goes with the dead code at the end.
  Type markerType = builder.getF32Type();
  if (lossIndex)
    markerType = cast<nncc::nn::TensorType>(
                     forwardResults[*lossIndex].getType())
                     .getElementType();
  Value marker = ConstantOp::create(builder, ret.getLoc(),
                                    builder.getFloatAttr(markerType, 1.0));
  boundary = marker.getDefiningOp();
  if (!vjp) {
    seeds.push_back({forwardResults[*lossIndex], marker});
    return seeds;
  }
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    Value result = forwardResults[i];
    if (!isFloatTensor(result))
      continue;
    unsigned index = func.getNumArguments();
    if (failed(func.insertArgument(
            index, result.getType(),
            builder.getDictionaryAttr(builder.getNamedAttr(
                "nn.name",
                builder.getStringAttr("cotangent." + resultName(i)))),
            result.getLoc())))
      return failure();
    seeds.push_back({result, func.getArgument(index)});
  }
  return seeds;
}

void Engine::returnGradients(func::ReturnOp ret, ArrayRef<std::string> wrtNames,
                             ArrayRef<BlockArgument> wrtArgs,
                             const DenseMap<Value, Value> &adjoints,
                             const ParameterGradients &parameterGrads) {
  // The forward's results as the return reads them now.
  SmallVector<Value> results(ret.getOperands());
  SmallVector<Attribute> resultAttrs;
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    resultAttrs.push_back(func.getResultAttrDict(i)
                              ? Attribute(func.getResultAttrDict(i))
                              : builder.getDictionaryAttr({}));
  auto named = [&](const Twine &name) {
    return builder.getDictionaryAttr(builder.getNamedAttr(
        "nn.name", builder.getStringAttr(name)));
  };
  for (auto param : module.getOps<ParameterOp>()) {
    Value grad = parameterGrads.lookup(param.getSymNameAttr());
    if (!grad)
      grad = ZerosOp::create(builder, param.getLoc(),
                             TypeAttr::get(param.getType()));
    results.push_back(grad);
    resultAttrs.push_back(named("grad." + param.getSymName()));
  }
  for (auto [name, arg] : llvm::zip_equal(wrtNames, wrtArgs)) {
    Value grad = adjoints.lookup(arg);
    if (!grad)
      grad = ZerosOp::create(builder, arg.getLoc(),
                             TypeAttr::get(arg.getType()));
    results.push_back(grad);
    resultAttrs.push_back(named("grad." + name));
  }
  func::ReturnOp::create(builder, ret.getLoc(), results);
  ret.erase();
  func.setFunctionType(builder.getFunctionType(
      func.getArgumentTypes(), ValueRange(results).getTypes()));
  func.setAllResultAttrs(resultAttrs);
}

void Engine::numberResiduals() {
  Block &body = func.getBody().front();
  SmallVector<SaveOp> unusedSaves;
  for (auto save : body.getOps<SaveOp>())
    if (save->use_empty())
      unusedSaves.push_back(save);
  for (SaveOp save : unusedSaves)
    save.erase();
  int64_t index = 0;
  for (auto save : body.getOps<SaveOp>())
    save.setIndex(index++);
}

LogicalResult Engine::run(ArrayRef<std::string> wrtInputs, bool vjp) {
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());

  // The loss result (required without vjp) and the differentiated inputs.
  FailureOr<std::optional<unsigned>> lossIndex = findLoss(vjp);
  if (failed(lossIndex))
    return failure();
  SmallVector<std::string> wrtNames(wrtInputs.begin(), wrtInputs.end());
  if (vjp && wrtNames.empty())
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (auto attr = func.getArgAttrOfType<StringAttr>(i, "nn.name"))
        if (isFloatTensor(func.getArgument(i)))
          wrtNames.push_back(attr.getValue().str());
  FailureOr<SmallVector<BlockArgument>> wrtArgs = findWrtArgs(wrtNames);
  if (failed(wrtArgs))
    return failure();

  FailureOr<SmallVector<std::pair<Value, Value>>> seeds =
      seedBackward(ret, *lossIndex, vjp);
  if (failed(seeds))
    return failure();
  for (Operation &op : body.without_terminator()) {
    if (&op == boundary)
      break;
    forwardOrder.push_back(&op);
    forwardOps.insert(&op);
  }
  SmallVector<Value> seeded;
  for (auto &[result, seed] : *seeds)
    seeded.push_back(result);
  analyseActivity(seeded, *wrtArgs);
  builder.setInsertionPoint(ret);
  planResiduals();

  DenseMap<Value, Value> adjoints;
  ParameterGradients parameterGrads;
  for (auto &[result, seed] : *seeds)
    accumulate(adjoints, result, seed);
  adjointStack.push_back(&adjoints);
  parameterStack.push_back(&parameterGrads);
  if (failed(sweep(forwardOrder, adjoints, /*topLevel=*/true)))
    return failure();

  // Forward ops rebuilt with a reserve: uses made after the rebuild (by
  // rules that held the old results) move too.
  for (auto [before, after] : replacedForwards) {
    before->replaceAllUsesWith(after->getResults().drop_back());
    before->erase();
  }
  returnGradients(ret, wrtNames, *wrtArgs, adjoints, parameterGrads);
  eraseDeadBackward(boundary->getPrevNode());
  numberResiduals();
  return success();
}

struct NNAutodiffPass
    : public nncc::nn::impl::NNAutodiffBase<NNAutodiffPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>(functionName);
    if (!forward || forward.isExternal() ||
        !llvm::hasSingleElement(forward.getBody())) {
      module.emitError("nncc-autodiff: no function @")
          << functionName << " with a single-block body";
      return signalPassFailure();
    }
    std::string name = functionName + "_backward";
    if (functionName == "forward")
      name = "forward_backward";
    if (module.lookupSymbol(name)) {
      forward.emitError("nncc-autodiff: @") << name << " already exists";
      return signalPassFailure();
    }
    OpBuilder builder(module.getContext());
    builder.setInsertionPointAfter(forward);
    auto fb = cast<func::FuncOp>(builder.clone(*forward));
    fb.setSymName(name);
    fb->setAttr("nn.training", builder.getUnitAttr());
    if (!regularizersActive)
      fb->setAttr("nn.eval_mode", builder.getUnitAttr());
    if (fuseLossHeads && !vjp)
      fuseLinearCrossEntropy(fb);
    Engine engine(builder, forward, fb, module);
    if (failed(engine.run(wrtInputs, vjp))) {
      fb.erase();
      return signalPassFailure();
    }
  }
};

} // namespace
