//===- Library.cpp - Signatures of the built-in layers and functions -----===//
#include "nncc/Frontend/Library.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace nncc::frontend;

namespace {
ParamSpec req(const char *n, PK k) { return {n, k, true, std::nullopt, {}}; }
ParamSpec opt(const char *n, PK k) { return {n, k, false, std::nullopt, {}}; }
ParamSpec optI(const char *n, PK k, int64_t v) {
  return {n, k, false, CValue::makeInt(v), {}};
}
ParamSpec optF(const char *n, PK k, double v) {
  return {n, k, false, CValue::makeFloat(v), {}};
}
ParamSpec optB(const char *n, bool v) {
  return {n, PK::Bool, false, CValue::makeBool(v), {}};
}
ParamSpec optE(const char *n, std::vector<const char *> options,
               const char *def) {
  return {n, PK::Enum, false, CValue::makeEnum(def), std::move(options)};
}
ParamSpec optEnumVal(const char *n, PK k, const char *def) {
  return {n, k, false, CValue::makeEnum(def), {}};
}
ParamSpec tensor(const char *n) { return req(n, PK::Tensor); }
ParamSpec optTensor(const char *n) { return opt(n, PK::Tensor); }

std::vector<ParamSpec> recurrentParams(const char *extraName) {
  std::vector<ParamSpec> p = {req("in", PK::PosInt), req("hidden", PK::PosInt),
                              optI("layers", PK::PosInt, 1),
                              optB("bidirectional", false), optB("bias", true)};
  if (llvm::StringRef(extraName) == "rnn")
    p.push_back(optE("nonlinearity", {"tanh", "relu"}, "tanh"));
  else if (llvm::StringRef(extraName) == "lstm")
    p.push_back(optF("zoneout", PK::Prob, 0.0));
  else
    p.push_back(optE("variant", {"pytorch", "cho2014"}, "pytorch"));
  return p;
}

const std::vector<LayerSpec> &layerTable() {
  static const std::vector<LayerSpec> table = {
      {"linear",
       {req("in", PK::PosInt), req("out", PK::PosInt), optB("bias", true)},
       {tensor("x")},
       ResultKind::Tensor},
      {"embedding",
       {req("num", PK::PosInt), req("dim", PK::PosInt),
        opt("padding_idx", PK::NonNegInt)},
       {tensor("indices")},
       ResultKind::Tensor},
      {"bert_embeddings",
       {req("vocab", PK::PosInt), req("dim", PK::PosInt),
        optI("max_len", PK::PosInt, 512), optI("type_vocab", PK::PosInt, 2),
        optF("eps", PK::Float, 1e-12), optF("dropout", PK::Prob, 0.1),
        optE("position", {"learned", "sinusoidal", "axial"}, "learned"),
        opt("axial_shape", PK::IntList), opt("axial_dims", PK::IntList),
        opt("padding_idx", PK::NonNegInt)},
       {tensor("tokens"), tensor("segments"), optTensor("positions")},
       ResultKind::Tensor},
      {"axial_position",
       {req("dim", PK::PosInt), req("shape", PK::IntList), req("dims", PK::IntList)},
       {tensor("x")},
       ResultKind::Tensor},
      {"learned_position",
       {req("max_len", PK::PosInt), req("dim", PK::PosInt)},
       {tensor("x")},
       ResultKind::Tensor},
      {"layer_norm",
       {req("dim", PK::PosInt), optF("eps", PK::Float, 1e-5)},
       {tensor("x")},
       ResultKind::Tensor},
      {"rnn",
       recurrentParams("rnn"),
       {tensor("x"), optTensor("h0"), optTensor("lengths")},
       ResultKind::SeqState},
      {"lstm",
       recurrentParams("lstm"),
       {tensor("x"), optTensor("h0"), optTensor("c0"), optTensor("lengths")},
       ResultKind::SeqLSTM},
      {"gru",
       recurrentParams("gru"),
       {tensor("x"), optTensor("h0"), optTensor("lengths")},
       ResultKind::SeqState},
      {"rnn_cell",
       {req("in", PK::PosInt), req("hidden", PK::PosInt), optB("bias", true),
        optE("nonlinearity", {"tanh", "relu"}, "tanh")},
       {tensor("x"), tensor("h")},
       ResultKind::Tensor},
      {"lstm_cell",
       {req("in", PK::PosInt), req("hidden", PK::PosInt), optB("bias", true)},
       {tensor("x"), tensor("h"), tensor("c")},
       ResultKind::Pair},
      {"gru_cell",
       {req("in", PK::PosInt), req("hidden", PK::PosInt), optB("bias", true),
        optE("variant", {"pytorch", "cho2014"}, "pytorch")},
       {tensor("x"), tensor("h")},
       ResultKind::Tensor},
      {"attention",
       {req("dim", PK::PosInt), optI("heads", PK::PosInt, 4),
        optEnumVal("kind", PK::AttnKind, "dense"),
        optF("dropout", PK::Prob, 0.0), optB("causal", false),
        optB("bias", true), opt("head_dim", PK::PosInt)},
       {tensor("x"), optTensor("mask"), optTensor("rotations"), optTensor("global_mask")},
       ResultKind::Tensor},
      {"encoder_layer",
       {req("dim", PK::PosInt), optI("heads", PK::PosInt, 4),
        optI("ff", PK::PosInt, 1024), optF("dropout", PK::Prob, 0.1),
        optE("activation", {"relu", "gelu", "gelu_new", "gelu_pytorch_tanh"}, "relu"),
        optEnumVal("kind", PK::AttnKind, "dense"),
        optF("eps", PK::Float, 1e-5)},
       {tensor("x"), optTensor("mask"), optTensor("global_mask")},
       ResultKind::Tensor},
      {"mlp",
       {req("in", PK::PosInt), req("hidden", PK::PosInt),
        req("out", PK::PosInt), optI("layers", PK::PosInt, 2),
        optEnumVal("activation", PK::Activation, "relu"),
        optF("dropout", PK::Prob, 0.0)},
       {tensor("x")},
       ResultKind::Tensor},
      {"residual", {req("inner", PK::Layer)}, {tensor("x")}, ResultKind::Tensor},
      {"reversible",
       {req("f", PK::Layer), req("g", PK::Layer)},
       {tensor("x"), optTensor("mask"), optTensor("rotations")},
       ResultKind::Tensor},
  };
  return table;
}

const std::vector<FuncSpec> &funcTable() {
  static const std::vector<FuncSpec> table = {
      {"relu", {tensor("x")}, ResultKind::Tensor},
      {"tanh", {tensor("x")}, ResultKind::Tensor},
      {"sigmoid", {tensor("x")}, ResultKind::Tensor},
      {"exp", {tensor("x")}, ResultKind::Tensor},
      {"log", {tensor("x")}, ResultKind::Tensor},
      {"leaky_relu",
       {tensor("x"), optF("alpha", PK::Float, 0.01)},
       ResultKind::Tensor},
      {"gelu",
       {tensor("x"), optE("approximate", {"none", "tanh"}, "none")},
       ResultKind::Tensor},
      {"softmax", {tensor("x"), optI("axis", PK::Int, -1)}, ResultKind::Tensor},
      {"dropout", {tensor("x"), optF("p", PK::Prob, 0.1)}, ResultKind::Tensor},
      {"zoneout",
       {tensor("new"), tensor("prev"), optF("p", PK::Prob, 0.1)},
       ResultKind::Tensor},
      {"sinusoidal_position", {tensor("x")}, ResultKind::Tensor},
      {"where", {tensor("cond"), tensor("a"), tensor("b")}, ResultKind::Tensor},
      {"mask_tokens",
       {tensor("tokens"), req("p", PK::Prob), req("mask_id", PK::NonNegInt)},
       ResultKind::Pair},
      {"sample", {tensor("logits"), optTensor("rows")}, ResultKind::Tensor},
      {"stop_gradient", {tensor("x")}, ResultKind::Tensor},
      {"cast",
       {tensor("x"),
        {"dtype", PK::Enum, true, std::nullopt, {"f32", "f64", "i32", "i64", "i1"}}},
       ResultKind::Tensor},
      {"concat", {optI("axis", PK::Int, 0)}, ResultKind::Tensor, true},
      {"split",
       {tensor("x"), req("parts", PK::IntOrList), optI("axis", PK::Int, -1)},
       ResultKind::Split},
      {"transpose", {tensor("x"), opt("perm", PK::IntList)}, ResultKind::Tensor},
      {"mean",
       {tensor("x"), opt("axis", PK::IntOrList), optB("keepdim", false)},
       ResultKind::Tensor},
      {"sum",
       {tensor("x"), opt("axis", PK::IntOrList), optB("keepdim", false)},
       ResultKind::Tensor},
      // argmax / max along one axis; `dim` is torch's name for `axis`.
      {"argmax",
       {tensor("x"), opt("axis", PK::Int), optB("keepdim", false),
        opt("dim", PK::Int)},
       ResultKind::Tensor},
      {"max",
       {tensor("x"), opt("axis", PK::Int), optB("keepdim", false),
        opt("dim", PK::Int)},
       ResultKind::Tensor},
      // cumsum(x, axis:, reverse: false); `dim` as for argmax; one is needed.
      {"cumsum",
       {tensor("x"), opt("axis", PK::Int), optB("reverse", false), opt("dim", PK::Int)},
       ResultKind::Tensor},
      // topk(x, k, axis: -1) -> (values, indices); `dim` as for argmax.
      {"topk",
       {tensor("x"), req("k", PK::PosInt), opt("axis", PK::Int),
        opt("dim", PK::Int)},
       ResultKind::Pair},
      {"matmul", {tensor("a"), tensor("b")}, ResultKind::Tensor},
      {"odesolve",
       {req("f", PK::LayerRef), tensor("h0"), tensor("t0"), tensor("t1"),
        optE("method", {"euler", "rk4", "dopri5"}, "rk4"),
        optI("steps", PK::NonNegInt, 10), optF("rtol", PK::Float, 1e-6),
        optF("atol", PK::Float, 1e-8), optB("adjoint", false),
        optI("max_steps", PK::PosInt, 1000)},
       ResultKind::Tensor},
      {"ode_rnn",
       {req("cell", PK::LayerRef), req("dynamics", PK::LayerRef), tensor("x"),
        tensor("times"), optTensor("h0"),
        optE("method", {"euler", "rk4", "dopri5"}, "rk4"),
        optI("steps", PK::NonNegInt, 10), optF("rtol", PK::Float, 1e-6),
        optF("atol", PK::Float, 1e-8), optB("adjoint", false),
        optI("max_steps", PK::PosInt, 1000)},
       ResultKind::Tensor},
      {"mse", {tensor("pred"), tensor("target")}, ResultKind::Tensor, false,
       true},
      {"cross_entropy",
       {tensor("logits"), tensor("target"), optI("ignore_index", PK::Int, -100)},
       ResultKind::Tensor, false, true},
      {"binary_cross_entropy_with_logits",
       {tensor("logits"), tensor("target"), optTensor("pos_weight")},
       ResultKind::Tensor, false, true},
  };
  return table;
}

// The train clause's optimizers and schedules. Keys left out take the
// defaults of #nn.optimizer / #nn.schedule (NNAttrs.cpp), the one place they
// are filled; ranges are checked by Sema::checkTrain.
const std::vector<FuncSpec> &optimizerTable() {
  static const std::vector<FuncSpec> table = {
      {"adam",
       {opt("lr", PK::Float), opt("betas", PK::FloatList),
        opt("eps", PK::Float), opt("weight_decay", PK::Float)},
       ResultKind::Tensor},
      {"adamw",
       {opt("lr", PK::Float), opt("betas", PK::FloatList),
        opt("eps", PK::Float), opt("weight_decay", PK::Float)},
       ResultKind::Tensor},
      {"sgd",
       {req("lr", PK::Float), opt("momentum", PK::Float),
        opt("weight_decay", PK::Float), opt("nesterov", PK::Bool)},
       ResultKind::Tensor},
  };
  return table;
}

const std::vector<FuncSpec> &scheduleTable() {
  static const std::vector<FuncSpec> table = {
      {"constant", {}, ResultKind::Tensor},
      {"warmup_cosine",
       {opt("warmup", PK::NonNegInt), opt("warmup_fraction", PK::Prob),
        opt("total", PK::PosInt), opt("cycles", PK::Float)},
       ResultKind::Tensor},
      {"cosine", {opt("total", PK::PosInt)}, ResultKind::Tensor},
      {"linear",
       {opt("warmup", PK::NonNegInt), opt("total", PK::PosInt)},
       ResultKind::Tensor},
      {"step",
       {req("step_size", PK::PosInt), opt("gamma", PK::Float)},
       ResultKind::Tensor},
  };
  return table;
}

template <typename T>
const T *find(const std::vector<T> &table, llvm::StringRef name) {
  for (auto &e : table)
    if (name == e.name)
      return &e;
  return nullptr;
}
} // namespace

