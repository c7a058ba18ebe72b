//===- ModelEmitter.cpp - analysis and printing shared by the emitters ----===//
#include "ModelEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace nncc::target {

std::string fmtDouble(double v) {
  if (std::isnan(v))
    return "NAN";
  if (std::isinf(v))
    return v > 0 ? "INFINITY" : "(-INFINITY)";
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format("%.17g", v);
  if (s.find_first_of(".eEn") == std::string::npos)
    s += ".0";
  return s;
}

std::string modelIdentifier(ModuleOp module) {
  if (auto name = module->getAttrOfType<StringAttr>("nn.model"))
    return cIdentifier(name.getValue());
  return "model";
}

std::string ModelEmitter::locString(Location loc) {
  if (auto fl = dyn_cast<FileLineColLoc>(loc))
    return (printableAscii(llvm::sys::path::filename(fl.getFilename().getValue())) + ":" +
            llvm::Twine(fl.getLine()) + ":" + llvm::Twine(fl.getColumn()))
        .str();
  if (auto nl = dyn_cast<NameLoc>(loc))
    return locString(nl.getChildLoc());
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (std::string s = locString(l); !s.empty())
        return s;
  return "";
}

std::string ModelEmitter::launchComment(Operation *op) {
  if (planOnly)
    return "";
  std::string s = "launch " + std::to_string(launchIndex.lookup(op)) + ": " +
                  op->getName().getStringRef().str();
  std::string loc = locString(op->getLoc());
  if (!loc.empty())
    s += " (" + loc + ")";
  return s;
}

//===----------------------------------------------------------------------===//
// Analysis
//===----------------------------------------------------------------------===//

LogicalResult ModelEmitter::analyze() {
  modelName = modelIdentifier(module);
  if (auto arr = module->getAttrOfType<ArrayAttr>("nn.dims"))
    for (Attribute a : arr)
      if (auto s = dyn_cast<StringAttr>(a))
        dims.push_back(s.getValue().str());

  // Optimizer groups (#nn.param_group); L = the layers of the stack.
  int64_t numLayers = 0;
  for (auto p : module.getOps<nn::ParameterOp>())
    if (nn::ParamGroupAttr g = p.getGroupAttr(); g && g.getLrGroup() == nn::LrGroup::layer)
      numLayers = std::max(numLayers, g.getLayer() + 1);
  for (auto p : module.getOps<nn::ParameterOp>()) {
    paramIndex[p.getSymName()] = params.size();
    nn::ParamGroupAttr g = p.getGroupAttr();
    params.push_back({p.getSymName().str(), p.getType(), p.getInitAttr(),
                      !g || g.getDecay(), g ? g.getLrDepth(numLayers) : 0});
  }

  for (auto f : module.getOps<func::FuncOp>()) {
    if (f.getSymName() == "forward_backward")
      train = f;
    else if (f.getSymName() == "forward" || (!forward && !trainingOnly))
      forward = f;
  }
  if (!forward && !(trainingOnly && train))
    return module.emitError("no func.func @forward to emit: the module must be "
                            "in the nnk dialect (see docs/nnk-spec.md)");
  int index = 0, weights = 0;
  if (forward && failed(analyzeFunction(forward, index, weights)))
    return failure();
  trainBegin = index;
  if (forward)
    analyzeInference();
  if (train && failed(analyzeFunction(train, index, weights)))
    return failure();
  numLaunches = index;
  boundaryIndex = boundary ? launchIndex.lookup(boundary) : numLaunches;
  analyzeDimRanges();
  return success();
}

namespace {
/// The buffers defined outside `top` that it (or an op in its regions)
/// reads and writes. An op without declared memory effects reads and
/// writes every buffer operand it has.
void topLevelEffects(Operation *top, llvm::SmallVectorImpl<Value> &reads,
                     llvm::SmallVectorImpl<Value> &writes) {
  auto outside = [&](Value v) {
    Region *r = v.getParentRegion();
    return !(r && top->isProperAncestor(r->getParentOp())) &&
           !(v.getDefiningOp() && top->isAncestor(v.getDefiningOp()));
  };
  top->walk([&](Operation *op) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects) {
      for (Value v : op->getOperands())
        if (isa<nnk::BufferType>(v.getType()) && outside(v)) {
          reads.push_back(v);
          writes.push_back(v);
        }
      return;
    }
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    for (const MemoryEffects::EffectInstance &e : list) {
      Value v = e.getValue();
      if (!v || !outside(v))
        continue;
      if (isa<MemoryEffects::Read>(e.getEffect()))
        reads.push_back(v);
      else if (isa<MemoryEffects::Write>(e.getEffect()))
        writes.push_back(v);
    }
    // Buffers an op in a region uses without a declared effect (captured
    // operands of a region op) count as read.
    if (op != top)
      for (Value v : op->getOperands())
        if (isa<nnk::BufferType>(v.getType()) && outside(v))
          reads.push_back(v);
  });
}
} // namespace

void ModelEmitter::analyzeInference() {
  Block &body = forward.getBody().front();
  llvm::DenseSet<Value> needed;
  size_t out = 0;
  std::vector<Value> inputArgs;
  for (BlockArgument arg : body.getArguments()) {
    if (!forward.getArgAttr(arg.getArgNumber(), "nnk.output")) {
      inputArgs.push_back(arg);
      continue;
    }
    // The loss is the last output, named "loss" (docs/language.md).
    bool isLoss = out + 1 == outputs.size() && outputs[out].name == "loss";
    if (isLoss)
      lossOutput = static_cast<int>(out);
    else
      needed.insert(arg);
    ++out;
  }
  if (lossOutput < 0) {
    inferenceInputs.assign(inputs.size(), true);
    return;
  }
  // Backwards over the launches: an op that writes a needed buffer (or
  // writes none: its effect is elsewhere) is needed, and so is every buffer
  // it reads or writes (an earlier write of a buffer it only partly
  // overwrites matters too).
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops)) {
    if (isa<nnk::AllocOp, nnk::WeightOp>(op))
      continue;
    SmallVector<Value> reads, writes;
    topLevelEffects(op, reads, writes);
    if (!writes.empty() && llvm::none_of(writes, [&](Value v) { return needed.contains(v); })) {
      lossOnlyOps.insert(op);
      continue;
    }
    needed.insert(reads.begin(), reads.end());
    needed.insert(writes.begin(), writes.end());
  }
  for (Value arg : inputArgs)
    inferenceInputs.push_back(needed.contains(arg));
}

