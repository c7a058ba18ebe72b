//===- ConstEval.cpp - Constant arithmetic with overflow checks -----------===//
#include "nncc/Frontend/ConstEval.h"

#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace nncc::frontend;

std::string CValue::str() const {
  switch (kind) {
  case Int:
    return std::to_string(i);
  case Float:
    return formatDouble(f);
  case Bool:
    return b ? "true" : "false";
  case Enum:
    return name;
  case List: {
    std::string s = "[";
    for (size_t k = 0; k < elems.size(); ++k)
      s += (k ? ", " : "") + elems[k].str();
    return s + "]";
  }
  case Ctor: {
    std::string s = name + "(";
    bool first = true;
    for (auto &e : elems) {
      s += (first ? "" : ", ") + e.str();
      first = false;
    }
    for (auto &kv : kwargs) {
      s += (first ? "" : ", ") + kv.first + ": " + kv.second.str();
      first = false;
    }
    return s + ")";
  }
  }
  return "?";
}

std::string CValue::describe() const {
  switch (kind) {
  case Int:
    return "int " + str();
  case Float:
    return "float " + str();
  case Bool:
    return "bool " + str();
  case Enum:
    return "identifier '" + name + "'";
  case List:
    return "list " + str();
  case Ctor:
    return "call '" + name + "(...)'";
  }
  return "value";
}

namespace {
class Evaluator {
public:
  Evaluator(NameLookup lookup, DiagEngine &diag) : lookup(lookup), diag(diag) {}

  std::optional<CValue> eval(const Expr &e, unsigned depth) {
    // The parser bounds nesting; this is a second line of defence.
    if (depth > 512) {
      diag.error(e.getLoc(), "constant expression nested too deeply");
      return std::nullopt;
    }
    switch (e.getKind()) {
    case Expr::Int:
      return CValue::makeInt(llvm::cast<IntExpr>(e).value, e.getLoc());
    case Expr::Float:
      return CValue::makeFloat(llvm::cast<FloatExpr>(e).value, e.getLoc());
    case Expr::Bool:
      return CValue::makeBool(llvm::cast<BoolExpr>(e).value, e.getLoc());
    case Expr::Name:
      return evalName(llvm::cast<NameExpr>(e));
    case Expr::List: {
      CValue v;
      v.kind = CValue::List;
      v.loc = e.getLoc();
      for (auto &x : llvm::cast<ListExpr>(e).elems) {
        auto ev = eval(*x, depth + 1);
        if (!ev)
          return std::nullopt;
        v.elems.push_back(std::move(*ev));
      }
      return v;
    }
    case Expr::Call: {
      auto &c = llvm::cast<CallExpr>(e);
      CValue v;
      v.kind = CValue::Ctor;
      v.name = c.callee;
      v.loc = e.getLoc();
      v.call = &c;
      for (auto &a : c.args) {
        auto ev = eval(*a.value, depth + 1);
        if (!ev)
          return std::nullopt;
        if (a.name.empty())
          v.elems.push_back(std::move(*ev));
        else
          v.kwargs.emplace_back(a.name, std::move(*ev));
      }
      return v;
    }
    case Expr::Index:
      diag.error(e.getLoc(), "indexing is not allowed in a constant expression");
      return std::nullopt;
    case Expr::Unary: {
      auto v = eval(*llvm::cast<UnaryExpr>(e).operand, depth + 1);
      if (!v || !checkNumber(*v, "-", e.getLoc()))
        return std::nullopt;
      if (v->kind == CValue::Float)
        return CValue::makeFloat(-v->f, e.getLoc());
      if (v->i == INT64_MIN) {
        diag.error(e.getLoc(), "integer overflow in constant expression: -(" +
                                   v->str() + ")");
        return std::nullopt;
      }
      return CValue::makeInt(-v->i, e.getLoc());
    }
    case Expr::Binary:
      return evalBinary(llvm::cast<BinaryExpr>(e), depth);
    }
    return std::nullopt;
  }

private:
  std::optional<CValue> evalName(const NameExpr &n) {
    NameInfo info = lookup(n.name);
    switch (info.kind) {
    case NameInfo::Unbound:
      return CValue::makeEnum(n.name, n.getLoc());
    case NameInfo::Const: {
      CValue v = *info.value;
      v.loc = n.getLoc();
      return v;
    }
    case NameInfo::Dim:
      diag.error(n.getLoc(), "'" + n.name +
                                 "' is a symbolic dimension, not a "
                                 "compile-time constant");
      return std::nullopt;
    case NameInfo::Runtime:
      diag.error(n.getLoc(), "'" + n.name +
                                 "' is a run-time value; a compile-time "
                                 "constant is required here");
      return std::nullopt;
    case NameInfo::Layer:
      diag.error(n.getLoc(), "'" + n.name +
                                 "' is a layer; a compile-time constant is "
                                 "required here");
      return std::nullopt;
    }
    return std::nullopt;
  }

