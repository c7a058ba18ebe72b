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
  for (Dim dim : dims) {
    if (dim.isStatic() && dim.getSize() < 0)
      return emitError() << "dims must be non-negative, got " << dim.getSize();
    if (dim.isSymbolic() && !nncc::isValidDimSymbol(dim.getSymbol().getValue()))
      return emitError() << "invalid symbolic dim name '"
                         << dim.getSymbol().getValue() << "'";
  }
  if (!elementType || !nncc::isValidElementType(elementType))
    return emitError() << "element type must be one of f32, f64, bf16, f16, "
                          "i32, i64, i1, got "
                       << elementType;
  return success();
}

/// buffer-type ::= `<` `[` (dim (`,` dim)*)? `]` `,` element-type `>`
Type BufferType::parse(AsmParser &parser) {
  SmallVector<Dim> dims;
  if (parser.parseLess() ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                     [&] { return nncc::parseDim(parser, dims); }))
    return {};
  Type elementType;
  if (parser.parseComma())
    return {};
  SMLoc elementLoc = parser.getCurrentLocation();
  if (parser.parseType(elementType) || parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(elementLoc); },
                    parser.getContext(), dims, elementType);
}

void BufferType::print(AsmPrinter &printer) const {
  printer << "<[";
  llvm::interleaveComma(getDims(), printer.getStream());
  printer << "], " << getElementType() << '>';
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
