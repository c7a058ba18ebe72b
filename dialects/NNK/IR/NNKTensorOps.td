//===- NNKTensorOps.td - data movement and reductions ------*- tablegen -*-===//
//
// Fills, copies and the generated strided-copy loops (concat, split, slice,
// transpose), reductions, argmax / max / topk and cumsum, and the backward
// helpers that scatter or broadcast adjoints.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NNK_IR_NNKTENSOROPS_TD
#define NNCC_DIALECT_NNK_IR_NNKTENSOROPS_TD

include "dialects/NNK/IR/NNKOpBase.td"

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

def NNK_FillOp : NNK_Op<"fill"> {
  let summary = "fills a buffer with a constant";
  let description = [{
    `out[i] = value` for every element (generated loop / `cudaMemsetAsync`
    for zero). Used for `nn.constant` values that no fused op absorbs.
  }];
  let arguments = (ins NNK_Out<NNK_Buffer>:$out, NNK_F64Attr:$value);
  let assemblyFormat = "`outs` `(` $out `)` attr-dict `:` qualified(type($out))";
}

def NNK_CopyOp : NNK_Op<"copy"> {
  let summary = "contiguous copy of one buffer into another of the same shape";
  let description = [{
    `out = in` (memcpy). Types must be compatible (same element type, same
    rank, compatible dims).
  }];
  let arguments = (ins NNK_In<NNK_Buffer>:$in, NNK_Out<NNK_Buffer>:$out);
  let assemblyFormat = [{
    `ins` `(` $in `)` `outs` `(` $out `)` attr-dict `:`
    qualified(type($in)) `,` qualified(type($out))
  }];
}

def NNK_ReduceOp : NNK_Op<"reduce"> {
  let summary = "sum or mean over a set of axes";
  let description = [{
    out = reduce(x) over `axes` (sorted, distinct, in [0, rank)); out has
    x's dims without the reduced ones, or with 1 in their place when
    `keepdim`. Accumulates in double on the CPU. Generated loop.
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$x, NNK_Out<NNK_FloatBuffer>:$out,
                       NNK_ReduceKindAttr:$kind, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "false">:$keepdim);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $out `)` attr-dict `:` qualified(type(operands))
  }];
}

def NNK_ArgmaxOp : NNK_Op<"argmax"> {
  let summary = "index of the first maximum along one axis (i32)";
  let description = [{
    x viewed as `[outer, N, inner]` around `axis` (in [0, rank)); out
    `[outer, inner]` (x's dims without `axis`, or with 1 in its place)
    holds, as i32, the lowest index of the row's largest value (a NaN
    counts as the largest). `nncc_max_axis_*` with values NULL; CPU only.
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$x, NNK_Out<NNK_IndexBuffer>:$out,
                       NNK_I64Attr:$axis);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $out `)` attr-dict `:` qualified(type(operands))
  }];
}

def NNK_MaxOp : NNK_Op<"max"> {
  let summary = "maximum along one axis";
  let description = [{
    x viewed as `[outer, N, inner]` around `axis` (in [0, rank)); out
    `[outer, inner]` (x's dims without `axis`, or with 1 in its place)
    holds each row's largest value (a NaN propagates).
    `nncc_max_axis_*` with indices NULL; CPU only.
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$x, NNK_Out<NNK_FloatBuffer>:$out,
                       NNK_I64Attr:$axis);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $out `)` attr-dict `:` qualified(type(operands))
  }];
}

def NNK_TopkOp : NNK_Op<"topk"> {
  let summary = "the k largest elements along one axis and their indices (i32)";
  let description = [{
    x viewed as `[outer, N, inner]` around `axis` (in [0, rank)); values and
    indices `[outer, k, inner]` (x's dims with k at `axis`, 1 <= k <= N) hold
    each row's k largest elements in descending order and their indices as
    i32 (a NaN counts as the largest; equal elements by ascending index).
    `nncc_topk_axis_*`; CPU only.
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$x,
                       NNK_Out<NNK_FloatBuffer>:$values,
                       NNK_Out<NNK_IndexBuffer>:$indices,
                       NNK_I64Attr:$axis, NNK_I64Attr:$k);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $values `,` $indices `)` attr-dict `:` qualified(type(operands))
  }];
}

def NNK_CumsumOp : NNK_Op<"cumsum"> {
  let summary = "running sum along one axis";
  let description = [{
    x viewed as `[outer, N, inner]` around `axis` (in [0, rank)); out (x's
    type) holds, at index i of each row, the sum of the row's elements
    0..i, or i..N-1 with `reverse`. Floats (f32, f64) or integers (i32,
    i64). `nncc_cumsum_axis_*`; CPU only.
  }];
  let arguments = (ins NNK_In<AnyTypeOf<[NNK_FloatBuffer, NNK_IndexBuffer]>>:$x,
                       NNK_Out<AnyTypeOf<[NNK_FloatBuffer, NNK_IndexBuffer]>>:$out,
                       NNK_I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $out `)` attr-dict `:` qualified(type(operands))
  }];
}

def NNK_ConcatOp : NNK_Op<"concat"> {
  let summary = "concatenation along an axis (one strided copy kernel)";
  let description = [{
    out = concat(inputs) along `axis` (in [0, rank)); input k lands at the
    offset equal to the sum of the previous inputs' run-time sizes along
    the axis. Other dims compatible.
  }];
  let arguments = (ins NNK_In<Variadic<NNK_Buffer>>:$inputs,
                       NNK_Out<NNK_Buffer>:$out, NNK_I64Attr:$axis);
  let assemblyFormat = [{
    `ins` `(` $inputs `)` `outs` `(` $out `)` attr-dict `:` qualified(type(operands))
  }];
}

