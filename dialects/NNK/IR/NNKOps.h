//===- NNKOps.h - nnk dialect operations ------------------------*- C++ -*-===//

#ifndef NNCC_DIALECT_KERNEL_IR_NNKOPS_H
#define NNCC_DIALECT_KERNEL_IR_NNKOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/NNK/IR/NNKDialect.h"
#include "dialects/NNK/IR/NNKTypes.h"

#define GET_OP_CLASSES
#include "dialects/NNK/IR/NNKOps.h.inc"

namespace nncc::nnk {
/// Number of stage slots `nnk.ode_solve`'s work buffer holds for `method`
/// (euler 2, rk4 5, dopri5 9).
int64_t getODEWorkSlots(ODEMethod method);
/// Gates of a recurrent cell: the rows of W_hh in units of the hidden size.
int64_t getGateCount(Cell cell);
} // namespace nncc::nnk

#endif // NNCC_DIALECT_KERNEL_IR_NNKOPS_H
