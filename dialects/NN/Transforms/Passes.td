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

#endif // NNCC_DIALECT_NN_TRANSFORMS_PASSES_TD