void ModelEmitter::analyzeDimRanges() {
  dimRanges.assign(dims.size(), DimRange());
  auto dimIndex = [&](nncc::Dim d) -> int {
    if (!d.isSymbolic())
      return -1;
    auto it = std::find(dims.begin(), dims.end(), d.getSymbol().getValue().str());
    return it == dims.end() ? -1 : static_cast<int>(it - dims.begin());
  };
  auto where = [](Operation *op) {
    std::string loc = locString(op->getLoc());
    return (loc.empty() ? std::string() : loc + ": ") + op->getName().getStringRef().str();
  };
  auto atMost = [&](int sym, int64_t max, std::string why) {
    DimRange &r = dimRanges[sym];
    if (r.max < 0 || max < r.max) {
      r.max = max;
      r.maxWhy = std::move(why);
    }
  };
  auto atLeast = [&](int sym, int64_t min, std::string why) {
    DimRange &r = dimRanges[sym];
    if (min > r.min) {
      r.min = min;
      r.minWhy = std::move(why);
    }
  };
  // A window of `whole` (per dim: start, negative from the end; step;
  // squeezed dims are one index) that `part` has the extent of.
  auto window = [&](Operation *op, Value whole, Value part, ArrayRef<int64_t> starts,
                    ArrayRef<int64_t> steps, ArrayRef<int64_t> squeeze) {
    auto w = dyn_cast<nnk::BufferType>(whole.getType());
    auto pt = dyn_cast<nnk::BufferType>(part.getType());
    if (!w || !pt || starts.size() != (size_t)w.getRank() || steps.size() != starts.size())
      return;
    int64_t pd = 0;
    for (int64_t d = 0; d < w.getRank(); ++d) {
      nncc::Dim W = w.getDim(d);
      const int64_t start = starts[d], step = std::max<int64_t>(1, steps[d]);
      const bool squeezed = llvm::is_contained(squeeze, d);
      nncc::Dim P = squeezed ? nncc::Dim() : pt.getDim(pd++);
      // Index start (start >= 0) or W - |start| reaches start + (n - 1)
      // step for the n = P entries (1 when squeezed).
      if (int sym = dimIndex(W); sym >= 0 && (squeezed || P.isStatic())) {
        const int64_t n = squeezed ? 1 : P.getSize();
        if (n > 0)
          atLeast(sym, start >= 0 ? start + (n - 1) * step + 1 : -start,
                  where(op) + " reads index " +
                      std::to_string(start >= 0 ? start + (n - 1) * step : start) + " of " +
                      dims[sym]);
      } else if (int psym = squeezed ? -1 : dimIndex(P); psym >= 0 && W.isStatic()) {
        const int64_t room = start >= 0 ? W.getSize() - start : -start;
        atMost(psym, room > 0 ? (room - 1) / step + 1 : 0,
               where(op) + " takes " + dims[psym] + " entries (from " +
                   std::to_string(start) + ", step " + std::to_string(step) +
                   ") of a dim of size " + std::to_string(W.getSize()));
      }
    }
  };
  module.walk([&](Operation *op) {
    if (auto s = dyn_cast<nnk::SliceOp>(op))
      window(op, s.getX(), s.getOut(), s.getStarts(), s.getSteps(), s.getSqueeze());
    else if (auto g = dyn_cast<nnk::SliceGradOp>(op))
      window(op, g.getOut(), g.getDy(), g.getStarts(), g.getSteps(), g.getSqueeze());
    else if (auto a = dyn_cast<nnk::AxialPositionOp>(op)) {
      // T <= n1 n2, the positions of the grid.
      auto x = dyn_cast<nnk::BufferType>(a.getX().getType());
      auto rows = dyn_cast<nnk::BufferType>(a.getRows().getType());
      auto cols = dyn_cast<nnk::BufferType>(a.getCols().getType());
      if (!x || !rows || !cols || x.getRank() != 3 || rows.getRank() != 3 ||
          cols.getRank() != 3 || !rows.getDim(0).isStatic() || !cols.getDim(1).isStatic())
        return;
      const int64_t n1 = rows.getDim(0).getSize(), n2 = cols.getDim(1).getSize();
      if (int sym = dimIndex(x.getDim(1)); sym >= 0)
        atMost(sym, n1 * n2,
               where(op) + " has a grid of " + std::to_string(n1) + " x " +
                   std::to_string(n2) + " positions");
    }
  });
}

