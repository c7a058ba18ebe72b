//===- NNControlOps.cpp - nn ops with regions -------------------*- C++ -*-===//
//
// nn.reversible, nn.odesolve and nn.ode_rnn. Result types come from the
// operands; the region verifiers check block arguments and yielded types.
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/IR/NNOps.h"

#include "dialects/NN/IR/NNOpsCommon.h"

using namespace mlir;
using namespace nncc::nn;
using nncc::nn::detail::InferDiagnostics;

#include "dialects/NN/IR/NNOpInterfaces.cpp.inc"

/// Checks every region of `op` against its RegionSignatureOpInterface: one
/// block whose arguments are compatible with the expected argument types and
/// that ends in an nn.yield of values compatible with the expected yield
/// types. `names` names the regions in diagnostics. Robust to any malformed
/// region.
static LogicalResult verifyRegionSignatures(RegionSignatureOpInterface op,
                                            ArrayRef<StringRef> names) {
  for (auto [index, name] : llvm::enumerate(names)) {
    SmallVector<Type> argTypes, yieldTypes;
    if (index >= op->getNumRegions() ||
        failed(op.getRegionSignature(index, argTypes, yieldTypes)))
      return op->emitOpError("has malformed operands or regions");
    Region &region = op->getRegion(index);
    if (!llvm::hasSingleElement(region))
      return op->emitOpError("region '")
             << name << "' must have exactly one block";
    Block &block = region.front();
    if (block.getNumArguments() != argTypes.size())
      return op->emitOpError("region '")
             << name << "' must have " << argTypes.size()
             << " block argument(s), got " << block.getNumArguments();
    for (auto [argIndex, arg, expected] :
         llvm::enumerate(block.getArguments(), argTypes))
      if (!areCompatibleTypes(arg.getType(), expected))
        return op->emitOpError("region '")
               << name << "' argument #" << argIndex << " has type "
               << arg.getType() << ", expected " << expected;
    auto yield = block.empty() ? YieldOp() : dyn_cast<YieldOp>(block.back());
    if (!yield)
      return op->emitOpError("region '")
             << name << "' must end with nn.yield";
    if (yield.getValues().size() != yieldTypes.size())
      return yield.emitOpError("yields ")
             << yield.getValues().size() << " value(s), region '" << name
             << "' of " << op->getName() << " expects " << yieldTypes.size();
    for (auto [valueIndex, value, expected] :
         llvm::enumerate(yield.getValues(), yieldTypes))
      if (!areCompatibleTypes(value.getType(), expected))
        return yield.emitOpError("value #")
               << valueIndex << " has type " << value.getType()
               << ", region '" << name << "' of " << op->getName()
               << " expects " << expected;
  }
  return success();
}

/// Scheme parameters shared by nn.odesolve and nn.ode_rnn.
static LogicalResult verifyODEConfig(Operation *op, ODEMethod method,
                                     int64_t steps, double rtol, double atol,
                                     int64_t maxSteps) {
  if (maxSteps < 1)
    return op->emitOpError("max_steps must be >= 1, got ") << maxSteps;
  if (steps < 0)
    return op->emitOpError("steps must be >= 0, got ") << steps;
  if (method != ODEMethod::dopri5 && steps < 1)
    return op->emitOpError("fixed-step method '")
           << stringifyODEMethod(method) << "' needs steps >= 1, got "
           << steps;
  if (!(rtol > 0.0) || !(atol > 0.0))
    return op->emitOpError("rtol and atol must be > 0, got ")
           << rtol << " and " << atol;
  return success();
}

//===----------------------------------------------------------------------===//
// ReversibleOp
//===----------------------------------------------------------------------===//

/// The type of one half [..., F] of the reversible input [..., 2F].
static FailureOr<nncc::nn::TensorType>
getReversibleHalfType(const InferDiagnostics &diag, Value input) {
  FailureOr<nncc::nn::TensorType> x =
      diag.tensorOfMinRank(input, "x [..., 2F]", 1);
  if (failed(x))
    return failure();
  Dim last = x->getDims().back();
  if (last.isStatic() && last.getSize() % 2 != 0)
    return diag.error("the last dim of x must be even, got ",
                      last.getSize());
  SmallVector<Dim> half(x->getDims());
  half.back() =
      last.isStatic() ? Dim::getStatic(last.getSize() / 2) : Dim::getDynamic();
  return x->withDims(half);
}

LogicalResult ReversibleOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  if (failed(getReversibleHalfType(diag, adaptor.getX())))
    return failure();
  inferred.push_back(adaptor.getX().getType());
  return success();
}

