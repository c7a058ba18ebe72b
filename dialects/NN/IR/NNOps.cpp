//===- NNOps.cpp - nn structural, elementwise, tensor and loss ops -*- C++ -*-//
//
// Result type inference and verifiers of the nn ops other than the recurrent,
// attention and control ops (see NNRecurrentOps.cpp, NNAttentionOps.cpp and
// NNControlOps.cpp). Inference is where operand shapes are checked.
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/IR/NNOps.h"

#include "dialects/NN/IR/NNOpsCommon.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"

#include <limits>

using namespace mlir;
using namespace nncc::nn;
using nncc::nn::detail::InferDiagnostics;

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

FailureOr<nncc::nn::TensorType>
InferDiagnostics::tensor(Value value, StringRef what) const {
  if (!value)
    return error("missing ", what);
  auto type = dyn_cast<nncc::nn::TensorType>(value.getType());
  if (!type)
    return error("expected ", what, " to be an nn tensor, got ",
                 value.getType());
  return type;
}

FailureOr<nncc::nn::TensorType>
InferDiagnostics::tensorOfRank(Value value, StringRef what,
                               int64_t rank) const {
  FailureOr<nncc::nn::TensorType> type = tensor(value, what);
  if (failed(type))
    return failure();
  if (type->getRank() != rank)
    return error("expected ", what, " of rank ", rank, ", got ", *type);
  return type;
}

FailureOr<nncc::nn::TensorType>
InferDiagnostics::tensorOfMinRank(Value value, StringRef what,
                                  int64_t rank) const {
  FailureOr<nncc::nn::TensorType> type = tensor(value, what);
  if (failed(type))
    return failure();
  if (type->getRank() < rank)
    return error("expected ", what, " of rank >= ", rank, ", got ", *type);
  return type;
}

LogicalResult InferDiagnostics::expectShape(nncc::nn::TensorType type,
                                            ArrayRef<Dim> expected,
                                            const Twine &what) const {
  if (areCompatibleShapes(type.getDims(), expected))
    return success();
  return error("expected ", what, " of shape ", formatShape(expected),
               ", got ", formatShape(type.getDims()));
}

LogicalResult InferDiagnostics::expectElementType(nncc::nn::TensorType type,
                                                  Type expected,
                                                  const Twine &what) const {
  if (type.getElementType() == expected)
    return success();
  return error("expected ", what, " to have element type ", expected,
               ", got ", type.getElementType());
}

LogicalResult InferDiagnostics::expectFloat(nncc::nn::TensorType type,
                                            const Twine &what) const {
  if (isa<FloatType>(type.getElementType()))
    return success();
  return error("expected ", what, " to have a float element type, got ",
               type.getElementType());
}

LogicalResult InferDiagnostics::expectIndex(nncc::nn::TensorType type,
                                            const Twine &what) const {
  Type element = type.getElementType();
  if (element.isSignlessInteger(32) || element.isSignlessInteger(64))
    return success();
  return error("expected ", what, " to have element type i32 or i64, got ",
               element);
}

SmallVector<Dim> nncc::nn::detail::refineShape(ArrayRef<Dim> lhs,
                                                ArrayRef<Dim> rhs) {
  SmallVector<Dim> result(lhs);
  for (auto [dim, other] : llvm::zip(result, rhs))
    if (dim.isDynamic())
      dim = other;
  return result;
}

LogicalResult nncc::nn::inferResultTypesInPlace(Operation *op) {
  auto inferTypeOp = dyn_cast<InferTypeOpInterface>(op);
  if (!inferTypeOp)
    return success();
  SmallVector<Type> types;
  if (failed(inferTypeOp.inferReturnTypes(
          op->getContext(), op->getLoc(), op->getOperands(),
          op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
          op->getRegions(), types)))
    return failure();
  // An optional trailing reserve result is not inferred: it keeps its type.
  ResultRange results = op->getResults();
  if (results.size() == types.size() + 1 &&
      isa<ReserveType>(results.back().getType()))
    results = results.drop_back();
  if (types.size() != results.size())
    return op->emitOpError("has ")
           << op->getNumResults() << " results but " << types.size()
           << " result types were inferred";
  for (auto [result, type] : llvm::zip_equal(results, types))
    result.setType(type);
  return success();
}

