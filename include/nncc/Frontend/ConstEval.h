//===- ConstEval.h - Compile-time values and constant arithmetic ----------===//
#ifndef NNCC_FRONTEND_CONSTEVAL_H
#define NNCC_FRONTEND_CONSTEVAL_H

#include "nncc/Frontend/AST.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nncc {
namespace frontend {

/// A compile-time value: constants, block/layer arguments, keyword values.
struct CValue {
  enum Kind { Int, Float, Bool, Enum, List, Ctor } kind = Int;
  int64_t i = 0;
  double f = 0.0;
  bool b = false;
  /// Enum: the bare identifier; Ctor: the callee.
  std::string name;
  /// List: the elements; Ctor: the positional arguments.
  std::vector<CValue> elems;
  /// Ctor: the keyword arguments in source order.
  std::vector<std::pair<std::string, CValue>> kwargs;
  SrcLoc loc;
  /// Ctor: the call it was evaluated from (for layer constructors).
  const CallExpr *call = nullptr;

  static CValue makeInt(int64_t v, SrcLoc l = {}) {
    CValue c;
    c.kind = Int;
    c.i = v;
    c.loc = l;
    return c;
  }
  static CValue makeFloat(double v, SrcLoc l = {}) {
    CValue c;
    c.kind = Float;
    c.f = v;
    c.loc = l;
    return c;
  }
  static CValue makeBool(bool v, SrcLoc l = {}) {
    CValue c;
    c.kind = Bool;
    c.b = v;
    c.loc = l;
    return c;
  }
  static CValue makeEnum(std::string n, SrcLoc l = {}) {
    CValue c;
    c.kind = Enum;
    c.name = std::move(n);
    c.loc = l;
    return c;
  }
  bool isNumber() const { return kind == Int || kind == Float; }
  double asDouble() const { return kind == Int ? double(i) : f; }
  /// `int 3`, `float 0.5`, `list [1, 2]`, `identifier 'rk4'`, ...
  std::string describe() const;
  /// Source-like spelling: `3`, `0.5`, `[1, 2]`, `dilated(window: 64)`.
  std::string str() const;
};

/// How a name that appears in a constant expression is bound.
struct NameInfo {
  enum Kind {
    Unbound, // not declared: evaluates to a bare identifier (enum value)
    Const,   // a constant or block parameter (value set)
    Dim,     // a symbolic run-time dimension
    Runtime, // a tensor or other run-time value
    Layer,   // a declared layer
  } kind = Unbound;
  const CValue *value = nullptr;
};
using NameLookup = llvm::function_ref<NameInfo(llvm::StringRef)>;

/// Evaluates a compile-time expression. Integer arithmetic is checked for
/// overflow; `/` of two ints is an int when exact, otherwise a float; `%` is
/// for ints only; division by zero is an error. Errors are reported through
/// `diag` and yield std::nullopt.
std::optional<CValue> evalConst(const Expr &e, NameLookup lookup,
                                DiagEngine &diag);

/// Shortest round-tripping decimal spelling of a double.
std::string formatDouble(double v);

} // namespace frontend
} // namespace nncc

#endif
