//===- NNKControlOps.td - buffers, weights, boundaries -----*- tablegen -*-===//
//
// The structure of a kernel-level function: buffer allocation, weight
// bindings, region terminators and the forward / backward boundary of a
// training step.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NNK_IR_NNKCONTROLOPS_TD
#define NNCC_DIALECT_NNK_IR_NNKCONTROLOPS_TD

include "dialects/NNK/IR/NNKOpBase.td"

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

def NNK_AllocOp : NNK_Op<"alloc"> {
  let summary = "a temporary buffer: one slot of the model's arena";
  let description = [{
    A temporary whose size is the product of its dims (symbolic dims are
    the run-time sizes bound from the inputs). It lives from its first to
    its last use; the memory planner assigns it an arena offset (recorded
    later as an `offset` attribute). Dims must not be `?`.

    ```mlir
    %t = nnk.alloc : !nnk.buffer<[B, T, 1024], f32>
    ```
  }];
  let results = (outs Res<NNK_Buffer, "", [MemAlloc]>:$result);
  let assemblyFormat = "attr-dict `:` qualified(type($result))";
}

def NNK_WeightOp : NNK_Op<"weight", [
    Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "the buffer of a parameter (`nn.parameter` symbol)";
  let description = [{
    A read-only view of the parameter `@name`, declared by an
    `nn.parameter` in the enclosing module (kept there so the runtime loads
    and initialises it by its PyTorch `state_dict` name). The buffer type has
    the parameter's dims and element type.

    ```mlir
    %w = nnk.weight @head.weight : !nnk.buffer<[9, 256], f32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs NNK_Buffer:$result);
  let assemblyFormat = "$name attr-dict `:` qualified(type($result))";
}

def NNK_YieldOp : Op<NNK_Dialect, "yield", [
    Pure, Terminator,
    ParentOneOf<["ElementwiseOp", "ODESolveOp", "ODERNNOp", "ODESolveGradOp", "ODERNNGradOp"]>]> {
  let summary = "terminator of nnk regions";
  let description = [{
    Ends the body of `nnk.elementwise` (one scalar: the element stored) and
    the regions of `nnk.ode_solve` / `nnk.ode_rnn` (no values: those bodies
    write their destination block argument).
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Backward (built by nncc-autodiff / its lowering)
//===----------------------------------------------------------------------===//

def NNK_BoundaryOp : NNK_GradOp<"boundary"> {
  let summary = "end of the training forward in a forward_backward function";
  let description = [{
    Marks where the forward half of a training function ends (after its
    residuals, the `nn.save`s, are computed). Ops before it form
    `forward_train`, ops after it `backward`; the residuals stay in the
    arena between the two calls.
  }];
  let assemblyFormat = "attr-dict";
}

#endif // NNCC_DIALECT_NNK_IR_NNKCONTROLOPS_TD
