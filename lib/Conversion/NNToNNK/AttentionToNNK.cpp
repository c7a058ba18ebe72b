//===- AttentionToNNK.cpp - Attention: projections + fused core -*- C++ -*-===//
//
// nn.attention -> nnk.gemm (packed in-projection [B, T, 3E] or, for LSH,
// [B, T, 2E]) -> nnk.flash_attention / nnk.banded_attention /
// nnk.lsh_attention -> nnk.gemm (out-projection with bias, plus the
// residual when the attention's single user adds one). A training forward
// paired with its gradient (nn.reserve) also writes the log-sum-exp, and
// the gradient reads the packed projection, the core's output and it.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::conv;

FailureOr<Value> conv::lowerAttention(ConversionPatternRewriter &rewriter,
                                      nn::AttentionOp op, Value residual,
                                      Type resultType) {
  Location loc = op.getLoc();
  auto xType = cast<nn::TensorType>(op.getX().getType());
  nncc::Dim B = xType.getDim(0), T = xType.getDim(1), E = xType.getDim(2);
  bool lsh = isa<nn::LshAttentionAttr>(op.getKind());
  int64_t packs = lsh ? 2 : 3;
  auto buf = [&](ArrayRef<nncc::Dim> dims) {
    return nnk::BufferType::get(op.getContext(), dims, xType.getElementType());
  };
  FailureOr<Value> qkv = emitGemm(
      rewriter, op, buf({B, T, E.scaled(packs)}), remap(rewriter, op.getX()),
      remap(rewriter, op.getInProjWeight()),
      remap(rewriter, op.getInProjBias()), Value(), nnk::Activation::none, 0.01);
  if (failed(qkv))
    return failure();
  FailureOr<Value> ctx = allocBuffer(rewriter, op, buf({B, T, E}));
  if (failed(ctx))
    return failure();
  Value mask = remap(rewriter, op.getKeyPaddingMask());
  int64_t heads = op.getNumHeads();
  bool causal = op.getCausal();
  double dropout = op.getDropout();
  Attribute kind = op.getKind();
  // A training forward whose gradient reuses it (nn.reserve) also keeps
  // each query's log-sum-exp; qkv and the core's output are kept anyway.
  std::optional<int64_t> reserve = reserveIdOf(op);
  Value lse;
  if (reserve) {
    FailureOr<Value> b = allocBuffer(
        rewriter, op,
        buf({B, nncc::Dim::getStatic(op.getNumHeads()), T}));
    if (failed(b))
      return failure();
    lse = *b;
  }
  Operation *core;
  if (isa<nn::DenseAttentionAttr>(kind)) {
    core = nnk::FlashAttentionOp::create(rewriter, loc, *qkv, mask, *ctx, lse,
                                         heads, causal, 0.0, dropout,
                                         op.getSeed());
  } else if (auto dilated = dyn_cast<nn::DilatedAttentionAttr>(kind)) {
    core = nnk::BandedAttentionOp::create(
        rewriter, loc, *qkv, mask, *ctx, lse, heads, dilated.getWindow(),
        dilated.getDilation(), dilated.getGlobal(), causal, 0.0, dropout,
        op.getSeed());
  } else if (auto l = dyn_cast<nn::LshAttentionAttr>(kind)) {
    core = nnk::LSHAttentionOp::create(
        rewriter, loc, *qkv, mask, remap(rewriter, op.getRotations()), *ctx,
        lse, heads, l.getHashes(), l.getChunk(), causal, 0.0, op.getSeed(),
        dropout);
  } else {
    return op.emitError("unsupported attention kind ") << kind;
  }
  if (reserve)
    core->setAttr(kReserveAttr, rewriter.getI64IntegerAttr(*reserve));
  return emitGemm(rewriter, op, resultType, *ctx,
                  remap(rewriter, op.getOutProjWeight()),
                  remap(rewriter, op.getOutProjBias()), residual,
                  nnk::Activation::none, 0.01);
}

namespace {

/// Rooted at the end of the attention's chain: the attention itself, or the
/// add of a residual that the out-projection absorbs.
struct AttentionLowering : ConversionPattern {
  AttentionLowering(const TypeConverter &converter, MLIRContext *ctx)
      : ConversionPattern(converter, MatchAnyOpTypeTag(), /*benefit=*/2, ctx) {}

  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    std::optional<GemmChain> chain = findGemmChain(op);
    if (!chain || chain->end != op)
      return rewriter.notifyMatchFailure(op, "not the end of a GEMM chain");
    auto attention = dyn_cast<nn::AttentionOp>(chain->start);
    if (!attention)
      return rewriter.notifyMatchFailure(op, "chain does not start at attention");
    FailureOr<Value> out =
        lowerAttention(rewriter, attention, remap(rewriter, chain->residual),
                       op->getResult(0).getType());
    if (failed(out))
      return failure();
    rewriter.replaceOp(op, *out);
    if (attention != op)
      rewriter.eraseOp(attention);
    return success();
  }
};

} // namespace

void nncc::populateAttentionToNNKPatterns(const TypeConverter &converter,
                                          RewritePatternSet &patterns) {
  patterns.add<AttentionLowering>(converter, patterns.getContext());
}
