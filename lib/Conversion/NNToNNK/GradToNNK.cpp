//===- GradToNNK.cpp - Backward ops of @forward_backward -> nnk -*- C++ -*-===//
//
// The ops nncc-autodiff adds (docs/autodiff.md): residual markers vanish
// (nn.save is the identity on buffers; a nnk.boundary after the last one
// splits forward_train from backward), helpers become small kernels or
// nnk.elementwise (activation derivatives), linear weight gradients one
// GEMM with a transposed operand, and each fused backward op its own nnk
// op (recurrent stacks, attention cores with their projections as GEMMs).
//
//===----------------------------------------------------------------------===//

#include "PatternHelpers.h"
#include "nncc/Kernels/RecurrentMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::conv;

namespace {

/// Allocates one buffer per result of `op` (all results).
FailureOr<SmallVector<Value>> allocResults(ConversionPatternRewriter &rewriter,
                                           Operation *op) {
  SmallVector<Value> outs;
  for (Value r : op->getResults()) {
    FailureOr<Value> b = allocBuffer(rewriter, op, r.getType());
    if (failed(b))
      return failure();
    outs.push_back(*b);
  }
  return outs;
}

template <typename NNOp>
struct SimpleGrad : OpConversionPattern<NNOp> {
  using Fn = std::function<LogicalResult(ConversionPatternRewriter &, NNOp,
                                         typename NNOp::Adaptor, ArrayRef<Value>)>;
  SimpleGrad(const TypeConverter &c, MLIRContext *ctx, Fn fn)
      : OpConversionPattern<NNOp>(c, ctx), fn(std::move(fn)) {}
  LogicalResult
  matchAndRewrite(NNOp op, typename NNOp::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<SmallVector<Value>> outs = allocResults(rewriter, op);
    if (failed(outs) || failed(fn(rewriter, op, adaptor, *outs)))
      return failure();
    rewriter.replaceOp(op, *outs);
    return success();
  }
  Fn fn;
};

template <typename NNOp, typename F>
void addGrad(const TypeConverter &c, RewritePatternSet &patterns, F f) {
  patterns.add<SimpleGrad<NNOp>>(c, patterns.getContext(),
                                 typename SimpleGrad<NNOp>::Fn(f));
}

struct SaveLowering : OpConversionPattern<nn::SaveOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::SaveOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getValue());
    return success();
  }
};

/// nn.activation_grad -> nnk.elementwise(x, dy) with the derivative.
struct ActivationGradLowering : OpConversionPattern<nn::ActivationGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::ActivationGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<Value> out = allocBuffer(rewriter, op, op.getType());
    if (failed(out))
      return failure();
    Location loc = op.getLoc();
    auto ew = nnk::ElementwiseOp::create(
        rewriter, loc, ValueRange{adaptor.getX(), adaptor.getDy()}, *out);
    Type elt = cast<nnk::BufferType>(adaptor.getX().getType()).getElementType();
    OpBuilder::InsertionGuard guard(rewriter);
    Block *body = rewriter.createBlock(&ew.getBody(), ew.getBody().end(),
                                       {elt, elt}, {loc, loc});
    Value x = body->getArgument(0), dy = body->getArgument(1);
    auto c = [&](double v) -> Value {
      return createScalarConstant(rewriter, loc, elt, v);
    };
    auto mul = [&](Value a, Value b) -> Value {
      return arith::MulFOp::create(rewriter, loc, a, b);
    };
    auto add = [&](Value a, Value b) -> Value {
      return arith::AddFOp::create(rewriter, loc, a, b);
    };
    Value result;
    StringRef kind = op.getKind();
    if (kind == "relu" || kind == "leaky_relu") {
      Value pos = arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::OGT,
                                        x, c(0.0));
      Value neg = kind == "relu" ? c(0.0) : mul(dy, c(op.getAlpha()));
      result = arith::SelectOp::create(rewriter, loc, pos, dy, neg);
    } else if (kind == "gelu" &&
               op.getApproximate() == nn::GeluApproximation::none) {
      // Φ(x) + x φ(x)
      Value cdf = mul(c(0.5), add(c(1.0), math::ErfOp::create(
                                               rewriter, loc, mul(x, c(M_SQRT1_2)))));
      Value pdf = mul(c(0.3989422804014327),
                      math::ExpOp::create(rewriter, loc,
                                          mul(c(-0.5), mul(x, x))));
      result = mul(dy, add(cdf, mul(x, pdf)));
    } else if (kind == "gelu") {
      // 0.5(1 + t) + 0.5 x (1 − t²) k (1 + 3·0.044715 x²), t = tanh(k(x + 0.044715 x³))
      const double k = 0.7978845608028654;
      Value x2 = mul(x, x);
      Value inner = mul(c(k), add(x, mul(c(0.044715), mul(x2, x))));
      Value t = math::TanhOp::create(rewriter, loc, inner);
      Value one_t2 = arith::SubFOp::create(rewriter, loc, c(1.0), mul(t, t));
      Value dinner = mul(c(k), add(c(1.0), mul(c(3 * 0.044715), x2)));
      Value d = add(mul(c(0.5), add(c(1.0), t)),
                    mul(mul(c(0.5), x), mul(one_t2, dinner)));
      result = mul(dy, d);
    } else {
      return op.emitError("nn.activation_grad: unknown kind '") << kind << "'";
    }
    nnk::YieldOp::create(rewriter, loc, ValueRange{result});
    rewriter.replaceOp(op, *out);
    return success();
  }
};

