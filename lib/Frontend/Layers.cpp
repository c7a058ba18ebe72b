//===- Layers.cpp - How each library layer and function becomes nn ops ----===//
//
// One entry per library layer / forward function, looked up by name. Layer
// parameters are declared with PyTorch's state_dict names and default
// initializers (see docs/design.md, "Parameters").
//
//===----------------------------------------------------------------------===//
#include "GenContext.h"

#include "llvm/ADT/StringMap.h"

#include <cmath>

using namespace nncc::frontend;
namespace nn = nncc::nn;

namespace {

using Result = std::optional<FVal>;

mlir::Attribute uniform(Gen &g, double bound) {
  return nn::InitAttr::getUniform(&g.ctx, -bound, bound);
}
mlir::Attribute normal(Gen &g, double stddev) {
  return nn::InitAttr::getNormal(&g.ctx, 0.0, stddev);
}
mlir::Attribute zeros(Gen &g) { return nn::InitAttr::getZeros(&g.ctx); }
mlir::Attribute ones(Gen &g) { return nn::InitAttr::getOnes(&g.ctx); }

Result tensorResult(mlir::Value v, SrcLoc l) {
  if (!v)
    return std::nullopt;
  return FVal::tensor(v, l);
}

/// The results of `op` as a tuple of tensors (multi-result ops).
Result tupleResult(mlir::Operation *op, SrcLoc l) {
  if (!op)
    return std::nullopt;
  std::vector<FVal> outs;
  for (mlir::Value r : op->getResults())
    outs.push_back(FVal::tensor(r, l));
  return FVal::tuple(outs, l);
}

/// A sub-layer path (e.g. "self_attn") for parameters of composite layers.
LayerInstance sub(const LayerInstance &inst, llvm::StringRef name) {
  LayerInstance s;
  s.path = inst.paramName(name);
  return s;
}

mlir::Value linearOp(Gen &g, const LayerInstance &inst, mlir::Value x,
                     int64_t in, int64_t out, bool bias, SrcLoc l) {
  double bound = 1.0 / std::sqrt(double(in));
  mlir::Value w = g.param(inst, "weight", {out, in}, uniform(g, bound), l);
  llvm::SmallVector<mlir::Value> ops = {x, w};
  if (bias)
    ops.push_back(g.param(inst, "bias", {out}, uniform(g, bound), l,
                          Gen::ParamRole::Bias));
  return g.op1<nn::LinearOp>(l, ops);
}

mlir::Value layerNormOp(Gen &g, const LayerInstance &inst, mlir::Value x,
                        int64_t dim, double eps, SrcLoc l) {
  mlir::Value w = g.param(inst, "weight", {dim}, ones(g), l, Gen::ParamRole::Norm);
  mlir::Value b = g.param(inst, "bias", {dim}, zeros(g), l, Gen::ParamRole::Norm);
  return g.op1<nn::LayerNormOp>(l, {x, w, b}, {g.attrF64("eps", eps)},
               {1, 1, 1});
}

mlir::Value dropoutOp(Gen &g, mlir::Value x, double p, SrcLoc l) {
  if (p == 0.0)
    return x;
  return g.op1<nn::DropoutOp>(l, {x},
               {g.attrF64("p", p), g.attrI64("seed", g.nextSeed())});
}

mlir::Value activationOp(Gen &g, const CValue &act, mlir::Value x, SrcLoc l) {
  const std::string &n = act.name;
  if (n == "leaky_relu") {
    double alpha = 0.01;
    for (auto &kv : act.kwargs)
      if (kv.first == "alpha")
        alpha = kv.second.asDouble();
    return g.op1<nn::LeakyReluOp>(l, {x}, {g.attrF64("alpha", alpha)});
  }
  // Hugging Face's names: gelu_new and gelu_pytorch_tanh are both the tanh
  // approximation 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))).
  if (n == "gelu" || n == "gelu_new" || n == "gelu_pytorch_tanh")
    return g.op1<nn::GeluOp>(l, {x},
                 {g.attr("approximate",
                         nn::GeluApproximationAttr::get(
                             &g.ctx, n == "gelu" ? nn::GeluApproximation::none
                                                 : nn::GeluApproximation::tanh))});
  if (n == "relu")
    return g.op1<nn::ReluOp>(l, {x});
  if (n == "tanh")
    return g.op1<nn::TanhOp>(l, {x});
  if (n == "sigmoid")
    return g.op1<nn::SigmoidOp>(l, {x});
  g.diag.error(l, "unknown activation '" + n + "'");
  return {};
}

mlir::Attribute attentionKind(Gen &g, const CValue *kind) {
  if (!kind || kind->kind != CValue::Ctor)
    return nn::DenseAttentionAttr::get(&g.ctx);
  auto get = [&](llvm::StringRef name, int64_t dflt) {
    for (auto &kv : kind->kwargs)
      if (kv.first == name && kv.second.kind == CValue::Int)
        return kv.second.i;
    return dflt;
  };
  if (kind->name == "lsh") {
    llvm::StringRef convention = "hf";
    for (auto &kv : kind->kwargs)
      if (kv.first == "convention" && kv.second.kind == CValue::Enum)
        convention = kv.second.name;
    return nn::LshAttentionAttr::get(&g.ctx, get("hashes", 4), get("chunk", 64),
                                     convention, get("pad_to_multiple", 0), get("pad_above", 0));
  }
  if (kind->name == "local")
    return nn::LocalAttentionAttr::get(&g.ctx, get("chunk", 64), get("before", 1),
                                       get("after", 0), get("pad_to_multiple", 0),
                                       get("pad_above", 0));
  llvm::SmallVector<int64_t> global;
  llvm::StringRef convention = "nncc";
  for (auto &kv : kind->kwargs) {
    if (kv.first == "global")
      for (auto &e : kv.second.elems)
        global.push_back(e.i);
    if (kv.first == "convention" && kv.second.kind == CValue::Enum)
      convention = kv.second.name;
  }
  return nn::DilatedAttentionAttr::get(&g.ctx, get("window", 64),
                                       get("dilation", 1), global, convention);
}

/// nn.attention with parameters under `inst` (PyTorch MultiheadAttention
/// names: in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias;
/// Longformer's global projections are rows [3 width, 6 width) of
/// in_proj_*). The heads are `width` wide in all (dim in PyTorch).
mlir::Value attentionOp(Gen &g, const LayerInstance &inst, mlir::Value x,
                        mlir::Value mask, mlir::Value rotations, mlir::Value globalMask,
                        int64_t dim, int64_t heads, int64_t width, const CValue *kind,
                        bool causal, double dropout, bool bias, SrcLoc l) {
  mlir::Attribute kindAttr = attentionKind(g, kind);
  int64_t proj = llvm::cast<nn::AttentionKindAttrInterface>(kindAttr).getNumInputProjections();
  // PyTorch's Xavier bound of its [3E, E] (or LSH's [2E, E]) block; each
  // block of 3 (q, k, v and the global q, k, v) draws from it.
  double xavier = std::sqrt(6.0 / double(dim + std::min<int64_t>(proj, 3) * width));
  llvm::SmallVector<mlir::Value> ops = {x};
  ops.push_back(
      g.param(inst, "in_proj_weight", {proj * width, dim}, uniform(g, xavier), l));
  if (bias)
    ops.push_back(g.param(inst, "in_proj_bias", {proj * width}, zeros(g), l,
                          Gen::ParamRole::Bias));
  LayerInstance out = sub(inst, "out_proj");
  ops.push_back(g.param(out, "weight", {dim, width},
                        uniform(g, 1.0 / std::sqrt(double(width))), l));
  if (bias)
    ops.push_back(g.param(out, "bias", {dim}, zeros(g), l, Gen::ParamRole::Bias));
  if (mask)
    ops.push_back(mask);
  if (rotations)
    ops.push_back(rotations);
  if (globalMask)
    ops.push_back(globalMask);
  int32_t b = bias ? 1 : 0;
  return g.op1<nn::AttentionOp>(l, ops,
               {g.attrI64("num_heads", heads), g.attr("kind", kindAttr),
                g.attrBool("causal", causal), g.attrF64("dropout", dropout),
                g.attrI64("seed", dropout > 0 ? g.nextSeed() : 0)},
               {1, 1, b, 1, b, mask ? 1 : 0, rotations ? 1 : 0, globalMask ? 1 : 0});
}

//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

Result lowerLinear(Gen &g, const LayerInstance &inst, llvm::ArrayRef<FVal> a,
                   SrcLoc l) {
  return tensorResult(linearOp(g, inst, a[0].value, inst.intArg("in"),
                               inst.intArg("out"), inst.boolArg("bias", true),
                               l),
                      l);
}

/// nn.embedding of `indices` in `table`; row `padding` (>= 0) gets no
/// gradient (PyTorch's padding_idx), checked against the table's rows.
mlir::Value embeddingOp(Gen &g, const LayerInstance &inst, mlir::Value indices,
                        mlir::Value table, int64_t rows, int64_t padding, SrcLoc l) {
  if (padding >= rows) {
    g.diag.error(inst.loc, "padding_idx " + std::to_string(padding) + " of '" +
                               inst.callee + "' is not a row of its " + std::to_string(rows) +
                               "-row table");
    return {};
  }
  llvm::SmallVector<mlir::NamedAttribute, 1> attrs;
  if (padding >= 0)
    attrs.push_back(g.attrI64("padding_idx", padding));
  return g.op1<nn::EmbeddingOp>(l, {indices, table}, attrs);
}

Result lowerEmbedding(Gen &g, const LayerInstance &inst,
                      llvm::ArrayRef<FVal> a, SrcLoc l) {
  mlir::Value t = g.param(inst, "weight",
                          {inst.intArg("num"), inst.intArg("dim")},
                          normal(g, 1.0), l, Gen::ParamRole::Embedding);
  return tensorResult(embeddingOp(g, inst, a[0].value, t, inst.intArg("num"),
                                  inst.intArg("padding_idx", -1), l),
                      l);
}

Result lowerLearnedPosition(Gen &g, const LayerInstance &inst,
                            llvm::ArrayRef<FVal> a, SrcLoc l) {
  mlir::Value t = g.param(inst, "weight",
                          {inst.intArg("max_len"), inst.intArg("dim")},
                          normal(g, 1.0), l, Gen::ParamRole::Embedding);
  return tensorResult(g.op1<nn::LearnedPositionOp>(l, {a[0].value, t}), l);
}

Result lowerLayerNorm(Gen &g, const LayerInstance &inst,
                      llvm::ArrayRef<FVal> a, SrcLoc l) {
  return tensorResult(layerNormOp(g, inst, a[0].value, inst.intArg("dim"),
                                  inst.floatArg("eps", 1e-5), l),
                      l);
}

/// Two positive sizes from the list argument `name` of bert_embeddings
/// (`what` says who needs them).
std::optional<std::pair<int64_t, int64_t>>
axialPair(Gen &g, const LayerInstance &inst, llvm::StringRef name,
          llvm::StringRef what = "position: axial") {
  const CValue *v = inst.arg(name);
  if (!v || v->kind != CValue::List || v->elems.size() != 2 ||
      v->elems[0].i < 1 || v->elems[1].i < 1) {
    g.diag.error(inst.loc, what + " needs " + name + ": [a, b], two positive sizes");
    return std::nullopt;
  }
  return std::make_pair(v->elems[0].i, v->elems[1].i);
}

/// x + the axial position embeddings of shape [n1, n2] and dims [d1, d2]
/// (Reformer, §5.3.2; Hugging Face's AxialPositionEmbeddings): parameters
/// `<path>.weights.0` [n1, 1, d1] and `.weights.1` [1, n2, d2] under
/// `table`; position t gets [weights.0[t / n2], weights.1[t % n2]].
mlir::Value axialPositionOp(Gen &g, const LayerInstance &inst, const LayerInstance &table,
                            mlir::Value x, int64_t d, llvm::StringRef shapeArg,
                            llvm::StringRef dimsArg, llvm::StringRef what, SrcLoc l) {
  auto shape = axialPair(g, inst, shapeArg, what);
  auto dims = shape ? axialPair(g, inst, dimsArg, what) : std::nullopt;
  if (!dims)
    return {};
  if (dims->first + dims->second != d) {
    g.diag.error(inst.loc, dimsArg + " [" + llvm::Twine(dims->first) + ", " +
                               llvm::Twine(dims->second) + "] must add up to dim " +
                               llvm::Twine(d));
    return {};
  }
  mlir::Value rows = g.param(table, "weights.0", {shape->first, 1, dims->first},
                             normal(g, 1.0), l, Gen::ParamRole::Embedding);
  mlir::Value cols = g.param(table, "weights.1", {1, shape->second, dims->second},
                             normal(g, 1.0), l, Gen::ParamRole::Embedding);
  return g.op1<nn::AxialPositionOp>(l, {x, rows, cols});
}

/// The standalone axial_position layer: x + its table (T <= n1 n2).
Result lowerAxialPosition(Gen &g, const LayerInstance &inst, llvm::ArrayRef<FVal> a,
                          SrcLoc l) {
  return tensorResult(axialPositionOp(g, inst, inst, a[0].value, inst.intArg("dim"), "shape",
                                      "dims", "axial_position", l),
                      l);
}

/// bert_embeddings' position term: a learned table `position_embeddings`
/// [max_len, d] (BERT), the fixed sinusoidal encoding (eqs. 48-49 of the
/// seed thesis), or axial embeddings (Reformer, §5.3.2) with Hugging Face's
/// names and shapes: position_embeddings.weights.0 [n1, 1, d1] and
/// .weights.1 [1, n2, d2] for axial_shape [n1, n2], axial_dims [d1, d2].
/// With `ids` (the call's positions:, [B, T] integers) the learned table
/// is looked up at them (RoBERTa / Longformer position ids; its padding_idx
/// row, when the layer has one, gets no gradient, as in Hugging Face).
mlir::Value addPosition(Gen &g, const LayerInstance &inst,
                        llvm::StringRef position, mlir::Value s, int64_t d,
                        mlir::Value ids, SrcLoc l) {
  bool axialArgs = inst.arg("axial_shape") || inst.arg("axial_dims");
  if (position != "axial" && axialArgs) {
    g.diag.error(inst.loc, "axial_shape and axial_dims apply only to "
                           "position: axial");
    return {};
  }
  LayerInstance table = sub(inst, "position_embeddings");
  if (ids && position != "learned") {
    g.diag.error(l, "positions: looks up the learned position table; '" + inst.path +
                        "' has position: " + position);
    return {};
  }
  if (ids) {
    int64_t rows = inst.intArg("max_len");
    mlir::Value p = embeddingOp(
        g, inst, ids,
        g.param(table, "weight", {rows, d}, normal(g, 0.02), l, Gen::ParamRole::Embedding), rows,
        inst.intArg("padding_idx", -1), l);
    return p ? g.op1<nn::AddOp>(l, {s, p}) : p;
  }
  if (position == "sinusoidal")
    return g.op1<nn::SinusoidalPositionOp>(l, {s});
  if (position == "learned")
    return g.op1<nn::LearnedPositionOp>(l,
                 {s, g.param(table, "weight", {inst.intArg("max_len"), d},
                             normal(g, 0.02), l, Gen::ParamRole::Embedding)});
  return axialPositionOp(g, inst, table, s, d, "axial_shape", "axial_dims", "position: axial",
                         l);
}

/// BERT embeddings with Hugging Face names and initializers (N(0, 0.02)).
Result lowerBertEmbeddings(Gen &g, const LayerInstance &inst,
                           llvm::ArrayRef<FVal> a, SrcLoc l) {
  int64_t v = inst.intArg("vocab"), d = inst.intArg("dim");
  mlir::Value words =
      g.param(sub(inst, "word_embeddings"), "weight", {v, d}, normal(g, 0.02),
              l, Gen::ParamRole::Embedding);
  mlir::Value types = g.param(sub(inst, "token_type_embeddings"), "weight",
                              {inst.intArg("type_vocab"), d}, normal(g, 0.02),
                              l, Gen::ParamRole::Embedding);
  std::string position = inst.enumArg("position", "learned");
  mlir::Value e =
      embeddingOp(g, inst, a[0].value, words, v, inst.intArg("padding_idx", -1), l);
  if (!e)
    return std::nullopt;
  mlir::Value t = g.op1<nn::EmbeddingOp>(l, {a[1].value, types});
  if (!t)
    return std::nullopt;
  mlir::Value s = g.op1<nn::AddOp>(l, {e, t});
  if (!s)
    return std::nullopt;
  s = addPosition(g, inst, position, s, d, a[2].value, l);
  if (!s)
    return std::nullopt;
  s = layerNormOp(g, sub(inst, "LayerNorm"), s, d, inst.floatArg("eps", 1e-12),
                  l);
  if (!s)
    return std::nullopt;
  return tensorResult(dropoutOp(g, s, inst.floatArg("dropout", 0.1), l), l);
}

/// nn.rnn / nn.lstm / nn.gru with PyTorch's flat weights.
Result lowerRecurrent(Gen &g, const LayerInstance &inst,
                      llvm::ArrayRef<FVal> a, SrcLoc l) {
  llvm::StringRef kind = inst.callee;
  int64_t gates = kind == "lstm" ? 4 : kind == "gru" ? 3 : 1;
  int64_t in = inst.intArg("in"), h = inst.intArg("hidden");
  int64_t layers = inst.intArg("layers", 1);
  bool bidir = inst.boolArg("bidirectional"), bias = inst.boolArg("bias", true);
  int64_t dirs = bidir ? 2 : 1;
  double bound = 1.0 / std::sqrt(double(h));
  llvm::SmallVector<mlir::Value> weights;
  for (int64_t layer = 0; layer < layers; ++layer) {
    int64_t inL = layer == 0 ? in : dirs * h;
    for (int64_t d = 0; d < dirs; ++d) {
      std::string sfx =
          "_l" + std::to_string(layer) + (d == 1 ? "_reverse" : "");
      weights.push_back(g.param(inst, "weight_ih" + sfx, {gates * h, inL},
                                uniform(g, bound), l));
      weights.push_back(g.param(inst, "weight_hh" + sfx, {gates * h, h},
                                uniform(g, bound), l));
      if (bias) {
        weights.push_back(g.param(inst, "bias_ih" + sfx, {gates * h},
                                  uniform(g, bound), l, Gen::ParamRole::Bias));
        weights.push_back(g.param(inst, "bias_hh" + sfx, {gates * h},
                                  uniform(g, bound), l, Gen::ParamRole::Bias));
      }
    }
  }
  // applyParams: x, h0, [c0,] lengths
  llvm::SmallVector<mlir::Value> ops = {a[0].value};
  llvm::SmallVector<int32_t> seg = {1};
  for (size_t k = 1; k < a.size(); ++k) {
    seg.push_back(a[k].isNone() ? 0 : 1);
    if (!a[k].isNone())
      ops.push_back(a[k].value);
  }
  ops.append(weights.begin(), weights.end());
  seg.push_back(int32_t(weights.size()));
  llvm::SmallVector<mlir::NamedAttribute> attrs = {
      g.attrI64("hidden_size", h), g.attrI64("num_layers", layers),
      g.attrBool("bidirectional", bidir), g.attrBool("has_bias", bias)};
  if (kind == "rnn")
    attrs.push_back(g.attr(
        "nonlinearity",
        nn::NonlinearityAttr::get(&g.ctx, inst.enumArg("nonlinearity") == "relu"
                                              ? nn::Nonlinearity::relu
                                              : nn::Nonlinearity::tanh)));
  else if (kind == "lstm") {
    double zoneout = inst.floatArg("zoneout", 0.0);
    attrs.push_back(g.attrF64("zoneout", zoneout));
    if (zoneout > 0)
      attrs.push_back(g.attrI64("seed", g.nextSeed()));
  }
  else
    attrs.push_back(g.attr(
        "variant", nn::GRUVariantAttr::get(&g.ctx,
                                           inst.enumArg("variant") == "cho2014"
                                               ? nn::GRUVariant::cho2014
                                               : nn::GRUVariant::pytorch)));
  mlir::Operation *op =
      kind == "rnn"    ? g.create<nn::RNNOp>(l, ops, attrs, 2, seg)
      : kind == "lstm" ? g.create<nn::LSTMOp>(l, ops, attrs, 3, seg)
                       : g.create<nn::GRUOp>(l, ops, attrs, 2, seg);
  if (!op)
    return std::nullopt;
  FVal y = FVal::tensor(op->getResult(0), l);
  FVal hn = FVal::tensor(op->getResult(1), l);
  if (kind == "lstm")
    return FVal::tuple({y, FVal::tuple({hn, FVal::tensor(op->getResult(2), l)},
                                       l)},
                       l);
  return FVal::tuple({y, hn}, l);
}

Result lowerCell(Gen &g, const LayerInstance &inst, llvm::ArrayRef<FVal> a,
                 SrcLoc l) {
  llvm::StringRef kind = inst.callee; // rnn_cell, lstm_cell, gru_cell
  int64_t gates = kind == "lstm_cell" ? 4 : kind == "gru_cell" ? 3 : 1;
  int64_t in = inst.intArg("in"), h = inst.intArg("hidden");
  bool bias = inst.boolArg("bias", true);
  double bound = 1.0 / std::sqrt(double(h));
  llvm::SmallVector<mlir::Value> ops;
  for (auto &v : a)
    ops.push_back(v.value);
  llvm::SmallVector<int32_t> seg(a.size(), 1);
  ops.push_back(
      g.param(inst, "weight_ih", {gates * h, in}, uniform(g, bound), l));
  ops.push_back(
      g.param(inst, "weight_hh", {gates * h, h}, uniform(g, bound), l));
  seg.append({1, 1});
  if (bias) {
    ops.push_back(g.param(inst, "bias_ih", {gates * h}, uniform(g, bound), l,
                          Gen::ParamRole::Bias));
    ops.push_back(g.param(inst, "bias_hh", {gates * h}, uniform(g, bound), l,
                          Gen::ParamRole::Bias));
  }
  seg.append({bias ? 1 : 0, bias ? 1 : 0});
  llvm::SmallVector<mlir::NamedAttribute> attrs;
  if (kind == "rnn_cell")
    attrs.push_back(g.attr(
        "nonlinearity",
        nn::NonlinearityAttr::get(&g.ctx, inst.enumArg("nonlinearity") == "relu"
                                              ? nn::Nonlinearity::relu
                                              : nn::Nonlinearity::tanh)));
  if (kind == "gru_cell")
    attrs.push_back(g.attr(
        "variant", nn::GRUVariantAttr::get(&g.ctx,
                                           inst.enumArg("variant") == "cho2014"
                                               ? nn::GRUVariant::cho2014
                                               : nn::GRUVariant::pytorch)));
  mlir::Operation *op =
      kind == "rnn_cell"    ? g.create<nn::RNNCellOp>(l, ops, attrs, 1, seg)
      : kind == "lstm_cell" ? g.create<nn::LSTMCellOp>(l, ops, attrs, 2, seg)
                            : g.create<nn::GRUCellOp>(l, ops, attrs, 1, seg);
  if (!op)
    return std::nullopt;
  if (kind == "lstm_cell")
    return tupleResult(op, l);
  return FVal::tensor(op->getResult(0), l);
}

Result lowerAttention(Gen &g, const LayerInstance &inst,
                      llvm::ArrayRef<FVal> a, SrcLoc l) {
  int64_t heads = inst.intArg("heads", 4);
  return tensorResult(
      attentionOp(g, inst, a[0].value, a[1].value, a[2].value, a[3].value,
                  inst.intArg("dim"), heads,
                  inst.arg("head_dim") ? heads * inst.intArg("head_dim") : inst.intArg("dim"),
                  inst.arg("kind"), inst.boolArg("causal"),
                  inst.floatArg("dropout"), inst.boolArg("bias", true), l),
      l);
}

/// PyTorch nn.TransformerEncoderLayer (post-LN, batch_first):
///   x = norm1(x + dropout(self_attn(x)))
///   x = norm2(x + dropout(linear2(dropout(act(linear1(x))))))
Result lowerEncoderLayer(Gen &g, const LayerInstance &inst,
                         llvm::ArrayRef<FVal> a, SrcLoc l) {
  int64_t d = inst.intArg("dim"), ff = inst.intArg("ff", 1024);
  double p = inst.floatArg("dropout", 0.1), eps = inst.floatArg("eps", 1e-5);
  mlir::Value x = a[0].value;
  mlir::Value att =
      attentionOp(g, sub(inst, "self_attn"), x, a[1].value, mlir::Value(), a[2].value, d,
                  inst.intArg("heads", 4), d, inst.arg("kind"), false, p, true, l);
  if (!att || !(att = dropoutOp(g, att, p, l)))
    return std::nullopt;
  mlir::Value s = g.op1<nn::AddOp>(l, {x, att});
  if (!s || !(x = layerNormOp(g, sub(inst, "norm1"), s, d, eps, l)))
    return std::nullopt;
  mlir::Value h = linearOp(g, sub(inst, "linear1"), x, d, ff, true, l);
  if (!h)
    return std::nullopt;
  CValue act = CValue::makeEnum(inst.enumArg("activation", "relu"));
  if (!(h = activationOp(g, act, h, l)) || !(h = dropoutOp(g, h, p, l)))
    return std::nullopt;
  h = linearOp(g, sub(inst, "linear2"), h, ff, d, true, l);
  if (!h || !(h = dropoutOp(g, h, p, l)))
    return std::nullopt;
  s = g.op1<nn::AddOp>(l, {x, h});
  if (!s)
    return std::nullopt;
  return tensorResult(layerNormOp(g, sub(inst, "norm2"), s, d, eps, l), l);
}

/// Linear layers `path.0` ... `path.{N-1}`, activation (and dropout) between.
Result lowerMLP(Gen &g, const LayerInstance &inst, llvm::ArrayRef<FVal> a,
                SrcLoc l) {
  int64_t n = inst.intArg("layers", 2);
  int64_t in = inst.intArg("in"), hid = inst.intArg("hidden"),
          out = inst.intArg("out");
  double p = inst.floatArg("dropout");
  const CValue *act = inst.arg("activation");
  CValue relu = CValue::makeEnum("relu");
  mlir::Value x = a[0].value;
  for (int64_t i = 0; i < n; ++i) {
    int64_t fi = i == 0 ? in : hid, fo = i == n - 1 ? out : hid;
    x = linearOp(g, sub(inst, std::to_string(i)), x, fi, fo, true, l);
    if (!x)
      return std::nullopt;
    if (i + 1 < n) {
      if (!(x = activationOp(g, act ? *act : relu, x, l)) ||
          !(x = dropoutOp(g, x, p, l)))
        return std::nullopt;
    }
  }
  return FVal::tensor(x, l);
}

Result lowerResidual(Gen &g, const LayerInstance &inst, llvm::ArrayRef<FVal> a,
                     SrcLoc l) {
  LayerInstance *inner = inst.child("inner");
  if (!inner)
    return std::nullopt;
  auto y = g.apply(*inner, {a[0]}, {}, l);
  if (!y)
    return std::nullopt;
  if (y->kind != FVal::Tensor) {
    g.diag.error(l, "the layer inside 'residual' must return one tensor, "
                    "got " + y->describe());
    return std::nullopt;
  }
  return tensorResult(g.op1<nn::AddOp>(l, {a[0].value, y->value}), l);
}

/// Fills a single-block region whose block takes `argTypes`, running `body`
/// to produce the yielded values.
bool fillRegion(Gen &g, mlir::Region &region, llvm::ArrayRef<mlir::Type> types,
                SrcLoc l,
                llvm::function_ref<std::optional<FVal>(
                    llvm::ArrayRef<mlir::BlockArgument>)>
                    body,
                llvm::StringRef what) {
  mlir::Block *block = new mlir::Block();
  region.push_back(block);
  llvm::SmallVector<mlir::BlockArgument> args;
  for (mlir::Type t : types)
    args.push_back(block->addArgument(t, g.loc(l)));
  mlir::OpBuilder::InsertionGuard guard(g.builder);
  g.builder.setInsertionPointToStart(block);
  auto r = body(args);
  if (!r)
    return false;
  if (r->kind != FVal::Tensor) {
    g.diag.error(l, what + " must return one tensor, got " + r->describe());
    return false;
  }
  return g.create<nn::YieldOp>(l, {r->value}, {}, 0, {}, 0,
                  /*infer=*/false) != nullptr;
}

Result lowerReversible(Gen &g, const LayerInstance &inst,
                       llvm::ArrayRef<FVal> a, SrcLoc l) {
  mlir::Value x = a[0].value;
  nn::TensorType t = g.tensorType(x);
  if (!t || t.getRank() == 0) {
    g.diag.error(l, "'reversible' needs a tensor of rank >= 1");
    return std::nullopt;
  }
  nn::Dim last = t.getDim(t.getRank() - 1);
  if (!last.isStatic() || last.getSize() % 2 != 0) {
    g.diag.error(l, "'reversible' needs a static, even feature size, got " +
                        last.str());
    return std::nullopt;
  }
  llvm::SmallVector<nn::Dim> half(t.getDims());
  half.back() = nn::Dim::getStatic(last.getSize() / 2);
  mlir::Type halfType = t.withDims(half);
  mlir::Operation *op =
      g.create<nn::ReversibleOp>(l, {x}, {}, 1, {}, 2, /*infer=*/false);
  if (!op)
    return std::nullopt;
  for (unsigned r = 0; r < 2; ++r) {
    LayerInstance *fn = inst.child(r == 0 ? "f" : "g");
    if (!fn ||
        !fillRegion(
            g, op->getRegion(r), {halfType}, l,
            [&](llvm::ArrayRef<mlir::BlockArgument> args) {
              // The call's mask: and rotations: (those given, in that
              // order) follow x into F (Reformer's attention), read from
              // outside the region.
              std::vector<FVal> in = {FVal::tensor(args[0], l)};
              for (size_t k = 1; r == 0 && k < a.size(); ++k)
                if (a[k].value)
                  in.push_back(a[k]);
              return g.apply(*fn, std::move(in), {}, l);
            },
            r == 0 ? "the F layer of 'reversible'"
                   : "the G layer of 'reversible'"))
      return std::nullopt;
  }
  if (!g.infer(op))
    return std::nullopt;
  return FVal::tensor(op->getResult(0), l);
}

//===----------------------------------------------------------------------===//
// Functions
//===----------------------------------------------------------------------===//

mlir::Value tensorArg(Gen &g, const FVal &v, mlir::Type like, SrcLoc l,
                      llvm::StringRef what) {
  return g.asTensor(v, like, l, what);
}

template <typename OpTy>
Result lowerUnary(Gen &g, llvm::ArrayRef<FVal> a, llvm::ArrayRef<FVal>,
                  SrcLoc l) {
  mlir::Value x = tensorArg(g, a[0], {}, l, OpTy::getOperationName());
  if (!x)
    return std::nullopt;
  return tensorResult(g.op1<OpTy>(l, {x}), l);
}

Result lowerLeakyRelu(Gen &g, llvm::ArrayRef<FVal> a, llvm::ArrayRef<FVal>,
                      SrcLoc l) {
  mlir::Value x = tensorArg(g, a[0], {}, l, "leaky_relu");
  if (!x)
    return std::nullopt;
  return tensorResult(
      g.op1<nn::LeakyReluOp>(l, {x}, {g.attrF64("alpha", a[1].c.asDouble())}),
      l);
}

Result lowerGelu(Gen &g, llvm::ArrayRef<FVal> a, llvm::ArrayRef<FVal>,
                 SrcLoc l) {
  mlir::Value x = tensorArg(g, a[0], {}, l, "gelu");
  if (!x)
    return std::nullopt;
  auto approx = a[1].c.name == "tanh" ? nn::GeluApproximation::tanh
                                      : nn::GeluApproximation::none;
  return tensorResult(
      g.op1<nn::GeluOp>(l, {x},
            {g.attr("approximate",
                    nn::GeluApproximationAttr::get(&g.ctx, approx))}),
      l);
}

Result lowerSoftmax(Gen &g, llvm::ArrayRef<FVal> a, llvm::ArrayRef<FVal>,
                    SrcLoc l) {
  mlir::Value x = tensorArg(g, a[0], {}, l, "softmax");
  if (!x)
    return std::nullopt;
  return tensorResult(
      g.op1<nn::SoftmaxOp>(l, {x}, {g.attrI64("axis", a[1].c.i)}), l);
}

Result lowerDropout(Gen &g, llvm::ArrayRef<FVal> a, llvm::ArrayRef<FVal>,
                    SrcLoc l) {
  mlir::Value x = tensorArg(g, a[0], {}, l, "dropout");
  if (!x)
    return std::nullopt;
  return tensorResult(g.op1<nn::DropoutOp>(l, {x},
                            {g.attrF64("p", a[1].c.asDouble()),
                             g.attrI64("seed", g.nextSeed())}),
                      l);
}

Result lowerZoneout(Gen &g, llvm::ArrayRef<FVal> a, llvm::ArrayRef<FVal>,
                    SrcLoc l) {
  mlir::Value n = tensorArg(g, a[0], {}, l, "zoneout");
  mlir::Value p = n ? tensorArg(g, a[1], n.getType(), l, "zoneout")
                    : mlir::Value();
  if (!p)
    return std::nullopt;
  return tensorResult(g.op1<nn::ZoneoutOp>(l, {n, p},
                            {g.attrF64("p", a[2].c.asDouble()),
                             g.attrI64("seed", g.nextSeed())}),
                      l);
}

/// where(cond, a, b): numbers among a and b take the other's element type.
Result lowerWhere(Gen &g, llvm::ArrayRef<FVal> a, llvm::ArrayRef<FVal>,
                  SrcLoc l) {
  mlir::Value cond = tensorArg(g, a[0], {}, l, "where");
  if (!cond)
    return std::nullopt;
  if (a[1].kind != FVal::Tensor && a[2].kind != FVal::Tensor) {
    g.diag.error(l, "where needs a tensor for a or b (numbers take the other's "
                    "element type)");
    return std::nullopt;
  }
  mlir::Type like = a[1].kind == FVal::Tensor ? a[1].value.getType()
                                              : a[2].value.getType();
  mlir::Value x = tensorArg(g, a[1], like, l, "where");
  mlir::Value y = x ? tensorArg(g, a[2], like, l, "where") : mlir::Value();
  if (!y)
    return std::nullopt;
  return tensorResult(g.op1<nn::SelectOp>(l, {cond, x, y}), l);
}

/// mask_tokens(tokens, p:, mask_id:) -> (masked, mask), Algorithm 2 steps
/// 1-3 of the seed thesis.
Result lowerMaskTokens(Gen &g, llvm::ArrayRef<FVal> a, llvm::ArrayRef<FVal>,
                       SrcLoc l) {
  mlir::Value tokens = tensorArg(g, a[0], {}, l, "mask_tokens");
  if (!tokens)
    return std::nullopt;
  mlir::Operation *op = g.create<nn::MaskTokensOp>(
      l, {tokens},
      {g.attrF64("p", a[1].c.asDouble()), g.attrI64("mask_id", a[2].c.i),
       g.attrI64("seed", g.nextSeed())},
      2);
  return tupleResult(op, l);
}

/// sample(logits[, rows]): Gumbel-max draws, i32.
Result lowerSample(Gen &g, llvm::ArrayRef<FVal> a, llvm::ArrayRef<FVal>,
                   SrcLoc l) {
  mlir::Value logits = tensorArg(g, a[0], {}, l, "sample");
  if (!logits)
    return std::nullopt;
  llvm::SmallVector<mlir::Value> operands = {logits};
  if (!a[1].isNone()) {
    mlir::Value rows = tensorArg(g, a[1], {}, l, "sample");
    if (!rows)
      return std::nullopt;
    operands.push_back(rows);
  }
  return tensorResult(
      g.op1<nn::SampleOp>(l, operands, {g.attrI64("seed", g.nextSeed())}), l);
}

Result lowerCast(Gen &g, llvm::ArrayRef<FVal> a, llvm::ArrayRef<FVal>,
                 SrcLoc l) {
  mlir::Value x = tensorArg(g, a[0], {}, l, "cast");
  if (!x)
    return std::nullopt;
  llvm::StringRef name = a[1].c.name;
  mlir::Builder &b = g.builder;
  mlir::Type to = name == "f64"   ? mlir::Type(b.getF64Type())
                  : name == "i32" ? mlir::Type(b.getI32Type())
                  : name == "i64" ? mlir::Type(b.getI64Type())
                  : name == "i1"  ? mlir::Type(b.getI1Type())
                                  : mlir::Type(b.getF32Type());
  return tensorResult(
      g.op1<nn::CastOp>(l, {x}, {g.attr("to", mlir::TypeAttr::get(to))}), l);
}

Result lowerConcat(Gen &g, llvm::ArrayRef<FVal> a, llvm::ArrayRef<FVal> vars,
                   SrcLoc l) {
  llvm::SmallVector<mlir::Value> ops;
  for (auto &v : vars)
    ops.push_back(v.value);
  return tensorResult(
      g.op1<nn::ConcatOp>(l, ops, {g.attrI64("axis", a[0].c.i)}), l);
}

Result lowerSplit(Gen &g, llvm::ArrayRef<FVal> a, llvm::ArrayRef<FVal>,
                  SrcLoc l) {
  mlir::Value x = tensorArg(g, a[0], {}, l, "split");
  if (!x)
    return std::nullopt;
  nn::TensorType t = g.tensorType(x);
  int64_t axis = a[2].c.i;
  auto norm = nn::normalizeAxis(axis, t.getRank());
  if (!norm) {
    g.diag.error(a[2].loc, "split axis " + llvm::Twine(axis) +
                               " is out of range for a tensor of rank " +
                               llvm::Twine(t.getRank()));
    return std::nullopt;
  }
  llvm::SmallVector<int64_t> sizes;
  const CValue &parts = a[1].c;
  if (parts.kind == CValue::Int) {
    nn::Dim d = t.getDim(*norm);
    if (parts.i <= 0 || parts.i > 4096) {
      g.diag.error(a[1].loc, "split needs between 1 and 4096 parts, got " +
                                 llvm::Twine(parts.i));
      return std::nullopt;
    }
    if (!d.isStatic() || d.getSize() % parts.i != 0) {
      g.diag.error(a[1].loc, "cannot split dimension " + d.str() + " into " +
                                 llvm::Twine(parts.i) + " equal parts");
      return std::nullopt;
    }
    sizes.assign(size_t(parts.i), d.getSize() / parts.i);
  } else {
    for (auto &e : parts.elems)
      sizes.push_back(e.i);
    if (sizes.empty() || sizes.size() > 4096) {
      g.diag.error(a[1].loc, "split needs between 1 and 4096 sizes");
      return std::nullopt;
    }
  }
  mlir::Operation *op =
      g.create<nn::SplitOp>(l, {x},
               {g.attrI64("axis", axis), g.attrI64s("sizes", sizes)},
               unsigned(sizes.size()));
  return tupleResult(op, l);
}

Result lowerTranspose(Gen &g, llvm::ArrayRef<FVal> a, llvm::ArrayRef<FVal>,
                      SrcLoc l) {
  mlir::Value x = tensorArg(g, a[0], {}, l, "transpose");
  if (!x)
    return std::nullopt;
  llvm::SmallVector<int64_t> perm;
  if (!a[1].isNone()) {
    for (auto &e : a[1].c.elems)
      perm.push_back(e.i);
  } else {
    int64_t rank = g.tensorType(x).getRank();
    if (rank < 2) {
      g.diag.error(l, "transpose without a permutation needs rank >= 2");
      return std::nullopt;
    }
    for (int64_t i = 0; i < rank; ++i)
      perm.push_back(i);
    std::swap(perm[size_t(rank - 1)], perm[size_t(rank - 2)]);
  }
  return tensorResult(g.op1<nn::TransposeOp>(l, {x}, {g.attrI64s("perm", perm)}),
                      l);
}

template <typename OpTy>
Result lowerReduce(Gen &g, llvm::ArrayRef<FVal> a, llvm::ArrayRef<FVal>,
                   SrcLoc l) {
  mlir::Value x = tensorArg(g, a[0], {}, l, OpTy::getOperationName());
  if (!x)
    return std::nullopt;
  llvm::SmallVector<int64_t> axes;
  if (!a[1].isNone()) {
    if (a[1].c.kind == CValue::Int)
      axes.push_back(a[1].c.i);
    else
      for (auto &e : a[1].c.elems)
        axes.push_back(e.i);
  }
  return tensorResult(g.op1<OpTy>(l, {x},
                            {g.attrI64s("axes", axes),
                             g.attrBool("keepdim", a[2].c.b)}),
                      l);
}

/// argmax(x, axis: -1, keepdim: false) / max(...): one axis (`dim:` is
/// torch's spelling of `axis:`; giving both is an error).
template <typename OpTy>
Result lowerAxisMax(Gen &g, llvm::ArrayRef<FVal> a, llvm::ArrayRef<FVal>,
                    SrcLoc l) {
  llvm::StringRef fn = OpTy::getOperationName().drop_front(3);
  mlir::Value x = tensorArg(g, a[0], {}, l, fn);
  if (!x)
    return std::nullopt;
  if (!a[1].isNone() && !a[3].isNone()) {
    g.diag.error(a[3].loc, "give " + fn + " either 'axis' or 'dim' (the same "
                           "argument), not both");
    return std::nullopt;
  }
  int64_t axis = !a[1].isNone() ? a[1].c.i : !a[3].isNone() ? a[3].c.i : -1;
  return tensorResult(g.op1<OpTy>(l, {x},
                            {g.attrI64("axis", axis),
                             g.attrBool("keepdim", a[2].c.b)}),
                      l);
}

/// cumsum(x, axis:, reverse: false): one axis, as torch.cumsum(x, dim)
/// (`dim:` its spelling; one of them is needed, not both).
Result lowerCumsum(Gen &g, llvm::ArrayRef<FVal> a, llvm::ArrayRef<FVal>, SrcLoc l) {
  mlir::Value x = tensorArg(g, a[0], {}, l, "cumsum");
  if (!x)
    return std::nullopt;
  if (!a[1].isNone() && !a[3].isNone()) {
    g.diag.error(a[3].loc, "give cumsum either 'axis' or 'dim' (the same argument), not both");
    return std::nullopt;
  }
  if (a[1].isNone() && a[3].isNone()) {
    g.diag.error(l, "cumsum needs the axis to sum along ('axis:' or 'dim:')");
    return std::nullopt;
  }
  if (llvm::cast<nn::TensorType>(x.getType()).getElementType().isInteger(1)) {
    g.diag.error(a[0].loc, "cumsum sums numbers, not i1: cast(x, i32) first");
    return std::nullopt;
  }
  int64_t axis = !a[1].isNone() ? a[1].c.i : a[3].c.i;
  return tensorResult(
      g.op1<nn::CumsumOp>(l, {x}, {g.attrI64("axis", axis), g.attrBool("reverse", a[2].c.b)}),
      l);
}

/// topk(x, k, axis: -1) -> (values, indices): `dim:` as for argmax; k's
/// range against the axis size is nn.topk's type inference's error.
Result lowerTopk(Gen &g, llvm::ArrayRef<FVal> a, llvm::ArrayRef<FVal>,
                 SrcLoc l) {
  mlir::Value x = tensorArg(g, a[0], {}, l, "topk");
  if (!x)
    return std::nullopt;
  if (!a[2].isNone() && !a[3].isNone()) {
    g.diag.error(a[3].loc, "give topk either 'axis' or 'dim' (the same "
                           "argument), not both");
    return std::nullopt;
  }
  int64_t axis = !a[2].isNone() ? a[2].c.i : !a[3].isNone() ? a[3].c.i : -1;
  mlir::Operation *op =
      g.create<nn::TopkOp>(l, {x},
               {g.attrI64("k", a[1].c.i), g.attrI64("axis", axis)}, 2);
  if (!op)
    return std::nullopt;
  return tupleResult(op, l);
}

Result lowerMatmul(Gen &g, llvm::ArrayRef<FVal> a, llvm::ArrayRef<FVal>,
                   SrcLoc l) {
  mlir::Value x = tensorArg(g, a[0], {}, l, "matmul");
  mlir::Value y = x ? tensorArg(g, a[1], x.getType(), l, "matmul")
                    : mlir::Value();
  if (!y)
    return std::nullopt;
  return tensorResult(g.op1<nn::MatmulOp>(l, {x, y}), l);
}

mlir::Attribute odeMethod(Gen &g, const CValue &v) {
  nn::ODEMethod m = v.name == "euler"    ? nn::ODEMethod::euler
                    : v.name == "dopri5" ? nn::ODEMethod::dopri5
                                         : nn::ODEMethod::rk4;
  return nn::ODEMethodAttr::get(&g.ctx, m);
}

/// Applies the dynamics layer to (t, h) or (h), as its forward takes.
std::optional<FVal> applyDynamics(Gen &g, LayerInstance &f, mlir::Value t,
                                  mlir::Value h, SrcLoc l) {
  size_t n = g.arity(f);
  if (n == 2)
    return g.apply(f, {FVal::tensor(t, l), FVal::tensor(h, l)}, {}, l);
  if (n == 1)
    return g.apply(f, {FVal::tensor(h, l)}, {}, l);
  g.diag.error(l, "the dynamics layer '" + f.path +
                      "' must take (t, h) or (h), but takes " +
                      llvm::Twine(n) + " inputs");
  return std::nullopt;
}

Result lowerODESolve(Gen &g, llvm::ArrayRef<FVal> a, llvm::ArrayRef<FVal>,
                     SrcLoc l) {
  // f, h0, t0, t1, method, steps, rtol, atol, adjoint, max_steps
  mlir::Value h0 = tensorArg(g, a[1], {}, l, "odesolve");
  if (!h0)
    return std::nullopt;
  mlir::Value t0 = tensorArg(g, a[2], h0.getType(), l, "odesolve");
  mlir::Value t1 = t0 ? tensorArg(g, a[3], h0.getType(), l, "odesolve")
                      : mlir::Value();
  if (!t1)
    return std::nullopt;
  mlir::Operation *op = g.create<nn::ODESolveOp>(
      l, {h0, t0, t1},
      {g.attr("method", odeMethod(g, a[4].c)), g.attrI64("steps", a[5].c.i),
       g.attrF64("rtol", a[6].c.asDouble()), g.attrF64("atol", a[7].c.asDouble()),
       g.attrBool("adjoint", a[8].c.b), g.attrI64("max_steps", a[9].c.i)},
      1, {}, 1, /*infer=*/false);
  if (!op)
    return std::nullopt;
  mlir::Type tType = t0.getType();
  if (!fillRegion(
          g, op->getRegion(0), {tType, h0.getType()}, l,
          [&](llvm::ArrayRef<mlir::BlockArgument> args) {
            return applyDynamics(g, *a[0].layer, args[0], args[1], l);
          },
          "the dynamics of 'odesolve'"))
    return std::nullopt;
  if (!g.infer(op))
    return std::nullopt;
  return FVal::tensor(op->getResult(0), l);
}

Result lowerODERNN(Gen &g, llvm::ArrayRef<FVal> a, llvm::ArrayRef<FVal>,
                   SrcLoc l) {
  // cell, dynamics, x, times, h0, method, steps, rtol, atol, adjoint, max_steps
  LayerInstance &cell = *a[0].layer;
  mlir::Value x = tensorArg(g, a[2], {}, l, "ode_rnn");
  mlir::Value times = x ? tensorArg(g, a[3], x.getType(), l, "ode_rnn")
                        : mlir::Value();
  if (!times)
    return std::nullopt;
  mlir::Value h0;
  if (!a[4].isNone() && !(h0 = tensorArg(g, a[4], x.getType(), l, "ode_rnn")))
    return std::nullopt;
  int64_t hidden = cell.kind == LayerInstance::Library
                       ? cell.intArg("hidden", -1)
                       : -1;
  if (hidden <= 0) {
    if (h0 && g.tensorType(h0) && g.tensorType(h0).getRank() == 2 &&
        g.tensorType(h0).getDim(1).isStatic())
      hidden = g.tensorType(h0).getDim(1).getSize();
    else {
      g.diag.error(a[0].loc, "the hidden size of the ode_rnn cell is unknown; "
                             "use a library cell (rnn_cell, gru_cell) or "
                             "pass h0");
      return std::nullopt;
    }
  }
  nn::TensorType xt = g.tensorType(x);
  if (!xt || xt.getRank() != 3) {
    g.diag.error(a[2].loc, "ode_rnn expects x of shape [B, T, I]");
    return std::nullopt;
  }
  mlir::Type xStep = xt.withDims({xt.getDim(0), xt.getDim(2)});
  mlir::Type hType =
      xt.withDims({xt.getDim(0), nn::Dim::getStatic(hidden)});
  // Each row's own time (sequences have their own observation times).
  nn::TensorType timesT = g.tensorType(times);
  if (!timesT) {
    g.diag.error(a[3].loc, "ode_rnn expects times of shape [B, T]");
    return std::nullopt;
  }
  mlir::Type tType = timesT.withDims({xt.getDim(0), nn::Dim::getStatic(1)});
  llvm::SmallVector<mlir::Value> ops = {x, times};
  if (h0)
    ops.push_back(h0);
  mlir::Operation *op = g.create<nn::ODERNNOp>(
      l, ops,
      {g.attrI64("hidden_size", hidden),
       g.attr("method", odeMethod(g, a[5].c)), g.attrI64("steps", a[6].c.i),
       g.attrF64("rtol", a[7].c.asDouble()), g.attrF64("atol", a[8].c.asDouble()),
       g.attrBool("adjoint", a[9].c.b), g.attrI64("max_steps", a[10].c.i)},
      1, {}, 2, /*infer=*/false);
  if (!op)
    return std::nullopt;
  if (!fillRegion(
          g, op->getRegion(0), {tType, hType}, l,
          [&](llvm::ArrayRef<mlir::BlockArgument> args) {
            return applyDynamics(g, *a[1].layer, args[0], args[1], l);
          },
          "the dynamics of 'ode_rnn'"))
    return std::nullopt;
  if (!fillRegion(
          g, op->getRegion(1), {xStep, hType}, l,
          [&](llvm::ArrayRef<mlir::BlockArgument> args) {
            return g.apply(cell, {FVal::tensor(args[0], l),
                                  FVal::tensor(args[1], l)},
                           {}, l);
          },
          "the cell of 'ode_rnn'"))
    return std::nullopt;
  if (!g.infer(op))
    return std::nullopt;
  return FVal::tensor(op->getResult(0), l);
}

Result lowerMSE(Gen &g, llvm::ArrayRef<FVal> a, llvm::ArrayRef<FVal>,
                SrcLoc l) {
  mlir::Value p = tensorArg(g, a[0], {}, l, "mse");
  mlir::Value t = p ? tensorArg(g, a[1], p.getType(), l, "mse") : mlir::Value();
  if (!t)
    return std::nullopt;
  return tensorResult(g.op1<nn::MSEOp>(l, {p, t}), l);
}

Result lowerCrossEntropy(Gen &g, llvm::ArrayRef<FVal> a, llvm::ArrayRef<FVal>,
                         SrcLoc l) {
  mlir::Value p = tensorArg(g, a[0], {}, l, "cross_entropy");
  mlir::Value t = p ? tensorArg(g, a[1], {}, l, "cross_entropy")
                    : mlir::Value();
  if (!t)
    return std::nullopt;
  return tensorResult(g.op1<nn::CrossEntropyOp>(l, {p, t},
                            {g.attrI64("ignore_index", a[2].c.i)}),
                      l);
}

Result lowerBCE(Gen &g, llvm::ArrayRef<FVal> a, llvm::ArrayRef<FVal>,
                SrcLoc l) {
  mlir::Value p = tensorArg(g, a[0], {}, l, "binary_cross_entropy_with_logits");
  mlir::Value t = p ? tensorArg(g, a[1], p.getType(), l,
                                "binary_cross_entropy_with_logits")
                    : mlir::Value();
  if (!t)
    return std::nullopt;
  llvm::SmallVector<mlir::Value> ops = {p, t};
  if (!a[2].isNone()) {
    mlir::Value w = tensorArg(g, a[2], p.getType(), l,
                              "binary_cross_entropy_with_logits");
    if (!w)
      return std::nullopt;
    ops.push_back(w);
  }
  return tensorResult(g.op1<nn::BCEWithLogitsOp>(l, ops), l);
}

} // namespace

