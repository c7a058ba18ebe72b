//===- Passes.td - nn dialect passes -------------------------*- tablegen -*-===//

#ifndef NNCC_DIALECT_NN_TRANSFORMS_PASSES_TD
#define NNCC_DIALECT_NN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def NNInferShapes : Pass<"nn-infer-shapes"> {
  let summary = "Refine result types by re-running each op's type inference";
  let description = [{
    Walks the IR in order and replaces the result types of every op that
    implements `InferTypeOpInterface` by the types it infers from its current
    operands, attributes and regions (`nncc::nn::inferResultTypesInPlace`).
    Producers are visited before their users, so refined types propagate:
    for example `?` dims become symbols or sizes once the operands are known.
    The block arguments of `nn.reversible`, `nn.odesolve` and `nn.ode_rnn`
    regions are refined to the types the op expects before their bodies are
    visited. Afterwards the result types of each `func.func` are set to the
    types its single `func.return` returns.

    Fails, with the error emitted at the offending op, when some op's
    operands do not fit its shape rules.
  }];
  let dependentDialects = ["::nncc::nn::NNDialect"];
}

def NNAutodiff : Pass<"nncc-autodiff", "::mlir::ModuleOp"> {
  let summary = "Reverse-mode autodiff: add @forward_backward with the "
                "gradients of the loss";
  let description = [{
    Adds to the module a function `@forward_backward` (the model function,
    `@forward` by default, is kept as is) with the same arguments that
    returns the loss, the outputs, then `grad.<param>` for every
    `nn.parameter` of the module (result attribute `nn.name`), then
    `grad.<input>` for each input named by `wrt-inputs`.

    Its body is the forward computation, then one `nn.save` per forward
    value the backward pass reads (the residuals, at the forward/backward
    boundary), then the backward pass. The backward visits the active ops
    (those that depend on a parameter or a differentiated input and reach
    the loss) in reverse order and builds each op's adjoints with its
    `nncc::GradientOpInterface` rule; adjoints of values used several times,
    and gradients of parameters read several times, are summed. Composite
    layers get fused backward ops (`nn.lstm_grad`, `nn.attention_grad`,
    `nn.odesolve_grad`, ...); reversible blocks reconstruct their inputs
    from their outputs, so a chain of them saves only its last output.
    Parameters that do not reach the loss get zero gradients.

    With `vjp`, the vector-Jacobian product instead: `@forward_backward`
    takes one more argument per float result, `cotangent.<result>` (loss
    included), after the inputs; the backward is seeded with them, so the
    gradients are those of sum_r <cotangent.r, r>, and `grad.<input>` is
    returned for every float input (or those `wrt-inputs` names). A function
    without a loss is then differentiated from its outputs alone.

    With `fuse-loss-heads` (and without `vjp`), before differentiating,
    every `nn.linear` of `@forward_backward` whose result is read only by
    one `nn.cross_entropy` (and possibly returned) is fused with it into
    `nn.linear_cross_entropy`, and the `nn.sample` ops that also read it
    into `nn.linear_sample` (docs/memory.md, "Fused loss heads").

    Fails, with an error at the function, when it has no result named
    `loss` (without `vjp`), and at an op that has no gradient rule. See
    docs/autodiff.md.
  }];
  let options = [
    Option<"functionName", "function", "std::string", "\"forward\"",
           "The function to differentiate">,
    ListOption<"wrtInputs", "wrt-inputs", "std::string",
               "Inputs (argument nn.name) whose gradients are also returned">,
    Option<"vjp", "vjp", "bool", "false",
           "Seed the backward with cotangent arguments for every float "
           "result and differentiate every float input (the vector-Jacobian "
           "product)">,
    Option<"regularizersActive", "regularizers", "bool", "true",
           "Dropout and zoneout active (training). false: they are the "
           "identity, as in inference, and the gradients are those of the "
           "inference-mode loss (marks the function nn.eval_mode)">,
    Option<"fuseLossHeads", "fuse-loss-heads", "bool", "false",
           "Without vjp: in @forward_backward, an nn.linear whose result "
           "feeds only an nn.cross_entropy (and the return) becomes one "
           "nn.linear_cross_entropy, so the training step never holds the "
           "[..., V] logits' gradient in the arena">,
  ];
  let dependentDialects = ["::nncc::nn::NNDialect",
                           "::mlir::func::FuncDialect"];
}

def NNInferenceSemantics : Pass<"nn-inference-semantics",
                                "::mlir::func::FuncOp"> {
  let summary = "Make dropout, zoneout and attention dropout the identity "
                "outside training functions";
  let description = [{
    In every function that is not a training function (one without
    `nn.training`, or one marked `nn.eval_mode`, whose gradients are those of
    the inference-mode loss), regularizers take their inference meaning:
    `nn.dropout` is replaced by its input, `nn.zoneout` by its new state, and
    the `zoneout` of `nn.lstm` / `nn.lstm_grad` and the `dropout` of
    `nn.attention` / `nn.attention_grad` are set to 0. Training functions are
    left alone: their masks are drawn by the kernels (counter-based, fixed
    per-op seeds). Runs before `convert-nn-to-nnk`, which has no pattern for
    `nn.dropout` or `nn.zoneout` outside training functions.
  }];
  let dependentDialects = ["::nncc::nn::NNDialect"];
}

