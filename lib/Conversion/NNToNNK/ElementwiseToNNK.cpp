//===- ElementwiseToNNK.cpp - Fused elementwise groups ----------*- C++ -*-===//
//
// A maximal tree of single-use elementwise nn ops becomes one
// nnk.elementwise rooted at the tree's last op: its leaves are the inputs
// (NumPy broadcast from the buffers' shapes), scalar constants are inlined
// as arith.constant, and each nn op becomes its scalar arith/math form.
// The backward's activation_grad is one nnk.elementwise of (x, dy) with the
// derivative; training dropout a counter-based mask (nnk.dropout), and
// stop_gradient the identity on buffers.
//
//===----------------------------------------------------------------------===//

#include "PatternHelpers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace nncc;
using namespace nncc::conv;

namespace {

/// Builds the group rooted at `root`.
class GroupBuilder {
public:
  GroupBuilder(ConversionPatternRewriter &rewriter, Operation *root)
      : rewriter(rewriter), root(root) {}

  /// Collects the inputs (converted buffers, in first-use order) and the
  /// member ops; creates the nnk.slice of learned-position tables.
  LogicalResult collect(Operation *op) {
    members.push_back(op);
    if (auto pos = dyn_cast<nn::LearnedPositionOp>(op)) {
      if (failed(collectValue(pos.getX())))
        return failure();
      // table[0:T] as a [T, E] buffer.
      auto xType = cast<nn::TensorType>(pos.getX().getType());
      auto sliced = nnk::BufferType::get(
          op->getContext(), {xType.getDim(1), xType.getDim(2)},
          xType.getElementType());
      FailureOr<Value> buf = allocBuffer(rewriter, op, sliced);
      if (failed(buf))
        return failure();
      nnk::SliceOp::create(rewriter, op->getLoc(), remap(rewriter, pos.getTable()),
                           *buf, ArrayRef<int64_t>{0, 0},
                           ArrayRef<int64_t>{1, 1}, ArrayRef<int64_t>{});
      addInput(pos.getTable(), *buf);
      return success();
    }
    for (Value operand : op->getOperands())
      if (failed(collectValue(operand)))
        return failure();
    return success();
  }

  /// Creates the nnk.elementwise writing `out`.
  LogicalResult build(Value out) {
    SmallVector<Value> buffers;
    for (auto &[key, buffer] : inputs)
      buffers.push_back(buffer);
    auto ew = nnk::ElementwiseOp::create(rewriter, root->getLoc(), buffers, out);
    SmallVector<Type> argTypes;
    SmallVector<Location> argLocs;
    for (Value buffer : buffers) {
      argTypes.push_back(cast<nnk::BufferType>(buffer.getType()).getElementType());
      argLocs.push_back(root->getLoc());
    }
    OpBuilder::InsertionGuard guard(rewriter);
    Block *body =
        rewriter.createBlock(&ew.getBody(), ew.getBody().end(), argTypes, argLocs);
    for (auto [index, entry] : llvm::enumerate(inputs))
      scalars[entry.first] = body->getArgument(index);
    // Members were collected root first; emit producers first.
    for (Operation *op : llvm::reverse(members)) {
      Value result = emitScalar(op);
      if (!result)
        return rewriter.notifyMatchFailure(op, "no scalar form");
      scalars[op->getResult(0)] = result;
    }
    nnk::YieldOp::create(rewriter, root->getLoc(),
                         ValueRange{scalars[root->getResult(0)]});
    return success();
  }

  ArrayRef<Operation *> getMembers() const { return members; }

private:
  LogicalResult collectValue(Value v) {
    Operation *def = v.getDefiningOp();
    if (def && isElementwiseMember(def) && def->getBlock() == root->getBlock())
      return collect(def);
    if (def && isInlinedConstant(def))
      return success();
    Value buffer = remap(rewriter, v);
    if (!buffer)
      return failure();
    addInput(v, buffer);
    return success();
  }

  void addInput(Value key, Value buffer) {
    for (auto &entry : inputs)
      if (entry.first == key)
        return;
    inputs.push_back({key, buffer});
  }

  /// The scalar of a member's result, an input, or an inlined constant (in
  /// its own element type).
  Value scalar(Value v) {
    auto it = scalars.find(v);
    if (it != scalars.end())
      return it->second;
    auto constant = cast<nn::ConstantOp>(v.getDefiningOp());
    Attribute attr = constant.getValue();
    double value = isa<FloatAttr>(attr)
                       ? cast<FloatAttr>(attr).getValueAsDouble()
                       : double(cast<IntegerAttr>(attr).getValue().getSExtValue());
    Value c = createScalarConstant(rewriter, root->getLoc(),
                                   cast<nn::TensorType>(v.getType()).getElementType(),
                                   value);
    scalars[v] = c;
    return c;
  }