const LayerSpec *nncc::frontend::lookupLayer(llvm::StringRef name) {
  return find(layerTable(), name);
}
const FuncSpec *nncc::frontend::lookupFunc(llvm::StringRef name) {
  return find(funcTable(), name);
}
const FuncSpec *nncc::frontend::lookupOptimizer(llvm::StringRef name) {
  return find(optimizerTable(), name);
}
const FuncSpec *nncc::frontend::lookupSchedule(llvm::StringRef name) {
  return find(scheduleTable(), name);
}
llvm::ArrayRef<LayerSpec> nncc::frontend::allLayers() { return layerTable(); }
llvm::ArrayRef<FuncSpec> nncc::frontend::allFuncs() { return funcTable(); }

bool nncc::frontend::bindArgs(llvm::StringRef what,
                              llvm::ArrayRef<ParamSpec> params,
                              llvm::ArrayRef<ArgRef> args, SrcLoc callLoc,
                              DiagEngine &diag, std::vector<int> &slots,
                              std::vector<int> *variadicArgs) {
  slots.assign(params.size(), -1);
  size_t nextPos = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgRef &a = args[i];
    if (a.name.empty()) {
      if (variadicArgs) {
        variadicArgs->push_back(int(i));
        continue;
      }
      if (nextPos >= params.size()) {
        diag.error(a.loc, "too many arguments to '" + what + "': expected at "
                                                             "most " +
                              llvm::Twine(params.size()) + ", got " +
                              llvm::Twine(args.size()));
        return false;
      }
      slots[nextPos++] = int(i);
      continue;
    }
    auto it = llvm::find_if(params, [&](const ParamSpec &p) {
      return a.name == p.name;
    });
    if (it == params.end()) {
      std::string known;
      for (auto &p : params)
        known += (known.empty() ? "" : ", ") + std::string(p.name);
      diag.error(a.loc, "'" + what + "' has no parameter named '" + a.name +
                            "'" +
                            (known.empty() ? std::string(" (it takes none)")
                                           : " (parameters: " + known + ")"));
      return false;
    }
    size_t k = size_t(it - params.begin());
    if (slots[k] >= 0) {
      diag.error(a.loc, "argument '" + a.name + "' of '" + what +
                            "' is given more than once");
      return false;
    }
    slots[k] = int(i);
  }
  if (variadicArgs && variadicArgs->empty()) {
    diag.error(callLoc, "'" + what + "' needs at least one tensor argument");
    return false;
  }
  for (size_t k = 0; k < params.size(); ++k) {
    if (params[k].required && slots[k] < 0) {
      diag.error(callLoc, "missing argument '" + llvm::Twine(params[k].name) +
                              "' of '" + what + "'");
      return false;
    }
  }
  return true;
}

