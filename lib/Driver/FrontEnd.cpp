//===- FrontEnd.cpp - Source file -> verified nn module -------------------===//

#include "nncc/Driver/FrontEnd.h"
#include "nncc/Driver/Support.h"

#include "nncc/Frontend/Diagnostics.h"
#include "nncc/Frontend/MLIRGen.h"
#include "nncc/Frontend/Parser.h"

#include "dialects/NNK/IR/NNKDialect.h"
#include "dialects/NN/IR/NNDialect.h"
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
  // A budget also fuses the loss heads (nn.linear_cross_entropy).
  std::string ids;
  for (int64_t id : chosen.recompute)
    ids += (ids.empty() ? "" : ",") + std::to_string(id);
  return "fused-heads;" + ids;
}

LogicalResult driver::runPipeline(ModuleOp module, GradKind grad, bool trainMode,
                                  PipelineStage stop, RematRequest &remat,
                                  llvm::StringRef what) {
  // A budget fuses the loss heads (no [..., V] logits gradient in the
  // arena); without one, the training step keeps everything as written.
  bool fuse = remat.budget.kind != MemoryBudget::Kind::Unlimited;
  if (failed(runPipeline(module, grad, trainMode, PipelineStage::NN, what, fuse)))
    return failure();
  FailureOr<RematPlan> plan = applyMemoryBudget(module, remat.budget, remat.search);
  if (failed(plan))
    return failure();
  remat.chosen = *plan;
  return runPipeline(module, GradKind::None, trainMode, stop, what);
}