LogicalResult ModelEmitter::analyzeFunction(func::FuncOp fn, int &index, int &weights) {
  bool isTrain = fn == train;
  if (fn.getNumResults() != 0)
    return fn.emitError("@forward still returns values: it is not in the nnk "
                        "dialect yet (run --convert-nn-to-nnk first)");
  if (fn.getBody().getBlocks().size() != 1)
    return fn.emitError("@forward must have exactly one block");
  Block &body = fn.getBody().front();
  size_t nIn = 0, nOut = 0;
  for (BlockArgument arg : body.getArguments()) {
    auto type = dyn_cast<nnk::BufferType>(arg.getType());
    if (!type)
      return fn.emitError() << "argument " << arg.getArgNumber()
                            << " is not an !nnk.buffer: " << arg.getType();
    auto nameAttr = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "nn.name");
    bool isOutput = fn.getArgAttr(arg.getArgNumber(), "nnk.output") != nullptr;
    std::string n = nameAttr ? nameAttr.getValue().str()
                             : (isOutput ? "output" : "input") +
                                   std::to_string(arg.getArgNumber());
    for (nncc::Dim d : type.getDims())
      if (d.isDynamic())
        return fn.emitError() << (isOutput ? "output '" : "input '") << n
                              << "' has an unknown dim `?`: the C ABI needs every "
                                 "dim static or a named symbol";
    if (isTrain) {
      if (!isOutput && nIn < inputs.size()) {
        names[arg] = "in" + std::to_string(nIn++);
      } else if (!isOutput) {
        names[arg] = "cot" + std::to_string(cotangents.size());
        cotangents.push_back({n, type});
      } else if (nOut < outputs.size()) {
        names[arg] = "out" + std::to_string(nOut++);
        trainOutputs.insert(arg);
      } else if (grads.size() < params.size()) {
        names[arg] = "g" + std::to_string(grads.size());
        grads.push_back({n, type});
      } else {
        names[arg] = "ig" + std::to_string(inputGrads.size());
        inputGrads.push_back({n, type});
      }
      continue;
    }
    if (isOutput) {
      names[arg] = "out" + std::to_string(outputs.size());
      outputs.push_back({n, type});
    } else {
      names[arg] = "in" + std::to_string(inputs.size());
      inputs.push_back({n, type});
    }
  }
  if (isTrain && grads.size() != params.size())
    return fn.emitError() << "@forward_backward must return one grad.<param> per "
                             "parameter after the outputs";
  for (Operation &op : body.without_terminator()) {
    if (isTrain && isa<nnk::BoundaryOp>(op))
      boundary = &op;
    int here = index++;
    launchOps.push_back(&op);
    op.walk([&](Operation *inner) { launchIndex[inner] = here; });
  }
  llvm::SmallVector<Operation *> all;
  for (Operation &op : body.without_terminator())
    op.walk<WalkOrder::PreOrder>([&](Operation *inner) { all.push_back(inner); });
  for (Operation *op : all) {
    if (auto w = dyn_cast<nnk::WeightOp>(op)) {
      auto it = paramIndex.find(w.getName());
      if (it == paramIndex.end())
        return w.emitError() << "no nn.parameter @" << w.getName();
      names[w.getResult()] = "w" + std::to_string(weights++);
    }
  }
  for (Operation *opp : all) {
    Operation &op = *opp;
    auto alloc = dyn_cast<nnk::AllocOp>(op);
    if (!alloc)
      continue;
    auto type = cast<nnk::BufferType>(alloc.getResult().getType());
    PlannedBuffer b;
    b.name = "t" + std::to_string(buffers.size());
    b.type = type;
    b.owner = alloc;
    b.first = INT32_MAX;
    b.last = launchIndex[&op];
    for (Operation *user : alloc.getResult().getUsers()) {
      Operation *top = user;
      while (top && top->getParentOp() != fn.getOperation())
        top = top->getParentOp();
      if (!top || isa<func::ReturnOp>(top))
        continue;
      b.first = std::min(b.first, launchIndex[top]);
      b.last = std::max(b.last, launchIndex[top]);
    }
    if (b.first == INT32_MAX)
      b.first = b.last;
    names[alloc.getResult()] = "t" + std::to_string(buffers.size());
    buffers.push_back(b);
  }
  // Every symbolic dim used anywhere must be declared.
  llvm::StringSet<> declared;
  for (auto &d : dims)
    declared.insert(d);
  WalkResult r = fn.walk([&](Operation *op) {
    for (Value v : op->getResults())
      if (auto t = dyn_cast<nnk::BufferType>(v.getType()))
        for (nncc::Dim d : t.getDims())
          if (d.isSymbolic() && !declared.contains(d.getSymbol().getValue())) {
            op->emitError() << "symbolic dim '" << d.getSymbol().getValue()
                            << "' is not one of the model's dims";
            return WalkResult::interrupt();
          }
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

int ModelEmitter::addWorkspace(Operation *op, const Size &bytes) {
  PlannedBuffer b;
  b.name = "ws" + std::to_string(buffers.size());
  b.workspaceBytes = bytes;
  b.first = b.last = launchIndex.lookup(op);
  b.owner = op;
  buffers.push_back(b);
  return static_cast<int>(buffers.size()) - 1;
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

FailureOr<std::string> ModelEmitter::dimExpr(Operation *op, nncc::Dim d) {
  FailureOr<Size> s = dimSize(op, d);
  if (failed(s))
    return failure();
  return s->str();
}

FailureOr<std::string> ModelEmitter::numel(Operation *op, nnk::BufferType t, int64_t from,
                                           int64_t to) {
  FailureOr<Size> s = numelSize(op, t, from, to);
  if (failed(s))
    return failure();
  return s->str();
}

FailureOr<Size> ModelEmitter::dimSize(Operation *op, nncc::Dim d) {
  if (d.isStatic())
    return Size::constant(d.getSize(), std::to_string(d.getSize()) + "LL");
  if (d.isSymbolic()) {
    for (size_t i = 0; i < dims.size(); ++i)
      if (dims[i] == d.getSymbol().getValue())
        return Size::dim(dims[i], "d_" + cIdentifier(dims[i]));
    op->emitError() << "symbolic dim '" << d.getSymbol().getValue()
                    << "' is not one of the model's dims";
    return failure();
  }
  op->emitError() << "cannot emit a buffer with an unknown dim `?` (the size must "
                     "be static or a model dim)";
  return failure();
}

FailureOr<Size> ModelEmitter::numelSize(Operation *op, nnk::BufferType t, int64_t from,
                                        int64_t to) {
  if (to < 0)
    to = t.getRank();
  std::optional<Size> product;
  int64_t folded = 1;
  for (int64_t i = from; i < to; ++i) {
    nncc::Dim d = t.getDim(i);
    if (d.isStatic()) {
      folded *= d.getSize();
      continue;
    }
    FailureOr<Size> e = dimSize(op, d);
    if (failed(e))
      return failure();
    product = product ? *product * *e : *e;
  }
  if (!product)
    return Size::constant(folded, "(int64_t)" + std::to_string(folded));
  if (folded != 1)
    product = Size::constant(folded, std::to_string(folded) + "LL") * *product;
  return product->paren();
}

FailureOr<std::string> ModelEmitter::cType(Operation *op, Type elt) {
  if (elt.isF32() || elt.isF64())
    return std::string("real_t");
  if (elt.isInteger(32))
    return std::string("int32_t");
  if (elt.isInteger(64))
    return std::string("int64_t");
  if (elt.isInteger(1))
    return std::string("uint8_t");
  op->emitError() << "element type " << elt
                  << " is not supported by the emitters yet (f32, f64, i32, i64, i1)";
  return failure();
}

FailureOr<std::string> ModelEmitter::dtypeEnum(Location loc, Type elt) {
  if (elt.isF32() || elt.isF64())
    return std::string("NNCC_REAL_DTYPE");
  if (elt.isInteger(32))
    return std::string("NNCC_DTYPE_I32");
  if (elt.isInteger(64))
    return std::string("NNCC_DTYPE_I64");
  if (elt.isInteger(1))
    return std::string("NNCC_DTYPE_BOOL");
  emitError(loc) << "element type " << elt << " is not supported by the C ABI yet";
  return failure();
}

FailureOr<std::string> ModelEmitter::broadcastIndex(Operation *op, nnk::BufferType in,
                                                    nnk::BufferType out,
                                                    const std::string &i,
                                                    const std::string &indexType) {
  auto size = [&](const std::string &s) {
    return indexType.empty() ? s : "(" + indexType + ")" + s;
  };
  int64_t r = in.getRank(), R = out.getRank();
  if (r == 0)
    return std::string("0");
  bool allOnes = true;
  for (nncc::Dim d : in.getDims())
    allOnes &= d.isStatic() && d.getSize() == 1;
  if (allOnes)
    return std::string("0");
  if (r > R)
    return op->emitError("elementwise input has a higher rank than the output"),
           failure();
  // Suffix of the output's dims: i modulo the input's size.
  bool suffix = true;
  for (int64_t k = 0; k < r; ++k)
    suffix &= in.getDim(k) == out.getDim(R - r + k);
  if (suffix) {
    if (r == R)
      return i;
    FailureOr<std::string> n = numel(op, in);
    if (failed(n))
      return failure();
    return "(" + i + " % " + size(*n) + ")";
  }
  // General NumPy broadcast: sum over the input's non-1 dims of
  // coord(out dim) * input stride.
  std::string expr;
  for (int64_t k = 0; k < r; ++k) {
    nncc::Dim d = in.getDim(k);
    if (d.isStatic() && d.getSize() == 1)
      continue;
    int64_t od = R - r + k;
    FailureOr<std::string> ostride = numel(op, out, od + 1);
    FailureOr<std::string> odim = dimExpr(op, out.getDim(od));
    FailureOr<std::string> istride = numel(op, in, k + 1);
    if (failed(ostride) || failed(odim) || failed(istride))
      return failure();
    expr += (expr.empty() ? "" : " + ") + ("((" + i + " / " + size(*ostride) + ") % " +
                                           size(*odim) + ") * " + size(*istride));
  }
  return expr.empty() ? std::string("0") : "(" + expr + ")";
}

//===----------------------------------------------------------------------===//
// Tables
//===----------------------------------------------------------------------===//

static std::string dimsInitializer(const std::vector<std::string> &dims,
                                   llvm::ArrayRef<nncc::Dim> ds) {
  std::string s = "{";
  for (size_t i = 0; i < ds.size(); ++i) {
    if (i)
      s += ", ";
    nncc::Dim d = ds[i];
    if (d.isStatic()) {
      s += std::to_string(d.getSize());
      continue;
    }
    int64_t idx = 0;
    for (size_t k = 0; k < dims.size(); ++k)
      if (d.isSymbolic() && dims[k] == d.getSymbol().getValue())
        idx = static_cast<int64_t>(k) + 1;
    s += std::to_string(-idx);
  }
  return s + "}";
}

LogicalResult ModelEmitter::emitTables(raw_indented_ostream &os, bool withCuda) {
  if (failed(emitSignatureTables(os)) || failed(emitParamTables(os)))
    return failure();
  FailureOr<bool> anyWorkspace = emitBufferPlan(os);
  if (failed(anyWorkspace))
    return failure();
  emitTrainConfig(os);
  emitAbi(os, withCuda);
  emitModelDef(os, withCuda, *anyWorkspace);
  return success();
}

LogicalResult ModelEmitter::emitSignatureTables(raw_indented_ostream &os) {
  os << "// ---- signature tables ----\n";
  if (!dims.empty()) {
    os << "static const char *const kDimNames[] = {";
    for (size_t i = 0; i < dims.size(); ++i)
      os << (i ? ", " : "") << cString(dims[i]);
    os << "};\n";
    // The sizes each dim may take (nnk.slice windows; set_input checks).
    os << "static const nncc_ms_dim_range kDimRanges[] = {\n";
    for (const DimRange &r : dimRanges)
      os << "  {" << r.min << ", " << r.max << ", " << cString(r.minWhy) << ", "
         << cString(r.maxWhy) << "},\n";
    os << "};\n";
  }
  auto emitInfos = [&](llvm::StringRef table, const std::vector<TensorSig> &sigs) {
    for (size_t i = 0; i < sigs.size(); ++i)
      if (sigs[i].type.getRank())
        os << "static const int64_t " << table << "Dims" << i << "[] = "
           << dimsInitializer(dims, sigs[i].type.getDims()) << ";\n";
    if (sigs.empty())
      return success();
    os << "static const nncc_tensor_info " << table << "[] = {\n";
    for (size_t i = 0; i < sigs.size(); ++i) {
      FailureOr<std::string> dt = dtypeEnum(forward.getLoc(), sigs[i].type.getElementType());
      if (failed(dt))
        return failure();
      os << "  {" << cString(sigs[i].name) << ", " << *dt << ", "
         << sigs[i].type.getRank() << ", "
         << (sigs[i].type.getRank() ? (table + "Dims" + llvm::Twine(i)).str() : "NULL")
         << "},\n";
    }
    os << "};\n";
    return success();
  };
  if (failed(emitInfos("kInputs", inputs)) || failed(emitInfos("kOutputs", outputs)) ||
      (train && failed(emitInfos("kGrads", grads))) ||
      failed(emitInfos("kCotangents", cotangents)) ||
      failed(emitInfos("kInputGrads", inputGrads)))
    return failure();
  if (!inputs.empty()) {
    os << "// Per input: 1 when forward needs it, 0 when only the loss reads it.\n";
    os << "static const int32_t kInferenceInputs[] = {";
    for (size_t i = 0; i < inputs.size(); ++i)
      os << (i ? ", " : "")
         << (i >= inferenceInputs.size() || inferenceInputs[i] ? "1" : "0");
    os << "};\n";
  }
  return success();
}

LogicalResult ModelEmitter::emitParamTables(raw_indented_ostream &os) {
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].type.getRank())
      os << "static const int64_t kParamsDims" << i << "[] = "
         << dimsInitializer(dims, params[i].type.getDims()) << ";\n";
  if (!params.empty()) {
    os << "static const nncc_tensor_info kParams[] = {\n";
    for (size_t i = 0; i < params.size(); ++i) {
      for (nncc::Dim d : params[i].type.getDims())
        if (!d.isStatic())
          return module.emitError() << "parameter '" << params[i].name
                                    << "' must have a static shape";
      FailureOr<std::string> dt = dtypeEnum(module.getLoc(), params[i].type.getElementType());
      if (failed(dt))
        return failure();
      os << "  {" << cString(params[i].name) << ", " << *dt << ", "
         << params[i].type.getRank() << ", "
         << (params[i].type.getRank() ? "kParamsDims" + std::to_string(i)
                                      : std::string("NULL"))
         << "},\n";
    }
    os << "};\n";
    os << "// PyTorch's default init of each parameter (#nn.init), drawn with Philox.\n";
    os << "static const nncc_ms_init kInits[] = {\n";
    for (const ParamSig &p : params) {
      os << "  {";
      if (!p.init) {
        os << "NNCC_MS_INIT_NONE, 0, 0";
      } else {
        llvm::ArrayRef<double> v = p.init.getValues().asArrayRef();
        auto at = [&](size_t k) { return fmtDouble(k < v.size() ? v[k] : 0.0); };
        switch (p.init.getKind()) {
        case nn::InitKind::uniform:
          os << "NNCC_MS_INIT_UNIFORM, " << at(0) << ", " << at(1);
          break;
        case nn::InitKind::normal:
          os << "NNCC_MS_INIT_NORMAL, " << at(0) << ", " << at(1);
          break;
        case nn::InitKind::constant:
          os << "NNCC_MS_INIT_CONSTANT, " << at(0) << ", 0";
          break;
        case nn::InitKind::zeros:
          os << "NNCC_MS_INIT_ZEROS, 0, 0";
          break;
        case nn::InitKind::ones:
          os << "NNCC_MS_INIT_ONES, 0, 0";
          break;
        }
      }
      os << "}, // " << p.name << "\n";
    }
    os << "};\n";
    // Optimizer groups (#nn.param_group): decay flag, exponent of layer_decay.
    os << "static const nncc_param_group kParamGroups[] = {\n";
    for (const ParamSig &p : params)
      os << "  {" << (p.decay ? 1 : 0) << ", " << p.lrDepth << "}, // " << p.name << "\n";
    os << "};\n";
  }
  return success();
}

FailureOr<bool> ModelEmitter::emitBufferPlan(raw_indented_ostream &os) {
  os << "\n// ---- buffer plan: arena slots, live ranges in launch order ----\n";
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].type && buffers[i].type.getRank())
      os << "static const int64_t kBufferDims" << i << "[] = "
         << dimsInitializer(dims, buffers[i].type.getDims()) << ";\n";
  if (!buffers.empty()) {
    os << "static const nncc_ms_buffer kBuffers[] = {\n";
    for (size_t i = 0; i < buffers.size(); ++i) {
      const PlannedBuffer &b = buffers[i];
      if (b.type) {
        FailureOr<std::string> ct = cType(forward, b.type.getElementType());
        if (failed(ct))
          return failure();
        os << "  {" << cString(b.name) << ", " << b.type.getRank() << ", "
           << (b.type.getRank() ? "kBufferDims" + std::to_string(i) : std::string("NULL"))
           << ", sizeof(" << *ct << "), " << b.first << ", " << b.last << "},\n";
      } else {
        os << "  {" << cString(b.name) << ", -1, NULL, 1, " << b.first << ", " << b.last
           << "},\n";
      }
    }
    os << "};\n";
  }
  // Workspace sizes.
  bool anyWs = false;
  for (const PlannedBuffer &b : buffers)
    anyWs |= !b.type;
  if (anyWs) {
    os << "static uint64_t workspace_bytes(int32_t index, const int64_t *dims) {\n";
    os.indent();
    for (size_t i = 0; i < dims.size(); ++i)
      os << "const int64_t d_" << cIdentifier(dims[i]) << " = dims[" << i << "];\n";
    for (size_t i = 0; i < dims.size(); ++i)
      os << "(void)d_" << cIdentifier(dims[i]) << ";\n";
    os << "switch (index) {\n";
    for (size_t i = 0; i < buffers.size(); ++i)
      if (!buffers[i].type)
        os << "case " << i << ": return (uint64_t)(" << buffers[i].workspaceBytes->str()
           << ");\n";
    os << "default: return 0;\n}\n";
    os.unindent();
    os << "}\n";
  }
  return anyWs;
}