LayerLowerFn nncc::frontend::lookupLayerLowering(llvm::StringRef name) {
  static const llvm::StringMap<LayerLowerFn> table = {
      {"linear", lowerLinear},
      {"embedding", lowerEmbedding},
      {"bert_embeddings", lowerBertEmbeddings},
      {"learned_position", lowerLearnedPosition},
      {"axial_position", lowerAxialPosition},
      {"layer_norm", lowerLayerNorm},
      {"rnn", lowerRecurrent},
      {"lstm", lowerRecurrent},
      {"gru", lowerRecurrent},
      {"rnn_cell", lowerCell},
      {"lstm_cell", lowerCell},
      {"gru_cell", lowerCell},
      {"attention", lowerAttention},
      {"encoder_layer", lowerEncoderLayer},
      {"mlp", lowerMLP},
      {"residual", lowerResidual},
      {"reversible", lowerReversible},
  };
  auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

FuncLowerFn nncc::frontend::lookupFuncLowering(llvm::StringRef name) {
  static const llvm::StringMap<FuncLowerFn> table = {
      {"relu", lowerUnary<nn::ReluOp>},
      {"tanh", lowerUnary<nn::TanhOp>},
      {"sigmoid", lowerUnary<nn::SigmoidOp>},
      {"exp", lowerUnary<nn::ExpOp>},
      {"log", lowerUnary<nn::LogOp>},
      {"sinusoidal_position", lowerUnary<nn::SinusoidalPositionOp>},
      {"leaky_relu", lowerLeakyRelu},
      {"gelu", lowerGelu},
      {"softmax", lowerSoftmax},
      {"dropout", lowerDropout},
      {"zoneout", lowerZoneout},
      {"where", lowerWhere},
      {"mask_tokens", lowerMaskTokens},
      {"sample", lowerSample},
      {"stop_gradient", lowerUnary<nn::StopGradientOp>},
      {"cast", lowerCast},
      {"concat", lowerConcat},
      {"split", lowerSplit},
      {"transpose", lowerTranspose},
      {"mean", lowerReduce<nn::ReduceMeanOp>},
      {"sum", lowerReduce<nn::ReduceSumOp>},
      {"argmax", lowerAxisMax<nn::ArgmaxOp>},
      {"max", lowerAxisMax<nn::MaxOp>},
      {"topk", lowerTopk},
      {"cumsum", lowerCumsum},
      {"matmul", lowerMatmul},
      {"odesolve", lowerODESolve},
      {"ode_rnn", lowerODERNN},
      {"mse", lowerMSE},
      {"cross_entropy", lowerCrossEntropy},
      {"binary_cross_entropy_with_logits", lowerBCE},
  };
  auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}
