//===- GradientRules.cpp - the reverse-mode rules of the nn ops -*- C++ -*-===//
//
// Registers every op family's rules (<Family>Gradients.cpp; docs/autodiff.md)
// and defines the helpers they share (GradientRule.h).
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/Transforms/GradientRules.h"
#include "dialects/NN/Transforms/GradientRule.h"

#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::nn;

namespace nncc::nn::gradients {

NNTensor tensorType(Value v) { return cast<NNTensor>(v.getType()); }

bool isFloatTensor(Value v) {
  auto type = dyn_cast<NNTensor>(v.getType());
  return type && isa<FloatType>(type.getElementType());
}

Value scalar(OpBuilder &b, Location loc, double value, Type elementType) {
  return ConstantOp::create(b, loc, b.getFloatAttr(elementType, value));
}
Value add(OpBuilder &b, Location loc, Value x, Value y) { return AddOp::create(b, loc, x, y); }
Value sub(OpBuilder &b, Location loc, Value x, Value y) { return SubOp::create(b, loc, x, y); }
Value mul(OpBuilder &b, Location loc, Value x, Value y) { return MulOp::create(b, loc, x, y); }
Value div(OpBuilder &b, Location loc, Value x, Value y) { return DivOp::create(b, loc, x, y); }
Value zeros(OpBuilder &b, Location loc, Type type) {
  return ZerosOp::create(b, loc, TypeAttr::get(type));
}

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

Value sumLeading(OpBuilder &b, Location loc, Value x) {
  int64_t rank = tensorType(x).getRank();
  if (rank <= 1)
    return x;
  SmallVector<int64_t> axes = llvm::to_vector(llvm::seq<int64_t>(0, rank - 1));
  return ReduceSumOp::create(b, loc, x, axes, false);
}

SmallVector<Value> split(OpBuilder &b, Location loc, Value x, int64_t axis,
                         ArrayRef<int64_t> sizes) {
  SmallVector<Type> placeholders(sizes.size(), x.getType());
  auto op = SplitOp::create(b, loc, placeholders, x, axis, sizes);
  (void)inferResultTypesInPlace(op);
  return SmallVector<Value>(op.getResults().begin(), op.getResults().end());
}

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

Value keepReserve(GradientBuilder &gb, Operation *op) {
  return gb.keepReserve(op, ReserveType::get(op->getContext()));
}

SmallVector<Value> getAll(GradientBuilder &gb, ValueRange values) {
  SmallVector<Value> result;
  for (Value v : values)
    result.push_back(gb.get(v));
  return result;
}
Value getOpt(GradientBuilder &gb, Value v) { return v ? gb.get(v) : Value(); }

} // namespace nncc::nn::gradients

void nncc::nn::registerNNGradientInterfaces(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, NNDialect *) {
    using namespace gradients;
    attachElementwiseGradientRules(*ctx);
    attachNormGradientRules(*ctx);
    attachLinearGradientRules(*ctx);
    attachTokenGradientRules(*ctx);
    attachTensorGradientRules(*ctx);
    attachLossGradientRules(*ctx);
    attachRecurrentGradientRules(*ctx);
    attachAttentionGradientRules(*ctx);
    attachReversibleGradientRules(*ctx);
    attachODEGradientRules(*ctx);
  });
}
