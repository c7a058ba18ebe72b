//===- ElementwiseGradients.cpp - rules: elementwise ------------*- C++ -*-===//
//
// Arithmetic, comparisons, select, casts, activations, dropout and
// stop_gradient: adjoints as nn ops, summed back over broadcast dims.
// (GradientOpInterface models; docs/autodiff.md.)
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/Transforms/GradientRule.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::nn;
using namespace nncc::nn::gradients;

namespace {

LogicalResult addGradient(AddOp op, GradientBuilder &gb, ArrayRef<Value> r,
                          SmallVectorImpl<Value> &out) {
  OpBuilder &b = gb.getBuilder();
  if (!isFloatTensor(op.getLhs()))
    return out.append(2, Value()), success();
  out.push_back(unbroadcast(b, op.getLoc(), r[0], op.getLhs().getType()));
  out.push_back(unbroadcast(b, op.getLoc(), r[0], op.getRhs().getType()));
  return success();
}

LogicalResult subGradient(SubOp op, GradientBuilder &gb, ArrayRef<Value> r,
                          SmallVectorImpl<Value> &out) {
  OpBuilder &b = gb.getBuilder();
  Location loc = op.getLoc();
  if (!isFloatTensor(op.getLhs()))
    return out.append(2, Value()), success();
  out.push_back(unbroadcast(b, loc, r[0], op.getLhs().getType()));
  out.push_back(gb.needsAdjoint(op.getRhs())
                    ? unbroadcast(b, loc, NegOp::create(b, loc, r[0]), op.getRhs().getType())
                    : Value());
  return success();
}

void mulSaved(MulOp op, SmallVectorImpl<Value> &s) {
  s.push_back(op.getLhs());
  s.push_back(op.getRhs());
}
LogicalResult mulGradient(MulOp op, GradientBuilder &gb, ArrayRef<Value> r,
                          SmallVectorImpl<Value> &out) {
  OpBuilder &b = gb.getBuilder();
  Location loc = op.getLoc();
  if (!isFloatTensor(op.getLhs()))
    return out.append(2, Value()), success();
  out.push_back(
      gb.needsAdjoint(op.getLhs())
          ? unbroadcast(b, loc, mul(b, loc, r[0], gb.get(op.getRhs())), op.getLhs().getType())
          : Value());
  out.push_back(
      gb.needsAdjoint(op.getRhs())
          ? unbroadcast(b, loc, mul(b, loc, r[0], gb.get(op.getLhs())), op.getRhs().getType())
          : Value());
  return success();
}

void divSaved(DivOp op, SmallVectorImpl<Value> &s) {
  s.push_back(op.getLhs());
  s.push_back(op.getRhs());
}
LogicalResult divGradient(DivOp op, GradientBuilder &gb, ArrayRef<Value> r,
                          SmallVectorImpl<Value> &out) {
  OpBuilder &b = gb.getBuilder();
  Location loc = op.getLoc();
  if (!isFloatTensor(op.getLhs()))
    return out.append(2, Value()), success();
  Value rhs = gb.get(op.getRhs());
  out.push_back(gb.needsAdjoint(op.getLhs())
                    ? unbroadcast(b, loc, div(b, loc, r[0], rhs), op.getLhs().getType())
                    : Value());
  if (gb.needsAdjoint(op.getRhs())) {
    // d(l/r)/dr = -l / r^2
    Value q = div(b, loc, mul(b, loc, r[0], gb.get(op.getLhs())), mul(b, loc, rhs, rhs));
    out.push_back(unbroadcast(b, loc, NegOp::create(b, loc, q), op.getRhs().getType()));
  } else {
    out.push_back(Value());
  }
  return success();
}

/// Comparisons are piecewise constant: no adjoint for either side.
LogicalResult compareGradient(CompareOp op, GradientBuilder &gb, ArrayRef<Value> r,
                              SmallVectorImpl<Value> &out) {
  return out.append(2, Value()), success();
}

/// d a = select(cond, dy, 0), d b = select(cond, 0, dy), each summed back
/// over the dims its broadcast expanded.
void selectSaved(SelectOp op, SmallVectorImpl<Value> &s) { s.push_back(op.getCond()); }
LogicalResult selectGradient(SelectOp op, GradientBuilder &gb, ArrayRef<Value> r,
                             SmallVectorImpl<Value> &out) {
  OpBuilder &b = gb.getBuilder();
  Location loc = op.getLoc();
  out.push_back(Value());
  if (!isFloatTensor(op.getA()))
    return out.append(2, Value()), success();
  Value cond = gb.get(op.getCond());
  Value zero = scalar(b, loc, 0.0, tensorType(r[0]).getElementType());
  out.push_back(
      gb.needsAdjoint(op.getA())
          ? unbroadcast(b, loc, SelectOp::create(b, loc, cond, r[0], zero), op.getA().getType())
          : Value());
  out.push_back(
      gb.needsAdjoint(op.getB())
          ? unbroadcast(b, loc, SelectOp::create(b, loc, cond, zero, r[0]), op.getB().getType())
          : Value());
  return success();
}

/// Float-to-float casts pass the adjoint back in the operand's type; casts
/// from or to integers have none.
LogicalResult castGradient(CastOp op, GradientBuilder &gb, ArrayRef<Value> r,
                           SmallVectorImpl<Value> &out) {
  if (!isFloatTensor(op.getX()) || !isFloatTensor(op.getResult()))
    return out.push_back(Value()), success();
  Type back = tensorType(op.getX()).getElementType();
  out.push_back(
      back == tensorType(r[0]).getElementType()
          ? r[0]
          : CastOp::create(gb.getBuilder(), op.getLoc(), r[0], TypeAttr::get(back)).getResult());
  return success();
}

LogicalResult negGradient(NegOp op, GradientBuilder &gb, ArrayRef<Value> r,
                          SmallVectorImpl<Value> &out) {
  out.push_back(NegOp::create(gb.getBuilder(), op.getLoc(), r[0]));
  return success();
}

/// Rules of the form dx = dy * g(y) on the saved result y.
LogicalResult tanhGradient(TanhOp op, GradientBuilder &gb, ArrayRef<Value> r,
                           SmallVectorImpl<Value> &out) {
  OpBuilder &b = gb.getBuilder();
  Location loc = op.getLoc();
  Value y = gb.get(op.getResult());
  Value one = scalar(b, loc, 1.0, tensorType(y).getElementType());
  out.push_back(mul(b, loc, r[0], sub(b, loc, one, mul(b, loc, y, y))));
  return success();
}

LogicalResult sigmoidGradient(SigmoidOp op, GradientBuilder &gb, ArrayRef<Value> r,
                              SmallVectorImpl<Value> &out) {
  OpBuilder &b = gb.getBuilder();
  Location loc = op.getLoc();
  Value y = gb.get(op.getResult());
  Value one = scalar(b, loc, 1.0, tensorType(y).getElementType());
  out.push_back(mul(b, loc, r[0], mul(b, loc, y, sub(b, loc, one, y))));
  return success();
}

LogicalResult expGradient(ExpOp op, GradientBuilder &gb, ArrayRef<Value> r,
                          SmallVectorImpl<Value> &out) {
  out.push_back(mul(gb.getBuilder(), op.getLoc(), r[0], gb.get(op.getResult())));
  return success();
}

void logSaved(LogOp op, SmallVectorImpl<Value> &s) { s.push_back(op.getX()); }
LogicalResult logGradient(LogOp op, GradientBuilder &gb, ArrayRef<Value> r,
                          SmallVectorImpl<Value> &out) {
  out.push_back(div(gb.getBuilder(), op.getLoc(), r[0], gb.get(op.getX())));
  return success();
}

void reluSaved(ReluOp op, SmallVectorImpl<Value> &s) { s.push_back(op.getX()); }
LogicalResult reluGradient(ReluOp op, GradientBuilder &gb, ArrayRef<Value> r,
                           SmallVectorImpl<Value> &out) {
  out.push_back(ActivationGradOp::create(gb.getBuilder(), op.getLoc(), gb.get(op.getX()), r[0],
                                         "relu", 0.01, GeluApproximation::none));
  return success();
}

void leakyReluSaved(LeakyReluOp op, SmallVectorImpl<Value> &s) { s.push_back(op.getX()); }
LogicalResult leakyReluGradient(LeakyReluOp op, GradientBuilder &gb, ArrayRef<Value> r,
                                SmallVectorImpl<Value> &out) {
  out.push_back(ActivationGradOp::create(gb.getBuilder(), op.getLoc(), gb.get(op.getX()), r[0],
                                         "leaky_relu", op.getAlpha(), GeluApproximation::none));
  return success();
}

void geluSaved(GeluOp op, SmallVectorImpl<Value> &s) { s.push_back(op.getX()); }
LogicalResult geluGradient(GeluOp op, GradientBuilder &gb, ArrayRef<Value> r,
                           SmallVectorImpl<Value> &out) {
  out.push_back(ActivationGradOp::create(gb.getBuilder(), op.getLoc(), gb.get(op.getX()), r[0],
                                         "gelu", 0.01, op.getApproximate()));
  return success();
}

LogicalResult dropoutGradient(DropoutOp op, GradientBuilder &gb, ArrayRef<Value> r,
                              SmallVectorImpl<Value> &out) {
  // The mask is a function of (seed, element index): the same op on dy
  // applies the forward's mask and scale.
  out.push_back(DropoutOp::create(gb.getBuilder(), op.getLoc(), r[0], op.getP(), op.getSeed()));
  return success();
}

LogicalResult stopGradientGradient(StopGradientOp op, GradientBuilder &gb, ArrayRef<Value> r,
                                   SmallVectorImpl<Value> &out) {
  return out.push_back(Value()), success();
}

} // namespace

