//===- ControlToNNK.cpp - Functions, parameters, ODE loops ---------------===//
//
// - func.func: tensors -> buffers; results become trailing `nnk.output`
//   arguments; func.return copies into them (nnk-forward-destinations then
//   writes producers straight into the outputs).
// - nn.get_parameter -> nnk.weight.
// - nn.odesolve / nn.ode_rnn -> nnk.ode_solve / nnk.ode_rnn whose regions
//   take their destination as a trailing block argument; nn.yield copies
//   into it and becomes nnk.yield.
//
//===----------------------------------------------------------------------===//

#include "PatternHelpers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::conv;

namespace {

struct FuncSignatureLowering : OpConversionPattern<func::FuncOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(func::FuncOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FunctionType type = op.getFunctionType();
    if (op.isExternal())
      return rewriter.notifyMatchFailure(op, "declaration");
    TypeConverter::SignatureConversion sig(type.getNumInputs());
    SmallVector<Type> inputs;
    for (auto [i, t] : llvm::enumerate(type.getInputs())) {
      Type converted = getTypeConverter()->convertType(t);
      if (!converted)
        return op.emitError("cannot convert argument type ") << t;
      sig.addInputs(i, converted);
      inputs.push_back(converted);
    }
    SmallVector<Type> outputs;
    for (Type t : type.getResults()) {
      auto tensor = dyn_cast<nn::TensorType>(t);
      if (!tensor)
        return op.emitError("function results must be nn tensors, got ") << t;
      outputs.push_back(toBuffer(tensor));
    }
    sig.addInputs(outputs);
    if (failed(rewriter.convertRegionTypes(&op.getBody(), *getTypeConverter(),
                                           &sig)))
      return failure();
    SmallVector<Type> all(inputs);
    llvm::append_range(all, outputs);
    SmallVector<DictionaryAttr> argAttrs;
    for (unsigned i = 0; i < type.getNumInputs(); ++i)
      argAttrs.push_back(op.getArgAttrDict(i));
    for (unsigned i = 0; i < type.getNumResults(); ++i) {
      NamedAttrList attrs(op.getResultAttrDict(i));
      attrs.set("nnk.output", rewriter.getUnitAttr());
      argAttrs.push_back(attrs.getDictionary(op.getContext()));
    }
    rewriter.modifyOpInPlace(op, [&] {
      op.setFunctionType(rewriter.getFunctionType(all, {}));
      op.setAllArgAttrs(argAttrs);
      op.removeResAttrsAttr();
    });
    return success();
  }
};

struct ReturnLowering : OpConversionPattern<func::ReturnOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(func::ReturnOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Block *block = op->getBlock();
    size_t nOut = adaptor.getOperands().size();
    if (block->getNumArguments() < nOut)
      return rewriter.notifyMatchFailure(op, "function not converted");
    size_t first = block->getNumArguments() - nOut;
    for (auto [i, v] : llvm::enumerate(adaptor.getOperands()))
      nnk::CopyOp::create(rewriter, op.getLoc(), v,
                          block->getArgument(first + i));
    rewriter.replaceOpWithNewOp<func::ReturnOp>(op);
    return success();
  }
};

struct GetParameterLowering : OpConversionPattern<nn::GetParameterOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::GetParameterOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<nnk::WeightOp>(op, toBuffer(op.getType()),
                                               op.getNameAttr());
    return success();
  }
};

/// nn.yield in a converted ODE region: copy into the destination
/// argument(s) (the last block arguments, one per yielded value).
struct YieldLowering : OpConversionPattern<nn::YieldOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::YieldOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!isa<nnk::ODESolveOp, nnk::ODERNNOp, nnk::ODESolveGradOp,
             nnk::ODERNNGradOp>(op->getParentOp()))
      return rewriter.notifyMatchFailure(op, "not in an nnk region");
    size_t n = adaptor.getValues().size();
    Block *block = op->getBlock();
    if (n == 0 || block->getNumArguments() < n)
      return op.emitError("expected a yielded value per destination");
    size_t first = block->getNumArguments() - n;
    for (auto [i, v] : llvm::enumerate(adaptor.getValues()))
      nnk::CopyOp::create(rewriter, op.getLoc(), v,
                          block->getArgument(first + i));
    rewriter.replaceOpWithNewOp<nnk::YieldOp>(op, ValueRange{});
    return success();
  }
};

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

} // namespace

void nncc::populateControlToNNKPatterns(const TypeConverter &converter,
                                        RewritePatternSet &patterns) {
  patterns.add<FuncSignatureLowering, ReturnLowering, GetParameterLowering,
               YieldLowering, ODESolveLowering, ODERNNLowering>(
      converter, patterns.getContext());
}