/// Result = the type of a float `x` (unary elementwise ops and the like).
static LogicalResult inferSameAsOperand(const InferDiagnostics &diag, Value x,
                                        SmallVectorImpl<Type> &inferred) {
  FailureOr<nncc::nn::TensorType> type = diag.tensor(x, "operand");
  if (failed(type))
    return failure();
  inferred.push_back(*type);
  return success();
}

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

/// The scalar `[]` of `elementType`.
static nncc::nn::TensorType getScalarType(Type elementType) {
  return nncc::nn::TensorType::get(elementType.getContext(), {}, elementType);
}

//===----------------------------------------------------------------------===//
// Structural ops
//===----------------------------------------------------------------------===//

LogicalResult ParameterOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location>, Adaptor,
                                            SmallVectorImpl<Type> &) {
  return success();
}

LogicalResult
GetParameterOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto parameter =
      symbolTable.lookupNearestSymbolFrom<ParameterOp>(*this, getNameAttr());
  if (!parameter)
    return emitOpError("'") << getName() << "' does not name an nn.parameter";
  if (parameter.getType() != getType())
    return emitOpError("result type ")
           << getType() << " does not match the type " << parameter.getType()
           << " of parameter '" << getName() << "'";
  return success();
}

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  TypedAttr value = adaptor.getValueAttr();
  if (!value || !isa<FloatAttr, IntegerAttr>(value))
    return diag.error("value must be a float or integer attribute");
  if (!nncc::nn::TensorType::isValidElementType(value.getType()))
    return diag.error("value type must be one of f32, f64, bf16, f16, i32, "
                      "i64, i1, got ",
                      value.getType());
  inferred.push_back(getScalarType(value.getType()));
  return success();
}

LogicalResult YieldOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                        Adaptor, SmallVectorImpl<Type> &) {
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

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
NN_DEFINE_UNARY_INFER(SoftmaxOp)
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

LogicalResult SoftmaxOp::verify() {
  if (!normalizeAxis(getAxis(), getX().getType().getRank()))
    return emitOpError("axis ")
           << getAxis() << " is out of range for " << getX().getType();
  return success();
}

/// Probabilities of dropout-like ops lie in [0, 1).
static LogicalResult verifyProbability(Operation *op, double p,
                                       StringRef name) {
  if (!(p >= 0.0 && p < 1.0))
    return op->emitOpError() << name << " must be in [0, 1), got " << p;
  return success();
}

LogicalResult DropoutOp::verify() {
  return verifyProbability(*this, getP(), "p");
}

//===----------------------------------------------------------------------===//
// Tensor ops
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> lhs =
      diag.tensorOfMinRank(adaptor.getLhs(), "lhs", 2);
  FailureOr<nncc::nn::TensorType> rhs =
      diag.tensorOfMinRank(adaptor.getRhs(), "rhs", 2);
  if (failed(lhs) || failed(rhs) ||
      failed(diag.expectElementType(*rhs, lhs->getElementType(), "rhs")))
    return failure();
  ArrayRef<Dim> lhsDims = lhs->getDims(), rhsDims = rhs->getDims();
  Dim lhsK = lhsDims.back(), rhsK = rhsDims[rhsDims.size() - 2];
  if (!lhsK.isCompatibleWith(rhsK))
    return diag.error("contracting dims differ: lhs ",
                      formatShape(lhsDims), " has K = ", lhsK.str(), ", rhs ",
                      formatShape(rhsDims), " has K = ", rhsK.str());
  std::optional<SmallVector<Dim>> batch =
      broadcastShapes(lhsDims.drop_back(2), rhsDims.drop_back(2));
  if (!batch)
    return diag.error("batch dims of ", formatShape(lhsDims), " and ",
                      formatShape(rhsDims), " are not broadcastable");
  batch->push_back(lhsDims[lhsDims.size() - 2]);
  batch->push_back(rhsDims.back());
  inferred.push_back(lhs->withDims(*batch));
  return success();
}

