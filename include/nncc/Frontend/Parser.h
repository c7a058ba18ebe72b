//===- Parser.h - Recursive-descent parser for .nn files ------------------===//
#ifndef NNCC_FRONTEND_PARSER_H
#define NNCC_FRONTEND_PARSER_H

#include "nncc/Frontend/AST.h"
#include "nncc/Frontend/Lexer.h"

#include <memory>

namespace nncc {
namespace frontend {

/// Parses a whole file. Stops at the first error (which has been reported
/// through `diag`) and returns null. Never crashes or recurses without bound:
/// nesting deeper than `kMaxNesting` is reported as an error.
class Parser {
public:
  static constexpr unsigned kMaxNesting = 128;

  Parser(llvm::StringRef buffer, DiagEngine &diag);

  std::unique_ptr<FileAST> parseFile();
  /// Parses a single expression followed by end of file (for unit tests).
  ExprPtr parseStandaloneExpr();

private:
  const Token &cur() const { return toks[idx]; }
  const Token &peekTok(size_t k = 1) const {
    return toks[std::min(idx + k, toks.size() - 1)];
  }
  void consume() {
    if (idx + 1 < toks.size())
      ++idx;
  }
  bool consumeIf(Tok k) {
    if (!cur().is(k))
      return false;
    consume();
    return true;
  }
  bool expect(Tok k, const char *context);
  bool errorExpected(const llvm::Twine &what);
  bool parseIdent(NameLoc &out, const char *what);
  /// A keyword that may name a layer (`output = linear(...)`, called as
  /// `output(h)`): all but 'return', 'true' and 'false'.
  static bool isLayerNameKeyword(const Token &t);

  std::unique_ptr<BlockDef> parseBlock();
  std::unique_ptr<ModelDef> parseModel();
  bool parseBody(bool isModel, std::vector<DeclItem> &decls,
                 std::unique_ptr<ForwardDef> &forward,
                 std::unique_ptr<TrainClause> &train);
  bool parseLayerDecl(DeclItem &item);
  bool parseInput(DeclItem &item);
  std::unique_ptr<ForwardDef> parseForward(bool allowParams);
  std::unique_ptr<TrainClause> parseTrain();
  bool parsePattern(Pattern &p, unsigned depth);
  bool parseStmt(std::vector<StmtPtr> &out);

  ExprPtr parseExpr();
  ExprPtr parseComparison();
  ExprPtr parseAdditive();
  ExprPtr parseMultiplicative();
  ExprPtr parseUnary();
  ExprPtr parsePostfix();
  ExprPtr parsePrimary();
  bool parseArgs(std::vector<Arg> &args);
  bool parseIndexItem(IndexItem &item);

  DiagEngine &diag;
  Lexer lexer;
  std::vector<Token> toks;
  size_t idx = 0;
  unsigned depth = 0;
  bool failed = false;
};

/// Convenience: lex + parse a buffer.
std::unique_ptr<FileAST> parseBuffer(llvm::StringRef buffer, DiagEngine &diag);

} // namespace frontend
} // namespace nncc

#endif
