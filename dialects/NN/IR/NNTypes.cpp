//===- NNTypes.cpp - nn dialect types and shape helpers ---------*- C++ -*-===//

#include "dialects/NN/IR/NNTypes.h"

#include "dialects/NN/IR/NNDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace nncc::nn {

//===----------------------------------------------------------------------===//
// Type compatibility
//===----------------------------------------------------------------------===//

bool areCompatibleTypes(Type lhs, Type rhs) {
  auto lhsTensor = dyn_cast<TensorType>(lhs);
  auto rhsTensor = dyn_cast<TensorType>(rhs);
  if (lhsTensor && rhsTensor)
    return lhsTensor.isCompatibleWith(rhsTensor);
  return lhs == rhs;
}

bool areCompatibleTypes(TypeRange lhs, TypeRange rhs) {
  return lhs.size() == rhs.size() &&
         llvm::all_of(llvm::zip_equal(lhs, rhs), [](auto types) {
           return areCompatibleTypes(std::get<0>(types), std::get<1>(types));
         });
}

bool areCompatibleTypesUpToReserve(TypeRange lhs, TypeRange rhs) {
  auto dropReserve = [](TypeRange types) {
    return !types.empty() && isa<ReserveType>(types.back()) ? types.drop_back()
                                                            : types;
  };
  return areCompatibleTypes(dropReserve(lhs), dropReserve(rhs));
}

//===----------------------------------------------------------------------===//
// TensorType
//===----------------------------------------------------------------------===//

bool TensorType::isCompatibleWith(TensorType other) const {
  return getElementType() == other.getElementType() &&
         areCompatibleShapes(getDims(), other.getDims());
}

bool TensorType::isValidElementType(Type type) {
  return nncc::isValidElementType(type);
}

LogicalResult TensorType::verify(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayRef<Dim> dims, Type elementType) {
  return verifyShapedBody(emitError, dims, elementType);
}

/// tensor-type ::= `<` `[` (dim (`,` dim)*)? `]` `,` element-type `>`
Type TensorType::parse(AsmParser &parser) {
  SmallVector<Dim> dims;
  Type elementType;
  SMLoc elementLoc;
  if (parseShapedBody(parser, dims, elementType, elementLoc))
    return {};
  return getChecked([&] { return parser.emitError(elementLoc); }, parser.getContext(), dims,
                    elementType);
}

void TensorType::print(AsmPrinter &printer) const {
  printShapedBody(printer, getDims(), getElementType());
}

} // namespace nncc::nn

#define GET_TYPEDEF_CLASSES
#include "dialects/NN/IR/NNTypes.cpp.inc"

void nncc::nn::NNDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/NN/IR/NNTypes.cpp.inc"
      >();
}
