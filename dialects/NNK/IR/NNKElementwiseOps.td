//===- NNKElementwiseOps.td - elementwise kernels ----------*- tablegen -*-===//
//
// nnk.elementwise (one generated loop over a fused body) and dropout.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NNK_IR_NNKELEMENTWISEOPS_TD
#define NNCC_DIALECT_NNK_IR_NNKELEMENTWISEOPS_TD

include "dialects/NNK/IR/NNKOpBase.td"

def NNK_ElementwiseOp : NNK_Op<"elementwise", [
    IsolatedFromAbove, SingleBlock]> {
  let summary = "one fused loop/kernel over a scalar body";
  let description = [{
    For every index `i` of `out`, evaluates the body on the elements of the
    inputs at `i` under NumPy broadcasting (each input's shape aligned on the
    right with out's; dims equal or 1) and stores the yielded scalar. The
    body has one scalar argument per input (its element type) and contains
    only `arith` and `math` ops on scalars, ended by `nnk.yield` of one
    value of out's element type. Emitters turn it into one loop (CPU) or one
    kernel (CUDA).

    ```mlir
    nnk.elementwise ins(%a, %b : !nnk.buffer<[B, 64], f32>, !nnk.buffer<[64], f32>)
        outs(%y : !nnk.buffer<[B, 64], f32>) {
    ^bb0(%x: f32, %z: f32):
      %s = arith.addf %x, %z : f32
      %r = math.tanh %s : f32
      nnk.yield %r : f32
    }
    ```
  }];
  let arguments = (ins NNK_In<Variadic<NNK_Buffer>>:$inputs,
                       NNK_Out<NNK_Buffer>:$out);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `ins` `(` ($inputs^ `:` qualified(type($inputs)))? `)`
    `outs` `(` $out `:` qualified(type($out)) `)` attr-dict-with-keyword $body
  }];
}

def NNK_DropoutOp : NNK_Op<"dropout"> {
  let summary = "inverted dropout with Philox randomness (training only)";
  let description = [{
    out = x / (1 - p) where kept, 0 elsewhere; element i kept iff its Philox
    draw for (seed, offset + i) is >= p (`nncc_dropout_*`). The optional
    `mask` output (i1, x's shape) records the decisions for a backward pass.
    The inference conversion never creates it (dropout is the identity
    there); it exists so a training mode can be added.
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$x, NNK_Out<NNK_FloatBuffer>:$out,
                       NNK_Out<Optional<NNK_BoolBuffer>>:$mask,
                       NNK_F64Attr:$p, DefaultValuedAttr<NNK_I64Attr, "0">:$seed);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $out (`,` $mask^)? `)` attr-dict `:`
    qualified(type(operands))
  }];
}

#endif // NNCC_DIALECT_NNK_IR_NNKELEMENTWISEOPS_TD