static bool isInt(const CValue &v) { return v.kind == CValue::Int; }
/// Sizes are capped so that products such as 4 * hidden cannot overflow.
static constexpr int64_t kMaxSize = int64_t(1) << 40;

CValue nncc::frontend::enumAsCtor(const CValue &v) {
  CValue c;
  c.kind = CValue::Ctor;
  c.name = v.name;
  c.loc = v.loc;
  return c;
}

using FailWith = llvm::function_ref<bool(const llvm::Twine &expected)>;

/// An attention kind: dense, or dilated(...) / lsh(...) / local(...) with
/// their arguments bound (bare `dilated` / `lsh` / `local` take the defaults).
static bool checkAttentionKind(CValue &v, DiagEngine &diag, FailWith fail) {
  if (v.kind == CValue::Enum && v.name == "dense")
    return true;
  const bool known = v.name == "dilated" || v.name == "lsh" || v.name == "local";
  if (v.kind == CValue::Enum && known)
    v = enumAsCtor(v);
  if (v.kind != CValue::Ctor || !known)
    return fail("dense, dilated(window:, dilation:, global:, convention:), "
                "lsh(hashes:, chunk:, convention:, pad_to_multiple:, pad_above:) or "
                "local(chunk:, before:, after:, pad_to_multiple:, pad_above:)");
  static const std::vector<ParamSpec> dilated = {
      optI("window", PK::PosInt, 64), optI("dilation", PK::PosInt, 1),
      {"global", PK::IntList, false, std::nullopt, {}},
      optE("convention", {"nncc", "hf"}, "nncc")};
  static const std::vector<ParamSpec> lsh = {optI("hashes", PK::PosInt, 4),
                                             optI("chunk", PK::PosInt, 64),
                                             optE("convention", {"hf", "nncc"}, "hf"),
                                             optI("pad_to_multiple", PK::NonNegInt, 0),
                                             optI("pad_above", PK::NonNegInt, 0)};
  static const std::vector<ParamSpec> local = {optI("chunk", PK::PosInt, 64),
                                               optI("before", PK::NonNegInt, 1),
                                               optI("after", PK::NonNegInt, 0),
                                               optI("pad_to_multiple", PK::NonNegInt, 0),
                                               optI("pad_above", PK::NonNegInt, 0)};
  std::vector<std::pair<std::string, CValue>> out;
  if (!bindCtor(v.name, v.name == "lsh" ? lsh : v.name == "local" ? local : dilated, v, diag,
                out))
    return false;
  bool hf = false;
  const CValue *global = nullptr;
  for (auto &kv : out) {
    if (kv.first == "convention")
      hf = kv.second.name == "hf";
    if (kv.first == "global") {
      global = &kv.second;
      for (auto &g : kv.second.elems)
        if (g.i < 0) {
          diag.error(g.loc, "global attention positions must be >= 0");
          return false;
        }
    }
  }
  if (hf && global && !global->elems.empty()) {
    diag.error(global->loc, "dilated(convention: hf) takes its global tokens from the "
                            "call's global_mask:, not a global list");
    return false;
  }
  v.elems.clear();
  v.kwargs = std::move(out);
  return true;
}