/// Training dropout: the counter-based mask (same seed in the backward's
/// nn.dropout of the adjoint, so the same mask).
struct DropoutLowering : OpConversionPattern<nn::DropoutOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::DropoutOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.getP() == 0.0) {
      rewriter.replaceOp(op, adaptor.getX());
      return success();
    }
    FailureOr<Value> out = allocBuffer(rewriter, op, op.getType());
    if (failed(out))
      return failure();
    nnk::DropoutOp::create(rewriter, op.getLoc(), adaptor.getX(), *out, Value(),
                           op.getP(), op.getSeed());
    rewriter.replaceOp(op, *out);
    return success();
  }
};

/// nn.stop_gradient only matters to autodiff: its buffer is its operand's.
struct StopGradientLowering : OpConversionPattern<nn::StopGradientOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::StopGradientOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getX());
    return success();
  }
};

/// Training zoneout: out = mask ? prev : new with the counter-based mask
/// (the backward's nn.zoneout ops of the adjoint carry the same seed, so the
/// same mask routes it).
struct ZoneoutLowering : OpConversionPattern<nn::ZoneoutOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::ZoneoutOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.getP() == 0.0) {
      rewriter.replaceOp(op, adaptor.getNewState());
      return success();
    }
    FailureOr<Value> out = allocBuffer(rewriter, op, op.getType());
    if (failed(out))
      return failure();
    nnk::ZoneoutOp::create(rewriter, op.getLoc(), adaptor.getNewState(),
                           adaptor.getPrevState(), *out, op.getP(),
                           op.getSeed());
    rewriter.replaceOp(op, *out);
    return success();
  }
};

double zoneoutOf(nn::LSTMGradOp op) { return op.getZoneout(); }
template <typename Op> double zoneoutOf(Op) { return 0.0; }
int64_t seedOf(nn::LSTMGradOp op) { return op.getSeed(); }
template <typename Op> int64_t seedOf(Op) { return 0; }

Value c0Of(nn::LSTMGradOp::Adaptor a) { return a.getC0(); }
template <typename A> Value c0Of(A) { return {}; }
Value dcnOf(nn::LSTMGradOp::Adaptor a) { return a.getDcN(); }
template <typename A> Value dcnOf(A) { return {}; }

