//===- NNTensorOps.td - shape and reduction ops ------------*- tablegen -*-===//
//
// Concatenation, splits, slices, transposes, reductions, argmax / max /
// topk and cumsum, with the backward helpers that scatter or broadcast
// their adjoints back (zeros, reduce_to_shape, reduce_grad, ...).
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NN_IR_NNTENSOROPS_TD
#define NNCC_DIALECT_NN_IR_NNTENSOROPS_TD

include "dialects/NN/IR/NNOpBase.td"

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

def NN_ConcatOp : NN_Op<"concat", [Pure]> {
  let summary = "concatenation along an axis";
  let description = [{
    Joins one or more `inputs` of equal rank and element type along `axis`
    (negative counts from the end); the other dims must be compatible. The
    result dim along `axis` is the sum when all are static, else `?` (a
    single input keeps its dim).

    ```mlir
    %y = nn.concat %a, %b {axis = -1 : i64} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 6], f32>) -> !nn.tensor<[B, 10], f32>
    ```
  }];
  let arguments = (ins Variadic<NN_TensorType>:$inputs,
                       DefaultValuedAttr<NN_I64Attr, "0">:$axis);
  let results = (outs NN_TensorType:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_SplitOp : NN_Op<"split", [Pure]> {
  let summary = "splits a tensor into static-size pieces along an axis";
  let description = [{
    Cuts `x` along `axis` into one result per entry of `sizes` (each >= 0);
    the sizes add up to the dim, which must be static or `?`.

    ```mlir
    %a, %b = nn.split %x {axis = 1 : i64, sizes = array<i64: 4, 6>} : (!nn.tensor<[B, 10], f32>) -> (!nn.tensor<[B, 4], f32>, !nn.tensor<[B, 6], f32>)
    ```
  }];
  let arguments = (ins NN_TensorType:$x,
                       DefaultValuedAttr<NN_I64Attr, "0">:$axis,
                       DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<NN_TensorType>:$results);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_SliceOp : NN_Op<"slice", [Pure]> {
  let summary = "strided slice with optional squeezed (indexed) dims";
  let description = [{
    Python-style slicing with one `starts`/`stops`/`steps` entry per dim of
    `x`. Negative starts and stops count from the end; a stop of INT64_MAX
    (9223372036854775807) means "to the end"; steps are >= 1. Indices are
    clamped to the dim as in Python. The dims listed in `squeeze` were
    indexed by an integer `i` (encoded start = i, stop = i + 1, or INT64_MAX
    when i = -1, step = 1) and are dropped from the result.

    A sliced static dim gets its exact length; a symbolic or unknown dim keeps
    its name for the full slice `0:INT64_MAX:1`, gets a static length when
    start and stop are both non-negative, and is `?` otherwise.

    ```mlir
    %y = nn.slice %x {starts = array<i64: 0, -1>, stops = array<i64: 9223372036854775807, 9223372036854775807>, steps = array<i64: 1, 1>, squeeze = array<i64: 1>} : (!nn.tensor<[B, T], f32>) -> !nn.tensor<[B], f32>
    ```
  }];
  let arguments = (ins NN_TensorType:$x,
                       DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$stops,
                       DenseI64ArrayAttr:$steps,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$squeeze);
  let results = (outs NN_TensorType:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_TransposeOp : NN_Op<"transpose", [Pure]> {
  let summary = "permutes dims";
  let description = [{
    Result dim i is dim `perm[i]` of `x`; `perm` is a permutation of
    [0, rank).

    ```mlir
    %y = nn.transpose %x {perm = array<i64: 1, 0>} : (!nn.tensor<[B, T], f32>) -> !nn.tensor<[T, B], f32>
    ```
  }];
  let arguments = (ins NN_TensorType:$x, DenseI64ArrayAttr:$perm);
  let results = (outs NN_TensorType:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

class NN_ReduceOp<string mnemonic, string noun> : NN_Op<mnemonic, [Pure]> {
  let summary = noun # " over some axes";
  let description = [{
    The }] # noun # [{ of `x` over the distinct `axes` (negative
    counts from the end; empty means all dims). With `keepdim` the reduced
    dims stay as size 1, otherwise they are dropped.

    ```mlir
    %m = nn.}] # mnemonic # [{ %x {axes = array<i64: -1>} : (!nn.tensor<[B, T, 4], f32>) -> !nn.tensor<[B, T], f32>
    ```
  }];
  let arguments = (ins NN_TensorType:$x,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$axes,
                       DefaultValuedAttr<BoolAttr, "false">:$keepdim);
  let results = (outs NN_TensorType:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_ReduceMeanOp : NN_ReduceOp<"reduce_mean", "mean">;

def NN_ReduceSumOp : NN_ReduceOp<"reduce_sum", "sum">;

def NN_ArgmaxOp : NN_Op<"argmax", [Pure]> {
  let summary = "the index of the first maximum along an axis (i32)";
  let description = [{
    For each row of `x` along `axis` (negative counts from the end), the
    index of its largest element, as i32; of several equal maxima the
    first (lowest index), as `torch.argmax`; a NaN counts as the largest
    (the first NaN). The axis is dropped, or kept as size 1 with
    `keepdim`. The result carries no gradient.

    ```mlir
    %i = nn.argmax %logits {axis = -1 : i64} : (!nn.tensor<[B, T, 10], f32>) -> !nn.tensor<[B, T], i32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x,
                       DefaultValuedAttr<NN_I64Attr, "-1">:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$keepdim);
  let results = (outs NN_IndexTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_MaxOp : NN_Op<"max", [Pure]> {
  let summary = "the maximum along an axis";
  let description = [{
    For each row of `x` along `axis` (negative counts from the end), its
    largest element (`torch.amax(x, axis)`, the values of
    `torch.max(x, axis)`; a NaN propagates). The axis is dropped, or kept
    as size 1 with `keepdim`. The gradient (`nn.max_grad`) goes to the
    element `nn.argmax` selects, the first of equal maxima, as
    `torch.max(x, dim)`'s backward (not `torch.amax`'s even split).

    ```mlir
    %m = nn.max %x {axis = 1 : i64, keepdim = true} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 1], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x,
                       DefaultValuedAttr<NN_I64Attr, "-1">:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$keepdim);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_TopkOp : NN_Op<"topk", [Pure]> {
  let summary = "the k largest elements along an axis and their indices (i32)";
  let description = [{
    For each row of `x` along `axis` (negative counts from the end), its `k`
    largest elements in descending order (`values`) and their indices as
    i32 (`indices`); `axis` keeps its place with size `k`. A NaN counts as
    the largest; equal elements come in ascending index order (the order of
    `torch.sort(x, descending=True, stable=True)`, whose first `k` these
    are; `torch.topk` gives the same values, but its CPU kernel may order
    tied indices otherwise). `k` is in [1, n] of a static axis size n. The
    gradient of `values` (`nn.topk_grad`) is scattered to the selected
    indices; `indices` carries none.

    ```mlir
    %v, %i = nn.topk %logits {k = 3 : i64} : (!nn.tensor<[B, 10], f32>) -> (!nn.tensor<[B, 3], f32>, !nn.tensor<[B, 3], i32>)
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x, NN_I64Attr:$k,
                       DefaultValuedAttr<NN_I64Attr, "-1">:$axis);
  let results = (outs NN_FloatTensor:$values, NN_IndexTensor:$indices);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_CumsumOp : NN_Op<"cumsum", [Pure]> {
  let summary = "running sum along an axis";
  let description = [{
    `y[..., i, ...] = sum over j <= i of x[..., j, ...]` along `axis`
    (negative counts from the end), as `torch.cumsum(x, dim)`; with
    `reverse`, the sum over j >= i. Integer (i32, i64) or float; the result
    has x's type. The gradient of a float cumsum is the reverse running sum
    of dy (no gradient for integers). RoBERTa's and Longformer's position
    ids are `cumsum(input_ids != pad, axis: 1)` (times that mask, plus pad).

    ```mlir
    %y = nn.cumsum %x {axis = 1 : i64} : (!nn.tensor<[B, T], i32>) -> !nn.tensor<[B, T], i32>
    ```
  }];
  let arguments = (ins AnyTypeOf<[NN_FloatTensor, NN_IndexTensor]>:$x,
                       DefaultValuedAttr<NN_I64Attr, "-1">:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs AnyTypeOf<[NN_FloatTensor, NN_IndexTensor]>:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

//===----------------------------------------------------------------------===//
// Backward (built by nncc-autodiff / its lowering)
//===----------------------------------------------------------------------===//

def NN_ZerosOp : NN_Op<"zeros", [Pure]> {
  let summary = "a tensor of zeros of a given type";
  let description = [{
    The zero tensor of `type` (symbolic dims are bound at run time). Used
    for adjoints that are zero but must exist (pieces of `nn.split`,
    parameters that do not reach the loss).

    ```mlir
    %z = nn.zeros !nn.tensor<[B, 4], f32>
    ```
  }];
  let arguments = (ins TypeAttrOf<NN_TensorType>:$type);
  let results = (outs NN_TensorType:$result);
  let assemblyFormat = "$type attr-dict";
}

def NN_ReduceToShapeOp : NN_Op<"reduce_to_shape", [Pure]> {
  let summary = "sums an adjoint over the dims a broadcast expanded";
  let description = [{
    The adjoint of NumPy broadcasting: `x` has a shape that `type` broadcasts
    to; the result, of `type`, sums `x` over the leading dims `type` lacks
    and over the dims where `type` has size 1.

    ```mlir
    %db = nn.reduce_to_shape %dy {type = !nn.tensor<[4], f32>} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[4], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x, TypeAttrOf<NN_TensorType>:$type);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_ReduceGradOp : NN_Op<"reduce_grad", [Pure]> {
  let summary = "spreads the adjoint of a reduction back over its input";
  let description = [{
    The adjoint of `nn.reduce_sum` / `nn.reduce_mean` (`mean`) of a tensor of
    `type` over `axes` (empty = all) with `keepdim`: `dy` (the reduction's
    shape) is broadcast back to `type`, and divided by the number of reduced
    elements when `mean`.

    ```mlir
    %dx = nn.reduce_grad %dy {axes = array<i64: 1>, mean = true, type = !nn.tensor<[B, 4], f32>} : (!nn.tensor<[B], f32>) -> !nn.tensor<[B, 4], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$dy, TypeAttrOf<NN_TensorType>:$type,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$axes,
                       DefaultValuedAttr<BoolAttr, "false">:$keepdim,
                       DefaultValuedAttr<BoolAttr, "false">:$mean);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_MaxGradOp : NN_Op<"max_grad", [Pure]> {
  let summary = "routes the adjoint of a max to the selected element";
  let description = [{
    The adjoint of `nn.max` of `x` along `axis` with `keepdim`: a tensor
    of `x`'s type that holds `dy` at the first maximal element of each row
    (the one `nn.argmax` selects; `torch.max(x, dim)`'s rule) and 0
    elsewhere. `dy` has `nn.max`'s result shape.

    ```mlir
    %dx = nn.max_grad %dy, %x {axis = -1 : i64} : (!nn.tensor<[B], f32>, !nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$dy, NN_FloatTensor:$x,
                       DefaultValuedAttr<NN_I64Attr, "-1">:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$keepdim);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_TopkGradOp : NN_Op<"topk_grad", [Pure]> {
  let summary = "scatters the adjoint of topk's values to their indices";
  let description = [{
    The adjoint of `nn.topk`'s values along `axis`: a tensor of `dy`'s
    element type and shape, but `size` along `axis` (the size of topk's
    input there), that holds `dy` at the positions `indices` (topk's i32
    indices, of `dy`'s shape) name and 0 elsewhere.

    ```mlir
    %dx = nn.topk_grad %dy, %i {axis = -1 : i64, size = 10 : i64} : (!nn.tensor<[B, 3], f32>, !nn.tensor<[B, 3], i32>) -> !nn.tensor<[B, 10], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$dy, NN_IndexTensor:$indices,
                       DefaultValuedAttr<NN_I64Attr, "-1">:$axis,
                       NN_I64Attr:$size);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_SliceGradOp : NN_Op<"slice_grad", [Pure]> {
  let summary = "scatters the adjoint of a slice into zeros";
  let description = [{
    The adjoint of `nn.slice` with the same `starts`, `stops`, `steps` and
    `squeeze` applied to a tensor of `type`: a zero tensor of `type` whose
    sliced positions hold `dy`. `dy` has the rank of the slice's result; its
    extent along each dim gives the number of positions written (so a slice
    of a table [P, E] by a run-time length T can be scattered back).

    ```mlir
    %dx = nn.slice_grad %dy {starts = array<i64: 0, -1>, stops = array<i64: 9223372036854775807, 9223372036854775807>, steps = array<i64: 1, 1>, squeeze = array<i64: 1>, type = !nn.tensor<[B, T], f32>} : (!nn.tensor<[B], f32>) -> !nn.tensor<[B, T], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$dy, TypeAttrOf<NN_TensorType>:$type,
                       DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$stops,
                       DenseI64ArrayAttr:$steps,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$squeeze);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

#endif // NNCC_DIALECT_NN_IR_NNTENSOROPS_TD