  bool checkNumber(const CValue &v, const char *op, SrcLoc l) {
    if (v.isNumber())
      return true;
    if (v.kind == CValue::Enum)
      diag.error(v.loc, "use of undeclared constant '" + v.name + "'");
    else
      diag.error(l, llvm::Twine("operator '") + op +
                        "' needs numbers, got " + v.describe());
    return false;
  }

  /// Ints compare exactly; a float on either side compares as doubles.
  static bool compare(BinOp op, const CValue &l, const CValue &r) {
    auto rel = [&](auto x, auto y) {
      switch (op) {
      case BinOp::Eq: return x == y;
      case BinOp::Ne: return x != y;
      case BinOp::Lt: return x < y;
      case BinOp::Le: return x <= y;
      case BinOp::Gt: return x > y;
      default: return x >= y;
      }
    };
    if (l.kind == CValue::Int && r.kind == CValue::Int)
      return rel(l.i, r.i);
    return rel(l.asDouble(), r.asDouble());
  }

  std::optional<CValue> evalBinary(const BinaryExpr &b, unsigned depth) {
    const char *op = binOpSpelling(b.op);
    auto l = eval(*b.lhs, depth + 1);
    if (!l)
      return std::nullopt;
    auto r = eval(*b.rhs, depth + 1);
    if (!r)
      return std::nullopt;
    if (b.op == BinOp::MatMul) {
      diag.error(b.getLoc(), "'@' (matrix product) is not allowed in a "
                             "constant expression");
      return std::nullopt;
    }
    if (!checkNumber(*l, op, b.getLoc()) || !checkNumber(*r, op, b.getLoc()))
      return std::nullopt;
    SrcLoc loc = b.getLoc();
    if (isComparison(b.op))
      return CValue::makeBool(compare(b.op, *l, *r), loc);
    auto overflow = [&]() -> std::optional<CValue> {
      diag.error(loc, "integer overflow in constant expression: " + l->str() +
                          " " + op + " " + r->str());
      return std::nullopt;
    };
    if (l->kind == CValue::Int && r->kind == CValue::Int) {
      int64_t x = l->i, y = r->i, res = 0;
      switch (b.op) {
      case BinOp::Add:
        if (llvm::AddOverflow(x, y, res))
          return overflow();
        return CValue::makeInt(res, loc);
      case BinOp::Sub:
        if (llvm::SubOverflow(x, y, res))
          return overflow();
        return CValue::makeInt(res, loc);
      case BinOp::Mul:
        if (llvm::MulOverflow(x, y, res))
          return overflow();
        return CValue::makeInt(res, loc);
      case BinOp::Div:
      case BinOp::Mod:
        if (y == 0) {
          diag.error(loc, llvm::Twine(b.op == BinOp::Div ? "division"
                                                         : "remainder") +
                              " by zero in constant expression");
          return std::nullopt;
        }
        if (x == INT64_MIN && y == -1)
          return overflow();
        if (b.op == BinOp::Mod)
          return CValue::makeInt(x % y, loc);
        if (x % y == 0)
          return CValue::makeInt(x / y, loc);
        return CValue::makeFloat(double(x) / double(y), loc);
      default:
        break;
      }
      return std::nullopt;
    }
    double x = l->asDouble(), y = r->asDouble(), res = 0;
    switch (b.op) {
    case BinOp::Add: res = x + y; break;
    case BinOp::Sub: res = x - y; break;
    case BinOp::Mul: res = x * y; break;
    case BinOp::Div:
      if (y == 0.0) {
        diag.error(loc, "division by zero in constant expression");
        return std::nullopt;
      }
      res = x / y;
      break;
    case BinOp::Mod:
      diag.error(loc, "'%' needs integer operands, got " + l->describe() +
                          " and " + r->describe());
      return std::nullopt;
    default:
      return std::nullopt;
    }
    if (!std::isfinite(res)) {
      diag.error(loc, "floating-point overflow in constant expression: " +
                          l->str() + " " + op + " " + r->str());
      return std::nullopt;
    }
    return CValue::makeFloat(res, loc);
  }

  NameLookup lookup;
  DiagEngine &diag;
};
} // namespace

std::optional<CValue> nncc::frontend::evalConst(const Expr &e,
                                                NameLookup lookup,
                                                DiagEngine &diag) {
  Evaluator ev(lookup, diag);
  return ev.eval(e, 0);
}
