//===- RecurrentToNNK.cpp - Recurrent layers and cells ----------*- C++ -*-===//
//
// Per layer l and direction d: one nnk.gemm for the input projection of all
// time steps (x · W_ihᵀ + b_ih), then one persistent nnk.recurrent_scan
// that loops over time (h · W_hhᵀ + b_hh + gate math), writing its
// direction's columns of the layer output and its entry of h_n / c_n.
// A stack whose `reserve` result its gradient reads becomes one
// nnk.recurrent_forward that also keeps the layer outputs and gates in the
// buffer the reserve maps to. The BPTT backward of a stack is one
// nnk.recurrent_grad, of a cell its GEMMs around one
// nnk.recurrent_cell_grad; training zoneout is nnk.zoneout.
//
//===----------------------------------------------------------------------===//

#include "PatternHelpers.h"
#include "nncc/Kernels/RecurrentMath.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::conv;

int64_t conv::reserveWidth(nnk::Cell cell, int64_t hidden, int64_t layers,
                           int64_t directions,
                           std::optional<int64_t> checkpointEvery,
                           bool revolve) {
  const int64_t ldh = layers * directions * hidden;
  if (revolve) // the binomial schedule: the layer outputs only
    return ldh;
  if (checkpointEvery) {
    // The layer outputs, then (LSTM) L·D·⌊(T-1)/k⌋·B·H checkpointed cell
    // states, at most B·T·⌈L·D·H/k⌉ (nncc_rnn_reserve_ckpt_size).
    const int64_t k = *checkpointEvery;
    return ldh + (cell == nnk::Cell::lstm ? (ldh + k - 1) / k : 0);
  }
  int64_t slots = kernels::cell_saved_slots(static_cast<int>(cell));
  return ldh * (1 + slots);
}

namespace {

template <typename NNOp>
LogicalResult recurrentReserveTypes(NNOp op, SmallVectorImpl<Type> &types) {
  auto xType = cast<nn::TensorType>(op.getX().getType());
  int64_t width =
      reserveWidth(cellOf(op), op.getHiddenSize(), op.getNumLayers(),
                   op.getBidirectional() ? 2 : 1, op.getCheckpointEvery(),
                   op.getCheckpointSnapshots().has_value());
  types.push_back(nnk::BufferType::get(
      op.getContext(),
      {xType.getDim(0), xType.getDim(1), nncc::Dim::getStatic(width)},
      xType.getElementType()));
  return success();
}

} // namespace

LogicalResult conv::getReserveBufferTypes(Value reserve,
                                          SmallVectorImpl<Type> &types) {
  Operation *def = reserve.getDefiningOp();
  if (auto op = dyn_cast_or_null<nn::RNNOp>(def))
    return recurrentReserveTypes(op, types);
  if (auto op = dyn_cast_or_null<nn::LSTMOp>(def))
    return recurrentReserveTypes(op, types);
  if (auto op = dyn_cast_or_null<nn::GRUOp>(def))
    return recurrentReserveTypes(op, types);
  if (auto op = dyn_cast_or_null<nn::AttentionOp>(def)) {
    auto xType = cast<nn::TensorType>(op.getX().getType());
    nncc::Dim B = xType.getDim(0), T = xType.getDim(1), A = op.getHeadsWidth();
    int64_t packs =
        cast<nn::AttentionKindAttrInterface>(op.getKind()).getNumInputProjections();
    auto buf = [&](ArrayRef<nncc::Dim> dims) -> Type {
      return nnk::BufferType::get(op.getContext(), dims,
                                  xType.getElementType());
    };
    types.push_back(buf({B, T, A.scaled(packs)}));
    types.push_back(buf({B, T, A}));
    types.push_back(buf({B, nncc::Dim::getStatic(op.getNumHeads()), T}));
    return success();
  }
  return failure();
}

