//===- NNKDialect.cpp - The nnk dialect, its buffer type and enums --------===//

#include "dialects/NNK/IR/NNKDialect.h"

#include "dialects/NNK/IR/NNKOps.h"
#include "dialects/NN/IR/NNOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::nnk;

#include "dialects/NNK/IR/NNKDialect.cpp.inc"
#include "dialects/NNK/IR/NNKEnums.cpp.inc"

void NNKDialect::initialize() {
  registerTypes();
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "dialects/NNK/IR/NNKOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// BufferType
//===----------------------------------------------------------------------===//

bool BufferType::isCompatibleWith(BufferType other) const {
  return getElementType() == other.getElementType() &&
         nncc::areCompatibleShapes(getDims(), other.getDims());
}

bool BufferType::hasKnownDims() const {
  return llvm::none_of(getDims(), [](Dim d) { return d.isDynamic(); });
}

LogicalResult BufferType::verify(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayRef<Dim> dims, Type elementType) {
  return verifyShapedBody(emitError, dims, elementType);
}

/// buffer-type ::= `<` `[` (dim (`,` dim)*)? `]` `,` element-type `>`
Type BufferType::parse(AsmParser &parser) {
  SmallVector<Dim> dims;
  Type elementType;
  SMLoc elementLoc;
  if (parseShapedBody(parser, dims, elementType, elementLoc))
    return {};
  return getChecked([&] { return parser.emitError(elementLoc); }, parser.getContext(), dims,
                    elementType);
}

void BufferType::print(AsmPrinter &printer) const {
  printShapedBody(printer, getDims(), getElementType());
}

#define GET_TYPEDEF_CLASSES
#include "dialects/NNK/IR/NNKTypes.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/NNK/IR/NNKAttrs.cpp.inc"

void NNKDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/NNK/IR/NNKTypes.cpp.inc"
      >();
}

void NNKDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/NNK/IR/NNKAttrs.cpp.inc"
      >();
}
