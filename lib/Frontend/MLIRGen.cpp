//===- MLIRGen.cpp - Lowering of a checked model to the nn dialect --------===//
#include "nncc/Frontend/MLIRGen.h"
#include "GenContext.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/ScopeExit.h"

using namespace nncc::frontend;
namespace nn = nncc::nn;

//===----------------------------------------------------------------------===//
// FVal and Gen helpers
//===----------------------------------------------------------------------===//

std::string FVal::describe() const {
  switch (kind) {
  case None: return "nothing";
  case Tensor: return "a tensor";
  case Tuple: return "a tuple of " + std::to_string(elems.size()) + " values";
  case Const: return "the constant " + c.str();
  case Layer: return "the layer '" + (layer ? layer->path : std::string()) + "'";
  }
  return "a value";
}

void nncc::frontend::loadFrontendDialects(mlir::MLIRContext &ctx) {
  ctx.loadDialect<nn::NNDialect, mlir::func::FuncDialect>();
}

mlir::Value Gen::param(const LayerInstance &inst, llvm::StringRef name,
                       llvm::ArrayRef<int64_t> shape, mlir::Attribute init,
                       SrcLoc l, ParamRole role) {
  std::string full = inst.paramName(name);
  llvm::SmallVector<nn::Dim> dims;
  for (int64_t s : shape)
    dims.push_back(nn::Dim::getStatic(s));
  mlir::Type type = nn::TensorType::get(&ctx, dims, builder.getF32Type());
  auto it = declaredParams.find(full);
  if (it == declaredParams.end()) {
    mlir::OpBuilder pb(&ctx);
    pb.setInsertionPoint(paramAnchor);
    mlir::OperationState st(loc(l), nn::ParameterOp::getOperationName());
    st.addAttribute("sym_name", pb.getStringAttr(full));
    st.addAttribute("type", mlir::TypeAttr::get(type));
    if (init)
      st.addAttribute("init", init);
    bool decay = role == ParamRole::Weight || role == ParamRole::Embedding;
    nn::LrGroup group = lrStackLayer >= 0            ? nn::LrGroup::layer
                        : role == ParamRole::Embedding ? nn::LrGroup::embedding
                                                       : nn::LrGroup::none;
    st.addAttribute("group",
                    nn::ParamGroupAttr::get(&ctx, decay, group,
                                            std::max<int64_t>(lrStackLayer, 0)));
    pb.create(st);
    declaredParams[full] = type;
  } else {
    type = it->second;
  }
  ++opCount; // counted against kMaxOps; the next create() reports it
  mlir::OperationState st(loc(l), nn::GetParameterOp::getOperationName());
  st.addAttribute("name", mlir::FlatSymbolRefAttr::get(&ctx, full));
  st.addTypes(type);
  return builder.create(st)->getResult(0);
}

mlir::Operation *Gen::createNamed(llvm::StringRef opName, SrcLoc l,
                                  mlir::ValueRange operands,
                                  llvm::ArrayRef<mlir::NamedAttribute> attrs,
                                  unsigned numResults,
                                  llvm::ArrayRef<int32_t> segments,
                                  unsigned numRegions, bool doInfer) {
  if (++opCount > kMaxOps) {
    if (!reportedTooLarge)
      diag.error(l, "the model expands to more than " + llvm::Twine(kMaxOps) +
                        " operations");
    reportedTooLarge = true;
    return nullptr;
  }
  mlir::OperationState st(loc(l), opName);
  st.addOperands(operands);
  for (auto &a : attrs)
    st.addAttribute(a.getName(), a.getValue());
  if (!segments.empty())
    st.addAttribute("operandSegmentSizes",
                    builder.getDenseI32ArrayAttr(segments));
  mlir::Type placeholder = scalarType(builder.getF32Type());
  for (unsigned i = 0; i < numResults; ++i)
    st.addTypes(placeholder);
  for (unsigned i = 0; i < numRegions; ++i)
    st.addRegion();
  mlir::Operation *op = builder.create(st);
  if (doInfer && !infer(op))
    return nullptr;
  recordInputRoles(op);
  return op;
}

/// The forward-function arguments `v` is moved from (through slices,
/// transposes, splits and concats), appended to `out`.
static void movedFromArguments(mlir::Value v, mlir::Block *inputs,
                               llvm::SmallVectorImpl<mlir::BlockArgument> &out) {
  if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(v)) {
    if (arg.getOwner() == inputs)
      out.push_back(arg);
    return;
  }
  mlir::Operation *def = v.getDefiningOp();
  if (llvm::isa_and_nonnull<nn::SliceOp, nn::TransposeOp, nn::SplitOp>(def))
    return movedFromArguments(def->getOperand(0), inputs, out);
  if (auto concat = llvm::dyn_cast_or_null<nn::ConcatOp>(def))
    for (mlir::Value in : concat->getOperands())
      movedFromArguments(in, inputs, out);
}