  Value cst(Type type, double value) {
    return createScalarConstant(rewriter, root->getLoc(), type, value);
  }

  Value emitScalar(Operation *op) {
    Location loc = op->getLoc();
    Type type = cast<nn::TensorType>(op->getResult(0).getType()).getElementType();
    auto arg = [&](unsigned i) { return scalar(op->getOperand(i)); };
    if (auto cmp = dyn_cast<nn::CompareOp>(op))
      return emitCompare(loc, cmp.getPredicate(), arg(0), arg(1));
    if (isa<nn::SelectOp>(op))
      return arith::SelectOp::create(rewriter, loc, arg(0), arg(1), arg(2));
    if (isa<nn::CastOp>(op))
      return emitCast(loc, arg(0), type);
    if (isa<IntegerType>(type)) {
      if (isa<nn::AddOp>(op))
        return arith::AddIOp::create(rewriter, loc, arg(0), arg(1));
      if (isa<nn::SubOp>(op))
        return arith::SubIOp::create(rewriter, loc, arg(0), arg(1));
      if (isa<nn::MulOp>(op))
        return arith::MulIOp::create(rewriter, loc, arg(0), arg(1));
      if (isa<nn::NegOp>(op))
        return arith::SubIOp::create(rewriter, loc, cst(type, 0.0), arg(0));
      return {};
    }
    if (isa<nn::AddOp, nn::LearnedPositionOp>(op))
      return arith::AddFOp::create(rewriter, loc, arg(0), arg(1));
    if (isa<nn::SubOp>(op))
      return arith::SubFOp::create(rewriter, loc, arg(0), arg(1));
    if (isa<nn::MulOp>(op))
      return arith::MulFOp::create(rewriter, loc, arg(0), arg(1));
    if (isa<nn::DivOp>(op))
      return arith::DivFOp::create(rewriter, loc, arg(0), arg(1));
    if (isa<nn::NegOp>(op))
      return arith::NegFOp::create(rewriter, loc, arg(0));
    if (isa<nn::ReluOp>(op))
      return arith::MaximumFOp::create(rewriter, loc, arg(0), cst(type, 0.0));
    if (isa<nn::TanhOp>(op))
      return math::TanhOp::create(rewriter, loc, arg(0));
    if (isa<nn::ExpOp>(op))
      return math::ExpOp::create(rewriter, loc, arg(0));
    if (isa<nn::LogOp>(op))
      return math::LogOp::create(rewriter, loc, arg(0));
    if (isa<nn::SigmoidOp>(op)) {
      Value negX = arith::NegFOp::create(rewriter, loc, arg(0));
      Value e = math::ExpOp::create(rewriter, loc, negX);
      Value d = arith::AddFOp::create(rewriter, loc, cst(type, 1.0), e);
      return arith::DivFOp::create(rewriter, loc, cst(type, 1.0), d);
    }
    if (auto leaky = dyn_cast<nn::LeakyReluOp>(op)) {
      Value x = arg(0);
      Value pos = arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::OGT,
                                        x, cst(type, 0.0));
      Value scaled = arith::MulFOp::create(rewriter, loc, x,
                                           cst(type, leaky.getAlpha()));
      return arith::SelectOp::create(rewriter, loc, pos, x, scaled);
    }
    if (auto gelu = dyn_cast<nn::GeluOp>(op)) {
      Value x = arg(0);
      Value inner;
      if (gelu.getApproximate() == nn::GeluApproximation::tanh) {
        // tanh(sqrt(2/pi) * (x + 0.044715 x^3))
        Value x3 = arith::MulFOp::create(
            rewriter, loc, arith::MulFOp::create(rewriter, loc, x, x), x);
        Value poly = arith::AddFOp::create(
            rewriter, loc, x,
            arith::MulFOp::create(rewriter, loc, x3, cst(type, 0.044715)));
        inner = math::TanhOp::create(
            rewriter, loc,
            arith::MulFOp::create(rewriter, loc, poly,
                                  cst(type, std::sqrt(2.0 / M_PI))));
      } else {
        inner = math::ErfOp::create(
            rewriter, loc,
            arith::MulFOp::create(rewriter, loc, x, cst(type, M_SQRT1_2)));
      }
      Value onePlus = arith::AddFOp::create(rewriter, loc, cst(type, 1.0), inner);
      Value half = arith::MulFOp::create(rewriter, loc, x, cst(type, 0.5));
      return arith::MulFOp::create(rewriter, loc, half, onePlus);
    }
    return {};
  }

