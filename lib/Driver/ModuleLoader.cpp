//===- ModuleLoader.cpp - Source file -> verified nn module ---------------===//

#include "nncc/Driver/ModuleLoader.h"
#include "nncc/Driver/RematPlanCache.h"
#include "nncc/Driver/Support.h"

#include "nncc/Frontend/Diagnostics.h"
#include "nncc/Frontend/MLIRGen.h"
#include "nncc/Frontend/Parser.h"

#include "dialects/NNK/IR/NNKDialect.h"
#include "dialects/NN/IR/NNDialect.h"
#include "dialects/NN/IR/NNOps.h"
#include "dialects/NN/Transforms/GradientRules.h"
#include "dialects/NN/Transforms/Remat.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::frontend;

void driver::prepareContext(MLIRContext &context) {
  context.disableMultithreading();
  DialectRegistry registry;
  registry.insert<nn::NNDialect, nnk::NNKDialect, func::FuncDialect,
                  arith::ArithDialect, math::MathDialect>();
  nn::registerNNGradientInterfaces(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
}

std::optional<unsigned> driver::readSourceFile(llvm::SourceMgr &sourceMgr,
                                               llvm::StringRef path) {
  // A FIFO or device would block the read or never end it ("-": stdin).
  if (path != "-" && checkInputPath("the model", path.str()))
    return std::nullopt;
  auto bufOrErr = llvm::MemoryBuffer::getFileOrSTDIN(path);
  if (std::error_code ec = bufOrErr.getError()) {
    fail("cannot read '" + path + "': " + ec.message());
    return std::nullopt;
  }
  // The name every diagnostic and location shows: control characters of a
  // file name escaped, so a name cannot forge a line of nncc's output.
  std::string shown = printable(path);
  if (shown != path)
    *bufOrErr = llvm::MemoryBuffer::getMemBufferCopy((*bufOrErr)->getBuffer(), shown);
  return sourceMgr.AddNewSourceBuffer(std::move(*bufOrErr), llvm::SMLoc());
}

driver::CheckedModel driver::checkModel(MLIRContext &context,
                                        llvm::SourceMgr &sourceMgr,
                                        unsigned bufId) {
  const llvm::MemoryBuffer *buf = sourceMgr.getMemoryBuffer(bufId);
  DiagEngine diag(context, buf->getBufferIdentifier());
  CheckedModel checked;
  checked.ast = parseBuffer(buf->getBuffer(), diag);
  if (checked.ast)
    checked.model = analyzeModel(*checked.ast, diag);
  return checked;
}

OwningOpRef<ModuleOp> driver::loadModule(MLIRContext &context,
                                         llvm::SourceMgr &sourceMgr,
                                         llvm::StringRef path,
                                         std::string *source) {
  std::optional<unsigned> bufId = readSourceFile(sourceMgr, path);
  if (!bufId)
    return nullptr;
  const llvm::MemoryBuffer *buf = sourceMgr.getMemoryBuffer(*bufId);
  if (source)
    *source = buf->getBuffer().str();
  if (path.ends_with(".mlir")) {
    auto module = parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module || failed(verify(*module)))
      return nullptr;
    return module;
  }
  CheckedModel checked = checkModel(context, sourceMgr, *bufId);
  if (!checked.model)
    return nullptr;
  DiagEngine diag(context, buf->getBufferIdentifier());
  return mlirGen(context, *checked.model, diag);
}

LogicalResult driver::runPipeline(ModuleOp module, GradKind grad, bool trainMode,
                                  PipelineStage stop, llvm::StringRef what,
                                  bool fuseLossHeads) {
  // Two runs of the same pipeline, so that a failure to differentiate can
  // be told from a failure to lower. A module that already has
  // @forward_backward (`--emit nn-grad` output, possibly rewritten by
  // nncc-opt) is not differentiated again.
  if (grad != GradKind::None && !module.lookupSymbol<func::FuncOp>("forward_backward")) {
    PassManager pm(module.getContext());
    NNCCPipelineOptions options;
    options.grad = true;
    options.vjp = grad == GradKind::VJP;
    options.fuseLossHeads = fuseLossHeads;
    options.trainMode = trainMode;
    options.stop = PipelineStage::NN;
    buildNNCCPipeline(pm, options);
    if (failed(pm.run(module))) {
      if (!what.empty())
        fail("cannot differentiate model '" + what + "'");
      return failure();
    }
  }
  if (stop == PipelineStage::NN || isNNKModule(module))
    return success();
  PassManager pm(module.getContext());
  NNCCPipelineOptions options;
  options.stop = PipelineStage::NNK;
  buildNNCCPipeline(pm, options);
  return pm.run(module);
}

