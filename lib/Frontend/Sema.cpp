//===- Sema.cpp - Declaration checking and layer instantiation ------------===//
#include "nncc/Frontend/Sema.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>

using namespace nncc::frontend;

const CValue *LayerInstance::arg(llvm::StringRef name) const {
  for (auto &kv : args)
    if (kv.first == name)
      return &kv.second;
  return nullptr;
}
int64_t LayerInstance::intArg(llvm::StringRef name, int64_t dflt) const {
  const CValue *v = arg(name);
  return v && v->kind == CValue::Int ? v->i : dflt;
}
double LayerInstance::floatArg(llvm::StringRef name, double dflt) const {
  const CValue *v = arg(name);
  return v && v->isNumber() ? v->asDouble() : dflt;
}
bool LayerInstance::boolArg(llvm::StringRef name, bool dflt) const {
  const CValue *v = arg(name);
  return v && v->kind == CValue::Bool ? v->b : dflt;
}
std::string LayerInstance::enumArg(llvm::StringRef name,
                                   llvm::StringRef dflt) const {
  const CValue *v = arg(name);
  return v && (v->kind == CValue::Enum || v->kind == CValue::Ctor)
             ? v->name
             : dflt.str();
}
LayerInstance *LayerInstance::child(llvm::StringRef name) const {
  for (auto &kv : children)
    if (kv.first == name)
      return kv.second.get();
  return nullptr;
}
LayerInstance *ModelInfo::layer(llvm::StringRef name) const {
  for (auto &kv : layers)
    if (kv.first == name)
      return kv.second.get();
  return nullptr;
}
bool ModelInfo::isDim(llvm::StringRef name) const {
  return llvm::is_contained(dims, name);
}

namespace {

class Sema {
public:
  Sema(const FileAST &file, DiagEngine &diag) : file(file), diag(diag) {}
  std::unique_ptr<ModelInfo> run();

private:
  bool collectBlocks();
  bool declare(llvm::StringMap<SrcLoc> &declared, const NameLoc &n,
               const char *what);
  bool analyzeDecls(const std::vector<DeclItem> &decls, bool isModel,
                    llvm::StringMap<CValue> &consts,
                    std::vector<std::pair<std::string,
                                          std::unique_ptr<LayerInstance>>>
                        &layers,
                    llvm::StringMap<SrcLoc> &declared,
                    const std::string &pathPrefix, unsigned depth);
  /// A model input's element type and shape (symbolic dims by name).
  std::optional<InputInfo> analyzeInput(const InputDecl &in, NameLookup lookup);
  /// `repeat N ctor` / `parallel N ctor`: N instances of `ctor` at
  /// path.0 ... path.N-1.
  std::unique_ptr<LayerInstance> instantiateRepeat(const LayerDecl &l, const CValue &ctor,
                                                   const std::string &path, unsigned depth,
                                                   NameLookup lookup);
  std::unique_ptr<LayerInstance> instantiate(const CValue &ctor,
                                             const std::string &path,
                                             unsigned depth);
  std::unique_ptr<LayerInstance> instantiateBlock(const BlockDef &b,
                                                  const CValue &ctor,
                                                  const std::string &path,
                                                  unsigned depth);
  bool checkTrain(const TrainClause &t);
  /// `optimizer: f(...)` / `schedule: f(...)` of the train clause: `v` (the
  /// value of `value`) bound to f's parameters and checked against the
  /// ranges #nn.optimizer / #nn.schedule verify.
  bool checkTrainCall(const std::string &w, const Expr &value, CValue &v);
  bool countInstance(SrcLoc l) {
    if (++instanceCount > kMaxLayerInstances) {
      diag.error(l, "too many layer instances (limit " +
                        llvm::Twine(kMaxLayerInstances) + ")");
      return false;
    }
    return true;
  }

