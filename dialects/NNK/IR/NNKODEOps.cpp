//===- NNKODEOps.cpp - nnk.ode_solve and nnk.ode_rnn ------------*- C++ -*-===//
//
// Verifiers of the ode family's nnk ops (NNKODEOps.td).
//
//===----------------------------------------------------------------------===//

#include "dialects/NNK/IR/NNKOps.h"

#include "dialects/NNK/IR/NNKOpsCommon.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::nnk;
using namespace nncc::nnk::detail;

namespace {

LogicalResult verifySolverAttrs(Operation *op, ODEMethod method,
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
LogicalResult verifyBody(Operation *op, Region &region, StringRef name,
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

} // namespace

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
