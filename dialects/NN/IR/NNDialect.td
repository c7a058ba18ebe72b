//===- NNDialect.td - The nn dialect definition -------------*- tablegen -*-===//
//
// The `nn` dialect: neural-network layers as single ops over tensors with
// symbolic dimensions, as produced by the nncc front end.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NN_IR_NNDIALECT_TD
#define NNCC_DIALECT_NN_IR_NNDIALECT_TD

include "mlir/IR/OpBase.td"

def NN_Dialect : Dialect {
  let name = "nn";
  let cppNamespace = "::nncc::nn";
  let summary = "Neural-network layers over tensors with symbolic dimensions";
  let description = [{
    The `nn` dialect models a neural network as declared in the nncc DSL:
    whole layers (linear, recurrent, attention, ODE solvers, ...) are single
    ops so later passes can fuse and differentiate them as units. Values are
    `!nn.tensor<[dims], elt>` whose dims may be static sizes, named symbolic
    sizes or unknown (`?`). Parameters are module-level symbols
    (`nn.parameter`) read with `nn.get_parameter`.

    Every op computes its result types from its operands and attributes
    (`InferTypeOpInterface`); shape and dtype errors are reported by that
    inference at the op's location.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  // The discardable attributes: nn.model, nn.dims, nn.train (module),
  // nn.training, nn.eval_mode (func), nn.name (func arguments and
  // results), nn.recomputed and nn.stored (ops, nncc-remat); see
  // NNDialect.cpp.
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Registration of the types and attributes, defined next to them.
    void registerTypes();
    void registerAttributes();
  }];
}

#endif // NNCC_DIALECT_NN_IR_NNDIALECT_TD
