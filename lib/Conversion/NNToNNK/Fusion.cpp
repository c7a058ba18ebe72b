//===- Fusion.cpp - Which nn ops fuse into which kernel ---------*- C++ -*-===//
//
// Precedence: a GEMM epilogue chain claims its ops first; then the add of
// layer_norm(a + b); then elementwise groups take the remaining elementwise
// ops. All predicates read the original nn IR only.
//
//===----------------------------------------------------------------------===//

#include "PatternHelpers.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::conv;

/// Users of an original value, ignoring the casts the conversion driver
/// inserts while it runs (they are not users in the nn program).
static SmallVector<Operation *> realUsers(Value v) {
  SmallVector<Operation *> users;
  for (Operation *user : v.getUsers())
    if (!isa<UnrealizedConversionCastOp>(user))
      users.push_back(user);
  return users;
}

static Operation *singleUser(Value v) {
  SmallVector<Operation *> users = realUsers(v);
  if (users.size() != 1)
    return nullptr;
  Operation *user = users.front();
  // Fusion stays within one block (region bodies are separate kernels).
  if (v.getParentBlock() != user->getBlock())
    return nullptr;
  return user;
}

static bool sameShape(Value a, Value b) {
  auto ta = dyn_cast<nn::TensorType>(a.getType());
  auto tb = dyn_cast<nn::TensorType>(b.getType());
  return ta && tb && ta.getDims() == tb.getDims() &&
         ta.getElementType() == tb.getElementType() &&
         llvm::none_of(ta.getDims(), [](nncc::Dim d) { return d.isDynamic(); });
}

bool conv::isEpilogueActivation(Operation *op) {
  return isa<nn::ReluOp, nn::TanhOp, nn::SigmoidOp, nn::GeluOp,
             nn::LeakyReluOp>(op);
}

nnk::Activation conv::getActivation(Operation *op, double &alpha) {
  alpha = 0.01;
  if (isa<nn::ReluOp>(op))
    return nnk::Activation::relu;
  if (isa<nn::TanhOp>(op))
    return nnk::Activation::tanh;
  if (isa<nn::SigmoidOp>(op))
    return nnk::Activation::sigmoid;
  if (auto gelu = dyn_cast<nn::GeluOp>(op))
    return gelu.getApproximate() == nn::GeluApproximation::tanh
               ? nnk::Activation::gelu_tanh
               : nnk::Activation::gelu;
  if (auto leaky = dyn_cast<nn::LeakyReluOp>(op)) {
    alpha = leaky.getAlpha();
    return nnk::Activation::leaky_relu;
  }
  return nnk::Activation::none;
}

/// The value a chain has reached before its residual step.
static Value chainValue(const GemmChain &c) {
  if (c.act)
    return c.act->getResult(0);
  if (c.biasAdd)
    return c.biasAdd->getResult(0);
  return c.start->getResult(0);
}

/// Linear / attention ops among `op` and its producers up to three levels.
static SmallVector<Operation *> chainStartCandidates(Operation *op) {
  SmallVector<Operation *> candidates{op};
  size_t begin = 0;
  for (int depth = 0; depth < 3 && candidates.size() < 64; ++depth) {
    size_t end = candidates.size();
    for (size_t i = begin; i < end; ++i)
      for (Value operand : candidates[i]->getOperands())
        if (Operation *def = operand.getDefiningOp())
          candidates.push_back(def);
    begin = end;
  }
  llvm::erase_if(candidates, [](Operation *c) {
    return !isa<nn::LinearOp, nn::AttentionOp>(c);
  });
  return candidates;
}

static bool isPreResidualChainValue(Value v) {
  Operation *def = v.getDefiningOp();
  if (!def)
    return false;
  for (Operation *c : chainStartCandidates(def))
    if (auto chain = computeGemmChain(c, /*withResidual=*/false))
      if (chainValue(*chain) == v)
        return true;
  return false;
}