void ModelEmitter::emitTrainConfig(raw_indented_ostream &os) {
  auto tr = module->getAttrOfType<nn::TrainAttr>("nn.train");
  if (!tr)
    tr = nn::TrainAttr::getDefault(module.getContext());
  nn::OptimizerAttr opt = tr.getOptimizer();
  nn::ScheduleAttr sch = tr.getSchedule();
  StringRef on = nn::stringifyOptimizerKind(opt.getKind());
  StringRef sn = nn::stringifyScheduleKind(sch.getKind());
  std::string optEnum = ("NNCC_OPTIM_" + on.upper());
  std::string schEnum = ("NNCC_SCHEDULE_" + sn.upper());
  os << "\n// ---- the train clause (nn.train), defaults filled ----\n";
  os << "static const nncc_train_config kTrainConfig = {\n";
  os.indent();
  os << optEnum << ", " << fmtDouble(opt.getLrValue()) << ", // optimizer " << on
     << ", lr\n";
  os << fmtDouble(opt.getBeta1Value()) << ", " << fmtDouble(opt.getBeta2Value()) << ", "
     << fmtDouble(opt.getEpsValue()) << ", // betas, eps\n";
  os << fmtDouble(opt.getWeightDecayValue()) << ", " << fmtDouble(opt.getMomentumValue())
     << ", " << (int)opt.getNesterov() << ", // weight_decay, momentum, nesterov\n";
  os << fmtDouble(tr.getClipValue()) << ", " << fmtDouble(tr.getLayerDecayValue())
     << ", // clip, layer_decay\n";
  os << schEnum << ", " << sch.getWarmup() << ", " << fmtDouble(sch.getWarmupFractionValue())
     << ", " << sch.getTotal() << ", " << fmtDouble(sch.getCyclesValue()) << ", "
     << sch.getStepSize() << ", " << fmtDouble(sch.getGammaValue())
     << ", // schedule " << sn << ": warmup, warmup_fraction, total, cycles, step_size, gamma\n";
  os << tr.getEpochs() << ", " << tr.getBatch() << ", " << tr.getSeed()
     << ", // epochs, batch, seed\n";
  os.unindent();
  os << "};\n";
}

