//===- PatternHelpers.h - Shared helpers of the nn -> nnk patterns -*- C++ -*-===//
//
// Internal to lib/Conversion/NNToNNK. The fusion predicates are pure
// functions of the original nn IR (the conversion driver keeps original ops
// and uses visible until it commits), so legality and patterns agree.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_LIB_CONVERSION_NNTONNK_PATTERNHELPERS_H
#define NNCC_LIB_CONVERSION_NNTONNK_PATTERNHELPERS_H

#include "dialects/NNK/IR/NNKOps.h"
#include "dialects/NN/IR/NNOps.h"
#include "nncc/Conversion/NNToNNK/NNToNNK.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/DialectConversion.h"

#include <optional>

namespace nncc::conv {

/// A scalar float constant of `type` for an elementwise body. A value that
/// `type` cannot hold exactly (1/sqrt(2), 0.044715, ...) is built in f64 and
/// truncated, so that the emitters, which print the constant and cast it to
/// the compiled precision, keep all its digits when real_t is double.
mlir::Value createScalarConstant(mlir::OpBuilder &builder, mlir::Location loc,
                                 mlir::Type type, double value);

/// The nnk solver of an nn ODE method.
inline nnk::ODEMethod solverOf(nn::ODEMethod method) {
  switch (method) {
  case nn::ODEMethod::euler:
    return nnk::ODEMethod::euler;
  case nn::ODEMethod::rk4:
    return nnk::ODEMethod::rk4;
  case nn::ODEMethod::dopri5:
    return nnk::ODEMethod::dopri5;
  }
  llvm_unreachable("unknown ODE method");
}

/// The nnk cell kind of a recurrent layer, a cell, or the gradient op of
/// either (the nonlinearity of rnn, the variant of gru).
template <typename Op> nnk::Cell cellOf(Op op) {
  if constexpr (llvm::is_one_of<Op, nn::RNNOp, nn::RNNCellOp, nn::RNNGradOp,
                                nn::RNNCellGradOp>::value)
    return op.getNonlinearity() == nn::Nonlinearity::relu ? nnk::Cell::rnn_relu
                                                          : nnk::Cell::rnn_tanh;
  else if constexpr (llvm::is_one_of<Op, nn::GRUOp, nn::GRUCellOp, nn::GRUGradOp,
                                     nn::GRUCellGradOp>::value)
    return op.getVariant() == nn::GRUVariant::cho2014 ? nnk::Cell::gru_cho2014
                                                      : nnk::Cell::gru;
  else {
    static_assert(llvm::is_one_of<Op, nn::LSTMOp, nn::LSTMCellOp, nn::LSTMGradOp,
                                  nn::LSTMCellGradOp>::value,
                  "not a recurrent op");
    return nnk::Cell::lstm;
  }
}

/// The buffers an `!nn.reserve` value lowers to, from the forward op that
/// produces it: a stack's single reserve [B, T, reserveWidth] (the
/// nnk.recurrent_forward's `reserve`); attention's packed projection
/// [B, T, packs·E], core output [B, T, E] and log-sum-exp [B, heads, T].
/// Fails for a reserve of any other origin.
mlir::LogicalResult
getReserveBufferTypes(mlir::Value reserve,
                      llvm::SmallVectorImpl<mlir::Type> &types);

/// The reserve result of a forward op when its gradient reads it, else null
/// (no result, or nothing uses it).
inline mlir::Value usedReserveOf(mlir::Value reserve) {
  return reserve && !reserve.use_empty() ? reserve : mlir::Value();
}

/// Elements per (batch, time) position of a stack's reserve: every layer's
/// output, then each layer and direction's saved gates
/// (nncc_rnn_reserve_size / (B·T·elem)); with BPTT checkpointing every k
/// steps, the outputs and, for the LSTM, room for the cell states every k
/// steps: L·D·H + ⌈L·D·H / k⌉ (≥ nncc_rnn_reserve_ckpt_size / (B·T·elem));
/// with the binomial schedule (`revolve`), the outputs only: L·D·H.
int64_t reserveWidth(nnk::Cell cell, int64_t hidden, int64_t layers,
                     int64_t directions,
                     std::optional<int64_t> checkpointEvery = std::nullopt,
                     bool revolve = false);

/// A GEMM with its fused epilogue: start (nn.linear or nn.attention),
/// optional bias add (linear without bias, + [N]), optional activation,
/// optional residual add. `end` is the last op in the chain: the pattern
/// that converts the chain is rooted there.
struct GemmChain {
  mlir::Operation *start = nullptr;
  mlir::Operation *biasAdd = nullptr;
  mlir::Value bias; // the bias operand of biasAdd
  mlir::Operation *act = nullptr;
  mlir::Operation *residualAdd = nullptr;
  mlir::Value residual; // the other operand of residualAdd
  mlir::Operation *end = nullptr;

