//===- Pipeline.cpp - The nncc pass pipeline ------------------------------===//

#include "nncc/Pipeline/Pipeline.h"

#include "dialects/NN/IR/NNTypes.h"
#include "dialects/NN/Transforms/Passes.h"
#include "nncc/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void nncc::buildNNCCPipeline(OpPassManager &pm,
                             const NNCCPipelineOptions &options) {
  if (options.grad) {
    nn::NNAutodiffOptions autodiff;
    autodiff.regularizersActive = options.trainMode;
    autodiff.vjp = options.vjp;
    autodiff.fuseLossHeads = options.fuseLossHeads;
    pm.addPass(nn::createNNAutodiff(autodiff));
  }
  if (options.stop == PipelineStage::NN)
    return;
  OpPassManager &fn = pm.nest<func::FuncOp>();
  fn.addPass(createNNInsertTrainingBoundary());
  fn.addPass(nn::createNNInferenceSemantics());
  pm.addPass(nn::createNNExpandReversible());
  pm.addPass(createConvertNNToNNK());
  pm.addPass(createNNKForwardDestinations());
}

void nncc::registerNNCCPipeline() {
  PassPipelineRegistration<NNCCPipelineOptions>(
      "nncc-pipeline",
      "The nncc pipeline from a verified nn module: [nncc-autodiff], then "
      "the nn-level preparation, convert-nn-to-nnk and "
      "nnk-forward-destinations",
      buildNNCCPipeline);
}

bool nncc::isNNKModule(ModuleOp module) {
  auto isTensor = [](Type t) { return isa<nn::TensorType>(t); };
  for (auto fn : module.getOps<func::FuncOp>()) {
    FunctionType type = fn.getFunctionType();
    if (llvm::any_of(type.getInputs(), isTensor) ||
        llvm::any_of(type.getResults(), isTensor))
      return false;
  }
  return true;
}
