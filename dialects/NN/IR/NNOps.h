//===- NNOps.h - nn dialect operations --------------------------*- C++ -*-===//

#ifndef NNCC_DIALECT_NN_IR_NNOPS_H
#define NNCC_DIALECT_NN_IR_NNOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/NN/IR/NNAttrs.h"
#include "dialects/NN/IR/NNDialect.h"
#include "dialects/NN/IR/NNTypes.h"

#include "dialects/NN/IR/NNOpInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/NN/IR/NNOps.h.inc"

namespace nncc::nn {

/// Re-infers the result types of `op` with its InferTypeOpInterface from its
/// current operands, attributes, properties and regions, and sets them.
/// Returns failure, with the error already emitted at the op's location,
/// when the operands do not fit. Ops without the interface (e.g.
/// nn.get_parameter) are left unchanged and succeed.
mlir::LogicalResult inferResultTypesInPlace(mlir::Operation *op);

} // namespace nncc::nn

#endif // NNCC_DIALECT_NN_IR_NNOPS_H
