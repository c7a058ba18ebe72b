//===- NNKTensorOps.cpp - nnk data movement and reductions ------*- C++ -*-===//
//
// Verifiers of the tensor family's nnk ops (NNKTensorOps.td).
//
//===----------------------------------------------------------------------===//

#include "dialects/NNK/IR/NNKOps.h"

#include "dialects/NNK/IR/NNKOpsCommon.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::nnk;
using namespace nncc::nnk::detail;

namespace {

/// nnk.argmax / nnk.max / nnk.max_grad: `axis` in range and `out` x's
/// dims without it (or with 1 in its place).
LogicalResult verifyAxisMax(Operation *op, Value xv, Value out,
                                   int64_t axis, StringRef what) {
  BufferType x = bufferOf(xv);
  if (axis < 0 || axis >= x.getRank())
    return op->emitOpError("axis ") << axis << " out of range for rank "
                                    << x.getRank();
  SmallVector<Dim> dropped(x.getDims()), kept(x.getDims());
  dropped.erase(dropped.begin() + axis);
  kept[axis] = Dim::getStatic(1);
  if (bufferOf(out).getRank() == x.getRank())
    return expectDims(op, out, kept, what);
  return expectDims(op, out, dropped, what);
}

/// nnk.topk / nnk.topk_grad: `axis` in range for `big`, and `small` of
/// `big`'s dims with `k` in place of `axis`.
LogicalResult verifyAxisTopk(Operation *op, Value big, Value small,
                                    int64_t axis, Dim k, StringRef what) {
  BufferType b = bufferOf(big);
  if (axis < 0 || axis >= b.getRank())
    return op->emitOpError("axis ") << axis << " out of range for rank "
                                    << b.getRank();
  SmallVector<Dim> dims(b.getDims());
  dims[axis] = k;
  return expectDims(op, small, dims, what);
}

/// Shared by concat (pieces = inputs, whole = out) and split.
LogicalResult verifyPieces(Operation *op, ValueRange pieces, Value whole,
                                  int64_t axis) {
  if (pieces.empty())
    return op->emitOpError("needs at least one piece");
  SmallVector<Value> all(pieces.begin(), pieces.end());
  all.push_back(whole);
  if (failed(expectSameElementType(op, all)))
    return failure();
  BufferType w = bufferOf(whole);
  if (axis < 0 || axis >= w.getRank())
    return op->emitOpError("axis ") << axis << " out of range for rank "
                                    << w.getRank();
  int64_t total = 0;
  bool allStatic = true;
  for (auto [i, piece] : llvm::enumerate(pieces)) {
    BufferType p = bufferOf(piece);
    if (p.getRank() != w.getRank())
      return op->emitOpError("piece #") << i << " has rank " << p.getRank()
                                        << ", expected " << w.getRank();
    for (int64_t d = 0; d < w.getRank(); ++d)
      if (d != axis && !p.getDim(d).isCompatibleWith(w.getDim(d)))
        return op->emitOpError("piece #")
               << i << " dim " << d << " (" << p.getDim(d).str()
               << ") does not match " << w.getDim(d).str();
    if (p.getDim(axis).isStatic())
      total += p.getDim(axis).getSize();
    else
      allStatic = false;
  }
  if (pieces.size() == 1 &&
      !bufferOf(pieces[0]).getDim(axis).isCompatibleWith(w.getDim(axis)))
    return op->emitOpError("single piece must match along the axis");
  if (allStatic && w.getDim(axis).isStatic() && w.getDim(axis).getSize() != total)
    return op->emitOpError("pieces sum to ")
           << total << " along axis " << axis << ", expected "
           << w.getDim(axis).str();
  return success();
}

} // namespace

LogicalResult FillOp::verify() { return success(); }

LogicalResult CopyOp::verify() {
  if (!bufferOf(getIn()).isCompatibleWith(bufferOf(getOut())))
    return emitOpError("source ")
           << getIn().getType() << " and destination " << getOut().getType()
           << " must be compatible";
  return success();
}

LogicalResult ArgmaxOp::verify() {
  if (!bufferOf(getOut()).getElementType().isInteger(32))
    return emitOpError("out must hold i32");
  return verifyAxisMax(*this, getX(), getOut(), getAxis(), "out");
}

LogicalResult MaxOp::verify() {
  if (failed(expectSameElementType(*this, {getX(), getOut()})))
    return failure();
  return verifyAxisMax(*this, getX(), getOut(), getAxis(), "out");
}

LogicalResult MaxGradOp::verify() {
  if (failed(expectSameElementType(*this, {getDy(), getX(), getDx()})) ||
      failed(expectDims(*this, getDx(), bufferOf(getX()).getDims(), "dx")))
    return failure();
  return verifyAxisMax(*this, getX(), getDy(), getAxis(), "dy");
}