/// The operands of a linear map: x (at least `minRank` dims, [..., K]),
/// weight [V, K] and, when present, bias [V], of one element type; returns
/// x's type and V. The `what`s name them in the errors.
static FailureOr<std::pair<nncc::nn::TensorType, Dim>>
inferLinearOperands(InferDiagnostics &diag, Value xValue, Value weightValue,
                    Value biasValue, int64_t minRank, StringRef xWhat,
                    StringRef weightWhat, StringRef biasWhat) {
  FailureOr<nncc::nn::TensorType> x =
      diag.tensorOfMinRank(xValue, xWhat, minRank);
  FailureOr<nncc::nn::TensorType> weight =
      diag.tensorOfRank(weightValue, "weight", 2);
  if (failed(x) || failed(weight) ||
      failed(diag.expectElementType(*weight, x->getElementType(), "weight")))
    return failure();
  Dim out = weight->getDim(0);
  if (failed(diag.expectShape(*weight, {out, x->getDims().back()}, weightWhat)))
    return failure();
  if (biasValue) {
    FailureOr<nncc::nn::TensorType> bias = diag.tensor(biasValue, "bias");
    if (failed(bias) ||
        failed(diag.expectElementType(*bias, x->getElementType(), "bias")) ||
        failed(diag.expectShape(*bias, {out}, biasWhat)))
      return failure();
  }
  return std::make_pair(*x, out);
}

LogicalResult LinearOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  auto operands = inferLinearOperands(
      diag, adaptor.getX(), adaptor.getWeight(), adaptor.getBias(), 1, "x",
      "weight [out, in] with in = the last dim of x", "bias");
  if (failed(operands))
    return failure();
  auto [x, out] = *operands;
  SmallVector<Dim> dims(x.getDims().drop_back());
  dims.push_back(out);
  inferred.push_back(x.withDims(dims));
  return success();
}

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> indices =
      diag.tensor(adaptor.getIndices(), "indices");
  FailureOr<nncc::nn::TensorType> table =
      diag.tensorOfRank(adaptor.getTable(), "table", 2);
  if (failed(indices) || failed(table) ||
      failed(diag.expectIndex(*indices, "indices")))
    return failure();
  SmallVector<Dim> dims(indices->getDims());
  dims.push_back(table->getDim(1));
  inferred.push_back(table->withDims(dims));
  return success();
}

LogicalResult EmbeddingOp::verify() {
  int64_t p = getPaddingIdx();
  Dim rows = cast<nncc::nn::TensorType>(getTable().getType()).getDim(0);
  if (p < -1 || (rows.isStatic() && p >= rows.getSize()))
    return emitOpError("padding_idx ") << p << " is not a row of the table (-1 or 0.."
                                       << (rows.isStatic() ? rows.getSize() - 1 : 0) << ")";
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> x =
      diag.tensorOfMinRank(adaptor.getX(), "x", 1);
  if (failed(x))
    return failure();
  Dim normalized = x->getDims().back();
  for (auto [value, name] : {std::pair(adaptor.getWeight(), "weight"),
                             std::pair(adaptor.getBias(), "bias")}) {
    if (!value)
      continue;
    FailureOr<nncc::nn::TensorType> type = diag.tensor(value, name);
    if (failed(type) ||
        failed(diag.expectElementType(*type, x->getElementType(), name)) ||
        failed(diag.expectShape(*type, {normalized}, name)))
      return failure();
  }
  inferred.push_back(*x);
  return success();
}

LogicalResult LayerNormOp::verify() {
  if (!(getEps() > 0.0))
    return emitOpError("eps must be > 0, got ") << getEps();
  return success();
}

LogicalResult ZoneoutOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> next =
      diag.tensor(adaptor.getNewState(), "new_state");
  FailureOr<nncc::nn::TensorType> prev =
      diag.tensor(adaptor.getPrevState(), "prev_state");
  if (failed(next) || failed(prev))
    return failure();
  if (!next->isCompatibleWith(*prev))
    return diag.error("states have incompatible types ", *next, " and ",
                      *prev);
  inferred.push_back(
      next->withDims(detail::refineShape(next->getDims(), prev->getDims())));
  return success();
}

