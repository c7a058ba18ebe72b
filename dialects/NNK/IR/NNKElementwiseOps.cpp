//===- NNKElementwiseOps.cpp - nnk.elementwise and dropout ------*- C++ -*-===//
//
// Verifiers of the elementwise family's nnk ops (NNKElementwiseOps.td).
//
//===----------------------------------------------------------------------===//

#include "dialects/NNK/IR/NNKOps.h"

#include "dialects/NNK/IR/NNKOpsCommon.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::nnk;
using namespace nncc::nnk::detail;

namespace {

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
