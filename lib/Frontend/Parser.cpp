//===- Parser.cpp - Recursive-descent parser for .nn files ----------------===//
#include "nncc/Frontend/Parser.h"

using namespace nncc::frontend;

namespace {
/// Bounds recursion: increments on entry, decrements on exit.
struct DepthGuard {
  unsigned &d;
  explicit DepthGuard(unsigned &d) : d(d) { ++d; }
  ~DepthGuard() { --d; }
};
} // namespace

Parser::Parser(llvm::StringRef buffer, DiagEngine &diag)
    : diag(diag), lexer(buffer, diag) {
  lexer.setDeferErrors(true);
  toks = lexer.lexAll();
}

static std::string describe(const Token &t) {
  switch (t.kind) {
  case Tok::Ident:
    return "identifier '" + t.text.str() + "'";
  case Tok::Int:
  case Tok::Float:
    return std::string(tokSpelling(t.kind)) + " '" + t.text.str() + "'";
  default:
    return tokSpelling(t.kind);
  }
}

bool Parser::errorExpected(const llvm::Twine &what) {
  if (!failed && cur().is(Tok::Error))
    lexer.reportDeferredError();
  else if (!failed)
    diag.error(cur().loc, "expected " + what + ", found " + describe(cur()));
  failed = true;
  return false;
}

bool Parser::expect(Tok k, const char *context) {
  if (cur().is(k)) {
    consume();
    return true;
  }
  return errorExpected(llvm::Twine(tokSpelling(k)) + " " + context);
}

bool Parser::isLayerNameKeyword(const Token &t) {
  // 'return' starts a statement and true/false are values: never names.
  return t.isKeyword() && !t.is(Tok::KwReturn) && !t.is(Tok::KwTrue) && !t.is(Tok::KwFalse);
}

bool Parser::parseIdent(NameLoc &out, const char *what) {
  if (!cur().is(Tok::Ident))
    return errorExpected(what);
  out.name = cur().text.str();
  out.loc = cur().loc;
  consume();
  return true;
}

std::unique_ptr<FileAST> nncc::frontend::parseBuffer(llvm::StringRef buffer,
                                                     DiagEngine &diag) {
  Parser p(buffer, diag);
  return p.parseFile();
}

std::unique_ptr<FileAST> Parser::parseFile() {
  auto file = std::make_unique<FileAST>();
  while (!cur().is(Tok::Eof)) {
    if (cur().is(Tok::KwBlock)) {
      auto b = parseBlock();
      if (!b)
        return nullptr;
      file->blocks.push_back(std::move(b));
    } else if (cur().is(Tok::KwModel)) {
      if (file->model) {
        diag.error(cur().loc, "only one model per file (the first is '" +
                                  file->model->name.name + "')");
        return nullptr;
      }
      auto m = parseModel();
      if (!m)
        return nullptr;
      file->model = std::move(m);
    } else if (cur().is(Tok::Semi)) {
      consume();
    } else {
      errorExpected("'block' or 'model'");
      return nullptr;
    }
  }
  if (!file->model) {
    diag.error(cur().loc, "expected a 'model' definition before end of file");
    return nullptr;
  }
  return file;
}

std::unique_ptr<BlockDef> Parser::parseBlock() {
  auto b = std::make_unique<BlockDef>();
  b->loc = cur().loc;
  consume(); // 'block'
  if (!parseIdent(b->name, "block name"))
    return nullptr;
  if (!expect(Tok::LParen, "after the block name"))
    return nullptr;
  while (!cur().is(Tok::RParen)) {
    BlockParam p;
    if (!parseIdent(p.name, "parameter name") ||
        !expect(Tok::Colon, "after the parameter name") ||
        !parseIdent(p.type, "parameter type (int, float or bool)"))
      return nullptr;
    if (consumeIf(Tok::Assign)) {
      p.defaultValue = parseExpr();
      if (!p.defaultValue)
        return nullptr;
    }
    b->params.push_back(std::move(p));
    if (!consumeIf(Tok::Comma))
      break;
  }
  if (!expect(Tok::RParen, "to close the parameter list") ||
      !expect(Tok::LBrace, "to open the block body"))
    return nullptr;
  std::unique_ptr<TrainClause> train;
  if (!parseBody(/*isModel=*/false, b->decls, b->forward, train))
    return nullptr;
  return b;
}

std::unique_ptr<ModelDef> Parser::parseModel() {
  auto m = std::make_unique<ModelDef>();
  m->loc = cur().loc;
  consume(); // 'model'
  if (!parseIdent(m->name, "model name") ||
      !expect(Tok::LBrace, "to open the model body"))
    return nullptr;
  if (!parseBody(/*isModel=*/true, m->decls, m->forward, m->train))
    return nullptr;
  return m;
}