  /// Integers compare signed; floats as ordered relations, but `ne` is
  /// unordered (true for NaN), as in C and PyTorch.
  Value emitCompare(Location loc, nn::ComparePredicate predicate, Value lhs,
                    Value rhs) {
    using P = nn::ComparePredicate;
    if (isa<FloatType>(lhs.getType())) {
      using F = arith::CmpFPredicate;
      F f = F::OEQ;
      switch (predicate) {
      case P::eq: f = F::OEQ; break;
      case P::ne: f = F::UNE; break;
      case P::lt: f = F::OLT; break;
      case P::le: f = F::OLE; break;
      case P::gt: f = F::OGT; break;
      case P::ge: f = F::OGE; break;
      }
      return arith::CmpFOp::create(rewriter, loc, f, lhs, rhs);
    }
    using I = arith::CmpIPredicate;
    I i = I::eq;
    switch (predicate) {
    case P::eq: i = I::eq; break;
    case P::ne: i = I::ne; break;
    case P::lt: i = I::slt; break;
    case P::le: i = I::sle; break;
    case P::gt: i = I::sgt; break;
    case P::ge: i = I::sge; break;
    }
    return arith::CmpIOp::create(rewriter, loc, i, lhs, rhs);
  }

  /// nn.cast's scalar form (see its description for the rules).
  Value emitCast(Location loc, Value x, Type to) {
    Type from = x.getType();
    if (from == to)
      return x;
    if (to.isInteger(1)) {
      if (isa<FloatType>(from))
        return arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::UNE, x,
                                     createScalarConstant(rewriter, loc, from, 0.0));
      return arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ne, x,
                                   createScalarConstant(rewriter, loc, from, 0.0));
    }
    bool fromFloat = isa<FloatType>(from), toFloat = isa<FloatType>(to);
    if (fromFloat && toFloat)
      return from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth()
                 ? arith::ExtFOp::create(rewriter, loc, to, x).getResult()
                 : arith::TruncFOp::create(rewriter, loc, to, x).getResult();
    if (fromFloat)
      return arith::FPToSIOp::create(rewriter, loc, to, x);
    if (toFloat)
      return from.isInteger(1)
                 ? arith::UIToFPOp::create(rewriter, loc, to, x).getResult()
                 : arith::SIToFPOp::create(rewriter, loc, to, x).getResult();
    if (from.isInteger(1))
      return arith::ExtUIOp::create(rewriter, loc, to, x);
    return from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth()
               ? arith::ExtSIOp::create(rewriter, loc, to, x).getResult()
               : arith::TruncIOp::create(rewriter, loc, to, x).getResult();
  }

  ConversionPatternRewriter &rewriter;
  Operation *root;
  SmallVector<Operation *> members;
  SmallVector<std::pair<Value, Value>> inputs; // original value -> buffer
  llvm::DenseMap<Value, Value> scalars;
};

/// Rooted at the last op of an elementwise group.
struct ElementwiseGroupLowering : ConversionPattern {
  ElementwiseGroupLowering(const TypeConverter &converter, MLIRContext *ctx)
      : ConversionPattern(converter, MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}

  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    if (!isElementwiseGroupOp(op) || isElementwiseMember(op))
      return rewriter.notifyMatchFailure(op, "not the root of an elementwise group");
    GroupBuilder group(rewriter, op);
    if (failed(group.collect(op)))
      return failure();
    FailureOr<Value> out = allocBuffer(rewriter, op, op->getResult(0).getType());
    if (failed(out) || failed(group.build(*out)))
      return failure();
    rewriter.replaceOp(op, *out);
    // Members were collected users first.
    for (Operation *member : group.getMembers())
      if (member != op)
        rewriter.eraseOp(member);
    // Inlined constants are erased by the pass once they have no users.
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

} // namespace

void nncc::populateElementwiseToNNKPatterns(const TypeConverter &converter,
                                            RewritePatternSet &patterns) {
  patterns.add<ElementwiseGroupLowering>(
      converter, patterns.getContext());
  patterns.add<ActivationGradLowering, DropoutLowering, StopGradientLowering>(converter, patterns.getContext());
}
