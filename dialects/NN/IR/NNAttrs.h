//===- NNAttrs.h - nn dialect attributes and enums --------------*- C++ -*-===//

#ifndef NNCC_DIALECT_NN_IR_NNATTRS_H
#define NNCC_DIALECT_NN_IR_NNATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include "dialects/NN/IR/NNEnums.h.inc"
#include "dialects/NN/IR/NNInterfaces.h.inc"

namespace nncc::nn {
/// Parses `[1, 2, 3]` (possibly `[]`) for attribute parameters.
mlir::FailureOr<llvm::SmallVector<int64_t>>
parseBracketedI64List(mlir::AsmParser &parser);
/// Prints `[1, 2, 3]`.
void printBracketedI64List(mlir::AsmPrinter &printer,
                           llvm::ArrayRef<int64_t> values);
} // namespace nncc::nn

#define GET_ATTRDEF_CLASSES
#include "dialects/NN/IR/NNAttrs.h.inc"

#endif // NNCC_DIALECT_NN_IR_NNATTRS_H
