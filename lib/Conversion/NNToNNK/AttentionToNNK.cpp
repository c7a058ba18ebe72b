//===- AttentionToNNK.cpp - Attention: projections + fused core -*- C++ -*-===//
//
// nn.attention -> nnk.gemm (packed in-projection [B, T, 3A] for heads A
// wide in all; for LSH [B, T, 2A], for Longformer's convention [B, T, 6A]) ->
// nnk.flash_attention / nnk.banded_attention /
// nnk.lsh_attention -> nnk.gemm (out-projection with bias, plus the
// residual when the attention's single user adds one). A training forward
// whose `reserve` its gradient reads also writes the log-sum-exp; the
// reserve maps to the packed projection, the core's output and it (1:N).
//
//===----------------------------------------------------------------------===//

#include "PatternHelpers.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::conv;

FailureOr<Value> conv::lowerAttention(ConversionPatternRewriter &rewriter,
                                      nn::AttentionOp op, Value residual,
                                      Type resultType,
                                      SmallVectorImpl<Value> &kept) {
  Location loc = op.getLoc();
  auto xType = cast<nn::TensorType>(op.getX().getType());
  nncc::Dim B = xType.getDim(0), T = xType.getDim(1), A = op.getHeadsWidth();
  int64_t packs =
      cast<nn::AttentionKindAttrInterface>(op.getKind()).getNumInputProjections();
  auto buf = [&](ArrayRef<nncc::Dim> dims) {
    return nnk::BufferType::get(op.getContext(), dims, xType.getElementType());
  };
  FailureOr<Value> qkv = emitGemm(
      rewriter, op, buf({B, T, A.scaled(packs)}), remap(rewriter, op.getX()),
      remap(rewriter, op.getInProjWeight()),
      remap(rewriter, op.getInProjBias()), Value(), nnk::Activation::none, 0.01);
  if (failed(qkv))
    return failure();
  FailureOr<Value> ctx = allocBuffer(rewriter, op, buf({B, T, A}));
  if (failed(ctx))
    return failure();
  Value mask = remap(rewriter, op.getKeyPaddingMask());
  int64_t heads = op.getNumHeads();
  bool causal = op.getCausal();
  double dropout = op.getDropout();
  Attribute kind = op.getKind();
  // A training forward whose gradient reads its reserve also keeps each
  // query's log-sum-exp; qkv and the core's output are kept anyway.
  Value lse;
  if (Value reserve = usedReserveOf(op.getReserve())) {
    SmallVector<Type> types;
    if (failed(getReserveBufferTypes(reserve, types)))
      return op.emitError("cannot lower the reserve");
    FailureOr<Value> b = allocBuffer(rewriter, op, types[2]);
    if (failed(b))
      return failure();
    lse = *b;
  }
  if (isa<nn::DenseAttentionAttr>(kind)) {
    nnk::FlashAttentionOp::create(rewriter, loc, *qkv, mask, *ctx, lse, heads,
                                  causal, 0.0, dropout, op.getSeed());
  } else if (auto dilated = dyn_cast<nn::DilatedAttentionAttr>(kind)) {
    nnk::BandedAttentionOp::create(rewriter, loc, *qkv, mask,
                                   remap(rewriter, op.getGlobalMask()), *ctx, lse, heads,
                                   dilated.getWindow(), dilated.getDilation(),
                                   dilated.getGlobal(), causal, 0.0, dropout,
                                   op.getSeed(), dilated.getConvention());
  } else if (auto l = dyn_cast<nn::LshAttentionAttr>(kind)) {
    nnk::LSHAttentionOp::create(rewriter, loc, *qkv, mask,
                                remap(rewriter, op.getRotations()), *ctx, lse,
                                heads, l.getHashes(), l.getChunk(), causal, 0.0,
                                op.getSeed(), dropout, l.getConvention(), l.getPadToMultiple(),
                                l.getPadAbove());
  } else if (auto local = dyn_cast<nn::LocalAttentionAttr>(kind)) {
    nnk::LocalAttentionOp::create(rewriter, loc, *qkv, mask, *ctx, lse, heads, local.getChunk(),
                                  local.getBefore(), local.getAfter(), local.getPadToMultiple(),
                                  local.getPadAbove(), causal, 0.0, dropout, op.getSeed());
  } else {
    return op.emitError("unsupported attention kind ") << kind;
  }
  if (lse)
    kept.append({*qkv, *ctx, lse});
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
    SmallVector<Value> kept;
    FailureOr<Value> out =
        lowerAttention(rewriter, attention, remap(rewriter, chain->residual),
                       op->getResult(0).getType(), kept);
    if (failed(out))
      return failure();
    // The attention's reserve (when it has one) becomes the kept buffers.
    SmallVector<SmallVector<Value>> replacements;
    if (attention != op) {
      rewriter.replaceOp(op, *out);
      replacements.push_back({});
    } else {
      replacements.push_back({*out});
    }
    if (attention.getReserve())
      replacements.push_back(kept);
    rewriter.replaceOpWithMultiple(attention, std::move(replacements));
    return success();
  }
};

} // namespace

void nncc::populateAttentionToNNKPatterns(const TypeConverter &converter,
                                          RewritePatternSet &patterns) {
  patterns.add<AttentionLowering>(converter, patterns.getContext());
}