std::optional<GemmChain> conv::computeGemmChain(Operation *start,
                                                bool withResidual) {
  GemmChain chain;
  chain.start = start;
  auto linear = dyn_cast<nn::LinearOp>(start);
  if (!linear && !isa<nn::AttentionOp>(start))
    return std::nullopt;
  if (linear) {
    Value cur = linear.getResult();
    auto outType = cast<nn::TensorType>(cur.getType());
    // linear without bias, then + bias [N].
    if (!linear.getBias())
      if (auto add = dyn_cast_or_null<nn::AddOp>(singleUser(cur))) {
        Value other = add.getLhs() == cur ? add.getRhs() : add.getLhs();
        auto ot = dyn_cast<nn::TensorType>(other.getType());
        if (ot && ot.getRank() == 1 &&
            ot.getElementType() == outType.getElementType() &&
            ot.getDim(0) == outType.getDims().back() &&
            ot.getDim(0).isStatic() && sameShape(add.getResult(), cur)) {
          chain.biasAdd = add;
          chain.bias = other;
          cur = add.getResult();
        }
      }
    if (Operation *user = singleUser(cur))
      if (isEpilogueActivation(user))
        chain.act = user;
  }
  if (withResidual) {
    Value cur = chainValue(chain);
    if (auto add = dyn_cast_or_null<nn::AddOp>(singleUser(cur))) {
      Value other = add.getLhs() == cur ? add.getRhs() : add.getLhs();
      // add(a, b) belongs to a's chain when both operands are chains.
      // (Only when a's chain can absorb it: a has no other user.)
      bool lhsIsOther = add.getLhs() == other;
      bool otherIsChain = lhsIsOther && other != cur &&
                          singleUser(other) == add.getOperation() &&
                          isPreResidualChainValue(other);
      if (other != cur && !otherIsChain && sameShape(other, cur) &&
          sameShape(add.getResult(), cur))
        chain.residualAdd = add;
      if (chain.residualAdd)
        chain.residual = other;
    }
  }
  chain.end = chain.residualAdd ? chain.residualAdd
              : chain.act       ? chain.act
              : chain.biasAdd   ? chain.biasAdd
                                : chain.start;
  return chain;
}

std::optional<GemmChain> conv::findGemmChain(Operation *op) {
  for (Operation *c : chainStartCandidates(op))
    if (auto chain = computeGemmChain(c))
      if (chain->contains(op))
        return chain;
  return std::nullopt;
}

bool conv::isLayerNormResidualAdd(Operation *op) {
  auto add = dyn_cast<nn::AddOp>(op);
  if (!add)
    return false;
  auto ln = dyn_cast_or_null<nn::LayerNormOp>(singleUser(add.getResult()));
  if (!ln || ln.getX() != add.getResult())
    return false;
  if (findGemmChain(op))
    return false;
  return sameShape(add.getLhs(), add.getResult()) &&
         sameShape(add.getRhs(), add.getResult());
}

static bool isElementwiseKind(Operation *op) {
  // Comparisons, selects and casts have integer or i1 operands or results;
  // integer add, sub, mul and neg are elementwise too.
  if (isa<nn::CompareOp, nn::SelectOp, nn::CastOp>(op))
    return true;
  if (isa<nn::AddOp, nn::SubOp, nn::MulOp, nn::NegOp>(op)) {
    auto type = dyn_cast<nn::TensorType>(op->getResult(0).getType());
    if (type && type.getElementType().isSignlessInteger() &&
        !type.getElementType().isInteger(1))
      return true;
  }
  if (!isa<nn::AddOp, nn::SubOp, nn::MulOp, nn::DivOp, nn::NegOp, nn::ReluOp,
           nn::TanhOp, nn::SigmoidOp, nn::ExpOp, nn::LogOp, nn::LeakyReluOp,
           nn::GeluOp, nn::LearnedPositionOp>(op))
    return false;
  auto type = dyn_cast<nn::TensorType>(op->getResult(0).getType());
  return type && isa<FloatType>(type.getElementType());
}