def NNK_SplitOp : NNK_Op<"split"> {
  let summary = "split along an axis into consecutive pieces (one kernel)";
  let description = [{
    outs[k] = x[..., o_k : o_k + size_k, ...] along `axis`, o_k the sum of
    the previous outputs' sizes along the axis; sizes are the outputs' dims
    (must sum to x's when static).
  }];
  let arguments = (ins NNK_In<NNK_Buffer>:$x,
                       NNK_Out<Variadic<NNK_Buffer>>:$outs, NNK_I64Attr:$axis);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $outs `)` attr-dict `:` qualified(type(operands))
  }];
}

def NNK_SliceOp : NNK_Op<"slice"> {
  let summary = "strided window copy";
  let description = [{
    out[j_0, ...] = x[s_0 + j_0·st_0, ...] for the dims of x that are not in
    `squeeze` (squeezed dims contribute their start only). `starts` may be
    negative (counting from the end of x's run-time dim); `steps` ≥ 1. One
    entry per dim of x; out's extent gives the count.
  }];
  let arguments = (ins NNK_In<NNK_Buffer>:$x, NNK_Out<NNK_Buffer>:$out,
                       DenseI64ArrayAttr:$starts, DenseI64ArrayAttr:$steps,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$squeeze);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $out `)` attr-dict `:` qualified(type(operands))
  }];
}

def NNK_TransposeOp : NNK_Op<"transpose"> {
  let summary = "permutation of dims (strided copy)";
  let description = [{ out dim i = x dim perm[i]; tiled copy kernel. }];
  let arguments = (ins NNK_In<NNK_Buffer>:$x, NNK_Out<NNK_Buffer>:$out,
                       DenseI64ArrayAttr:$perm);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $out `)` attr-dict `:` qualified(type(operands))
  }];
}

//===----------------------------------------------------------------------===//
// Backward (built by nncc-autodiff / its lowering)
//===----------------------------------------------------------------------===//

def NNK_ReduceToShapeOp : NNK_GradOp<"reduce_to_shape"> {
  let summary = "sum over the dims a NumPy broadcast expanded";
  let description = [{
    `out` broadcasts to `x` (right-aligned); out = sum of x over the leading
    dims out lacks and the dims where out has size 1.
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$x, NNK_Out<NNK_FloatBuffer>:$out);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $out `)` attr-dict `:` qualified(type(operands))
  }];
}

def NNK_BroadcastAxesOp : NNK_GradOp<"broadcast_axes"> {
  let summary = "out = dy broadcast back over reduced axes (÷ count if mean)";
  let description = [{
    The adjoint of `nnk.reduce`: `dy` holds out's shape without `axes`
    (or with them of size 1); out[i] = dy[i without axes], divided by
    numel(out) / numel(dy) when `mean`.
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$dy, NNK_Out<NNK_FloatBuffer>:$out,
                       DenseI64ArrayAttr:$axes, DefaultValuedAttr<BoolAttr, "false">:$mean);
  let assemblyFormat = [{
    `ins` `(` $dy `)` `outs` `(` $out `)` attr-dict `:` qualified(type(operands))
  }];
}

def NNK_MaxGradOp : NNK_GradOp<"max_grad"> {
  let summary = "dx = dy at each row's first maximum along one axis, 0 elsewhere";
  let description = [{
    The adjoint of `nnk.max`: x and dx `[outer, N, inner]` around `axis`,
    dy `[outer, inner]` (nnk.max's out); dx is overwritten with dy at the
    element `nnk.argmax` selects and 0 at the others.
    `nncc_max_axis_backward_*`; CPU only.
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$dy, NNK_In<NNK_FloatBuffer>:$x,
                       NNK_Out<NNK_FloatBuffer>:$dx, NNK_I64Attr:$axis);
  let assemblyFormat = [{
    `ins` `(` $dy `,` $x `)` `outs` `(` $dx `)` attr-dict `:` qualified(type(operands))
  }];
  let hasVerifier = 1;
}

def NNK_TopkGradOp : NNK_GradOp<"topk_grad"> {
  let summary = "dx = dy scattered to topk's indices along one axis, 0 elsewhere";
  let description = [{
    The adjoint of `nnk.topk`'s values: dy and indices `[outer, k, inner]`
    around `axis`, dx `[outer, N, inner]` (dy's dims with N at `axis`); dx
    is overwritten with 0, then dy at the positions indices name.
    `nncc_topk_axis_backward_*`; CPU only.
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$dy,
                       NNK_In<NNK_IndexBuffer>:$indices,
                       NNK_Out<NNK_FloatBuffer>:$dx, NNK_I64Attr:$axis);
  let assemblyFormat = [{
    `ins` `(` $dy `,` $indices `)` `outs` `(` $dx `)` attr-dict `:` qualified(type(operands))
  }];
  let hasVerifier = 1;
}

def NNK_SliceGradOp : NNK_GradOp<"slice_grad"> {
  let summary = "zero out, then scatter dy at the positions nnk.slice reads";
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$dy, NNK_Out<NNK_FloatBuffer>:$out,
                       DenseI64ArrayAttr:$starts, DenseI64ArrayAttr:$steps,
                       DenseI64ArrayAttr:$squeeze);
  let assemblyFormat = [{
    `ins` `(` $dy `)` `outs` `(` $out `)` attr-dict `:` qualified(type(operands))
  }];
}

#endif // NNCC_DIALECT_NNK_IR_NNKTENSOROPS_TD
