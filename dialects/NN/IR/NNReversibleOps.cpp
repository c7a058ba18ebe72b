//===- NNReversibleOps.cpp - nn.reversible ----------------------*- C++ -*-===//
//
// Result type inference of nn.reversible (the type of its input) and the
// signatures of its two residual regions F and G.
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/IR/NNOps.h"

#include "dialects/NN/IR/NNOpsCommon.h"

using namespace mlir;
using namespace nncc::nn;
using nncc::nn::detail::InferDiagnostics;
using namespace nncc::nn::detail;

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
