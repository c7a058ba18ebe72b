//===- TensorToNNK.cpp - Reductions, selections, data movement --*- C++ -*-===//
//
// Reductions, argmax / max / topk and cumsum over normalised axes, the
// strided copies (concat, split, slice, transpose), and the backward helpers
// that scatter or broadcast adjoints back (zeros, reduce_to_shape,
// reduce_grad, max_grad, topk_grad, slice_grad).
//
//===----------------------------------------------------------------------===//

#include "PatternHelpers.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::conv;

namespace {


/// nn.reduce_{sum,mean} -> nnk.reduce over sorted, normalised axes (all
/// axes when none are given).
template <typename ReduceOpTy, nnk::ReduceKind kind>
void addReduce(const TypeConverter &converter, RewritePatternSet &patterns) {
  addSimple<ReduceOpTy>(
      converter, patterns,
      [](ConversionPatternRewriter &rewriter, ReduceOpTy op,
             typename ReduceOpTy::Adaptor adaptor, Value out) -> LogicalResult {
        int64_t rank = rankOf(op.getX());
        SmallVector<int64_t> axes;
        for (int64_t a : op.getAxes())
          axes.push_back(*nn::normalizeAxis(a, rank));
        if (axes.empty())
          for (int64_t a = 0; a < rank; ++a)
            axes.push_back(a);
        llvm::sort(axes);
        nnk::ReduceOp::create(rewriter, op.getLoc(), adaptor.getX(), out, kind,
                              axes, op.getKeepdim());
        return success();
      });
}

/// The reductions, argmax, max and cumsum: their axes normalised.
void populateAxisPatterns(const TypeConverter &converter, RewritePatternSet &patterns) {
  addReduce<nn::ReduceSumOp, nnk::ReduceKind::sum>(converter, patterns);
  addReduce<nn::ReduceMeanOp, nnk::ReduceKind::mean>(converter, patterns);
  addSimple<nn::ArgmaxOp>(
      converter, patterns,
      [](ConversionPatternRewriter &rewriter, nn::ArgmaxOp op,
         nn::ArgmaxOp::Adaptor adaptor, Value out) -> LogicalResult {
        int64_t axis = *nn::normalizeAxis(op.getAxis(), rankOf(op.getX()));
        nnk::ArgmaxOp::create(rewriter, op.getLoc(), adaptor.getX(), out, axis);
        return success();
      });
  addSimple<nn::MaxOp>(
      converter, patterns,
      [](ConversionPatternRewriter &rewriter, nn::MaxOp op,
         nn::MaxOp::Adaptor adaptor, Value out) -> LogicalResult {
        int64_t axis = *nn::normalizeAxis(op.getAxis(), rankOf(op.getX()));
        nnk::MaxOp::create(rewriter, op.getLoc(), adaptor.getX(), out, axis);
        return success();
      });
  addSimple<nn::CumsumOp>(
      converter, patterns,
      [](ConversionPatternRewriter &rewriter, nn::CumsumOp op,
         nn::CumsumOp::Adaptor adaptor, Value out) -> LogicalResult {
        int64_t axis = *nn::normalizeAxis(op.getAxis(), rankOf(op.getX()));
        nnk::CumsumOp::create(rewriter, op.getLoc(), adaptor.getX(), out, axis,
                              op.getReverse());
        return success();
      });
}

/// Concat, slice and transpose.
void populateDataMovementPatterns(const TypeConverter &converter,
                                  RewritePatternSet &patterns) {
  addSimple<nn::ConcatOp>(
      converter, patterns,
      [](ConversionPatternRewriter &rewriter, nn::ConcatOp op,
         nn::ConcatOp::Adaptor adaptor, Value out) -> LogicalResult {
        int64_t axis = *nn::normalizeAxis(op.getAxis(), rankOf(op.getResult()));
        nnk::ConcatOp::create(rewriter, op.getLoc(), adaptor.getInputs(), out,
                              axis);
        return success();
      });
  addSimple<nn::SliceOp>(
      converter, patterns,
      [](ConversionPatternRewriter &rewriter, nn::SliceOp op,
         nn::SliceOp::Adaptor adaptor, Value out) -> LogicalResult {
        nnk::SliceOp::create(rewriter, op.getLoc(), adaptor.getX(), out,
                             op.getStarts(), op.getSteps(), op.getSqueeze());
        return success();
      });
  addSimple<nn::TransposeOp>(
      converter, patterns,
      [](ConversionPatternRewriter &rewriter, nn::TransposeOp op,
         nn::TransposeOp::Adaptor adaptor, Value out) -> LogicalResult {
        nnk::TransposeOp::create(rewriter, op.getLoc(), adaptor.getX(), out,
                                 op.getPerm());
        return success();
      });
}

} // namespace

