//===- Lexer.cpp - Tokenizer for .nn files --------------------------------===//
#include "nncc/Frontend/Lexer.h"

#include "llvm/ADT/StringSwitch.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

using namespace nncc::frontend;

const char *nncc::frontend::tokSpelling(Tok k) {
  switch (k) {
  case Tok::Eof: return "end of file";
  case Tok::Error: return "invalid token";
  case Tok::Ident: return "identifier";
  case Tok::Int: return "integer literal";
  case Tok::Float: return "float literal";
  case Tok::KwModel: return "'model'";
  case Tok::KwBlock: return "'block'";
  case Tok::KwDims: return "'dims'";
  case Tok::KwConst: return "'const'";
  case Tok::KwInput: return "'input'";
  case Tok::KwForward: return "'forward'";
  case Tok::KwReturn: return "'return'";
  case Tok::KwOutput: return "'output'";
  case Tok::KwLoss: return "'loss'";
  case Tok::KwTrain: return "'train'";
  case Tok::KwRepeat: return "'repeat'";
  case Tok::KwTrue: return "'true'";
  case Tok::KwFalse: return "'false'";
  case Tok::LParen: return "'('";
  case Tok::RParen: return "')'";
  case Tok::LBracket: return "'['";
  case Tok::RBracket: return "']'";
  case Tok::LBrace: return "'{'";
  case Tok::RBrace: return "'}'";
  case Tok::Comma: return "','";
  case Tok::Colon: return "':'";
  case Tok::Semi: return "';'";
  case Tok::Assign: return "'='";
  case Tok::Plus: return "'+'";
  case Tok::Minus: return "'-'";
  case Tok::Star: return "'*'";
  case Tok::Slash: return "'/'";
  case Tok::Percent: return "'%'";
  case Tok::At: return "'@'";
  case Tok::EqEq: return "'=='";
  case Tok::NotEq: return "'!='";
  case Tok::Less: return "'<'";
  case Tok::LessEq: return "'<='";
  case Tok::Greater: return "'>'";
  case Tok::GreaterEq: return "'>='";
  }
  return "token";
}

void Lexer::advance() {
  if (atEnd())
    return;
  if (buf[pos] == '\n') {
    ++line;
    col = 1;
    sawNewline = true;
  } else {
    ++col;
  }
  ++pos;
}

Token Lexer::make(Tok k, size_t start, SrcLoc l) {
  Token t;
  t.kind = k;
  t.text = buf.slice(start, pos);
  t.loc = l;
  t.newlineBefore = sawNewline;
  sawNewline = false;
  return t;
}

void Lexer::reportDeferredError() {
  if (!hasDeferred)
    return;
  hasDeferred = false;
  diag.error(deferredLoc, deferredMessage);
}

Token Lexer::error(SrcLoc l, const llvm::Twine &msg) {
  if (deferErrors) {
    hasDeferred = true;
    deferredLoc = l;
    deferredMessage = msg.str();
  } else {
    diag.error(l, msg);
  }
  failed = true;
  Token t;
  t.kind = Tok::Error;
  t.loc = l;
  return t;
}

static bool isIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool isDigit(char c) { return c >= '0' && c <= '9'; }

Token Lexer::lexNumber(size_t start, SrcLoc l) {
  bool isFloat = false;
  while (isDigit(peek()))
    advance();
  if (peek() == '.' && isDigit(peek(1))) {
    isFloat = true;
    advance();
    while (isDigit(peek()))
      advance();
  }
  if (peek() == 'e' || peek() == 'E') {
    size_t k = 1;
    if (peek(k) == '+' || peek(k) == '-')
      ++k;
    if (!isDigit(peek(k)))
      return error(l, "malformed exponent in number literal");
    isFloat = true;
    for (size_t i = 0; i < k; ++i)
      advance();
    while (isDigit(peek()))
      advance();
  }
  if (isIdentStart(peek()))
    return error(l, "invalid suffix '" + llvm::Twine(peek()) +
                        "' on number literal");
  Token t = make(isFloat ? Tok::Float : Tok::Int, start, l);
  std::string text = t.text.str();
  if (isFloat) {
    errno = 0;
    double v = std::strtod(text.c_str(), nullptr);
    if (errno == ERANGE && std::isinf(v))
      return error(l, "float literal '" + text + "' is out of range");
    t.floatValue = v;
  } else {
    uint64_t v = 0;
    for (char c : text) {
      uint64_t d = uint64_t(c - '0');
      if (v > (uint64_t(INT64_MAX) - d) / 10)
        return error(l, "integer literal '" + text +
                            "' does not fit in 64 bits");
      v = v * 10 + d;
    }
    t.intValue = int64_t(v);
  }
  return t;
}

