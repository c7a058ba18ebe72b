//===- FrontendTests.cpp - Unit tests of the nncc front end ---------------===//
#include "nncc/Frontend/AST.h"
#include "nncc/Frontend/ConstEval.h"
#include "nncc/Frontend/Lexer.h"
#include "nncc/Frontend/Library.h"
#include "nncc/Frontend/Parser.h"
#include "nncc/Frontend/Sema.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace nncc::frontend;

namespace {

/// Collects "line:col: message" for every diagnostic emitted.
class Fixture : public ::testing::Test {
protected:
  Fixture()
      : handler(&ctx,
                [this](mlir::Diagnostic &d) {
                  std::string s;
                  llvm::raw_string_ostream os(s);
                  if (auto l = llvm::dyn_cast<mlir::FileLineColLoc>(d.getLocation()))
                    os << l.getLine() << ":" << l.getColumn() << ": ";
                  os << d.str();
                  diags.push_back(s);
                  return mlir::success();
                }),
        diag(ctx, "test.nn") {}

  std::string exprString(llvm::StringRef src) {
    Parser p(src, diag);
    ExprPtr e = p.parseStandaloneExpr();
    if (!e)
      return "<error>";
    std::string s;
    llvm::raw_string_ostream os(s);
    dumpExpr(*e, os);
    return s;
  }

  std::optional<CValue> eval(llvm::StringRef src) {
    Parser p(src, diag);
    ExprPtr e = p.parseStandaloneExpr();
    if (!e)
      return std::nullopt;
    return evalConst(*e, [](llvm::StringRef) { return NameInfo(); }, diag);
  }

