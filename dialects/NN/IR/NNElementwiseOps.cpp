//===- NNElementwiseOps.cpp - nn elementwise ops ----------------*- C++ -*-===//
//
// Type inference and verifiers of the broadcasting arithmetic, comparisons,
// select, casts, activations, dropout, stop_gradient and activation_grad.
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/IR/NNOps.h"

#include "dialects/NN/IR/NNOpsCommon.h"

using namespace mlir;
using namespace nncc::nn;
using namespace nncc::nn::detail;

namespace {
using NNTensor = nncc::nn::TensorType;
} // namespace

/// Elementwise binary ops: same element type, NumPy broadcasting.
static LogicalResult inferBroadcast(const InferDiagnostics &diag, Value lhs,
                                    Value rhs,
                                    SmallVectorImpl<Type> &inferred) {
  FailureOr<nncc::nn::TensorType> lhsType = diag.tensor(lhs, "lhs");
  FailureOr<nncc::nn::TensorType> rhsType = diag.tensor(rhs, "rhs");
  if (failed(lhsType) || failed(rhsType) ||
      failed(diag.expectElementType(*rhsType, lhsType->getElementType(),
                                    "rhs")))
    return failure();
  std::optional<SmallVector<Dim>> shape =
      broadcastShapes(lhsType->getDims(), rhsType->getDims());
  if (!shape)
    return diag.error("operands of shapes ", formatShape(lhsType->getDims()),
                      " and ", formatShape(rhsType->getDims()),
                      " are not broadcastable");
  inferred.push_back(lhsType->withDims(*shape));
  return success();
}

#define NN_DEFINE_BINARY_INFER(OP)                                             \
  LogicalResult OP::inferReturnTypes(MLIRContext *,                            \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &inferred) {        \
    return inferBroadcast(InferDiagnostics(loc, getOperationName()),           \
                          adaptor.getLhs(), adaptor.getRhs(), inferred);       \
  }
NN_DEFINE_BINARY_INFER(AddOp)
NN_DEFINE_BINARY_INFER(SubOp)
NN_DEFINE_BINARY_INFER(MulOp)
#undef NN_DEFINE_BINARY_INFER

LogicalResult DivOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  if (failed(inferBroadcast(diag, adaptor.getLhs(), adaptor.getRhs(), inferred)))
    return failure();
  Type element = cast<nncc::nn::TensorType>(inferred[0]).getElementType();
  if (!isa<FloatType>(element))
    return diag.error("division needs float operands, got ", element,
                      " (cast them to a float type first)");
  return success();
}

#define NN_DEFINE_UNARY_INFER(OP)                                              \
  LogicalResult OP::inferReturnTypes(MLIRContext *,                            \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &inferred) {        \
    return inferSameAsOperand(InferDiagnostics(loc, getOperationName()),       \
                              adaptor.getX(), inferred);                       \
  }
NN_DEFINE_UNARY_INFER(NegOp)
NN_DEFINE_UNARY_INFER(ReluOp)
NN_DEFINE_UNARY_INFER(TanhOp)
NN_DEFINE_UNARY_INFER(SigmoidOp)
NN_DEFINE_UNARY_INFER(ExpOp)
NN_DEFINE_UNARY_INFER(LogOp)
NN_DEFINE_UNARY_INFER(LeakyReluOp)
NN_DEFINE_UNARY_INFER(GeluOp)
NN_DEFINE_UNARY_INFER(DropoutOp)
#undef NN_DEFINE_UNARY_INFER

LogicalResult CompareOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  SmallVector<Type, 1> broadcast;
  if (failed(inferBroadcast(InferDiagnostics(loc, getOperationName()),
                            adaptor.getLhs(), adaptor.getRhs(), broadcast)))
    return failure();
  inferred.push_back(cast<nncc::nn::TensorType>(broadcast[0])
                         .withElementType(IntegerType::get(ctx, 1)));
  return success();
}

LogicalResult SelectOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> cond = diag.tensor(adaptor.getCond(), "cond");
  if (failed(cond))
    return failure();
  if (!cond->getElementType().isInteger(1))
    return diag.error("expected cond to have element type i1, got ",
                      cond->getElementType());
  FailureOr<nncc::nn::TensorType> a = diag.tensor(adaptor.getA(), "a");
  FailureOr<nncc::nn::TensorType> b = diag.tensor(adaptor.getB(), "b");
  if (failed(a) || failed(b) ||
      failed(diag.expectElementType(*b, a->getElementType(), "b")))
    return failure();
  std::optional<SmallVector<Dim>> values =
      broadcastShapes(a->getDims(), b->getDims());
  if (!values)
    return diag.error("a of shape ", formatShape(a->getDims()), " and b of shape ",
                      formatShape(b->getDims()), " are not broadcastable");
  std::optional<SmallVector<Dim>> shape =
      broadcastShapes(cond->getDims(), *values);
  if (!shape)
    return diag.error("cond of shape ", formatShape(cond->getDims()),
                      " does not broadcast with values of shape ",
                      formatShape(*values));
  inferred.push_back(a->withDims(*shape));
  return success();
}

LogicalResult CastOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> x = diag.tensor(adaptor.getX(), "x");
  if (failed(x))
    return failure();
  Type to = adaptor.getTo();
  if (!to || !(to.isF32() || to.isF64() || to.isSignlessInteger(32) ||
               to.isSignlessInteger(64) || to.isSignlessInteger(1)))
    return diag.error("can only cast to f32, f64, i32, i64 or i1, got ", to);
  inferred.push_back(x->withElementType(to));
  return success();
}

LogicalResult DropoutOp::verify() {
  return verifyProbability(*this, getP(), "p");
}

LogicalResult StopGradientOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> x = diag.tensor(adaptor.getX(), "x");
  if (failed(x))
    return failure();
  inferred.push_back(*x);
  return success();
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

LogicalResult ActivationGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> x = diag.tensor(adaptor.getX(), "x");
  if (failed(x) || failed(expectAdjoint(diag, adaptor.getDy(), *x, "dy")))
    return failure();
  inferred.push_back(*x);
  return success();
}

LogicalResult ActivationGradOp::verify() {
  StringRef kind = getKind();
  if (kind != "relu" && kind != "leaky_relu" && kind != "gelu")
    return emitOpError("kind must be \"relu\", \"leaky_relu\" or \"gelu\", "
                       "got \"")
           << kind << "\"";
  return success();
}
