//===- ControlToNNK.cpp - Functions, parameters, ODE loops, reversible ---===//
//
// - func.func: tensors -> buffers; results become trailing `nnk.output`
//   arguments; func.return copies into them (forwardDestinations() then
//   writes producers straight into the outputs).
// - nn.get_parameter -> nnk.weight.
// - nn.odesolve / nn.ode_rnn -> nnk.ode_solve / nnk.ode_rnn whose regions
//   take their destination as a trailing block argument; nn.yield copies
//   into it and becomes nnk.yield.
// - prepareNNForKernels(): inference semantics and reversible expansion at
//   the nn level, before the conversion.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

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
    SmallVector<nn::Dim> workDims{
        nn::Dim::getStatic(nnk::getODEWorkSlots(op.getMethod()))};
    llvm::append_range(workDims, state.getDims());
    FailureOr<Value> out = allocBuffer(rewriter, op, state);
    FailureOr<Value> work = allocBuffer(rewriter, op, state.withDims(workDims));
    if (failed(out) || failed(work))
      return failure();
    auto solve = nnk::ODESolveOp::create(
        rewriter, op.getLoc(), adaptor.getH0(), adaptor.getT0(),
        adaptor.getT1(), *out, *work, op.getMethod(), op.getSteps(),
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
    nn::Dim B = xType.getDim(0), I = xType.getDim(2);
    nn::Dim H = nn::Dim::getStatic(op.getHiddenSize());
    auto state = xType.withDims({B, H});
    FailureOr<Value> out = allocBuffer(rewriter, op, op.getType());
    FailureOr<Value> work = allocBuffer(
        rewriter, op,
        xType.withDims({nn::Dim::getStatic(nnk::getODEWorkSlots(op.getMethod()) + 2),
                        B, H}));
    FailureOr<Value> xt = allocBuffer(rewriter, op, xType.withDims({B, I}));
    if (failed(out) || failed(work) || failed(xt))
      return failure();
    auto rnn = nnk::ODERNNOp::create(
        rewriter, op.getLoc(), adaptor.getX(), adaptor.getTimes(),
        adaptor.getH0(), *out, *work, *xt, op.getHiddenSize(), op.getMethod(),
        op.getSteps(), op.getRtol(), op.getAtol(), op.getAdjoint());
    // Dynamics (t, h, dh): t is each row's own time, [B, 1], as in nn.
    auto tType = toBuffer(op.getTimes().getType())
                     .withDims({B, nn::Dim::getStatic(1)});
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

//===----------------------------------------------------------------------===//
// nn-level preparation
//===----------------------------------------------------------------------===//

/// y = concat(x1 + F(x2), x2 + G(x1 + F(x2))) with x1, x2 the halves of x.
static LogicalResult expandReversible(nn::ReversibleOp op) {
  OpBuilder builder(op);
  Location loc = op.getLoc();
  auto xType = cast<nn::TensorType>(op.getX().getType());
  int64_t rank = xType.getRank();
  nn::Dim last = xType.getDims().back();
  if (!last.isStatic() || last.getSize() % 2 != 0)
    return op.emitError("reversible blocks need a static, even last dim to "
                        "split into halves, got ")
           << last.str();
  int64_t F = last.getSize() / 2;
  SmallVector<nn::Dim> halfDims(xType.getDims());
  halfDims.back() = nn::Dim::getStatic(F);
  auto half = xType.withDims(halfDims);
  auto split = nn::SplitOp::create(builder, loc, TypeRange{half, half},
                                   op.getX(), rank - 1,
                                   ArrayRef<int64_t>{F, F});
  Value x1 = split.getResult(0), x2 = split.getResult(1);
  auto inlineRegion = [&](Region &region, Value arg) -> Value {
    Block &block = region.front();
    IRMapping map;
    map.map(block.getArgument(0), arg);
    for (Operation &inner : block.without_terminator())
      builder.clone(inner, map);
    return map.lookupOrDefault(block.getTerminator()->getOperand(0));
  };
  // The branch output first, so the add joins the branch's GEMM chain
  // (residual = the other half).
  Value fy = inlineRegion(op.getF(), x2);
  Value y1 = nn::AddOp::create(builder, loc, half, fy, x1);
  Value gy = inlineRegion(op.getG(), y1);
  Value y2 = nn::AddOp::create(builder, loc, half, gy, x2);
  Value y = nn::ConcatOp::create(builder, loc, xType, ValueRange{y1, y2},
                                 rank - 1);
  op.getResult().replaceAllUsesWith(y);
  op.erase();
  return success();
}

/// split(concat(a, b, ...)) along the same axis with matching pieces.
static void foldSplitOfConcat(nn::SplitOp split) {
  auto concat = split.getX().getDefiningOp<nn::ConcatOp>();
  if (!concat || concat.getInputs().size() != split.getNumResults())
    return;
  int64_t rank = cast<nn::TensorType>(split.getX().getType()).getRank();
  if (nn::normalizeAxis(concat.getAxis(), rank) !=
      nn::normalizeAxis(split.getAxis(), rank))
    return;
  for (auto [in, out] : llvm::zip_equal(concat.getInputs(), split.getResults()))
    if (in.getType() != out.getType())
      return;
  for (auto [in, out] : llvm::zip_equal(concat.getInputs(), split.getResults()))
    out.replaceAllUsesWith(in);
  split.erase();
  if (concat.getResult().use_empty())
    concat.erase();
}

LogicalResult nncc::prepareNNForKernels(ModuleOp module) {
  // Training functions (@forward_backward): a boundary after the last
  // residual (nn.save) splits forward_train from backward.
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (!fn->hasAttr("nn.training") || fn.getBody().empty())
      continue;
    Block &body = fn.getBody().front();
    Operation *last = nullptr;
    for (Operation &op : body)
      if (isa<nn::SaveOp>(op))
        last = &op;
    OpBuilder b(fn.getContext());
    if (last)
      b.setInsertionPointAfter(last);
    else
      b.setInsertionPoint(body.getTerminator());
    nnk::BoundaryOp::create(b, fn.getLoc());
  }
  // Inference (and training functions marked nn.eval_mode, whose gradients
  // are those of the inference-mode loss): dropout, zoneout and attention
  // dropout are the identity. Training keeps them (counter-based masks,
  // GradToNNK.cpp and the attention kernels).
  module.walk([](Operation *op) {
    auto fn = op->getParentOfType<func::FuncOp>();
    bool training =
        fn && fn->hasAttr("nn.training") && !fn->hasAttr("nn.eval_mode");
    if (auto dropout = dyn_cast<nn::DropoutOp>(op); dropout && !training) {
      dropout.getResult().replaceAllUsesWith(dropout.getX());
      dropout.erase();
    } else if (auto zoneout = dyn_cast<nn::ZoneoutOp>(op);
               zoneout && !training) {
      zoneout.getResult().replaceAllUsesWith(zoneout.getNewState());
      zoneout.erase();
    } else if (auto lstm = dyn_cast<nn::LSTMOp>(op); lstm && !training) {
      lstm.setZoneoutAttr(Builder(op->getContext()).getF64FloatAttr(0.0));
    } else if (auto grad = dyn_cast<nn::LSTMGradOp>(op); grad && !training) {
      grad.setZoneoutAttr(Builder(op->getContext()).getF64FloatAttr(0.0));
    } else if (auto attn = dyn_cast<nn::AttentionOp>(op); attn && !training) {
      attn.setDropoutAttr(Builder(op->getContext()).getF64FloatAttr(0.0));
    } else if (auto grad = dyn_cast<nn::AttentionGradOp>(op);
               grad && !training) {
      grad.setDropoutAttr(Builder(op->getContext()).getF64FloatAttr(0.0));
    }
  });
  // Outer blocks first: a reversible nested in another's region is cloned
  // with it and expanded when the walk reaches the clone.
  SmallVector<nn::ReversibleOp> reversibles;
  module.walk<WalkOrder::PreOrder>(
      [&](nn::ReversibleOp op) { reversibles.push_back(op); });
  while (!reversibles.empty()) {
    for (nn::ReversibleOp op : reversibles)
      if (failed(expandReversible(op)))
        return failure();
    reversibles.clear();
    module.walk<WalkOrder::PreOrder>(
        [&](nn::ReversibleOp op) { reversibles.push_back(op); });
  }
  SmallVector<nn::SplitOp> splits;
  module.walk([&](nn::SplitOp op) { splits.push_back(op); });
  for (nn::SplitOp split : splits)
    foldSplitOfConcat(split);
  return success();
}