std::string driver::RematRequest::key() const {
  if (budget.kind == MemoryBudget::Kind::Unlimited)
    return "";
  std::string ids;
  for (int64_t id : chosen.recompute)
    ids += (ids.empty() ? "" : ",") + std::to_string(id);
  for (auto [id, snapshots] : chosen.bpttSnapshots)
    ids += ";binomial:" + std::to_string(id) + "=" + std::to_string(snapshots);
  if (chosen.shareChains)
    ids += ";shared-chains";
  if (chosen.storedReversible)
    ids += ";stored-reversible:" + std::to_string(chosen.storedReversible);
  return (fusedHeads ? "fused-heads;" : "heads-as-written;") + ids;
}

static SmallVector<nn::ReversibleOp> topLevelReversibles(ModuleOp module) {
  auto fn = module.lookupSymbol<func::FuncOp>("forward");
  return fn ? nn::topLevelReversibleBlocks(fn) : SmallVector<nn::ReversibleOp>();
}

static double formReconstructFlops(ModuleOp module, const RematSearchOptions &search) {
  auto fn = module.lookupSymbol<func::FuncOp>("forward_backward");
  if (!fn)
    return 0;
  nn::RematCostEnv env;
  env.dims = search.dims;
  env.realSize = search.realSize;
  return nn::reconstructionFlops(fn, env);
}

namespace {
/// One form of the model that the budget's search plans: its loss heads as
/// written or fused (nn.linear_cross_entropy), and the last `stored`
/// top-level reversible blocks of @forward stored instead of reconstructed
/// (nn::storeReversibleBlocks). Each form is differentiated on its own.
struct RematForm {
  OwningOpRef<ModuleOp> owned; // null for the module being compiled
  ModuleOp module;
  bool fusedHeads = false;
  unsigned stored = 0;
  double reconstructFlops = 0;
  RematMemo memo;
};

/// The forms of one model under a memory budget and the choice among them.
///
/// Under a budget the loss heads may be fused (no [..., V] logits or their
/// gradient in the arena, but the head's weight gradient is held from the
/// forward to the backward, which costs more than it saves on small
/// batches), and reversible blocks may be stored (no reconstruction in the
/// backward, their activations held instead). Every form is planned; the
/// best one for the budget wins: `min` the smaller peak, a size the fewer
/// FLOPs (recomputation and reconstruction). Each form's plans do not
/// depend on the budget, so neither does their union, and a larger budget
/// still never recomputes more.
class RematForms {
public:
  RematForms(ModuleOp source, driver::GradKind grad, bool trainMode,
             const RematSearchOptions &search)
      : source(source), grad(grad), trainMode(trainMode), search(search) {}

  RematForm &add(OwningOpRef<ModuleOp> owned, ModuleOp module, bool fusedHeads,
                 unsigned stored) {
    auto form = std::make_unique<RematForm>();
    form->owned = std::move(owned);
    form->module = module;
    form->fusedHeads = fusedHeads;
    form->stored = stored;
    form->reconstructFlops = formReconstructFlops(module, search);
    forms.push_back(std::move(form));
    return *forms.back();
  }

  /// The source (not differentiated) with its last `stored` reversible
  /// blocks stored and its heads as `fusedHeads` says, differentiated; null
  /// when that form cannot be built (quietly: the form is then not planned).
  OwningOpRef<ModuleOp> build(bool fusedHeads, unsigned stored) {
    ScopedDiagnosticHandler quiet(source.getContext(), [](Diagnostic &) { return success(); });
    OwningOpRef<ModuleOp> form(cast<ModuleOp>(source->clone()));
    SmallVector<nn::ReversibleOp> blocks = topLevelReversibles(*form);
    if (stored > blocks.size() ||
        failed(nn::storeReversibleBlocks(ArrayRef(blocks).take_back(stored))) ||
        failed(driver::runPipeline(*form, grad, trainMode, PipelineStage::NN, "", fusedHeads)))
      return nullptr;
    return form;
  }

  /// Adds the forms storing 1..`reversibles` blocks, with the heads as
  /// written and, when `fused`, fused; `only` (fusedHeads, stored) limits
  /// them to that one.
  void addStoredForms(unsigned reversibles, bool fused,
                      std::optional<std::pair<bool, unsigned>> only) {
    for (bool fusedHeads : {false, true})
      for (unsigned stored = 1; stored <= reversibles; ++stored) {
        if ((fusedHeads && !fused) || (only && *only != std::make_pair(fusedHeads, stored)))
          continue;
        if (OwningOpRef<ModuleOp> form = build(fusedHeads, stored)) {
          ModuleOp m = *form;
          add(std::move(form), m, fusedHeads, stored);
        }
      }
  }