void ModelEmitter::emitAbi(raw_indented_ostream &os, bool withCuda) {
  os << "\n// ---- the ABI ----\n";
  os << "static nncc_status forward_cpu(nncc_model *m, nncc_error *err);\n";
  if (train)
    os << "static nncc_status forward_train_cpu(nncc_model *m, nncc_error *err);\n"
       << "static nncc_status backward_cpu(nncc_model *m, nncc_error *err);\n";
  if (withCuda) {
    os << "extern \"C\" nncc_status nncc_" << modelName
       << "_forward_cuda(nncc_model *m, nncc_error *err);\n";
    os << "extern \"C\" nncc_status nncc_" << modelName
       << "_cuda_setup(nncc_model *m, void **state, nncc_error *err);\n";
    os << "extern \"C\" void nncc_" << modelName << "_cuda_teardown(void *state);\n";
    if (train) {
      for (const char *fn : {"forward_train_cuda", "backward_cuda"})
        os << "extern \"C\" nncc_status nncc_" << modelName << "_" << fn
           << "(nncc_model *m, nncc_error *err);\n";
      os << "extern \"C\" const char *nncc_" << modelName << "_cuda_train_unsupported(void);\n";
      os << "extern \"C\" nncc_status nncc_" << modelName
         << "_grad_sum_squares_cuda(nncc_model *m, double *out, nncc_error *err);\n";
      os << "extern \"C\" nncc_status nncc_" << modelName
         << "_update_cuda(nncc_model *m, const nncc_ms_cuda_update *u, nncc_error *err);\n";
      os << "extern \"C\" nncc_status nncc_" << modelName
         << "_grad_mean_cuda(nncc_model *m, void *const *means, int32_t mode, double alpha, "
            "nncc_error *err);\n";
    }
  }
  os << "static nncc_status create(nncc_target target, nncc_model **out, nncc_error *err);\n";
  os << "static const nncc_model_abi kAbi = {\n";
  os.indent();
  os << "NNCC_MODEL_ABI_VERSION, " << cString(modelName) << ", NNCC_PRECISION,\n";
  os << dims.size() << ", " << (dims.empty() ? "NULL" : "kDimNames") << ",\n";
  os << inputs.size() << ", " << (inputs.empty() ? "NULL" : "kInputs") << ",\n";
  os << outputs.size() << ", " << (outputs.empty() ? "NULL" : "kOutputs") << ",\n";
  os << params.size() << ", " << (params.empty() ? "NULL" : "kParams") << ",\n";
  os << "create, nncc_ms_destroy, nncc_ms_load_weights, nncc_ms_init_weights,\n"
     << "nncc_ms_save_weights, nncc_ms_set_input, nncc_ms_forward, nncc_ms_get_output,\n"
     << "nncc_ms_memory_stats,\n"
     << "nncc_ms_forward_train, nncc_ms_backward, nncc_ms_forward_backward,\n"
     << (train && !grads.empty() ? std::to_string(grads.size()) + ", kGrads,\n" : std::string("0, NULL,\n"))
     << (train && !grads.empty() ? "nncc_ms_train_step,\n" : "NULL, // train_step: compiled without gradients\n")
     << "&kTrainConfig, nncc_ms_train_stats, nncc_ms_reset_optimizer, nncc_ms_schedule_lr,\n"
     << "nncc_ms_param_group,\n"
     << (params.empty() ? "NULL" : "kParamGroups") << ",\n";
  auto table = [](const std::vector<TensorSig> &sigs, const char *name) {
    return sigs.empty() ? std::string("0, NULL") : std::to_string(sigs.size()) + ", " + name;
  };
  os << table(cotangents, "kCotangents") << ", " << table(inputGrads, "kInputGrads") << ", "
     << (cotangents.empty() ? "NULL" : "nncc_ms_set_cotangent")
     << ", // ABI 5: cotangents, input gradients, set_cotangent\n"
     << "nncc_ms_bind, nncc_ms_set_step,\n"
     << "nncc_ms_set_cuda_stream, // ABI 6\n"
     << "nncc_ms_save_train_state, nncc_ms_load_train_state, // ABI 7\n"
     << (train && !grads.empty()
             ? "nncc_ms_accumulate_gradients, nncc_ms_apply_gradients, // ABI 8\n"
             : "NULL, NULL, // ABI 8: compiled without gradients\n")
     << (inputs.empty() ? "NULL" : "kInferenceInputs") << ", // ABI 9\n"
     << "nncc_ms_set_seed, nncc_ms_set_sample_offset, // ABI 9: sample offset\n"
     << "nncc_ms_set_frozen, nncc_ms_get_frozen, // ABI 10: frozen parameters\n";
  os.unindent();
  os << "};\n";
}

