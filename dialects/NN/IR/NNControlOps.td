//===- NNControlOps.td - model structure and residuals -----*- tablegen -*-===//
//
// The structure of a model function: its parameters, constants, region
// terminators and the residual marker nn.save of the backward pass.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NN_IR_NNCONTROLOPS_TD
#define NNCC_DIALECT_NN_IR_NNCONTROLOPS_TD

include "dialects/NN/IR/NNOpBase.td"

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

def NN_ParameterOp : NN_Op<"parameter", [
    Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "declares a trainable parameter";
  let description = [{
    A module-level symbol holding a trainable tensor, named as PyTorch's
    `state_dict` names it. `type` must be a tensor type; `init` says how the
    runtime initialises it; `group` is its optimizer group (weight decay or
    not, layer-wise lr decay group), decided by the front end from the layer
    that creates it (absent: decay, lr multiplier 1).

    ```mlir
    nn.parameter @fc.weight : !nn.tensor<[10, 20], f32> init #nn.init<uniform, -0.2, 0.2>
    nn.parameter @stack.0.bias : !nn.tensor<[10], f32> init #nn.init<zeros> group #nn.param_group<no_decay, layer 0>
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    TypeAttrOf<NN_TensorType>:$type,
    OptionalAttr<NN_InitAttr>:$init,
    OptionalAttr<NN_ParamGroupAttr>:$group
  );
  let assemblyFormat = [{
    $sym_name `:` $type (`init` qualified($init)^)? (`group` qualified($group)^)? attr-dict
  }];
  let extraClassDeclaration = [{
    ::nncc::nn::TensorType getTensorType() {
      return ::llvm::cast<::nncc::nn::TensorType>(getType());
    }
  }];
}

def NN_GetParameterOp : Op<NN_Dialect, "get_parameter", [
    Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "reads a parameter";
  let description = [{
    Returns the value of the `nn.parameter` named `name`; the result type is
    the parameter's type. This is the only op whose result type is not
    inferred from operands (the parameter is looked up in the symbol table
    when uses are verified).

    ```mlir
    %w = nn.get_parameter @fc.weight : !nn.tensor<[10, 20], f32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs NN_TensorType:$result);
  let assemblyFormat = "$name attr-dict `:` qualified(type($result))";
}

def NN_ConstantOp : NN_Op<"constant", [Pure]> {
  let summary = "scalar constant";
  let description = [{
    A scalar tensor `[]` holding `value`, a float or integer attribute whose
    type is a valid element type.

    ```mlir
    %c = nn.constant 2.0 : f32
    ```
  }];
  let arguments = (ins TypedAttrInterface:$value);
  let results = (outs NN_TensorType:$result);
  let assemblyFormat = "$value attr-dict";
}

def NN_YieldOp : NN_Op<"yield", [
    Pure, Terminator, ReturnLike,
    ParentOneOf<["ReversibleOp", "ODESolveOp", "ODERNNOp",
                 "ODESolveGradOp", "ODERNNGradOp"]>]> {
  let summary = "terminates the regions of nn ops";
  let description = [{
    Returns `values` from the single block of an `nn.reversible`,
    `nn.odesolve` or `nn.ode_rnn` region. The parent op checks their types.

    ```mlir
    nn.yield %h : !nn.tensor<[B, 16], f32>
    ```
  }];
  let arguments = (ins Variadic<NN_TensorType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

//===----------------------------------------------------------------------===//
// Backward (built by nncc-autodiff / its lowering)
//===----------------------------------------------------------------------===//

def NN_SaveOp : NN_Op<"save", [Pure]> {
  let summary = "a forward value kept for the backward pass (a residual)";
  let description = [{
    Marks `value` as stored between the forward and the backward pass; the
    result is the same tensor and is what the backward pass reads. All
    `nn.save` ops of a function sit at the forward/backward boundary, so the
    set of them is the memory the training step keeps alive across it.
    `index` numbers the residuals of a function; `rule` names the op kind
    whose backward rule needs it. A rematerialisation pass may replace a save
    by recomputing the value inside the backward pass.

    ```mlir
    %s = nn.save %h {index = 0 : i64, rule = "nn.tanh"} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    ```
  }];
  let arguments = (ins NN_TensorType:$value,
                       DefaultValuedAttr<NN_I64Attr, "0">:$index,
                       OptionalAttr<StrAttr>:$rule);
  let results = (outs NN_TensorType:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

#endif // NNCC_DIALECT_NN_IR_NNCONTROLOPS_TD
