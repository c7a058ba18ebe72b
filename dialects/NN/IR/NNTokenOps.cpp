//===- NNTokenOps.cpp - nn embeddings, positions, tokens --------*- C++ -*-===//
//
// Type inference and verifiers of the embedding, the position tables,
// mask_tokens, sample and their backward helpers.
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

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> indices =
      diag.tensor(adaptor.getIndices(), "indices");
  FailureOr<nncc::nn::TensorType> table =
      diag.tensorOfRank(adaptor.getTable(), "table", 2);
  if (failed(indices) || failed(table) ||
      failed(diag.expectIndex(*indices, "indices")))
    return failure();
  SmallVector<Dim> dims(indices->getDims());
  dims.push_back(table->getDim(1));
  inferred.push_back(table->withDims(dims));
  return success();
}

LogicalResult EmbeddingOp::verify() {
  int64_t p = getPaddingIdx();
  Dim rows = cast<nncc::nn::TensorType>(getTable().getType()).getDim(0);
  if (p < -1 || (rows.isStatic() && p >= rows.getSize()))
    return emitOpError("padding_idx ") << p << " is not a row of the table (-1 or 0.."
                                       << (rows.isStatic() ? rows.getSize() - 1 : 0) << ")";
  return success();
}

LogicalResult MaskTokensOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> tokens =
      diag.tensorOfMinRank(adaptor.getTokens(), "tokens [..., n]", 1);
  if (failed(tokens) || failed(diag.expectIndex(*tokens, "tokens")))
    return failure();
  inferred.push_back(*tokens);
  inferred.push_back(tokens->withElementType(IntegerType::get(ctx, 1)));
  return success();
}

LogicalResult MaskTokensOp::verify() {
  return verifyProbability(*this, getP(), "p");
}

LogicalResult SampleOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> logits =
      diag.tensorOfMinRank(adaptor.getLogits(), "logits [..., V]", 1);
  if (failed(logits))
    return failure();
  ArrayRef<Dim> rowsShape = logits->getDims().drop_back();
  if (adaptor.getRows()) {
    FailureOr<nncc::nn::TensorType> rows =
        diag.tensor(adaptor.getRows(), "rows");
    if (failed(rows) ||
        failed(diag.expectShape(*rows, rowsShape, "rows (logits without V)")))
      return failure();
  }
  inferred.push_back(logits->withDims(rowsShape).withElementType(
      IntegerType::get(ctx, 32)));
  return success();
}

LogicalResult AxialPositionOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> x =
      diag.tensorOfRank(adaptor.getX(), "x [B, T, E]", 3);
  FailureOr<nncc::nn::TensorType> rows =
      diag.tensorOfRank(adaptor.getRows(), "rows [n1, 1, d1]", 3);
  FailureOr<nncc::nn::TensorType> cols =
      diag.tensorOfRank(adaptor.getCols(), "cols [1, n2, d2]", 3);
  if (failed(x) || failed(rows) || failed(cols) ||
      failed(diag.expectElementType(*rows, x->getElementType(), "rows")) ||
      failed(diag.expectElementType(*cols, x->getElementType(), "cols")))
    return failure();
  if (!isStaticShape(rows->getDims()) || !isStaticShape(cols->getDims()))
    return diag.error("the axial tables must have static shapes, got ", *rows,
                      " and ", *cols);
  if (rows->getDim(1).getSize() != 1 || cols->getDim(0).getSize() != 1)
    return diag.error("expected rows [n1, 1, d1] and cols [1, n2, d2], got ",
                      *rows, " and ", *cols);
  int64_t n1 = rows->getDim(0).getSize(), n2 = cols->getDim(1).getSize();
  int64_t width = rows->getDim(2).getSize() + cols->getDim(2).getSize();
  Dim embed = x->getDim(2), time = x->getDim(1);
  if (embed.isStatic() && embed.getSize() != width)
    return diag.error("embedding size ", embed.getSize(),
                      " is not d1 + d2 = ", width, " of the axial tables");
  if (time.isStatic() && time.getSize() > n1 * n2)
    return diag.error("sequence length ", time.getSize(), " exceeds the ",
                      n1 * n2, " positions of the ", n1, " x ", n2,
                      " axial grid");
  inferred.push_back(*x);
  return success();
}

LogicalResult SinusoidalPositionOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> x =
      diag.tensorOfRank(adaptor.getX(), "x [B, T, E]", 3);
  if (failed(x))
    return failure();
  Dim embed = x->getDim(2);
  if (embed.isStatic() && embed.getSize() % 2 != 0)
    return diag.error("embedding size E must be even, got ", embed.getSize());
  inferred.push_back(*x);
  return success();
}

LogicalResult LearnedPositionOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> x =
      diag.tensorOfRank(adaptor.getX(), "x [B, T, E]", 3);
  FailureOr<nncc::nn::TensorType> table =
      diag.tensorOfRank(adaptor.getTable(), "table [P, E]", 2);
  if (failed(x) || failed(table) ||
      failed(diag.expectElementType(*table, x->getElementType(), "table")) ||
      failed(diag.expectShape(*table, {table->getDim(0), x->getDim(2)},
                              "table [P, E]")))
    return failure();
  Dim time = x->getDim(1), positions = table->getDim(0);
  if (time.isStatic() && positions.isStatic() &&
      time.getSize() > positions.getSize())
    return diag.error("sequence length ", time.getSize(),
                      " exceeds the ", positions.getSize(),
                      " positions of the table");
  inferred.push_back(*x);
  return success();
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> indices = diag.tensor(adaptor.getIndices(), "indices");
  FailureOr<NNTensor> dy = diag.tensorOfMinRank(adaptor.getDy(), "dy", 1);
  if (failed(indices) || failed(dy))
    return failure();
  if (dy->getRank() != indices->getRank() + 1 ||
      !areCompatibleShapes(dy->getDims().drop_back(), indices->getDims()))
    return diag.error("expected dy of shape [indices..., E], got ", *dy);
  if (adaptor.getNumEmbeddings() < 1)
    return diag.error("num_embeddings must be >= 1");
  inferred.push_back(dy->withDims(
      {Dim::getStatic(adaptor.getNumEmbeddings()), dy->getDims().back()}));
  return success();
}

LogicalResult EmbeddingGradOp::verify() {
  if (getPaddingIdx() < -1 || getPaddingIdx() >= getNumEmbeddings())
    return emitOpError("padding_idx ") << getPaddingIdx() << " is not a row of the "
                                       << getNumEmbeddings() << "-row table";
  return success();
}

LogicalResult AxialPositionGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> dy = diag.tensorOfRank(adaptor.getDy(), "dy [B, T, E]", 3);
  if (failed(dy))
    return failure();
  ArrayRef<int64_t> shape = adaptor.getShape();
  int64_t d1 = adaptor.getD1();
  Dim embed = dy->getDim(2);
  if (shape.size() != 2 || shape[0] < 1 || shape[1] < 1)
    return diag.error("shape must be two positive sizes [n1, n2]");
  if (!embed.isStatic() || d1 < 1 || d1 >= embed.getSize())
    return diag.error("d1 = ", d1, " must lie in [1, E) for a static E, got E = ",
                      embed.str());
  inferred.push_back(dy->withDims({Dim::getStatic(shape[0]), Dim::getStatic(1),
                                   Dim::getStatic(d1)}));
  inferred.push_back(dy->withDims({Dim::getStatic(1), Dim::getStatic(shape[1]),
                                   Dim::getStatic(embed.getSize() - d1)}));
  return success();
}