void Gen::recordInputRoles(mlir::Operation *op) {
  if (!forward)
    return;
  auto dimOf = [](mlir::Value v, int64_t index) {
    auto t = llvm::dyn_cast<nn::TensorType>(v.getType());
    if (!t || t.getRank() == 0)
      return nn::Dim::getDynamic();
    return t.getDim(index < 0 ? t.getRank() + index : index);
  };
  auto mark = [&](mlir::Value v, nn::InputRoleKind kind,
                  nn::Dim limit = nn::Dim::getDynamic()) {
    if (!v)
      return;
    llvm::SmallVector<mlir::BlockArgument> args;
    movedFromArguments(v, &forward.getFunctionBody().front(), args);
    auto role = nn::InputRoleAttr::get(
        &ctx, kind, limit.isStatic() ? limit.getSize() : 0,
        limit.isSymbolic() ? limit.getSymbol() : mlir::StringAttr());
    for (mlir::BlockArgument arg : args)
      if (!forward.getArgAttr(arg.getArgNumber(), "nn.role"))
        forward.setArgAttr(arg.getArgNumber(), "nn.role", role);
  };
  if (auto e = llvm::dyn_cast<nn::EmbeddingOp>(op))
    mark(e.getIndices(), nn::InputRoleKind::token_ids, dimOf(e.getTable(), 0));
  else if (auto c = llvm::dyn_cast<nn::CrossEntropyOp>(op))
    mark(c.getTarget(), nn::InputRoleKind::class_targets, dimOf(c.getLogits(), -1));
  else if (auto b = llvm::dyn_cast<nn::BCEWithLogitsOp>(op))
    mark(b.getTarget(), nn::InputRoleKind::binary_targets);
  else if (auto r = llvm::dyn_cast<nn::RNNOp>(op))
    mark(r.getLengths(), nn::InputRoleKind::lengths, dimOf(r.getX(), 1));
  else if (auto r = llvm::dyn_cast<nn::LSTMOp>(op))
    mark(r.getLengths(), nn::InputRoleKind::lengths, dimOf(r.getX(), 1));
  else if (auto r = llvm::dyn_cast<nn::GRUOp>(op))
    mark(r.getLengths(), nn::InputRoleKind::lengths, dimOf(r.getX(), 1));
  else if (auto o = llvm::dyn_cast<nn::ODERNNOp>(op))
    mark(o.getTimes(), nn::InputRoleKind::times);
  else if (auto a = llvm::dyn_cast<nn::AttentionOp>(op)) {
    mark(a.getKeyPaddingMask(), nn::InputRoleKind::mask);
    mark(a.getGlobalMask(), nn::InputRoleKind::mask);
  }
}

bool Gen::infer(mlir::Operation *op) {
  return mlir::succeeded(nn::inferResultTypesInPlace(op));
}

mlir::Value Gen::asTensor(const FVal &v, mlir::Type like, SrcLoc l,
                          llvm::StringRef what) {
  if (v.kind == FVal::Tensor)
    return v.value;
  if (v.kind == FVal::Const && v.c.isNumber()) {
    mlir::Type elt = builder.getF32Type();
    if (auto t = llvm::dyn_cast_or_null<nn::TensorType>(like))
      elt = t.getElementType();
    mlir::TypedAttr value;
    if (llvm::isa<mlir::FloatType>(elt))
      value = builder.getFloatAttr(elt, v.c.asDouble());
    else if (v.c.kind == CValue::Int)
      value = builder.getIntegerAttr(elt, v.c.i);
    else {
      diag.error(v.loc, "cannot use the float " + v.c.str() +
                            " with an integer tensor");
      return {};
    }
    return op1<nn::ConstantOp>(v.loc, {}, {attr("value", value)});
  }
  diag.error(v.loc.line ? v.loc : l,
             what + " expects a tensor, got " + v.describe());
  return {};
}

size_t Gen::arity(const LayerInstance &inst) const {
  switch (inst.kind) {
  case LayerInstance::Block:
    return inst.block->forward ? inst.block->forward->params.size() : 0;
  case LayerInstance::Library: {
    size_t n = 0;
    for (auto &p : inst.spec->applyParams)
      n += p.required;
    return n;
  }
  case LayerInstance::Repeat:
  case LayerInstance::Parallel:
    return inst.children.empty() ? 1 : arity(*inst.children[0].second);
  }
  return 1;
}