  RematForm *find(bool fusedHeads, unsigned stored) const {
    for (const auto &form : forms)
      if (form->fusedHeads == fusedHeads && form->stored == stored)
        return form.get();
    return nullptr;
  }
  size_t size() const { return forms.size(); }
  RematForm &front() const { return *forms.front(); }
  RematForm &back() const { return *forms.back(); }

  /// The form's best plan within `budget`. A form with stored blocks has
  /// one plan: every other residual kept. So a budget recomputes residuals
  /// only while it cannot keep them all, and stores blocks only beyond
  /// that: any stored form that fits costs fewer FLOPs than every plan that
  /// reconstructs all blocks, and the recomputation, like the
  /// reconstruction, only shrinks as budgets grow.
  FailureOr<RematPlan> plan(RematForm &form, const MemoryBudget &budget) {
    RematSearchOptions formSearch = searchOf(form);
    if (!form.stored)
      return chooseRemat(form.module, budget, formSearch);
    FailureOr<RematPlan> keepAll = form.memo.get(form.module, {}, formSearch);
    if (failed(keepAll) ||
        (budget.kind == MemoryBudget::Kind::Bytes && keepAll->peakBytes > budget.bytes))
      return failure();
    return keepAll;
  }

  /// The best plan over every form and its form; when no form fits, the
  /// infeasible budget's error, from the search of the form with the
  /// smallest minimum (a form without stored blocks: a stored form's one
  /// plan is never smaller than its sibling's keeping everything). Each
  /// form's searches share their exact plans through its memo.
  FailureOr<std::pair<RematPlan, RematForm *>> choose(const MemoryBudget &budget) {
    auto [plan, where] = bestOf(budget, /*withStored=*/true);
    if (succeeded(plan))
      return std::make_pair(*plan, where);
    MemoryBudget min;
    min.kind = MemoryBudget::Kind::Min;
    RematForm *smallest = bestOf(min, /*withStored=*/false).second;
    if (!smallest)
      smallest = &front();
    (void)chooseRemat(smallest->module, budget, searchOf(*smallest));
    return failure();
  }

private:
  RematSearchOptions searchOf(RematForm &form) const {
    RematSearchOptions formSearch = search;
    formSearch.memo = &form.memo;
    return formSearch;
  }

  static double totalFlops(const RematPlan &p) { return p.flops + p.reconstructFlops; }
  /// Whether `a` is the better plan for `budget`: `min` the smaller peak,
  /// else the fewer FLOPs (ties the other way).
  static bool better(const MemoryBudget &budget, const RematPlan &a, const RematPlan &b) {
    if (budget.kind == MemoryBudget::Kind::Min)
      return a.peakBytes < b.peakBytes ||
             (a.peakBytes == b.peakBytes && totalFlops(a) < totalFlops(b));
    return totalFlops(a) < totalFlops(b) ||
           (totalFlops(a) == totalFlops(b) && a.peakBytes < b.peakBytes);
  }

  std::pair<FailureOr<RematPlan>, RematForm *> bestOf(const MemoryBudget &budget,
                                                      bool withStored) {
    FailureOr<RematPlan> best = failure();
    RematForm *where = nullptr;
    for (const auto &form : forms) {
      if (form->stored && !withStored)
        continue;
      FailureOr<RematPlan> p = [&] {
        ScopedDiagnosticHandler quiet(source.getContext(),
                                      [](Diagnostic &) { return success(); });
        return plan(*form, budget);
      }();
      if (failed(p))
        continue;
      p->reconstructFlops = form->reconstructFlops;
      if (failed(best) || better(budget, *p, *best)) {
        best = p;
        where = form.get();
      }
    }
    return {best, where};
  }

  ModuleOp source;
  driver::GradKind grad;
  bool trainMode;
  RematSearchOptions search;
  SmallVector<std::unique_ptr<RematForm>> forms;
};
} // namespace