namespace {

Value c0Of(nn::LSTMOp::Adaptor a) { return a.getC0(); }
template <typename A> Value c0Of(A) { return {}; }
double zoneoutOf(nn::LSTMOp op) { return op.getZoneout(); }
template <typename Op> double zoneoutOf(Op) { return 0.0; }
int64_t seedOf(nn::LSTMOp op) { return op.getSeed(); }
template <typename Op> int64_t seedOf(Op) { return 0; }

template <typename NNOp>
struct RecurrentLayerLowering : OpConversionPattern<NNOp> {
  using OpConversionPattern<NNOp>::OpConversionPattern;
  using OpAdaptor = typename NNOp::Adaptor;

  LogicalResult
  matchAndRewrite(NNOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    nnk::Cell cell = cellOf(op);
    int64_t H = op.getHiddenSize(), L = op.getNumLayers();
    int64_t D = op.getBidirectional() ? 2 : 1, G = nnk::getGateCount(cell);
    bool hasBias = op.getHasBias();
    int64_t perDir = nncc::kernels::rnn_weights_per_cell(hasBias);
    ValueRange weights = adaptor.getWeights();
    if ((int64_t)weights.size() != L * D * perDir)
      return op.emitError("expected ") << L * D * perDir << " weights, got "
                                       << weights.size();
    auto xType = cast<nn::TensorType>(op.getX().getType());
    nncc::Dim B = xType.getDim(0), T = xType.getDim(1);
    Type elt = xType.getElementType();
    MLIRContext *ctx = op.getContext();
    auto buf = [&](ArrayRef<nncc::Dim> dims) {
      return nnk::BufferType::get(ctx, dims, elt);
    };

    // Final state buffers only when used.
    Value hN, cN;
    if (!op->getResult(1).use_empty()) {
      FailureOr<Value> b = allocBuffer(rewriter, op, op->getResult(1).getType());
      if (failed(b))
        return failure();
      hN = *b;
    }
    bool lstm = cell == nnk::Cell::lstm;
    if (lstm && !op->getResult(2).use_empty()) {
      FailureOr<Value> b = allocBuffer(rewriter, op, op->getResult(2).getType());
      if (failed(b))
        return failure();
      cN = *b;
    }

    // The results: y, h_n (, c_n), then the reserve if the op has one.
    auto replace = [&](Value y, Value reserve) {
      SmallVector<Value> results{y, hN};
      if (lstm)
        results.push_back(cN);
      if (op.getReserve())
        results.push_back(reserve);
      rewriter.replaceOp(op, results);
    };

    if (Value used = usedReserveOf(op.getReserve())) {
      // Training forward whose backward reads the reserve.
      SmallVector<Type> reserveTypes;
      if (failed(getReserveBufferTypes(used, reserveTypes)))
        return op.emitError("cannot lower the reserve");
      FailureOr<Value> y = allocBuffer(rewriter, op, op.getY().getType());
      FailureOr<Value> reserve = allocBuffer(rewriter, op, reserveTypes[0]);
      if (failed(y) || failed(reserve))
        return failure();
      nnk::RecurrentForwardOp::create(
          rewriter, loc, adaptor.getX(), adaptor.getH0(), c0Of(adaptor),
          adaptor.getLengths(), weights, *y, hN, cN, *reserve, cell, H, L,
          D == 2, hasBias, zoneoutOf(op), seedOf(op),
          op.getCheckpointEveryAttr(), op.getCheckpointSnapshotsAttr());
      replace(*y, *reserve);
      return success();
    }

    Value input = adaptor.getX(), y;
    for (int64_t l = 0; l < L; ++l) {
      FailureOr<Value> layerOut =
          allocBuffer(rewriter, op, buf({B, T, nncc::Dim::getStatic(D * H)}));
      if (failed(layerOut))
        return failure();
      for (int64_t d = 0; d < D; ++d) {
        int64_t base = (l * D + d) * perDir;
        Value wIh = weights[base], wHh = weights[base + 1];
        Value bIh = hasBias ? weights[base + 2] : Value();
        Value bHh = hasBias ? weights[base + 3] : Value();
        FailureOr<Value> xproj = emitGemm(
            rewriter, op, buf({B, T, nncc::Dim::getStatic(G * H)}), input, wIh,
            bIh, Value(), nnk::Activation::none, 0.01);
        if (failed(xproj))
          return failure();
        nnk::RecurrentScanOp::create(
            rewriter, loc, *xproj, wHh, bHh, adaptor.getH0(), c0Of(adaptor),
            adaptor.getLengths(), *layerOut, hN, cN, cell, H,
            /*reverse=*/d == 1, D, /*state_index=*/l * D + d, zoneoutOf(op),
            seedOf(op));
      }
      input = *layerOut;
      y = *layerOut;
    }
    replace(y, Value());
    return success();
  }
};

Value cOf(nn::LSTMCellOp::Adaptor a) { return a.getC(); }
template <typename A> Value cOf(A) { return {}; }

/// One step: input-projection nnk.gemm + nnk.recurrent_cell.
template <typename NNOp>
struct RecurrentCellLowering : OpConversionPattern<NNOp> {
  using OpConversionPattern<NNOp>::OpConversionPattern;
  using OpAdaptor = typename NNOp::Adaptor;