std::optional<FVal>
Gen::apply(LayerInstance &inst, std::vector<FVal> positional,
           std::vector<std::pair<std::string, FVal>> keywords, SrcLoc l) {
  switch (inst.kind) {
  case LayerInstance::Block:
    return applyBlock(inst, std::move(positional), std::move(keywords), l);
  case LayerInstance::Repeat: {
    if (positional.size() != 1) {
      diag.error(l, "a 'repeat' stack takes exactly one positional input, "
                    "got " + llvm::Twine(positional.size()));
      return std::nullopt;
    }
    FVal x = positional[0];
    int64_t savedLayer = lrStackLayer;
    auto restore = llvm::scope_exit([&] { lrStackLayer = savedLayer; });
    for (auto [k, m] : llvm::enumerate(inst.children)) {
      if (&inst == lrStack)
        lrStackLayer = int64_t(k);
      auto y = apply(*m.second, {x}, keywords, l);
      if (!y)
        return std::nullopt;
      if (y->kind != FVal::Tensor) {
        diag.error(l, "each member of a 'repeat' stack must return one "
                      "tensor; '" + m.second->callee + "' returns " +
                          y->describe());
        return std::nullopt;
      }
      x = *y;
    }
    return x;
  }
  case LayerInstance::Parallel: {
    std::vector<mlir::Value> outs;
    for (auto &m : inst.children) {
      auto y = apply(*m.second, positional, keywords, l);
      if (!y)
        return std::nullopt;
      if (y->kind != FVal::Tensor) {
        diag.error(l, "each member of a 'parallel' group must return one "
                      "tensor; '" + m.second->callee + "' returns " +
                          y->describe());
        return std::nullopt;
      }
      outs.push_back(y->value);
    }
    mlir::Value v = op1<nn::ConcatOp>(l, outs, {attrI64("axis", -1)});
    if (!v)
      return std::nullopt;
    return FVal::tensor(v, l);
  }
  case LayerInstance::Library:
    break;
  }
  const LayerSpec &spec = *inst.spec;
  std::vector<ArgRef> refs;
  std::vector<FVal> vals;
  for (auto &p : positional) {
    refs.push_back({"", p.loc});
    vals.push_back(p);
  }
  for (auto &kv : keywords) {
    refs.push_back({kv.first, kv.second.loc});
    vals.push_back(kv.second);
  }
  std::vector<int> slots;
  if (!bindArgs(inst.callee, spec.applyParams, refs, l, diag, slots))
    return std::nullopt;
  std::vector<FVal> args(spec.applyParams.size());
  for (size_t k = 0; k < slots.size(); ++k) {
    if (slots[k] < 0)
      continue;
    FVal v = vals[size_t(slots[k])];
    if (v.kind != FVal::Tensor) {
      diag.error(v.loc, "argument '" + llvm::Twine(spec.applyParams[k].name) +
                            "' of layer '" + inst.callee +
                            "' expects a tensor, got " + v.describe());
      return std::nullopt;
    }
    args[k] = v;
  }
  LayerLowerFn fn = lookupLayerLowering(inst.callee);
  if (!fn) {
    diag.error(l, "layer '" + inst.callee + "' cannot be lowered yet");
    return std::nullopt;
  }
  return fn(*this, inst, args, l);
}

//===----------------------------------------------------------------------===//
// Forward bodies
//===----------------------------------------------------------------------===//

namespace {

/// Names visible in one forward body.
struct Scope {
  llvm::StringMap<FVal> vars;
  const llvm::StringMap<CValue> *consts = nullptr;
  LayerInstance *owner = nullptr; // block instance, or null for the model
  bool isModel = false;
};

class ForwardGen {
public:
  ForwardGen(Gen &gen, Scope &scope) : gen(gen), diag(gen.diag), scope(scope) {}

  std::optional<FVal> eval(const Expr &e);
  /// Runs statements; for a block, sets `result` from `return`.
  bool runBlockBody(const ForwardDef &f, FVal &result);
  bool runModelBody(const ForwardDef &f,
                    std::vector<std::pair<std::string, mlir::Value>> &outputs,
                    std::optional<std::pair<SrcLoc, mlir::Value>> &loss);

private:
  LayerInstance *lookupLayer(llvm::StringRef name) {
    if (scope.owner)
      return scope.owner->child(name);
    return gen.model.layer(name);
  }
  NameInfo nameInfo(llvm::StringRef n) {
    NameInfo ni;
    if (scope.vars.count(n)) {
      ni.kind = NameInfo::Runtime;
      return ni;
    }
    if (lookupLayer(n)) {
      ni.kind = NameInfo::Layer;
      return ni;
    }
    auto it = scope.consts->find(n);
    if (it != scope.consts->end()) {
      ni.kind = NameInfo::Const;
      ni.value = &it->second;
      return ni;
    }
    if (scope.isModel && gen.model.isDim(n))
      ni.kind = NameInfo::Dim;
    return ni;
  }
  std::optional<CValue> constEval(const Expr &e) {
    return evalConst(e, [&](llvm::StringRef n) { return nameInfo(n); }, diag);
  }
  std::optional<FVal> evalName(const NameExpr &n);
  std::optional<FVal> evalCall(const CallExpr &c);
  std::optional<FVal> evalIndex(const IndexExpr &ix);
  std::optional<FVal> evalBinary(const BinaryExpr &b);
  bool bind(const Pattern &p, const FVal &v);
  bool checkAssignable(const std::string &name, SrcLoc l);

