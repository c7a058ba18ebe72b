//===- LinearGradients.cpp - rules: matmul and linear -----------*- C++ -*-===//
//
// dx through a matmul with the weight, the weight (and bias) gradient
// through nn.linear_weight_grad.
// (GradientOpInterface models; docs/autodiff.md.)
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/Transforms/GradientRule.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::nn;
using namespace nncc::nn::gradients;

namespace {

void matmulSaved(MatmulOp op, SmallVectorImpl<Value> &s) {
  s.push_back(op.getLhs());
  s.push_back(op.getRhs());
}
LogicalResult matmulGradient(MatmulOp op, GradientBuilder &gb, ArrayRef<Value> r,
                             SmallVectorImpl<Value> &out) {
  OpBuilder &b = gb.getBuilder();
  Location loc = op.getLoc();
  // dA = dC B^T, dB = A^T dC, each summed over broadcast batch dims.
  out.push_back(gb.needsAdjoint(op.getLhs())
                    ? unbroadcast(b, loc,
                                  MatmulOp::create(b, loc, r[0],
                                                   transposeLastTwo(b, loc, gb.get(op.getRhs()))),
                                  op.getLhs().getType())
                    : Value());
  out.push_back(gb.needsAdjoint(op.getRhs())
                    ? unbroadcast(b, loc,
                                  MatmulOp::create(
                                      b, loc, transposeLastTwo(b, loc, gb.get(op.getLhs())), r[0]),
                                  op.getRhs().getType())
                    : Value());
  return success();
}

void linearSaved(LinearOp op, SmallVectorImpl<Value> &s) {
  s.push_back(op.getX());
  s.push_back(op.getWeight());
}
LogicalResult linearGradient(LinearOp op, GradientBuilder &gb, ArrayRef<Value> r,
                             SmallVectorImpl<Value> &out) {
  OpBuilder &b = gb.getBuilder();
  Location loc = op.getLoc();
  if (gb.needsAdjoint(op.getX())) {
    // dx = dy W (dy [..., out], W [out, in]); a vector's as the linear map
    // of W^T (nn.matmul wants matrices).
    Value weight = gb.get(op.getWeight());
    out.push_back(tensorType(op.getX()).getRank() < 2
                      ? LinearOp::create(
                            b, loc, r[0],
                            TransposeOp::create(b, loc, weight, ArrayRef<int64_t>{1, 0}), Value())
                            .getResult()
                      : MatmulOp::create(b, loc, r[0], weight).getResult());
  } else {
    out.push_back(Value());
  }
  out.push_back(gb.needsAdjoint(op.getWeight())
                    ? LinearWeightGradOp::create(b, loc, r[0], gb.get(op.getX())).getResult()
                    : Value());
  if (op.getBias())
    out.push_back(gb.needsAdjoint(op.getBias()) ? sumLeading(b, loc, r[0]) : Value());
  return success();
}

} // namespace

void nncc::nn::gradients::attachLinearGradientRules(MLIRContext &ctx) {
  attachGradientRule<MatmulOp, matmulSaved, matmulGradient>(ctx);
  attachGradientRule<LinearOp, linearSaved, linearGradient>(ctx);
}