void nncc::nn::gradients::attachElementwiseGradientRules(MLIRContext &ctx) {
  attachGradientRule<AddOp, savesNothing<AddOp>, addGradient>(ctx);
  attachGradientRule<SubOp, savesNothing<SubOp>, subGradient>(ctx);
  attachGradientRule<MulOp, mulSaved, mulGradient>(ctx);
  attachGradientRule<DivOp, divSaved, divGradient>(ctx);
  attachGradientRule<CompareOp, savesNothing<CompareOp>, compareGradient>(ctx);
  attachGradientRule<SelectOp, selectSaved, selectGradient>(ctx);
  attachGradientRule<CastOp, savesNothing<CastOp>, castGradient>(ctx);
  attachGradientRule<NegOp, savesNothing<NegOp>, negGradient>(ctx);
  attachGradientRule<TanhOp, savesResult<TanhOp>, tanhGradient>(ctx);
  attachGradientRule<SigmoidOp, savesResult<SigmoidOp>, sigmoidGradient>(ctx);
  attachGradientRule<ExpOp, savesResult<ExpOp>, expGradient>(ctx);
  attachGradientRule<LogOp, logSaved, logGradient>(ctx);
  attachGradientRule<ReluOp, reluSaved, reluGradient>(ctx);
  attachGradientRule<LeakyReluOp, leakyReluSaved, leakyReluGradient>(ctx);
  attachGradientRule<GeluOp, geluSaved, geluGradient>(ctx);
  attachGradientRule<DropoutOp, savesNothing<DropoutOp>, dropoutGradient>(ctx);
  attachGradientRule<StopGradientOp, savesNothing<StopGradientOp>, stopGradientGradient>(ctx);
}