/// The keyword `text` spells, or Tok::Ident.
static Tok keywordOrIdent(llvm::StringRef text) {
  return llvm::StringSwitch<Tok>(text)
      .Case("model", Tok::KwModel)
      .Case("block", Tok::KwBlock)
      .Case("dims", Tok::KwDims)
      .Case("const", Tok::KwConst)
      .Case("input", Tok::KwInput)
      .Case("forward", Tok::KwForward)
      .Case("return", Tok::KwReturn)
      .Case("output", Tok::KwOutput)
      .Case("loss", Tok::KwLoss)
      .Case("train", Tok::KwTrain)
      .Case("repeat", Tok::KwRepeat)
      .Case("true", Tok::KwTrue)
      .Case("false", Tok::KwFalse)
      .Default(Tok::Ident);
}

std::optional<Token> Lexer::skipTrivia() {
  while (!atEnd()) {
    char c = peek();
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' ||
        c == '\v') {
      advance();
      continue;
    }
    if (c == '/' && peek(1) == '/') {
      while (!atEnd() && peek() != '\n')
        advance();
      continue;
    }
    if (c == '/' && peek(1) == '*') {
      SrcLoc l{line, col};
      advance();
      advance();
      bool closed = false;
      while (!atEnd()) {
        if (peek() == '*' && peek(1) == '/') {
          advance();
          advance();
          closed = true;
          break;
        }
        advance();
      }
      if (!closed)
        return error(l, "unterminated block comment");
      // A block comment spanning lines counts as a newline.
      continue;
    }
    break;
  }
  return std::nullopt;
}

Token Lexer::next() {
  if (failed) {
    Token t;
    t.kind = Tok::Error;
    t.loc = {line, col};
    return t;
  }
  if (std::optional<Token> bad = skipTrivia())
    return *bad;
  SrcLoc l{line, col};
  size_t start = pos;
  if (atEnd()) {
    Token t = make(Tok::Eof, start, l);
    return t;
  }
  char c = peek();
  if (isIdentStart(c)) {
    while (isIdentStart(peek()) || isDigit(peek()))
      advance();
    return make(keywordOrIdent(buf.slice(start, pos)), start, l);
  }
  if (isDigit(c))
    return lexNumber(start, l);
  // Two-character comparison operators.
  char c2 = pos + 1 < buf.size() ? buf[pos + 1] : '\0';
  if (c2 == '=' && (c == '=' || c == '!' || c == '<' || c == '>')) {
    advance();
    advance();
    return make(c == '=' ? Tok::EqEq
                : c == '!' ? Tok::NotEq
                : c == '<' ? Tok::LessEq
                           : Tok::GreaterEq,
                start, l);
  }
  Tok k;
  switch (c) {
  case '<': k = Tok::Less; break;
  case '>': k = Tok::Greater; break;
  case '(': k = Tok::LParen; break;
  case ')': k = Tok::RParen; break;
  case '[': k = Tok::LBracket; break;
  case ']': k = Tok::RBracket; break;
  case '{': k = Tok::LBrace; break;
  case '}': k = Tok::RBrace; break;
  case ',': k = Tok::Comma; break;
  case ':': k = Tok::Colon; break;
  case ';': k = Tok::Semi; break;
  case '=': k = Tok::Assign; break;
  case '+': k = Tok::Plus; break;
  case '-': k = Tok::Minus; break;
  case '*': k = Tok::Star; break;
  case '/': k = Tok::Slash; break;
  case '%': k = Tok::Percent; break;
  case '@': k = Tok::At; break;
  default: {
    unsigned char uc = static_cast<unsigned char>(c);
    if (uc >= 0x20 && uc < 0x7f)
      return error(l, "unexpected character '" + llvm::Twine(c) + "'");
    return error(l, "unexpected byte 0x" + llvm::Twine::utohexstr(uc) +
                        " in source");
  }
  }
  advance();
  return make(k, start, l);
}

std::vector<Token> Lexer::lexAll() {
  std::vector<Token> toks;
  while (true) {
    toks.push_back(next());
    if (toks.back().is(Tok::Eof) || toks.back().is(Tok::Error))
      break;
  }
  return toks;
}
