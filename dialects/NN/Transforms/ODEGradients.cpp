//===- ODEGradients.cpp - rules: ODE solves and ODE-RNNs --------*- C++ -*-===//
//
// The backward ops carry the dynamics (and cell) regions and their
// vector-Jacobian products, built by differentiating the regions with
// these same rules.
// (GradientOpInterface models; docs/autodiff.md.)
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/Transforms/GradientRule.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::nn;
using namespace nncc::nn::gradients;

namespace {

/// A detached block with arguments of `types` holding a copy of `region`
/// (block arguments = the new ones) that yields the copy's results.
FailureOr<Block *> copyRegion(GradientBuilder &gb, Location loc, Region &region, TypeRange types) {
  OpBuilder &b = gb.getBuilder();
  OpBuilder::InsertionGuard guard(b);
  auto *block = new Block();
  for (Type type : types)
    block->addArgument(type, loc);
  b.setInsertionPointToEnd(block);
  FailureOr<RegionClone> clone = gb.cloneRegion(region, block->getArguments());
  if (failed(clone)) {
    delete block;
    return failure();
  }
  YieldOp::create(b, loc, clone->results);
  return block;
}

/// A detached block (args..., a) yielding the VJP of `region` at args with
/// cotangent a: the adjoints of the arguments selected by `wrt` (indices),
/// then the parameter gradients (whose names go to `params`).
FailureOr<Block *> vjpRegion(GradientBuilder &gb, Location loc, Region &region, TypeRange argTypes,
                             Type cotangentType, ArrayRef<unsigned> wrt,
                             SmallVectorImpl<Attribute> &params) {
  OpBuilder &b = gb.getBuilder();
  OpBuilder::InsertionGuard guard(b);
  auto *block = new Block();
  for (Type type : argTypes)
    block->addArgument(type, loc);
  Value a = block->addArgument(cotangentType, loc);
  b.setInsertionPointToEnd(block);
  FailureOr<RegionClone> clone = gb.cloneRegion(region, block->getArguments().drop_back());
  if (failed(clone)) {
    delete block;
    return failure();
  }
  SmallVector<Value> wrtValues, adjoints;
  for (unsigned index : wrt)
    wrtValues.push_back(block->getArgument(index));
  ParameterGradients grads;
  if (failed(gb.differentiate(*clone, a, wrtValues, adjoints, &grads))) {
    delete block;
    return failure();
  }
  SmallVector<Value> yields;
  for (auto [value, adjoint] : llvm::zip_equal(wrtValues, adjoints))
    yields.push_back(adjoint ? adjoint : zeros(b, loc, value.getType()));
  for (auto &[name, grad] : grads) {
    params.push_back(FlatSymbolRefAttr::get(name));
    yields.push_back(grad);
  }
  YieldOp::create(b, loc, yields);
  // The copy's forward ops that the VJP does not read.
  SmallVector<Operation *> ops;
  for (Operation &op : *block)
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();
  return block;
}

void odeSolveSaved(ODESolveOp op, SmallVectorImpl<Value> &s) {
  // Adjoint method: the final state, solved backwards; otherwise the
  // initial state, from which the steps are recomputed.
  s.push_back(op.getAdjoint() ? op.getResult() : op.getH0());
  s.push_back(op.getT0());
  s.push_back(op.getT1());
  appendCaptures(op, s);
}
LogicalResult odeSolveGradient(ODESolveOp op, GradientBuilder &gb, ArrayRef<Value> r,
                               SmallVectorImpl<Value> &out) {
  OpBuilder &b = gb.getBuilder();
  Location loc = op.getLoc();
  Type tType = op.getT0().getType(), hType = op.getH0().getType();
  FailureOr<Block *> dynamics = copyRegion(gb, loc, op.getDynamics(), {tType, hType});
  if (failed(dynamics))
    return failure();
  SmallVector<Attribute> params;
  FailureOr<Block *> vjp = vjpRegion(gb, loc, op.getDynamics(), {tType, hType}, hType, {1}, params);
  if (failed(vjp))
    return failure();
  SmallVector<Type> paramTypes;
  auto yield = cast<YieldOp>((*vjp)->back());
  for (Value v : yield.getValues().drop_front())
    paramTypes.push_back(v.getType());
  Value h = gb.get(op.getAdjoint() ? op.getResult() : op.getH0());
  auto grad =
      ODESolveGradOp::create(b, loc, hType, paramTypes, h, gb.get(op.getT0()), gb.get(op.getT1()),
                             r[0], op.getMethod(), op.getSteps(), op.getRtol(), op.getAtol(),
                             op.getAdjoint(), op.getMaxSteps(), b.getArrayAttr(params));
  grad.getDynamics().push_back(*dynamics);
  grad.getVjp().push_back(*vjp);
  for (auto [name, dparam] : llvm::zip_equal(params, grad.getDparams()))
    gb.addParameterGradient(cast<FlatSymbolRefAttr>(name).getAttr(), dparam);
  out.push_back(grad.getDh0());
  out.push_back(Value());
  out.push_back(Value());
  return success();
}

void odernnSaved(ODERNNOp op, SmallVectorImpl<Value> &s) {
  s.push_back(op.getX());
  s.push_back(op.getTimes());
  if (op.getH0())
    s.push_back(op.getH0());
  s.push_back(op.getResult());
  appendCaptures(op, s);
}
LogicalResult odernnGradient(ODERNNOp op, GradientBuilder &gb, ArrayRef<Value> r,
                             SmallVectorImpl<Value> &out) {
  OpBuilder &b = gb.getBuilder();
  Location loc = op.getLoc();
  auto xType = tensorType(op.getX());
  auto hType = xType.withDims({xType.getDim(0), Dim::getStatic(op.getHiddenSize())});
  // Each row's time, [B, 1] (the dynamics' signature).
  auto tType = tensorType(op.getTimes()).withDims({xType.getDim(0), Dim::getStatic(1)});
  auto xtType = xType.withDims({xType.getDim(0), xType.getDim(2)});
  FailureOr<Block *> dynamics = copyRegion(gb, loc, op.getDynamics(), {tType, hType});
  if (failed(dynamics))
    return failure();
  SmallVector<Attribute> dynParams, cellParams;
  FailureOr<Block *> dynVjp =
      vjpRegion(gb, loc, op.getDynamics(), {tType, hType}, hType, {1}, dynParams);
  if (failed(dynVjp))
    return failure();
  FailureOr<Block *> cellVjp =
      vjpRegion(gb, loc, op.getCell(), {xtType, hType}, hType, {0, 1}, cellParams);
  if (failed(cellVjp))
    return failure();
  SmallVector<Type> paramTypes;
  for (Value v : cast<YieldOp>((*dynVjp)->back()).getValues().drop_front())
    paramTypes.push_back(v.getType());
  for (Value v : cast<YieldOp>((*cellVjp)->back()).getValues().drop_front(2))
    paramTypes.push_back(v.getType());
  Type dh0Type = op.getH0() ? op.getH0().getType() : Type(hType);
  auto grad = ODERNNGradOp::create(
      b, loc, xType, dh0Type, paramTypes, gb.get(op.getX()), gb.get(op.getTimes()),
      getOpt(gb, op.getH0()), gb.get(op.getResult()), r[0], op.getHiddenSize(), op.getMethod(),
      op.getSteps(), op.getRtol(), op.getAtol(), op.getAdjoint(), op.getMaxSteps(),
      b.getArrayAttr(dynParams), b.getArrayAttr(cellParams));
  grad.getDynamics().push_back(*dynamics);
  grad.getDynamicsVjp().push_back(*dynVjp);
  grad.getCellVjp().push_back(*cellVjp);
  SmallVector<Attribute> names(dynParams);
  llvm::append_range(names, cellParams);
  for (auto [name, dparam] : llvm::zip_equal(names, grad.getDparams()))
    gb.addParameterGradient(cast<FlatSymbolRefAttr>(name).getAttr(), dparam);
  out.push_back(grad.getDx());
  out.push_back(Value());
  if (op.getH0())
    out.push_back(grad.getDh0());
  return success();
}

} // namespace

void nncc::nn::gradients::attachODEGradientRules(MLIRContext &ctx) {
  attachGradientRule<ODESolveOp, odeSolveSaved, odeSolveGradient>(ctx);
  attachGradientRule<ODERNNOp, odernnSaved, odernnGradient>(ctx);
}
