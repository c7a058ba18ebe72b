//===- NNKTokenOps.cpp - nnk embeddings, positions, tokens ------*- C++ -*-===//
//
// Verifiers of the token family's nnk ops (NNKTokenOps.td).
//
//===----------------------------------------------------------------------===//

#include "dialects/NNK/IR/NNKOps.h"

#include "dialects/NNK/IR/NNKOpsCommon.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::nnk;
using namespace nncc::nnk::detail;

namespace {

/// The axial ops' shared layout: `x` [B, T, d1 + d2], `rows` [n1, 1, d1]
/// and `cols` [1, n2, d2], all of one element type, the tables static.
LogicalResult verifyAxialLayout(Operation *op, Value x, Value rows,
                                       Value cols, StringRef xName,
                                       StringRef rowsName, StringRef colsName) {
  if (failed(expectSameElementType(op, {x, rows, cols})) ||
      failed(expectRank(op, x, 3, xName)) ||
      failed(expectRank(op, rows, 3, rowsName)) ||
      failed(expectRank(op, cols, 3, colsName)))
    return failure();
  BufferType r = bufferOf(rows), c = bufferOf(cols);
  if (!isStaticShape(r.getDims()) || !isStaticShape(c.getDims()) ||
      r.getDim(1).getSize() != 1 || c.getDim(0).getSize() != 1)
    return op->emitOpError() << "expected static " << rowsName << " [n1, 1, d1] and "
                             << colsName << " [1, n2, d2]";
  Dim e = bufferOf(x).getDim(2);
  if (e.isStatic() && e.getSize() != r.getDim(2).getSize() + c.getDim(2).getSize())
    return op->emitOpError() << xName << "'s last dim must be d1 + d2";
  return success();
}

} // namespace

LogicalResult EmbeddingGradOp::verify() {
  Dim rows = bufferOf(getOut()).getDims()[0];
  const int64_t padding = int64_t(getPaddingIdx()); // I64Attr reads as uint64_t
  if (padding < -1 || (rows.isStatic() && padding >= rows.getSize()))
    return emitOpError("padding_idx ") << padding << " is not a row of the table";
  return success();
}

LogicalResult EmbeddingOp::verify() {
  if (failed(expectSameElementType(*this, {getTable(), getOut()})) ||
      failed(expectRank(*this, getTable(), 2, "table")))
    return failure();
  SmallVector<Dim> outDims(bufferOf(getIndices()).getDims());
  outDims.push_back(bufferOf(getTable()).getDim(1));
  return expectDims(*this, getOut(), outDims, "out");
}

LogicalResult SinusoidalPositionOp::verify() {
  if (failed(expectSameElementType(*this, {getX(), getOut()})) ||
      failed(expectRank(*this, getX(), 3, "x")))
    return failure();
  Dim e = bufferOf(getX()).getDim(2);
  if (e.isStatic() && e.getSize() % 2 != 0)
    return emitOpError("embedding size must be even, got ") << e.str();
  return expectDims(*this, getOut(), bufferOf(getX()).getDims(), "out");
}

LogicalResult AxialPositionOp::verify() {
  if (failed(verifyAxialLayout(*this, getX(), getRows(), getCols(), "x", "rows", "cols")) ||
      failed(expectSameElementType(*this, {getX(), getOut()})))
    return failure();
  return expectDims(*this, getOut(), bufferOf(getX()).getDims(), "out");
}

LogicalResult AxialPositionGradOp::verify() {
  return verifyAxialLayout(*this, getDy(), getDrows(), getDcols(), "dy", "drows", "dcols");
}

LogicalResult MaskTokensOp::verify() {
  if (failed(expectSameElementType(*this, {getTokens(), getMasked()})))
    return failure();
  if (!(getP() >= 0 && getP() < 1))
    return emitOpError("p must be in [0, 1), got ") << getP();
  ArrayRef<Dim> dims = bufferOf(getTokens()).getDims();
  if (dims.empty())
    return emitOpError("tokens must have rank >= 1");
  if (failed(expectDims(*this, getMasked(), dims, "masked")))
    return failure();
  return expectDims(*this, getMask(), dims, "mask");
}

LogicalResult SampleOp::verify() {
  ArrayRef<Dim> dims = bufferOf(getLogits()).getDims();
  if (dims.empty())
    return emitOpError("logits must have rank >= 1");
  if (!bufferOf(getOut()).getElementType().isInteger(32))
    return emitOpError("out must hold i32");
  if (failed(expectDims(*this, getOut(), dims.drop_back(), "out")))
    return failure();
  if (getRows() && failed(expectDims(*this, getRows(), dims.drop_back(), "rows")))
    return failure();
  return success();
}
