//===- Shape.h - dims and shapes, shared by the nn and nnk dialects -*- C++ -*-===//
//
// `Dim` (a static size, a named symbolic size or `?`) and the shape logic
// both dialects use: `!nn.tensor` and `!nnk.buffer` carry the same dims, and
// the nnk dialect needs these without depending on the nn dialect.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_SUPPORT_SHAPE_H
#define NNCC_SUPPORT_SHAPE_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>
#include <string>

namespace nncc {

/// One dimension of an `!nn.tensor` or `!nnk.buffer`: a static size, a named symbolic size or
/// unknown (`?`). Symbols are uniqued `StringAttr`s, so a Dim is a cheap,
/// trivially copyable value that lives as long as its context.
class Dim {
public:
  /// The unknown dim `?`.
  Dim() = default;

  static Dim getStatic(int64_t size) { return Dim(size, {}); }
  static Dim getSymbolic(mlir::StringAttr name) {
    return Dim(kUnknownSize, name);
  }
  static Dim getSymbolic(mlir::MLIRContext *ctx, llvm::StringRef name) {
    return getSymbolic(mlir::StringAttr::get(ctx, name));
  }
  static Dim getDynamic() { return Dim(); }

  bool isStatic() const { return size != kUnknownSize; }
  bool isSymbolic() const { return static_cast<bool>(symbol); }
  bool isDynamic() const { return !isStatic() && !isSymbolic(); }

  /// The size of a static dim; kUnknownSize (-1) for other dims.
  int64_t getSize() const { return size; }
  /// The name of a symbolic dim; null for other dims.
  mlir::StringAttr getSymbol() const { return symbol; }

  /// Compatible: either is `?`, or both are the same size, or the same
  /// symbol.
  bool isCompatibleWith(Dim other) const {
    return isDynamic() || other.isDynamic() || *this == other;
  }

  /// This dim times `factor`: exact for static dims and for factor 1,
  /// `?` otherwise (a multiple of a symbol has no name).
  Dim scaled(int64_t factor) const {
    if (factor == 1)
      return *this;
    return isStatic() ? getStatic(size * factor) : getDynamic();
  }

  bool operator==(Dim other) const {
    return size == other.size && symbol == other.symbol;
  }
  bool operator!=(Dim other) const { return !(*this == other); }

  /// Prints the dim as written in the type: `4`, `B` or `?`.
  void print(llvm::raw_ostream &os) const;
  std::string str() const;

  static constexpr int64_t kUnknownSize = -1;

private:
  Dim(int64_t size, mlir::StringAttr symbol) : size(size), symbol(symbol) {}

  int64_t size = kUnknownSize;
  mlir::StringAttr symbol;
};

inline llvm::hash_code hash_value(Dim dim) {
  return llvm::hash_combine(dim.getSize(), dim.getSymbol());
}

inline llvm::raw_ostream &operator<<(llvm::raw_ostream &os, Dim dim) {
  dim.print(os);
  return os;
}

/// Formats a shape as in the type syntax: `[B, T, 4]`.
std::string formatShape(llvm::ArrayRef<Dim> shape);

/// Same rank and pairwise compatible dims.
bool areCompatibleShapes(llvm::ArrayRef<Dim> lhs, llvm::ArrayRef<Dim> rhs);

/// NumPy broadcast of two dims: equal dims or a 1 give the other; `?`
/// against a dim that is not 1 gives that dim; `?` against 1 or `?` gives
/// `?`. Returns std::nullopt for two different static sizes or symbols, or
/// a symbol against a static size other than 1.
std::optional<Dim> broadcastDims(Dim lhs, Dim rhs);

/// NumPy broadcast of two shapes aligned on the right; std::nullopt if some
/// pair of dims does not broadcast.
std::optional<llvm::SmallVector<Dim>> broadcastShapes(llvm::ArrayRef<Dim> lhs,
                                                      llvm::ArrayRef<Dim> rhs);

/// True when every dim is a number (no symbol, no `?`).
inline bool isStaticShape(llvm::ArrayRef<Dim> shape) {
  return llvm::all_of(shape, [](Dim d) { return d.isStatic(); });
}

/// Maps `axis` in [-rank, rank) to [0, rank); std::nullopt when out of
/// range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// True for a valid symbolic dim name: [A-Za-z_][A-Za-z0-9_$.]*.
bool isValidDimSymbol(llvm::StringRef name);

/// The element types of `!nn.tensor` and `!nnk.buffer`: f32, f64, bf16,
/// f16, i32, i64 and i1.
bool isValidElementType(mlir::Type type);

/// The body `<[dims], element-type>` that `!nn.tensor` and `!nnk.buffer`
/// share: parsing (a dim is an integer, a symbol or `?`; `elementLoc` is
/// where the element type starts, for the verifier's errors), printing, and
/// verification (dims non-negative, symbols well formed, a valid element type).
mlir::ParseResult parseShapedBody(mlir::AsmParser &parser, llvm::SmallVectorImpl<Dim> &dims,
                                  mlir::Type &elementType, llvm::SMLoc &elementLoc);
void printShapedBody(mlir::AsmPrinter &printer, llvm::ArrayRef<Dim> dims,
                     mlir::Type elementType);
mlir::LogicalResult verifyShapedBody(llvm::function_ref<mlir::InFlightDiagnostic()> emitError,
                                     llvm::ArrayRef<Dim> dims, mlir::Type elementType);

} // namespace nncc

#endif // NNCC_SUPPORT_SHAPE_H
