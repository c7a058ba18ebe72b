//===- NNKNormOps.cpp - nnk.layer_norm and softmax --------------*- C++ -*-===//
//
// Verifiers of the norm family's nnk ops (NNKNormOps.td).
//
//===----------------------------------------------------------------------===//

#include "dialects/NNK/IR/NNKOps.h"

#include "dialects/NNK/IR/NNKOpsCommon.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::nnk;
using namespace nncc::nnk::detail;

LogicalResult LayerNormOp::verify() {
  if (failed(expectSameElementType(*this, {getX(), getResidual(), getWeight(),
                                           getBias(), getOut(), getSum()})))
    return failure();
  BufferType x = bufferOf(getX());
  if (x.getRank() < 1)
    return emitOpError("x must have rank >= 1");
  if (getEps() <= 0)
    return emitOpError("eps must be positive");
  if (failed(expectDims(*this, getOut(), x.getDims(), "out")))
    return failure();
  if (getResidual() &&
      failed(expectDims(*this, getResidual(), x.getDims(), "residual")))
    return failure();
  if (getSum() && failed(expectDims(*this, getSum(), x.getDims(), "sum")))
    return failure();
  if (getSum() && !getResidual())
    return emitOpError("sum output requires a residual");
  Dim n = x.getDims().back();
  if (getWeight() && failed(expectDims(*this, getWeight(), {n}, "weight")))
    return failure();
  if (getBias() && failed(expectDims(*this, getBias(), {n}, "bias")))
    return failure();
  return success();
}

LogicalResult SoftmaxOp::verify() {
  BufferType x = bufferOf(getX());
  if (getAxis() < 0 || getAxis() >= x.getRank())
    return emitOpError("axis ") << getAxis() << " out of range for rank "
                                << x.getRank();
  return expectDims(*this, getOut(), x.getDims(), "out") ;
}