bool conv::isElementwiseGroupOp(Operation *op) {
  if (!isElementwiseKind(op))
    return false;
  if (findGemmChain(op))
    return false;
  return !isLayerNormResidualAdd(op);
}

bool conv::isElementwiseMember(Operation *op) {
  if (!isElementwiseGroupOp(op))
    return false;
  Operation *user = singleUser(op->getResult(0));
  if (!user || !isElementwiseGroupOp(user))
    return false;
  // A learned position's table operand is not an elementwise input.
  if (auto pos = dyn_cast<nn::LearnedPositionOp>(user))
    return pos.getX() == op->getResult(0);
  return true;
}

bool conv::isInlinedConstant(Operation *op) {
  auto constant = dyn_cast<nn::ConstantOp>(op);
  if (!constant || !isa<FloatAttr, IntegerAttr>(constant.getValue()))
    return false;
  SmallVector<Operation *> users = realUsers(constant.getResult());
  if (users.empty())
    return false;
  return llvm::all_of(users, [&](Operation *user) {
    return user->getBlock() == op->getBlock() && isElementwiseGroupOp(user) &&
           !isa<nn::LearnedPositionOp>(user);
  });
}

bool nncc::isFusedIntoConsumer(Operation *op) {
  if (isInlinedConstant(op) || isElementwiseMember(op) ||
      isLayerNormResidualAdd(op))
    return true;
  if (auto chain = findGemmChain(op))
    return chain->end != op;
  return false;
}

//===----------------------------------------------------------------------===//
// Shared builders
//===----------------------------------------------------------------------===//

nnk::BufferType conv::toBuffer(Type type) {
  if (auto buffer = dyn_cast<nnk::BufferType>(type))
    return buffer;
  auto tensor = cast<nn::TensorType>(type);
  return nnk::BufferType::get(tensor.getContext(), tensor.getDims(),
                              tensor.getElementType());
}

FailureOr<Value> conv::allocBuffer(ConversionPatternRewriter &rewriter,
                                   Operation *op, Type type) {
  nnk::BufferType buffer = toBuffer(type);
  if (!buffer.hasKnownDims())
    return op->emitError("cannot allocate a buffer of shape ")
           << nn::formatShape(buffer.getDims())
           << ": nnk temporaries need static or symbolic dims";
  return nnk::AllocOp::create(rewriter, op->getLoc(), buffer).getResult();
}

Value conv::remap(ConversionPatternRewriter &rewriter, Value v) {
  if (!v)
    return v;
  return rewriter.getRemappedValue(v);
}

FailureOr<Value> conv::emitGemm(ConversionPatternRewriter &rewriter,
                                Operation *op, Type outType, Value x, Value w,
                                Value bias, Value residual,
                                nnk::Activation act, double alpha) {
  FailureOr<Value> out = allocBuffer(rewriter, op, outType);
  if (failed(out))
    return failure();
  nnk::GemmOp::create(rewriter, op->getLoc(), x, w, bias, residual, *out, act,
                      alpha);
  return *out;
}

Value conv::createScalarConstant(OpBuilder &builder, Location loc, Type type,
                                 double value) {
  if (auto intType = dyn_cast<IntegerType>(type))
    return arith::ConstantOp::create(
        builder, loc, type, builder.getIntegerAttr(intType, int64_t(value)));
  auto floatType = cast<FloatType>(type);
  llvm::APFloat narrowed(value);
  bool losesInfo = false;
  narrowed.convert(floatType.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven,
                   &losesInfo);
  if (!losesInfo || floatType.isF64())
    return arith::ConstantOp::create(builder, loc, type,
                                     builder.getFloatAttr(type, value));
  Type f64 = builder.getF64Type();
  Value wide =
      arith::ConstantOp::create(builder, loc, f64, builder.getFloatAttr(f64, value));
  return arith::TruncFOp::create(builder, loc, type, wide);
}