bool Parser::parseBody(bool isModel, std::vector<DeclItem> &decls,
                       std::unique_ptr<ForwardDef> &forward,
                       std::unique_ptr<TrainClause> &train) {
  const char *where = isModel ? "in a model" : "in a block";
  while (!cur().is(Tok::RBrace)) {
    const Token &t = cur();
    // `output = linear(...)`: a keyword before '=' names a layer (Hugging
    // Face's `attention.output`, `layer.output`), as no declaration that
    // keyword starts has a '=' next.
    if (isLayerNameKeyword(t) && peekTok().is(Tok::Assign)) {
      DeclItem item;
      if (!parseLayerDecl(item))
        return false;
      decls.push_back(std::move(item));
      continue;
    }
    if (t.isKeyword() && peekTok().is(Tok::Assign)) {
      diag.error(t.loc, "'" + t.text.str() + "' cannot name a layer (every other keyword can)");
      return failed = true, false;
    }
    switch (t.kind) {
    case Tok::Semi:
      consume();
      break;
    case Tok::KwDims: {
      if (!isModel) {
        diag.error(t.loc, "'dims' is only allowed in a model");
        return failed = true, false;
      }
      consume();
      DeclItem item;
      item.kind = DeclItem::Dims;
      do {
        NameLoc n;
        if (!parseIdent(n, "dimension name"))
          return false;
        item.dims.push_back(n);
      } while (consumeIf(Tok::Comma));
      decls.push_back(std::move(item));
      break;
    }
    case Tok::KwConst: {
      consume();
      do {
        DeclItem item;
        item.kind = DeclItem::Const;
        if (!parseIdent(item.constDecl.name, "constant name") ||
            !expect(Tok::Assign, "after the constant name"))
          return false;
        item.constDecl.value = parseExpr();
        if (!item.constDecl.value)
          return false;
        decls.push_back(std::move(item));
      } while (consumeIf(Tok::Comma));
      break;
    }
    case Tok::KwInput: {
      if (!isModel) {
        diag.error(t.loc, "'input' is only allowed in a model; block inputs "
                          "are the parameters of 'forward(...)'");
        return failed = true, false;
      }
      DeclItem item;
      if (!parseInput(item))
        return false;
      decls.push_back(std::move(item));
      break;
    }
    case Tok::KwForward: {
      if (forward) {
        diag.error(t.loc, llvm::Twine("duplicate 'forward' ") + where);
        return failed = true, false;
      }
      forward = parseForward(/*allowParams=*/!isModel);
      if (!forward)
        return false;
      break;
    }
    case Tok::KwTrain: {
      if (!isModel) {
        diag.error(t.loc, "'train' is only allowed in a model");
        return failed = true, false;
      }
      if (train) {
        diag.error(t.loc, "duplicate 'train' clause");
        return failed = true, false;
      }
      train = parseTrain();
      if (!train)
        return false;
      break;
    }
    case Tok::Ident: {
      DeclItem item;
      if (!parseLayerDecl(item))
        return false;
      decls.push_back(std::move(item));
      break;
    }
    default:
      return errorExpected(llvm::Twine("a declaration or '}' ") + where);
    }
  }
  consume(); // '}'
  return true;
}

bool Parser::parseInput(DeclItem &item) {
  item.kind = DeclItem::Input;
  item.input.loc = cur().loc;
  consume(); // 'input'
  if (!parseIdent(item.input.name, "input name") ||
      !expect(Tok::Colon, "after the input name") ||
      !parseIdent(item.input.dtype, "element type (f32, f64, bf16, f16, i32, "
                                    "i64 or i1)"))
    return false;
  if (consumeIf(Tok::LBracket)) {
    while (!cur().is(Tok::RBracket)) {
      ExprPtr e = parseExpr();
      if (!e)
        return false;
      item.input.shape.push_back(std::move(e));
      if (!consumeIf(Tok::Comma))
        break;
    }
    if (!expect(Tok::RBracket, "to close the shape"))
      return false;
  }
  return true;
}