  mlir::MLIRContext ctx;
  std::vector<std::string> diags;
  mlir::ScopedDiagnosticHandler handler;
  DiagEngine diag;
};

//===----------------------------------------------------------------------===//
// Lexer
//===----------------------------------------------------------------------===//

TEST_F(Fixture, LexerTokensAndValues) {
  Lexer lex("model m { const a = 12, b = 1e-3 } // c\n/* d */ x[0]:@%", diag);
  std::vector<Token> toks = lex.lexAll();
  std::vector<Tok> kinds;
  for (auto &t : toks)
    kinds.push_back(t.kind);
  std::vector<Tok> expected = {
      Tok::KwModel, Tok::Ident,    Tok::LBrace, Tok::KwConst,  Tok::Ident,
      Tok::Assign,  Tok::Int,      Tok::Comma,  Tok::Ident,    Tok::Assign,
      Tok::Float,   Tok::RBrace,   Tok::Ident,  Tok::LBracket, Tok::Int,
      Tok::RBracket, Tok::Colon,   Tok::At,     Tok::Percent,  Tok::Eof};
  EXPECT_EQ(kinds, expected);
  EXPECT_EQ(toks[6].intValue, 12);
  EXPECT_DOUBLE_EQ(toks[10].floatValue, 1e-3);
  EXPECT_EQ(toks[12].text, "x");
  EXPECT_EQ(toks[12].loc.line, 2u);
  EXPECT_EQ(toks[12].loc.col, 9u);
  EXPECT_TRUE(toks[12].newlineBefore);
  EXPECT_FALSE(toks[13].newlineBefore);
  EXPECT_TRUE(diags.empty());
}

TEST_F(Fixture, LexerKeywordsAreNotIdentifiers) {
  Lexer lex("repeat parallel true false train", diag);
  auto toks = lex.lexAll();
  EXPECT_EQ(toks[0].kind, Tok::KwRepeat);
  EXPECT_EQ(toks[1].kind, Tok::Ident); // contextual
  EXPECT_EQ(toks[2].kind, Tok::KwTrue);
  EXPECT_EQ(toks[3].kind, Tok::KwFalse);
  EXPECT_EQ(toks[4].kind, Tok::KwTrain);
}

TEST_F(Fixture, LexerErrors) {
  struct Case {
    const char *src;
    const char *message;
  } cases[] = {
      {"a $", "1:3: unexpected character '$'"},
      {"/* open", "1:1: unterminated block comment"},
      {"9223372036854775808",
       "1:1: integer literal '9223372036854775808' does not fit in 64 bits"},
      {"1e", "1:1: malformed exponent in number literal"},
      {"3x", "1:1: invalid suffix 'x' on number literal"},
      {"1e400", "1:1: float literal '1e400' is out of range"},
  };
  for (auto &c : cases) {
    diags.clear();
    Lexer lex(c.src, diag);
    auto toks = lex.lexAll();
    EXPECT_EQ(toks.back().kind, Tok::Error) << c.src;
    ASSERT_EQ(diags.size(), 1u) << c.src;
    EXPECT_EQ(diags[0], c.message);
  }
}

TEST_F(Fixture, LexerMaxInt) {
  Lexer lex("9223372036854775807", diag);
  auto t = lex.next();
  EXPECT_EQ(t.kind, Tok::Int);
  EXPECT_EQ(t.intValue, INT64_MAX);
}

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

TEST_F(Fixture, ExpressionPrecedence) {
  EXPECT_EQ(exprString("a + b * c"), "(a + (b * c))");
  EXPECT_EQ(exprString("a - b - c"), "((a - b) - c)");
  EXPECT_EQ(exprString("0.5 * h @ w"), "((0.5 * h) @ w)");
  EXPECT_EQ(exprString("-a * b"), "((-a) * b)");
  EXPECT_EQ(exprString("(a + b) % 3"), "((a + b) % 3)");
  EXPECT_EQ(exprString("f(x)[:, 0]"), "f(x)[:, 0]");
  EXPECT_EQ(exprString("h[1:, ::2, -1, a:b:c]"), "h[1:, ::2, (-1), a:b:c]");
  EXPECT_EQ(exprString("g(x, axis: -1, k: [1, 2])"),
            "g(x, axis: (-1), k: [1, 2])");
  EXPECT_EQ(exprString("dilated(window: 64, global: [0])"),
            "dilated(window: 64, global: [0])");
  EXPECT_EQ(exprString("true"), "true");
  EXPECT_EQ(exprString("1e-3"), "0.001");
  EXPECT_EQ(exprString("2.0"), "2.0");
  EXPECT_TRUE(diags.empty());
}

TEST_F(Fixture, SliceStepOnly) {
  // `::2` parses as start=none stop=none step=2.
  Parser p("h[::2]", diag);
  ExprPtr e = p.parseStandaloneExpr();
  ASSERT_TRUE(e);
  auto *ix = llvm::dyn_cast<IndexExpr>(e.get());
  ASSERT_TRUE(ix);
  ASSERT_EQ(ix->items.size(), 1u);
  EXPECT_TRUE(ix->items[0].isSlice);
  EXPECT_FALSE(ix->items[0].start);
  EXPECT_FALSE(ix->items[0].stop);
  ASSERT_TRUE(ix->items[0].step);
}

TEST_F(Fixture, NewlineEndsExpression) {
  // A '(' starting a line is a new statement, not a call.
  const char *src = "model m {\n forward {\n  y = x\n  (a, b) = f(y)\n  output a\n }\n}\n";
  auto file = parseBuffer(src, diag);
  ASSERT_TRUE(file) << (diags.empty() ? "" : diags[0]);
  auto &body = file->model->forward->body;
  ASSERT_EQ(body.size(), 3u);
  auto *a = llvm::dyn_cast<AssignStmt>(body[1].get());
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->target.isTuple());
  EXPECT_EQ(a->target.elems.size(), 2u);
}

TEST_F(Fixture, ParseModelStructure) {
  const char *src = R"(
block ffn(d: int, hidden: int, p: float = 0.1) {
  up = linear(d, hidden)
  forward(x) { return dropout(up(x), p: p) }
}
model m {
  dims B, T
  const V = 10, E = 4
  input tokens: i32[B, T]
  stack = repeat 3 ffn(E, 2 * E)
  heads = parallel 2 linear(E, 1)
  forward {
    y, (h, c) = rnn(tokens)
    output y
    output z = y
    loss mse(y, z)
  }
  train { epochs 2; batch 3 }
}
)";
  auto file = parseBuffer(src, diag);
  ASSERT_TRUE(file) << (diags.empty() ? "" : diags[0]);
  ASSERT_EQ(file->blocks.size(), 1u);
  EXPECT_EQ(file->blocks[0]->params.size(), 3u);
  EXPECT_TRUE(file->blocks[0]->params[2].defaultValue);
  auto &m = *file->model;
  EXPECT_EQ(m.name.name, "m");
  ASSERT_EQ(m.decls.size(), 6u); // dims, V, E, input, stack, heads
  EXPECT_EQ(m.decls[0].kind, DeclItem::Dims);
  EXPECT_EQ(m.decls[1].kind, DeclItem::Const);
  EXPECT_EQ(m.decls[3].kind, DeclItem::Input);
  EXPECT_EQ(m.decls[4].kind, DeclItem::Layer);
  EXPECT_TRUE(m.decls[4].layer.repeat);
  EXPECT_FALSE(m.decls[4].layer.parallel);
  EXPECT_TRUE(m.decls[5].layer.parallel);
  ASSERT_TRUE(m.forward);
  EXPECT_EQ(m.forward->body.size(), 4u);
  ASSERT_TRUE(m.train);
  EXPECT_EQ(m.train->items.size(), 2u);
}

