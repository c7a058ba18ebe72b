//===- NNODEOps.cpp - nn.odesolve and nn.ode_rnn ---------------*- C++ -*-===//
//
// Result types come from the operands; the region verifiers check block
// arguments and yielded types (verifyRegionSignatures). The backward ops
// carry the dynamics' (and cell's) VJP regions.
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/IR/NNOps.h"

#include "dialects/NN/IR/NNOpsCommon.h"

using namespace mlir;
using namespace nncc::nn;
using nncc::nn::detail::InferDiagnostics;
using namespace nncc::nn::detail;

namespace {
using NNTensor = nncc::nn::TensorType;
} // namespace

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

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

/// The types yielded by the single block of `region` from index `from` on;
/// nothing when the region is not built yet.
static void appendYieldTypes(Region &region, unsigned from,
                             SmallVectorImpl<Type> &inferred) {
  if (!llvm::hasSingleElement(region) || region.front().empty())
    return;
  auto yield = dyn_cast<YieldOp>(region.front().back());
  if (!yield)
    return;
  for (Value value : yield.getValues().drop_front(from))
    inferred.push_back(value.getType());
}

/// One block with `numArgs` arguments ending in nn.yield of `numYields`
/// values.
static LogicalResult verifyBlockShape(Operation *op, Region &region,
                                      StringRef name, unsigned numArgs,
                                      size_t numYields) {
  if (!llvm::hasSingleElement(region))
    return op->emitOpError("region '") << name << "' must have one block";
  Block &block = region.front();
  if (block.getNumArguments() != numArgs)
    return op->emitOpError("region '")
           << name << "' must have " << numArgs << " arguments";
  auto yield = block.empty() ? YieldOp() : dyn_cast<YieldOp>(block.back());
  if (!yield)
    return op->emitOpError("region '") << name << "' must end with nn.yield";
  if (yield.getValues().size() != numYields)
    return op->emitOpError("region '")
           << name << "' must yield " << numYields << " values, got "
           << yield.getValues().size();
  return success();
}

LogicalResult ODESolveGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> h = diag.tensor(adaptor.getH(), "h");
  if (failed(h) || failed(expectAdjoint(diag, adaptor.getA1(), *h, "a1")))
    return failure();
  inferred.push_back(*h);
  appendYieldTypes(adaptor.getVjp(), 1, inferred);
  return success();
}

LogicalResult ODESolveGradOp::verifyRegions() {
  if (failed(verifyBlockShape(*this, getDynamics(), "dynamics", 2, 1)) ||
      failed(verifyBlockShape(*this, getVjp(), "vjp", 3,
                              1 + getParams().size())))
    return failure();
  if (!llvm::all_of(getParams(), llvm::IsaPred<FlatSymbolRefAttr>))
    return emitOpError("params must be symbol references");
  return success();
}

LogicalResult ODERNNGradOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> x = diag.tensorOfRank(adaptor.getX(), "x [B, T, I]", 3);
  FailureOr<NNTensor> hs = diag.tensorOfRank(adaptor.getHs(), "hs", 3);
  if (failed(x) || failed(hs) ||
      failed(expectAdjoint(diag, adaptor.getDhs(), *hs, "dhs")))
    return failure();
  inferred.push_back(*x);
  inferred.push_back(x->withDims(
      {x->getDim(0), Dim::getStatic(adaptor.getHiddenSize())}));
  appendYieldTypes(adaptor.getDynamicsVjp(), 1, inferred);
  appendYieldTypes(adaptor.getCellVjp(), 2, inferred);
  return success();
}

LogicalResult ODERNNGradOp::verifyRegions() {
  if (failed(verifyBlockShape(*this, getDynamics(), "dynamics", 2, 1)) ||
      failed(verifyBlockShape(*this, getDynamicsVjp(), "dynamics_vjp", 3,
                              1 + getDynamicsParams().size())) ||
      failed(verifyBlockShape(*this, getCellVjp(), "cell_vjp", 3,
                              2 + getCellParams().size())))
    return failure();
  return success();
}