template <typename NNOp>
struct RecurrentGradLowering : OpConversionPattern<NNOp> {
  using OpConversionPattern<NNOp>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(NNOp op, typename NNOp::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<SmallVector<Value>> outs = allocResults(rewriter, op);
    if (failed(outs))
      return failure();
    bool lstm = cellOf(op) == nnk::Cell::lstm;
    unsigned nState = lstm ? 3 : 2;
    ArrayRef<Value> o = *outs;
    // LSTM zoneout: the kernel regenerates the forward's masks from the
    // seed (nn-inference-semantics zeroes it outside training).
    nnk::RecurrentGradOp::create(
        rewriter, op.getLoc(), adaptor.getX(), adaptor.getH0(), c0Of(adaptor),
        adaptor.getLengths(), adaptor.getWeights(),
        /*the forward's nnk.recurrent_forward reserve, or none: recompute*/
        adaptor.getReserve(), adaptor.getDy(), adaptor.getDhN(), dcnOf(adaptor),
        o[0], o[1], lstm ? o[2] : Value(), o.drop_front(nState), cellOf(op),
        op.getHiddenSize(), op.getNumLayers(), op.getBidirectional(),
        op.getHasBias(), zoneoutOf(op), seedOf(op),
        /*BPTT checkpointing reads the checkpointed reserve*/
        !adaptor.getReserve() ? IntegerAttr() : op.getCheckpointEveryAttr(),
        !adaptor.getReserve() ? IntegerAttr()
                              : op.getCheckpointSnapshotsAttr());
    rewriter.replaceOp(op, *outs);
    return success();
  }
};

/// The single value an operand converted to, or null for an absent one.
Value single(ValueRange values) {
  return values.empty() ? Value() : values.front();
}

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

Value cOf(nn::LSTMCellGradOp::Adaptor a) { return a.getC(); }
template <typename A> Value cOf(A) { return {}; }
Value dcNextOf(nn::LSTMCellGradOp::Adaptor a) { return a.getDcNext(); }
template <typename A> Value dcNextOf(A) { return {}; }

/// nn.*_cell_grad: xproj = x·W_ihᵀ + b_ih (GEMM), the cell's backward
/// (nnk.recurrent_cell_grad -> nncc_rnn_cell_backward), then
/// dx = dxproj·W_ih, dW_ih = dxprojᵀ·x, db_ih = Σ dxproj.
template <typename NNOp>
struct CellGradLowering : OpConversionPattern<NNOp> {
  using OpConversionPattern<NNOp>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(NNOp op, typename NNOp::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<SmallVector<Value>> outs = allocResults(rewriter, op);
    if (failed(outs))
      return failure();
    Location loc = op.getLoc();
    nnk::Cell cell = cellOf(op);
    bool lstm = cell == nnk::Cell::lstm;
    unsigned nState = lstm ? 3 : 2;
    ArrayRef<Value> o = *outs;
    Value x = adaptor.getX(), wih = adaptor.getWIh(), bih = adaptor.getBIh(),
          bhh = adaptor.getBHh();
    auto xT = cast<nnk::BufferType>(x.getType());
    auto wT = cast<nnk::BufferType>(wih.getType());
    auto projT = xT.withDims({xT.getDim(0), wT.getDim(0)});
    FailureOr<Value> xproj = emitGemm(rewriter, op, projT, x, wih, bih, Value(),
                                      nnk::Activation::none, 0.01);
    FailureOr<Value> dxproj = allocBuffer(rewriter, op, projT);
    if (failed(xproj) || failed(dxproj))
      return failure();
    bool bias = static_cast<bool>(bih);
    if (o.size() != nState + nncc::kernels::rnn_weights_per_cell(bias))
      return op.emitError("unexpected number of results");
    nnk::RecurrentCellGradOp::create(
        rewriter, loc, *xproj, adaptor.getH(), cOf(adaptor), adaptor.getWHh(),
        bhh, adaptor.getDhNext(), dcNextOf(adaptor), *dxproj, o[1],
        lstm ? o[2] : Value(), o[nState + 1], bias ? o[nState + 3] : Value(),
        cell);
    nnk::MatmulOp::create(rewriter, loc, *dxproj, wih, o[0]);
    nnk::LinearWeightGradOp::create(rewriter, loc, *dxproj, x, o[nState]);
    if (bias)
      nnk::ReduceToShapeOp::create(rewriter, loc, *dxproj, o[nState + 2]);
    rewriter.replaceOp(op, *outs);
    return success();
  }
};