  Gen &gen;
  DiagEngine &diag;
  Scope &scope;
};

std::optional<FVal> ForwardGen::evalName(const NameExpr &n) {
  auto it = scope.vars.find(n.name);
  if (it != scope.vars.end()) {
    FVal v = it->second;
    v.loc = n.getLoc();
    return v;
  }
  if (LayerInstance *li = lookupLayer(n.name)) {
    FVal v;
    v.kind = FVal::Layer;
    v.layer = li;
    v.loc = n.getLoc();
    return v;
  }
  auto cit = scope.consts->find(n.name);
  if (cit != scope.consts->end()) {
    CValue c = cit->second;
    c.loc = n.getLoc();
    return FVal::constant(c, n.getLoc());
  }
  if (scope.isModel && gen.model.isDim(n.name)) {
    diag.error(n.getLoc(), "symbolic dimension '" + n.name +
                               "' cannot be used as a value");
    return std::nullopt;
  }
  if (lookupFunc(n.name))
    diag.error(n.getLoc(), "'" + n.name + "' is a function; call it as '" +
                               n.name + "(...)'");
  else
    diag.error(n.getLoc(), "use of undeclared name '" + n.name + "'");
  return std::nullopt;
}

std::optional<FVal> ForwardGen::eval(const Expr &e) {
  switch (e.getKind()) {
  case Expr::Int:
  case Expr::Float:
  case Expr::Bool:
  case Expr::List: {
    auto c = constEval(e);
    if (!c)
      return std::nullopt;
    return FVal::constant(*c, e.getLoc());
  }
  case Expr::Name:
    return evalName(llvm::cast<NameExpr>(e));
  case Expr::Call:
    return evalCall(llvm::cast<CallExpr>(e));
  case Expr::Index:
    return evalIndex(llvm::cast<IndexExpr>(e));
  case Expr::Binary:
    return evalBinary(llvm::cast<BinaryExpr>(e));
  case Expr::Unary: {
    auto &u = llvm::cast<UnaryExpr>(e);
    auto v = eval(*u.operand);
    if (!v)
      return std::nullopt;
    if (v->kind == FVal::Const) {
      auto c = constEval(e);
      if (!c)
        return std::nullopt;
      return FVal::constant(*c, e.getLoc());
    }
    mlir::Value x = gen.asTensor(*v, {}, e.getLoc(), "'-'");
    if (!x)
      return std::nullopt;
    mlir::Value r = gen.op1<nn::NegOp>(e.getLoc(), {x});
    if (!r)
      return std::nullopt;
    return FVal::tensor(r, e.getLoc());
  }
  }
  return std::nullopt;
}

std::optional<FVal> ForwardGen::evalBinary(const BinaryExpr &b) {
  auto l = eval(*b.lhs);
  if (!l)
    return std::nullopt;
  auto r = eval(*b.rhs);
  if (!r)
    return std::nullopt;
  const char *op = binOpSpelling(b.op);
  if (l->kind == FVal::Const && r->kind == FVal::Const) {
    auto c = constEval(b);
    if (!c)
      return std::nullopt;
    return FVal::constant(*c, b.getLoc());
  }
  for (const FVal *v : {&*l, &*r}) {
    if (v->kind == FVal::Tensor || (v->kind == FVal::Const && v->c.isNumber()))
      continue;
    diag.error(v->loc, llvm::Twine("operand of '") + op +
                           "' must be a tensor or a number, got " +
                           v->describe());
    return std::nullopt;
  }
  if (b.op == BinOp::Mod) {
    diag.error(b.getLoc(), "'%' is only defined on compile-time constants");
    return std::nullopt;
  }
  if (b.op == BinOp::MatMul &&
      (l->kind != FVal::Tensor || r->kind != FVal::Tensor)) {
    diag.error(b.getLoc(), "'@' needs two tensors");
    return std::nullopt;
  }
  mlir::Type like = l->kind == FVal::Tensor ? l->value.getType()
                                            : r->value.getType();
  mlir::Value x = gen.asTensor(*l, like, b.getLoc(), op);
  if (!x)
    return std::nullopt;
  mlir::Value y = gen.asTensor(*r, like, b.getLoc(), op);
  if (!y)
    return std::nullopt;
  if (isComparison(b.op)) {
    nn::ComparePredicate predicate = nn::ComparePredicate::eq;
    switch (b.op) {
    case BinOp::Ne: predicate = nn::ComparePredicate::ne; break;
    case BinOp::Lt: predicate = nn::ComparePredicate::lt; break;
    case BinOp::Le: predicate = nn::ComparePredicate::le; break;
    case BinOp::Gt: predicate = nn::ComparePredicate::gt; break;
    case BinOp::Ge: predicate = nn::ComparePredicate::ge; break;
    default: break;
    }
    mlir::Value res = gen.op1<nn::CompareOp>(
        b.getLoc(), {x, y},
        {gen.attr("predicate",
                  nn::ComparePredicateAttr::get(&gen.ctx, predicate))});
    if (!res)
      return std::nullopt;
    return FVal::tensor(res, b.getLoc());
  }
  mlir::Value res;
  switch (b.op) {
  case BinOp::Sub: res = gen.op1<nn::SubOp>(b.getLoc(), {x, y}); break;
  case BinOp::Mul: res = gen.op1<nn::MulOp>(b.getLoc(), {x, y}); break;
  case BinOp::Div: res = gen.op1<nn::DivOp>(b.getLoc(), {x, y}); break;
  case BinOp::MatMul: res = gen.op1<nn::MatmulOp>(b.getLoc(), {x, y}); break;
  default: res = gen.op1<nn::AddOp>(b.getLoc(), {x, y}); break;
  }
  if (!res)
    return std::nullopt;
  return FVal::tensor(res, b.getLoc());
}

std::optional<FVal> ForwardGen::evalIndex(const IndexExpr &ix) {
  auto base = eval(*ix.base);
  if (!base)
    return std::nullopt;
  if (base->kind != FVal::Tensor) {
    diag.error(ix.getLoc(), "only tensors can be indexed, got " +
                                base->describe());
    return std::nullopt;
  }
  nn::TensorType t = gen.tensorType(base->value);
  if (!t)
    return std::nullopt;
  int64_t rank = t.getRank();
  if (int64_t(ix.items.size()) > rank) {
    diag.error(ix.getLoc(), "too many indices: " +
                                llvm::Twine(ix.items.size()) +
                                " for a tensor of rank " + llvm::Twine(rank));
    return std::nullopt;
  }
  llvm::SmallVector<int64_t> starts(rank, 0), stops(rank, INT64_MAX),
      steps(rank, 1), squeeze;
  auto constInt = [&](const Expr &e, int64_t &out) {
    auto c = constEval(e);
    if (!c)
      return false;
    if (c->kind != CValue::Int) {
      diag.error(e.getLoc(), "index must be a compile-time integer, got " +
                                 c->describe());
      return false;
    }
    out = c->i;
    return true;
  };
  for (size_t d = 0; d < ix.items.size(); ++d) {
    const IndexItem &it = ix.items[d];
    if (!it.isSlice) {
      int64_t i;
      if (!constInt(*it.index, i))
        return std::nullopt;
      starts[d] = i;
      stops[d] = (i == -1 || i == INT64_MAX) ? INT64_MAX : i + 1;
      squeeze.push_back(int64_t(d));
      continue;
    }
    if (it.start && !constInt(*it.start, starts[d]))
      return std::nullopt;
    if (it.stop && !constInt(*it.stop, stops[d]))
      return std::nullopt;
    if (it.step) {
      if (!constInt(*it.step, steps[d]))
        return std::nullopt;
      if (steps[d] <= 0) {
        diag.error(it.step->getLoc(), "slice step must be positive");
        return std::nullopt;
      }
    }
  }
  mlir::Value r = gen.op1<nn::SliceOp>(ix.getLoc(), {base->value},
                          {gen.attrI64s("starts", starts),
                           gen.attrI64s("stops", stops),
                           gen.attrI64s("steps", steps),
                           gen.attrI64s("squeeze", squeeze)});
  if (!r)
    return std::nullopt;
  return FVal::tensor(r, ix.getLoc());
}

std::optional<FVal> ForwardGen::evalCall(const CallExpr &c) {
  SrcLoc l = c.getLoc();
  if (scope.vars.count(c.callee)) {
    diag.error(c.calleeLoc, "'" + c.callee +
                                "' is a value, not a layer or function");
    return std::nullopt;
  }
  if (LayerInstance *li = lookupLayer(c.callee)) {
    std::vector<FVal> pos;
    std::vector<std::pair<std::string, FVal>> kw;
    for (auto &a : c.args) {
      auto v = eval(*a.value);
      if (!v)
        return std::nullopt;
      v->loc = a.value->getLoc();
      if (a.name.empty())
        pos.push_back(*v);
      else
        kw.emplace_back(a.name, *v);
    }
    return gen.apply(*li, std::move(pos), std::move(kw), l);
  }
  const FuncSpec *fs = lookupFunc(c.callee);
  if (!fs) {
    if (nncc::frontend::lookupLayer(c.callee) || gen.model.blocks.count(c.callee))
      diag.error(c.calleeLoc,
                 "'" + c.callee +
                     "' is a layer constructor; declare the layer first "
                     "(e.g. 'l = " + c.callee + "(...)') and apply it");
    else
      diag.error(c.calleeLoc, "unknown function or layer '" + c.callee + "'");
    return std::nullopt;
  }
  std::vector<ArgRef> refs;
  for (auto &a : c.args)
    refs.push_back({a.name, a.loc});
  std::vector<int> slots, variadic;
  if (!bindArgs(c.callee, fs->params, refs, l, diag, slots,
                fs->variadicTensors ? &variadic : nullptr))
    return std::nullopt;
  std::vector<FVal> args(fs->params.size());
  for (size_t k = 0; k < fs->params.size(); ++k) {
    const ParamSpec &p = fs->params[k];
    if (slots[k] < 0) {
      if (p.defaultValue && p.kind != PK::Tensor)
        args[k] = FVal::constant(*p.defaultValue, l);
      continue;
    }
    const Expr &e = *c.args[size_t(slots[k])].value;
    if (p.kind == PK::Tensor) {
      auto v = eval(e);
      if (!v)
        return std::nullopt;
      if (v->kind != FVal::Tensor &&
          !(v->kind == FVal::Const && v->c.isNumber())) {
        diag.error(e.getLoc(), "argument '" + llvm::Twine(p.name) + "' of '" +
                                   c.callee + "' expects a tensor, got " +
                                   v->describe());
        return std::nullopt;
      }
      args[k] = *v;
    } else if (p.kind == PK::LayerRef) {
      auto *ne = llvm::dyn_cast<NameExpr>(&e);
      LayerInstance *li = ne ? lookupLayer(ne->name) : nullptr;
      if (!li) {
        diag.error(e.getLoc(), "argument '" + llvm::Twine(p.name) + "' of '" +
                                   c.callee +
                                   "' must name a declared layer");
        return std::nullopt;
      }
      FVal v;
      v.kind = FVal::Layer;
      v.layer = li;
      v.loc = e.getLoc();
      args[k] = v;
    } else {
      auto v = constEval(e);
      if (!v || !checkValue(c.callee, p, *v, diag))
        return std::nullopt;
      args[k] = FVal::constant(*v, e.getLoc());
    }
  }
  std::vector<FVal> vars;
  for (int i : variadic) {
    auto v = eval(*c.args[size_t(i)].value);
    if (!v)
      return std::nullopt;
    if (v->kind != FVal::Tensor) {
      diag.error(c.args[size_t(i)].loc, "'" + c.callee +
                                            "' expects tensors, got " +
                                            v->describe());
      return std::nullopt;
    }
    vars.push_back(*v);
  }
  FuncLowerFn fn = lookupFuncLowering(c.callee);
  if (!fn) {
    diag.error(l, "function '" + c.callee + "' cannot be lowered yet");
    return std::nullopt;
  }
  return fn(gen, args, vars, l);
}

bool ForwardGen::checkAssignable(const std::string &name, SrcLoc l) {
  if (lookupLayer(name)) {
    diag.error(l, "cannot assign to '" + name + "': it names a layer");
    return false;
  }
  if (scope.consts->count(name)) {
    diag.error(l, "cannot assign to '" + name + "': it names a constant");
    return false;
  }
  if (scope.isModel && gen.model.isDim(name)) {
    diag.error(l, "cannot assign to '" + name +
                      "': it names a symbolic dimension");
    return false;
  }
  return true;
}

bool ForwardGen::bind(const Pattern &p, const FVal &v) {
  if (!p.isTuple()) {
    if (!checkAssignable(p.name, p.loc))
      return false;
    if (v.kind == FVal::Layer) {
      diag.error(p.loc, "cannot bind a layer to a name in 'forward'");
      return false;
    }
    scope.vars[p.name] = v;
    return true;
  }
  if (v.kind != FVal::Tuple) {
    diag.error(p.loc, "cannot unpack " + v.describe() + " into " +
                          llvm::Twine(p.elems.size()) + " names");
    return false;
  }
  if (v.elems.size() != p.elems.size()) {
    diag.error(p.loc, "cannot unpack a tuple of " +
                          llvm::Twine(v.elems.size()) + " values into " +
                          llvm::Twine(p.elems.size()) + " names");
    return false;
  }
  for (size_t i = 0; i < p.elems.size(); ++i)
    if (!bind(p.elems[i], v.elems[i]))
      return false;
  return true;
}

bool ForwardGen::runBlockBody(const ForwardDef &f, FVal &result) {
  for (size_t i = 0; i < f.body.size(); ++i) {
    const Stmt &s = *f.body[i];
    switch (s.getKind()) {
    case Stmt::Assign: {
      auto &a = llvm::cast<AssignStmt>(s);
      auto v = eval(*a.value);
      if (!v || !bind(a.target, *v))
        return false;
      break;
    }
    case Stmt::Return: {
      auto &r = llvm::cast<ReturnStmt>(s);
      if (i + 1 != f.body.size()) {
        diag.error(f.body[i + 1]->getLoc(), "statement after 'return'");
        return false;
      }
      std::vector<FVal> vals;
      for (auto &e : r.values) {
        auto v = eval(*e);
        if (!v)
          return false;
        if (v->kind == FVal::Layer || v->kind == FVal::Const) {
          diag.error(e->getLoc(), "a block must return tensors, got " +
                                      v->describe());
          return false;
        }
        vals.push_back(*v);
      }
      result = vals.size() == 1 ? vals[0] : FVal::tuple(vals, r.getLoc());
      return true;
    }
    case Stmt::Output:
    case Stmt::Loss:
      diag.error(s.getLoc(), llvm::Twine("'") +
                                 (s.getKind() == Stmt::Output ? "output"
                                                              : "loss") +
                                 "' is only allowed in a model's forward; "
                                 "a block ends with 'return'");
      return false;
    }
  }
  diag.error(f.endLoc, "block forward must end with 'return'");
  return false;
}

bool ForwardGen::runModelBody(
    const ForwardDef &f,
    std::vector<std::pair<std::string, mlir::Value>> &outputs,
    std::optional<std::pair<SrcLoc, mlir::Value>> &loss) {
  llvm::StringMap<SrcLoc> outNames;
  for (auto &sp : f.body) {
    const Stmt &s = *sp;
    switch (s.getKind()) {
    case Stmt::Assign: {
      auto &a = llvm::cast<AssignStmt>(s);
      auto v = eval(*a.value);
      if (!v || !bind(a.target, *v))
        return false;
      break;
    }
    case Stmt::Return:
      diag.error(s.getLoc(), "'return' is only allowed in a block; a model "
                             "names its results with 'output' and 'loss'");
      return false;
    case Stmt::Output: {
      auto &o = llvm::cast<OutputStmt>(s);
      std::optional<FVal> v;
      if (o.value) {
        v = eval(*o.value);
        if (!v)
          return false;
        if (!checkAssignable(o.name, o.nameLoc))
          return false;
        scope.vars[o.name] = *v;
      } else {
        NameExpr ne(o.nameLoc, o.name);
        v = evalName(ne);
        if (!v)
          return false;
      }
      if (v->kind != FVal::Tensor) {
        diag.error(o.nameLoc, "output '" + o.name + "' must be a tensor, got " +
                                  v->describe());
        return false;
      }
      if (!outNames.try_emplace(o.name, o.nameLoc).second) {
        diag.error(o.nameLoc, "duplicate output '" + o.name + "'");
        return false;
      }
      outputs.emplace_back(o.name, v->value);
      break;
    }
    case Stmt::Loss: {
      auto &ls = llvm::cast<LossStmt>(s);
      if (loss) {
        diag.error(s.getLoc(), "a model has at most one 'loss'");
        return false;
      }
      auto v = eval(*ls.value);
      if (!v)
        return false;
      if (v->kind != FVal::Tensor) {
        diag.error(ls.value->getLoc(), "the loss must be a tensor, got " +
                                           v->describe());
        return false;
      }
      loss = std::make_pair(s.getLoc(), v->value);
      break;
    }
    }
  }
  if (outputs.empty() && !loss) {
    diag.error(f.endLoc, "the model's forward has no 'output' and no 'loss'");
    return false;
  }
  return true;
}

} // namespace

