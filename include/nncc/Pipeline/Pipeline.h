//===- Pipeline.h - The nncc pass pipeline ----------------------*- C++ -*-===//
//
// One pipeline from a verified nn module (the front end's, or a .mlir file)
// to the nnk module the emitters print:
//
//   [nncc-autodiff]                     grad=1: adds @forward_backward (vjp=1: the VJP;
//                                       fuse-loss-heads=1: nn.linear_cross_entropy)
//   -- stop=nn ends here (with grad: the `--emit nn-grad` module) --
//   nn-insert-training-boundary         (func) nnk.boundary after the residuals (none:
//                                       after the forward), before any cotangent reader
//   nn-inference-semantics              (func) dropout/zoneout off outside training
//   nn-expand-reversible                reversible blocks inline, split(concat) folded
//   convert-nn-to-nnk                   fused kernels over buffers
//   nnk-forward-destinations            producers write into the outputs
//
// Registered in nncc-opt as --nncc-pipeline="grad=1 train-mode=0 stop=nnk";
// used by every nncc subcommand.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_PIPELINE_PIPELINE_H
#define NNCC_PIPELINE_PIPELINE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace nncc {

/// Where the pipeline stops.
enum class PipelineStage {
  NN,  // the nn module (with @forward_backward when grad)
  NNK, // lowered to nnk kernels
};

struct NNCCPipelineOptions
    : public mlir::PassPipelineOptions<NNCCPipelineOptions> {
  Option<bool> grad{*this, "grad",
                    llvm::cl::desc("Differentiate @forward (nncc-autodiff): "
                                   "add @forward_backward"),
                    llvm::cl::init(false)};
  Option<bool> vjp{*this, "vjp",
                   llvm::cl::desc("With grad: the vector-Jacobian product "
                                  "(cotangent arguments for every float "
                                  "result, grad.<input> for every float "
                                  "input) instead of the loss gradient"),
                   llvm::cl::init(false)};
  Option<bool> fuseLossHeads{
      *this, "fuse-loss-heads",
      llvm::cl::desc("With grad (not vjp): fuse a linear that feeds only a "
                     "cross_entropy into nn.linear_cross_entropy in "
                     "@forward_backward (chunked; no [..., V] logits "
                     "gradient in the arena)"),
      llvm::cl::init(false)};
  Option<bool> trainMode{
      *this, "train-mode",
      llvm::cl::desc("With grad: the loss of training mode (dropout and "
                     "zoneout active, fixed seeds); false: the inference-mode "
                     "loss (nn.eval_mode)"),
      llvm::cl::init(true)};
  Option<PipelineStage> stop{
      *this, "stop", llvm::cl::desc("The last stage"),
      llvm::cl::init(PipelineStage::NNK),
      llvm::cl::values(
          clEnumValN(PipelineStage::NN, "nn",
                     "the nn module (nn-grad with grad=1)"),
          clEnumValN(PipelineStage::NNK, "nnk", "the nnk module"))};
};

/// Adds the passes from a verified nn module to `options.stop` to `pm`
/// (a pass manager on builtin.module).
void buildNNCCPipeline(mlir::OpPassManager &pm,
                       const NNCCPipelineOptions &options);

/// Registers --nncc-pipeline (for nncc-opt).
void registerNNCCPipeline();

/// True when no function of `module` takes or returns nn tensors, i.e. it
/// is already at the nnk stage (a .mlir input to the back end).
bool isNNKModule(mlir::ModuleOp module);

} // namespace nncc

#endif // NNCC_PIPELINE_PIPELINE_H
