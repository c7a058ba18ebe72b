//===- LinearToNNK.cpp - GEMMs with epilogues -------------------*- C++ -*-===//
//
// nn.linear chains (+ bias, activation, residual) as one nnk.gemm, batched
// nn.matmul, and the weight (and bias) gradient of a linear layer as one
// GEMM with a transposed operand.
//
//===----------------------------------------------------------------------===//

#include "PatternHelpers.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::conv;

namespace {

/// Rooted at the end of a GEMM chain that starts at an nn.linear:
/// linear (+bias) -> activation -> (+residual) as one nnk.gemm.
struct LinearChainLowering : ConversionPattern {
  LinearChainLowering(const TypeConverter &converter, MLIRContext *ctx)
      : ConversionPattern(converter, MatchAnyOpTypeTag(), /*benefit=*/2, ctx) {}

  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    std::optional<GemmChain> chain = findGemmChain(op);
    if (!chain || chain->end != op)
      return rewriter.notifyMatchFailure(op, "not the end of a GEMM chain");
    auto linear = dyn_cast<nn::LinearOp>(chain->start);
    if (!linear)
      return rewriter.notifyMatchFailure(op, "chain does not start at linear");
    double alpha = 0.01;
    nnk::Activation act = nnk::Activation::none;
    if (chain->act)
      act = getActivation(chain->act, alpha);
    Value bias = linear.getBias() ? linear.getBias() : chain->bias;
    FailureOr<Value> out = emitGemm(
        rewriter, op, op->getResult(0).getType(), remap(rewriter, linear.getX()),
        remap(rewriter, linear.getWeight()), remap(rewriter, bias),
        remap(rewriter, chain->residual), act, alpha);
    if (failed(out))
      return failure();
    rewriter.replaceOp(op, *out);
    // Users before producers.
    for (Operation *member :
         {chain->act, chain->biasAdd, chain->start})
      if (member && member != op)
        rewriter.eraseOp(member);
    return success();
  }
};

struct MatmulLowering : OpConversionPattern<nn::MatmulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::MatmulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!isa<FloatType>(op.getType().getElementType()))
      return rewriter.notifyMatchFailure(op, "integer matmul");
    FailureOr<Value> out = allocBuffer(rewriter, op, op.getType());
    if (failed(out))
      return failure();
    nnk::MatmulOp::create(rewriter, op.getLoc(), adaptor.getLhs(),
                          adaptor.getRhs(), *out);
    rewriter.replaceOp(op, *out);
    return success();
  }
};

} // namespace

void nncc::populateLinearToNNKPatterns(const TypeConverter &converter,
                                       RewritePatternSet &patterns) {
  patterns.add<LinearChainLowering, MatmulLowering>(
      converter, patterns.getContext());
  addLowering<nn::LinearWeightGradOp>(
      converter, patterns,
      [](RW &r, nn::LinearWeightGradOp op, nn::LinearWeightGradOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        nnk::LinearWeightGradOp::create(r, op.getLoc(), a.getDy(), a.getX(), o[0]);
        return success();
      });
}