  bool contains(mlir::Operation *op) const {
    return op == start || op == biasAdd || op == act || op == residualAdd;
  }
};

/// The chain that starts at `start` (nn.linear or nn.attention); std::nullopt
/// for other ops. With withResidual = false the residual step is skipped.
std::optional<GemmChain> computeGemmChain(mlir::Operation *start,
                                          bool withResidual = true);
/// The chain `op` belongs to, if any.
std::optional<GemmChain> findGemmChain(mlir::Operation *op);

/// Activation ops a GEMM epilogue absorbs.
bool isEpilogueActivation(mlir::Operation *op);
/// The nnk activation (and leaky slope) of such an op.
nnk::Activation getActivation(mlir::Operation *op, double &alpha);

/// nn.add absorbed as the residual of the nn.layer_norm that uses it.
bool isLayerNormResidualAdd(mlir::Operation *op);

/// An op of a fused elementwise group (converted by the group's root).
bool isElementwiseGroupOp(mlir::Operation *op);
/// A group op absorbed into its single elementwise user.
bool isElementwiseMember(mlir::Operation *op);
/// nn.constant scalar inlined into every (elementwise) user.
bool isInlinedConstant(mlir::Operation *op);

/// The nnk buffer type of an nn tensor type.
nnk::BufferType toBuffer(mlir::Type tensorType);

/// A new nnk.alloc of `type` (an nn tensor or nnk buffer type); failure (a
/// match failure naming the op) when a dim is `?`.
mlir::FailureOr<mlir::Value> allocBuffer(mlir::ConversionPatternRewriter &rewriter,
                                         mlir::Operation *op, mlir::Type type);

/// The converted buffer of an original value.
mlir::Value remap(mlir::ConversionPatternRewriter &rewriter, mlir::Value v);

/// Emits `nnk.gemm` for a GEMM with epilogue into a fresh buffer of
/// `outType`; returns it.
mlir::FailureOr<mlir::Value>
emitGemm(mlir::ConversionPatternRewriter &rewriter, mlir::Operation *op,
         mlir::Type outType, mlir::Value x, mlir::Value w, mlir::Value bias,
         mlir::Value residual, nnk::Activation act, double alpha);

/// Lowers nn.attention (x = its converted input) with an optional fused
/// residual into a fresh output buffer (AttentionToNNK.cpp). When the op's
/// reserve is used, `kept` gets the buffers it lowers to (qkv, core output,
/// log-sum-exp; see getReserveBufferTypes).
mlir::FailureOr<mlir::Value>
lowerAttention(mlir::ConversionPatternRewriter &rewriter, nn::AttentionOp op,
               mlir::Value residual, mlir::Type resultType,
               llvm::SmallVectorImpl<mlir::Value> &kept);

//===--- one nn op -> fresh buffers + nnk ops ----------------------------===//

using namespace mlir;

/// Allocates one buffer per result of `op` (all results).
inline FailureOr<SmallVector<Value>> allocResults(ConversionPatternRewriter &rewriter,
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

/// One nn op -> one fresh buffer per result, written by the nnk op(s) `fn`
/// builds; the nn op's results become those buffers.
template <typename NNOp> struct FreshBuffersLowering : OpConversionPattern<NNOp> {
  using Fn = std::function<LogicalResult(ConversionPatternRewriter &, NNOp,
                                         typename NNOp::Adaptor, ArrayRef<Value>)>;
  FreshBuffersLowering(const TypeConverter &c, MLIRContext *ctx, Fn fn)
      : OpConversionPattern<NNOp>(c, ctx), fn(std::move(fn)) {}
  LogicalResult matchAndRewrite(NNOp op, typename NNOp::Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    FailureOr<SmallVector<Value>> outs = allocResults(rewriter, op);
    if (failed(outs) || failed(fn(rewriter, op, adaptor, *outs)))
      return failure();
    rewriter.replaceOp(op, *outs);
    return success();
  }
  Fn fn;
};

/// Adds FreshBuffersLowering<NNOp> with `fn(rewriter, op, adaptor, outs)`.
template <typename NNOp, typename F>
void addLowering(const TypeConverter &c, RewritePatternSet &patterns, F fn) {
  patterns.add<FreshBuffersLowering<NNOp>>(c, patterns.getContext(),
                                           typename FreshBuffersLowering<NNOp>::Fn(fn));
}

/// The same for a single-result op, with `fn(rewriter, op, adaptor, out)`.
template <typename NNOp>
void addSimple(const TypeConverter &c, RewritePatternSet &patterns,
               LogicalResult (*fn)(ConversionPatternRewriter &, NNOp, typename NNOp::Adaptor,
                                   Value)) {
  addLowering<NNOp>(c, patterns,
                    [fn](ConversionPatternRewriter &r, NNOp op, typename NNOp::Adaptor a,
                         ArrayRef<Value> outs) { return fn(r, op, a, outs[0]); });
}

inline int64_t rankOf(Value v) { return cast<nn::TensorType>(v.getType()).getRank(); }

/// The single value an operand converted to, or null for an absent one.
inline Value single(ValueRange values) {
  return values.empty() ? Value() : values.front();
}

using RW = ConversionPatternRewriter;

} // namespace nncc::conv

#endif // NNCC_LIB_CONVERSION_NNTONNK_PATTERNHELPERS_H
