//===- NNLossOps.cpp - nn losses and output heads ---------------*- C++ -*-===//
//
// Type inference of the losses, the fused linear + cross-entropy and
// linear + sample heads, and the losses' backward ops.
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/IR/NNOps.h"

#include "dialects/NN/IR/NNOpsCommon.h"
#include <limits>

using namespace mlir;
using namespace nncc::nn;
using namespace nncc::nn::detail;

namespace {
using NNTensor = nncc::nn::TensorType;
} // namespace

/// Loss adjoints: the type of the first operand; `dloss` is a scalar.
static LogicalResult inferLossGrad(const InferDiagnostics &diag, Value input,
                                   Value dloss,
                                   SmallVectorImpl<Type> &inferred) {
  FailureOr<NNTensor> type = diag.tensor(input, "input");
  FailureOr<NNTensor> dl = diag.tensorOfRank(dloss, "dloss", 0);
  if (failed(type) || failed(dl))
    return failure();
  inferred.push_back(*type);
  return success();
}

LogicalResult MSEOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> pred = diag.tensor(adaptor.getPred(), "pred");
  FailureOr<nncc::nn::TensorType> target =
      diag.tensor(adaptor.getTarget(), "target");
  if (failed(pred) || failed(target))
    return failure();
  if (!pred->isCompatibleWith(*target))
    return diag.error("pred ", *pred, " and target ", *target,
                      " have incompatible types");
  inferred.push_back(getScalarType(pred->getElementType()));
  return success();
}

LogicalResult CrossEntropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> logits =
      diag.tensorOfMinRank(adaptor.getLogits(), "logits [..., C]", 1);
  FailureOr<nncc::nn::TensorType> target =
      diag.tensor(adaptor.getTarget(), "target");
  if (failed(logits) || failed(target) ||
      failed(diag.expectIndex(*target, "target")) ||
      failed(diag.expectShape(*target, logits->getDims().drop_back(),
                              "target (the logits' shape without C)")))
    return failure();
  inferred.push_back(getScalarType(logits->getElementType()));
  return success();
}

LogicalResult LinearSampleOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  auto operands = inferLinearOperands(
      diag, adaptor.getX(), adaptor.getWeight(), adaptor.getBias(), 2,
      "x [..., K]", "weight [V, K] with K = the last dim of x", "bias [V]");
  if (failed(operands))
    return failure();
  nncc::nn::TensorType x = operands->first;
  ArrayRef<Dim> rowsShape = x.getDims().drop_back();
  if (Value rowsValue = adaptor.getRows()) {
    FailureOr<nncc::nn::TensorType> rows = diag.tensor(rowsValue, "rows");
    if (failed(rows) ||
        failed(diag.expectShape(*rows, rowsShape, "rows (x without K)")))
      return failure();
  }
  inferred.push_back(
      x.withDims(rowsShape).withElementType(IntegerType::get(ctx, 32)));
  return success();
}

LogicalResult LinearCrossEntropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  auto operands = inferLinearOperands(
      diag, adaptor.getX(), adaptor.getWeight(), adaptor.getBias(), 2,
      "x [..., K]", "weight [V, K] with K = the last dim of x", "bias [V]");
  if (failed(operands))
    return failure();
  auto [x, classes] = *operands;
  FailureOr<nncc::nn::TensorType> target =
      diag.tensor(adaptor.getTarget(), "target");
  if (failed(target) || failed(diag.expectIndex(*target, "target")) ||
      failed(diag.expectShape(*target, x.getDims().drop_back(),
                              "target (the shape of x without K)")))
    return failure();
  inferred.push_back(getScalarType(x.getElementType()));
  inferred.push_back(x);
  inferred.push_back(x.withDims({classes, x.getDims().back()}));
  inferred.push_back(x.withDims({classes}));
  if (adaptor.getWithLogits()) {
    SmallVector<Dim> dims(x.getDims().drop_back());
    dims.push_back(classes);
    inferred.push_back(x.withDims(dims));
  }
  return success();
}

LogicalResult BCEWithLogitsOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> logits =
      diag.tensor(adaptor.getLogits(), "logits");
  FailureOr<nncc::nn::TensorType> target =
      diag.tensor(adaptor.getTarget(), "target");
  if (failed(logits) || failed(target))
    return failure();
  if (!logits->isCompatibleWith(*target))
    return diag.error("logits ", *logits, " and target ", *target,
                      " have incompatible types");
  if (Value posWeightValue = adaptor.getPosWeight()) {
    FailureOr<nncc::nn::TensorType> posWeight =
        diag.tensor(posWeightValue, "pos_weight");
    if (failed(posWeight))
      return failure();
    if (logits->isScalar())
      return diag.error("pos_weight needs logits with a class dim, got ",
                        *logits);
    if (failed(diag.expectElementType(*posWeight, logits->getElementType(),
                                      "pos_weight")) ||
        failed(diag.expectShape(*posWeight, {logits->getDims().back()},
                                "pos_weight [C]")))
      return failure();
  }
  inferred.push_back(getScalarType(logits->getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

LogicalResult MSEGradOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferLossGrad(InferDiagnostics(loc, getOperationName()),
                       adaptor.getPred(), adaptor.getDloss(), inferred);
}

LogicalResult CrossEntropyGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  return inferLossGrad(InferDiagnostics(loc, getOperationName()),
                       adaptor.getLogits(), adaptor.getDloss(), inferred);
}

LogicalResult BCEWithLogitsGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  return inferLossGrad(InferDiagnostics(loc, getOperationName()),
                       adaptor.getLogits(), adaptor.getDloss(), inferred);
}
