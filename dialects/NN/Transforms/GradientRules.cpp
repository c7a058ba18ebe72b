//===- GradientRules.cpp - reverse-mode rules of the nn ops -----*- C++ -*-===//
//
// One GradientOpInterface external model per nn op kind (docs/autodiff.md):
// which forward values the rule reads (saved) and how the adjoints of the
// operands are built from those of the results. Simple ops are expressed with
// nn ops (plus the helpers of NNGradOps.td); composite layers get one fused
// backward op; reversible blocks reconstruct their input; ODE solves build
// their vector-Jacobian product by differentiating their dynamics region
// with these same rules.
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/Transforms/GradientRules.h"

#include "dialects/NN/IR/NNOps.h"
#include "nncc/Interfaces/GradientOpInterface.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <limits>

using namespace mlir;
using namespace nncc;
using namespace nncc::nn;

namespace {
using NNTensor = nncc::nn::TensorType;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

NNTensor tensorType(Value v) { return cast<NNTensor>(v.getType()); }

bool isFloatTensor(Value v) {
  auto type = dyn_cast<NNTensor>(v.getType());
  return type && isa<FloatType>(type.getElementType());
}

Value scalar(OpBuilder &b, Location loc, double value, Type elementType) {
  return ConstantOp::create(b, loc, b.getFloatAttr(elementType, value));
}
Value add(OpBuilder &b, Location loc, Value x, Value y) {
  return AddOp::create(b, loc, x, y);
}
Value sub(OpBuilder &b, Location loc, Value x, Value y) {
  return SubOp::create(b, loc, x, y);
}
Value mul(OpBuilder &b, Location loc, Value x, Value y) {
  return MulOp::create(b, loc, x, y);
}
Value div(OpBuilder &b, Location loc, Value x, Value y) {
  return DivOp::create(b, loc, x, y);
}
Value zeros(OpBuilder &b, Location loc, Type type) {
  return ZerosOp::create(b, loc, TypeAttr::get(type));
}

/// The adjoint `adjoint` of a broadcast result, summed back to the shape of
/// `type` (the operand's) when the broadcast expanded it.
Value unbroadcast(OpBuilder &b, Location loc, Value adjoint, Type type) {
  auto target = cast<NNTensor>(type);
  auto current = tensorType(adjoint);
  if (areCompatibleShapes(current.getDims(), target.getDims()))
    return adjoint;
  return ReduceToShapeOp::create(b, loc, adjoint, TypeAttr::get(target));
}

Value transposeLastTwo(OpBuilder &b, Location loc, Value x) {
  int64_t rank = tensorType(x).getRank();
  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(perm[rank - 1], perm[rank - 2]);
  return TransposeOp::create(b, loc, x, perm);
}

/// reduce_sum over all dims but the last.
Value sumLeading(OpBuilder &b, Location loc, Value x) {
  int64_t rank = tensorType(x).getRank();
  if (rank <= 1)
    return x;
  SmallVector<int64_t> axes = llvm::to_vector(llvm::seq<int64_t>(0, rank - 1));
  return ReduceSumOp::create(b, loc, x, axes, false);
}

/// nn.split of `x` into `sizes` along `axis` (results typed by inference).
SmallVector<Value> split(OpBuilder &b, Location loc, Value x, int64_t axis,
                         ArrayRef<int64_t> sizes) {
  SmallVector<Type> placeholders(sizes.size(), x.getType());
  auto op = SplitOp::create(b, loc, placeholders, x, axis, sizes);
  (void)inferResultTypesInPlace(op);
  return SmallVector<Value>(op.getResults().begin(), op.getResults().end());
}

/// Values defined outside `op` that its regions read (captures).
void appendCaptures(Operation *op, SmallVectorImpl<Value> &values) {
  op->walk([&](Operation *nested) {
    if (nested == op)
      return;
    for (Value operand : nested->getOperands())
      if (!op->isAncestor(operand.getParentRegion()->getParentOp()) &&
          !llvm::is_contained(values, operand))
        values.push_back(operand);
  });
}

//===----------------------------------------------------------------------===//
// The model: each rule is a `Rule<OpTy>` with static `saved` and `build`.
//===----------------------------------------------------------------------===//

template <typename OpTy> struct Rule;

template <typename OpTy>
struct RuleModel
    : public GradientOpInterface::ExternalModel<RuleModel<OpTy>, OpTy> {
  void getSavedValues(Operation *op, SmallVectorImpl<Value> &saved) const {
    Rule<OpTy>::saved(cast<OpTy>(op), saved);
  }
  void getReconstructedOperands(Operation *op,
                                SmallVectorImpl<Value> &values) const {
    if constexpr (Rule<OpTy>::reconstructs)
      values.push_back(op->getOperand(0));
  }
  LogicalResult buildGradient(Operation *op, GradientBuilder &gb,
                              ArrayRef<Value> resultAdjoints,
                              SmallVectorImpl<Value> &operandAdjoints) const {
    return Rule<OpTy>::build(cast<OpTy>(op), gb, resultAdjoints,
                             operandAdjoints);
  }
};

struct RuleBase {
  static constexpr bool reconstructs = false;
};

#define NN_RULE(OpTy)                                                          \
  template <> struct Rule<OpTy> : RuleBase

#define NN_BUILD(OpTy)                                                         \
  static LogicalResult build(OpTy op, GradientBuilder &gb,                     \
                             ArrayRef<Value> r, SmallVectorImpl<Value> &out)

#define NN_SAVES_NOTHING                                                       \
  template <typename T> static void saved(T, SmallVectorImpl<Value> &) {}

/// Rules whose derivative is a function of the op's result (tanh, sigmoid,
/// exp, softmax): the result is the one value kept for the backward.
#define NN_SAVES_RESULT                                                        \
  template <typename T> static void saved(T op, SmallVectorImpl<Value> &s) {  \
    s.push_back(op.getResult());                                               \
  }

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

NN_RULE(AddOp) {
  NN_SAVES_NOTHING
  NN_BUILD(AddOp) {
    OpBuilder &b = gb.getBuilder();
    if (!isFloatTensor(op.getLhs()))
      return out.append(2, Value()), success();
    out.push_back(unbroadcast(b, op.getLoc(), r[0], op.getLhs().getType()));
    out.push_back(unbroadcast(b, op.getLoc(), r[0], op.getRhs().getType()));
    return success();
  }
};

NN_RULE(SubOp) {
  NN_SAVES_NOTHING
  NN_BUILD(SubOp) {
    OpBuilder &b = gb.getBuilder();
    Location loc = op.getLoc();
    if (!isFloatTensor(op.getLhs()))
      return out.append(2, Value()), success();
    out.push_back(unbroadcast(b, loc, r[0], op.getLhs().getType()));
    out.push_back(gb.needsAdjoint(op.getRhs())
                      ? unbroadcast(b, loc, NegOp::create(b, loc, r[0]),
                                    op.getRhs().getType())
                      : Value());
    return success();
  }
};

NN_RULE(MulOp) {
  static void saved(MulOp op, SmallVectorImpl<Value> &s) {
    s.push_back(op.getLhs());
    s.push_back(op.getRhs());
  }
  NN_BUILD(MulOp) {
    OpBuilder &b = gb.getBuilder();
    Location loc = op.getLoc();
    if (!isFloatTensor(op.getLhs()))
      return out.append(2, Value()), success();
    out.push_back(gb.needsAdjoint(op.getLhs())
                      ? unbroadcast(b, loc, mul(b, loc, r[0], gb.get(op.getRhs())),
                                    op.getLhs().getType())
                      : Value());
    out.push_back(gb.needsAdjoint(op.getRhs())
                      ? unbroadcast(b, loc, mul(b, loc, r[0], gb.get(op.getLhs())),
                                    op.getRhs().getType())
                      : Value());
    return success();
  }
};

NN_RULE(DivOp) {
  static void saved(DivOp op, SmallVectorImpl<Value> &s) {
    s.push_back(op.getLhs());
    s.push_back(op.getRhs());
  }
  NN_BUILD(DivOp) {
    OpBuilder &b = gb.getBuilder();
    Location loc = op.getLoc();
    if (!isFloatTensor(op.getLhs()))
      return out.append(2, Value()), success();
    Value rhs = gb.get(op.getRhs());
    out.push_back(gb.needsAdjoint(op.getLhs())
                      ? unbroadcast(b, loc, div(b, loc, r[0], rhs),
                                    op.getLhs().getType())
                      : Value());
    if (gb.needsAdjoint(op.getRhs())) {
      // d(l/r)/dr = -l / r^2
      Value q = div(b, loc, mul(b, loc, r[0], gb.get(op.getLhs())),
                    mul(b, loc, rhs, rhs));
      out.push_back(unbroadcast(b, loc, NegOp::create(b, loc, q),
                                op.getRhs().getType()));
    } else {
      out.push_back(Value());
    }
    return success();
  }
};

/// Comparisons are piecewise constant: no adjoint for either side.
NN_RULE(CompareOp) {
  NN_SAVES_NOTHING
  NN_BUILD(CompareOp) { return out.append(2, Value()), success(); }
};

/// d a = select(cond, dy, 0), d b = select(cond, 0, dy), each summed back
/// over the dims its broadcast expanded.
NN_RULE(SelectOp) {
  static void saved(SelectOp op, SmallVectorImpl<Value> &s) {
    s.push_back(op.getCond());
  }
  NN_BUILD(SelectOp) {
    OpBuilder &b = gb.getBuilder();
    Location loc = op.getLoc();
    out.push_back(Value());
    if (!isFloatTensor(op.getA()))
      return out.append(2, Value()), success();
    Value cond = gb.get(op.getCond());
    Value zero = scalar(b, loc, 0.0, tensorType(r[0]).getElementType());
    out.push_back(gb.needsAdjoint(op.getA())
                      ? unbroadcast(b, loc, SelectOp::create(b, loc, cond, r[0], zero),
                                    op.getA().getType())
                      : Value());
    out.push_back(gb.needsAdjoint(op.getB())
                      ? unbroadcast(b, loc, SelectOp::create(b, loc, cond, zero, r[0]),
                                    op.getB().getType())
                      : Value());
    return success();
  }
};

/// Float-to-float casts pass the adjoint back in the operand's type; casts
/// from or to integers have none.
NN_RULE(CastOp) {
  NN_SAVES_NOTHING
  NN_BUILD(CastOp) {
    if (!isFloatTensor(op.getX()) || !isFloatTensor(op.getResult()))
      return out.push_back(Value()), success();
    Type back = tensorType(op.getX()).getElementType();
    out.push_back(back == tensorType(r[0]).getElementType()
                      ? r[0]
                      : CastOp::create(gb.getBuilder(), op.getLoc(), r[0],
                                       TypeAttr::get(back)).getResult());
    return success();
  }
};

NN_RULE(NegOp) {
  NN_SAVES_NOTHING
  NN_BUILD(NegOp) {
    out.push_back(NegOp::create(gb.getBuilder(), op.getLoc(), r[0]));
    return success();
  }
};

/// Rules of the form dx = dy * g(y) on the saved result y.
NN_RULE(TanhOp) {
  NN_SAVES_RESULT
  NN_BUILD(TanhOp) {
    OpBuilder &b = gb.getBuilder();
    Location loc = op.getLoc();
    Value y = gb.get(op.getResult());
    Value one = scalar(b, loc, 1.0, tensorType(y).getElementType());
    out.push_back(mul(b, loc, r[0], sub(b, loc, one, mul(b, loc, y, y))));
    return success();
  }
};

NN_RULE(SigmoidOp) {
  NN_SAVES_RESULT
  NN_BUILD(SigmoidOp) {
    OpBuilder &b = gb.getBuilder();
    Location loc = op.getLoc();
    Value y = gb.get(op.getResult());
    Value one = scalar(b, loc, 1.0, tensorType(y).getElementType());
    out.push_back(mul(b, loc, r[0], mul(b, loc, y, sub(b, loc, one, y))));
    return success();
  }
};

NN_RULE(ExpOp) {
  NN_SAVES_RESULT
  NN_BUILD(ExpOp) {
    out.push_back(mul(gb.getBuilder(), op.getLoc(), r[0],
                      gb.get(op.getResult())));
    return success();
  }
};

NN_RULE(LogOp) {
  static void saved(LogOp op, SmallVectorImpl<Value> &s) {
    s.push_back(op.getX());
  }
  NN_BUILD(LogOp) {
    out.push_back(div(gb.getBuilder(), op.getLoc(), r[0], gb.get(op.getX())));
    return success();
  }
};

NN_RULE(ReluOp) {
  static void saved(ReluOp op, SmallVectorImpl<Value> &s) {
    s.push_back(op.getX());
  }
  NN_BUILD(ReluOp) {
    out.push_back(ActivationGradOp::create(gb.getBuilder(), op.getLoc(),
                                           gb.get(op.getX()), r[0], "relu",
                                           0.01, GeluApproximation::none));
    return success();
  }
};

NN_RULE(LeakyReluOp) {
  static void saved(LeakyReluOp op, SmallVectorImpl<Value> &s) {
    s.push_back(op.getX());
  }
  NN_BUILD(LeakyReluOp) {
    out.push_back(ActivationGradOp::create(
        gb.getBuilder(), op.getLoc(), gb.get(op.getX()), r[0], "leaky_relu",
        op.getAlpha(), GeluApproximation::none));
    return success();
  }
};

NN_RULE(GeluOp) {
  static void saved(GeluOp op, SmallVectorImpl<Value> &s) {
    s.push_back(op.getX());
  }
  NN_BUILD(GeluOp) {
    out.push_back(ActivationGradOp::create(gb.getBuilder(), op.getLoc(),
                                           gb.get(op.getX()), r[0], "gelu",
                                           0.01, op.getApproximate()));
    return success();
  }
};

NN_RULE(SoftmaxOp) {
  NN_SAVES_RESULT
  NN_BUILD(SoftmaxOp) {
    // dx = y * (dy - sum(dy * y, axis))
    OpBuilder &b = gb.getBuilder();
    Location loc = op.getLoc();
    Value y = gb.get(op.getResult());
    int64_t axis = *normalizeAxis(op.getAxis(), tensorType(y).getRank());
    Value s = ReduceSumOp::create(b, loc, mul(b, loc, r[0], y),
                                  ArrayRef<int64_t>{axis}, true);
    out.push_back(mul(b, loc, y, sub(b, loc, r[0], s)));
    return success();
  }
};

NN_RULE(DropoutOp) {
  NN_SAVES_NOTHING
  NN_BUILD(DropoutOp) {
    // The mask is a function of (seed, element index): the same op on dy
    // applies the forward's mask and scale.
    out.push_back(DropoutOp::create(gb.getBuilder(), op.getLoc(), r[0],
                                    op.getP(), op.getSeed()));
    return success();
  }
};

NN_RULE(ZoneoutOp) {
  NN_SAVES_NOTHING
  NN_BUILD(ZoneoutOp) {
    // y = m * prev + (1 - m) * new with the seeded mask m: recompute m by
    // zoning out between dy and zeros.
    OpBuilder &b = gb.getBuilder();
    Location loc = op.getLoc();
    Value zero = zeros(b, loc, r[0].getType());
    out.push_back(ZoneoutOp::create(b, loc, r[0], zero, op.getP(),
                                    op.getSeed()));
    out.push_back(ZoneoutOp::create(b, loc, zero, r[0], op.getP(),
                                    op.getSeed()));
    return success();
  }
};

NN_RULE(SinusoidalPositionOp) {
  NN_SAVES_NOTHING
  NN_BUILD(SinusoidalPositionOp) {
    out.push_back(r[0]);
    return success();
  }
};

/// dx = dy; the tables' adjoints sum dy over the positions reading each row.
NN_RULE(AxialPositionOp) {
  NN_SAVES_NOTHING
  NN_BUILD(AxialPositionOp) {
    out.push_back(r[0]);
    if (!gb.needsAdjoint(op.getRows()) && !gb.needsAdjoint(op.getCols()))
      return out.append(2, Value()), success();
    auto rows = tensorType(op.getRows()), cols = tensorType(op.getCols());
    auto grad = AxialPositionGradOp::create(
        gb.getBuilder(), op.getLoc(), r[0],
        ArrayRef<int64_t>{rows.getDim(0).getSize(), cols.getDim(1).getSize()},
        rows.getDim(2).getSize());
    out.push_back(grad.getDrows());
    out.push_back(grad.getDcols());
    return success();
  }
};

/// Token masking, sampling and stop_gradient pass no adjoint to any operand.
NN_RULE(MaskTokensOp) {
  NN_SAVES_NOTHING
  NN_BUILD(MaskTokensOp) { return out.push_back(Value()), success(); }
};

NN_RULE(SampleOp) {
  NN_SAVES_NOTHING
  NN_BUILD(SampleOp) {
    return out.append(op->getNumOperands(), Value()), success();
  }
};

NN_RULE(LinearSampleOp) {
  NN_SAVES_NOTHING
  NN_BUILD(LinearSampleOp) {
    return out.append(op->getNumOperands(), Value()), success();
  }
};

NN_RULE(StopGradientOp) {
  NN_SAVES_NOTHING
  NN_BUILD(StopGradientOp) { return out.push_back(Value()), success(); }
};

NN_RULE(LearnedPositionOp) {
  NN_SAVES_NOTHING
  NN_BUILD(LearnedPositionOp) {
    OpBuilder &b = gb.getBuilder();
    Location loc = op.getLoc();
    out.push_back(r[0]);
    if (!gb.needsAdjoint(op.getTable()))
      return out.push_back(Value()), success();
    // dtable[0:T] = sum over the batch of dy; rows >= T get zero.
    Value rows = ReduceSumOp::create(b, loc, r[0], ArrayRef<int64_t>{0}, false);
    constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
    out.push_back(SliceGradOp::create(
        b, loc, rows, op.getTable().getType(),
        ArrayRef<int64_t>{0, 0}, ArrayRef<int64_t>{kEnd, kEnd},
        ArrayRef<int64_t>{1, 1}, ArrayRef<int64_t>{}));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Tensor ops
//===----------------------------------------------------------------------===//

NN_RULE(MatmulOp) {
  static void saved(MatmulOp op, SmallVectorImpl<Value> &s) {
    s.push_back(op.getLhs());
    s.push_back(op.getRhs());
  }
  NN_BUILD(MatmulOp) {
    OpBuilder &b = gb.getBuilder();
    Location loc = op.getLoc();
    // dA = dC B^T, dB = A^T dC, each summed over broadcast batch dims.
    out.push_back(
        gb.needsAdjoint(op.getLhs())
            ? unbroadcast(b, loc,
                          MatmulOp::create(b, loc, r[0],
                                           transposeLastTwo(
                                               b, loc, gb.get(op.getRhs()))),
                          op.getLhs().getType())
            : Value());
    out.push_back(
        gb.needsAdjoint(op.getRhs())
            ? unbroadcast(b, loc,
                          MatmulOp::create(b, loc,
                                           transposeLastTwo(
                                               b, loc, gb.get(op.getLhs())),
                                           r[0]),
                          op.getRhs().getType())
            : Value());
    return success();
  }
};

NN_RULE(LinearOp) {
  static void saved(LinearOp op, SmallVectorImpl<Value> &s) {
    s.push_back(op.getX());
    s.push_back(op.getWeight());
  }
  NN_BUILD(LinearOp) {
    OpBuilder &b = gb.getBuilder();
    Location loc = op.getLoc();
    if (gb.needsAdjoint(op.getX())) {
      // dx = dy W (dy [..., out], W [out, in]); a vector's as the linear map
      // of W^T (nn.matmul wants matrices).
      Value weight = gb.get(op.getWeight());
      out.push_back(tensorType(op.getX()).getRank() < 2
                        ? LinearOp::create(b, loc, r[0],
                                           TransposeOp::create(b, loc, weight,
                                                               ArrayRef<int64_t>{1, 0}),
                                           Value())
                              .getResult()
                        : MatmulOp::create(b, loc, r[0], weight).getResult());
    } else {
      out.push_back(Value());
    }
    out.push_back(gb.needsAdjoint(op.getWeight())
                      ? LinearWeightGradOp::create(b, loc, r[0],
                                                   gb.get(op.getX()))
                            .getResult()
                      : Value());
    if (op.getBias())
      out.push_back(gb.needsAdjoint(op.getBias()) ? sumLeading(b, loc, r[0])
                                                  : Value());
    return success();
  }
};

NN_RULE(EmbeddingOp) {
  static void saved(EmbeddingOp op, SmallVectorImpl<Value> &s) {
    s.push_back(op.getIndices());
  }
  NN_BUILD(EmbeddingOp) {
    out.push_back(Value());
    auto table = tensorType(op.getTable());
    if (!table.getDim(0).isStatic())
      return op.emitOpError("gradient needs a static number of embeddings");
    out.push_back(EmbeddingGradOp::create(gb.getBuilder(), op.getLoc(),
                                          gb.get(op.getIndices()), r[0],
                                          table.getDim(0).getSize(),
                                          op.getPaddingIdx()));
    return success();
  }
};

NN_RULE(LayerNormOp) {
  static void saved(LayerNormOp op, SmallVectorImpl<Value> &s) {
    s.push_back(op.getX());
    if (op.getWeight())
      s.push_back(op.getWeight());
  }
  NN_BUILD(LayerNormOp) {
    OpBuilder &b = gb.getBuilder();
    Location loc = op.getLoc();
    Value weight = op.getWeight() ? gb.get(op.getWeight()) : Value();
    auto grad = LayerNormGradOp::create(b, loc, gb.get(op.getX()), weight,
                                        r[0], op.getEps());
    out.push_back(grad.getDx());
    if (op.getWeight())
      out.push_back(grad.getDweight().front());
    if (op.getBias())
      out.push_back(sumLeading(b, loc, r[0]));
    return success();
  }
};

NN_RULE(ConcatOp) {
  NN_SAVES_NOTHING
  NN_BUILD(ConcatOp) {
    auto type = tensorType(op.getResult());
    int64_t axis = *normalizeAxis(op.getAxis(), type.getRank());
    SmallVector<int64_t> sizes;
    for (Value input : op.getInputs()) {
      Dim dim = tensorType(input).getDim(axis);
      if (!dim.isStatic())
        return op.emitOpError(
            "gradient needs static sizes along the concatenated axis");
      sizes.push_back(dim.getSize());
    }
    if (!isFloatTensor(op.getResult()))
      return out.append(sizes.size(), Value()), success();
    for (Value piece : split(gb.getBuilder(), op.getLoc(), r[0], axis, sizes))
      out.push_back(piece);
    return success();
  }
};

NN_RULE(SplitOp) {
  NN_SAVES_NOTHING
  NN_BUILD(SplitOp) {
    OpBuilder &b = gb.getBuilder();
    if (!isFloatTensor(op.getX()))
      return out.push_back(Value()), success();
    SmallVector<Value> pieces;
    for (auto [adjoint, result] : llvm::zip_equal(r, op.getResults()))
      pieces.push_back(adjoint ? adjoint
                               : zeros(b, op.getLoc(), result.getType()));
    out.push_back(ConcatOp::create(b, op.getLoc(), pieces, op.getAxis()));
    return success();
  }
};

NN_RULE(SliceOp) {
  NN_SAVES_NOTHING
  NN_BUILD(SliceOp) {
    if (!isFloatTensor(op.getX()))
      return out.push_back(Value()), success();
    out.push_back(SliceGradOp::create(
        gb.getBuilder(), op.getLoc(), r[0], op.getX().getType(),
        op.getStarts(), op.getStops(), op.getSteps(), op.getSqueeze()));
    return success();
  }
};

NN_RULE(TransposeOp) {
  NN_SAVES_NOTHING
  NN_BUILD(TransposeOp) {
    ArrayRef<int64_t> perm = op.getPerm();
    SmallVector<int64_t> inverse(perm.size());
    for (auto [i, p] : llvm::enumerate(perm))
      inverse[p] = static_cast<int64_t>(i);
    out.push_back(
        TransposeOp::create(gb.getBuilder(), op.getLoc(), r[0], inverse));
    return success();
  }
};

template <typename OpTy, bool Mean> struct ReduceRule : RuleBase {
  NN_SAVES_NOTHING
  NN_BUILD(OpTy) {
    if (!isFloatTensor(op.getX()))
      return out.push_back(Value()), success();
    out.push_back(ReduceGradOp::create(
        gb.getBuilder(), op.getLoc(), r[0], op.getX().getType(),
        op.getAxes(), op.getKeepdim(), Mean));
    return success();
  }
};
template <> struct Rule<ReduceSumOp> : ReduceRule<ReduceSumOp, false> {};
template <> struct Rule<ReduceMeanOp> : ReduceRule<ReduceMeanOp, true> {};

/// cumsum: the adjoint of a running sum is the running sum of dy the other
/// way; integer sums carry none.
NN_RULE(CumsumOp) {
  NN_SAVES_NOTHING
  NN_BUILD(CumsumOp) {
    if (!isa<FloatType>(cast<nncc::nn::TensorType>(op.getX().getType()).getElementType()))
      return out.push_back(Value()), success();
    out.push_back(CumsumOp::create(gb.getBuilder(), op.getLoc(), r[0], op.getAxis(),
                                   !op.getReverse()));
    return success();
  }
};

/// argmax's integer result has no adjoint, and passes none to x.
NN_RULE(ArgmaxOp) {
  NN_SAVES_NOTHING
  NN_BUILD(ArgmaxOp) { return out.push_back(Value()), success(); }
};

/// max: dy goes to the first maximal element of each row (torch.max(x,
/// dim)'s rule), found again from the saved x.
NN_RULE(MaxOp) {
  static void saved(MaxOp op, SmallVectorImpl<Value> &s) {
    s.push_back(op.getX());
  }
  NN_BUILD(MaxOp) {
    out.push_back(MaxGradOp::create(gb.getBuilder(), op.getLoc(), r[0],
                                    gb.get(op.getX()), op.getAxis(),
                                    op.getKeepdim()));
    return success();
  }
};

/// topk: the adjoint of values is scattered to the saved indices (distinct
/// within a row, so each position gets at most one); indices pass none.
NN_RULE(TopkOp) {
  static void saved(TopkOp op, SmallVectorImpl<Value> &s) {
    s.push_back(op.getIndices());
  }
  NN_BUILD(TopkOp) {
    if (!r[0])
      return out.push_back(Value()), success();
    int64_t rank = tensorType(op.getX()).getRank();
    int64_t axis = *normalizeAxis(op.getAxis(), rank);
    out.push_back(TopkGradOp::create(
        gb.getBuilder(), op.getLoc(), r[0], gb.get(op.getIndices()),
        op.getAxis(), tensorType(op.getX()).getDim(axis).getSize()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

NN_RULE(MSEOp) {
  static void saved(MSEOp op, SmallVectorImpl<Value> &s) {
    s.push_back(op.getPred());
    s.push_back(op.getTarget());
  }
  NN_BUILD(MSEOp) {
    OpBuilder &b = gb.getBuilder();
    Value dpred = MSEGradOp::create(b, op.getLoc(), gb.get(op.getPred()),
                                    gb.get(op.getTarget()), r[0]);
    out.push_back(dpred);
    out.push_back(gb.needsAdjoint(op.getTarget())
                      ? NegOp::create(b, op.getLoc(), dpred).getResult()
                      : Value());
    return success();
  }
};

NN_RULE(CrossEntropyOp) {
  static void saved(CrossEntropyOp op, SmallVectorImpl<Value> &s) {
    s.push_back(op.getLogits());
    s.push_back(op.getTarget());
  }
  NN_BUILD(CrossEntropyOp) {
    out.push_back(CrossEntropyGradOp::create(
        gb.getBuilder(), op.getLoc(), gb.get(op.getLogits()),
        gb.get(op.getTarget()), r[0], op.getIgnoreIndex()));
    out.push_back(Value());
    return success();
  }
};

NN_RULE(LinearCrossEntropyOp) {
  // The op already computed the gradients for a unit loss adjoint; the
  // backward scales them by the loss adjoint (the logits are not read).
  static void saved(LinearCrossEntropyOp op, SmallVectorImpl<Value> &s) {
    s.push_back(op.getDx());
    s.push_back(op.getDweight());
    if (op.getBias())
      s.push_back(op.getDbias());
  }
  NN_BUILD(LinearCrossEntropyOp) {
    OpBuilder &b = gb.getBuilder();
    Location loc = op.getLoc();
    auto scaled = [&](Value operand, Value unit) {
      return gb.needsAdjoint(operand) ? mul(b, loc, gb.get(unit), r[0])
                                      : Value();
    };
    out.push_back(scaled(op.getX(), op.getDx()));
    out.push_back(scaled(op.getWeight(), op.getDweight()));
    out.push_back(Value());
    if (op.getBias())
      out.push_back(scaled(op.getBias(), op.getDbias()));
    return success();
  }
};

NN_RULE(BCEWithLogitsOp) {
  static void saved(BCEWithLogitsOp op, SmallVectorImpl<Value> &s) {
    s.push_back(op.getLogits());
    s.push_back(op.getTarget());
    if (op.getPosWeight())
      s.push_back(op.getPosWeight());
  }
  /// Per element, with s = loss adjoint / N (the mean) and p the positive
  /// weight (1 without one): dlogits by nn.bce_with_logits_grad;
  /// dtarget = s (p softplus(-x) - softplus(x)) = s ((p - 1) softplus(-x) - x)
  /// (just -s x without p); dpos_weight = s t softplus(-x), summed over the
  /// broadcast dims. softplus(-x) = relu(-x) + log(1 + exp(-|x|)), which
  /// neither overflows nor loses the small values.
  NN_BUILD(BCEWithLogitsOp) {
    OpBuilder &b = gb.getBuilder();
    Location loc = op.getLoc();
    Value x = gb.get(op.getLogits()), t = gb.get(op.getTarget());
    Value posWeight = op.getPosWeight() ? gb.get(op.getPosWeight()) : Value();
    out.push_back(
        BCEWithLogitsGradOp::create(b, loc, x, t, posWeight, r[0]));
    const bool needTarget = gb.needsAdjoint(op.getTarget());
    const bool needPosWeight =
        posWeight && gb.needsAdjoint(op.getPosWeight());
    Value dtarget, dposWeight;
    if (needTarget || needPosWeight) {
      NNTensor xType = tensorType(x);
      Value s = ReduceGradOp::create(b, loc, r[0], xType, /*axes=all*/ {},
                                     /*keepdim=*/false, /*mean=*/true);
      if (!posWeight) {
        dtarget = NegOp::create(b, loc, mul(b, loc, s, x));
      } else {
        Type elem = xType.getElementType();
        Value reluNegX = ReluOp::create(b, loc, NegOp::create(b, loc, x));
        Value absX = add(b, loc, ReluOp::create(b, loc, x), reluNegX);
        Value expNegAbs =
            ExpOp::create(b, loc, NegOp::create(b, loc, absX));
        Value softplusNegX = add(
            b, loc, reluNegX,
            LogOp::create(b, loc,
                          add(b, loc, expNegAbs, scalar(b, loc, 1.0, elem))));
        if (needTarget) {
          Value pMinus1 = sub(b, loc, posWeight, scalar(b, loc, 1.0, elem));
          dtarget = mul(b, loc, s,
                        sub(b, loc, mul(b, loc, pMinus1, softplusNegX), x));
        }
        if (needPosWeight)
          dposWeight = unbroadcast(
              b, loc, mul(b, loc, s, mul(b, loc, t, softplusNegX)),
              posWeight.getType());
      }
    }
    out.push_back(dtarget);
    if (op.getPosWeight())
      out.push_back(dposWeight);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Recurrent layers: one fused BPTT op per layer stack
//===----------------------------------------------------------------------===//

/// Saved: the non-weight operands (weights are parameters, re-read).
template <typename OpTy> void savedRecurrent(OpTy op, SmallVectorImpl<Value> &s) {
  for (Value v : op->getOperands())
    if (!llvm::is_contained(op.getWeights(), v))
      s.push_back(v);
}

/// The reserve the gradient op of `op` (a recurrent stack or attention)
/// reads: the forward keeps what the backward needs (a stack's layer
/// outputs and gates; attention's packed projection, output and
/// log-sum-exp) instead of the backward running it again. Null (recompute)
/// for ops inside regions.
Value keepReserve(GradientBuilder &gb, Operation *op) {
  return gb.keepReserve(op, ReserveType::get(op->getContext()));
}

/// Backward-side copies of `values`.
SmallVector<Value> getAll(GradientBuilder &gb, ValueRange values) {
  SmallVector<Value> result;
  for (Value v : values)
    result.push_back(gb.get(v));
  return result;
}
Value getOpt(GradientBuilder &gb, Value v) { return v ? gb.get(v) : Value(); }

NN_RULE(RNNOp) {
  static void saved(RNNOp op, SmallVectorImpl<Value> &s) {
    savedRecurrent(op, s);
  }
  NN_BUILD(RNNOp) {
    auto grad = RNNGradOp::create(
        gb.getBuilder(), op.getLoc(), gb.get(op.getX()), getOpt(gb, op.getH0()),
        getOpt(gb, op.getLengths()), getAll(gb, op.getWeights()), r[0], r[1],
        keepReserve(gb, op), op.getHiddenSize(), op.getNumLayers(),
        op.getBidirectional(), op.getHasBias(), op.getNonlinearity(),
        op.getCheckpointEveryAttr(), op.getCheckpointSnapshotsAttr());
    out.push_back(grad.getDx());
    if (op.getH0())
      out.push_back(grad.getDh0());
    if (op.getLengths())
      out.push_back(Value());
    llvm::append_range(out, grad.getDweights());
    return success();
  }
};

NN_RULE(LSTMOp) {
  static void saved(LSTMOp op, SmallVectorImpl<Value> &s) {
    savedRecurrent(op, s);
  }
  NN_BUILD(LSTMOp) {
    auto grad = LSTMGradOp::create(
        gb.getBuilder(), op.getLoc(), gb.get(op.getX()), getOpt(gb, op.getH0()),
        getOpt(gb, op.getC0()), getOpt(gb, op.getLengths()),
        getAll(gb, op.getWeights()), r[0], r[1], r[2], keepReserve(gb, op),
        op.getHiddenSize(), op.getNumLayers(), op.getBidirectional(),
        op.getHasBias(), op.getZoneout(), op.getSeed(),
        op.getCheckpointEveryAttr(), op.getCheckpointSnapshotsAttr());
    out.push_back(grad.getDx());
    if (op.getH0())
      out.push_back(grad.getDh0());
    if (op.getC0())
      out.push_back(grad.getDc0());
    if (op.getLengths())
      out.push_back(Value());
    llvm::append_range(out, grad.getDweights());
    return success();
  }
};

NN_RULE(GRUOp) {
  static void saved(GRUOp op, SmallVectorImpl<Value> &s) {
    savedRecurrent(op, s);
  }
  NN_BUILD(GRUOp) {
    auto grad = GRUGradOp::create(
        gb.getBuilder(), op.getLoc(), gb.get(op.getX()), getOpt(gb, op.getH0()),
        getOpt(gb, op.getLengths()), getAll(gb, op.getWeights()), r[0], r[1],
        keepReserve(gb, op), op.getHiddenSize(), op.getNumLayers(),
        op.getBidirectional(), op.getHasBias(), op.getVariant(),
        op.getCheckpointEveryAttr(), op.getCheckpointSnapshotsAttr());
    out.push_back(grad.getDx());
    if (op.getH0())
      out.push_back(grad.getDh0());
    if (op.getLengths())
      out.push_back(Value());
    llvm::append_range(out, grad.getDweights());
    return success();
  }
};

/// Cells: all operands saved (the weights are free).
template <typename OpTy> void savedAll(OpTy op, SmallVectorImpl<Value> &s) {
  llvm::append_range(s, op->getOperands());
}

NN_RULE(RNNCellOp) {
  static void saved(RNNCellOp op, SmallVectorImpl<Value> &s) {
    savedAll(op, s);
  }
  NN_BUILD(RNNCellOp) {
    auto grad = RNNCellGradOp::create(
        gb.getBuilder(), op.getLoc(), gb.get(op.getX()), gb.get(op.getH()),
        gb.get(op.getWIh()), gb.get(op.getWHh()), getOpt(gb, op.getBIh()),
        getOpt(gb, op.getBHh()), r[0], op.getNonlinearity());
    out.push_back(grad.getDx());
    out.push_back(grad.getDh());
    llvm::append_range(out, grad.getDweights());
    return success();
  }
};

NN_RULE(LSTMCellOp) {
  static void saved(LSTMCellOp op, SmallVectorImpl<Value> &s) {
    savedAll(op, s);
  }
  NN_BUILD(LSTMCellOp) {
    auto grad = LSTMCellGradOp::create(
        gb.getBuilder(), op.getLoc(), gb.get(op.getX()), gb.get(op.getH()),
        gb.get(op.getC()), gb.get(op.getWIh()), gb.get(op.getWHh()),
        getOpt(gb, op.getBIh()), getOpt(gb, op.getBHh()), r[0], r[1]);
    out.push_back(grad.getDx());
    out.push_back(grad.getDh());
    out.push_back(grad.getDc());
    llvm::append_range(out, grad.getDweights());
    return success();
  }
};

NN_RULE(GRUCellOp) {
  static void saved(GRUCellOp op, SmallVectorImpl<Value> &s) {
    savedAll(op, s);
  }
  NN_BUILD(GRUCellOp) {
    auto grad = GRUCellGradOp::create(
        gb.getBuilder(), op.getLoc(), gb.get(op.getX()), gb.get(op.getH()),
        gb.get(op.getWIh()), gb.get(op.getWHh()), getOpt(gb, op.getBIh()),
        getOpt(gb, op.getBHh()), r[0], op.getVariant());
    out.push_back(grad.getDx());
    out.push_back(grad.getDh());
    llvm::append_range(out, grad.getDweights());
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

NN_RULE(AttentionOp) {
  static void saved(AttentionOp op, SmallVectorImpl<Value> &s) {
    savedAll(op, s);
  }
  NN_BUILD(AttentionOp) {
    auto grad = AttentionGradOp::create(
        gb.getBuilder(), op.getLoc(), gb.get(op.getX()),
        gb.get(op.getInProjWeight()), getOpt(gb, op.getInProjBias()),
        gb.get(op.getOutProjWeight()), getOpt(gb, op.getOutProjBias()),
        getOpt(gb, op.getKeyPaddingMask()), getOpt(gb, op.getRotations()),
        getOpt(gb, op.getGlobalMask()), r[0], keepReserve(gb, op), op.getNumHeads(),
        op.getKind(), op.getCausal(), op.getDropout(), op.getSeed());
    out.push_back(grad.getDx());
    // Operand order: x, in_w, in_b?, out_w, out_b?, mask?, rotations?,
    // global_mask?; dparams: in_w, in_b?, out_w, out_b?.
    llvm::append_range(out, grad.getDparams());
    if (op.getKeyPaddingMask())
      out.push_back(Value());
    if (op.getRotations())
      out.push_back(Value()); // the hash assignment is a constant
    if (op.getGlobalMask())
      out.push_back(Value());
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Reversible blocks: reconstruct the input from the output
//===----------------------------------------------------------------------===//

NN_RULE(ReversibleOp) {
  static constexpr bool reconstructs = true;
  static void saved(ReversibleOp op, SmallVectorImpl<Value> &s) {
    s.push_back(op.getResult());
    appendCaptures(op, s);
  }
  NN_BUILD(ReversibleOp) {
    // Seed thesis §4.3.5, Algorithm 1. With y1 = x1 + F(x2),
    // y2 = x2 + G(y1): x2 = y2 - G(y1), x1 = y1 - F(x2);
    // dy1' = dy1 + G'(y1)^T dy2, dx1 = dy1', dx2 = dy2 + F'(x2)^T dy1'.
    OpBuilder &b = gb.getBuilder();
    Location loc = op.getLoc();
    Value y = gb.get(op.getResult());
    auto type = tensorType(y);
    int64_t axis = type.getRank() - 1;
    Dim width = type.getDims().back();
    if (!width.isStatic())
      return op.emitOpError("gradient needs a static feature width");
    int64_t half = width.getSize() / 2;
    SmallVector<Value> ys = split(b, loc, y, axis, {half, half});
    SmallVector<Value> dys = split(b, loc, r[0], axis, {half, half});

    FailureOr<RegionClone> g = gb.cloneRegion(op.getG(), ys[0]);
    if (failed(g))
      return failure();
    Value x2 = sub(b, loc, ys[1], g->results[0]);
    SmallVector<Value> gAdj;
    if (failed(gb.differentiate(*g, dys[1], ys[0], gAdj, nullptr)))
      return failure();
    Value dy1 = gAdj[0] ? add(b, loc, dys[0], gAdj[0]) : dys[0];

    FailureOr<RegionClone> f = gb.cloneRegion(op.getF(), x2);
    if (failed(f))
      return failure();
    Value x1 = sub(b, loc, ys[0], f->results[0]);
    SmallVector<Value> fAdj;
    if (failed(gb.differentiate(*f, dy1, x2, fAdj, nullptr)))
      return failure();
    Value dx2 = fAdj[0] ? add(b, loc, dys[1], fAdj[0]) : dys[1];

    gb.setReconstructed(op.getX(),
                        ConcatOp::create(b, loc, ValueRange{x1, x2}, axis));
    out.push_back(ConcatOp::create(b, loc, ValueRange{dy1, dx2}, axis));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// ODE solves
//===----------------------------------------------------------------------===//

/// A detached block with arguments of `types` holding a copy of `region`
/// (block arguments = the new ones) that yields the copy's results.
FailureOr<Block *> copyRegion(GradientBuilder &gb, Location loc,
                              Region &region, TypeRange types) {
  OpBuilder &b = gb.getBuilder();
  OpBuilder::InsertionGuard guard(b);
  auto *block = new Block();
  for (Type type : types)
    block->addArgument(type, loc);
  b.setInsertionPointToEnd(block);
  FailureOr<RegionClone> clone = gb.cloneRegion(region, block->getArguments());
  if (failed(clone)) {
    delete block;
    return failure();
  }
  YieldOp::create(b, loc, clone->results);
  return block;
}

/// A detached block (args..., a) yielding the VJP of `region` at args with
/// cotangent a: the adjoints of the arguments selected by `wrt` (indices),
/// then the parameter gradients (whose names go to `params`).
FailureOr<Block *> vjpRegion(GradientBuilder &gb, Location loc, Region &region,
                             TypeRange argTypes, Type cotangentType,
                             ArrayRef<unsigned> wrt,
                             SmallVectorImpl<Attribute> &params) {
  OpBuilder &b = gb.getBuilder();
  OpBuilder::InsertionGuard guard(b);
  auto *block = new Block();
  for (Type type : argTypes)
    block->addArgument(type, loc);
  Value a = block->addArgument(cotangentType, loc);
  b.setInsertionPointToEnd(block);
  FailureOr<RegionClone> clone =
      gb.cloneRegion(region, block->getArguments().drop_back());
  if (failed(clone)) {
    delete block;
    return failure();
  }
  SmallVector<Value> wrtValues, adjoints;
  for (unsigned index : wrt)
    wrtValues.push_back(block->getArgument(index));
  ParameterGradients grads;
  if (failed(gb.differentiate(*clone, a, wrtValues, adjoints, &grads))) {
    delete block;
    return failure();
  }
  SmallVector<Value> yields;
  for (auto [value, adjoint] : llvm::zip_equal(wrtValues, adjoints))
    yields.push_back(adjoint ? adjoint : zeros(b, loc, value.getType()));
  for (auto &[name, grad] : grads) {
    params.push_back(FlatSymbolRefAttr::get(name));
    yields.push_back(grad);
  }
  YieldOp::create(b, loc, yields);
  // The copy's forward ops that the VJP does not read.
  SmallVector<Operation *> ops;
  for (Operation &op : *block)
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();
  return block;
}

NN_RULE(ODESolveOp) {
  static void saved(ODESolveOp op, SmallVectorImpl<Value> &s) {
    // Adjoint method: the final state, solved backwards; otherwise the
    // initial state, from which the steps are recomputed.
    s.push_back(op.getAdjoint() ? op.getResult() : op.getH0());
    s.push_back(op.getT0());
    s.push_back(op.getT1());
    appendCaptures(op, s);
  }
  NN_BUILD(ODESolveOp) {
    OpBuilder &b = gb.getBuilder();
    Location loc = op.getLoc();
    Type tType = op.getT0().getType(), hType = op.getH0().getType();
    FailureOr<Block *> dynamics =
        copyRegion(gb, loc, op.getDynamics(), {tType, hType});
    if (failed(dynamics))
      return failure();
    SmallVector<Attribute> params;
    FailureOr<Block *> vjp = vjpRegion(gb, loc, op.getDynamics(),
                                       {tType, hType}, hType, {1}, params);
    if (failed(vjp))
      return failure();
    SmallVector<Type> paramTypes;
    auto yield = cast<YieldOp>((*vjp)->back());
    for (Value v : yield.getValues().drop_front())
      paramTypes.push_back(v.getType());
    Value h = gb.get(op.getAdjoint() ? op.getResult() : op.getH0());
    auto grad = ODESolveGradOp::create(
        b, loc, hType, paramTypes, h, gb.get(op.getT0()), gb.get(op.getT1()),
        r[0], op.getMethod(), op.getSteps(), op.getRtol(), op.getAtol(),
        op.getAdjoint(), op.getMaxSteps(), b.getArrayAttr(params));
    grad.getDynamics().push_back(*dynamics);
    grad.getVjp().push_back(*vjp);
    for (auto [name, dparam] : llvm::zip_equal(params, grad.getDparams()))
      gb.addParameterGradient(cast<FlatSymbolRefAttr>(name).getAttr(),
                              dparam);
    out.push_back(grad.getDh0());
    out.push_back(Value());
    out.push_back(Value());
    return success();
  }
};

NN_RULE(ODERNNOp) {
  static void saved(ODERNNOp op, SmallVectorImpl<Value> &s) {
    s.push_back(op.getX());
    s.push_back(op.getTimes());
    if (op.getH0())
      s.push_back(op.getH0());
    s.push_back(op.getResult());
    appendCaptures(op, s);
  }
  NN_BUILD(ODERNNOp) {
    OpBuilder &b = gb.getBuilder();
    Location loc = op.getLoc();
    auto xType = tensorType(op.getX());
    auto hType = xType.withDims(
        {xType.getDim(0), Dim::getStatic(op.getHiddenSize())});
    // Each row's time, [B, 1] (the dynamics' signature).
    auto tType = tensorType(op.getTimes())
                     .withDims({xType.getDim(0), Dim::getStatic(1)});
    auto xtType = xType.withDims({xType.getDim(0), xType.getDim(2)});
    FailureOr<Block *> dynamics =
        copyRegion(gb, loc, op.getDynamics(), {tType, hType});
    if (failed(dynamics))
      return failure();
    SmallVector<Attribute> dynParams, cellParams;
    FailureOr<Block *> dynVjp = vjpRegion(gb, loc, op.getDynamics(),
                                          {tType, hType}, hType, {1},
                                          dynParams);
    if (failed(dynVjp))
      return failure();
    FailureOr<Block *> cellVjp = vjpRegion(gb, loc, op.getCell(),
                                           {xtType, hType}, hType, {0, 1},
                                           cellParams);
    if (failed(cellVjp))
      return failure();
    SmallVector<Type> paramTypes;
    for (Value v : cast<YieldOp>((*dynVjp)->back()).getValues().drop_front())
      paramTypes.push_back(v.getType());
    for (Value v :
         cast<YieldOp>((*cellVjp)->back()).getValues().drop_front(2))
      paramTypes.push_back(v.getType());
    Type dh0Type = op.getH0() ? op.getH0().getType() : Type(hType);
    auto grad = ODERNNGradOp::create(
        b, loc, xType, dh0Type, paramTypes, gb.get(op.getX()),
        gb.get(op.getTimes()), getOpt(gb, op.getH0()),
        gb.get(op.getResult()), r[0], op.getHiddenSize(), op.getMethod(),
        op.getSteps(), op.getRtol(), op.getAtol(), op.getAdjoint(),
        op.getMaxSteps(), b.getArrayAttr(dynParams), b.getArrayAttr(cellParams));
    grad.getDynamics().push_back(*dynamics);
    grad.getDynamicsVjp().push_back(*dynVjp);
    grad.getCellVjp().push_back(*cellVjp);
    SmallVector<Attribute> names(dynParams);
    llvm::append_range(names, cellParams);
    for (auto [name, dparam] : llvm::zip_equal(names, grad.getDparams()))
      gb.addParameterGradient(cast<FlatSymbolRefAttr>(name).getAttr(),
                              dparam);
    out.push_back(grad.getDx());
    out.push_back(Value());
    if (op.getH0())
      out.push_back(grad.getDh0());
    return success();
  }
};

template <typename... OpTys> void attach(MLIRContext *ctx) {
  (OpTys::template attachInterface<RuleModel<OpTys>>(*ctx), ...);
}

} // namespace

void nncc::nn::registerNNGradientInterfaces(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, NNDialect *) {
    attach<AddOp, SubOp, MulOp, DivOp, CompareOp, SelectOp, CastOp, NegOp, TanhOp, SigmoidOp, ExpOp, LogOp,
           ReluOp, LeakyReluOp, GeluOp, SoftmaxOp, DropoutOp, ZoneoutOp,
           SinusoidalPositionOp, LearnedPositionOp, AxialPositionOp,
           MaskTokensOp, SampleOp, LinearSampleOp, StopGradientOp, MatmulOp, LinearOp,
           EmbeddingOp, LayerNormOp, ConcatOp, SplitOp, SliceOp, TransposeOp,
           ReduceSumOp, ReduceMeanOp, ArgmaxOp, MaxOp, CumsumOp, TopkOp, MSEOp, CrossEntropyOp, BCEWithLogitsOp,
           LinearCrossEntropyOp,
           RNNOp, LSTMOp, GRUOp, RNNCellOp, LSTMCellOp, GRUCellOp,
           AttentionOp, ReversibleOp, ODESolveOp, ODERNNOp>(ctx);
  });
}