void ModelEmitter::emitModelDef(raw_indented_ostream &os, bool withCuda, bool anyWorkspace) {
  os << "static const nncc_ms_model_def kDef = {\n";
  os.indent();
  os << "&kAbi, " << (params.empty() ? "NULL" : "kInits") << ", " << buffers.size() << ", "
     << (buffers.empty() ? "NULL" : "kBuffers") << ", "
     << (anyWorkspace ? "workspace_bytes" : "NULL") << ",\n";
  if (withCuda)
    os << "forward_cpu, nncc_" << modelName << "_forward_cuda, nncc_" << modelName
       << "_cuda_setup, nncc_" << modelName << "_cuda_teardown,\n";
  else
    os << "forward_cpu, NULL, NULL, NULL,\n";
  os << (train ? "forward_train_cpu, backward_cpu,\n" : "NULL, NULL,\n");
  os << trainBegin << ", " << boundaryIndex << ", " << numLaunches
     << ", // launches: forward [0, train_begin), forward_train, backward\n";
  if (withCuda && train) {
    std::string p = "nncc_" + modelName + "_";
    os << p << "forward_train_cuda, " << p << "backward_cuda, " << p
       << "cuda_train_unsupported,\n"
       << p << "grad_sum_squares_cuda, " << p << "update_cuda,\n";
  } else {
    os << "NULL, NULL, NULL, NULL, NULL, // no CUDA training\n";
  }
  os << (dims.empty() ? "NULL" : "kDimRanges") << ",\n";
  os << (withCuda && train ? "nncc_" + modelName + "_grad_mean_cuda" : std::string("NULL"))
     << ", // gradient accumulation on CUDA\n";
  os.unindent();
  os << "};\n";
  os << "static nncc_status create(nncc_target target, nncc_model **out, nncc_error *err) {\n"
     << "  return nncc_ms_create(&kDef, target, out, err);\n}\n\n";
  os << "extern \"C\" NNCC_MODEL_EXPORT const nncc_model_abi *nncc_model_get_abi(void) {\n"
     << "  return &kAbi;\n}\n";
  os << "extern \"C\" NNCC_MODEL_EXPORT const nncc_model_abi *nncc_" << modelName
     << "_get_abi(void) {\n  return &kAbi;\n}\n\n";
}

