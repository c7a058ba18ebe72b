//===- NNAttrs.cpp - nn dialect attributes and enums ------------*- C++ -*-===//

#include "dialects/NN/IR/NNAttrs.h"

#include "dialects/NN/IR/NNDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace nncc::nn;

#include "dialects/NN/IR/NNEnums.cpp.inc"
#include "dialects/NN/IR/NNInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// Parameter helpers
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t>>
nncc::nn::parseBracketedI64List(AsmParser &parser) {
  SmallVector<int64_t> values;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        return parser.parseInteger(values.emplace_back());
      }))
    return failure();
  return values;
}

void nncc::nn::printBracketedI64List(AsmPrinter &printer,
                                     ArrayRef<int64_t> values) {
  printer << '[';
  llvm::interleaveComma(values, printer);
  printer << ']';
}

//===----------------------------------------------------------------------===//
// InitAttr
//===----------------------------------------------------------------------===//

size_t InitAttr::getNumValues(InitKind kind) {
  switch (kind) {
  case InitKind::uniform:
  case InitKind::normal:
    return 2;
  case InitKind::constant:
    return 1;
  case InitKind::zeros:
  case InitKind::ones:
    return 0;
  }
  llvm_unreachable("unknown InitKind");
}

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind, DenseF64ArrayAttr values) {
  if (!values)
    return emitError() << "init values must not be null";
  ArrayRef<double> numbers = values.asArrayRef();
  size_t expected = getNumValues(kind);
  if (numbers.size() != expected)
    return emitError() << "'" << stringifyInitKind(kind) << "' init takes "
                       << expected << " value(s), got " << numbers.size();
  if (kind == InitKind::uniform && !(numbers[0] <= numbers[1]))
    return emitError() << "uniform init needs lo <= hi, got " << numbers[0]
                       << " > " << numbers[1];
  if (kind == InitKind::normal && !(numbers[1] >= 0))
    return emitError() << "normal init needs std >= 0, got " << numbers[1];
  return success();
}

/// init ::= `<` kind (`,` float)* `>`
Attribute InitAttr::parse(AsmParser &parser, Type) {
  SMLoc kindLoc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseLess() || parser.parseKeyword(&keyword))
    return {};
  std::optional<InitKind> kind = symbolizeInitKind(keyword);
  if (!kind) {
    parser.emitError(kindLoc, "unknown init kind '")
        << keyword << "', expected uniform, normal, constant, zeros or ones";
    return {};
  }
  SmallVector<double> values;
  while (succeeded(parser.parseOptionalComma()))
    if (parser.parseFloat(values.emplace_back()))
      return {};
  if (parser.parseGreater())
    return {};
  MLIRContext *ctx = parser.getContext();
  return getChecked([&] { return parser.emitError(kindLoc); }, ctx, *kind,
                    DenseF64ArrayAttr::get(ctx, values));
}

void InitAttr::print(AsmPrinter &printer) const {
  printer << '<' << stringifyInitKind(getKind());
  for (double value : getValues().asArrayRef()) {
    printer << ", ";
    printer.printFloat(llvm::APFloat(value));
  }
  printer << '>';
}

//===----------------------------------------------------------------------===//
// Attention kinds
//===----------------------------------------------------------------------===//

int64_t DenseAttentionAttr::getNumInputProjections() const { return 3; }
int64_t DilatedAttentionAttr::getNumInputProjections() const { return 3; }
int64_t LshAttentionAttr::getNumInputProjections() const { return 2; }

LogicalResult
DilatedAttentionAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                             int64_t window, int64_t dilation,
                             ArrayRef<int64_t> global) {
  if (window < 1)
    return emitError() << "dilated attention window must be >= 1, got "
                       << window;
  if (dilation < 1)
    return emitError() << "dilated attention dilation must be >= 1, got "
                       << dilation;
  for (int64_t position : global)
    if (position < 0)
      return emitError()
             << "dilated attention global positions must be >= 0, got "
             << position;
  return success();
}

LogicalResult
LshAttentionAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         int64_t hashes, int64_t chunk) {
  if (hashes < 1)
    return emitError() << "lsh attention hashes must be >= 1, got " << hashes;
  if (chunk < 1)
    return emitError() << "lsh attention chunk must be >= 1, got " << chunk;
  return success();
}

#define GET_ATTRDEF_CLASSES
#include "dialects/NN/IR/NNAttrs.cpp.inc"

void NNDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/NN/IR/NNAttrs.cpp.inc"
      >();
}