bool Parser::parseLayerDecl(DeclItem &item) {
  item.kind = DeclItem::Layer;
  item.layer.loc = cur().loc;
  if (isLayerNameKeyword(cur())) {
    item.layer.name = {cur().text.str(), cur().loc};
    consume();
  } else if (!parseIdent(item.layer.name, "layer name")) {
    return false;
  }
  if (
      !expect(Tok::Assign, "after the layer name"))
    return false;
  bool isParallel = cur().is(Tok::Ident) && cur().text == "parallel" &&
                    !peekTok().is(Tok::LParen);
  if (cur().is(Tok::KwRepeat) || isParallel) {
    item.layer.parallel = isParallel;
    consume();
    item.layer.repeat = parseExpr();
    if (!item.layer.repeat)
      return false;
  }
  NameLoc callee;
  SrcLoc l = cur().loc;
  if (!parseIdent(callee, "layer constructor (e.g. 'linear(...)')"))
    return false;
  std::vector<Arg> args;
  if (!expect(Tok::LParen, "after the layer constructor name") ||
      !parseArgs(args))
    return false;
  item.layer.ctor =
      std::make_unique<CallExpr>(l, callee.name, callee.loc, std::move(args));
  return true;
}

std::unique_ptr<ForwardDef> Parser::parseForward(bool allowParams) {
  auto f = std::make_unique<ForwardDef>();
  f->loc = cur().loc;
  consume(); // 'forward'
  if (cur().is(Tok::LParen)) {
    if (!allowParams) {
      diag.error(cur().loc, "a model's 'forward' takes no parameter list; its "
                            "inputs are the 'input' declarations");
      failed = true;
      return nullptr;
    }
    consume();
    f->hasParamList = true;
    while (!cur().is(Tok::RParen)) {
      NameLoc n;
      if (!parseIdent(n, "parameter name"))
        return nullptr;
      f->params.push_back(n);
      if (!consumeIf(Tok::Comma))
        break;
    }
    if (!expect(Tok::RParen, "to close the parameter list"))
      return nullptr;
  } else if (allowParams) {
    errorExpected("'(' after 'forward' in a block");
    return nullptr;
  }
  if (!expect(Tok::LBrace, "to open the forward body"))
    return nullptr;
  while (!cur().is(Tok::RBrace)) {
    if (consumeIf(Tok::Semi))
      continue;
    if (!parseStmt(f->body))
      return nullptr;
  }
  f->endLoc = cur().loc;
  consume();
  return f;
}

bool Parser::parseStmt(std::vector<StmtPtr> &out) {
  SrcLoc l = cur().loc;
  switch (cur().kind) {
  case Tok::KwReturn: {
    consume();
    std::vector<ExprPtr> vals;
    do {
      ExprPtr e = parseExpr();
      if (!e)
        return false;
      vals.push_back(std::move(e));
    } while (consumeIf(Tok::Comma));
    out.push_back(std::make_unique<ReturnStmt>(l, std::move(vals)));
    return true;
  }
  case Tok::KwOutput: {
    consume();
    do {
      NameLoc n;
      if (!parseIdent(n, "output name"))
        return false;
      ExprPtr e;
      if (consumeIf(Tok::Assign)) {
        e = parseExpr();
        if (!e)
          return false;
      }
      out.push_back(
          std::make_unique<OutputStmt>(l, n.name, n.loc, std::move(e)));
    } while (consumeIf(Tok::Comma));
    return true;
  }
  case Tok::KwLoss: {
    consume();
    ExprPtr e = parseExpr();
    if (!e)
      return false;
    out.push_back(std::make_unique<LossStmt>(l, std::move(e)));
    return true;
  }
  case Tok::Ident:
  case Tok::LParen: {
    Pattern p;
    p.loc = l;
    do {
      Pattern elem;
      if (!parsePattern(elem, 0))
        return false;
      p.elems.push_back(std::move(elem));
    } while (consumeIf(Tok::Comma));
    if (p.elems.size() == 1)
      p = std::move(p.elems[0]);
    if (!expect(Tok::Assign, "in assignment"))
      return false;
    ExprPtr e = parseExpr();
    if (!e)
      return false;
    out.push_back(std::make_unique<AssignStmt>(l, std::move(p), std::move(e)));
    return true;
  }
  default:
    return errorExpected("a statement (assignment, 'return', 'output' or "
                         "'loss') or '}'");
  }
}

bool Parser::parsePattern(Pattern &p, unsigned d) {
  p.loc = cur().loc;
  if (d > kMaxNesting) {
    diag.error(cur().loc, "assignment pattern nested too deeply");
    return failed = true, false;
  }
  if (cur().is(Tok::Ident)) {
    p.name = cur().text.str();
    consume();
    return true;
  }
  if (!cur().is(Tok::LParen))
    return errorExpected("a name or '(' in assignment target");
  consume();
  do {
    Pattern elem;
    if (!parsePattern(elem, d + 1))
      return false;
    p.elems.push_back(std::move(elem));
  } while (consumeIf(Tok::Comma));
  return expect(Tok::RParen, "to close the tuple pattern");
}

