//===- NNKLinearOps.cpp - nnk.gemm, matmul, linear_weight_grad ---*- C++ -*-===//
//
// Verifiers of the linear family's nnk ops (NNKLinearOps.td).
//
//===----------------------------------------------------------------------===//

#include "dialects/NNK/IR/NNKOps.h"

#include "dialects/NNK/IR/NNKOpsCommon.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::nnk;
using namespace nncc::nnk::detail;

LogicalResult GemmOp::verify() {
  if (failed(expectSameElementType(
          *this, {getX(), getWeight(), getBias(), getResidual(), getOut()})) ||
      failed(expectRank(*this, getWeight(), 2, "weight")))
    return failure();
  BufferType x = bufferOf(getX()), w = bufferOf(getWeight());
  if (x.getRank() < 1)
    return emitOpError("x must have rank >= 1");
  if (!x.getDims().back().isCompatibleWith(w.getDim(1)))
    return emitOpError("x's last dim ")
           << x.getDims().back().str() << " must equal the weight's in-features "
           << w.getDim(1).str();
  SmallVector<Dim> outDims(x.getDims().drop_back());
  outDims.push_back(w.getDim(0));
  if (failed(expectDims(*this, getOut(), outDims, "out")))
    return failure();
  if (getBias() && failed(expectDims(*this, getBias(), {w.getDim(0)}, "bias")))
    return failure();
  if (getResidual() &&
      failed(expectDims(*this, getResidual(), outDims, "residual")))
    return failure();
  return success();
}

LogicalResult MatmulOp::verify() {
  if (failed(expectSameElementType(*this, {getLhs(), getRhs(), getOut()})))
    return failure();
  BufferType a = bufferOf(getLhs()), b = bufferOf(getRhs());
  if (a.getRank() < 2 || b.getRank() < 2)
    return emitOpError("operands must have rank >= 2");
  ArrayRef<Dim> ad = a.getDims(), bd = b.getDims();
  if (!ad.back().isCompatibleWith(bd[bd.size() - 2]))
    return emitOpError("contraction dims ")
           << ad.back().str() << " and " << bd[bd.size() - 2].str() << " differ";
  auto batch = nncc::broadcastShapes(ad.drop_back(2), bd.drop_back(2));
  if (!batch)
    return emitOpError("batch dims do not broadcast");
  SmallVector<Dim> outDims(*batch);
  outDims.push_back(ad[ad.size() - 2]);
  outDims.push_back(bd.back());
  return expectDims(*this, getOut(), outDims, "out");
}