LogicalResult ZoneoutOp::verify() {
  return verifyProbability(*this, getP(), "p");
}

LogicalResult MaskTokensOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> tokens =
      diag.tensorOfMinRank(adaptor.getTokens(), "tokens [..., n]", 1);
  if (failed(tokens) || failed(diag.expectIndex(*tokens, "tokens")))
    return failure();
  inferred.push_back(*tokens);
  inferred.push_back(tokens->withElementType(IntegerType::get(ctx, 1)));
  return success();
}

LogicalResult MaskTokensOp::verify() {
  return verifyProbability(*this, getP(), "p");
}

LogicalResult SampleOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> logits =
      diag.tensorOfMinRank(adaptor.getLogits(), "logits [..., V]", 1);
  if (failed(logits))
    return failure();
  ArrayRef<Dim> rowsShape = logits->getDims().drop_back();
  if (adaptor.getRows()) {
    FailureOr<nncc::nn::TensorType> rows =
        diag.tensor(adaptor.getRows(), "rows");
    if (failed(rows) ||
        failed(diag.expectShape(*rows, rowsShape, "rows (logits without V)")))
      return failure();
  }
  inferred.push_back(logits->withDims(rowsShape).withElementType(
      IntegerType::get(ctx, 32)));
  return success();
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

LogicalResult AxialPositionOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> x =
      diag.tensorOfRank(adaptor.getX(), "x [B, T, E]", 3);
  FailureOr<nncc::nn::TensorType> rows =
      diag.tensorOfRank(adaptor.getRows(), "rows [n1, 1, d1]", 3);
  FailureOr<nncc::nn::TensorType> cols =
      diag.tensorOfRank(adaptor.getCols(), "cols [1, n2, d2]", 3);
  if (failed(x) || failed(rows) || failed(cols) ||
      failed(diag.expectElementType(*rows, x->getElementType(), "rows")) ||
      failed(diag.expectElementType(*cols, x->getElementType(), "cols")))
    return failure();
  if (!isStaticShape(rows->getDims()) || !isStaticShape(cols->getDims()))
    return diag.error("the axial tables must have static shapes, got ", *rows,
                      " and ", *cols);
  if (rows->getDim(1).getSize() != 1 || cols->getDim(0).getSize() != 1)
    return diag.error("expected rows [n1, 1, d1] and cols [1, n2, d2], got ",
                      *rows, " and ", *cols);
  int64_t n1 = rows->getDim(0).getSize(), n2 = cols->getDim(1).getSize();
  int64_t width = rows->getDim(2).getSize() + cols->getDim(2).getSize();
  Dim embed = x->getDim(2), time = x->getDim(1);
  if (embed.isStatic() && embed.getSize() != width)
    return diag.error("embedding size ", embed.getSize(),
                      " is not d1 + d2 = ", width, " of the axial tables");
  if (time.isStatic() && time.getSize() > n1 * n2)
    return diag.error("sequence length ", time.getSize(), " exceeds the ",
                      n1 * n2, " positions of the ", n1, " x ", n2,
                      " axial grid");
  inferred.push_back(*x);
  return success();
}

LogicalResult SinusoidalPositionOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> x =
      diag.tensorOfRank(adaptor.getX(), "x [B, T, E]", 3);
  if (failed(x))
    return failure();
  Dim embed = x->getDim(2);
  if (embed.isStatic() && embed.getSize() % 2 != 0)
    return diag.error("embedding size E must be even, got ", embed.getSize());
  inferred.push_back(*x);
  return success();
}

