//===- AST.h - Abstract syntax tree of .nn files --------------------------===//
#ifndef NNCC_FRONTEND_AST_H
#define NNCC_FRONTEND_AST_H

#include "nncc/Frontend/Diagnostics.h"
#include "llvm/Support/Casting.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nncc {
namespace frontend {

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

class Expr {
public:
  enum Kind { Int, Float, Bool, Name, List, Call, Index, Binary, Unary };
  Expr(Kind k, SrcLoc l) : kind(k), loc(l) {}
  virtual ~Expr() = default;
  Kind getKind() const { return kind; }
  SrcLoc getLoc() const { return loc; }

private:
  Kind kind;
  SrcLoc loc;
};
using ExprPtr = std::unique_ptr<Expr>;

struct IntExpr : Expr {
  IntExpr(SrcLoc l, int64_t v) : Expr(Int, l), value(v) {}
  int64_t value;
  static bool classof(const Expr *e) { return e->getKind() == Int; }
};
struct FloatExpr : Expr {
  FloatExpr(SrcLoc l, double v) : Expr(Float, l), value(v) {}
  double value;
  static bool classof(const Expr *e) { return e->getKind() == Float; }
};
struct BoolExpr : Expr {
  BoolExpr(SrcLoc l, bool v) : Expr(Bool, l), value(v) {}
  bool value;
  static bool classof(const Expr *e) { return e->getKind() == Bool; }
};
struct NameExpr : Expr {
  NameExpr(SrcLoc l, std::string n) : Expr(Name, l), name(std::move(n)) {}
  std::string name;
  static bool classof(const Expr *e) { return e->getKind() == Name; }
};
struct ListExpr : Expr {
  ListExpr(SrcLoc l, std::vector<ExprPtr> e)
      : Expr(List, l), elems(std::move(e)) {}
  std::vector<ExprPtr> elems;
  static bool classof(const Expr *e) { return e->getKind() == List; }
};

/// One argument of a call: positional (name empty) or `name: value`.
struct Arg {
  std::string name;
  SrcLoc loc;
  ExprPtr value;
};

/// `callee(args...)`; the callee is always a plain identifier.
struct CallExpr : Expr {
  CallExpr(SrcLoc l, std::string c, SrcLoc cl, std::vector<Arg> a)
      : Expr(Call, l), callee(std::move(c)), calleeLoc(cl),
        args(std::move(a)) {}
  std::string callee;
  SrcLoc calleeLoc;
  std::vector<Arg> args;
  static bool classof(const Expr *e) { return e->getKind() == Call; }
};

/// One entry of `x[...]`: an index expression, or a slice `a:b:s` where each
/// part may be absent.
struct IndexItem {
  SrcLoc loc;
  bool isSlice = false;
  ExprPtr index;             // when !isSlice
  ExprPtr start, stop, step; // when isSlice (each may be null)
};
struct IndexExpr : Expr {
  IndexExpr(SrcLoc l, ExprPtr b, std::vector<IndexItem> i)
      : Expr(Index, l), base(std::move(b)), items(std::move(i)) {}
  ExprPtr base;
  std::vector<IndexItem> items;
  static bool classof(const Expr *e) { return e->getKind() == Index; }
};

enum class BinOp { Add, Sub, Mul, Div, Mod, MatMul, Eq, Ne, Lt, Le, Gt, Ge };
inline bool isComparison(BinOp op) { return op >= BinOp::Eq; }
const char *binOpSpelling(BinOp op);

struct BinaryExpr : Expr {
  BinaryExpr(SrcLoc l, BinOp o, ExprPtr a, ExprPtr b)
      : Expr(Binary, l), op(o), lhs(std::move(a)), rhs(std::move(b)) {}
  BinOp op;
  ExprPtr lhs, rhs;
  static bool classof(const Expr *e) { return e->getKind() == Binary; }
};
/// Unary minus (the only unary operator).
struct UnaryExpr : Expr {
  UnaryExpr(SrcLoc l, ExprPtr o) : Expr(Unary, l), operand(std::move(o)) {}
  ExprPtr operand;
  static bool classof(const Expr *e) { return e->getKind() == Unary; }
};

//===----------------------------------------------------------------------===//
// Statements of forward bodies
//===----------------------------------------------------------------------===//

/// Left-hand side of an assignment: a name, or a parenthesised tuple.
struct Pattern {
  SrcLoc loc;
  std::string name;           // when a leaf
  std::vector<Pattern> elems; // when a tuple
  bool isTuple() const { return !elems.empty() || name.empty(); }
};

class Stmt {
public:
  enum Kind { Assign, Return, Output, Loss };
  Stmt(Kind k, SrcLoc l) : kind(k), loc(l) {}
  virtual ~Stmt() = default;
  Kind getKind() const { return kind; }
  SrcLoc getLoc() const { return loc; }

private:
  Kind kind;
  SrcLoc loc;
};
using StmtPtr = std::unique_ptr<Stmt>;

/// `a, (b, c) = expr`: the top-level target list is a tuple pattern when it
/// has more than one element.
struct AssignStmt : Stmt {
  AssignStmt(SrcLoc l, Pattern t, ExprPtr v)
      : Stmt(Assign, l), target(std::move(t)), value(std::move(v)) {}
  Pattern target;
  ExprPtr value;
  static bool classof(const Stmt *s) { return s->getKind() == Assign; }
};
struct ReturnStmt : Stmt {
  ReturnStmt(SrcLoc l, std::vector<ExprPtr> v)
      : Stmt(Return, l), values(std::move(v)) {}
  std::vector<ExprPtr> values;
  static bool classof(const Stmt *s) { return s->getKind() == Return; }
};
/// `output name` (value = null: the bound identifier) or `output name = e`.
struct OutputStmt : Stmt {
  OutputStmt(SrcLoc l, std::string n, SrcLoc nl, ExprPtr v)
      : Stmt(Output, l), name(std::move(n)), nameLoc(nl), value(std::move(v)) {
  }
  std::string name;
  SrcLoc nameLoc;
  ExprPtr value;
  static bool classof(const Stmt *s) { return s->getKind() == Output; }
};
struct LossStmt : Stmt {
  LossStmt(SrcLoc l, ExprPtr v) : Stmt(Loss, l), value(std::move(v)) {}
  ExprPtr value;
  static bool classof(const Stmt *s) { return s->getKind() == Loss; }
};

//===----------------------------------------------------------------------===//
// Declarations
//===----------------------------------------------------------------------===//

struct NameLoc {
  std::string name;
  SrcLoc loc;
};

struct ConstDecl {
  NameLoc name;
  ExprPtr value;
};
struct InputDecl {
  SrcLoc loc;
  NameLoc name;
  NameLoc dtype;
  std::vector<ExprPtr> shape;
};
/// `name = [repeat N | parallel N] callee(args...)`.
struct LayerDecl {
  SrcLoc loc;
  NameLoc name;
  ExprPtr repeat;        // `repeat N` / `parallel N` count; may be null
  bool parallel = false; // `parallel N`: members share the input, concat
  std::unique_ptr<CallExpr> ctor;
};
struct ForwardDef {
  SrcLoc loc;
  bool hasParamList = false;
  std::vector<NameLoc> params;
  std::vector<StmtPtr> body;
  SrcLoc endLoc; // the closing brace
};
/// `word value` inside `train { ... }`.
struct TrainItem {
  NameLoc word;
  ExprPtr value;
};
struct TrainClause {
  SrcLoc loc;
  std::vector<TrainItem> items;
};

/// Declarations in the order written (blocks and models share the shape).
struct DeclItem {
  enum Kind { Dims, Const, Input, Layer } kind;
  std::vector<NameLoc> dims;
  ConstDecl constDecl;
  InputDecl input;
  LayerDecl layer;
};

struct BlockParam {
  NameLoc name;
  NameLoc type; // int | float | bool
  ExprPtr defaultValue;
};

struct BlockDef {
  SrcLoc loc;
  NameLoc name;
  std::vector<BlockParam> params;
  std::vector<DeclItem> decls;
  std::unique_ptr<ForwardDef> forward;
};

struct ModelDef {
  SrcLoc loc;
  NameLoc name;
  std::vector<DeclItem> decls;
  std::unique_ptr<ForwardDef> forward;
  std::unique_ptr<TrainClause> train;
};

struct FileAST {
  std::vector<std::unique_ptr<BlockDef>> blocks;
  std::unique_ptr<ModelDef> model;
};

/// Prints a stable, indented dump of the AST (used by `--emit ast`).
void dumpAST(const FileAST &file, llvm::raw_ostream &os);
void dumpExpr(const Expr &e, llvm::raw_ostream &os);

} // namespace frontend
} // namespace nncc

#endif
