//===- NNNormOps.cpp - nn.layer_norm and nn.softmax -------------*- C++ -*-===//
//
// Type inference and verifiers of layer norm, its backward and softmax.
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/IR/NNOps.h"

#include "dialects/NN/IR/NNOpsCommon.h"

using namespace mlir;
using namespace nncc::nn;
using namespace nncc::nn::detail;

namespace {
using NNTensor = nncc::nn::TensorType;
} // namespace

LogicalResult SoftmaxOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  return inferSameAsOperand(InferDiagnostics(loc, getOperationName()), adaptor.getX(), inferred);
}

LogicalResult SoftmaxOp::verify() {
  if (!normalizeAxis(getAxis(), getX().getType().getRank()))
    return emitOpError("axis ")
           << getAxis() << " is out of range for " << getX().getType();
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> x =
      diag.tensorOfMinRank(adaptor.getX(), "x", 1);
  if (failed(x))
    return failure();
  Dim normalized = x->getDims().back();
  for (auto [value, name] : {std::pair(adaptor.getWeight(), "weight"),
                             std::pair(adaptor.getBias(), "bias")}) {
    if (!value)
      continue;
    FailureOr<nncc::nn::TensorType> type = diag.tensor(value, name);
    if (failed(type) ||
        failed(diag.expectElementType(*type, x->getElementType(), name)) ||
        failed(diag.expectShape(*type, {normalized}, name)))
      return failure();
  }
  inferred.push_back(*x);
  return success();
}

LogicalResult LayerNormOp::verify() {
  if (!(getEps() > 0.0))
    return emitOpError("eps must be > 0, got ") << getEps();
  return success();
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

LogicalResult LayerNormGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> x = diag.tensorOfMinRank(adaptor.getX(), "x", 1);
  if (failed(x) || failed(expectAdjoint(diag, adaptor.getDy(), *x, "dy")))
    return failure();
  inferred.push_back(*x);
  if (Value weight = adaptor.getWeight()) {
    FailureOr<NNTensor> w = diag.tensorOfRank(weight, "weight", 1);
    if (failed(w) ||
        failed(diag.expectShape(*w, {x->getDims().back()}, "weight [N]")))
      return failure();
    inferred.push_back(*w);
  }
  return success();
}