/// Whether a choice read from the cache (RematPlanCache.h) may be used: an
/// entry is only a hint, so its plan is planned again on `form` and taken
/// only when that gives the peak the entry records and, for a size, fits
/// within the budget (an edited or stale entry is searched again).
static bool cachedChoiceHolds(ModuleOp form, const RematPlan &cached,
                              const driver::RematRequest &remat) {
  ScopedDiagnosticHandler quiet(form.getContext(), [](Diagnostic &) { return success(); });
  RematSearchOptions options = remat.search;
  options.bpttSnapshots = cached.bpttSnapshots;
  options.shareChains = cached.shareChains;
  options.memo = nullptr;
  FailureOr<RematPlan> planned = evaluateRemat(form, cached.recompute, options);
  if (failed(planned) || planned->peakBytes != cached.peakBytes)
    return false;
  return remat.budget.kind != MemoryBudget::Kind::Bytes ||
         planned->peakBytes <= remat.budget.bytes;
}

LogicalResult driver::runPipeline(ModuleOp module, GradKind grad, bool trainMode,
                                  PipelineStage stop, RematRequest &remat,
                                  llvm::StringRef what) {
  remat.fusedHeads = false;
  if (remat.budget.kind == MemoryBudget::Kind::Unlimited) {
    // Everything kept, as written: only the report.
    if (failed(runPipeline(module, grad, trainMode, PipelineStage::NN, what)))
      return failure();
    FailureOr<RematPlan> plan = applyMemoryBudget(module, remat.budget, remat.search);
    if (failed(plan))
      return failure();
    remat.chosen = *plan;
    remat.chosen.reconstructFlops = formReconstructFlops(module, remat.search);
    return runPipeline(module, GradKind::None, trainMode, stop, what);
  }
  // Forms other than the one as written are built from the source (a module
  // already differentiated has only that one).
  bool differentiate = grad != GradKind::None &&
                       !module.lookupSymbol<func::FuncOp>("forward_backward");
  OwningOpRef<ModuleOp> source(cast<ModuleOp>(module->clone()));
  if (failed(runPipeline(module, grad, trainMode, PipelineStage::NN, what)))
    return failure();
  RematForms forms(*source, grad, trainMode, remat.search);
  forms.add(nullptr, module, false, 0);
  unsigned reversibles = differentiate ? topLevelReversibles(*source).size() : 0;
  bool tryFused = differentiate && grad != GradKind::VJP;
  if (tryFused) {
    OwningOpRef<ModuleOp> fused = forms.build(/*fusedHeads=*/true, 0);
    bool any = false;
    if (fused)
      fused->walk([&](nn::LinearCrossEntropyOp) { any = true; });
    // Without a head to fuse, the fused forms are the written ones.
    tryFused = any;
    if (any) {
      ModuleOp m = *fused;
      forms.add(std::move(fused), m, true, 0);
    }
  }
  // The same model, binding and budget were searched before: the choice is
  // in the cache (RematPlanCache.h), and only its form is built.
  std::string choiceKey = rematChoiceKey(module, tryFused ? forms.back().module : ModuleOp(),
                                         remat.budget, remat.search);
  std::optional<RematChoice> cached = loadRematChoice(choiceKey);
  RematForm *chosenForm = nullptr;
  FailureOr<RematPlan> plan = failure();
  if (cached && (!cached->fusedHeads || tryFused) &&
      cached->plan.storedReversible <= reversibles) {
    forms.addStoredForms(reversibles, tryFused,
                         std::make_pair(cached->fusedHeads, cached->plan.storedReversible));
    if ((chosenForm = forms.find(cached->fusedHeads, cached->plan.storedReversible)) &&
        cachedChoiceHolds(chosenForm->module, cached->plan, remat))
      plan = cached->plan;
    else
      chosenForm = nullptr;
  }
  bool fromCache = chosenForm != nullptr;
  if (!fromCache) {
    forms.addStoredForms(reversibles, tryFused, std::nullopt);
    if (forms.size() == 1) {
      chosenForm = &forms.front();
      plan = chooseRemat(module, remat.budget, remat.search);
    } else {
      FailureOr<std::pair<RematPlan, RematForm *>> choice = forms.choose(remat.budget);
      if (failed(choice))
        return failure();
      std::tie(plan, chosenForm) = *choice;
    }
  }
  if (failed(plan))
    return failure();
  plan->storedReversible = chosenForm->stored;
  plan->reconstructFlops = chosenForm->reconstructFlops;
  if (!fromCache)
    storeRematChoice(choiceKey, {chosenForm->fusedHeads, *plan});
  remat.fusedHeads = chosenForm->fusedHeads;
  if (chosenForm->module != module)
    module.getBodyRegion().takeBody(chosenForm->module.getBodyRegion());
  FailureOr<RematPlan> applied = applyRematPlan(module, *plan, remat.search);
  if (failed(applied))
    return failure();
  remat.chosen = *applied;
  return runPipeline(module, GradKind::None, trainMode, stop, what);
}
