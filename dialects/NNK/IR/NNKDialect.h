//===- NNKDialect.h - The nnk kernel dialect --------------------*- C++ -*-===//

#ifndef NNCC_DIALECT_KERNEL_IR_NNKDIALECT_H
#define NNCC_DIALECT_KERNEL_IR_NNKDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Dialect.h"

#include "dialects/NN/IR/NNDialect.h"

#include "dialects/NNK/IR/NNKDialect.h.inc"

#endif // NNCC_DIALECT_KERNEL_IR_NNKDIALECT_H
