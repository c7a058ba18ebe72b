//===- NNLinearOps.cpp - nn.matmul and nn.linear ----------------*- C++ -*-===//
//
// Type inference of matmul, linear and linear_weight_grad.
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

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> lhs =
      diag.tensorOfMinRank(adaptor.getLhs(), "lhs", 2);
  FailureOr<nncc::nn::TensorType> rhs =
      diag.tensorOfMinRank(adaptor.getRhs(), "rhs", 2);
  if (failed(lhs) || failed(rhs) ||
      failed(diag.expectElementType(*rhs, lhs->getElementType(), "rhs")))
    return failure();
  ArrayRef<Dim> lhsDims = lhs->getDims(), rhsDims = rhs->getDims();
  Dim lhsK = lhsDims.back(), rhsK = rhsDims[rhsDims.size() - 2];
  if (!lhsK.isCompatibleWith(rhsK))
    return diag.error("contracting dims differ: lhs ",
                      formatShape(lhsDims), " has K = ", lhsK.str(), ", rhs ",
                      formatShape(rhsDims), " has K = ", rhsK.str());
  std::optional<SmallVector<Dim>> batch =
      broadcastShapes(lhsDims.drop_back(2), rhsDims.drop_back(2));
  if (!batch)
    return diag.error("batch dims of ", formatShape(lhsDims), " and ",
                      formatShape(rhsDims), " are not broadcastable");
  batch->push_back(lhsDims[lhsDims.size() - 2]);
  batch->push_back(rhsDims.back());
  inferred.push_back(lhs->withDims(*batch));
  return success();
}

LogicalResult LinearOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  auto operands = inferLinearOperands(
      diag, adaptor.getX(), adaptor.getWeight(), adaptor.getBias(), 1, "x",
      "weight [out, in] with in = the last dim of x", "bias");
  if (failed(operands))
    return failure();
  auto [x, out] = *operands;
  SmallVector<Dim> dims(x.getDims().drop_back());
  dims.push_back(out);
  inferred.push_back(x.withDims(dims));
  return success();
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

LogicalResult LinearWeightGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> dy = diag.tensorOfMinRank(adaptor.getDy(), "dy", 1);
  FailureOr<NNTensor> x = diag.tensorOfMinRank(adaptor.getX(), "x", 1);
  if (failed(dy) || failed(x) ||
      failed(diag.expectElementType(*x, dy->getElementType(), "x")))
    return failure();
  if (dy->getRank() != x->getRank() ||
      !areCompatibleShapes(dy->getDims().drop_back(), x->getDims().drop_back()))
    return diag.error("dy ", *dy, " and x ", *x,
                      " must have the same leading dims");
  inferred.push_back(
      dy->withDims({dy->getDims().back(), x->getDims().back()}));
  return success();
}