void nncc::populateTensorToNNKPatterns(const TypeConverter &converter,
                                       RewritePatternSet &patterns) {
  // nn.split: one nnk.split writing one fresh buffer per result.
  addLowering<nn::SplitOp>(converter, patterns,
                           [](RW &r, nn::SplitOp op, nn::SplitOp::Adaptor a,
                              ArrayRef<Value> o) -> LogicalResult {
                             int64_t axis = *nn::normalizeAxis(op.getAxis(), rankOf(op.getX()));
                             nnk::SplitOp::create(r, op.getLoc(), a.getX(), o, axis);
                             return success();
                           });
  populateAxisPatterns(converter, patterns);
  populateDataMovementPatterns(converter, patterns);
  addLowering<nn::ZerosOp>(converter, patterns,
                       [](RW &r, nn::ZerosOp op, nn::ZerosOp::Adaptor,
                          ArrayRef<Value> o) -> LogicalResult {
                         nnk::FillOp::create(r, op.getLoc(), o[0], 0.0);
                         return success();
                       });
  addLowering<nn::ReduceToShapeOp>(
      converter, patterns,
      [](RW &r, nn::ReduceToShapeOp op, nn::ReduceToShapeOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        nnk::ReduceToShapeOp::create(r, op.getLoc(), a.getX(), o[0]);
        return success();
      });
  addLowering<nn::MaxGradOp>(
      converter, patterns,
      [](RW &r, nn::MaxGradOp op, nn::MaxGradOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        int64_t rank = cast<nn::TensorType>(op.getX().getType()).getRank();
        nnk::MaxGradOp::create(r, op.getLoc(), a.getDy(), a.getX(), o[0],
                               *nn::normalizeAxis(op.getAxis(), rank));
        return success();
      });
  // topk's two outs (values, i32 indices) and its adjoint, axes normalised.
  addLowering<nn::TopkOp>(
      converter, patterns,
      [](RW &r, nn::TopkOp op, nn::TopkOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        int64_t rank = cast<nn::TensorType>(op.getX().getType()).getRank();
        nnk::TopkOp::create(r, op.getLoc(), a.getX(), o[0], o[1],
                            *nn::normalizeAxis(op.getAxis(), rank), op.getK());
        return success();
      });
  addLowering<nn::TopkGradOp>(
      converter, patterns,
      [](RW &r, nn::TopkGradOp op, nn::TopkGradOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        int64_t rank = cast<nn::TensorType>(op.getDy().getType()).getRank();
        nnk::TopkGradOp::create(r, op.getLoc(), a.getDy(), a.getIndices(), o[0],
                                *nn::normalizeAxis(op.getAxis(), rank));
        return success();
      });
  addLowering<nn::ReduceGradOp>(
      converter, patterns,
      [](RW &r, nn::ReduceGradOp op, nn::ReduceGradOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        int64_t rank = op.getType().getRank();
        SmallVector<int64_t> axes;
        for (int64_t ax : op.getAxes())
          axes.push_back(ax < 0 ? ax + rank : ax);
        if (axes.empty())
          for (int64_t i = 0; i < rank; ++i)
            axes.push_back(i);
        llvm::sort(axes);
        nnk::BroadcastAxesOp::create(r, op.getLoc(), a.getDy(), o[0], axes,
                                     op.getMean());
        return success();
      });
  addLowering<nn::SliceGradOp>(
      converter, patterns,
      [](RW &r, nn::SliceGradOp op, nn::SliceGradOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        nnk::SliceGradOp::create(r, op.getLoc(), a.getDy(), o[0], op.getStarts(),
                                 op.getSteps(), op.getSqueeze());
        return success();
      });
}
