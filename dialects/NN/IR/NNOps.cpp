//===- NNOps.cpp - what the nn op families share ----------------*- C++ -*-===//
//
// The inference diagnostics and shape helpers every family's
// NN<Family>Ops.cpp uses (NNOpsCommon.h), in-place result inference, and the
// generated op and op-interface definitions.
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/IR/NNOps.h"

#include "dialects/NN/IR/NNOpsCommon.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace nncc::nn;
using nncc::nn::detail::InferDiagnostics;

namespace {
using NNTensor = nncc::nn::TensorType;
} // namespace

#include "dialects/NN/IR/NNOpInterfaces.cpp.inc"

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

namespace nncc::nn::detail {

/// Result = the type of a float `x` (unary elementwise ops and the like).
LogicalResult inferSameAsOperand(const InferDiagnostics &diag, Value x,
                                        SmallVectorImpl<Type> &inferred) {
  FailureOr<nncc::nn::TensorType> type = diag.tensor(x, "operand");
  if (failed(type))
    return failure();
  inferred.push_back(*type);
  return success();
}

/// The scalar `[]` of `elementType`.
nncc::nn::TensorType getScalarType(Type elementType) {
  return nncc::nn::TensorType::get(elementType.getContext(), {}, elementType);
}

/// Probabilities of dropout-like ops lie in [0, 1).
LogicalResult verifyProbability(Operation *op, double p,
                                       StringRef name) {
  if (!(p >= 0.0 && p < 1.0))
    return op->emitOpError() << name << " must be in [0, 1), got " << p;
  return success();
}

/// The operands of a linear map: x (at least `minRank` dims, [..., K]),
/// weight [V, K] and, when present, bias [V], of one element type; returns
/// x's type and V. The `what`s name them in the errors.
FailureOr<std::pair<nncc::nn::TensorType, Dim>>
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

/// Appends the type of each value (all must be nn tensors).
LogicalResult appendTypes(const InferDiagnostics &diag,
                                 ValueRange values, StringRef what,
                                 SmallVectorImpl<Type> &inferred) {
  for (Value value : values) {
    FailureOr<NNTensor> type = diag.tensor(value, what);
    if (failed(type))
      return failure();
    inferred.push_back(*type);
  }
  return success();
}

/// `adjoint` must be compatible with `expected` when present.
LogicalResult expectAdjoint(const InferDiagnostics &diag, Value adjoint,
                                   Type expected, StringRef what) {
  if (!adjoint)
    return success();
  if (!areCompatibleTypes(adjoint.getType(), expected))
    return diag.error("expected ", what, " of type ", expected, ", got ",
                      adjoint.getType());
  return success();
}

/// Checks every region of `op` against its RegionSignatureOpInterface: one
/// block whose arguments are compatible with the expected argument types and
/// that ends in an nn.yield of values compatible with the expected yield
/// types. `names` names the regions in diagnostics. Robust to any malformed
/// region.
LogicalResult verifyRegionSignatures(RegionSignatureOpInterface op,
                                            ArrayRef<StringRef> names) {
  for (auto [index, name] : llvm::enumerate(names)) {
    SmallVector<Type> argTypes, yieldTypes;
    if (index >= op->getNumRegions() ||
        failed(op.getRegionSignature(index, argTypes, yieldTypes)))
      return op->emitOpError("has malformed operands or regions");
    Region &region = op->getRegion(index);
    if (!llvm::hasSingleElement(region))
      return op->emitOpError("region '")
             << name << "' must have exactly one block";
    Block &block = region.front();
    if (block.getNumArguments() != argTypes.size())
      return op->emitOpError("region '")
             << name << "' must have " << argTypes.size()
             << " block argument(s), got " << block.getNumArguments();
    for (auto [argIndex, arg, expected] :
         llvm::enumerate(block.getArguments(), argTypes))
      if (!areCompatibleTypes(arg.getType(), expected))
        return op->emitOpError("region '")
               << name << "' argument #" << argIndex << " has type "
               << arg.getType() << ", expected " << expected;
    auto yield = block.empty() ? YieldOp() : dyn_cast<YieldOp>(block.back());
    if (!yield)
      return op->emitOpError("region '")
             << name << "' must end with nn.yield";
    if (yield.getValues().size() != yieldTypes.size())
      return yield.emitOpError("yields ")
             << yield.getValues().size() << " value(s), region '" << name
             << "' of " << op->getName() << " expects " << yieldTypes.size();
    for (auto [valueIndex, value, expected] :
         llvm::enumerate(yield.getValues(), yieldTypes))
      if (!areCompatibleTypes(value.getType(), expected))
        return yield.emitOpError("value #")
               << valueIndex << " has type " << value.getType()
               << ", region '" << name << "' of " << op->getName()
               << " expects " << expected;
  }
  return success();
}

} // namespace nncc::nn::detail

#define GET_OP_CLASSES
#include "dialects/NN/IR/NNOps.cpp.inc"