def NNExpandReversible : Pass<"nn-expand-reversible", "::mlir::ModuleOp"> {
  let summary = "Inline reversible blocks as split, add and concat";
  let description = [{
    Replaces each `nn.reversible` (outer blocks first, so nested blocks are
    expanded once cloned) by

      x1, x2 = split(x);  y1 = F(x2) + x1;  y2 = G(y1) + x2;  y = concat(y1, y2)

    with the bodies of the regions `F` and `G` inlined. Each add takes the
    branch output first, so that `convert-nn-to-nnk` fuses it into the
    epilogue of the branch's last GEMM. Then folds every `split(concat(...))`
    along the same axis whose pieces have the inputs' types, which removes
    the concat/split pair between consecutive blocks.

    Fails at the block when its last dim is not static and even.

    With `stored-last=N` (N >= 0), only the last N top-level blocks of each
    function are inlined, each op this creates marked `nn.stored`: the form
    of the model in which `nncc-remat` stores those blocks' activations
    instead of reconstructing them (`nn::storeReversibleBlocks`, run before
    differentiation); the other blocks stay `nn.reversible`.
  }];
  let options = [
    Option<"storedLast", "stored-last", "int64_t", "-1",
           "Inline only the last N top-level blocks of each function, marked "
           "nn.stored (-1: every block, unmarked)">,
  ];
  let dependentDialects = ["::nncc::nn::NNDialect"];
}

def NNRematApply : Pass<"nn-remat-apply", "::mlir::ModuleOp"> {
  let summary = "Recompute the given residuals of a differentiated function "
                "instead of keeping them";
  let description = [{
    The rewrite of the rematerialisation pass for an explicit choice
    (`nncc-remat` chooses under a memory budget and then does the same).
    Candidates are numbered as `nncc::nn::collectRematCandidates` does: an
    `nn.save` by its `index`, the `reserve` operands of fused gradient ops
    after the largest save index, in block order. For each candidate in
    `recompute`:

    - `nn.save`: the ops that compute the saved value from kept saves,
      arguments, parameters and constants are cloned (unit attribute
      `nn.recomputed`) right before the first backward op that reads it,
      which then reads the clone; the save goes. With `share-chains`, the
      saves are handled in the order the backward first reads them and a
      chain reuses what earlier chains cloned instead of cloning it again
      (all of it here; `nncc-remat` clones an op again rather than split a
      kernel the lowering fuses).
    - reserve: the gradient op's `reserve` operand goes (it recomputes its
      forward's internals); a forward whose reserve nothing reads any more
      loses that result.

    Fails, with an error at the function, on an id that is not a candidate.
  }];
  let options = [
    Option<"functionName", "function", "std::string", "\"forward_backward\"",
           "The differentiated function">,
    ListOption<"recompute", "recompute", "int64_t",
               "Candidate ids to recompute">,
    Option<"shareChains", "share-chains", "bool", "false",
           "Recomputed saves reuse the clones of earlier chains (in the "
           "order the backward first reads them)">,
  ];
  let dependentDialects = ["::nncc::nn::NNDialect",
                           "::mlir::func::FuncDialect"];
}

def NNBPTTCheckpoint : Pass<"nn-bptt-checkpoint", "::mlir::ModuleOp"> {
  let summary = "Checkpoint the BPTT scan of every recurrent reserve pair";
  let description = [{
    Sets `checkpoint_every` to `every` on every top-level `nn.rnn`,
    `nn.lstm` and `nn.gru` whose `reserve` is read by its gradient op, and on
    that gradient op (`nncc::nn::setBPTTCheckpoint`, BPTTCheckpoint.h): the
    reserve then keeps each layer's output sequence and (LSTM) the cell
    state every `every` steps, and the backward recomputes the gates one
    segment of `every` steps at a time. Recurrent ops without a reserve are
    left alone. A test and experiment pass for the output of
    `nncc compile --emit nn-grad`; the memory-budget pass makes the same
    choice per op.

    With `snapshots` = s instead, sets `checkpoint_snapshots` (the
    binomial / Revolve schedule, `nncc::nn::setBPTTSnapshots`): the reserve
    keeps the layer outputs only and the backward reverses each scan step
    by step with at most s cell-state snapshots.

    Fails unless exactly one of `every` and `snapshots` is at least 1.
  }];
  let options = [
    Option<"every", "every", "int64_t", "0",
           "Steps per recomputed segment (>= 1; sqrt(T) balances the kept "
           "states against the recomputed segment)">,
    Option<"snapshots", "snapshots", "int64_t", "0",
           "Cell-state snapshots of the binomial schedule (>= 1)">,
  ];
  let dependentDialects = ["::nncc::nn::NNDialect"];
}

#endif // NNCC_DIALECT_NN_TRANSFORMS_PASSES_TD
