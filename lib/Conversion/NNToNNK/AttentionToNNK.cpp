//===- AttentionToNNK.cpp - Attention: projections + fused core -*- C++ -*-===//
//
// nn.attention -> nnk.gemm (packed in-projection [B, T, 3A] for heads A
// wide in all; for LSH [B, T, 2A], for Longformer's convention [B, T, 6A]) ->
// nnk.flash_attention / nnk.banded_attention /
// nnk.lsh_attention -> nnk.gemm (out-projection with bias, plus the
// residual when the attention's single user adds one). A training forward
// whose `reserve` its gradient reads also writes the log-sum-exp; the
// reserve maps to the packed projection, the core's output and it (1:N).
// nn.attention_grad: the core's backward (nnk.attention_grad) between the
// out- and in-projections' gradient GEMMs.
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

/// nn.attention_grad: with a reserve, the forward's packed projection, core
/// output and log-sum-exp (its 1:N conversion); without, recompute the
/// packed projection. Then the core's backward (nnk.attention_grad, which
/// recomputes the core's output on the way when it was not kept), the
/// out-projection grads and the in-projection grads (GEMMs).
struct AttentionGradLowering : OpConversionPattern<nn::AttentionGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::AttentionGradOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto xType = cast<nn::TensorType>(op.getX().getType());
    nncc::Dim B = xType.getDim(0), T = xType.getDim(1), E = xType.getDim(2);
    nncc::Dim A = op.getHeadsWidth();
    Attribute kind = op.getKind();
    int64_t packs = cast<nn::AttentionKindAttrInterface>(kind).getNumInputProjections();
    MLIRContext *ctx = op.getContext();
    Type elt = xType.getElementType();
    auto buf = [&](ArrayRef<nncc::Dim> dims) {
      return nnk::BufferType::get(ctx, dims, elt);
    };
    Value x = single(adaptor.getX()), wIn = single(adaptor.getInProjWeight()),
          bIn = single(adaptor.getInProjBias()),
          wOut = single(adaptor.getOutProjWeight()),
          bOut = single(adaptor.getOutProjBias()),
          mask = single(adaptor.getKeyPaddingMask()),
          rot = single(adaptor.getRotations()),
          globalMask = single(adaptor.getGlobalMask()), dy = single(adaptor.getDy());
    // The forward's packed projection, output and log-sum-exp, or the
    // projection recomputed (the core's backward recomputes the rest).
    Value savedOut, savedLse;
    FailureOr<Value> qkv, core;
    if (ValueRange kept = adaptor.getReserve(); !kept.empty()) {
      if (kept.size() != 3)
        return op.emitError("expected the reserve as 3 buffers, got ")
               << kept.size();
      qkv = kept[0];
      core = savedOut = kept[1];
      savedLse = kept[2];
    } else {
      qkv = emitGemm(rewriter, op, buf({B, T, A.scaled(packs)}), x, wIn, bIn,
                     Value(), nnk::Activation::none, 0.01);
      core = allocBuffer(rewriter, op, buf({B, T, A}));
    }
    if (failed(qkv) || failed(core))
      return failure();
    int64_t heads = op.getNumHeads();
    bool causal = op.getCausal();
    double dropout = op.getDropout();
    nnk::AttentionKind coreKind = nnk::AttentionKind::dense;
    int64_t window = 0, dilation = 1, hashes = 0, chunk = 0, before = 1, after = 0;
    int64_t padToMultiple = 0, padAbove = 0;
    StringRef convention = "hf", dilatedConvention = "nncc";
    ArrayRef<int64_t> global;
    if (auto d = dyn_cast<nn::DilatedAttentionAttr>(kind)) {
      coreKind = nnk::AttentionKind::dilated;
      window = d.getWindow();
      dilation = d.getDilation();
      global = d.getGlobal();
      dilatedConvention = d.getConvention();
    } else if (auto l = dyn_cast<nn::LshAttentionAttr>(kind)) {
      coreKind = nnk::AttentionKind::lsh;
      hashes = l.getHashes();
      chunk = l.getChunk();
      convention = l.getConvention();
      padToMultiple = l.getPadToMultiple();
      padAbove = l.getPadAbove();
    } else if (auto local = dyn_cast<nn::LocalAttentionAttr>(kind)) {
      coreKind = nnk::AttentionKind::local;
      chunk = local.getChunk();
      before = local.getBefore();
      after = local.getAfter();
      padToMultiple = local.getPadToMultiple();
      padAbove = local.getPadAbove();
    } else if (!isa<nn::DenseAttentionAttr>(kind)) {
      return op.emitError("unsupported attention kind ") << kind;
    }
    // Out-projection y = core · W_outᵀ + b_out: dcore = dy · W_out feeds the
    // core's backward; core (kept, or recomputed by that backward) gives
    // dW_out = dyᵀ · core.
    FailureOr<Value> dCore = allocBuffer(rewriter, op, buf({B, T, A}));
    FailureOr<Value> dqkv = allocBuffer(rewriter, op, (*qkv).getType());
    if (failed(dCore) || failed(dqkv))
      return failure();
    nnk::MatmulOp::create(rewriter, loc, dy, wOut, *dCore);
    nnk::AttentionGradOp::create(rewriter, loc, *qkv, mask, rot, globalMask, *dCore,
                                 savedOut, savedLse, *dqkv,
                                 savedOut ? Value() : *core, coreKind, heads,
                                 causal, 0.0, window, dilation, global, hashes,
                                 chunk, op.getSeed(), dropout, convention,
                                 dilatedConvention, before, after, padToMultiple, padAbove);
    SmallVector<Value> dparams;
    auto wOutT = cast<nnk::BufferType>(wOut.getType());
    FailureOr<Value> dWout = allocBuffer(rewriter, op, wOutT);
    FailureOr<Value> dx = allocBuffer(rewriter, op, buf({B, T, E}));
    FailureOr<Value> dWin = allocBuffer(rewriter, op, wIn.getType());
    if (failed(dWout) || failed(dx) || failed(dWin))
      return failure();
    nnk::LinearWeightGradOp::create(rewriter, loc, dy, *core, *dWout);
    Value dbOut;
    if (bOut) {
      FailureOr<Value> b = allocBuffer(rewriter, op, bOut.getType());
      if (failed(b))
        return failure();
      nnk::ReduceToShapeOp::create(rewriter, loc, dy, *b);
      dbOut = *b;
    }
    nnk::MatmulOp::create(rewriter, loc, *dqkv, wIn, *dx);
    nnk::LinearWeightGradOp::create(rewriter, loc, *dqkv, x, *dWin);
    dparams.push_back(*dWin);
    if (bIn) {
      FailureOr<Value> b = allocBuffer(rewriter, op, bIn.getType());
      if (failed(b))
        return failure();
      nnk::ReduceToShapeOp::create(rewriter, loc, *dqkv, *b);
      dparams.push_back(*b);
    }
    dparams.push_back(*dWout);
    if (dbOut)
      dparams.push_back(dbOut);
    SmallVector<Value> results{*dx};
    results.append(dparams);
    if (results.size() != op->getNumResults())
      return op.emitError("nn.attention_grad: unexpected number of results");
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void nncc::populateAttentionToNNKPatterns(const TypeConverter &converter,
                                          RewritePatternSet &patterns) {
  patterns.add<AttentionLowering>(converter, patterns.getContext());
  patterns.add<AttentionGradLowering>(converter, patterns.getContext());
}
