//===- Passes.td - nncc conversion passes --------------------*- tablegen -*-===//

#ifndef NNCC_CONVERSION_PASSES_TD
#define NNCC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertNNToNNK : Pass<"convert-nn-to-nnk", "::mlir::ModuleOp"> {
  let summary = "Lower nn layers to fused nnk kernel launches over buffers";
  let description = [{
    Converts every `nn` op of the module's functions into `nnk` kernel ops in
    destination-passing style (docs/nnk-spec.md), fusing:

    - maximal single-use chains of elementwise ops (add, sub, mul, div,
      neg, activations, scalar constants, learned positions) into one
      `nnk.elementwise`;
    - `linear (+bias) -> activation -> (+residual)` into one `nnk.gemm`;
      the residual add after an attention goes into its out-projection;
    - `layer_norm(a + b)` into one `nnk.layer_norm` with a residual;
    - recurrent layers into, per layer and direction, one input-projection
      `nnk.gemm` and one persistent `nnk.recurrent_scan`;
    - attention into in-projection GEMM, flash / banded / LSH core, and
      out-projection GEMM;
    - the adds of expanded reversible blocks into the producers' epilogues;
      ODE solves into `nnk.ode_solve` / `nnk.ode_rnn` loops.

    Expects the nn-level preparation done (`nn-insert-training-boundary`,
    `nn-inference-semantics`, `nn-expand-reversible`; the `nncc-pipeline`
    runs them): `nn.reversible`, and `nn.dropout` / `nn.zoneout` outside
    training functions, have no pattern. Functions take their outputs as
    extra arguments marked `nnk.output`. Anything unsupported fails with an
    error at the op's location.
  }];
  let dependentDialects = [
    "::nncc::nnk::NNKDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect"
  ];
}

def NNInsertTrainingBoundary : Pass<"nn-insert-training-boundary",
                                    "::mlir::func::FuncOp"> {
  let summary = "Mark where forward_train ends in a training function";
  let description = [{
    In a function marked `nn.training` (the `@forward_backward` that
    `nncc-autodiff` adds), inserts one `nnk.boundary` after the last `nn.save`
    (the last residual), or, when nothing is saved, after the last op that
    a forward result (a result not named `grad.<...>`: the outputs, the
    loss) reads, which is where the backward begins. The back end splits
    the lowered function there into the generated `forward_train` and
    `backward` entry points; every op that reads a `cotangent.<...>`
    argument (the VJP, `vjp=1`; directly or through other ops) must come
    after it, since `set_cotangent` runs between the two: one before the
    boundary is an error (nncc-autodiff never builds one). Other functions
    are left alone. Runs before `convert-nn-to-nnk`, which keeps the
    marker.
  }];
  let dependentDialects = ["::nncc::nnk::NNKDialect"];
}

def NNKForwardDestinations : Pass<"nnk-forward-destinations",
                                  "::mlir::ModuleOp"> {
  let summary = "Write results straight into the output arguments";
  let description = [{
    After `convert-nn-to-nnk`, a function result is computed into an
    `nnk.alloc` and then copied into its `nnk.output` argument. When the
    alloc is in the same block as the copy, has the argument's type, and is
    copied into no other argument, and the argument has no other use, the
    copy is removed and the alloc replaced by the argument: the producing
    kernel writes the output in place.
  }];
  let dependentDialects = ["::nncc::nnk::NNKDialect"];
}

#endif // NNCC_CONVERSION_PASSES_TD