TEST_F(Fixture, ParserErrorsAreLocated) {
  struct Case {
    const char *src;
    const char *message;
  } cases[] = {
      {"model m {", "1:10: expected a declaration or '}' in a model, found end "
                    "of file"},
      {"model m { fc = linear(4 4) }",
       "1:25: expected ')' to close the argument list, found integer literal "
       "'4'"},
      {"block b() { forward(x) { return x } }",
       "1:38: expected a 'model' definition before end of file"},
      {"model m { forward { output } }",
       "1:28: expected output name, found '}'"},
  };
  for (auto &c : cases) {
    diags.clear();
    EXPECT_FALSE(parseBuffer(c.src, diag)) << c.src;
    ASSERT_EQ(diags.size(), 1u) << c.src;
    EXPECT_EQ(diags[0], c.message);
  }
}

TEST_F(Fixture, FirstErrorWinsOverLaterLexicalError) {
  EXPECT_FALSE(parseBuffer("model m { 1 }\n$", diag));
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0], "1:11: expected a declaration or '}' in a model, found "
                      "integer literal '1'");
  diags.clear();
  EXPECT_FALSE(parseBuffer("model m { dims B $ }", diag));
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0], "1:18: unexpected character '$'");
}

TEST_F(Fixture, NestingIsBounded) {
  std::string deep = "model m { const a = " + std::string(5000, '(') + "1" +
                     std::string(5000, ')') + " }";
  EXPECT_FALSE(parseBuffer(deep, diag));
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_NE(diags[0].find("nested too deeply"), std::string::npos);

  diags.clear();
  std::string lists = "model m { const a = " + std::string(5000, '[') + " }";
  EXPECT_FALSE(parseBuffer(lists, diag));
  ASSERT_EQ(diags.size(), 1u);

  diags.clear();
  std::string pat = "model m { forward { " + std::string(5000, '(') + "a";
  EXPECT_FALSE(parseBuffer(pat, diag));
  ASSERT_EQ(diags.size(), 1u);
}

TEST_F(Fixture, EveryPrefixFailsCleanly) {
  // Truncating a valid file anywhere must give exactly one error, no crash.
  std::string src = "block b(d: int = 2) { l = linear(d, d)\n forward(x) { "
                    "return l(x)[:, 0] } }\nmodel m { dims B\n input x: "
                    "f32[B, 2]\n k = b(2)\n forward { y, z = k(x), x\n output "
                    "y } train { optimizer adam(lr: 1e-3) } }";
  for (size_t n = 0; n < src.size(); ++n) {
    diags.clear();
    auto file = parseBuffer(llvm::StringRef(src).take_front(n), diag);
    EXPECT_FALSE(file) << n;
    EXPECT_EQ(diags.size(), 1u) << n;
  }
}

//===----------------------------------------------------------------------===//
// Constant evaluation
//===----------------------------------------------------------------------===//

TEST_F(Fixture, ConstantArithmetic) {
  auto v = eval("4 * (3 + 5) - 2");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, CValue::Int);
  EXPECT_EQ(v->i, 30);

  v = eval("256 / 2");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, CValue::Int) << "exact integer division stays an int";
  EXPECT_EQ(v->i, 128);

  v = eval("7 / 2");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, CValue::Float) << "inexact division gives a float";
  EXPECT_DOUBLE_EQ(v->f, 3.5);

  v = eval("-7 % 3");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->i, -1);

  v = eval("1e-3 * 2");
  ASSERT_TRUE(v);
  EXPECT_DOUBLE_EQ(v->f, 2e-3);

  v = eval("[1, 2 + 3]");
  ASSERT_TRUE(v);
  ASSERT_EQ(v->kind, CValue::List);
  EXPECT_EQ(v->elems[1].i, 5);

  v = eval("rk4");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, CValue::Enum);
  EXPECT_EQ(v->name, "rk4");
  EXPECT_TRUE(diags.empty());
}

