//===- Lexer.h - Tokenizer for .nn files ----------------------------------===//
#ifndef NNCC_FRONTEND_LEXER_H
#define NNCC_FRONTEND_LEXER_H

#include "nncc/Frontend/Diagnostics.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nncc {
namespace frontend {

enum class Tok {
  Eof,
  Error, // a lexical error was reported
  Ident,
  Int,
  Float,
  // keywords
  KwModel,
  KwBlock,
  KwDims,
  KwConst,
  KwInput,
  KwForward,
  KwReturn,
  KwOutput,
  KwLoss,
  KwTrain,
  KwRepeat,
  KwTrue,
  KwFalse,
  // punctuation
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Comma,
  Colon,
  Semi,
  Assign,
  Plus,
  Minus,
  Star,
  Slash,
  Percent,
  At,
  EqEq,
  NotEq,
  Less,
  LessEq,
  Greater,
  GreaterEq,
};

/// Printable spelling of a token kind, for diagnostics ("'('", "identifier").
const char *tokSpelling(Tok k);

struct Token {
  Tok kind = Tok::Eof;
  llvm::StringRef text; // points into the source buffer
  SrcLoc loc;
  /// True when a newline separates this token from the previous one. A `(`
  /// or `[` that starts a line never continues the previous expression.
  bool newlineBefore = false;
  int64_t intValue = 0;
  double floatValue = 0.0;

  bool is(Tok k) const { return kind == k; }
  bool isKeyword() const { return kind >= Tok::KwModel && kind <= Tok::KwFalse; }
};

class Lexer {
public:
  Lexer(llvm::StringRef buffer, DiagEngine &diag) : buf(buffer), diag(diag) {}

  /// Returns the next token; on a lexical error reports it and returns
  /// Tok::Error (and Tok::Error forever after).
  Token next();

  /// Tokenizes everything; the last token is Eof or Error.
  std::vector<Token> lexAll();

  /// With deferred errors, a lexical error is not reported when found but
  /// kept until reportDeferredError(): the parser reports it only if it
  /// reaches the Error token, so that the first error in the file wins.
  void setDeferErrors(bool defer) { deferErrors = defer; }
  void reportDeferredError();

private:
  char peek(size_t ahead = 0) const {
    return pos + ahead < buf.size() ? buf[pos + ahead] : '\0';
  }
  bool atEnd() const { return pos >= buf.size(); }
  void advance();
  Token make(Tok k, size_t start, SrcLoc l);
  Token error(SrcLoc l, const llvm::Twine &msg);
  Token lexNumber(size_t start, SrcLoc l);
  /// Skips whitespace and comments; the error token of an unterminated
  /// block comment.
  std::optional<Token> skipTrivia();

  llvm::StringRef buf;
  DiagEngine &diag;
  size_t pos = 0;
  unsigned line = 1, col = 1;
  bool sawNewline = true;
  bool failed = false;
  bool deferErrors = false;
  bool hasDeferred = false;
  SrcLoc deferredLoc;
  std::string deferredMessage;
};

} // namespace frontend
} // namespace nncc

#endif
