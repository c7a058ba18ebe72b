//===- NNKOpsCommon.h - checks the nnk op verifiers share ------*- C++ -*-===//
//
// Internal to the dialect library: the buffer checks used by the verifiers
// of every NNK<Family>Ops.cpp (defined in NNKOps.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_DIALECT_NNK_IR_NNKOPSCOMMON_H
#define NNCC_DIALECT_NNK_IR_NNKOPSCOMMON_H

#include "dialects/NNK/IR/NNKOps.h"

namespace nncc::nnk::detail {

/// The buffer type of `v` (every nnk compute operand is one).
BufferType bufferOf(mlir::Value v);
/// Checks that `v` has exactly `dims` (up to compatibility).
mlir::LogicalResult expectDims(mlir::Operation *op, mlir::Value v, llvm::ArrayRef<Dim> dims,
                               llvm::StringRef what);
/// Checks that `v` has rank `rank`.
mlir::LogicalResult expectRank(mlir::Operation *op, mlir::Value v, int64_t rank,
                               llvm::StringRef what);
/// All values share the element type of the first (null values are skipped).
mlir::LogicalResult expectSameElementType(mlir::Operation *op, mlir::ValueRange values);

} // namespace nncc::nnk::detail

#endif // NNCC_DIALECT_NNK_IR_NNKOPSCOMMON_H