/// An activation name; leaky_relu (bare or with alpha:) becomes a constructor.
static bool checkActivation(CValue &v, DiagEngine &diag, FailWith fail) {
  if (v.kind == CValue::Enum &&
      llvm::is_contained({"relu", "gelu", "gelu_new", "gelu_pytorch_tanh", "tanh",
                          "sigmoid", "leaky_relu"},
                         llvm::StringRef(v.name))) {
    if (v.name == "leaky_relu") {
      v = enumAsCtor(v);
      v.kwargs.emplace_back("alpha", CValue::makeFloat(0.01));
    }
    return true;
  }
  if (v.kind == CValue::Ctor && v.name == "leaky_relu") {
    static const std::vector<ParamSpec> lr = {
        optF("alpha", PK::Float, 0.01)};
    std::vector<std::pair<std::string, CValue>> out;
    if (!bindCtor("leaky_relu", lr, v, diag, out))
      return false;
    v.elems.clear();
    v.kwargs = std::move(out);
    return true;
  }
  return fail("relu, gelu, gelu_new, gelu_pytorch_tanh, tanh, sigmoid or leaky_relu(alpha)");
}

bool nncc::frontend::checkValue(llvm::StringRef what, const ParamSpec &p,
                                CValue &v, DiagEngine &diag) {
  auto fail = [&](const llvm::Twine &expected) {
    if (v.kind == CValue::Enum && p.kind != PK::Enum &&
        p.kind != PK::AttnKind && p.kind != PK::Activation &&
        p.kind != PK::Layer)
      diag.error(v.loc, "use of undeclared constant '" + v.name + "'");
    else
      diag.error(v.loc, "argument '" + llvm::Twine(p.name) + "' of '" + what +
                            "' expects " + expected + ", got " +
                            v.describe());
    return false;
  };
  // A float constant with an integral value (`D * 0.25` = 64.0) is an int.
  if ((p.kind == PK::Int || p.kind == PK::PosInt || p.kind == PK::NonNegInt) &&
      v.kind == CValue::Float && std::isfinite(v.f) && v.f == std::trunc(v.f) &&
      std::fabs(v.f) <= double(int64_t(1) << 53))
    v = CValue::makeInt(int64_t(v.f), v.loc);
  switch (p.kind) {
  case PK::Int:
    return isInt(v) ? true : fail("an integer");
  case PK::PosInt:
    if (!isInt(v))
      return fail(v.kind == CValue::Float ? "an integer (the value is not "
                                            "integral)"
                                          : "a positive integer");
    if (v.i <= 0)
      return fail("a positive integer");
    if (v.i > kMaxSize)
      return fail("a size of at most 2^40");
    return true;
  case PK::NonNegInt:
    if (!isInt(v) || v.i < 0)
      return fail("a non-negative integer");
    return true;
  case PK::Float:
  case PK::Prob:
    if (!v.isNumber())
      return fail("a number");
    v = CValue::makeFloat(v.asDouble(), v.loc);
    if (p.kind == PK::Prob && !(v.f >= 0.0 && v.f < 1.0))
      return fail("a probability in [0, 1)");
    return true;
  case PK::Bool:
    return v.kind == CValue::Bool ? true : fail("true or false");
  case PK::Enum: {
    std::string opts;
    for (auto *o : p.options)
      opts += (opts.empty() ? "" : " | ") + std::string(o);
    if (v.kind != CValue::Enum ||
        !llvm::is_contained(p.options, llvm::StringRef(v.name)))
      return fail("one of " + opts);
    return true;
  }
  case PK::IntOrList:
    if (isInt(v))
      return true;
    [[fallthrough]];
  case PK::IntList:
    if (v.kind != CValue::List)
      return fail(p.kind == PK::IntList ? "a list of integers"
                                        : "an integer or a list of integers");
    for (auto &e : v.elems)
      if (!isInt(e))
        return fail("a list of integers");
    return true;
  case PK::FloatList:
    if (v.kind != CValue::List)
      return fail("a list of numbers");
    for (auto &e : v.elems) {
      if (!e.isNumber())
        return fail("a list of numbers");
      e = CValue::makeFloat(e.asDouble(), e.loc);
    }
    return true;
  case PK::AttnKind:
    return checkAttentionKind(v, diag, fail);
  case PK::Activation:
    return checkActivation(v, diag, fail);
  case PK::Layer:
    if (v.kind == CValue::Enum)
      v = enumAsCtor(v);
    return v.kind == CValue::Ctor ? true
                                  : fail("a layer constructor such as "
                                         "'linear(4, 4)'");
  case PK::Tensor:
  case PK::LayerRef:
    diag.error(v.loc, "argument '" + llvm::Twine(p.name) + "' of '" + what +
                          "' must be a run-time value");
    return false;
  }
  return false;
}

