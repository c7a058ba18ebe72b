//===- NormToNNK.cpp - layer norm and softmax -> nnk ------------*- C++ -*-===//
//
// nn.layer_norm (with a fused residual add when its input is one) and its
// backward, and nn.softmax over a normalised axis.
//
//===----------------------------------------------------------------------===//

#include "PatternHelpers.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::conv;

namespace {

/// layer_norm(x), or layer_norm(a + b) as one op with a residual.
struct LayerNormLowering : OpConversionPattern<nn::LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value x = adaptor.getX(), residual;
    Operation *add = op.getX().getDefiningOp();
    if (add && isLayerNormResidualAdd(add)) {
      x = remap(rewriter, add->getOperand(0));
      residual = remap(rewriter, add->getOperand(1));
    } else {
      add = nullptr;
    }
    FailureOr<Value> out = allocBuffer(rewriter, op, op.getType());
    if (failed(out))
      return failure();
    nnk::LayerNormOp::create(rewriter, op.getLoc(), x, residual,
                             adaptor.getWeight(), adaptor.getBias(), *out,
                             /*sum=*/Value(), op.getEps());
    rewriter.replaceOp(op, *out);
    if (add)
      rewriter.eraseOp(add);
    return success();
  }
};

} // namespace

void nncc::populateNormToNNKPatterns(const TypeConverter &converter,
                                     RewritePatternSet &patterns) {
  patterns.add<LayerNormLowering>(converter, patterns.getContext());
  addSimple<nn::SoftmaxOp>(
      converter, patterns,
      [](ConversionPatternRewriter &rewriter, nn::SoftmaxOp op,
         nn::SoftmaxOp::Adaptor adaptor, Value out) -> LogicalResult {
        int64_t axis = *nn::normalizeAxis(op.getAxis(), rankOf(op.getX()));
        nnk::SoftmaxOp::create(rewriter, op.getLoc(), adaptor.getX(), out, axis);
        return success();
      });
  addLowering<nn::LayerNormGradOp>(
      converter, patterns,
      [](RW &r, nn::LayerNormGradOp op, nn::LayerNormGradOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        nnk::LayerNormGradOp::create(r, op.getLoc(), a.getX(), a.getDy(),
                                     a.getWeight(), o[0],
                                     o.size() > 1 ? o[1] : Value(), op.getEps());
        return success();
      });
}
