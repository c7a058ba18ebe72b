//===- LossToNNK.cpp - losses and output heads -> nnk -----------*- C++ -*-===//
//
// mse, cross_entropy and bce_with_logits as nnk.loss with their backward,
// and the fused heads: linear + cross-entropy (one nnk op writing every
// result) and linear + sample.
//
//===----------------------------------------------------------------------===//

#include "PatternHelpers.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::conv;

void nncc::populateLossToNNKPatterns(const TypeConverter &converter,
                                     RewritePatternSet &patterns) {
  // nn.linear_cross_entropy: one nnk.linear_cross_entropy writing one fresh
  // buffer per result.
  addLowering<nn::LinearCrossEntropyOp>(
      converter, patterns,
      [](RW &r, nn::LinearCrossEntropyOp op, nn::LinearCrossEntropyOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        nnk::LinearCrossEntropyOp::create(r, op.getLoc(), a.getX(), a.getWeight(), a.getTarget(),
                                          a.getBias(), o[0], o[1], o[2], o[3],
                                          o.size() > 4 ? o[4] : Value(), op.getIgnoreIndex());
        return success();
      });
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
  addLowering<nn::LinearSampleOp>(
      converter, patterns,
      [](RW &r, nn::LinearSampleOp op, nn::LinearSampleOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        nnk::LinearSampleOp::create(r, op.getLoc(), a.getX(), a.getWeight(),
                                    a.getBias(), a.getRows(), o[0], op.getSeed());
        return success();
      });
  addLowering<nn::MSEGradOp>(converter, patterns,
                         [](RW &r, nn::MSEGradOp op, nn::MSEGradOp::Adaptor a,
                            ArrayRef<Value> o) -> LogicalResult {
                           nnk::LossGradOp::create(
                               r, op.getLoc(), a.getPred(), a.getTarget(),
                               a.getDloss(), Value(), o[0], nnk::LossKind::mse, -100);
                           return success();
                         });
  addLowering<nn::CrossEntropyGradOp>(
      converter, patterns,
      [](RW &r, nn::CrossEntropyGradOp op, nn::CrossEntropyGradOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        nnk::LossGradOp::create(r, op.getLoc(), a.getLogits(), a.getTarget(),
                                a.getDloss(), Value(), o[0],
                                nnk::LossKind::cross_entropy, op.getIgnoreIndex());
        return success();
      });
  addLowering<nn::BCEWithLogitsGradOp>(
      converter, patterns,
      [](RW &r, nn::BCEWithLogitsGradOp op, nn::BCEWithLogitsGradOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        nnk::LossGradOp::create(r, op.getLoc(), a.getLogits(), a.getTarget(),
                                a.getDloss(), a.getPosWeight(), o[0],
                                nnk::LossKind::bce_with_logits, -100);
        return success();
      });
}