LogicalResult
ReversibleOp::getRegionSignature(unsigned index,
                                 SmallVectorImpl<Type> &argTypes,
                                 SmallVectorImpl<Type> &yieldTypes) {
  FailureOr<nncc::nn::TensorType> half =
      getReversibleHalfType(InferDiagnostics(std::nullopt, ""), getX());
  if (index > 1 || failed(half))
    return failure();
  // f: x2 -> F(x2) and g: y1 -> G(y1), all halves.
  argTypes.push_back(*half);
  yieldTypes.push_back(*half);
  return success();
}

LogicalResult ReversibleOp::verifyRegions() {
  return verifyRegionSignatures(*this, {"f", "g"});
}

//===----------------------------------------------------------------------===//
// ODESolveOp
//===----------------------------------------------------------------------===//

LogicalResult ODESolveOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> h0 = diag.tensor(adaptor.getH0(), "h0");
  FailureOr<nncc::nn::TensorType> t0 =
      diag.tensorOfRank(adaptor.getT0(), "t0 (a scalar)", 0);
  FailureOr<nncc::nn::TensorType> t1 =
      diag.tensorOfRank(adaptor.getT1(), "t1 (a scalar)", 0);
  if (failed(h0) || failed(t0) || failed(t1) ||
      failed(diag.expectFloat(*t0, "t0")) ||
      failed(diag.expectElementType(*t1, t0->getElementType(), "t1")))
    return failure();
  inferred.push_back(*h0);
  return success();
}

LogicalResult ODESolveOp::verify() {
  return verifyODEConfig(*this, getMethod(), getSteps(), getRtol(),
                         getAtol(), getMaxSteps());
}

LogicalResult
ODESolveOp::getRegionSignature(unsigned index,
                               SmallVectorImpl<Type> &argTypes,
                               SmallVectorImpl<Type> &yieldTypes) {
  if (index != 0)
    return failure();
  // dynamics: (t, h) -> dh/dt.
  argTypes.append({getT0().getType(), getH0().getType()});
  yieldTypes.push_back(getH0().getType());
  return success();
}

LogicalResult ODESolveOp::verifyRegions() {
  return verifyRegionSignatures(*this, {"dynamics"});
}

//===----------------------------------------------------------------------===//
// ODERNNOp
//===----------------------------------------------------------------------===//

LogicalResult ODERNNOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  int64_t hiddenSize = adaptor.getHiddenSize();
  if (hiddenSize < 1)
    return diag.error("hidden_size must be >= 1, got ", hiddenSize);
  FailureOr<nncc::nn::TensorType> x =
      diag.tensorOfRank(adaptor.getX(), "x [B, T, I]", 3);
  FailureOr<nncc::nn::TensorType> times =
      diag.tensor(adaptor.getTimes(), "times");
  if (failed(x) || failed(times) ||
      failed(diag.expectFloat(*times, "times")) ||
      failed(diag.expectShape(*times, {x->getDim(0), x->getDim(1)},
                              "times [B, T]")))
    return failure();
  Dim hidden = Dim::getStatic(hiddenSize);
  if (Value h0Value = adaptor.getH0()) {
    FailureOr<nncc::nn::TensorType> h0 = diag.tensor(h0Value, "h0");
    if (failed(h0) ||
        failed(diag.expectElementType(*h0, x->getElementType(), "h0")) ||
        failed(diag.expectShape(*h0, {x->getDim(0), hidden}, "h0 [B, H]")))
      return failure();
  }
  inferred.push_back(x->withDims({x->getDim(0), x->getDim(1), hidden}));
  return success();
}

LogicalResult ODERNNOp::verify() {
  return verifyODEConfig(*this, getMethod(), getSteps(), getRtol(),
                         getAtol(), getMaxSteps());
}

LogicalResult
ODERNNOp::getRegionSignature(unsigned index, SmallVectorImpl<Type> &argTypes,
                             SmallVectorImpl<Type> &yieldTypes) {
  nncc::nn::TensorType x = getX().getType();
  if (index > 1 || x.getRank() != 3 || getHiddenSize() < 1)
    return failure();
  Dim batch = x.getDim(0);
  nncc::nn::TensorType state =
      x.withDims({batch, Dim::getStatic(getHiddenSize())});
  if (index == 0) {
    // dynamics: (t, h) -> dh/dt; t is each row's own time, [B, 1].
    argTypes.append(
        {getTimes().getType().withDims({batch, Dim::getStatic(1)}), state});
  } else {
    // cell: (x_t, h) -> h'.
    argTypes.append({x.withDims({batch, x.getDim(2)}), state});
  }
  yieldTypes.push_back(state);
  return success();
}

LogicalResult ODERNNOp::verifyRegions() {
  return verifyRegionSignatures(*this, {"dynamics", "cell"});
}
