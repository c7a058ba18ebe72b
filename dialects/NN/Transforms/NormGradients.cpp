//===- NormGradients.cpp - rules: layer norm and softmax --------*- C++ -*-===//
//
// Softmax on its saved result; layer norm through its fused backward op.
// (GradientOpInterface models; docs/autodiff.md.)
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/Transforms/GradientRule.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::nn;
using namespace nncc::nn::gradients;

namespace {

LogicalResult softmaxGradient(SoftmaxOp op, GradientBuilder &gb, ArrayRef<Value> r,
                              SmallVectorImpl<Value> &out) {
  // dx = y * (dy - sum(dy * y, axis))
  OpBuilder &b = gb.getBuilder();
  Location loc = op.getLoc();
  Value y = gb.get(op.getResult());
  int64_t axis = *normalizeAxis(op.getAxis(), tensorType(y).getRank());
  Value s = ReduceSumOp::create(b, loc, mul(b, loc, r[0], y), ArrayRef<int64_t>{axis}, true);
  out.push_back(mul(b, loc, y, sub(b, loc, r[0], s)));
  return success();
}

void layerNormSaved(LayerNormOp op, SmallVectorImpl<Value> &s) {
  s.push_back(op.getX());
  if (op.getWeight())
    s.push_back(op.getWeight());
}
LogicalResult layerNormGradient(LayerNormOp op, GradientBuilder &gb, ArrayRef<Value> r,
                                SmallVectorImpl<Value> &out) {
  OpBuilder &b = gb.getBuilder();
  Location loc = op.getLoc();
  Value weight = op.getWeight() ? gb.get(op.getWeight()) : Value();
  auto grad = LayerNormGradOp::create(b, loc, gb.get(op.getX()), weight, r[0], op.getEps());
  out.push_back(grad.getDx());
  if (op.getWeight())
    out.push_back(grad.getDweight().front());
  if (op.getBias())
    out.push_back(sumLeading(b, loc, r[0]));
  return success();
}

} // namespace

void nncc::nn::gradients::attachNormGradientRules(MLIRContext &ctx) {
  attachGradientRule<SoftmaxOp, savesResult<SoftmaxOp>, softmaxGradient>(ctx);
  attachGradientRule<LayerNormOp, layerNormSaved, layerNormGradient>(ctx);
}
