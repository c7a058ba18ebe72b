//===- ODEToNNK.cpp - ODE solves and ODE-RNNs -> nnk ------------*- C++ -*-===//
//
// nn.odesolve / nn.ode_rnn -> nnk.ode_solve / nnk.ode_rnn whose regions
// take their destination as a trailing block argument (nn.yield copies into
// it, ControlToNNK.cpp), and their backward ops with the regions of the
// dynamics' (and cell's) VJPs.
//
//===----------------------------------------------------------------------===//

#include "PatternHelpers.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::conv;

namespace {

/// Moves `from` into `to` and retypes its block to `types` (the original
/// arguments converted, then the destination argument).
LogicalResult moveRegion(ConversionPatternRewriter &rewriter, Region &from,
                         Region &to, ArrayRef<Type> types,
                         const TypeConverter *converter) {
  rewriter.inlineRegionBefore(from, to, to.end());
  Block &block = to.front();
  if (block.getNumArguments() + 1 != types.size())
    return failure();
  TypeConverter::SignatureConversion sig(block.getNumArguments());
  for (unsigned i = 0; i < block.getNumArguments(); ++i)
    sig.addInputs(i, types[i]);
  sig.addInputs(types.back());
  rewriter.applySignatureConversion(&block, sig, converter);
  return success();
}

struct ODESolveLowering : OpConversionPattern<nn::ODESolveOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::ODESolveOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    nnk::BufferType state = toBuffer(op.getType());
    SmallVector<nncc::Dim> workDims{
        nncc::Dim::getStatic(nnk::getODEWorkSlots(solverOf(op.getMethod())))};
    llvm::append_range(workDims, state.getDims());
    FailureOr<Value> out = allocBuffer(rewriter, op, state);
    FailureOr<Value> work = allocBuffer(rewriter, op, state.withDims(workDims));
    if (failed(out) || failed(work))
      return failure();
    auto solve = nnk::ODESolveOp::create(
        rewriter, op.getLoc(), adaptor.getH0(), adaptor.getT0(),
        adaptor.getT1(), *out, *work, solverOf(op.getMethod()), op.getSteps(),
        op.getRtol(), op.getAtol(), op.getAdjoint());
    if (failed(moveRegion(rewriter, op.getDynamics(), solve.getDynamics(),
                          {adaptor.getT0().getType(), state, state},
                          getTypeConverter())))
      return op.emitError("dynamics must take (t, h)");
    rewriter.replaceOp(op, *out);
    return success();
  }
};

struct ODERNNLowering : OpConversionPattern<nn::ODERNNOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::ODERNNOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto xType = toBuffer(op.getX().getType());
    nncc::Dim B = xType.getDim(0), I = xType.getDim(2);
    nncc::Dim H = nncc::Dim::getStatic(op.getHiddenSize());
    auto state = xType.withDims({B, H});
    FailureOr<Value> out = allocBuffer(rewriter, op, op.getType());
    FailureOr<Value> work = allocBuffer(
        rewriter, op,
        xType.withDims({nncc::Dim::getStatic(nnk::getODEWorkSlots(solverOf(op.getMethod())) + 2),
                        B, H}));
    FailureOr<Value> xt = allocBuffer(rewriter, op, xType.withDims({B, I}));
    if (failed(out) || failed(work) || failed(xt))
      return failure();
    auto rnn = nnk::ODERNNOp::create(
        rewriter, op.getLoc(), adaptor.getX(), adaptor.getTimes(),
        adaptor.getH0(), *out, *work, *xt, op.getHiddenSize(), solverOf(op.getMethod()),
        op.getSteps(), op.getRtol(), op.getAtol(), op.getAdjoint());
    // Dynamics (t, h, dh): t is each row's own time, [B, 1], as in nn.
    auto tType = toBuffer(op.getTimes().getType())
                     .withDims({B, nncc::Dim::getStatic(1)});
    if (failed(moveRegion(rewriter, op.getDynamics(), rnn.getDynamics(),
                          {tType, state, state}, getTypeConverter())) ||
        failed(moveRegion(rewriter, op.getCell(), rnn.getCell(),
                          {xType.withDims({B, I}), state, state},
                          getTypeConverter())))
      return op.emitError("unexpected region signature");
    rewriter.replaceOp(op, *out);
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

} // namespace

void nncc::populateODEToNNKPatterns(const TypeConverter &converter,
                                    RewritePatternSet &patterns) {
  patterns.add<ODESolveLowering, ODERNNLowering, ODESolveGradLowering, ODERNNGradLowering>(converter, patterns.getContext());
}