/// Moves a region whose nn.yield gives k values into `to` and appends k
/// destination block arguments (the yield's value types as buffers); the
/// nn.yield lowering copies into them (ControlToNNK.cpp).
LogicalResult moveRegionWithDests(ConversionPatternRewriter &rewriter,
                                  Region &from, Region &to,
                                  const TypeConverter *converter,
                                  Type timeType = {}) {
  if (!from.hasOneBlock())
    return failure();
  Block &src = from.front();
  SmallVector<Type> args, dests;
  for (BlockArgument a : src.getArguments())
    args.push_back(toBuffer(a.getType()));
  // ODE-RNN dynamics see each row's time, [B, 1] (as nnk.ode_rnn).
  if (timeType && !args.empty())
    args[0] = timeType;
  for (Value v : src.getTerminator()->getOperands())
    dests.push_back(toBuffer(v.getType()));
  rewriter.inlineRegionBefore(from, to, to.end());
  Block &block = to.front();
  TypeConverter::SignatureConversion sig(block.getNumArguments());
  for (unsigned i = 0; i < block.getNumArguments(); ++i)
    sig.addInputs(i, args[i]);
  sig.addInputs(dests);
  rewriter.applySignatureConversion(&block, sig, converter);
  return success();
}

struct ODESolveGradLowering : OpConversionPattern<nn::ODESolveGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::ODESolveGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<SmallVector<Value>> outs = allocResults(rewriter, op);
    if (failed(outs))
      return failure();
    auto g = nnk::ODESolveGradOp::create(
        rewriter, op.getLoc(), adaptor.getH(), adaptor.getT0(), adaptor.getT1(),
        adaptor.getA1(), (*outs)[0], ArrayRef<Value>(*outs).drop_front(),
        solverOf(op.getMethod()), op.getSteps(), op.getRtol(), op.getAtol(),
        op.getAdjoint(), op.getMaxSteps());
    if (failed(moveRegionWithDests(rewriter, op.getDynamics(), g.getDynamics(),
                                   getTypeConverter())) ||
        failed(moveRegionWithDests(rewriter, op.getVjp(), g.getVjp(),
                                   getTypeConverter())))
      return op.emitError("unexpected region signature");
    rewriter.replaceOp(op, *outs);
    return success();
  }
};

struct ODERNNGradLowering : OpConversionPattern<nn::ODERNNGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::ODERNNGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<SmallVector<Value>> outs = allocResults(rewriter, op);
    if (failed(outs))
      return failure();
    ArrayRef<Value> o = *outs;
    auto xType = cast<nnk::BufferType>(adaptor.getX().getType());
    Type tType = xType.withDims({xType.getDim(0), nncc::Dim::getStatic(1)});
    auto g = nnk::ODERNNGradOp::create(
        rewriter, op.getLoc(), adaptor.getX(), adaptor.getTimes(),
        adaptor.getH0(), adaptor.getHs(), adaptor.getDhs(), o[0], o[1],
        o.drop_front(2), op.getHiddenSize(), op.getDynamicsParams().size(),
        solverOf(op.getMethod()), op.getSteps(), op.getRtol(), op.getAtol(),
        op.getAdjoint(), op.getMaxSteps());
    if (failed(moveRegionWithDests(rewriter, op.getDynamics(), g.getDynamics(),
                                   getTypeConverter(), tType)) ||
        failed(moveRegionWithDests(rewriter, op.getDynamicsVjp(),
                                   g.getDynamicsVjp(), getTypeConverter(), tType)) ||
        failed(moveRegionWithDests(rewriter, op.getCellVjp(), g.getCellVjp(),
                                   getTypeConverter())))
      return op.emitError("unexpected region signature");
    rewriter.replaceOp(op, *outs);
    return success();
  }
};

