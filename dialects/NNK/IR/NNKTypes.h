//===- NNKTypes.h - nnk buffer type and enums -------------------*- C++ -*-===//

#ifndef NNCC_DIALECT_KERNEL_IR_NNKTYPES_H
#define NNCC_DIALECT_KERNEL_IR_NNKTYPES_H

#include "nncc/Support/Shape.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/Types.h"

#include "dialects/NNK/IR/NNKEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/NNK/IR/NNKTypes.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/NNK/IR/NNKAttrs.h.inc"

#endif // NNCC_DIALECT_KERNEL_IR_NNKTYPES_H