std::pair<std::vector<Operation *>, std::vector<Operation *>>
ModelEmitter::trainHalves() const {
  func::FuncOp fn = train;
  Block &tb = fn.getBody().front();
  auto isOutputCopy = [&](Operation &op) {
    auto copy = dyn_cast<nnk::CopyOp>(op);
    if (!copy)
      return false;
    return trainOutputs.contains(copy.getOut());
  };
  std::vector<Operation *> fwd, bwd;
  bool after = false;
  for (Operation &op : tb.without_terminator()) {
    if (&op == boundary) {
      after = true;
      continue;
    }
    (!after || isOutputCopy(op) ? fwd : bwd).push_back(&op);
  }
  return {fwd, bwd};
}

LogicalResult ModelEmitter::emitForwardPrologue(raw_indented_ostream &os,
                                                func::FuncOp fn) {
  if (!fn)
    fn = forward;
  os << "const int64_t *dims = nncc_ms_dims(m);\n(void)dims;\n";
  for (size_t i = 0; i < dims.size(); ++i)
    os << "const int64_t d_" << cIdentifier(dims[i]) << " = dims[" << i << "]; (void)d_"
       << cIdentifier(dims[i]) << ";\n";
  auto decl = [&](Value v, const std::string &init) -> LogicalResult {
    auto t = cast<nnk::BufferType>(v.getType());
    FailureOr<std::string> ct = cType(forward, t.getElementType());
    if (failed(ct))
      return failure();
    os << *ct << " *" << name(v) << " = (" << *ct << " *)" << init << "; (void)"
       << name(v) << ";\n";
    return success();
  };
  Block &body = fn.getBody().front();
  size_t in = 0, out = 0;
  for (BlockArgument arg : body.getArguments()) {
    bool isOut = fn.getArgAttr(arg.getArgNumber(), "nnk.output") != nullptr;
    // Inputs, then cotangents; outputs, then grad.<param>, then grad.<input>.
    auto call = [](const char *fn, size_t i) {
      return std::string(fn) + "(m, " + std::to_string(i) + ")";
    };
    std::string init;
    if (!isOut)
      init = in < inputs.size() ? call("nncc_ms_input", in)
                                : call("nncc_ms_cotangent", in - inputs.size());
    else if (out < outputs.size())
      init = call("nncc_ms_output", out);
    else if (out < outputs.size() + params.size())
      init = call("nncc_ms_grad", out - outputs.size());
    else
      init = call("nncc_ms_input_grad", out - outputs.size() - params.size());
    (isOut ? out : in)++;
    if (failed(decl(arg, init)))
      return failure();
  }
  // Weights and temporaries of nested regions too (a region's body is
  // emitted as a lambda that captures them).
  WalkResult r = fn.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (auto w = dyn_cast<nnk::WeightOp>(op)) {
      if (failed(decl(w.getResult(), "nncc_ms_param(m, " +
                                         std::to_string(paramIndex[w.getName()]) + ")")))
        return WalkResult::interrupt();
    } else if (auto a = dyn_cast<nnk::AllocOp>(op)) {
      std::string n = name(a.getResult());
      if (failed(decl(a.getResult(), "nncc_ms_buffer_ptr(m, " + n.substr(1) + ")")))
        return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

//===----------------------------------------------------------------------===//
// Elementwise bodies
//===----------------------------------------------------------------------===//

void ModelEmitter::emitMathPrelude(raw_indented_ostream &os, llvm::StringRef q,
                                   bool hostPolynomials) {
  os << "// Scalar math of generated elementwise kernels (float and double).\n";
  for (const char *t : {"float", "double"}) {
    std::string T = t;
    bool f = T == "float", poly = f && hostPolynomials;
    auto fn = [&](const char *name, const char *body) {
      os << q << " " << T << " nncc_" << name << "(" << T << " x) { return " << body
         << "; }\n";
    };
    fn("tanh", poly ? "nncc::kernels::ntanh(x)" : f ? "tanhf(x)" : "tanh(x)");
    fn("exp", poly ? "nncc::kernels::nexp(x)" : f ? "expf(x)" : "exp(x)");
    fn("log", f ? "logf(x)" : "log(x)");
    fn("erf", poly ? "nncc::kernels::nerf(x)" : f ? "erff(x)" : "erf(x)");
    fn("sqrt", f ? "sqrtf(x)" : "sqrt(x)");
    fn("abs", f ? "fabsf(x)" : "fabs(x)");
    os << q << " " << T << " nncc_maximum(" << T << " a, " << T
       << " b) { return (a != a || a > b) ? a : ((b != b) ? b : (a == b && a == 0 ? (signbit(a) ? b : a) : b)); }\n";
    os << q << " " << T << " nncc_minimum(" << T << " a, " << T
       << " b) { return (a != a || a < b) ? a : ((b != b) ? b : (a == b && a == 0 ? (signbit(a) ? a : b) : b)); }\n";
    os << q << " " << T << " nncc_pow(" << T << " a, " << T << " b) { return "
       << (f ? "powf(a, b)" : "pow(a, b)") << "; }\n";
  }
}

/// The C operator of a signed integer comparison; null for an unsigned one.
static const char *signedComparison(arith::CmpIPredicate p) {
  using P = arith::CmpIPredicate;
  switch (p) {
  case P::eq: return "==";
  case P::ne: return "!=";
  case P::slt: return "<";
  case P::sle: return "<=";
  case P::sgt: return ">";
  case P::sge: return ">=";
  default: return nullptr;
  }
}

/// C for a float comparison `a <p> b`: ordered predicates are false on NaN,
/// unordered ones true (the negation of the opposite ordered test).
static std::string floatComparison(arith::CmpFPredicate p, const std::string &a,
                                   const std::string &b) {
  using P = arith::CmpFPredicate;
  switch (p) {
  case P::OGT: return a + " > " + b;
  case P::OGE: return a + " >= " + b;
  case P::OLT: return a + " < " + b;
  case P::OLE: return a + " <= " + b;
  case P::OEQ: return a + " == " + b;
  case P::ONE: return "(" + a + " < " + b + " || " + a + " > " + b + ")";
  case P::UGT: return "!(" + a + " <= " + b + ")";
  case P::UGE: return "!(" + a + " < " + b + ")";
  case P::ULT: return "!(" + a + " >= " + b + ")";
  case P::ULE: return "!(" + a + " > " + b + ")";
  case P::UEQ: return "!(" + a + " < " + b + " || " + a + " > " + b + ")";
  case P::UNE: return a + " != " + b;
  case P::ORD: return "(" + a + " == " + a + " && " + b + " == " + b + ")";
  case P::UNO: return "(" + a + " != " + a + " || " + b + " != " + b + ")";
  case P::AlwaysTrue: return "true";
  case P::AlwaysFalse: return "false";
  }
  llvm_unreachable("unknown arith.cmpf predicate");
}

std::string ModelEmitter::elementwiseScalarType(Type t) {
  if (t.isInteger(1))
    return "bool";
  if (t.isInteger(32))
    return "int32_t";
  if (t.isInteger(64))
    return "int64_t";
  return kRealScalar;
}

FailureOr<std::pair<std::string, std::string>>
ModelEmitter::elementwiseConstant(arith::ConstantOp c) {
  if (auto fa = dyn_cast<FloatAttr>(c.getValue()))
    return std::make_pair(kRealScalar,
                          "(" + kRealScalar + ")" + fmtDouble(fa.getValueAsDouble()));
  if (auto ia = dyn_cast<IntegerAttr>(c.getValue())) {
    std::string type = elementwiseScalarType(ia.getType());
    return std::make_pair(type, ia.getType().isInteger(1)
                                    ? std::string(ia.getValue().isZero() ? "false" : "true")
                                    : "(" + type + ")" +
                                          std::to_string(ia.getValue().getSExtValue()) +
                                          (ia.getType().isInteger(64) ? "LL" : ""));
  }
  return c.emitError("unsupported constant in an elementwise body");
}

LogicalResult ModelEmitter::emitElementwiseBody(raw_indented_ostream &os,
                                                nnk::ElementwiseOp op,
                                                const std::string &out,
                                                const std::string &idx) {
  Region &region = op->getRegion(0);
  if (!region.hasOneBlock())
    return op.emitError("nnk.elementwise body must have one block");
  Block &block = region.front();
  llvm::DenseMap<Value, std::string> v;
  for (BlockArgument a : block.getArguments())
    v[a] = "a" + std::to_string(a.getArgNumber());
  int next = 0;
  for (Operation &inner : block) {
    auto operand = [&](unsigned k) { return v.lookup(inner.getOperand(k)); };
    auto def = [&](const std::string &type, const std::string &expr) {
      std::string n = "v" + std::to_string(next++);
      os << "const " << type << " " << n << " = " << expr << ";\n";
      v[inner.getResult(0)] = n;
    };
    auto result = [&] { return elementwiseScalarType(inner.getResult(0).getType()); };
    auto bin = [&](const char *o) {
      def(result(), "(" + operand(0) + " " + o + " " + operand(1) + ")");
    };
    auto call = [&](const char *f, unsigned n) {
      std::string e = std::string(f) + "(";
      for (unsigned k = 0; k < n; ++k)
        e += (k ? ", " : "") + operand(k);
      def(kRealScalar, e + ")");
    };
    if (auto y = dyn_cast<nnk::YieldOp>(inner)) {
      if (y->getNumOperands() != 1)
        return y.emitError("nnk.yield of an elementwise body must yield one value");
      // A float result is rounded to the storage type (a no-op but for bf16).
      const bool real = isa<FloatType>(y->getOperand(0).getType());
      os << out << "[" << idx << "] = " << (real ? "store_acc<real_t>(" : "") << operand(0)
         << (real ? ")" : "") << ";\n";
      continue;
    }
    if (auto c = dyn_cast<arith::ConstantOp>(inner)) {
      FailureOr<std::pair<std::string, std::string>> typed = elementwiseConstant(c);
      if (failed(typed))
        return failure();
      def(typed->first, typed->second);
      continue;
    }
    if (isa<arith::AddFOp, arith::AddIOp>(inner))
      bin("+");
    else if (isa<arith::SubFOp, arith::SubIOp>(inner))
      bin("-");
    else if (isa<arith::MulFOp, arith::MulIOp>(inner))
      bin("*");
    else if (isa<arith::DivFOp>(inner))
      bin("/");
    else if (isa<arith::NegFOp>(inner))
      def(kRealScalar, "(-" + operand(0) + ")");
    else if (isa<arith::MaximumFOp>(inner))
      call("nncc_maximum", 2);
    else if (isa<arith::MinimumFOp>(inner))
      call("nncc_minimum", 2);
    else if (isa<arith::MaxNumFOp>(inner))
      call("fmax", 2);
    else if (isa<arith::MinNumFOp>(inner))
      call("fmin", 2);
    else if (isa<arith::ExtFOp, arith::TruncFOp>(inner))
      def(kRealScalar, "(" + kRealScalar + ")" + operand(0));
    else if (isa<arith::SelectOp>(inner))
      def(result(), "(" + operand(0) + " ? " + operand(1) + " : " + operand(2) + ")");
    else if (isa<arith::SIToFPOp, arith::UIToFPOp, arith::FPToSIOp, arith::ExtSIOp,
                 arith::ExtUIOp, arith::TruncIOp>(inner))
      def(result(), "(" + result() + ")" + operand(0));
    else if (auto cmp = dyn_cast<arith::CmpIOp>(inner)) {
      const char *o = signedComparison(cmp.getPredicate());
      if (!o)
        return cmp.emitError("unsigned integer comparisons are not supported by "
                             "the emitters");
      def("bool", "(" + operand(0) + " " + o + " " + operand(1) + ")");
    }
    else if (auto cmp = dyn_cast<arith::CmpFOp>(inner)) {
      def("bool", "(" + floatComparison(cmp.getPredicate(), operand(0), operand(1)) + ")");
    } else if (isa<math::TanhOp>(inner))
      call("nncc_tanh", 1);
    else if (isa<math::ExpOp>(inner))
      call("nncc_exp", 1);
    else if (isa<math::LogOp>(inner))
      call("nncc_log", 1);
    else if (isa<math::ErfOp>(inner))
      call("nncc_erf", 1);
    else if (isa<math::SqrtOp>(inner))
      call("nncc_sqrt", 1);
    else if (isa<math::AbsFOp>(inner))
      call("nncc_abs", 1);
    else if (isa<math::PowFOp>(inner))
      call("nncc_pow", 2);
    else
      return inner.emitError() << "'" << inner.getName()
                               << "' in an nnk.elementwise body is not supported by "
                                  "the emitters";
  }
  return success();
}

} // namespace nncc::target
