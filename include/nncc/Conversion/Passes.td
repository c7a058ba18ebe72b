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
    - reversible blocks inline (y1 = x1 + F(x2), y2 = x2 + G(y1), the adds
      in the producers' epilogues; split(concat) pairs between blocks
      removed); ODE solves into `nnk.ode_solve` / `nnk.ode_rnn` loops.

    Inference semantics: dropout and zoneout are the identity. Functions
    take their outputs as extra arguments marked `nnk.output`. Anything
    unsupported fails with an error at the op's location.
  }];
  let dependentDialects = [
    "::nncc::nnk::NNKDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect"
  ];
}

#endif // NNCC_CONVERSION_PASSES_TD
