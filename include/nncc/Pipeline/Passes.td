//===- Passes.td - passes of the nncc pipeline ---------------*- tablegen -*-===//
#ifndef NNCC_PIPELINE_PASSES_TD
#define NNCC_PIPELINE_PASSES_TD

include "mlir/Pass/PassBase.td"

def NNCCRemat : Pass<"nncc-remat", "::mlir::ModuleOp"> {
  let summary = "Recompute residuals of @forward_backward so that the "
                "training step's memory plan fits a budget";
  let description = [{
    On a differentiated `nn` module (after `nncc-autodiff`): chooses which
    forward values the backward reads are kept across the forward/backward
    boundary and which are recomputed (`nn.save` values cloned into the
    backward, reserves of fused recurrent / attention ops dropped so that
    their gradient ops recompute them; see `nn-remat-apply`), such that the
    exact memory plan of the lowered training step (the arena high-water
    mark `nncc inspect --memory --grad` reports for the `dims` binding)
    does not exceed `budget`, with the least recomputation among the plans
    it considers (nncc/Pipeline/RematSearch.h: every subset for at most 12
    candidates, else the prefixes of a cost-model order, and for at most 20
    the greedy path, pruned prefixes and a walk in order of FLOPs), each
    with its recomputation chains cloned per save or shared between saves
    (`nn-remat-apply`'s `share-chains`, except that a clone the lowering
    fuses into its consumer is not shared). Reversible
    blocks reconstruct their inputs (the `nn.reversible` rule): storing
    them instead is decided before differentiation, so this pass cannot
    make that choice on a module already differentiated; the compiler
    driver (`nncc --memory-budget`) plans forms of the model with the last
    k blocks stored (`nn::storeReversibleBlocks`) and runs this search on
    each. ODE solves keep the adjoint / stored-steps choice of the model.

    `budget`: bytes, `NNNKiB`, `NNNMiB`, `NNNGiB`, or `min` (the smallest
    peak any considered plan reaches). Empty: nothing changes. Fails with
    an error naming the smallest feasible budget when no plan fits.
  }];
  let options = [
    Option<"budget", "budget", "std::string", "\"\"",
           "The memory budget of the training step's arena">,
    ListOption<"dims", "dims", "std::string",
               "NAME=SIZE for every symbolic dim: the binding the budget is for">,
    Option<"f64", "f64", "bool", "false",
           "Plan for double-precision CPU code (sizeof(real_t) = 8)">,
  ];
  let dependentDialects = ["::nncc::nn::NNDialect",
                           "::mlir::func::FuncDialect"];
}

#endif // NNCC_PIPELINE_PASSES_TD
