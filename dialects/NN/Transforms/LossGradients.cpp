//===- LossGradients.cpp - rules: losses and output heads -------*- C++ -*-===//
//
// One backward op per loss; the fused heads scale the gradients they
// computed in the forward by the loss adjoint.
// (GradientOpInterface models; docs/autodiff.md.)
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/Transforms/GradientRule.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::nn;
using namespace nncc::nn::gradients;

namespace {

LogicalResult linearSampleGradient(LinearSampleOp op, GradientBuilder &gb, ArrayRef<Value> r,
                                   SmallVectorImpl<Value> &out) {
  return out.append(op->getNumOperands(), Value()), success();
}

void mseSaved(MSEOp op, SmallVectorImpl<Value> &s) {
  s.push_back(op.getPred());
  s.push_back(op.getTarget());
}
LogicalResult mseGradient(MSEOp op, GradientBuilder &gb, ArrayRef<Value> r,
                          SmallVectorImpl<Value> &out) {
  OpBuilder &b = gb.getBuilder();
  Value dpred =
      MSEGradOp::create(b, op.getLoc(), gb.get(op.getPred()), gb.get(op.getTarget()), r[0]);
  out.push_back(dpred);
  out.push_back(gb.needsAdjoint(op.getTarget()) ? NegOp::create(b, op.getLoc(), dpred).getResult()
                                                : Value());
  return success();
}

void crossEntropySaved(CrossEntropyOp op, SmallVectorImpl<Value> &s) {
  s.push_back(op.getLogits());
  s.push_back(op.getTarget());
}
LogicalResult crossEntropyGradient(CrossEntropyOp op, GradientBuilder &gb, ArrayRef<Value> r,
                                   SmallVectorImpl<Value> &out) {
  out.push_back(CrossEntropyGradOp::create(gb.getBuilder(), op.getLoc(), gb.get(op.getLogits()),
                                           gb.get(op.getTarget()), r[0], op.getIgnoreIndex()));
  out.push_back(Value());
  return success();
}

// The op already computed the gradients for a unit loss adjoint; the
// backward scales them by the loss adjoint (the logits are not read).
void linearCrossEntropySaved(LinearCrossEntropyOp op, SmallVectorImpl<Value> &s) {
  s.push_back(op.getDx());
  s.push_back(op.getDweight());
  if (op.getBias())
    s.push_back(op.getDbias());
}
LogicalResult linearCrossEntropyGradient(LinearCrossEntropyOp op, GradientBuilder &gb,
                                         ArrayRef<Value> r, SmallVectorImpl<Value> &out) {
  OpBuilder &b = gb.getBuilder();
  Location loc = op.getLoc();
  auto scaled = [&](Value operand, Value unit) {
    return gb.needsAdjoint(operand) ? mul(b, loc, gb.get(unit), r[0]) : Value();
  };
  out.push_back(scaled(op.getX(), op.getDx()));
  out.push_back(scaled(op.getWeight(), op.getDweight()));
  out.push_back(Value());
  if (op.getBias())
    out.push_back(scaled(op.getBias(), op.getDbias()));
  return success();
}

void bceWithLogitsSaved(BCEWithLogitsOp op, SmallVectorImpl<Value> &s) {
  s.push_back(op.getLogits());
  s.push_back(op.getTarget());
  if (op.getPosWeight())
    s.push_back(op.getPosWeight());
}
/// Per element, with s = loss adjoint / N (the mean) and p the positive
/// weight (1 without one): dlogits by nn.bce_with_logits_grad;
/// dtarget = s (p softplus(-x) - softplus(x)) = s ((p - 1) softplus(-x) - x)
/// (just -s x without p); dpos_weight = s t softplus(-x), summed over the
/// broadcast dims. softplus(-x) = relu(-x) + log(1 + exp(-|x|)), which
/// neither overflows nor loses the small values.
LogicalResult bceWithLogitsGradient(BCEWithLogitsOp op, GradientBuilder &gb, ArrayRef<Value> r,
                                    SmallVectorImpl<Value> &out) {
  OpBuilder &b = gb.getBuilder();
  Location loc = op.getLoc();
  Value x = gb.get(op.getLogits()), t = gb.get(op.getTarget());
  Value posWeight = op.getPosWeight() ? gb.get(op.getPosWeight()) : Value();
  out.push_back(BCEWithLogitsGradOp::create(b, loc, x, t, posWeight, r[0]));
  const bool needTarget = gb.needsAdjoint(op.getTarget());
  const bool needPosWeight = posWeight && gb.needsAdjoint(op.getPosWeight());
  Value dtarget, dposWeight;
  if (needTarget || needPosWeight) {
    NNTensor xType = tensorType(x);
    Value s = ReduceGradOp::create(b, loc, r[0], xType, /*axes=all*/ {},
                                   /*keepdim=*/false, /*mean=*/true);
    if (!posWeight) {
      dtarget = NegOp::create(b, loc, mul(b, loc, s, x));
    } else {
      Type elem = xType.getElementType();
      Value reluNegX = ReluOp::create(b, loc, NegOp::create(b, loc, x));
      Value absX = add(b, loc, ReluOp::create(b, loc, x), reluNegX);
      Value expNegAbs = ExpOp::create(b, loc, NegOp::create(b, loc, absX));
      Value softplusNegX =
          add(b, loc, reluNegX,
              LogOp::create(b, loc, add(b, loc, expNegAbs, scalar(b, loc, 1.0, elem))));
      if (needTarget) {
        Value pMinus1 = sub(b, loc, posWeight, scalar(b, loc, 1.0, elem));
        dtarget = mul(b, loc, s, sub(b, loc, mul(b, loc, pMinus1, softplusNegX), x));
      }
      if (needPosWeight)
        dposWeight =
            unbroadcast(b, loc, mul(b, loc, s, mul(b, loc, t, softplusNegX)), posWeight.getType());
    }
  }
  out.push_back(dtarget);
  if (op.getPosWeight())
    out.push_back(dposWeight);
  return success();
}

} // namespace

void nncc::nn::gradients::attachLossGradientRules(MLIRContext &ctx) {
  attachGradientRule<LinearSampleOp, savesNothing<LinearSampleOp>, linearSampleGradient>(ctx);
  attachGradientRule<MSEOp, mseSaved, mseGradient>(ctx);
  attachGradientRule<CrossEntropyOp, crossEntropySaved, crossEntropyGradient>(ctx);
  attachGradientRule<LinearCrossEntropyOp, linearCrossEntropySaved, linearCrossEntropyGradient>(
      ctx);
  attachGradientRule<BCEWithLogitsOp, bceWithLogitsSaved, bceWithLogitsGradient>(ctx);
}
