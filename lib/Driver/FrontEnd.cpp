//===- FrontEnd.cpp - Source file -> verified nn module -------------------===//

#include "nncc/Driver/FrontEnd.h"
#include "nncc/Driver/RematPlanCache.h"
#include "nncc/Driver/Support.h"

#include "nncc/Frontend/Diagnostics.h"
#include "nncc/Frontend/MLIRGen.h"
#include "nncc/Frontend/Parser.h"

#include "dialects/NNK/IR/NNKDialect.h"
#include "dialects/NN/IR/NNDialect.h"
#include "dialects/NN/IR/NNOps.h"
#include "dialects/NN/Transforms/GradientRules.h"

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
  auto bufOrErr = llvm::MemoryBuffer::getFileOrSTDIN(path);
  if (std::error_code ec = bufOrErr.getError()) {
    fail("cannot read '" + path + "': " + ec.message());
    return std::nullopt;
  }
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
  return (fusedHeads ? "fused-heads;" : "heads-as-written;") + ids;
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
    return runPipeline(module, GradKind::None, trainMode, stop, what);
  }
  OwningOpRef<ModuleOp> fused(cast<ModuleOp>(module->clone()));
  if (failed(runPipeline(module, grad, trainMode, PipelineStage::NN, what)))
    return failure();
  // Under a budget the loss heads may be fused (nn.linear_cross_entropy: no
  // [..., V] logits or their gradient in the arena, but the head's weight
  // gradient is held from the forward to the backward, which costs more
  // than it saves on small batches). Both forms are planned; the better one
  // for the budget wins: `min` the smaller peak, a size the fewer FLOPs.
  // Each form's plans do not depend on the budget, so neither does their
  // union, and a larger budget still never recomputes more.
  bool tryFused = grad != GradKind::VJP &&
                  succeeded(runPipeline(*fused, grad, trainMode, PipelineStage::NN, "",
                                        /*fuseLossHeads=*/true));
  if (tryFused) {
    bool any = false;
    fused->walk([&](nn::LinearCrossEntropyOp) { any = true; });
    tryFused = any;
  }
  // The same model, binding and budget were searched before: the choice is
  // in the cache (RematPlanCache.h).
  std::string choiceKey =
      rematChoiceKey(module, tryFused ? *fused : ModuleOp(), remat.budget, remat.search);
  std::optional<RematChoice> cached = loadRematChoice(choiceKey);
  FailureOr<RematPlan> plan = failure();
  if (cached) {
    remat.fusedHeads = cached->fusedHeads && tryFused;
    if (remat.fusedHeads)
      module.getBodyRegion().takeBody(fused->getBodyRegion());
    plan = cached->plan;
  } else if (!tryFused) {
    plan = chooseRemat(module, remat.budget, remat.search);
  } else {
    // Each form's searches share their exact plans (an infeasible budget
    // searches each form again for `min`, and once more for the error).
    RematMemo writtenMemo, fusedMemo;
    auto quietly = [&](ModuleOp m, const MemoryBudget &b) {
      ScopedDiagnosticHandler quiet(module.getContext(), [](Diagnostic &) { return success(); });
      RematSearchOptions search = remat.search;
      search.memo = m == module ? &writtenMemo : &fusedMemo;
      return chooseRemat(m, b, search);
    };
    FailureOr<RematPlan> asWritten = quietly(module, remat.budget);
    FailureOr<RematPlan> withFused = quietly(*fused, remat.budget);
    if (failed(asWritten) && failed(withFused)) {
      // Infeasible for both: the error names the smaller of their minima.
      MemoryBudget min;
      min.kind = MemoryBudget::Kind::Min;
      FailureOr<RematPlan> minWritten = quietly(module, min), minFused = quietly(*fused, min);
      bool fusedSmaller = succeeded(minFused) &&
                          (failed(minWritten) || minFused->peakBytes < minWritten->peakBytes);
      RematSearchOptions search = remat.search;
      search.memo = fusedSmaller ? &fusedMemo : &writtenMemo;
      (void)chooseRemat(fusedSmaller ? *fused : module, remat.budget, search);
      return failure();
    }
    auto better = [&](const RematPlan &a, const RematPlan &b) {
      if (remat.budget.kind == MemoryBudget::Kind::Min)
        return a.peakBytes < b.peakBytes || (a.peakBytes == b.peakBytes && a.flops < b.flops);
      return a.flops < b.flops || (a.flops == b.flops && a.peakBytes < b.peakBytes);
    };
    remat.fusedHeads = succeeded(withFused) &&
                       (failed(asWritten) || better(*withFused, *asWritten));
    if (remat.fusedHeads) {
      module.getBodyRegion().takeBody(fused->getBodyRegion());
      plan = withFused;
    } else {
      plan = asWritten;
    }
  }
  if (failed(plan))
    return failure();
  if (!cached)
    storeRematChoice(choiceKey, {remat.fusedHeads, *plan});
  FailureOr<RematPlan> applied = applyRematPlan(module, *plan, remat.search);
  if (failed(applied))
    return failure();
  remat.chosen = *applied;
  return runPipeline(module, GradKind::None, trainMode, stop, what);
}
