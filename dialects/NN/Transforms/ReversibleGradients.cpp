//===- ReversibleGradients.cpp - rules: reversible blocks -------*- C++ -*-===//
//
// Seed thesis §4.3.5, Algorithm 1: the input is reconstructed from the
// output while the adjoints run back through the two residual functions.
// (GradientOpInterface models; docs/autodiff.md.)
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/Transforms/GradientRule.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::nn;
using namespace nncc::nn::gradients;

namespace {

void reversibleSaved(ReversibleOp op, SmallVectorImpl<Value> &s) {
  s.push_back(op.getResult());
  appendCaptures(op, s);
}
LogicalResult reversibleGradient(ReversibleOp op, GradientBuilder &gb, ArrayRef<Value> r,
                                 SmallVectorImpl<Value> &out) {
  // Seed thesis §4.3.5, Algorithm 1. With y1 = x1 + F(x2),
  // y2 = x2 + G(y1): x2 = y2 - G(y1), x1 = y1 - F(x2);
  // dy1' = dy1 + G'(y1)^T dy2, dx1 = dy1', dx2 = dy2 + F'(x2)^T dy1'.
  OpBuilder &b = gb.getBuilder();
  Location loc = op.getLoc();
  Value y = gb.get(op.getResult());
  auto type = tensorType(y);
  int64_t axis = type.getRank() - 1;
  Dim width = type.getDims().back();
  if (!width.isStatic())
    return op.emitOpError("gradient needs a static feature width");
  int64_t half = width.getSize() / 2;
  SmallVector<Value> ys = split(b, loc, y, axis, {half, half});
  SmallVector<Value> dys = split(b, loc, r[0], axis, {half, half});

  FailureOr<RegionClone> g = gb.cloneRegion(op.getG(), ys[0]);
  if (failed(g))
    return failure();
  Value x2 = sub(b, loc, ys[1], g->results[0]);
  SmallVector<Value> gAdj;
  if (failed(gb.differentiate(*g, dys[1], ys[0], gAdj, nullptr)))
    return failure();
  Value dy1 = gAdj[0] ? add(b, loc, dys[0], gAdj[0]) : dys[0];

  FailureOr<RegionClone> f = gb.cloneRegion(op.getF(), x2);
  if (failed(f))
    return failure();
  Value x1 = sub(b, loc, ys[0], f->results[0]);
  SmallVector<Value> fAdj;
  if (failed(gb.differentiate(*f, dy1, x2, fAdj, nullptr)))
    return failure();
  Value dx2 = fAdj[0] ? add(b, loc, dys[1], fAdj[0]) : dys[1];

  gb.setReconstructed(op.getX(), ConcatOp::create(b, loc, ValueRange{x1, x2}, axis));
  out.push_back(ConcatOp::create(b, loc, ValueRange{dy1, dx2}, axis));
  return success();
}

} // namespace

void nncc::nn::gradients::attachReversibleGradientRules(MLIRContext &ctx) {
  attachGradientRule<ReversibleOp, reversibleSaved, reversibleGradient, /*reconstructsInput=*/true>(
      ctx);
}
