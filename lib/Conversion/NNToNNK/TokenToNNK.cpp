//===- TokenToNNK.cpp - embeddings, positions, tokens -> nnk ----*- C++ -*-===//
//
// Embedding lookups and their backward, sinusoidal and axial positions,
// and pretraining's token ops (active in inference too): token masking and
// Gumbel-max sampling.
//
//===----------------------------------------------------------------------===//

#include "PatternHelpers.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::conv;

void nncc::populateTokenToNNKPatterns(const TypeConverter &converter,
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
  addLowering<nn::MaskTokensOp>(
      converter, patterns,
      [](RW &r, nn::MaskTokensOp op, nn::MaskTokensOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        nnk::MaskTokensOp::create(r, op.getLoc(), a.getTokens(), o[0], o[1],
                                  op.getP(), op.getMaskId(), op.getSeed());
        return success();
      });
  addLowering<nn::SampleOp>(converter, patterns,
                        [](RW &r, nn::SampleOp op, nn::SampleOp::Adaptor a,
                           ArrayRef<Value> o) -> LogicalResult {
                          nnk::SampleOp::create(r, op.getLoc(), a.getLogits(),
                                                a.getRows(), o[0], op.getSeed());
                          return success();
                        });
  addLowering<nn::AxialPositionOp>(
      converter, patterns,
      [](RW &r, nn::AxialPositionOp op, nn::AxialPositionOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        nnk::AxialPositionOp::create(r, op.getLoc(), a.getX(), a.getRows(),
                                     a.getCols(), o[0]);
        return success();
      });
  addLowering<nn::AxialPositionGradOp>(
      converter, patterns,
      [](RW &r, nn::AxialPositionGradOp op, nn::AxialPositionGradOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        nnk::AxialPositionGradOp::create(r, op.getLoc(), a.getDy(), o[0], o[1]);
        return success();
      });
  addLowering<nn::EmbeddingGradOp>(
      converter, patterns,
      [](RW &r, nn::EmbeddingGradOp op, nn::EmbeddingGradOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        nnk::EmbeddingGradOp::create(r, op.getLoc(), a.getIndices(), a.getDy(),
                                     o[0], op.getPaddingIdx());
        return success();
      });
}
