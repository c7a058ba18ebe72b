//===- Shape.cpp - dims and shapes, shared by the nn and nnk dialects -----===//

#include "nncc/Support/Shape.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace nncc {

void Dim::print(llvm::raw_ostream &os) const {
  if (isStatic())
    os << size;
  else if (isSymbolic())
    os << symbol.getValue();
  else
    os << '?';
}

std::string Dim::str() const {
  std::string result;
  llvm::raw_string_ostream os(result);
  print(os);
  return result;
}

std::string formatShape(ArrayRef<Dim> shape) {
  std::string result;
  llvm::raw_string_ostream os(result);
  os << '[';
  llvm::interleaveComma(shape, os);
  os << ']';
  return result;
}

bool areCompatibleShapes(ArrayRef<Dim> lhs, ArrayRef<Dim> rhs) {
  return lhs.size() == rhs.size() &&
         llvm::all_of(llvm::zip_equal(lhs, rhs), [](auto dims) {
           return std::get<0>(dims).isCompatibleWith(std::get<1>(dims));
         });
}

std::optional<Dim> broadcastDims(Dim lhs, Dim rhs) {
  auto isOne = [](Dim dim) { return dim.isStatic() && dim.getSize() == 1; };
  if (lhs == rhs || isOne(rhs))
    return lhs;
  if (isOne(lhs))
    return rhs;
  if (lhs.isDynamic())
    return rhs;
  if (rhs.isDynamic())
    return lhs;
  return std::nullopt;
}

std::optional<SmallVector<Dim>> broadcastShapes(ArrayRef<Dim> lhs,
                                                ArrayRef<Dim> rhs) {
  if (lhs.size() < rhs.size())
    std::swap(lhs, rhs);
  SmallVector<Dim> result(lhs);
  size_t offset = lhs.size() - rhs.size();
  for (auto [index, dim] : llvm::enumerate(rhs)) {
    std::optional<Dim> broadcast = broadcastDims(lhs[offset + index], dim);
    if (!broadcast)
      return std::nullopt;
    result[offset + index] = *broadcast;
  }
  return result;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

bool isValidDimSymbol(StringRef name) {
  if (name.empty() || !(llvm::isAlpha(name.front()) || name.front() == '_'))
    return false;
  return llvm::all_of(name.drop_front(), [](char c) {
    return llvm::isAlnum(c) || c == '_' || c == '$' || c == '.';
  });
}

/// dim ::= integer | bare-identifier | `?`
static ParseResult parseDim(AsmParser &parser, SmallVectorImpl<Dim> &dims) {
  SMLoc loc = parser.getCurrentLocation();
  if (succeeded(parser.parseOptionalQuestion())) {
    dims.push_back(Dim::getDynamic());
    return success();
  }
  int64_t size = 0;
  OptionalParseResult sizeResult = parser.parseOptionalInteger(size);
  if (sizeResult.has_value()) {
    if (failed(*sizeResult))
      return failure();
    if (size < 0)
      return parser.emitError(loc, "dims must be non-negative, got ") << size;
    dims.push_back(Dim::getStatic(size));
    return success();
  }
  StringRef symbol;
  if (succeeded(parser.parseOptionalKeyword(&symbol))) {
    dims.push_back(Dim::getSymbolic(parser.getContext(), symbol));
    return success();
  }
  return parser.emitError(loc,
                          "expected a dim: an integer, a symbol name or '?'");
}

ParseResult parseShapedBody(AsmParser &parser, SmallVectorImpl<Dim> &dims, Type &elementType,
                            SMLoc &elementLoc) {
  if (parser.parseLess() ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                     [&] { return parseDim(parser, dims); }) ||
      parser.parseComma())
    return failure();
  elementLoc = parser.getCurrentLocation();
  return failure(parser.parseType(elementType) || parser.parseGreater());
}

void printShapedBody(AsmPrinter &printer, ArrayRef<Dim> dims, Type elementType) {
  printer << "<[";
  llvm::interleaveComma(dims, printer.getStream());
  printer << "], " << elementType << '>';
}

LogicalResult verifyShapedBody(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<Dim> dims, Type elementType) {
  for (Dim dim : dims) {
    if (dim.isStatic() && dim.getSize() < 0)
      return emitError() << "dims must be non-negative, got " << dim.getSize();
    if (dim.isSymbolic() && !isValidDimSymbol(dim.getSymbol().getValue()))
      return emitError() << "invalid symbolic dim name '" << dim.getSymbol().getValue()
                         << "'";
  }
  if (!elementType || !isValidElementType(elementType))
    return emitError() << "element type must be one of f32, f64, bf16, f16, "
                          "i32, i64, i1, got "
                       << elementType;
  return success();
}

bool isValidElementType(Type type) {
  return type.isF32() || type.isF64() || type.isBF16() || type.isF16() ||
         type.isSignlessInteger(32) || type.isSignlessInteger(64) ||
         type.isSignlessInteger(1);
}

} // namespace nncc