  LogicalResult
  matchAndRewrite(NNOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    nnk::Cell cell = cellOf(op);
    auto hType = cast<nn::TensorType>(op.getH().getType());
    int64_t G = nnk::getGateCount(cell);
    nncc::Dim gh = hType.getDim(1).scaled(G);
    auto xprojType = nnk::BufferType::get(op.getContext(),
                                          {hType.getDim(0), gh},
                                          hType.getElementType());
    FailureOr<Value> xproj =
        emitGemm(rewriter, op, xprojType, adaptor.getX(), adaptor.getWIh(),
                 adaptor.getBIh(), Value(), nnk::Activation::none, 0.01);
    if (failed(xproj))
      return failure();
    SmallVector<Value> outs;
    for (Value result : op->getResults()) {
      FailureOr<Value> out = allocBuffer(rewriter, op, result.getType());
      if (failed(out))
        return failure();
      outs.push_back(*out);
    }
    nnk::RecurrentCellOp::create(rewriter, op.getLoc(), *xproj, adaptor.getH(),
                                 cOf(adaptor), adaptor.getWHh(),
                                 adaptor.getBHh(), outs[0],
                                 outs.size() > 1 ? outs[1] : Value(), cell);
    rewriter.replaceOp(op, outs);
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
int64_t seedOf(nn::LSTMGradOp op) { return op.getSeed(); }
Value c0Of(nn::LSTMGradOp::Adaptor a) { return a.getC0(); }
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

Value cOf(nn::LSTMCellGradOp::Adaptor a) { return a.getC(); }
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

} // namespace

void nncc::populateRecurrentToNNKPatterns(const TypeConverter &converter,
                                          RewritePatternSet &patterns) {
  patterns.add<RecurrentLayerLowering<nn::RNNOp>,
               RecurrentLayerLowering<nn::LSTMOp>,
               RecurrentLayerLowering<nn::GRUOp>,
               RecurrentCellLowering<nn::RNNCellOp>,
               RecurrentCellLowering<nn::LSTMCellOp>,
               RecurrentCellLowering<nn::GRUCellOp>>(converter,
                                                     patterns.getContext());
  patterns.add<ZoneoutLowering, RecurrentGradLowering<nn::RNNGradOp>,
               RecurrentGradLowering<nn::LSTMGradOp>, RecurrentGradLowering<nn::GRUGradOp>,
               CellGradLowering<nn::RNNCellGradOp>, CellGradLowering<nn::LSTMCellGradOp>,
               CellGradLowering<nn::GRUCellGradOp>>(converter, patterns.getContext());
}