LogicalResult LearnedPositionOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> x =
      diag.tensorOfRank(adaptor.getX(), "x [B, T, E]", 3);
  FailureOr<nncc::nn::TensorType> table =
      diag.tensorOfRank(adaptor.getTable(), "table [P, E]", 2);
  if (failed(x) || failed(table) ||
      failed(diag.expectElementType(*table, x->getElementType(), "table")) ||
      failed(diag.expectShape(*table, {table->getDim(0), x->getDim(2)},
                              "table [P, E]")))
    return failure();
  Dim time = x->getDim(1), positions = table->getDim(0);
  if (time.isStatic() && positions.isStatic() &&
      time.getSize() > positions.getSize())
    return diag.error("sequence length ", time.getSize(),
                      " exceeds the ", positions.getSize(),
                      " positions of the table");
  inferred.push_back(*x);
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return diag.error("expected at least one input");
  FailureOr<nncc::nn::TensorType> first = diag.tensor(inputs.front(), "input");
  if (failed(first))
    return failure();
  int64_t rank = first->getRank();
  std::optional<int64_t> axis = normalizeAxis(adaptor.getAxis(), rank);
  if (!axis)
    return diag.error("axis ", adaptor.getAxis(), " is out of range for ",
                      *first);
  SmallVector<Dim> dims(first->getDims());
  int64_t total = 0;
  bool allStatic = true;
  for (auto [index, input] : llvm::enumerate(inputs)) {
    FailureOr<nncc::nn::TensorType> type = diag.tensor(input, "input");
    if (failed(type) ||
        failed(diag.expectElementType(*type, first->getElementType(),
                                      "input #" + Twine(index))))
      return failure();
    if (type->getRank() != rank)
      return diag.error("expected input #", index, " of rank ", rank,
                        ", got ", *type);
    for (int64_t d = 0; d < rank; ++d) {
      Dim dim = type->getDim(d);
      if (d == *axis) {
        allStatic &= dim.isStatic();
        total += dim.isStatic() ? dim.getSize() : 0;
        continue;
      }
      if (!dim.isCompatibleWith(dims[d]))
        return diag.error("input #", index, " has shape ",
                          formatShape(type->getDims()), ", incompatible with ",
                          formatShape(first->getDims()), " outside axis ",
                          *axis);
      if (dims[d].isDynamic())
        dims[d] = dim;
    }
  }
  if (inputs.size() > 1)
    dims[*axis] = allStatic ? Dim::getStatic(total) : Dim::getDynamic();
  inferred.push_back(first->withDims(dims));
  return success();
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> x = diag.tensor(adaptor.getX(), "x");
  if (failed(x))
    return failure();
  std::optional<int64_t> axis = normalizeAxis(adaptor.getAxis(), x->getRank());
  if (!axis)
    return diag.error("axis ", adaptor.getAxis(), " is out of range for ",
                      *x);
  if (!adaptor.getSizesAttr())
    return diag.error("missing sizes");
  ArrayRef<int64_t> sizes = adaptor.getSizes();
  if (sizes.empty())
    return diag.error("expected at least one size");
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size < 0)
      return diag.error("sizes must be >= 0, got ", size);
    if (size > std::numeric_limits<int64_t>::max() - total)
      return diag.error("sizes overflow int64");
    total += size;
  }
  Dim dim = x->getDim(*axis);
  if (dim.isSymbolic())
    return diag.error("cannot split the symbolic dim ", dim.str(),
                      " into static sizes");
  if (dim.isStatic() && dim.getSize() != total)
    return diag.error("sizes add up to ", total, " but dim ", *axis, " of ",
                      *x, " is ", dim.getSize());
  SmallVector<Dim> dims(x->getDims());
  for (int64_t size : sizes) {
    dims[*axis] = Dim::getStatic(size);
    inferred.push_back(x->withDims(dims));
  }
  return success();
}

