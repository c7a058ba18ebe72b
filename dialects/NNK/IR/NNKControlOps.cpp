//===- NNKControlOps.cpp - nnk.alloc, weight, yield, boundary ---*- C++ -*-===//
//
// Verifiers of the control family's nnk ops (NNKControlOps.td).
//
//===----------------------------------------------------------------------===//

#include "dialects/NNK/IR/NNKOps.h"

#include "dialects/NNK/IR/NNKOpsCommon.h"
#include "dialects/NN/IR/NNOps.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::nnk;
using namespace nncc::nnk::detail;

LogicalResult AllocOp::verify() {
  if (!getType().hasKnownDims())
    return emitOpError("dims must be static or symbolic, got ")
           << nncc::formatShape(getType().getDims());
  return success();
}

LogicalResult WeightOp::verify() { return success(); }

LogicalResult WeightOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto param = symbolTable.lookupNearestSymbolFrom<nn::ParameterOp>(
      *this, getNameAttr());
  if (!param)
    return emitOpError("'") << getName()
                            << "' does not name an nn.parameter";
  auto paramType = cast<nn::TensorType>(param.getType());
  BufferType type = getType();
  if (paramType.getElementType() != type.getElementType() ||
      !nncc::areCompatibleShapes(paramType.getDims(), type.getDims()))
    return emitOpError("type ")
           << type << " does not match the parameter's " << paramType;
  return success();
}

LogicalResult YieldOp::verify() {
  Operation *parent = (*this)->getParentOp();
  if (isa<ElementwiseOp>(parent)) {
    if (getValues().size() != 1)
      return emitOpError("in nnk.elementwise must yield exactly one value");
    return success();
  }
  if (!getValues().empty())
    return emitOpError("in ")
           << parent->getName() << " must not yield values";
  return success();
}
