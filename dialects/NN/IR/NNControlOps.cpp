//===- NNControlOps.cpp - nn parameters, constants, yields ------*- C++ -*-===//
//
// Type inference of nn.parameter, nn.get_parameter (its symbol check),
// nn.constant, nn.yield and the residual marker nn.save.
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/IR/NNOps.h"

#include "dialects/NN/IR/NNOpsCommon.h"

using namespace mlir;
using namespace nncc::nn;
using namespace nncc::nn::detail;

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
// Backward ops
//===----------------------------------------------------------------------===//

LogicalResult SaveOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  return appendTypes(InferDiagnostics(loc, getOperationName()),
                     adaptor.getValue(), "value", inferred);
}