/// Length of `start:stop:step` over a dim of static size `size`, with
/// Python's negative indices and clamping.
static int64_t getSliceLength(int64_t size, int64_t start, int64_t stop,
                              int64_t step) {
  auto clampIndex = [&](int64_t index) {
    if (index < 0)
      index = std::max<int64_t>(index, -size) + size;
    return std::min(index, size);
  };
  int64_t begin = clampIndex(start);
  int64_t end =
      stop == std::numeric_limits<int64_t>::max() ? size : clampIndex(stop);
  return end > begin ? (end - begin - 1) / step + 1 : 0;
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> x = diag.tensor(adaptor.getX(), "x");
  if (failed(x))
    return failure();
  if (!adaptor.getStartsAttr() || !adaptor.getStopsAttr() ||
      !adaptor.getStepsAttr())
    return diag.error("missing starts, stops or steps");
  ArrayRef<int64_t> starts = adaptor.getStarts(), stops = adaptor.getStops(),
                    steps = adaptor.getSteps();
  int64_t rank = x->getRank();
  if (static_cast<int64_t>(starts.size()) != rank ||
      static_cast<int64_t>(stops.size()) != rank ||
      static_cast<int64_t>(steps.size()) != rank)
    return diag.error("expected ", rank,
                      " starts, stops and steps (one per dim of ", *x,
                      "), got ", starts.size(), ", ", stops.size(), " and ",
                      steps.size());
  llvm::SmallBitVector squeezed(rank);
  for (int64_t entry : adaptor.getSqueeze()) {
    std::optional<int64_t> dim = normalizeAxis(entry, rank);
    if (!dim)
      return diag.error("squeezed dim ", entry, " is out of range for ", *x);
    if (squeezed.test(*dim))
      return diag.error("dim ", *dim, " is squeezed twice");
    squeezed.set(*dim);
  }
  constexpr int64_t kToEnd = std::numeric_limits<int64_t>::max();
  SmallVector<Dim> dims;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t start = starts[d], stop = stops[d], step = steps[d];
    if (step < 1)
      return diag.error("steps must be >= 1, got ", step, " for dim ", d);
    Dim dim = x->getDim(d);
    Dim sliced = Dim::getDynamic();
    if (dim.isStatic())
      sliced = Dim::getStatic(getSliceLength(dim.getSize(), start, stop, step));
    else if (start == 0 && stop == kToEnd && step == 1)
      sliced = dim;
    else if (start >= 0 && stop >= 0 && stop != kToEnd)
      sliced = Dim::getStatic(stop > start ? (stop - start - 1) / step + 1 : 0);
    if (!squeezed.test(d)) {
      dims.push_back(sliced);
      continue;
    }
    if (sliced.isStatic() && sliced.getSize() != 1)
      return diag.error("squeezed dim ", d, " must select one element, but ",
                        start, ":", stop, ":", step, " selects ",
                        sliced.getSize());
  }
  inferred.push_back(x->withDims(dims));
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> x = diag.tensor(adaptor.getX(), "x");
  if (failed(x))
    return failure();
  if (!adaptor.getPermAttr())
    return diag.error("missing perm");
  ArrayRef<int64_t> perm = adaptor.getPerm();
  int64_t rank = x->getRank();
  llvm::SmallBitVector seen(rank);
  bool isPermutation = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t index : perm) {
    if (!isPermutation || index < 0 || index >= rank || seen.test(index)) {
      isPermutation = false;
      break;
    }
    seen.set(index);
  }
  if (!isPermutation)
    return diag.error("perm must be a permutation of [0, ", rank, ") for ",
                      *x);
  SmallVector<Dim> dims;
  for (int64_t index : perm)
    dims.push_back(x->getDim(index));
  inferred.push_back(x->withDims(dims));
  return success();
}

/// Shared inference of the reductions.
static LogicalResult inferReduce(const InferDiagnostics &diag, Value input,
                                 ArrayRef<int64_t> axes, bool keepdim,
                                 SmallVectorImpl<Type> &inferred) {
  FailureOr<nncc::nn::TensorType> x = diag.tensor(input, "x");
  if (failed(x))
    return failure();
  int64_t rank = x->getRank();
  llvm::SmallBitVector reduced(rank, axes.empty());
  for (int64_t axis : axes) {
    std::optional<int64_t> dim = normalizeAxis(axis, rank);
    if (!dim)
      return diag.error("axis ", axis, " is out of range for ", *x);
    if (reduced.test(*dim))
      return diag.error("axis ", *dim, " is reduced twice");
    reduced.set(*dim);
  }
  SmallVector<Dim> dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced.test(d))
      dims.push_back(x->getDim(d));
    else if (keepdim)
      dims.push_back(Dim::getStatic(1));
  }
  inferred.push_back(x->withDims(dims));
  return success();
}

