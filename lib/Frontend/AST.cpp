//===- AST.cpp - AST printing ---------------------------------------------===//
#include "nncc/Frontend/AST.h"
#include "nncc/Frontend/ConstEval.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace nncc::frontend;

const char *nncc::frontend::binOpSpelling(BinOp op) {
  switch (op) {
  case BinOp::Add: return "+";
  case BinOp::Sub: return "-";
  case BinOp::Mul: return "*";
  case BinOp::Div: return "/";
  case BinOp::Mod: return "%";
  case BinOp::MatMul: return "@";
  case BinOp::Eq: return "==";
  case BinOp::Ne: return "!=";
  case BinOp::Lt: return "<";
  case BinOp::Le: return "<=";
  case BinOp::Gt: return ">";
  case BinOp::Ge: return ">=";
  }
  return "?";
}

/// Shortest decimal that reads back as the same double; always contains a
/// '.', 'e', "inf" or "nan" so that it reads as a float.
std::string nncc::frontend::formatDouble(double v) {
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v)
      break;
  }
  std::string s = buf;
  if (s.find_first_of(".eni") == std::string::npos)
    s += ".0";
  return s;
}

void nncc::frontend::dumpExpr(const Expr &e, llvm::raw_ostream &os) {
  switch (e.getKind()) {
  case Expr::Int:
    os << llvm::cast<IntExpr>(e).value;
    return;
  case Expr::Float:
    os << formatDouble(llvm::cast<FloatExpr>(e).value);
    return;
  case Expr::Bool:
    os << (llvm::cast<BoolExpr>(e).value ? "true" : "false");
    return;
  case Expr::Name:
    os << llvm::cast<NameExpr>(e).name;
    return;
  case Expr::List: {
    os << "[";
    bool first = true;
    for (auto &x : llvm::cast<ListExpr>(e).elems) {
      if (!first)
        os << ", ";
      first = false;
      dumpExpr(*x, os);
    }
    os << "]";
    return;
  }
  case Expr::Call: {
    auto &c = llvm::cast<CallExpr>(e);
    os << c.callee << "(";
    bool first = true;
    for (auto &a : c.args) {
      if (!first)
        os << ", ";
      first = false;
      if (!a.name.empty())
        os << a.name << ": ";
      dumpExpr(*a.value, os);
    }
    os << ")";
    return;
  }
  case Expr::Index: {
    auto &ix = llvm::cast<IndexExpr>(e);
    dumpExpr(*ix.base, os);
    os << "[";
    bool first = true;
    for (auto &it : ix.items) {
      if (!first)
        os << ", ";
      first = false;
      if (!it.isSlice) {
        dumpExpr(*it.index, os);
        continue;
      }
      if (it.start)
        dumpExpr(*it.start, os);
      os << ":";
      if (it.stop)
        dumpExpr(*it.stop, os);
      if (it.step) {
        os << ":";
        dumpExpr(*it.step, os);
      }
    }
    os << "]";
    return;
  }
  case Expr::Binary: {
    auto &b = llvm::cast<BinaryExpr>(e);
    os << "(";
    dumpExpr(*b.lhs, os);
    os << " " << binOpSpelling(b.op) << " ";
    dumpExpr(*b.rhs, os);
    os << ")";
    return;
  }
  case Expr::Unary:
    os << "(-";
    dumpExpr(*llvm::cast<UnaryExpr>(e).operand, os);
    os << ")";
    return;
  }
}

static void dumpPattern(const Pattern &p, llvm::raw_ostream &os) {
  if (!p.isTuple()) {
    os << p.name;
    return;
  }
  os << "(";
  for (size_t i = 0; i < p.elems.size(); ++i) {
    if (i)
      os << ", ";
    dumpPattern(p.elems[i], os);
  }
  os << ")";
}

static void loc(SrcLoc l, llvm::raw_ostream &os) {
  os << " @" << l.line << ":" << l.col << "\n";
}

static void dumpDecls(const std::vector<DeclItem> &decls,
                      llvm::raw_ostream &os) {
  for (auto &d : decls) {
    switch (d.kind) {
    case DeclItem::Dims:
      os << "  dims";
      for (auto &n : d.dims)
        os << " " << n.name;
      loc(d.dims.front().loc, os);
      break;
    case DeclItem::Const:
      os << "  const " << d.constDecl.name.name << " = ";
      dumpExpr(*d.constDecl.value, os);
      loc(d.constDecl.name.loc, os);
      break;
    case DeclItem::Input: {
      os << "  input " << d.input.name.name << ": " << d.input.dtype.name
         << "[";
      for (size_t i = 0; i < d.input.shape.size(); ++i) {
        if (i)
          os << ", ";
        dumpExpr(*d.input.shape[i], os);
      }
      os << "]";
      loc(d.input.loc, os);
      break;
    }
    case DeclItem::Layer:
      os << "  layer " << d.layer.name.name << " = ";
      if (d.layer.repeat) {
        os << (d.layer.parallel ? "parallel " : "repeat ");
        dumpExpr(*d.layer.repeat, os);
        os << " ";
      }
      dumpExpr(*d.layer.ctor, os);
      loc(d.layer.loc, os);
      break;
    }
  }
}

static void dumpForward(const ForwardDef &f, llvm::raw_ostream &os) {
  os << "  forward";
  if (f.hasParamList) {
    os << "(";
    for (size_t i = 0; i < f.params.size(); ++i)
      os << (i ? ", " : "") << f.params[i].name;
    os << ")";
  }
  loc(f.loc, os);
  for (auto &s : f.body) {
    os << "    ";
    switch (s->getKind()) {
    case Stmt::Assign: {
      auto &a = llvm::cast<AssignStmt>(*s);
      os << "assign ";
      dumpPattern(a.target, os);
      os << " = ";
      dumpExpr(*a.value, os);
      break;
    }
    case Stmt::Return: {
      auto &r = llvm::cast<ReturnStmt>(*s);
      os << "return ";
      for (size_t i = 0; i < r.values.size(); ++i) {
        if (i)
          os << ", ";
        dumpExpr(*r.values[i], os);
      }
      break;
    }
    case Stmt::Output: {
      auto &o = llvm::cast<OutputStmt>(*s);
      os << "output " << o.name;
      if (o.value) {
        os << " = ";
        dumpExpr(*o.value, os);
      }
      break;
    }
    case Stmt::Loss:
      os << "loss ";
      dumpExpr(*llvm::cast<LossStmt>(*s).value, os);
      break;
    }
    loc(s->getLoc(), os);
  }
}

void nncc::frontend::dumpAST(const FileAST &file, llvm::raw_ostream &os) {
  for (auto &b : file.blocks) {
    os << "block " << b->name.name << "(";
    for (size_t i = 0; i < b->params.size(); ++i) {
      auto &p = b->params[i];
      os << (i ? ", " : "") << p.name.name << ": " << p.type.name;
      if (p.defaultValue) {
        os << " = ";
        dumpExpr(*p.defaultValue, os);
      }
    }
    os << ")";
    loc(b->loc, os);
    dumpDecls(b->decls, os);
    if (b->forward)
      dumpForward(*b->forward, os);
  }
  if (!file.model)
    return;
  auto &m = *file.model;
  os << "model " << m.name.name;
  loc(m.loc, os);
  dumpDecls(m.decls, os);
  if (m.forward)
    dumpForward(*m.forward, os);
  if (m.train) {
    os << "  train";
    loc(m.train->loc, os);
    for (auto &it : m.train->items) {
      os << "    " << it.word.name << " ";
      dumpExpr(*it.value, os);
      loc(it.word.loc, os);
    }
  }
}