std::optional<FVal>
Gen::applyBlock(LayerInstance &inst, std::vector<FVal> positional,
                std::vector<std::pair<std::string, FVal>> kw, SrcLoc l) {
  const ForwardDef &f = *inst.block->forward;
  std::vector<ParamSpec> params;
  for (auto &p : f.params)
    params.push_back({p.name.c_str(), PK::Tensor, true, std::nullopt, {}});
  std::vector<ArgRef> refs;
  std::vector<FVal> vals;
  for (auto &p : positional) {
    refs.push_back({"", p.loc});
    vals.push_back(p);
  }
  for (auto &k : kw) {
    refs.push_back({k.first, k.second.loc});
    vals.push_back(k.second);
  }
  std::vector<int> slots;
  if (!bindArgs(inst.callee, params, refs, l, diag, slots))
    return std::nullopt;
  Scope scope;
  scope.consts = &inst.consts;
  scope.owner = &inst;
  for (size_t k = 0; k < params.size(); ++k) {
    const FVal &v = vals[size_t(slots[k])];
    if (v.kind == FVal::Layer) {
      diag.error(v.loc, "argument '" + f.params[k].name + "' of '" +
                            inst.callee + "' must be a value, got " +
                            v.describe());
      return std::nullopt;
    }
    if (inst.child(f.params[k].name) || inst.consts.count(f.params[k].name)) {
      diag.error(f.params[k].loc, "forward parameter '" + f.params[k].name +
                                      "' shadows a layer or constant of "
                                      "block '" + inst.callee + "'");
      return std::nullopt;
    }
    scope.vars[f.params[k].name] = v;
  }
  ForwardGen fg(*this, scope);
  FVal result;
  if (!fg.runBlockBody(f, result)) {
    // Point from the error inside the block back to the application.
    ctx.getDiagEngine().emit(loc(l), mlir::DiagnosticSeverity::Note)
        << "in block '" << inst.callee << "' ('" << inst.path
        << "') applied here";
    return std::nullopt;
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Module
//===----------------------------------------------------------------------===//

/// The train clause as #nn.train: the attribute fills what the clause leaves
/// out (Sema has checked names, types and ranges).
static nn::TrainAttr
trainAttr(mlir::MLIRContext &ctx,
          const std::vector<std::pair<std::string, CValue>> &clause) {
  nn::TrainAttr d = nn::TrainAttr::getDefault(&ctx);
  nn::OptimizerAttr optimizer = d.getOptimizer();
  nn::ScheduleAttr schedule = d.getSchedule();
  llvm::APFloat clip = d.getClip(), layerDecay = d.getLayerDecay();
  int64_t epochs = d.getEpochs(), batch = d.getBatch(), seed = d.getSeed();
  for (auto &[word, v] : clause) {
    if (word == "optimizer") {
      optimizer = nn::OptimizerAttr::getDefault(
          &ctx, *nn::symbolizeOptimizerKind(v.name));
      for (auto &[k, a] : v.kwargs) {
        if (k == "betas")
          optimizer = optimizer.withFloat("beta1", a.elems[0].asDouble())
                          .withFloat("beta2", a.elems[1].asDouble());
        else if (k == "nesterov")
          optimizer = optimizer.withNesterov(a.b);
        else
          optimizer = optimizer.withFloat(k, a.asDouble());
      }
    } else if (word == "schedule") {
      schedule = nn::ScheduleAttr::getDefault(
          &ctx, *nn::symbolizeScheduleKind(v.name));
      for (auto &[k, a] : v.kwargs)
        schedule = schedule.with(k, a.asDouble());
    } else if (word == "clip") {
      clip = llvm::APFloat(v.asDouble());
    } else if (word == "layer_decay") {
      layerDecay = llvm::APFloat(v.asDouble());
    } else if (word == "epochs") {
      epochs = v.i;
    } else if (word == "batch") {
      batch = v.i;
    } else if (word == "seed") {
      seed = v.i;
    }
  }
  return nn::TrainAttr::get(&ctx, optimizer, schedule, clip, layerDecay,
                            epochs, batch, seed);
}

static mlir::Type elementType(mlir::Builder &b, llvm::StringRef dtype) {
  if (dtype == "f32") return b.getF32Type();
  if (dtype == "f64") return b.getF64Type();
  if (dtype == "f16") return b.getF16Type();
  if (dtype == "bf16") return b.getBF16Type();
  if (dtype == "i32") return b.getI32Type();
  if (dtype == "i64") return b.getI64Type();
  return b.getI1Type();
}

mlir::OwningOpRef<mlir::ModuleOp>
nncc::frontend::mlirGen(mlir::MLIRContext &ctx, const ModelInfo &model,
                        DiagEngine &diag) {
  loadFrontendDialects(ctx);
  Gen gen(ctx, diag, model);
  mlir::OpBuilder &b = gen.builder;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp::create(gen.loc(model.model->loc));
  gen.module = *module;

  // Module attributes.
  module->getOperation()->setAttr("nn.model", b.getStringAttr(model.name));
  llvm::SmallVector<mlir::Attribute> dims;
  for (auto &d : model.dims)
    dims.push_back(b.getStringAttr(d));
  module->getOperation()->setAttr("nn.dims", b.getArrayAttr(dims));
  module->getOperation()->setAttr("nn.train", trainAttr(ctx, model.train));
  for (auto &kv : model.layers)
    if (kv.second->kind == LayerInstance::Repeat) {
      gen.lrStack = kv.second.get();
      break;
    }

  // The forward function, with the inputs as arguments.
  llvm::SmallVector<mlir::Type> argTypes;
  for (auto &in : model.inputs) {
    llvm::SmallVector<nn::Dim> shape;
    for (auto &d : in.shape)
      shape.push_back(d.symbolic ? nn::Dim::getSymbolic(&ctx, d.symbol)
                                 : nn::Dim::getStatic(d.size));
    argTypes.push_back(
        nn::TensorType::get(&ctx, shape, elementType(b, in.dtype)));
  }
  b.setInsertionPointToEnd(module->getBody());
  auto func = mlir::func::FuncOp::create(
      b, gen.loc(model.model->forward->loc), "forward",
      b.getFunctionType(argTypes, {}));
  gen.paramAnchor = func;
  gen.forward = func;
  mlir::Block *entry = func.addEntryBlock();
  Scope scope;
  scope.consts = &model.consts;
  scope.isModel = true;
  for (size_t i = 0; i < model.inputs.size(); ++i) {
    func.setArgAttr(unsigned(i), "nn.name",
                    b.getStringAttr(model.inputs[i].name));
    entry->getArgument(unsigned(i))
        .setLoc(gen.loc(model.inputs[i].loc));
    scope.vars[model.inputs[i].name] =
        FVal::tensor(entry->getArgument(unsigned(i)), model.inputs[i].loc);
  }
  b.setInsertionPointToStart(entry);

  ForwardGen fg(gen, scope);
  std::vector<std::pair<std::string, mlir::Value>> outputs;
  std::optional<std::pair<SrcLoc, mlir::Value>> loss;
  if (!fg.runModelBody(*model.model->forward, outputs, loss))
    return nullptr;

  llvm::SmallVector<mlir::Value> results;
  llvm::SmallVector<mlir::Attribute> names;
  for (auto &o : outputs) {
    results.push_back(o.second);
    names.push_back(b.getStringAttr(o.first));
  }
  if (loss) {
    results.push_back(loss->second);
    names.push_back(b.getStringAttr("loss"));
  }
  mlir::func::ReturnOp::create(b, gen.loc(model.model->forward->endLoc),
                               results);
  llvm::SmallVector<mlir::Type> resultTypes;
  for (auto v : results)
    resultTypes.push_back(v.getType());
  func.setFunctionType(b.getFunctionType(argTypes, resultTypes));
  for (size_t i = 0; i < names.size(); ++i)
    func.setResultAttr(unsigned(i), "nn.name", names[i]);

  if (mlir::failed(mlir::verify(*module)))
    return nullptr;
  return module;
}