TEST_F(Fixture, ConstantErrors) {
  struct Case {
    const char *src;
    const char *message;
  } cases[] = {
      {"1 / 0", "1:3: division by zero in constant expression"},
      {"1 % 0", "1:3: remainder by zero in constant expression"},
      {"1.0 / 0", "1:5: division by zero in constant expression"},
      {"9223372036854775807 + 1",
       "1:21: integer overflow in constant expression: 9223372036854775807 + "
       "1"},
      {"-9223372036854775807 - 2",
       "1:22: integer overflow in constant expression: -9223372036854775807 "
       "- 2"},
      {"3037000500 * 3037000500",
       "1:12: integer overflow in constant expression: 3037000500 * "
       "3037000500"},
      {"(-9223372036854775807 - 1) / -1",
       "1:28: integer overflow in constant expression: -9223372036854775808 "
       "/ -1"},
      {"1e308 * 10", "1:7: floating-point overflow in constant expression: "
                     "1e+308 * 10"},
      {"1.5 % 1", "1:5: '%' needs integer operands, got float 1.5 and int 1"},
      {"x + 1", "1:1: use of undeclared constant 'x'"},
      {"true + 1", "1:6: operator '+' needs numbers, got bool true"},
      {"a @ b", "1:3: '@' (matrix product) is not allowed in a constant "
                "expression"},
      {"a[0]", "1:2: indexing is not allowed in a constant expression"},
  };
  for (auto &c : cases) {
    diags.clear();
    EXPECT_FALSE(eval(c.src)) << c.src;
    ASSERT_EQ(diags.size(), 1u) << c.src;
    EXPECT_EQ(diags[0], c.message);
  }
}

TEST_F(Fixture, ConstantNamesFromScope) {
  CValue h = CValue::makeInt(256);
  Parser p("4 * H + B", diag);
  ExprPtr e = p.parseStandaloneExpr();
  ASSERT_TRUE(e);
  auto lookup = [&](llvm::StringRef n) {
    NameInfo ni;
    if (n == "H") {
      ni.kind = NameInfo::Const;
      ni.value = &h;
    } else if (n == "B") {
      ni.kind = NameInfo::Dim;
    }
    return ni;
  };
  EXPECT_FALSE(evalConst(*e, lookup, diag));
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0],
            "1:9: 'B' is a symbolic dimension, not a compile-time constant");
}

//===----------------------------------------------------------------------===//
// Library signatures
//===----------------------------------------------------------------------===//

TEST_F(Fixture, BindArguments) {
  const LayerSpec *lin = lookupLayer("linear");
  ASSERT_TRUE(lin);
  std::vector<int> slots;
  std::vector<ArgRef> args = {{"", {1, 1}}, {"bias", {1, 5}}, {"out", {1, 9}}};
  EXPECT_TRUE(bindArgs("linear", lin->ctorParams, args, {1, 1}, diag, slots));
  EXPECT_EQ(slots, (std::vector<int>{0, 2, 1}));

  std::vector<ArgRef> bad = {{"", {1, 1}}, {"bais", {1, 5}}};
  EXPECT_FALSE(bindArgs("linear", lin->ctorParams, bad, {1, 1}, diag, slots));
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0], "1:5: 'linear' has no parameter named 'bais' "
                      "(parameters: in, out, bias)");

  diags.clear();
  std::vector<ArgRef> missing = {{"", {1, 1}}};
  EXPECT_FALSE(
      bindArgs("linear", lin->ctorParams, missing, {2, 3}, diag, slots));
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0], "2:3: missing argument 'out' of 'linear'");
}

TEST_F(Fixture, CheckValueKinds) {
  ParamSpec prob{"p", PK::Prob, true, std::nullopt, {}};
  CValue v = CValue::makeInt(0);
  EXPECT_TRUE(checkValue("dropout", prob, v, diag));
  EXPECT_EQ(v.kind, CValue::Float) << "ints widen to floats";
  v = CValue::makeFloat(1.0);
  EXPECT_FALSE(checkValue("dropout", prob, v, diag));

  ParamSpec kind{"kind", PK::AttnKind, false, std::nullopt, {}};
  CValue lsh;
  lsh.kind = CValue::Ctor;
  lsh.name = "lsh";
  lsh.kwargs.emplace_back("chunk", CValue::makeInt(32));
  EXPECT_TRUE(checkValue("attention", kind, lsh, diag));
  ASSERT_EQ(lsh.kwargs.size(), 5u) << "defaults are filled";
  EXPECT_EQ(lsh.kwargs[0].first, "hashes");
  EXPECT_EQ(lsh.kwargs[0].second.i, 4);
  EXPECT_EQ(lsh.kwargs[2].first, "convention");
  EXPECT_EQ(lsh.kwargs[2].second.name, "hf") << "Hugging Face's LSH by default";
  EXPECT_EQ(lsh.kwargs[3].first, "pad_to_multiple");
  EXPECT_EQ(lsh.kwargs[3].second.i, 0) << "no ReformerModel padding by default";

  ParamSpec act{"activation", PK::Activation, false, std::nullopt, {}};
  CValue lr = CValue::makeEnum("leaky_relu");
  EXPECT_TRUE(checkValue("mlp", act, lr, diag));
  EXPECT_EQ(lr.kind, CValue::Ctor);
}

