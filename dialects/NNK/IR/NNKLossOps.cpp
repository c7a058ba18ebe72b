//===- NNKLossOps.cpp - nnk losses and output heads -------------*- C++ -*-===//
//
// Verifiers of the loss family's nnk ops (NNKLossOps.td).
//
//===----------------------------------------------------------------------===//

#include "dialects/NNK/IR/NNKOps.h"

#include "dialects/NNK/IR/NNKOpsCommon.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::nnk;
using namespace nncc::nnk::detail;

LogicalResult LinearSampleOp::verify() {
  BufferType x = bufferOf(getX()), weight = bufferOf(getWeight());
  if (x.getRank() < 2 || weight.getRank() != 2)
    return emitOpError("expected x [..., K] and weight [V, K]");
  if (failed(expectSameElementType(*this, {getX(), getWeight()})))
    return failure();
  if (!bufferOf(getOut()).getElementType().isInteger(32))
    return emitOpError("out must hold i32");
  ArrayRef<Dim> rows = x.getDims().drop_back();
  if (failed(expectDims(*this, getOut(), rows, "out")))
    return failure();
  if (getRows() && failed(expectDims(*this, getRows(), rows, "rows")))
    return failure();
  if (getBias() && failed(expectDims(*this, getBias(), {weight.getDim(0)}, "bias")))
    return failure();
  return success();
}

LogicalResult LossOp::verify() {
  if (failed(expectSameElementType(*this, {getInput(), getOut(), getPosWeight()})) ||
      failed(expectRank(*this, getOut(), 0, "out")))
    return failure();
  BufferType in = bufferOf(getInput()), target = bufferOf(getTarget());
  if (getPosWeight() && getKind() != LossKind::bce_with_logits)
    return emitOpError("pos_weight is only for bce_with_logits");
  switch (getKind()) {
  case LossKind::mse:
  case LossKind::bce_with_logits:
    if (!in.isCompatibleWith(target))
      return emitOpError("target ") << target << " must match the input "
                                    << in;
    if (getPosWeight() && (in.getRank() < 1 ||
                           failed(expectDims(*this, getPosWeight(),
                                             {in.getDims().back()},
                                             "pos_weight"))))
      return failure();
    return success();
  case LossKind::cross_entropy: {
    if (!target.getElementType().isSignlessInteger(32) &&
        !target.getElementType().isSignlessInteger(64))
      return emitOpError("cross_entropy targets must be i32 or i64");
    if (in.getRank() < 1)
      return emitOpError("logits must have rank >= 1");
    return expectDims(*this, getTarget(), in.getDims().drop_back(), "target");
  }
  }
  return success();
}

LogicalResult LinearCrossEntropyOp::verify() {
  if (failed(expectSameElementType(*this, {getX(), getWeight(), getBias(),
                                           getLoss(), getDx(), getDweight(),
                                           getDbias(), getLogits()})) ||
      failed(expectRank(*this, getWeight(), 2, "weight")) ||
      failed(expectRank(*this, getLoss(), 0, "loss")))
    return failure();
  BufferType x = bufferOf(getX()), w = bufferOf(getWeight());
  if (x.getRank() < 2)
    return emitOpError("x must have rank >= 2");
  if (!x.getDims().back().isCompatibleWith(w.getDim(1)))
    return emitOpError("x's last dim ")
           << x.getDims().back().str() << " must equal the weight's in-features "
           << w.getDim(1).str();
  Dim classes = w.getDim(0);
  SmallVector<Dim> logitDims(x.getDims().drop_back());
  logitDims.push_back(classes);
  if (failed(expectDims(*this, getTarget(), x.getDims().drop_back(),
                        "target")) ||
      failed(expectDims(*this, getDx(), x.getDims(), "dx")) ||
      failed(expectDims(*this, getDweight(), w.getDims(), "dweight")) ||
      failed(expectDims(*this, getDbias(), {classes}, "dbias")) ||
      (getBias() && failed(expectDims(*this, getBias(), {classes}, "bias"))) ||
      (getLogits() &&
       failed(expectDims(*this, getLogits(), logitDims, "logits"))))
    return failure();
  return success();
}
