//===- TensorToNNK.cpp - Softmax, reductions, embeddings, copies, losses ===//

#include "PatternHelpers.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::conv;

namespace {

/// One nn op -> alloc + one nnk op built by `build(rewriter, op, adaptor,
/// out)`.
template <typename NNOp>
struct SimpleLowering : OpConversionPattern<NNOp> {
  using OpConversionPattern<NNOp>::OpConversionPattern;
  using OpAdaptor = typename NNOp::Adaptor;
  using BuildFn = LogicalResult (*)(ConversionPatternRewriter &, NNOp,
                                    OpAdaptor, Value);

  SimpleLowering(const TypeConverter &converter, MLIRContext *ctx, BuildFn fn)
      : OpConversionPattern<NNOp>(converter, ctx), build(fn) {}

  LogicalResult
  matchAndRewrite(NNOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<Value> out =
        allocBuffer(rewriter, op, op->getResult(0).getType());
    if (failed(out) || failed(build(rewriter, op, adaptor, *out)))
      return failure();
    rewriter.replaceOp(op, *out);
    return success();
  }

  BuildFn build;
};

template <typename NNOp>
void addSimple(const TypeConverter &converter, RewritePatternSet &patterns,
               typename SimpleLowering<NNOp>::BuildFn fn) {
  patterns.add<SimpleLowering<NNOp>>(converter, patterns.getContext(), fn);
}

int64_t rankOf(Value v) { return cast<nn::TensorType>(v.getType()).getRank(); }

/// One fresh buffer per result of `op`, in order.
static LogicalResult allocResultBuffers(ConversionPatternRewriter &rewriter, Operation *op,
                                        SmallVectorImpl<Value> &outs) {
  for (Value result : op->getResults()) {
    FailureOr<Value> out = allocBuffer(rewriter, op, result.getType());
    if (failed(out))
      return failure();
    outs.push_back(*out);
  }
  return success();
}

/// nn.split: one nnk.split writing one fresh buffer per result.
struct SplitLowering : OpConversionPattern<nn::SplitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::SplitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> outs;
    if (failed(allocResultBuffers(rewriter, op, outs)))
      return failure();
    int64_t axis = *nn::normalizeAxis(op.getAxis(), rankOf(op.getX()));
    nnk::SplitOp::create(rewriter, op.getLoc(), adaptor.getX(), outs, axis);
    rewriter.replaceOp(op, outs);
    return success();
  }
};

/// nn.linear_cross_entropy: one nnk.linear_cross_entropy writing one fresh
/// buffer per result.
struct LinearCrossEntropyLowering
    : OpConversionPattern<nn::LinearCrossEntropyOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::LinearCrossEntropyOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> outs;
    if (failed(allocResultBuffers(rewriter, op, outs)))
      return failure();
    nnk::LinearCrossEntropyOp::create(
        rewriter, op.getLoc(), adaptor.getX(), adaptor.getWeight(),
        adaptor.getTarget(), adaptor.getBias(), outs[0], outs[1], outs[2],
        outs[3], outs.size() > 4 ? outs[4] : Value(), op.getIgnoreIndex());
    rewriter.replaceOp(op, outs);
    return success();
  }
};

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

/// Softmax, the reductions, argmax, max and cumsum: their axes normalised.
void populateAxisPatterns(const TypeConverter &converter, RewritePatternSet &patterns) {
  addSimple<nn::SoftmaxOp>(
      converter, patterns,
      [](ConversionPatternRewriter &rewriter, nn::SoftmaxOp op,
         nn::SoftmaxOp::Adaptor adaptor, Value out) -> LogicalResult {
        int64_t axis = *nn::normalizeAxis(op.getAxis(), rankOf(op.getX()));
        nnk::SoftmaxOp::create(rewriter, op.getLoc(), adaptor.getX(), out, axis);
        return success();
      });
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

/// Embedding lookups, positions, concat, slice and transpose.
void populateDataMovementPatterns(const TypeConverter &converter,
                                  RewritePatternSet &patterns) {
  addSimple<nn::EmbeddingOp>(
      converter, patterns,
      [](ConversionPatternRewriter &rewriter, nn::EmbeddingOp op,
         nn::EmbeddingOp::Adaptor adaptor, Value out) -> LogicalResult {
        nnk::EmbeddingOp::create(rewriter, op.getLoc(), adaptor.getIndices(),
                                 adaptor.getTable(), out);
        return success();
      });
  addSimple<nn::SinusoidalPositionOp>(
      converter, patterns,
      [](ConversionPatternRewriter &rewriter, nn::SinusoidalPositionOp op,
         nn::SinusoidalPositionOp::Adaptor adaptor, Value out) -> LogicalResult {
        nnk::SinusoidalPositionOp::create(rewriter, op.getLoc(), adaptor.getX(),
                                          out);
        return success();
      });
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

/// mse, cross_entropy and bce_with_logits as nnk.loss.
void populateLossPatterns(const TypeConverter &converter, RewritePatternSet &patterns) {
  addSimple<nn::MSEOp>(
      converter, patterns,
      [](ConversionPatternRewriter &rewriter, nn::MSEOp op,
         nn::MSEOp::Adaptor adaptor, Value out) -> LogicalResult {
        nnk::LossOp::create(rewriter, op.getLoc(), adaptor.getPred(),
                            adaptor.getTarget(), Value(), out,
                            nnk::LossKind::mse, -100);
        return success();
      });
  addSimple<nn::CrossEntropyOp>(
      converter, patterns,
      [](ConversionPatternRewriter &rewriter, nn::CrossEntropyOp op,
         nn::CrossEntropyOp::Adaptor adaptor, Value out) -> LogicalResult {
        nnk::LossOp::create(rewriter, op.getLoc(), adaptor.getLogits(),
                            adaptor.getTarget(), Value(), out,
                            nnk::LossKind::cross_entropy, op.getIgnoreIndex());
        return success();
      });
  addSimple<nn::BCEWithLogitsOp>(
      converter, patterns,
      [](ConversionPatternRewriter &rewriter, nn::BCEWithLogitsOp op,
         nn::BCEWithLogitsOp::Adaptor adaptor, Value out) -> LogicalResult {
        nnk::LossOp::create(rewriter, op.getLoc(), adaptor.getLogits(),
                            adaptor.getTarget(), adaptor.getPosWeight(), out,
                            nnk::LossKind::bce_with_logits, -100);
        return success();
      });
}

} // namespace

void nncc::populateTensorToNNKPatterns(const TypeConverter &converter,
                                       RewritePatternSet &patterns) {
  patterns.add<SplitLowering>(converter, patterns.getContext());
  patterns.add<LinearCrossEntropyLowering>(converter, patterns.getContext());
  populateAxisPatterns(converter, patterns);
  populateDataMovementPatterns(converter, patterns);
  populateLossPatterns(converter, patterns);
}