TEST_F(Fixture, EveryLayerAndFunctionHasASignature) {
  for (const char *n : {"linear", "embedding", "bert_embeddings",
                        "learned_position", "layer_norm", "rnn", "lstm", "gru",
                        "rnn_cell", "lstm_cell", "gru_cell", "attention",
                        "encoder_layer", "mlp", "residual", "reversible"})
    EXPECT_TRUE(lookupLayer(n)) << n;
  for (const char *n :
       {"relu", "leaky_relu", "tanh", "sigmoid", "gelu", "softmax", "exp",
        "log", "dropout", "zoneout", "sinusoidal_position", "concat", "split",
        "transpose", "mean", "sum", "matmul", "odesolve", "ode_rnn", "mse",
        "cross_entropy", "binary_cross_entropy_with_logits"})
    EXPECT_TRUE(lookupFunc(n)) << n;
}

//===----------------------------------------------------------------------===//
// Declaration checking and instantiation
//===----------------------------------------------------------------------===//

TEST_F(Fixture, InstantiationPaths) {
  const char *src = R"(
block ffn(d: int, h: int) {
  up = linear(d, h)
  forward(x) { return up(x) }
}
model m {
  dims B
  const D = 8
  input x: f32[B, D]
  stack = repeat 2 ffn(D, D / 2)
  rev = reversible(ffn(D / 2, 2), ffn(D / 2, 2))
  res = residual(linear(D, D))
  forward { output y = stack(x) }
}
)";
  auto file = parseBuffer(src, diag);
  ASSERT_TRUE(file);
  auto model = analyzeModel(*file, diag);
  ASSERT_TRUE(model) << (diags.empty() ? "" : diags[0]);
  LayerInstance *stack = model->layer("stack");
  ASSERT_TRUE(stack);
  EXPECT_EQ(stack->kind, LayerInstance::Repeat);
  ASSERT_EQ(stack->children.size(), 2u);
  LayerInstance *up = stack->children[1].second->child("up");
  ASSERT_TRUE(up);
  EXPECT_EQ(up->paramName("weight"), "stack.1.up.weight");
  EXPECT_EQ(up->intArg("out"), 4);
  LayerInstance *rev = model->layer("rev");
  ASSERT_TRUE(rev && rev->child("g"));
  EXPECT_EQ(rev->child("g")->child("up")->paramName("bias"), "rev.g.up.bias");
  LayerInstance *res = model->layer("res");
  ASSERT_TRUE(res && res->child("inner"));
  EXPECT_EQ(res->child("inner")->paramName("weight"), "res.weight");
  ASSERT_EQ(model->inputs.size(), 1u);
  EXPECT_TRUE(model->inputs[0].shape[0].symbolic);
  EXPECT_EQ(model->inputs[0].shape[1].size, 8);
}

TEST_F(Fixture, RecursionIsRejected) {
  const char *src = "block a() { x = b()\n forward(v) { return v } }\n"
                    "block b() { y = a()\n forward(v) { return v } }\n"
                    "model m { t = a()\n forward { } }";
  auto file = parseBuffer(src, diag);
  ASSERT_TRUE(file);
  EXPECT_FALSE(analyzeModel(*file, diag));
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0], "3:17: recursive block instantiation: a -> b -> a");
}

TEST_F(Fixture, InstanceCountIsBounded) {
  const char *src = "block a() { x = repeat 4096 linear(1, 1)\n forward(v) { "
                    "return v } }\nmodel m { t = repeat 4096 a()\n forward { "
                    "} }";
  auto file = parseBuffer(src, diag);
  ASSERT_TRUE(file);
  EXPECT_FALSE(analyzeModel(*file, diag));
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_NE(diags[0].find("too many layer instances"), std::string::npos);
}

} // namespace
