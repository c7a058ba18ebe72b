//===- ControlToNNK.cpp - Functions, parameters, yields, saves --*- C++ -*-===//
//
// - func.func: tensors -> buffers; results become trailing `nnk.output`
//   arguments; func.return copies into them (nnk-forward-destinations then
//   writes producers straight into the outputs).
// - nn.get_parameter -> nnk.weight; an nn.constant that no elementwise
//   group absorbed (ElementwiseToNNK.cpp) -> a filled buffer.
// - nn.yield in a converted ODE region (ODEToNNK.cpp) copies into the
//   region's destination argument(s) and becomes nnk.yield.
// - nn.save (the residual marker of the backward) is the identity on
//   buffers; a nnk.boundary after the last one splits forward_train from
//   backward (TrainingBoundary.cpp).
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

struct SaveLowering : OpConversionPattern<nn::SaveOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::SaveOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getValue());
    return success();
  }
};

/// A constant that no elementwise group inlines: a filled scalar buffer.
struct ConstantLowering : OpConversionPattern<nn::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::ConstantOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    double value;
    if (auto f = dyn_cast<FloatAttr>(op.getValue()))
      value = f.getValueAsDouble();
    else if (auto i = dyn_cast<IntegerAttr>(op.getValue()))
      value = (double)i.getValue().getSExtValue();
    else
      return rewriter.notifyMatchFailure(op, "unsupported constant");
    FailureOr<Value> out = allocBuffer(rewriter, op, op.getType());
    if (failed(out))
      return failure();
    nnk::FillOp::create(rewriter, op.getLoc(), *out, value);
    rewriter.replaceOp(op, *out);
    return success();
  }
};

} // namespace

void nncc::populateControlToNNKPatterns(const TypeConverter &converter,
                                        RewritePatternSet &patterns) {
  patterns.add<FuncSignatureLowering, ReturnLowering, GetParameterLowering,
               YieldLowering>(
      converter, patterns.getContext());
  patterns.add<SaveLowering, ConstantLowering>(converter, patterns.getContext());
}
