//===- NNKOps.cpp - nnk op verifiers ----------------------------*- C++ -*-===//
//
// Every op checks its buffers' ranks, dims (up to compatibility: `?` matches
// any dim) and element types against docs/nnk-spec.md.
//
//===----------------------------------------------------------------------===//

#include "dialects/NNK/IR/NNKOps.h"

#include "dialects/NN/IR/NNOps.h"
#include "nncc/Kernels/Codes.h"
#include "nncc/Kernels/RecurrentMath.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::nnk;


// The emitters print these enums' integer values as kernel-library codes
// (nncc/Kernels/Codes.h, the one definition of each code set).
#define NNCC_SAME_CODE(E, C)                                                   \
  static_assert(static_cast<int>(E) == (C), #E " != " #C " (Codes.h)")
NNCC_SAME_CODE(Activation::none, NNCC_ACT_NONE);
NNCC_SAME_CODE(Activation::relu, NNCC_ACT_RELU);
NNCC_SAME_CODE(Activation::leaky_relu, NNCC_ACT_LEAKY_RELU);
NNCC_SAME_CODE(Activation::gelu, NNCC_ACT_GELU);
NNCC_SAME_CODE(Activation::gelu_tanh, NNCC_ACT_GELU_TANH);
NNCC_SAME_CODE(Activation::tanh, NNCC_ACT_TANH);
NNCC_SAME_CODE(Activation::sigmoid, NNCC_ACT_SIGMOID);
NNCC_SAME_CODE(Cell::rnn_tanh, NNCC_CELL_RNN_TANH);
NNCC_SAME_CODE(Cell::rnn_relu, NNCC_CELL_RNN_RELU);
NNCC_SAME_CODE(Cell::lstm, NNCC_CELL_LSTM);
NNCC_SAME_CODE(Cell::gru, NNCC_CELL_GRU);
NNCC_SAME_CODE(Cell::gru_cho2014, NNCC_CELL_GRU_CHO2014);
NNCC_SAME_CODE(AttentionKind::dense, NNCC_ATTN_DENSE);
NNCC_SAME_CODE(AttentionKind::dilated, NNCC_ATTN_DILATED);
NNCC_SAME_CODE(AttentionKind::lsh, NNCC_ATTN_LSH);
NNCC_SAME_CODE(AttentionKind::local, NNCC_ATTN_LOCAL);
NNCC_SAME_CODE(ODEMethod::euler, NNCC_ODE_EULER);
NNCC_SAME_CODE(ODEMethod::rk4, NNCC_ODE_RK4);
NNCC_SAME_CODE(ODEMethod::dopri5, NNCC_ODE_DOPRI5);
#undef NNCC_SAME_CODE

int64_t nncc::nnk::getGateCount(Cell cell) {
  return nncc::kernels::cell_gates(static_cast<int>(cell)); // codes asserted above
}

int64_t nncc::nnk::getODEWorkSlots(ODEMethod method) {
  switch (method) {
  case ODEMethod::euler:
    return 2;
  case ODEMethod::rk4:
    return 5;
  case ODEMethod::dopri5:
    return 9;
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace {
BufferType bufferOf(Value v) { return cast<BufferType>(v.getType()); }

/// Checks that `v` has exactly `dims` (up to compatibility).
LogicalResult expectDims(Operation *op, Value v, ArrayRef<Dim> dims,
                         StringRef what) {
  BufferType type = bufferOf(v);
  if (!nncc::areCompatibleShapes(type.getDims(), dims))
    return op->emitOpError() << what << " must have shape "
                             << nncc::formatShape(dims) << ", got "
                             << nncc::formatShape(type.getDims());
  return success();
}

LogicalResult expectRank(Operation *op, Value v, int64_t rank, StringRef what) {
  if (bufferOf(v).getRank() != rank)
    return op->emitOpError() << what << " must have rank " << rank << ", got "
                             << bufferOf(v).getRank();
  return success();
}

/// All values share the element type of the first.
LogicalResult expectSameElementType(Operation *op, ValueRange values) {
  Type elt;
  for (Value v : values) {
    if (!v)
      continue;
    Type t = bufferOf(v).getElementType();
    if (!elt)
      elt = t;
    else if (t != elt)
      return op->emitOpError()
             << "buffers must share one element type, got " << elt << " and "
             << t;
  }
  return success();
}

bool isOne(Dim d) { return d.isStatic() && d.getSize() == 1; }

/// `in` broadcasts (NumPy, aligned right) to exactly `out`.
bool broadcastsTo(ArrayRef<Dim> in, ArrayRef<Dim> out) {
  if (in.size() > out.size())
    return false;
  size_t offset = out.size() - in.size();
  for (auto [i, d] : llvm::enumerate(in))
    if (!isOne(d) && !d.isCompatibleWith(out[offset + i]))
      return false;
  return true;
}

} // namespace

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

LogicalResult AllocOp::verify() {
  if (!getType().hasKnownDims())
    return emitOpError("dims must be static or symbolic, got ")
           << nncc::formatShape(getType().getDims());
  return success();
}

LogicalResult WeightOp::verify() { return success(); }

LogicalResult WeightOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto param = symbolTable.lookupNearestSymbolFrom<nn::ParameterOp>(
      *this, getNameAttr());
  if (!param)
    return emitOpError("'") << getName()
                            << "' does not name an nn.parameter";
  auto paramType = cast<nn::TensorType>(param.getType());
  BufferType type = getType();
  if (paramType.getElementType() != type.getElementType() ||
      !nncc::areCompatibleShapes(paramType.getDims(), type.getDims()))
    return emitOpError("type ")
           << type << " does not match the parameter's " << paramType;
  return success();
}

LogicalResult FillOp::verify() { return success(); }

LogicalResult CopyOp::verify() {
  if (!bufferOf(getIn()).isCompatibleWith(bufferOf(getOut())))
    return emitOpError("source ")
           << getIn().getType() << " and destination " << getOut().getType()
           << " must be compatible";
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult ElementwiseOp::verify() {
  BufferType out = bufferOf(getOut());
  for (auto [i, in] : llvm::enumerate(getInputs()))
    if (!broadcastsTo(bufferOf(in).getDims(), out.getDims()))
      return emitOpError("input #")
             << i << " of shape " << nncc::formatShape(bufferOf(in).getDims())
             << " does not broadcast to the output shape "
             << nncc::formatShape(out.getDims());
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("body must have one argument per input (")
           << getInputs().size() << "), got " << body.getNumArguments();
  for (auto [i, arg, in] : llvm::enumerate(body.getArguments(), getInputs()))
    if (arg.getType() != bufferOf(in).getElementType())
      return emitOpError("body argument #")
             << i << " must have the element type of its input ("
             << bufferOf(in).getElementType() << "), got " << arg.getType();
  for (Operation &inner : body.without_terminator()) {
    StringRef ns = inner.getDialect() ? inner.getDialect()->getNamespace() : "";
    if (ns != "arith" && ns != "math")
      return inner.emitOpError(
          "is not allowed in an nnk.elementwise body (only arith and math)");
    if (inner.getNumRegions() != 0)
      return inner.emitOpError("must not have regions in an nnk.elementwise body");
  }
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("body must end with nnk.yield");
  if (yield.getValues().size() != 1 ||
      yield.getValues()[0].getType() != out.getElementType())
    return emitOpError("body must yield one value of the output element type ")
           << out.getElementType();
  return success();
}

LogicalResult YieldOp::verify() {
  Operation *parent = (*this)->getParentOp();
  if (isa<ElementwiseOp>(parent)) {
    if (getValues().size() != 1)
      return emitOpError("in nnk.elementwise must yield exactly one value");
    return success();
  }
  if (!getValues().empty())
    return emitOpError("in ")
           << parent->getName() << " must not yield values";
  return success();
}

//===----------------------------------------------------------------------===//
// GEMM family
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Normalisation and friends
//===----------------------------------------------------------------------===//

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

/// nnk.argmax / nnk.max / nnk.max_grad: `axis` in range and `out` x's
/// dims without it (or with 1 in its place).
static LogicalResult verifyAxisMax(Operation *op, Value xv, Value out,
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

LogicalResult EmbeddingGradOp::verify() {
  Dim rows = bufferOf(getOut()).getDims()[0];
  const int64_t padding = int64_t(getPaddingIdx()); // I64Attr reads as uint64_t
  if (padding < -1 || (rows.isStatic() && padding >= rows.getSize()))
    return emitOpError("padding_idx ") << padding << " is not a row of the table";
  return success();
}

LogicalResult MaxGradOp::verify() {
  if (failed(expectSameElementType(*this, {getDy(), getX(), getDx()})) ||
      failed(expectDims(*this, getDx(), bufferOf(getX()).getDims(), "dx")))
    return failure();
  return verifyAxisMax(*this, getX(), getDy(), getAxis(), "dy");
}

/// nnk.topk / nnk.topk_grad: `axis` in range for `big`, and `small` of
/// `big`'s dims with `k` in place of `axis`.
static LogicalResult verifyAxisTopk(Operation *op, Value big, Value small,
                                    int64_t axis, Dim k, StringRef what) {
  BufferType b = bufferOf(big);
  if (axis < 0 || axis >= b.getRank())
    return op->emitOpError("axis ") << axis << " out of range for rank "
                                    << b.getRank();
  SmallVector<Dim> dims(b.getDims());
  dims[axis] = k;
  return expectDims(op, small, dims, what);
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

/// The axial ops' shared layout: `x` [B, T, d1 + d2], `rows` [n1, 1, d1]
/// and `cols` [1, n2, d2], all of one element type, the tables static.
static LogicalResult verifyAxialLayout(Operation *op, Value x, Value rows,
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

LogicalResult DropoutOp::verify() {
  if (failed(expectSameElementType(*this, {getX(), getOut()})))
    return failure();
  if (getP() < 0 || getP() >= 1)
    return emitOpError("p must be in [0, 1), got ") << getP();
  ArrayRef<Dim> dims = bufferOf(getX()).getDims();
  if (failed(expectDims(*this, getOut(), dims, "out")))
    return failure();
  if (getMask() && failed(expectDims(*this, getMask(), dims, "mask")))
    return failure();
  return success();
}

LogicalResult ZoneoutOp::verify() {
  if (failed(expectSameElementType(*this, {getNewState(), getPrev(), getOut()})))
    return failure();
  if (getP() < 0 || getP() >= 1)
    return emitOpError("p must be in [0, 1), got ") << getP();
  ArrayRef<Dim> dims = bufferOf(getNewState()).getDims();
  if (failed(expectDims(*this, getPrev(), dims, "prev")) ||
      failed(expectDims(*this, getOut(), dims, "out")))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// Shared by concat (pieces = inputs, whole = out) and split.
static LogicalResult verifyPieces(Operation *op, ValueRange pieces, Value whole,
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

//===----------------------------------------------------------------------===//
// Recurrent
//===----------------------------------------------------------------------===//

LogicalResult RecurrentScanOp::verify() {
  if (failed(expectSameElementType(*this, {getXproj(), getWHh(), getBHh(),
                                           getH0(), getC0(), getY(), getHN(),
                                           getCN()})) ||
      failed(expectRank(*this, getXproj(), 3, "xproj")) ||
      failed(expectRank(*this, getY(), 3, "y")))
    return failure();
  int64_t h = getHiddenSize(), g = getGateCount(getCell());
  int64_t dirs = getNumDirections();
  if (h < 1)
    return emitOpError("hidden_size must be >= 1");
  if (dirs != 1 && dirs != 2)
    return emitOpError("num_directions must be 1 or 2, got ") << dirs;
  if (getReverse() && dirs != 2)
    return emitOpError("reverse requires num_directions = 2");
  if (getStateIndex() < 0)
    return emitOpError("state_index must be >= 0");
  if (getZoneout() < 0 || getZoneout() >= 1)
    return emitOpError("zoneout must be in [0, 1)");
  bool lstm = getCell() == Cell::lstm;
  if (!lstm && (getC0() || getCN()))
    return emitOpError("c0/c_n are only for lstm cells");
  BufferType x = bufferOf(getXproj());
  Dim b = x.getDim(0), t = x.getDim(1);
  Dim gh = Dim::getStatic(g * h), hd = Dim::getStatic(h);
  if (failed(expectDims(*this, getXproj(), {b, t, gh}, "xproj")) ||
      failed(expectDims(*this, getWHh(), {gh, hd}, "w_hh")) ||
      failed(expectDims(*this, getY(), {b, t, Dim::getStatic(dirs * h)}, "y")))
    return failure();
  if (getBHh() && failed(expectDims(*this, getBHh(), {gh}, "b_hh")))
    return failure();
  for (auto [v, what] : {std::pair<Value, StringRef>{getH0(), "h0"},
                         {getC0(), "c0"},
                         {getHN(), "h_n"},
                         {getCN(), "c_n"}}) {
    if (!v)
      continue;
    if (failed(expectRank(*this, v, 3, what)))
      return failure();
    Dim states = bufferOf(v).getDim(0);
    if (failed(expectDims(*this, v, {states, b, hd}, what)))
      return failure();
    if (states.isStatic() && states.getSize() <= getStateIndex())
      return emitOpError(what) << " has " << states.getSize()
                               << " states, state_index is "
                               << getStateIndex();
  }
  if (getLengths() && failed(expectDims(*this, getLengths(), {b}, "lengths")))
    return failure();
  return success();
}

LogicalResult RecurrentCellOp::verify() {
  if (failed(expectSameElementType(*this, {getXproj(), getH(), getC(), getWHh(),
                                           getBHh(), getHOut(), getCOut()})) ||
      failed(expectRank(*this, getH(), 2, "h")))
    return failure();
  bool lstm = getCell() == Cell::lstm;
  if (lstm != (bool)getC() || lstm != (bool)getCOut())
    return emitOpError("c and c_out are required for lstm cells and only for them");
  BufferType h = bufferOf(getH());
  Dim b = h.getDim(0), hd = h.getDim(1);
  Dim gh = hd.scaled(getGateCount(getCell()));
  if (failed(expectDims(*this, getXproj(), {b, gh}, "xproj")) ||
      failed(expectDims(*this, getWHh(), {gh, hd}, "w_hh")) ||
      failed(expectDims(*this, getHOut(), {b, hd}, "h_out")))
    return failure();
  if (getBHh() && failed(expectDims(*this, getBHh(), {gh}, "b_hh")))
    return failure();
  if (getC() && (failed(expectDims(*this, getC(), {b, hd}, "c")) ||
                 failed(expectDims(*this, getCOut(), {b, hd}, "c_out"))))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// qkv [B, T, packs·E], out [B, T, E], E divisible by heads, mask [B, T].
static LogicalResult verifyAttention(Operation *op, Value qkv, Value mask,
                                     Value out, Value lse, int64_t heads,
                                     int64_t packs, double dropout) {
  if (!(dropout >= 0.0 && dropout < 1.0))
    return op->emitOpError("dropout must be in [0, 1), got ") << dropout;
  if (failed(expectSameElementType(op, {qkv, out})) ||
      failed(expectRank(op, out, 3, "out")))
    return failure();
  if (heads < 1)
    return op->emitOpError("num_heads must be >= 1");
  BufferType o = bufferOf(out);
  Dim b = o.getDim(0), t = o.getDim(1), e = o.getDim(2);
  if (e.isStatic() && e.getSize() % heads != 0)
    return op->emitOpError("embedding size ")
           << e.str() << " is not divisible by num_heads " << heads;
  if (failed(expectDims(op, qkv, {b, t, e.scaled(packs)}, "qkv")))
    return failure();
  if (mask && failed(expectDims(op, mask, {b, t}, "mask")))
    return failure();
  if (lse && (failed(expectSameElementType(op, {lse, out})) ||
              failed(expectDims(op, lse, {b, Dim::getStatic(heads), t}, "lse"))))
    return failure();
  return success();
}

LogicalResult FlashAttentionOp::verify() {
  return verifyAttention(*this, getQkv(), getMask(), getOut(), getLse(),
                         getNumHeads(), 3, getDropout());
}

/// The global tokens and the convention of a dilated core (forward or
/// backward): a static list or a per-example mask [B, T] (b, t), not both;
/// convention "nncc" or "hf" (whose global tokens come from the mask).
static LogicalResult verifyDilatedGlobals(Operation *op, ArrayRef<int64_t> global,
                                          Value globalMask, StringRef convention, Dim b,
                                          Dim t) {
  if (convention != "hf" && convention != "nncc")
    return op->emitOpError("dilated convention must be \"hf\" or \"nncc\", got \"")
           << convention << "\"";
  for (int64_t g : global)
    if (g < 0)
      return op->emitOpError("global positions must be >= 0, got ") << g;
  if (globalMask && !global.empty())
    return op->emitOpError("global_mask and a global list exclude each other");
  if (convention == "hf" && !global.empty())
    return op->emitOpError("convention \"hf\" takes its global tokens from global_mask");
  if (globalMask && failed(expectDims(op, globalMask, {b, t}, "global_mask")))
    return failure();
  return success();
}

LogicalResult BandedAttentionOp::verify() {
  if (getWindow() < 1 || getDilation() < 1)
    return emitOpError("window and dilation must be >= 1");
  BufferType o = bufferOf(getOut());
  if (o.getRank() == 3 &&
      failed(verifyDilatedGlobals(*this, getGlobal(), getGlobalMask(), getConvention(),
                                  o.getDim(0), o.getDim(1))))
    return failure();
  return verifyAttention(*this, getQkv(), getMask(), getOut(), getLse(), getNumHeads(),
                         getConvention() == "hf" ? 6 : 3, getDropout());
}

/// The LSH convention and the rotations' shape of an LSH core (forward or
/// backward): [hashes, dh, n_buckets/2] (nncc) or [num_heads, dh, hashes,
/// n_buckets/2] (hf), E read from `e`.
static LogicalResult verifyLshRotations(Operation *op, StringRef convention, Value r,
                                        Dim e, int64_t heads, int64_t hashes,
                                        Value sameType) {
  if (convention != "hf" && convention != "nncc")
    return op->emitOpError("convention must be \"hf\" or \"nncc\", got \"")
           << convention << "\"";
  if (!r)
    return success();
  const bool hf = convention == "hf";
  if (failed(expectSameElementType(op, {r, sameType})) ||
      failed(expectRank(op, r, hf ? 4 : 3, "rotations")))
    return failure();
  Dim dh = e.isStatic() && heads > 0 ? Dim::getStatic(e.getSize() / heads)
                                     : Dim::getDynamic();
  if (hf)
    return expectDims(op, r,
                      {Dim::getStatic(heads), dh, Dim::getStatic(hashes),
                       bufferOf(r).getDim(3)},
                      "rotations");
  return expectDims(op, r, {Dim::getStatic(hashes), dh, bufferOf(r).getDim(2)},
                    "rotations");
}

LogicalResult LSHAttentionOp::verify() {
  if (getHashes() < 1 || getChunk() < 1)
    return emitOpError("hashes and chunk must be >= 1");
  if (getPadToMultiple() < 0 || getPadAbove() < 0 ||
      (getPadToMultiple() > 0 && getConvention() != "hf"))
    return emitOpError("pad_to_multiple and pad_above must be >= 0, and set only in "
                       "convention \"hf\"");
  if (failed(verifyAttention(*this, getQkv(), getMask(), getOut(), getLse(),
                             getNumHeads(), 2, getDropout())))
    return failure();
  return verifyLshRotations(*this, getConvention(), getRotations(),
                            bufferOf(getOut()).getDim(2), getNumHeads(), getHashes(),
                            getOut());
}

/// The window of a local attention core (forward or backward).
static LogicalResult verifyLocalWindow(Operation *op, int64_t chunk, int64_t before,
                                       int64_t after) {
  if (chunk < 1)
    return op->emitOpError("chunk must be >= 1, got ") << chunk;
  if (before < 0 || after < 0)
    return op->emitOpError("chunks_before and chunks_after must be >= 0, got ")
           << before << " and " << after;
  return success();
}

LogicalResult LocalAttentionOp::verify() {
  if (getPadToMultiple() < 0 || getPadAbove() < 0)
    return emitOpError("pad_to_multiple and pad_above must be >= 0");
  return verifyLocalWindow(*this, getChunk(), getChunksBefore(), getChunksAfter());
}

LogicalResult AttentionGradOp::verify() {
  if (getKind() == AttentionKind::local &&
      failed(verifyLocalWindow(*this, getChunk(), getChunksBefore(), getChunksAfter())))
    return failure();
  if (getKind() != AttentionKind::local && (getChunksBefore() != 1 || getChunksAfter() != 0))
    return emitOpError("chunks_before and chunks_after apply only to kind local");
  if (getKind() != AttentionKind::lsh && getKind() != AttentionKind::local &&
      (getPadToMultiple() != 0 || getPadAbove() != 0))
    return emitOpError("pad_to_multiple and pad_above apply only to kinds lsh and local");
  if (getKind() != AttentionKind::dilated &&
      (getGlobalMask() || getDilatedConvention() != "nncc" || !getGlobal().empty()))
    return emitOpError("global_mask, global and dilated_convention apply only to kind dilated");
  if (getKind() == AttentionKind::dilated) {
    BufferType d = bufferOf(getDout());
    if (d.getRank() == 3 &&
        failed(verifyDilatedGlobals(*this, getGlobal(), getGlobalMask(),
                                    getDilatedConvention(), d.getDim(0), d.getDim(1))))
      return failure();
  }
  if (getKind() != AttentionKind::lsh) {
    if (getConvention() != "hf")
      return emitOpError("convention applies only to kind lsh");
    return success();
  }
  return verifyLshRotations(*this, getConvention(), getRotations(),
                            bufferOf(getDout()).getDim(2), getNumHeads(), getHashes(),
                            getDout());
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// ODE
//===----------------------------------------------------------------------===//

static LogicalResult verifySolverAttrs(Operation *op, ODEMethod method,
                                       int64_t steps, double rtol,
                                       double atol) {
  if (steps < 0)
    return op->emitOpError("steps must be >= 0");
  if (steps == 0 && method != ODEMethod::dopri5)
    return op->emitOpError("fixed-step methods need steps >= 1");
  if (rtol <= 0 || atol <= 0)
    return op->emitOpError("rtol and atol must be positive");
  return success();
}

/// The region's block has arguments of exactly `types` and ends in a
/// value-less nnk.yield.
static LogicalResult verifyBody(Operation *op, Region &region, StringRef name,
                                ArrayRef<Type> types) {
  Block &block = region.front();
  if (block.getNumArguments() != types.size())
    return op->emitOpError("region '")
           << name << "' must have " << types.size() << " arguments, got "
           << block.getNumArguments();
  for (auto [i, arg, type] : llvm::enumerate(block.getArguments(), types)) {
    auto got = dyn_cast<BufferType>(arg.getType());
    if (!got || !got.isCompatibleWith(cast<BufferType>(type)))
      return op->emitOpError("region '")
             << name << "' argument #" << i << " must be " << type << ", got "
             << arg.getType();
  }
  if (block.empty() || !isa<YieldOp>(block.back()))
    return op->emitOpError("region '") << name << "' must end with nnk.yield";
  return success();
}

LogicalResult ODESolveOp::verify() {
  if (failed(expectSameElementType(
          *this, {getH0(), getT0(), getT1(), getOut(), getWork()})) ||
      failed(expectRank(*this, getT0(), 0, "t0")) ||
      failed(expectRank(*this, getT1(), 0, "t1")) ||
      failed(verifySolverAttrs(*this, getMethod(), getSteps(), getRtol(),
                               getAtol())))
    return failure();
  BufferType h = bufferOf(getH0());
  if (failed(expectDims(*this, getOut(), h.getDims(), "out")))
    return failure();
  SmallVector<Dim> work{Dim::getStatic(getODEWorkSlots(getMethod()))};
  llvm::append_range(work, h.getDims());
  if (failed(expectDims(*this, getWork(), work, "work")))
    return failure();
  return verifyBody(*this, getDynamics(), "dynamics",
                    {getT0().getType(), h, h});
}

LogicalResult ODERNNOp::verify() {
  if (failed(expectSameElementType(*this, {getX(), getTimes(), getH0(),
                                           getOut(), getWork(), getXt()})) ||
      failed(expectRank(*this, getX(), 3, "x")) ||
      failed(verifySolverAttrs(*this, getMethod(), getSteps(), getRtol(),
                               getAtol())))
    return failure();
  if (getHiddenSize() < 1)
    return emitOpError("hidden_size must be >= 1");
  BufferType x = bufferOf(getX());
  Dim b = x.getDim(0), t = x.getDim(1), i = x.getDim(2);
  Dim h = Dim::getStatic(getHiddenSize());
  if (failed(expectDims(*this, getTimes(), {b, t}, "times")) ||
      failed(expectDims(*this, getOut(), {b, t, h}, "out")) ||
      failed(expectDims(*this, getXt(), {b, i}, "xt")) ||
      failed(expectDims(*this,
                        getWork(),
                        {Dim::getStatic(getODEWorkSlots(getMethod()) + 2), b, h},
                        "work")))
    return failure();
  if (getH0() && failed(expectDims(*this, getH0(), {b, h}, "h0")))
    return failure();
  Type elt = x.getElementType();
  auto buf = [&](ArrayRef<Dim> dims) -> Type {
    return BufferType::get(getContext(), dims, elt);
  };
  if (failed(verifyBody(*this, getDynamics(), "dynamics",
                        {buf({b, Dim::getStatic(1)}), buf({b, h}),
                         buf({b, h})})))
    return failure();
  return verifyBody(*this, getCell(), "cell",
                    {buf({b, i}), buf({b, h}), buf({b, h})});
}

/// BPTT checkpointing: checkpoint_every or checkpoint_snapshots >= 1, on a stack of the kernels'
/// CPU form (zoneout only on the LSTM, as the nn verifiers already ensure).
template <typename Op> static LogicalResult verifyCheckpointEvery(Op op) {
  std::optional<int64_t> every = op.getCheckpointEvery();
  if (every && *every < 1)
    return op.emitOpError("'checkpoint_every' must be at least 1, got ")
           << *every;
  std::optional<int64_t> snapshots = op.getCheckpointSnapshots();
  if (snapshots && *snapshots < 1)
    return op.emitOpError("'checkpoint_snapshots' must be at least 1, got ")
           << *snapshots;
  if (every && snapshots)
    return op.emitOpError(
        "'checkpoint_every' and 'checkpoint_snapshots' are exclusive");
  return success();
}

LogicalResult RecurrentForwardOp::verify() {
  return verifyCheckpointEvery(*this);
}

LogicalResult RecurrentGradOp::verify() {
  if (failed(verifyCheckpointEvery(*this)))
    return failure();
  if (getCheckpointEvery() && !getReserve())
    return emitOpError("'checkpoint_every' needs the 'reserve' of a "
                       "checkpointed 'nnk.recurrent_forward'");
  if (getCheckpointSnapshots() && !getReserve())
    return emitOpError("'checkpoint_snapshots' needs the 'reserve' of a "
                       "checkpointed 'nnk.recurrent_forward'");
  return success();
}

#define GET_OP_CLASSES
#include "dialects/NNK/IR/NNKOps.cpp.inc"