  const FileAST &file;
  DiagEngine &diag;
  std::unique_ptr<ModelInfo> info;
  std::vector<const BlockDef *> blockStack;
  int64_t instanceCount = 0;
  // Scope used by name lookups while analysing declarations.
  const llvm::StringMap<CValue> *curConsts = nullptr;
  const llvm::StringMap<SrcLoc> *curDeclared = nullptr;
};

static std::string joinPath(const std::string &prefix, llvm::StringRef name) {
  return prefix.empty() ? name.str() : prefix + "." + name.str();
}

bool Sema::collectBlocks() {
  for (auto &b : file.blocks) {
    const std::string &n = b->name.name;
    if (lookupLayer(n) || lookupFunc(n)) {
      diag.error(b->name.loc, "block '" + n + "' has the name of a library " +
                                  (lookupLayer(n) ? "layer" : "function"));
      return false;
    }
    if (n == "repeat" || n == "parallel") {
      diag.error(b->name.loc, "'" + n + "' cannot name a block");
      return false;
    }
    if (!info->blocks.try_emplace(n, b.get()).second) {
      diag.error(b->name.loc, "duplicate block '" + n + "'");
      return false;
    }
    llvm::StringSet<> params;
    for (auto &p : b->params) {
      if (!params.insert(p.name.name).second) {
        diag.error(p.name.loc, "duplicate parameter '" + p.name.name +
                                   "' of block '" + n + "'");
        return false;
      }
      if (p.type.name != "int" && p.type.name != "float" &&
          p.type.name != "bool") {
        diag.error(p.type.loc, "unknown parameter type '" + p.type.name +
                                   "' (expected int, float or bool)");
        return false;
      }
    }
    if (!b->forward) {
      diag.error(b->name.loc, "block '" + n + "' has no 'forward(...)'");
      return false;
    }
  }
  return true;
}

bool Sema::declare(llvm::StringMap<SrcLoc> &declared, const NameLoc &n,
                   const char *what) {
  auto [it, inserted] = declared.try_emplace(n.name, n.loc);
  if (!inserted) {
    diag.error(n.loc, "redefinition of '" + n.name + "' (" + what + ")")
            .attachNote(diag.loc(it->second))
        << "previous definition of '" << n.name << "' is here";
    return false;
  }
  return true;
}

std::unique_ptr<ModelInfo> Sema::run() {
  info = std::make_unique<ModelInfo>();
  info->ast = &file;
  if (!file.model)
    return nullptr;
  const ModelDef &m = *file.model;
  info->model = &m;
  info->name = m.name.name;
  if (!collectBlocks())
    return nullptr;
  llvm::StringMap<SrcLoc> declared;
  if (!analyzeDecls(m.decls, /*isModel=*/true, info->consts, info->layers,
                    declared, "", 0))
    return nullptr;
  if (!m.forward) {
    diag.error(m.name.loc, "model '" + m.name.name + "' has no 'forward'");
    return nullptr;
  }
  if (m.train && !checkTrain(*m.train))
    return nullptr;
  return std::move(info);
}

bool Sema::analyzeDecls(
    const std::vector<DeclItem> &decls, bool isModel,
    llvm::StringMap<CValue> &consts,
    std::vector<std::pair<std::string, std::unique_ptr<LayerInstance>>>
        &layers,
    llvm::StringMap<SrcLoc> &declared, const std::string &pathPrefix,
    unsigned depth) {
  llvm::StringSet<> runtimeNames; // inputs
  llvm::StringSet<> layerNames;
  auto lookup = [&](llvm::StringRef n) -> NameInfo {
    NameInfo ni;
    auto it = consts.find(n);
    if (it != consts.end()) {
      ni.kind = NameInfo::Const;
      ni.value = &it->second;
    } else if (isModel && info->isDim(n)) {
      ni.kind = NameInfo::Dim;
    } else if (runtimeNames.contains(n)) {
      ni.kind = NameInfo::Runtime;
    } else if (layerNames.contains(n)) {
      ni.kind = NameInfo::Layer;
    }
    return ni;
  };
  for (const DeclItem &d : decls) {
    switch (d.kind) {
    case DeclItem::Dims:
      for (auto &n : d.dims) {
        if (!declare(declared, n, "symbolic dimension"))
          return false;
        info->dims.push_back(n.name);
      }
      break;
    case DeclItem::Const: {
      const ConstDecl &c = d.constDecl;
      auto v = evalConst(*c.value, lookup, diag);
      if (!v)
        return false;
      if (v->kind == CValue::Enum) {
        diag.error(v->loc, "use of undeclared constant '" + v->name + "'");
        return false;
      }
      if (v->kind == CValue::Ctor) {
        diag.error(c.value->getLoc(),
                   "a constant must be a number, a bool or a list; '" +
                       v->name + "(...)' is a call");
        return false;
      }
      if (!declare(declared, c.name, "constant"))
        return false;
      consts[c.name.name] = *v;
      break;
    }
    case DeclItem::Input: {
      const InputDecl &in = d.input;
      std::optional<InputInfo> ii = analyzeInput(in, lookup);
      if (!ii)
        return false;
      if (!declare(declared, in.name, "input"))
        return false;
      runtimeNames.insert(in.name.name);
      info->inputs.push_back(std::move(*ii));
      break;
    }
    case DeclItem::Layer: {
      const LayerDecl &l = d.layer;
      auto ctor = evalConst(*l.ctor, lookup, diag);
      if (!ctor)
        return false;
      std::string path = joinPath(pathPrefix, l.name.name);
      std::unique_ptr<LayerInstance> inst;
      if (l.repeat) {
        inst = instantiateRepeat(l, *ctor, path, depth, lookup);
        if (!inst)
          return false;
      } else {
        inst = instantiate(*ctor, path, depth);
        if (!inst)
          return false;
      }
      if (!declare(declared, l.name, "layer"))
        return false;
      layerNames.insert(l.name.name);
      layers.emplace_back(l.name.name, std::move(inst));
      break;
    }
    }
  }
  return true;
}

std::optional<InputInfo> Sema::analyzeInput(const InputDecl &in, NameLookup lookup) {
  static const char *dtypes[] = {"f32", "f64", "bf16", "f16",
                                 "i32", "i64", "i1"};
  if (!llvm::is_contained(dtypes, llvm::StringRef(in.dtype.name))) {
    diag.error(in.dtype.loc,
               "unknown element type '" + in.dtype.name +
                   "' (expected f32, f64, bf16, f16, i32, i64 or i1)");
    return std::nullopt;
  }
  InputInfo ii;
  ii.name = in.name.name;
  ii.loc = in.name.loc;
  ii.dtype = in.dtype.name;
  for (auto &e : in.shape) {
    DimValue dv;
    auto *ne = llvm::dyn_cast<NameExpr>(e.get());
    if (ne && info->isDim(ne->name)) {
      dv.symbolic = true;
      dv.symbol = ne->name;
    } else {
      auto v = evalConst(*e, lookup, diag);
      if (!v)
        return std::nullopt;
      if (v->kind == CValue::Enum) {
        diag.error(v->loc, "use of undeclared dimension or constant '" +
                               v->name + "'");
        return std::nullopt;
      }
      if (v->kind != CValue::Int) {
        diag.error(e->getLoc(), "dimension must be an integer, got " +
                                    v->describe());
        return std::nullopt;
      }
      if (v->i <= 0 || v->i > (int64_t(1) << 40)) {
        diag.error(e->getLoc(),
                   "dimension must be in [1, 2^40], got " + v->str());
        return std::nullopt;
      }
      dv.size = v->i;
    }
    ii.shape.push_back(dv);
  }
  return ii;
}

std::unique_ptr<LayerInstance> Sema::instantiateRepeat(const LayerDecl &l,
                                                       const CValue &ctor,
                                                       const std::string &path,
                                                       unsigned depth, NameLookup lookup) {
  auto n = evalConst(*l.repeat, lookup, diag);
  if (!n)
    return nullptr;
  const char *kw = l.parallel ? "parallel" : "repeat";
  // An integral float (`N * G_size` = 3.0) counts as an integer.
  if (n->kind == CValue::Float && n->f == std::trunc(n->f) &&
      std::fabs(n->f) <= kMaxRepeat)
    *n = CValue::makeInt(int64_t(n->f), n->loc);
  if (n->kind == CValue::Enum) {
    diag.error(n->loc, "use of undeclared constant '" + n->name + "'");
    return nullptr;
  }
  if (n->kind != CValue::Int || n->i < 1 || n->i > kMaxRepeat) {
    diag.error(l.repeat->getLoc(),
               llvm::Twine("'") + kw +
                   "' count must be an integer in [1, " +
                   llvm::Twine(kMaxRepeat) + "], got " + n->describe());
    return nullptr;
  }
  auto inst = std::make_unique<LayerInstance>();
  inst->kind = l.parallel ? LayerInstance::Parallel
                          : LayerInstance::Repeat;
  inst->callee = ctor.name;
  inst->path = path;
  inst->loc = l.ctor->getLoc();
  if (!countInstance(inst->loc))
    return nullptr;
  for (int64_t k = 0; k < n->i; ++k) {
    auto member = instantiate(ctor, path + "." + std::to_string(k),
                              depth);
    if (!member)
      return nullptr;
    inst->children.emplace_back(std::to_string(k), std::move(member));
  }
  return inst;
}

std::unique_ptr<LayerInstance> Sema::instantiate(const CValue &ctor,
                                                 const std::string &path,
                                                 unsigned depth) {
  if (ctor.kind != CValue::Ctor) {
    diag.error(ctor.loc, "expected a layer constructor, got " +
                             ctor.describe());
    return nullptr;
  }
  if (!countInstance(ctor.loc))
    return nullptr;
  auto bit = info->blocks.find(ctor.name);
  if (bit != info->blocks.end())
    return instantiateBlock(*bit->second, ctor, path, depth);
  const LayerSpec *spec = lookupLayer(ctor.name);
  if (!spec) {
    if (lookupFunc(ctor.name))
      diag.error(ctor.loc, "'" + ctor.name +
                               "' is a function, not a layer; call it inside "
                               "'forward'");
    else
      diag.error(ctor.loc, "unknown layer '" + ctor.name + "'");
    return nullptr;
  }
  auto inst = std::make_unique<LayerInstance>();
  inst->kind = LayerInstance::Library;
  inst->callee = ctor.name;
  inst->spec = spec;
  inst->path = path;
  inst->loc = ctor.loc;
  if (!bindCtor(ctor.name, spec->ctorParams, ctor, diag, inst->args))
    return nullptr;
  // Nested layer constructors (residual, reversible).
  for (auto &kv : inst->args) {
    const ParamSpec *ps = nullptr;
    for (auto &p : spec->ctorParams)
      if (kv.first == p.name)
        ps = &p;
    if (!ps || ps->kind != PK::Layer)
      continue;
    std::string childPath =
        ctor.name == "residual" ? path : joinPath(path, kv.first);
    auto child = instantiate(kv.second, childPath, depth + 1);
    if (!child)
      return nullptr;
    inst->children.emplace_back(kv.first, std::move(child));
  }
  return inst;
}

std::unique_ptr<LayerInstance>
Sema::instantiateBlock(const BlockDef &b, const CValue &ctor,
                       const std::string &path, unsigned depth) {
  if (llvm::is_contained(blockStack, &b)) {
    std::string chain;
    for (auto *s : blockStack)
      chain += s->name.name + " -> ";
    chain += b.name.name;
    diag.error(ctor.loc, "recursive block instantiation: " + chain);
    return nullptr;
  }
  if (blockStack.size() >= kMaxBlockNesting) {
    diag.error(ctor.loc, "blocks nested too deeply (limit " +
                             llvm::Twine(kMaxBlockNesting) + ")");
    return nullptr;
  }
  blockStack.push_back(&b);
  llvm::scope_exit pop([&] { blockStack.pop_back(); });

  auto inst = std::make_unique<LayerInstance>();
  inst->kind = LayerInstance::Block;
  inst->callee = b.name.name;
  inst->block = &b;
  inst->path = path;
  inst->loc = ctor.loc;

  // Bind arguments to the block's typed parameters.
  std::vector<ParamSpec> params;
  for (auto &p : b.params) {
    PK k = p.type.name == "int" ? PK::Int
           : p.type.name == "bool" ? PK::Bool
                                   : PK::Float;
    params.push_back({nullptr, k, !p.defaultValue, std::nullopt, {}});
  }
  // ParamSpec holds const char*; keep the names alive in the BlockDef.
  for (size_t k = 0; k < params.size(); ++k)
    params[k].name = b.params[k].name.name.c_str();
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
  if (!bindArgs(b.name.name, params, refs, ctor.loc, diag, slots))
    return nullptr;
  llvm::StringMap<CValue> &consts = inst->consts;
  auto paramLookup = [&](llvm::StringRef n) -> NameInfo {
    NameInfo ni;
    auto it = consts.find(n);
    if (it != consts.end()) {
      ni.kind = NameInfo::Const;
      ni.value = &it->second;
    }
    return ni;
  };
  for (size_t k = 0; k < params.size(); ++k) {
    CValue v;
    if (slots[k] >= 0) {
      v = *vals[size_t(slots[k])];
    } else {
      auto d = evalConst(*b.params[k].defaultValue, paramLookup, diag);
      if (!d)
        return nullptr;
      v = *d;
    }
    if (!checkValue(b.name.name, params[k], v, diag))
      return nullptr;
    if (params[k].kind == PK::Float)
      v = CValue::makeFloat(v.asDouble(), v.loc);
    consts[b.params[k].name.name] = v;
  }
  llvm::StringMap<SrcLoc> declared;
  for (auto &p : b.params)
    declared.try_emplace(p.name.name, p.name.loc);
  if (!analyzeDecls(b.decls, /*isModel=*/false, inst->consts, inst->children,
                    declared, path, depth + 1))
    return nullptr;
  return inst;
}

bool Sema::checkTrainCall(const std::string &w, const Expr &value, CValue &v) {
  if (v.kind == CValue::Enum)
    v = enumAsCtor(v);
  if (v.kind != CValue::Ctor) {
    diag.error(value.getLoc(),
               "'" + w + "' expects a call such as " +
                   (w == "optimizer" ? "'adamw(lr: 1e-3)'"
                                     : "'warmup_cosine(warmup: 100)'") +
                   ", got " + v.describe());
    return false;
  }
  const FuncSpec *spec = w == "optimizer" ? lookupOptimizer(v.name)
                                          : lookupSchedule(v.name);
  if (!spec) {
    diag.error(v.loc, "unknown " + w + " '" + v.name + "'" +
                           (w == "optimizer"
                                ? " (expected adam, adamw or sgd)"
                                : " (expected constant, warmup_cosine, "
                                  "cosine, linear or step)"));
    return false;
  }
  std::vector<std::pair<std::string, CValue>> out;
  if (!bindCtor(v.name, spec->params, v, diag, out))
    return false;
  // The ranges #nn.optimizer / #nn.schedule verify (NNAttrs.cpp).
  for (auto &kv : out) {
    const std::string &k = kv.first;
    const CValue &a = kv.second;
    auto bad = [&](const CValue &at, const char *range) {
      diag.error(at.loc, "'" + k + "' of '" + v.name + "' must be " +
                             range + ", got " + at.str());
      return false;
    };
    if ((k == "lr" || k == "eps" || k == "gamma") && !(a.f > 0.0))
      return bad(a, "> 0");
    if ((k == "weight_decay" || k == "momentum") && !(a.f >= 0.0))
      return bad(a, ">= 0");
    if (k == "cycles" && !(a.f >= 0.0 && a.f <= 1.0))
      return bad(a, "in [0, 1]");
    if (k == "betas") {
      if (a.elems.size() != 2) {
        diag.error(a.loc, "'betas' of '" + v.name +
                              "' expects two numbers, got " +
                              std::to_string(a.elems.size()));
        return false;
      }
      for (const CValue &b : a.elems)
        if (!(b.f >= 0.0 && b.f < 1.0))
          return bad(b, "in [0, 1)");
    }
  }
  v.elems.clear();
  v.kwargs = std::move(out);
  return true;
}

bool Sema::checkTrain(const TrainClause &t) {
  llvm::StringMap<SrcLoc> seen;
  auto lookup = [&](llvm::StringRef n) -> NameInfo {
    NameInfo ni;
    auto it = info->consts.find(n);
    if (it != info->consts.end()) {
      ni.kind = NameInfo::Const;
      ni.value = &it->second;
    } else if (info->isDim(n)) {
      ni.kind = NameInfo::Dim;
    }
    return ni;
  };
  for (auto &item : t.items) {
    const std::string &w = item.word.name;
    static const char *words[] = {"optimizer", "schedule", "clip",
                                  "layer_decay", "epochs", "batch", "seed"};
    if (!llvm::is_contained(words, llvm::StringRef(w))) {
      diag.error(item.word.loc,
                 "unknown training setting '" + w +
                     "' (expected optimizer, schedule, clip, layer_decay, "
                     "epochs, batch or seed)");
      return false;
    }
    if (!seen.try_emplace(w, item.word.loc).second) {
      diag.error(item.word.loc, "training setting '" + w +
                                    "' is given more than once");
      return false;
    }
    auto v = evalConst(*item.value, lookup, diag);
    if (!v)
      return false;
    if (w == "optimizer" || w == "schedule") {
      if (!checkTrainCall(w, *item.value, *v))
        return false;
    } else {
      ParamSpec ps{w.c_str(),
                   w == "epochs" || w == "batch" ? PK::PosInt
                   : w == "seed"                 ? PK::Int
                                                 : PK::Float,
                   true, std::nullopt, {}};
      if (!checkValue("train", ps, *v, diag))
        return false;
      if ((w == "clip" && v->f <= 0.0) ||
          (w == "layer_decay" && !(v->f > 0.0 && v->f <= 1.0))) {
        diag.error(item.value->getLoc(),
                   "'" + w + "' must be " +
                       (w == "clip" ? "positive" : "in (0, 1]") + ", got " +
                       v->str());
        return false;
      }
    }
    info->train.emplace_back(w, *v);
  }
  return true;
}

} // namespace

std::unique_ptr<ModelInfo> nncc::frontend::analyzeModel(const FileAST &file,
                                                        DiagEngine &diag) {
  Sema s(file, diag);
  return s.run();
}
