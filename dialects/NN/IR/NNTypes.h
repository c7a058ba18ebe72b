//===- NNTypes.h - nn dialect types and shape helpers -----------*- C++ -*-===//
//
// `!nn.tensor<[dims], elt>` and the dim/shape logic every op shares.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NN_IR_NNTYPES_H
#define NNCC_DIALECT_NN_IR_NNTYPES_H

#include "nncc/Support/Shape.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Types.h"
#include "mlir/IR/TypeRange.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>
#include <string>

namespace nncc::nn {

// Dims and shapes are shared with the nnk dialect (nncc/Support/Shape.h).
using ::nncc::areCompatibleShapes;
using ::nncc::broadcastDims;
using ::nncc::broadcastShapes;
using ::nncc::Dim;
using ::nncc::formatShape;
using ::nncc::isValidDimSymbol;
using ::nncc::normalizeAxis;

/// Compatible types: two nn tensors with the same element type and
/// compatible shapes, or otherwise equal types.
bool areCompatibleTypes(mlir::Type lhs, mlir::Type rhs);
/// Same length and pairwise compatible.
bool areCompatibleTypes(mlir::TypeRange lhs, mlir::TypeRange rhs);
/// Compatible, or compatible once a trailing `!nn.reserve` is dropped from
/// one side: the inferred results of an op with an optional `reserve`
/// result leave the reserve out.
bool areCompatibleTypesUpToReserve(mlir::TypeRange lhs, mlir::TypeRange rhs);

} // namespace nncc::nn

#define GET_TYPEDEF_CLASSES
#include "dialects/NN/IR/NNTypes.h.inc"

#endif // NNCC_DIALECT_NN_IR_NNTYPES_H