bool nncc::frontend::bindCtor(
    llvm::StringRef what, llvm::ArrayRef<ParamSpec> params,
    const CValue &ctor, DiagEngine &diag,
    std::vector<std::pair<std::string, CValue>> &out) {
  std::vector<ArgRef> refs;
  std::vector<const CValue *> vals;
  for (auto &e : ctor.elems) {
    refs.push_back({"", e.loc});
    vals.push_back(&e);
  }
  for (auto &kv : ctor.kwargs) {
    refs.push_back({kv.first, kv.second.loc});
    vals.push_back(&kv.second);
  }
  std::vector<int> slots;
  if (!bindArgs(what, params, refs, ctor.loc, diag, slots))
    return false;
  out.clear();
  for (size_t k = 0; k < params.size(); ++k) {
    if (slots[k] < 0) {
      if (params[k].defaultValue) {
        CValue d = *params[k].defaultValue;
        d.loc = ctor.loc;
        if (!checkValue(what, params[k], d, diag))
          return false;
        out.emplace_back(params[k].name, std::move(d));
      }
      continue;
    }
    CValue v = *vals[size_t(slots[k])];
    if (!checkValue(what, params[k], v, diag))
      return false;
    out.emplace_back(params[k].name, std::move(v));
  }
  return true;
}
