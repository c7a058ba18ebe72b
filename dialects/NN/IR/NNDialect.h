//===- NNDialect.h - The nn dialect -----------------------------*- C++ -*-===//

#ifndef NNCC_DIALECT_NN_IR_NNDIALECT_H
#define NNCC_DIALECT_NN_IR_NNDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/NN/IR/NNDialect.h.inc"

#endif // NNCC_DIALECT_NN_IR_NNDIALECT_H