LogicalResult ReduceMeanOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  return inferReduce(InferDiagnostics(loc, getOperationName()),
                     adaptor.getX(), adaptor.getAxes(), adaptor.getKeepdim(),
                     inferred);
}

LogicalResult ReduceSumOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  return inferReduce(InferDiagnostics(loc, getOperationName()),
                     adaptor.getX(), adaptor.getAxes(), adaptor.getKeepdim(),
                     inferred);
}

FailureOr<SmallVector<Dim>>
nncc::nn::detail::inferAxisReduced(const InferDiagnostics &diag,
                                   nncc::nn::TensorType x, int64_t axis,
                                   bool keepdim) {
  std::optional<int64_t> dim = normalizeAxis(axis, x.getRank());
  if (!dim)
    return diag.error("axis ", axis, " is out of range for ", x);
  SmallVector<Dim> dims;
  for (int64_t d = 0; d < x.getRank(); ++d) {
    if (d != *dim)
      dims.push_back(x.getDim(d));
    else if (keepdim)
      dims.push_back(Dim::getStatic(1));
  }
  return dims;
}

/// nn.argmax / nn.max: a float x, one axis dropped (or kept as 1).
static LogicalResult inferAxisMax(const InferDiagnostics &diag, Value input,
                                  int64_t axis, bool keepdim, Type element,
                                  SmallVectorImpl<Type> &inferred) {
  FailureOr<nncc::nn::TensorType> x = diag.tensor(input, "x");
  if (failed(x) || failed(diag.expectFloat(*x, "x")))
    return failure();
  FailureOr<SmallVector<Dim>> dims =
      nncc::nn::detail::inferAxisReduced(diag, *x, axis, keepdim);
  if (failed(dims))
    return failure();
  nncc::nn::TensorType result = x->withDims(*dims);
  inferred.push_back(element ? result.withElementType(element) : result);
  return success();
}

LogicalResult ArgmaxOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  return inferAxisMax(InferDiagnostics(loc, getOperationName()),
                      adaptor.getX(), adaptor.getAxis(), adaptor.getKeepdim(),
                      IntegerType::get(ctx, 32), inferred);
}

LogicalResult MaxOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  return inferAxisMax(InferDiagnostics(loc, getOperationName()),
                      adaptor.getX(), adaptor.getAxis(), adaptor.getKeepdim(),
                      Type(), inferred);
}

LogicalResult CumsumOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> x = diag.tensor(adaptor.getX(), "x");
  if (failed(x))
    return failure();
  if (!normalizeAxis(adaptor.getAxis(), x->getRank()))
    return diag.error("axis ", adaptor.getAxis(), " is out of range for ", *x);
  inferred.push_back(*x);
  return success();
}

LogicalResult TopkOp::inferReturnTypes(MLIRContext *ctx,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> x = diag.tensor(adaptor.getX(), "x");
  if (failed(x) || failed(diag.expectFloat(*x, "x")))
    return failure();
  int64_t axis = adaptor.getAxis(), k = adaptor.getK();
  std::optional<int64_t> dim = normalizeAxis(axis, x->getRank());
  if (!dim)
    return diag.error("axis ", axis, " is out of range for ", *x);
  Dim n = x->getDim(*dim);
  if (!n.isStatic())
    return diag.error("needs a static size along axis ", axis, " of ", *x,
                      " (k is checked against it)");
  if (k < 1 || k > n.getSize())
    return diag.error("k = ", k, " must be in [1, ", n.getSize(),
                      "] (the size of axis ", axis, " of ", *x, ")");
  SmallVector<Dim> dims(x->getDims());
  dims[*dim] = Dim::getStatic(k);
  nncc::nn::TensorType values = x->withDims(dims);
  inferred.push_back(values);
  inferred.push_back(values.withElementType(IntegerType::get(ctx, 32)));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult MSEOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> pred = diag.tensor(adaptor.getPred(), "pred");
  FailureOr<nncc::nn::TensorType> target =
      diag.tensor(adaptor.getTarget(), "target");
  if (failed(pred) || failed(target))
    return failure();
  if (!pred->isCompatibleWith(*target))
    return diag.error("pred ", *pred, " and target ", *target,
                      " have incompatible types");
  inferred.push_back(getScalarType(pred->getElementType()));
  return success();
}