using RW = ConversionPatternRewriter;

/// Pretraining's token ops (active in inference too) and axial positions.
void populateTokenPatterns(const TypeConverter &converter,
                           RewritePatternSet &patterns) {
  patterns.add<StopGradientLowering>(converter, patterns.getContext());
  addGrad<nn::MaskTokensOp>(
      converter, patterns,
      [](RW &r, nn::MaskTokensOp op, nn::MaskTokensOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        nnk::MaskTokensOp::create(r, op.getLoc(), a.getTokens(), o[0], o[1],
                                  op.getP(), op.getMaskId(), op.getSeed());
        return success();
      });
  addGrad<nn::SampleOp>(converter, patterns,
                        [](RW &r, nn::SampleOp op, nn::SampleOp::Adaptor a,
                           ArrayRef<Value> o) -> LogicalResult {
                          nnk::SampleOp::create(r, op.getLoc(), a.getLogits(),
                                                a.getRows(), o[0], op.getSeed());
                          return success();
                        });
  addGrad<nn::LinearSampleOp>(
      converter, patterns,
      [](RW &r, nn::LinearSampleOp op, nn::LinearSampleOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        nnk::LinearSampleOp::create(r, op.getLoc(), a.getX(), a.getWeight(),
                                    a.getBias(), a.getRows(), o[0], op.getSeed());
        return success();
      });
  addGrad<nn::AxialPositionOp>(
      converter, patterns,
      [](RW &r, nn::AxialPositionOp op, nn::AxialPositionOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        nnk::AxialPositionOp::create(r, op.getLoc(), a.getX(), a.getRows(),
                                     a.getCols(), o[0]);
        return success();
      });
  addGrad<nn::AxialPositionGradOp>(
      converter, patterns,
      [](RW &r, nn::AxialPositionGradOp op, nn::AxialPositionGradOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        nnk::AxialPositionGradOp::create(r, op.getLoc(), a.getDy(), o[0], o[1]);
        return success();
      });
}

