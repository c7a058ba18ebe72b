//===- TensorGradients.cpp - rules: shape and reduction ops -----*- C++ -*-===//
//
// Concat / split / slice / transpose route the adjoint back; reductions,
// max and topk scatter or broadcast it.
// (GradientOpInterface models; docs/autodiff.md.)
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/Transforms/GradientRule.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::nn;
using namespace nncc::nn::gradients;

namespace {

LogicalResult concatGradient(ConcatOp op, GradientBuilder &gb, ArrayRef<Value> r,
                             SmallVectorImpl<Value> &out) {
  auto type = tensorType(op.getResult());
  int64_t axis = *normalizeAxis(op.getAxis(), type.getRank());
  SmallVector<int64_t> sizes;
  for (Value input : op.getInputs()) {
    Dim dim = tensorType(input).getDim(axis);
    if (!dim.isStatic())
      return op.emitOpError("gradient needs static sizes along the concatenated axis");
    sizes.push_back(dim.getSize());
  }
  if (!isFloatTensor(op.getResult()))
    return out.append(sizes.size(), Value()), success();
  for (Value piece : split(gb.getBuilder(), op.getLoc(), r[0], axis, sizes))
    out.push_back(piece);
  return success();
}

LogicalResult splitGradient(SplitOp op, GradientBuilder &gb, ArrayRef<Value> r,
                            SmallVectorImpl<Value> &out) {
  OpBuilder &b = gb.getBuilder();
  if (!isFloatTensor(op.getX()))
    return out.push_back(Value()), success();
  SmallVector<Value> pieces;
  for (auto [adjoint, result] : llvm::zip_equal(r, op.getResults()))
    pieces.push_back(adjoint ? adjoint : zeros(b, op.getLoc(), result.getType()));
  out.push_back(ConcatOp::create(b, op.getLoc(), pieces, op.getAxis()));
  return success();
}

LogicalResult sliceGradient(SliceOp op, GradientBuilder &gb, ArrayRef<Value> r,
                            SmallVectorImpl<Value> &out) {
  if (!isFloatTensor(op.getX()))
    return out.push_back(Value()), success();
  out.push_back(SliceGradOp::create(gb.getBuilder(), op.getLoc(), r[0], op.getX().getType(),
                                    op.getStarts(), op.getStops(), op.getSteps(), op.getSqueeze()));
  return success();
}

LogicalResult transposeGradient(TransposeOp op, GradientBuilder &gb, ArrayRef<Value> r,
                                SmallVectorImpl<Value> &out) {
  ArrayRef<int64_t> perm = op.getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = static_cast<int64_t>(i);
  out.push_back(TransposeOp::create(gb.getBuilder(), op.getLoc(), r[0], inverse));
  return success();
}

/// reduce_sum / reduce_mean: dy broadcast back over the reduced axes (and
/// divided by their size for the mean); integer reductions carry none.
template <typename OpTy, bool Mean>
LogicalResult reduceGradient(OpTy op, GradientBuilder &gb, ArrayRef<Value> r,
                             SmallVectorImpl<Value> &out) {
  if (!isFloatTensor(op.getX()))
    return out.push_back(Value()), success();
  out.push_back(ReduceGradOp::create(gb.getBuilder(), op.getLoc(), r[0], op.getX().getType(),
                                     op.getAxes(), op.getKeepdim(), Mean));
  return success();
}

/// cumsum: the adjoint of a running sum is the running sum of dy the other
/// way; integer sums carry none.
LogicalResult cumsumGradient(CumsumOp op, GradientBuilder &gb, ArrayRef<Value> r,
                             SmallVectorImpl<Value> &out) {
  if (!isa<FloatType>(cast<nncc::nn::TensorType>(op.getX().getType()).getElementType()))
    return out.push_back(Value()), success();
  out.push_back(
      CumsumOp::create(gb.getBuilder(), op.getLoc(), r[0], op.getAxis(), !op.getReverse()));
  return success();
}

/// argmax's integer result has no adjoint, and passes none to x.
LogicalResult argmaxGradient(ArgmaxOp op, GradientBuilder &gb, ArrayRef<Value> r,
                             SmallVectorImpl<Value> &out) {
  return out.push_back(Value()), success();
}

/// max: dy goes to the first maximal element of each row (torch.max(x,
/// dim)'s rule), found again from the saved x.
void maxSaved(MaxOp op, SmallVectorImpl<Value> &s) { s.push_back(op.getX()); }
LogicalResult maxGradient(MaxOp op, GradientBuilder &gb, ArrayRef<Value> r,
                          SmallVectorImpl<Value> &out) {
  out.push_back(MaxGradOp::create(gb.getBuilder(), op.getLoc(), r[0], gb.get(op.getX()),
                                  op.getAxis(), op.getKeepdim()));
  return success();
}

/// topk: the adjoint of values is scattered to the saved indices (distinct
/// within a row, so each position gets at most one); indices pass none.
void topkSaved(TopkOp op, SmallVectorImpl<Value> &s) { s.push_back(op.getIndices()); }
LogicalResult topkGradient(TopkOp op, GradientBuilder &gb, ArrayRef<Value> r,
                           SmallVectorImpl<Value> &out) {
  if (!r[0])
    return out.push_back(Value()), success();
  int64_t rank = tensorType(op.getX()).getRank();
  int64_t axis = *normalizeAxis(op.getAxis(), rank);
  out.push_back(TopkGradOp::create(gb.getBuilder(), op.getLoc(), r[0], gb.get(op.getIndices()),
                                   op.getAxis(), tensorType(op.getX()).getDim(axis).getSize()));
  return success();
}

} // namespace

void nncc::nn::gradients::attachTensorGradientRules(MLIRContext &ctx) {
  attachGradientRule<ReduceSumOp, savesNothing<ReduceSumOp>, reduceGradient<ReduceSumOp, false>>(
      ctx);
  attachGradientRule<ReduceMeanOp, savesNothing<ReduceMeanOp>, reduceGradient<ReduceMeanOp, true>>(
      ctx);
  attachGradientRule<ConcatOp, savesNothing<ConcatOp>, concatGradient>(ctx);
  attachGradientRule<SplitOp, savesNothing<SplitOp>, splitGradient>(ctx);
  attachGradientRule<SliceOp, savesNothing<SliceOp>, sliceGradient>(ctx);
  attachGradientRule<TransposeOp, savesNothing<TransposeOp>, transposeGradient>(ctx);
  attachGradientRule<CumsumOp, savesNothing<CumsumOp>, cumsumGradient>(ctx);
  attachGradientRule<ArgmaxOp, savesNothing<ArgmaxOp>, argmaxGradient>(ctx);
  attachGradientRule<MaxOp, maxSaved, maxGradient>(ctx);
  attachGradientRule<TopkOp, topkSaved, topkGradient>(ctx);
}