LogicalResult CumsumOp::verify() {
  BufferType x = bufferOf(getX()), out = bufferOf(getOut());
  if (x.getElementType() != out.getElementType())
    return emitOpError("out must hold x's element type ") << x.getElementType();
  if (getAxis() < 0 || getAxis() >= x.getRank())
    return emitOpError("axis ") << getAxis() << " out of range for rank " << x.getRank();
  return expectDims(*this, getOut(), x.getDims(), "out");
}

LogicalResult TopkOp::verify() {
  if (failed(expectSameElementType(*this, {getX(), getValues()})))
    return failure();
  if (!bufferOf(getIndices()).getElementType().isInteger(32))
    return emitOpError("indices must hold i32");
  BufferType x = bufferOf(getX());
  int64_t axis = getAxis(), k = getK();
  if (axis < 0 || axis >= x.getRank())
    return emitOpError("axis ") << axis << " out of range for rank "
                                << x.getRank();
  Dim n = x.getDim(axis);
  if (k < 1 || (n.isStatic() && k > n.getSize()))
    return emitOpError("k = ")
           << k << " out of range [1, "
           << (n.isStatic() ? std::to_string(n.getSize()) : std::string("n"))
           << "] of axis " << axis;
  if (failed(verifyAxisTopk(*this, getX(), getValues(), axis,
                            Dim::getStatic(k), "values")))
    return failure();
  return verifyAxisTopk(*this, getX(), getIndices(), axis, Dim::getStatic(k),
                        "indices");
}

LogicalResult TopkGradOp::verify() {
  if (failed(expectSameElementType(*this, {getDy(), getDx()})))
    return failure();
  if (!bufferOf(getIndices()).getElementType().isInteger(32))
    return emitOpError("indices must hold i32");
  BufferType dy = bufferOf(getDy());
  int64_t axis = getAxis();
  if (axis < 0 || axis >= dy.getRank())
    return emitOpError("axis ") << axis << " out of range for rank "
                                << dy.getRank();
  if (failed(verifyAxisTopk(*this, getDx(), getDy(), axis, dy.getDim(axis),
                            "dy")))
    return failure();
  return expectDims(*this, getIndices(), dy.getDims(), "indices");
}

LogicalResult ReduceOp::verify() {
  BufferType x = bufferOf(getX());
  if (failed(expectSameElementType(*this, {getX(), getOut()})))
    return failure();
  ArrayRef<int64_t> axes = getAxes();
  for (auto [i, a] : llvm::enumerate(axes)) {
    if (a < 0 || a >= x.getRank())
      return emitOpError("axis ") << a << " out of range for rank "
                                  << x.getRank();
    if (i > 0 && axes[i - 1] >= a)
      return emitOpError("axes must be sorted and distinct");
  }
  SmallVector<Dim> outDims;
  for (int64_t d = 0; d < x.getRank(); ++d) {
    if (llvm::is_contained(axes, d)) {
      if (getKeepdim())
        outDims.push_back(Dim::getStatic(1));
    } else {
      outDims.push_back(x.getDim(d));
    }
  }
  return expectDims(*this, getOut(), outDims, "out");
}

LogicalResult ConcatOp::verify() {
  return verifyPieces(*this, getInputs(), getOut(), getAxis());
}

LogicalResult SplitOp::verify() {
  return verifyPieces(*this, getOuts(), getX(), getAxis());
}

LogicalResult SliceOp::verify() {
  if (failed(expectSameElementType(*this, {getX(), getOut()})))
    return failure();
  int64_t rank = bufferOf(getX()).getRank();
  if ((int64_t)getStarts().size() != rank || (int64_t)getSteps().size() != rank)
    return emitOpError("starts and steps need one entry per dim (")
           << rank << ")";
  for (int64_t s : getSteps())
    if (s < 1)
      return emitOpError("steps must be >= 1, got ") << s;
  for (int64_t d : getSqueeze())
    if (d < 0 || d >= rank)
      return emitOpError("squeezed dim ") << d << " out of range";
  int64_t expected = rank - (int64_t)getSqueeze().size();
  if (bufferOf(getOut()).getRank() != expected)
    return emitOpError("out must have rank ") << expected << ", got "
                                              << bufferOf(getOut()).getRank();
  return success();
}

LogicalResult TransposeOp::verify() {
  if (failed(expectSameElementType(*this, {getX(), getOut()})))
    return failure();
  BufferType x = bufferOf(getX());
  ArrayRef<int64_t> perm = getPerm();
  if ((int64_t)perm.size() != x.getRank())
    return emitOpError("perm needs one entry per dim (") << x.getRank() << ")";
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<Dim> outDims;
  for (int64_t p : perm) {
    if (p < 0 || p >= x.getRank() || seen[p])
      return emitOpError("perm must be a permutation of [0, ")
             << x.getRank() << ")";
    seen[p] = true;
    outDims.push_back(x.getDim(p));
  }
  return expectDims(*this, getOut(), outDims, "out");
}