/// The adjoints of reductions, slices and zeros; topk's two outs.
void populateReductionGradPatterns(const TypeConverter &converter,
                                   RewritePatternSet &patterns) {
  addGrad<nn::ZerosOp>(converter, patterns,
                       [](RW &r, nn::ZerosOp op, nn::ZerosOp::Adaptor,
                          ArrayRef<Value> o) -> LogicalResult {
                         nnk::FillOp::create(r, op.getLoc(), o[0], 0.0);
                         return success();
                       });
  addGrad<nn::ReduceToShapeOp>(
      converter, patterns,
      [](RW &r, nn::ReduceToShapeOp op, nn::ReduceToShapeOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        nnk::ReduceToShapeOp::create(r, op.getLoc(), a.getX(), o[0]);
        return success();
      });
  addGrad<nn::MaxGradOp>(
      converter, patterns,
      [](RW &r, nn::MaxGradOp op, nn::MaxGradOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        int64_t rank = cast<nn::TensorType>(op.getX().getType()).getRank();
        nnk::MaxGradOp::create(r, op.getLoc(), a.getDy(), a.getX(), o[0],
                               *nn::normalizeAxis(op.getAxis(), rank));
        return success();
      });
  // topk's two outs (values, i32 indices) and its adjoint, axes normalised.
  addGrad<nn::TopkOp>(
      converter, patterns,
      [](RW &r, nn::TopkOp op, nn::TopkOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        int64_t rank = cast<nn::TensorType>(op.getX().getType()).getRank();
        nnk::TopkOp::create(r, op.getLoc(), a.getX(), o[0], o[1],
                            *nn::normalizeAxis(op.getAxis(), rank), op.getK());
        return success();
      });
  addGrad<nn::TopkGradOp>(
      converter, patterns,
      [](RW &r, nn::TopkGradOp op, nn::TopkGradOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        int64_t rank = cast<nn::TensorType>(op.getDy().getType()).getRank();
        nnk::TopkGradOp::create(r, op.getLoc(), a.getDy(), a.getIndices(), o[0],
                                *nn::normalizeAxis(op.getAxis(), rank));
        return success();
      });
  addGrad<nn::ReduceGradOp>(
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
  addGrad<nn::SliceGradOp>(
      converter, patterns,
      [](RW &r, nn::SliceGradOp op, nn::SliceGradOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        nnk::SliceGradOp::create(r, op.getLoc(), a.getDy(), o[0], op.getStarts(),
                                 op.getSteps(), op.getSqueeze());
        return success();
      });
}

/// The weight and input gradients of linear, embedding, layer_norm and the losses.
void populateLayerGradPatterns(const TypeConverter &converter,
                               RewritePatternSet &patterns) {
  addGrad<nn::LinearWeightGradOp>(
      converter, patterns,
      [](RW &r, nn::LinearWeightGradOp op, nn::LinearWeightGradOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        nnk::LinearWeightGradOp::create(r, op.getLoc(), a.getDy(), a.getX(), o[0]);
        return success();
      });
  addGrad<nn::EmbeddingGradOp>(
      converter, patterns,
      [](RW &r, nn::EmbeddingGradOp op, nn::EmbeddingGradOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        nnk::EmbeddingGradOp::create(r, op.getLoc(), a.getIndices(), a.getDy(),
                                     o[0], op.getPaddingIdx());
        return success();
      });
  addGrad<nn::LayerNormGradOp>(
      converter, patterns,
      [](RW &r, nn::LayerNormGradOp op, nn::LayerNormGradOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        nnk::LayerNormGradOp::create(r, op.getLoc(), a.getX(), a.getDy(),
                                     a.getWeight(), o[0],
                                     o.size() > 1 ? o[1] : Value(), op.getEps());
        return success();
      });
  addGrad<nn::MSEGradOp>(converter, patterns,
                         [](RW &r, nn::MSEGradOp op, nn::MSEGradOp::Adaptor a,
                            ArrayRef<Value> o) -> LogicalResult {
                           nnk::LossGradOp::create(
                               r, op.getLoc(), a.getPred(), a.getTarget(),
                               a.getDloss(), Value(), o[0], nnk::LossKind::mse, -100);
                           return success();
                         });
  addGrad<nn::CrossEntropyGradOp>(
      converter, patterns,
      [](RW &r, nn::CrossEntropyGradOp op, nn::CrossEntropyGradOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        nnk::LossGradOp::create(r, op.getLoc(), a.getLogits(), a.getTarget(),
                                a.getDloss(), Value(), o[0],
                                nnk::LossKind::cross_entropy, op.getIgnoreIndex());
        return success();
      });
  addGrad<nn::BCEWithLogitsGradOp>(
      converter, patterns,
      [](RW &r, nn::BCEWithLogitsGradOp op, nn::BCEWithLogitsGradOp::Adaptor a,
         ArrayRef<Value> o) -> LogicalResult {
        nnk::LossGradOp::create(r, op.getLoc(), a.getLogits(), a.getTarget(),
                                a.getDloss(), a.getPosWeight(), o[0],
                                nnk::LossKind::bce_with_logits, -100);
        return success();
      });
}

} // namespace

void nncc::populateGradToNNKPatterns(const TypeConverter &converter,
                                     RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<SaveLowering, ActivationGradLowering, DropoutLowering,
               ZoneoutLowering,
               AttentionGradLowering, RecurrentGradLowering<nn::RNNGradOp>,
               RecurrentGradLowering<nn::LSTMGradOp>,
               RecurrentGradLowering<nn::GRUGradOp>,
               CellGradLowering<nn::RNNCellGradOp>,
               CellGradLowering<nn::LSTMCellGradOp>,
               CellGradLowering<nn::GRUCellGradOp>, ODESolveGradLowering,
               ODERNNGradLowering>(converter, ctx);
  populateTokenPatterns(converter, patterns);
  populateReductionGradPatterns(converter, patterns);
  populateLayerGradPatterns(converter, patterns);
}