std::unique_ptr<TrainClause> Parser::parseTrain() {
  auto t = std::make_unique<TrainClause>();
  t->loc = cur().loc;
  consume(); // 'train'
  if (!expect(Tok::LBrace, "after 'train'"))
    return nullptr;
  while (!cur().is(Tok::RBrace)) {
    if (consumeIf(Tok::Semi))
      continue;
    TrainItem item;
    if (!parseIdent(item.word, "a training setting (optimizer, schedule, "
                               "clip, layer_decay, epochs, batch) or '}'"))
      return nullptr;
    item.value = parseExpr();
    if (!item.value)
      return nullptr;
    t->items.push_back(std::move(item));
  }
  consume();
  return t;
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

ExprPtr Parser::parseStandaloneExpr() {
  ExprPtr e = parseExpr();
  if (!e)
    return nullptr;
  if (!cur().is(Tok::Eof)) {
    errorExpected("end of expression");
    return nullptr;
  }
  return e;
}

ExprPtr Parser::parseExpr() {
  DepthGuard g(depth);
  if (depth > kMaxNesting) {
    if (!failed)
      diag.error(cur().loc, "expression nested too deeply (limit " +
                                llvm::Twine(kMaxNesting) + ")");
    failed = true;
    return nullptr;
  }
  return parseComparison();
}

/// `a OP b` with OP one of == != < <= > >=; comparisons do not chain.
ExprPtr Parser::parseComparison() {
  ExprPtr lhs = parseAdditive();
  auto comparison = [&]() -> std::optional<BinOp> {
    switch (cur().kind) {
    case Tok::EqEq: return BinOp::Eq;
    case Tok::NotEq: return BinOp::Ne;
    case Tok::Less: return BinOp::Lt;
    case Tok::LessEq: return BinOp::Le;
    case Tok::Greater: return BinOp::Gt;
    case Tok::GreaterEq: return BinOp::Ge;
    default: return std::nullopt;
    }
  };
  std::optional<BinOp> op = comparison();
  if (!lhs || !op)
    return lhs;
  SrcLoc l = cur().loc;
  consume();
  ExprPtr rhs = parseAdditive();
  if (!rhs)
    return nullptr;
  if (comparison()) {
    if (!failed)
      diag.error(cur().loc, "comparisons cannot be chained; use parentheses");
    failed = true;
    return nullptr;
  }
  return std::make_unique<BinaryExpr>(l, *op, std::move(lhs), std::move(rhs));
}

ExprPtr Parser::parseAdditive() {
  ExprPtr lhs = parseMultiplicative();
  while (lhs && (cur().is(Tok::Plus) || cur().is(Tok::Minus))) {
    SrcLoc l = cur().loc;
    BinOp op = cur().is(Tok::Plus) ? BinOp::Add : BinOp::Sub;
    consume();
    ExprPtr rhs = parseMultiplicative();
    if (!rhs)
      return nullptr;
    lhs = std::make_unique<BinaryExpr>(l, op, std::move(lhs), std::move(rhs));
  }
  return lhs;
}

ExprPtr Parser::parseMultiplicative() {
  ExprPtr lhs = parseUnary();
  while (lhs) {
    BinOp op;
    switch (cur().kind) {
    case Tok::Star: op = BinOp::Mul; break;
    case Tok::Slash: op = BinOp::Div; break;
    case Tok::Percent: op = BinOp::Mod; break;
    case Tok::At: op = BinOp::MatMul; break;
    default: return lhs;
    }
    SrcLoc l = cur().loc;
    consume();
    ExprPtr rhs = parseUnary();
    if (!rhs)
      return nullptr;
    lhs = std::make_unique<BinaryExpr>(l, op, std::move(lhs), std::move(rhs));
  }
  return lhs;
}

ExprPtr Parser::parseUnary() {
  if (cur().is(Tok::Minus)) {
    DepthGuard g(depth);
    if (depth > kMaxNesting) {
      if (!failed)
        diag.error(cur().loc, "expression nested too deeply (limit " +
                                  llvm::Twine(kMaxNesting) + ")");
      failed = true;
      return nullptr;
    }
    SrcLoc l = cur().loc;
    consume();
    ExprPtr operand = parseUnary();
    if (!operand)
      return nullptr;
    return std::make_unique<UnaryExpr>(l, std::move(operand));
  }
  return parsePostfix();
}

ExprPtr Parser::parsePostfix() {
  ExprPtr e = parsePrimary();
  while (e && cur().is(Tok::LBracket) && !cur().newlineBefore) {
    SrcLoc l = cur().loc;
    consume();
    std::vector<IndexItem> items;
    do {
      IndexItem item;
      if (!parseIndexItem(item))
        return nullptr;
      items.push_back(std::move(item));
    } while (consumeIf(Tok::Comma));
    if (!expect(Tok::RBracket, "to close the index"))
      return nullptr;
    e = std::make_unique<IndexExpr>(l, std::move(e), std::move(items));
  }
  return e;
}

bool Parser::parseIndexItem(IndexItem &item) {
  item.loc = cur().loc;
  auto endsPart = [&] {
    return cur().is(Tok::Colon) || cur().is(Tok::Comma) ||
           cur().is(Tok::RBracket);
  };
  ExprPtr first;
  if (!cur().is(Tok::Colon)) {
    first = parseExpr();
    if (!first)
      return false;
    if (!cur().is(Tok::Colon)) {
      item.index = std::move(first);
      return true;
    }
  }
  item.isSlice = true;
  item.start = std::move(first);
  consume(); // ':'
  if (!endsPart()) {
    item.stop = parseExpr();
    if (!item.stop)
      return false;
  }
  if (consumeIf(Tok::Colon)) {
    if (!endsPart()) {
      item.step = parseExpr();
      if (!item.step)
        return false;
    }
  }
  return true;
}

bool Parser::parseArgs(std::vector<Arg> &args) {
  // '(' already consumed.
  while (!cur().is(Tok::RParen)) {
    Arg a;
    a.loc = cur().loc;
    if ((cur().is(Tok::Ident) || cur().isKeyword()) &&
        peekTok().is(Tok::Colon)) {
      a.name = cur().text.str();
      consume();
      consume();
    } else if (!args.empty() && !args.back().name.empty()) {
      diag.error(cur().loc,
                 "positional argument after keyword argument '" +
                     args.back().name + "'");
      return failed = true, false;
    }
    a.value = parseExpr();
    if (!a.value)
      return false;
    args.push_back(std::move(a));
    if (!consumeIf(Tok::Comma))
      break;
  }
  return expect(Tok::RParen, "to close the argument list");
}

ExprPtr Parser::parsePrimary() {
  const Token &t = cur();
  SrcLoc l = t.loc;
  switch (t.kind) {
  case Tok::Int: {
    int64_t v = t.intValue;
    consume();
    return std::make_unique<IntExpr>(l, v);
  }
  case Tok::Float: {
    double v = t.floatValue;
    consume();
    return std::make_unique<FloatExpr>(l, v);
  }
  case Tok::KwTrue:
  case Tok::KwFalse: {
    bool v = t.is(Tok::KwTrue);
    consume();
    return std::make_unique<BoolExpr>(l, v);
  }
  case Tok::KwModel:
  case Tok::KwBlock:
  case Tok::KwDims:
  case Tok::KwConst:
  case Tok::KwInput:
  case Tok::KwForward:
  case Tok::KwOutput:
  case Tok::KwLoss:
  case Tok::KwTrain:
  case Tok::KwRepeat:
    // A layer named by a keyword, called: `output(h, x)`.
    if (!peekTok().is(Tok::LParen) || peekTok().newlineBefore) {
      if (!failed)
        diag.error(t.loc, "expected an expression, found the keyword '" + t.text.str() +
                              "' (a layer of that name is called: " + t.text.str() + "(...))");
      failed = true;
      return nullptr;
    }
    [[fallthrough]];
  case Tok::Ident: {
    std::string name = t.text.str();
    consume();
    if (cur().is(Tok::LParen) && !cur().newlineBefore) {
      consume();
      std::vector<Arg> args;
      if (!parseArgs(args))
        return nullptr;
      return std::make_unique<CallExpr>(l, name, l, std::move(args));
    }
    return std::make_unique<NameExpr>(l, name);
  }
  case Tok::LParen: {
    consume();
    ExprPtr e = parseExpr();
    if (!e || !expect(Tok::RParen, "to close the parenthesis"))
      return nullptr;
    return e;
  }
  case Tok::LBracket: {
    consume();
    std::vector<ExprPtr> elems;
    while (!cur().is(Tok::RBracket)) {
      ExprPtr e = parseExpr();
      if (!e)
        return nullptr;
      elems.push_back(std::move(e));
      if (!consumeIf(Tok::Comma))
        break;
    }
    if (!expect(Tok::RBracket, "to close the list"))
      return nullptr;
    return std::make_unique<ListExpr>(l, std::move(elems));
  }
  default:
    errorExpected("an expression");
    return nullptr;
  }
}
