//===- TokenGradients.cpp - embeddings, positions, tokens -------*- C++ -*-===//
//
// Embedding and position tables collect dy; token masking and sampling
// pass no adjoint.
// (GradientOpInterface models; docs/autodiff.md.)
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/Transforms/GradientRule.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::nn;
using namespace nncc::nn::gradients;

namespace {

LogicalResult sinusoidalPositionGradient(SinusoidalPositionOp op, GradientBuilder &gb,
                                         ArrayRef<Value> r, SmallVectorImpl<Value> &out) {
  out.push_back(r[0]);
  return success();
}

/// dx = dy; the tables' adjoints sum dy over the positions reading each row.
LogicalResult axialPositionGradient(AxialPositionOp op, GradientBuilder &gb, ArrayRef<Value> r,
                                    SmallVectorImpl<Value> &out) {
  out.push_back(r[0]);
  if (!gb.needsAdjoint(op.getRows()) && !gb.needsAdjoint(op.getCols()))
    return out.append(2, Value()), success();
  auto rows = tensorType(op.getRows()), cols = tensorType(op.getCols());
  auto grad = AxialPositionGradOp::create(
      gb.getBuilder(), op.getLoc(), r[0],
      ArrayRef<int64_t>{rows.getDim(0).getSize(), cols.getDim(1).getSize()},
      rows.getDim(2).getSize());
  out.push_back(grad.getDrows());
  out.push_back(grad.getDcols());
  return success();
}

/// Token masking, sampling and stop_gradient pass no adjoint to any operand.
LogicalResult maskTokensGradient(MaskTokensOp op, GradientBuilder &gb, ArrayRef<Value> r,
                                 SmallVectorImpl<Value> &out) {
  return out.push_back(Value()), success();
}

LogicalResult sampleGradient(SampleOp op, GradientBuilder &gb, ArrayRef<Value> r,
                             SmallVectorImpl<Value> &out) {
  return out.append(op->getNumOperands(), Value()), success();
}

LogicalResult learnedPositionGradient(LearnedPositionOp op, GradientBuilder &gb, ArrayRef<Value> r,
                                      SmallVectorImpl<Value> &out) {
  OpBuilder &b = gb.getBuilder();
  Location loc = op.getLoc();
  out.push_back(r[0]);
  if (!gb.needsAdjoint(op.getTable()))
    return out.push_back(Value()), success();
  // dtable[0:T] = sum over the batch of dy; rows >= T get zero.
  Value rows = ReduceSumOp::create(b, loc, r[0], ArrayRef<int64_t>{0}, false);
  constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
  out.push_back(SliceGradOp::create(b, loc, rows, op.getTable().getType(), ArrayRef<int64_t>{0, 0},
                                    ArrayRef<int64_t>{kEnd, kEnd}, ArrayRef<int64_t>{1, 1},
                                    ArrayRef<int64_t>{}));
  return success();
}

void embeddingSaved(EmbeddingOp op, SmallVectorImpl<Value> &s) { s.push_back(op.getIndices()); }
LogicalResult embeddingGradient(EmbeddingOp op, GradientBuilder &gb, ArrayRef<Value> r,
                                SmallVectorImpl<Value> &out) {
  out.push_back(Value());
  auto table = tensorType(op.getTable());
  if (!table.getDim(0).isStatic())
    return op.emitOpError("gradient needs a static number of embeddings");
  out.push_back(EmbeddingGradOp::create(gb.getBuilder(), op.getLoc(), gb.get(op.getIndices()), r[0],
                                        table.getDim(0).getSize(), op.getPaddingIdx()));
  return success();
}

} // namespace

void nncc::nn::gradients::attachTokenGradientRules(MLIRContext &ctx) {
  attachGradientRule<SinusoidalPositionOp, savesNothing<SinusoidalPositionOp>,
                     sinusoidalPositionGradient>(ctx);
  attachGradientRule<AxialPositionOp, savesNothing<AxialPositionOp>, axialPositionGradient>(ctx);
  attachGradientRule<MaskTokensOp, savesNothing<MaskTokensOp>, maskTokensGradient>(ctx);
  attachGradientRule<SampleOp, savesNothing<SampleOp>, sampleGradient>(ctx);
  attachGradientRule<LearnedPositionOp, savesNothing<LearnedPositionOp>, learnedPositionGradient>(
      ctx);
  attachGradientRule<EmbeddingOp, embeddingSaved, embeddingGradient>(ctx);
}