LogicalResult CrossEntropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> logits =
      diag.tensorOfMinRank(adaptor.getLogits(), "logits [..., C]", 1);
  FailureOr<nncc::nn::TensorType> target =
      diag.tensor(adaptor.getTarget(), "target");
  if (failed(logits) || failed(target) ||
      failed(diag.expectIndex(*target, "target")) ||
      failed(diag.expectShape(*target, logits->getDims().drop_back(),
                              "target (the logits' shape without C)")))
    return failure();
  inferred.push_back(getScalarType(logits->getElementType()));
  return success();
}

LogicalResult LinearSampleOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  auto operands = inferLinearOperands(
      diag, adaptor.getX(), adaptor.getWeight(), adaptor.getBias(), 2,
      "x [..., K]", "weight [V, K] with K = the last dim of x", "bias [V]");
  if (failed(operands))
    return failure();
  nncc::nn::TensorType x = operands->first;
  ArrayRef<Dim> rowsShape = x.getDims().drop_back();
  if (Value rowsValue = adaptor.getRows()) {
    FailureOr<nncc::nn::TensorType> rows = diag.tensor(rowsValue, "rows");
    if (failed(rows) ||
        failed(diag.expectShape(*rows, rowsShape, "rows (x without K)")))
      return failure();
  }
  inferred.push_back(
      x.withDims(rowsShape).withElementType(IntegerType::get(ctx, 32)));
  return success();
}

LogicalResult LinearCrossEntropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  auto operands = inferLinearOperands(
      diag, adaptor.getX(), adaptor.getWeight(), adaptor.getBias(), 2,
      "x [..., K]", "weight [V, K] with K = the last dim of x", "bias [V]");
  if (failed(operands))
    return failure();
  auto [x, classes] = *operands;
  FailureOr<nncc::nn::TensorType> target =
      diag.tensor(adaptor.getTarget(), "target");
  if (failed(target) || failed(diag.expectIndex(*target, "target")) ||
      failed(diag.expectShape(*target, x.getDims().drop_back(),
                              "target (the shape of x without K)")))
    return failure();
  inferred.push_back(getScalarType(x.getElementType()));
  inferred.push_back(x);
  inferred.push_back(x.withDims({classes, x.getDims().back()}));
  inferred.push_back(x.withDims({classes}));
  if (adaptor.getWithLogits()) {
    SmallVector<Dim> dims(x.getDims().drop_back());
    dims.push_back(classes);
    inferred.push_back(x.withDims(dims));
  }
  return success();
}

LogicalResult BCEWithLogitsOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> logits =
      diag.tensor(adaptor.getLogits(), "logits");
  FailureOr<nncc::nn::TensorType> target =
      diag.tensor(adaptor.getTarget(), "target");
  if (failed(logits) || failed(target))
    return failure();
  if (!logits->isCompatibleWith(*target))
    return diag.error("logits ", *logits, " and target ", *target,
                      " have incompatible types");
  if (Value posWeightValue = adaptor.getPosWeight()) {
    FailureOr<nncc::nn::TensorType> posWeight =
        diag.tensor(posWeightValue, "pos_weight");
    if (failed(posWeight))
      return failure();
    if (logits->isScalar())
      return diag.error("pos_weight needs logits with a class dim, got ",
                        *logits);
    if (failed(diag.expectElementType(*posWeight, logits->getElementType(),
                                      "pos_weight")) ||
        failed(diag.expectShape(*posWeight, {logits->getDims().back()},
                                "pos_weight [C]")))
      return failure();
  }
  inferred.push_back(getScalarType(logits->getElementType()));
  return success();
}

#define GET_OP_CLASSES
#include "dialects/NN/IR/NNOps.cpp.inc"