void nncc::forwardDestinations(ModuleOp module) {
  SmallVector<nnk::CopyOp> copies;
  module.walk([&](nnk::CopyOp copy) { copies.push_back(copy); });
  for (nnk::CopyOp copy : copies) {
    auto alloc = copy.getIn().getDefiningOp<nnk::AllocOp>();
    auto dest = dyn_cast<BlockArgument>(copy.getOut());
    if (!alloc || !dest || dest.getOwner() != copy->getBlock() ||
        alloc->getBlock() != copy->getBlock() || !dest.hasOneUse() ||
        alloc.getType() != dest.getType())
      continue;
    // The alloc must not be copied anywhere else.
    if (llvm::count_if(alloc->getUsers(), [](Operation *user) {
          return isa<nnk::CopyOp>(user) &&
                 isa<BlockArgument>(cast<nnk::CopyOp>(user).getOut()) &&
                 cast<nnk::CopyOp>(user).getIn() != cast<nnk::CopyOp>(user).getOut();
        }) != 1)
      continue;
    copy.erase();
    alloc.getResult().replaceAllUsesWith(dest);
    alloc.erase();
  }
  // Constants inlined into elementwise bodies.
  module.walk([](nn::ConstantOp op) {
    if (op.getResult().use_empty())
      op.erase();
  });
}
