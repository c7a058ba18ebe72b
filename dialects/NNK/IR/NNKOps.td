//===- NNKOps.td - nnk dialect operations --------------------*- tablegen -*-===//
//
// The op contract, with the kernel-library function or generated loop that
// implements each op, is docs/nnk-spec.md. Every compute op is one kernel
// launch in destination-passing style: it reads its `ins` buffers, writes
// its `outs` buffers and has no results.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_KERNEL_IR_NNKOPS_TD
#define NNCC_DIALECT_KERNEL_IR_NNKOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "dialects/NNK/IR/NNKDialect.td"
include "dialects/NNK/IR/NNKTypes.td"
include "dialects/NNK/IR/NNKAttrs.td"

//===----------------------------------------------------------------------===//
// Constraints
//===----------------------------------------------------------------------===//

class NNK_BufferOf<list<Type> allowed, string desc>
    : Type<And<[NNK_BufferType.predicate,
                SubstLeaves<"$_self",
                  "::llvm::cast<::nncc::nnk::BufferType>($_self).getElementType()",
                  AnyTypeOf<allowed>.predicate>]>,
           desc, "::nncc::nnk::BufferType">;

def NNK_Buffer : Type<NNK_BufferType.predicate, "nnk buffer",
                      "::nncc::nnk::BufferType">;
def NNK_FloatBuffer : NNK_BufferOf<[F32, F64, BF16, F16],
                                   "nnk buffer of floating-point values">;
def NNK_IndexBuffer : NNK_BufferOf<[I32, I64], "nnk buffer of i32 or i64 values">;
def NNK_BoolBuffer : NNK_BufferOf<[I1], "nnk buffer of i1 values">;

// Read-only input / written output of a kernel.
class NNK_In<TypeConstraint t> : Arg<t, "", [MemRead]>;
class NNK_Out<TypeConstraint t> : Arg<t, "", [MemWrite]>;

def NNK_I64Attr : TypedSignlessIntegerAttrBase<I64, "int64_t",
                                               "64-bit integer attribute"> {
  let convertFromStorage = "$_self.getValue().getSExtValue()";
}
def NNK_F64Attr : FloatAttrBase<F64, "64-bit float attribute"> {
  let returnType = "double";
  let convertFromStorage = "$_self.getValueAsDouble()";
  let constBuilderCall = "$_builder.getF64FloatAttr($0)";
}

class NNK_Op<string mnemonic, list<Trait> traits = []>
    : Op<NNK_Dialect, mnemonic, traits> {
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Memory
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

//===----------------------------------------------------------------------===//
// Fused elementwise
//===----------------------------------------------------------------------===//

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
// GEMM family
//===----------------------------------------------------------------------===//

def NNK_GemmOp : NNK_Op<"gemm", [AttrSizedOperandSegments]> {
  let summary = "y = act(x · wᵀ + bias) + residual: one GEMM + fused epilogue";
  let description = [{
    PyTorch `Linear` convention: x `[..., K]` (all leading dims flattened to
    M rows), w `[N, K]`, bias `[N]`, residual and out `[..., N]` (out's
    leading dims equal x's). The residual is added after the activation.
    `alpha` is the negative slope of leaky_relu. Implemented by
    `nncc_linear_{f32,f64}` (cblas + one epilogue pass) on the CPU and
    cuBLAS + `linear_epilogue_kernel` on CUDA.
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$x,
    NNK_In<NNK_FloatBuffer>:$weight,
    NNK_In<Optional<NNK_FloatBuffer>>:$bias,
    NNK_In<Optional<NNK_FloatBuffer>>:$residual,
    NNK_Out<NNK_FloatBuffer>:$out,
    DefaultValuedAttr<NNK_ActivationAttr, "::nncc::nnk::Activation::none">:$activation,
    DefaultValuedAttr<NNK_F64Attr, "0.01">:$alpha
  );
  let assemblyFormat = [{
    `ins` `(` $x `,` $weight `)` (`bias` `(` $bias^ `)`)?
    (`residual` `(` $residual^ `)`)? `outs` `(` $out `)` attr-dict `:`
    qualified(type(operands))
  }];
}

def NNK_MatmulOp : NNK_Op<"matmul"> {
  let summary = "batched matrix product c = a · b";
  let description = [{
    a `[..., M, K]`, b `[..., K, N]`, out `[..., M, N]`; batch dims
    broadcast (NumPy). One `nncc_gemm_*` call per batch entry (strided
    batched cuBLAS on CUDA).
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$lhs,
                       NNK_In<NNK_FloatBuffer>:$rhs,
                       NNK_Out<NNK_FloatBuffer>:$out);
  let assemblyFormat = [{
    `ins` `(` $lhs `,` $rhs `)` `outs` `(` $out `)` attr-dict `:`
    qualified(type(operands))
  }];
}

//===----------------------------------------------------------------------===//
// Normalisation, softmax, reductions, embeddings
//===----------------------------------------------------------------------===//

def NNK_LayerNormOp : NNK_Op<"layer_norm", [AttrSizedOperandSegments]> {
  let summary = "y = LN(x + residual)·γ + β over the last dim, one pass";
  let description = [{
    Normalises `x + residual` (residual optional, same shape as x) over the
    last dim N with PyTorch's biased variance and `eps` inside the sqrt;
    weight γ and bias β `[N]` optional. The optional `sum` output receives
    `x + residual` (the residual stream). `nncc_layer_norm_*` on the CPU,
    `launch_layer_norm` on CUDA.
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$x,
    NNK_In<Optional<NNK_FloatBuffer>>:$residual,
    NNK_In<Optional<NNK_FloatBuffer>>:$weight,
    NNK_In<Optional<NNK_FloatBuffer>>:$bias,
    NNK_Out<NNK_FloatBuffer>:$out,
    NNK_Out<Optional<NNK_FloatBuffer>>:$sum,
    DefaultValuedAttr<NNK_F64Attr, "1.0e-5">:$eps
  );
  let assemblyFormat = [{
    `ins` `(` $x `)` (`residual` `(` $residual^ `)`)? (`weight` `(` $weight^ `)`)?
    (`bias` `(` $bias^ `)`)? `outs` `(` $out `)` (`sum` `(` $sum^ `)`)?
    attr-dict `:` qualified(type(operands))
  }];
}

def NNK_SoftmaxOp : NNK_Op<"softmax"> {
  let summary = "softmax along one axis";
  let description = [{
    out = softmax(x) along `axis` (normalised to [0, rank)); x viewed as
    `[outer, N, inner]`. `nncc_softmax_*`.
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$x, NNK_Out<NNK_FloatBuffer>:$out,
                       NNK_I64Attr:$axis);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $out `)` attr-dict `:` qualified(type(operands))
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

def NNK_EmbeddingOp : NNK_Op<"embedding"> {
  let summary = "row gather from a table";
  let description = [{
    out[..., :] = table[indices[...], :]; indices i32 or i64 `[...]`,
    table `[V, E]`, out `[..., E]`. An index outside [0, V) is an error
    (`NNCC_K_ERANGE`), nothing is written. `nncc_embedding{,_i32}_*`.
  }];
  let arguments = (ins NNK_In<NNK_IndexBuffer>:$indices,
                       NNK_In<NNK_FloatBuffer>:$table,
                       NNK_Out<NNK_FloatBuffer>:$out);
  let assemblyFormat = [{
    `ins` `(` $indices `,` $table `)` `outs` `(` $out `)` attr-dict `:`
    qualified(type(operands))
  }];
}

def NNK_SinusoidalPositionOp : NNK_Op<"sinusoidal_position"> {
  let summary = "out = x + PE(T, E) (Vaswani et al.)";
  let description = [{
    x and out `[B, T, E]`, E even. `nncc_sinusoidal_position_*`.
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$x, NNK_Out<NNK_FloatBuffer>:$out);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $out `)` attr-dict `:` qualified(type(operands))
  }];
}

def NNK_AxialPositionOp : NNK_Op<"axial_position"> {
  let summary = "out = x + the axial position embedding of rows and cols";
  let description = [{
    x and out `[B, T, d1 + d2]`, rows `[n1, 1, d1]`, cols `[1, n2, d2]`,
    T <= n1 * n2: out[b, t] = x[b, t] + [rows[t / n2], cols[t % n2]]
    (`nncc_axial_position_*`).
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$x, NNK_In<NNK_FloatBuffer>:$rows,
                       NNK_In<NNK_FloatBuffer>:$cols,
                       NNK_Out<NNK_FloatBuffer>:$out);
  let assemblyFormat = [{
    `ins` `(` $x `,` $rows `,` $cols `)` `outs` `(` $out `)` attr-dict `:`
    qualified(type(operands))
  }];
}

def NNK_AxialPositionGradOp : NNK_Op<"axial_position_grad"> {
  let summary = "the axial tables' adjoints: sums of dy per grid row and column";
  let description = [{
    dy `[B, T, d1 + d2]`; drows `[n1, 1, d1]` and dcols `[1, n2, d2]` are
    overwritten with the sums of dy's first d1 (last d2) columns over the
    batch and the positions t < T with t / n2 (t % n2) equal to the row
    (`nncc_axial_position_backward_*`).
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$dy,
                       NNK_Out<NNK_FloatBuffer>:$drows,
                       NNK_Out<NNK_FloatBuffer>:$dcols);
  let assemblyFormat = [{
    `ins` `(` $dy `)` `outs` `(` $drows `,` $dcols `)` attr-dict `:`
    qualified(type(operands))
  }];
}

def NNK_MaskTokensOp : NNK_Op<"mask_tokens"> {
  let summary = "masks floor(p * n) Philox-chosen positions of each token row";
  let description = [{
    tokens, masked and mask share the shape `[..., n]`: per row, the
    floor(p * n) positions with the smallest Philox keys (seed, step
    offset) hold `mask_id` in masked and 1 in mask; the rest copy tokens
    and hold 0 (`nncc_mask_tokens_i32/i64`; nncc/Kernels/TokenMath.h).
  }];
  let arguments = (ins NNK_In<NNK_IndexBuffer>:$tokens,
                       NNK_Out<NNK_IndexBuffer>:$masked,
                       NNK_Out<NNK_BoolBuffer>:$mask,
                       NNK_F64Attr:$p, NNK_I64Attr:$mask_id,
                       DefaultValuedAttr<NNK_I64Attr, "0">:$seed);
  let assemblyFormat = [{
    `ins` `(` $tokens `)` `outs` `(` $masked `,` $mask `)` attr-dict `:`
    qualified(type(operands))
  }];
}

def NNK_SampleOp : NNK_Op<"sample"> {
  let summary = "Gumbel-max draw of one class per row of logits";
  let description = [{
    logits `[..., V]`, out `[...]` (i32): out = argmax_v (logits[v] + g_v)
    with the Gumbel noise of (seed, step offset, row * V + v); rows where
    the optional `rows` mask `[...]` is 0 are not drawn and get 0
    (`nncc_sample_*`; nncc/Kernels/TokenMath.h).
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$logits,
                       NNK_In<Optional<NNK_BoolBuffer>>:$rows,
                       NNK_Out<NNK_IndexBuffer>:$out,
                       DefaultValuedAttr<NNK_I64Attr, "0">:$seed);
  let assemblyFormat = [{
    `ins` `(` $logits (`,` $rows^)? `)` `outs` `(` $out `)` attr-dict `:`
    qualified(type(operands))
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

def NNK_ZoneoutOp : NNK_Op<"zoneout"> {
  let summary = "zoneout with Philox randomness (training only)";
  let description = [{
    out = prev where element i's Philox draw for (seed, offset + i) is < p
    (probability p), new_state elsewhere (`nncc_zoneout_*`; the complement
    of `nnk.dropout`'s keep decision for the same draw). Created only in
    training-mode functions; the backward's `nn.zoneout` of the adjoint
    (same seed and step offset) draws the same mask.
  }];
  let arguments = (ins NNK_In<NNK_FloatBuffer>:$new_state,
                       NNK_In<NNK_FloatBuffer>:$prev,
                       NNK_Out<NNK_FloatBuffer>:$out,
                       NNK_F64Attr:$p, DefaultValuedAttr<NNK_I64Attr, "0">:$seed);
  let assemblyFormat = [{
    `ins` `(` $new_state `,` $prev `)` `outs` `(` $out `)` attr-dict `:`
    qualified(type(operands))
  }];
}

//===----------------------------------------------------------------------===//
// Data movement (generated strided-copy loops)
//===----------------------------------------------------------------------===//

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
// Recurrent
//===----------------------------------------------------------------------===//

def NNK_RecurrentScanOp : NNK_Op<"recurrent_scan", [AttrSizedOperandSegments]> {
  let summary = "persistent recurrent kernel: one layer, one direction, all steps";
  let description = [{
    Loops over time inside one launch for layer/direction
    `state_index = l·D + d`. `xproj [B, T, G·H]` is the input projection of
    all steps (`x · W_ihᵀ + b_ih`, done by a preceding `nnk.gemm`); each step
    adds `h · W_hhᵀ + b_hh` and applies the gate math of `cell`
    (RecurrentMath.h; G = 1 rnn, 4 lstm i f g o, 3 gru r z n). Writes the
    columns `[d·H, (d+1)·H)` of `y [B, T, D·H]` (D = `num_directions`),
    zero past each sequence's length. `h0`/`c0`, `h_n`/`c_n` are the whole
    `[L·D, B, H]` state buffers; this op reads/writes entry `state_index`
    (h0/c0 absent: zeros). `lengths [B]` (i32/i64): no work past a
    length; `reverse` processes `t = len_b − 1 − s` at step s. `zoneout`
    (lstm, training only: nn-inference-semantics zeroes it in inference) keeps
    h and c of a unit with probability `zoneout` per step, mask from
    Philox(`seed`, step offset + counter of (state_index, t, b, j));
    `nncc_rnn_layer_zoneout_*`. CUDA (zoneout = 0 only):
    `launch_rnn_layer`; CPU: the per-step loop of `nncc_rnn_forward_*`
    (recurrent GEMM over the active rows + one gate pass per step).
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$xproj,
    NNK_In<NNK_FloatBuffer>:$w_hh,
    NNK_In<Optional<NNK_FloatBuffer>>:$b_hh,
    NNK_In<Optional<NNK_FloatBuffer>>:$h0,
    NNK_In<Optional<NNK_FloatBuffer>>:$c0,
    NNK_In<Optional<NNK_IndexBuffer>>:$lengths,
    NNK_Out<NNK_FloatBuffer>:$y,
    NNK_Out<Optional<NNK_FloatBuffer>>:$h_n,
    NNK_Out<Optional<NNK_FloatBuffer>>:$c_n,
    NNK_CellAttr:$cell,
    NNK_I64Attr:$hidden_size,
    DefaultValuedAttr<BoolAttr, "false">:$reverse,
    DefaultValuedAttr<NNK_I64Attr, "1">:$num_directions,
    DefaultValuedAttr<NNK_I64Attr, "0">:$state_index,
    DefaultValuedAttr<NNK_F64Attr, "0.0">:$zoneout,
    DefaultValuedAttr<NNK_I64Attr, "0">:$seed
  );
  let assemblyFormat = [{
    `ins` `(` $xproj `,` $w_hh `)` (`bias` `(` $b_hh^ `)`)? (`h0` `(` $h0^ `)`)?
    (`c0` `(` $c0^ `)`)? (`lengths` `(` $lengths^ `)`)?
    `outs` `(` $y `)` (`h_n` `(` $h_n^ `)`)? (`c_n` `(` $c_n^ `)`)?
    attr-dict `:` qualified(type(operands))
  }];
}

def NNK_RecurrentCellOp : NNK_Op<"recurrent_cell", [AttrSizedOperandSegments]> {
  let summary = "one recurrent step: h·W_hhᵀ + gate math (one launch)";
  let description = [{
    `xproj [B, G·H]` (= x · W_ihᵀ + b_ih from a preceding `nnk.gemm`),
    `h [B, H]`, `c [B, H]` (lstm only), `w_hh [G·H, H]`, `b_hh [G·H]`.
    Writes `h_out [B, H]` and, for lstm, `c_out`. Same gate math as
    `nnk.recurrent_scan` for one step.
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$xproj,
    NNK_In<NNK_FloatBuffer>:$h,
    NNK_In<Optional<NNK_FloatBuffer>>:$c,
    NNK_In<NNK_FloatBuffer>:$w_hh,
    NNK_In<Optional<NNK_FloatBuffer>>:$b_hh,
    NNK_Out<NNK_FloatBuffer>:$h_out,
    NNK_Out<Optional<NNK_FloatBuffer>>:$c_out,
    NNK_CellAttr:$cell
  );
  let assemblyFormat = [{
    `ins` `(` $xproj `,` $h `,` $w_hh `)` (`c` `(` $c^ `)`)? (`bias` `(` $b_hh^ `)`)?
    `outs` `(` $h_out `)` (`c_out` `(` $c_out^ `)`)? attr-dict `:`
    qualified(type(operands))
  }];
}

//===----------------------------------------------------------------------===//
// Attention cores (on a packed projection; see docs/nnk-spec.md)
//===----------------------------------------------------------------------===//

def NNK_FlashAttentionOp : NNK_Op<"flash_attention", [AttrSizedOperandSegments]> {
  let summary = "dense attention, flash-style (online softmax, no T×T buffer)";
  let description = [{
    `qkv [B, T, 3E]` packs q, k, v in columns `[0,E)`, `[E,2E)`, `[2E,3E)`
    (the in-projection's output); head h owns columns `[h·dh, (h+1)·dh)`
    of each, dh = E / num_heads. `out [B, T, E]`. `mask [B, T]` (i1, true =
    padded key), `causal` masks keys j > i; `scale` 0 means 1/√dh.
    `dropout` > 0 (training functions only) drops attention weights with
    Philox(`seed`, step offset) and the counters of `nncc_attention_params`.
    The optional `lse` `[B, num_heads, T]` receives each query's
    log-sum-exp (training forwards whose gradient reuses them).
    `nncc_attention_*` with `NNCC_ATTN_DENSE` (ld_in = 3E) /
    `launch_flash_attention`.
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$qkv,
    NNK_In<Optional<NNK_BoolBuffer>>:$mask,
    NNK_Out<NNK_FloatBuffer>:$out,
    NNK_Out<Optional<NNK_FloatBuffer>>:$lse,
    NNK_I64Attr:$num_heads,
    DefaultValuedAttr<BoolAttr, "false">:$causal,
    DefaultValuedAttr<NNK_F64Attr, "0.0">:$scale,
    DefaultValuedAttr<NNK_F64Attr, "0.0">:$dropout,
    DefaultValuedAttr<NNK_I64Attr, "0">:$seed
  );
  let assemblyFormat = [{
    `ins` `(` $qkv `)` (`mask` `(` $mask^ `)`)? `outs` `(` $out `)`
    (`lse` `(` $lse^ `)`)? attr-dict `:` qualified(type(operands))
  }];
}

def NNK_BandedAttentionOp : NNK_Op<"banded_attention", [AttrSizedOperandSegments]> {
  let summary = "dilated sliding-window + global-token attention, O(T·w)";
  let description = [{
    Same packing as `nnk.flash_attention`. Query i attends key j iff
    `|i−j| ≤ (window/2)·dilation` and `(i−j) mod dilation = 0`, or i or j
    is global: in `global` (positions ≥ T ignored) or, per example, marked
    by `global_mask` `[B, T]` (not padded), intersected with causal/padding.
    `dropout`, `seed` and `lse` as for `nnk.flash_attention`.
    `convention` `"hf"` (nn.dilated's; Hugging Face's
    LongformerSelfAttention): `qkv` is `[B, T, 6E]`, the global queries'
    rows attend with the projections in columns `[3E, 6E)`, and a padded
    query's row is zero.
    `nncc_attention_*` with `NNCC_ATTN_DILATED` / `launch_dilated_attention_dyn`.
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$qkv,
    NNK_In<Optional<NNK_BoolBuffer>>:$mask,
    NNK_In<Optional<NNK_BoolBuffer>>:$global_mask,
    NNK_Out<NNK_FloatBuffer>:$out,
    NNK_Out<Optional<NNK_FloatBuffer>>:$lse,
    NNK_I64Attr:$num_heads,
    NNK_I64Attr:$window,
    DefaultValuedAttr<NNK_I64Attr, "1">:$dilation,
    DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$global,
    DefaultValuedAttr<BoolAttr, "false">:$causal,
    DefaultValuedAttr<NNK_F64Attr, "0.0">:$scale,
    DefaultValuedAttr<NNK_F64Attr, "0.0">:$dropout,
    DefaultValuedAttr<NNK_I64Attr, "0">:$seed,
    DefaultValuedAttr<StrAttr, "\"nncc\"">:$convention
  );
  let assemblyFormat = [{
    `ins` `(` $qkv `)` (`mask` `(` $mask^ `)`)? (`global_mask` `(` $global_mask^ `)`)?
    `outs` `(` $out `)` (`lse` `(` $lse^ `)`)? attr-dict `:` qualified(type(operands))
  }];
  let hasVerifier = 1;
}

def NNK_LSHAttentionOp : NNK_Op<"lsh_attention", [AttrSizedOperandSegments]> {
  let summary = "Reformer LSH attention: hash, sort, chunked attention, logsumexp";
  let description = [{
    `qkv [B, T, 2E]`: shared query/key in columns `[0,E)`, values in
    `[E,2E)`. Per hash round: bucket = argmax([xR; −xR]) with
    `rotations [hashes, dh, n_buckets/2]`, stable sort by (bucket,
    position), chunks of `chunk`, attention to own + previous chunk with
    unit-normalised keys and no self-attention unless nothing else is
    admissible; rounds combined by logsumexp (Reformer masking; see
    docs/kernels.md). Without `rotations` the op draws them N(0,1) from
    Philox(`seed`) with `n_buckets = 2^bitlength(2·(T/chunk)) / 2`
    (HuggingFace's rule, at least 2) into its workspace. `dropout` drops
    attention weights per hash round (counters of `nncc_attention_params`)
    with the same `seed`. `lse` (optional) receives the log-sum-exp of each
    query's combined weights (over the rounds). `nncc_attention_*` with
    `NNCC_ATTN_LSH`.

    `convention` is nn.lsh's: `"hf"` (the default; `NNCC_LSH_HF`: Hugging
    Face's `LSHSelfAttention`, rotations
    `[num_heads, dh, hashes, n_buckets/2]` per head, drawn that size when
    not given; one sorted sequence over the rounds with look-back across
    them, `scale` 0 meaning 1) or `"nncc"` (`NNCC_LSH_NNCC`: the semantics
    above, rotations shared by the heads). docs/kernels.md, "LSH".
    `pad_to_multiple` / `pad_above` (hf only) are nn.lsh's: ReformerModel's
    padding of T.
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$qkv,
    NNK_In<Optional<NNK_BoolBuffer>>:$mask,
    NNK_In<Optional<NNK_FloatBuffer>>:$rotations,
    NNK_Out<NNK_FloatBuffer>:$out,
    NNK_Out<Optional<NNK_FloatBuffer>>:$lse,
    NNK_I64Attr:$num_heads,
    NNK_I64Attr:$hashes,
    NNK_I64Attr:$chunk,
    DefaultValuedAttr<BoolAttr, "false">:$causal,
    DefaultValuedAttr<NNK_F64Attr, "0.0">:$scale,
    DefaultValuedAttr<NNK_I64Attr, "0">:$seed,
    DefaultValuedAttr<NNK_F64Attr, "0.0">:$dropout,
    DefaultValuedAttr<StrAttr, "\"hf\"">:$convention,
    DefaultValuedAttr<NNK_I64Attr, "0">:$pad_to_multiple,
    DefaultValuedAttr<NNK_I64Attr, "0">:$pad_above
  );
  let assemblyFormat = [{
    `ins` `(` $qkv `)` (`mask` `(` $mask^ `)`)? (`rotations` `(` $rotations^ `)`)?
    `outs` `(` $out `)` (`lse` `(` $lse^ `)`)? attr-dict `:`
    qualified(type(operands))
  }];
}

def NNK_LocalAttentionOp : NNK_Op<"local_attention", [AttrSizedOperandSegments]> {
  let summary = "chunked local attention (Reformer's LocalSelfAttention)";
  let description = [{
    Same packing as `nnk.flash_attention` (`qkv [B, T, 3E]`). With T >
    `chunk`, the queries of chunk c attend to the keys of chunks
    c − `chunks_before` … c + `chunks_after`, chunk indices wrapping around
    the sequence; with T ≤ `chunk`, to all T keys. Masked keys (`mask`,
    `causal` by absolute index) score −1e9. `scale` 0 means 1/√dh;
    `dropout`, `seed` and `lse` as for `nnk.flash_attention`;
    `pad_to_multiple` / `pad_above` as nnk.lsh_attention's.
    `nncc_attention_*` with `NNCC_ATTN_LOCAL`; CPU only.
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$qkv,
    NNK_In<Optional<NNK_BoolBuffer>>:$mask,
    NNK_Out<NNK_FloatBuffer>:$out,
    NNK_Out<Optional<NNK_FloatBuffer>>:$lse,
    NNK_I64Attr:$num_heads,
    NNK_I64Attr:$chunk,
    DefaultValuedAttr<NNK_I64Attr, "1">:$chunks_before,
    DefaultValuedAttr<NNK_I64Attr, "0">:$chunks_after,
    DefaultValuedAttr<NNK_I64Attr, "0">:$pad_to_multiple,
    DefaultValuedAttr<NNK_I64Attr, "0">:$pad_above,
    DefaultValuedAttr<BoolAttr, "false">:$causal,
    DefaultValuedAttr<NNK_F64Attr, "0.0">:$scale,
    DefaultValuedAttr<NNK_F64Attr, "0.0">:$dropout,
    DefaultValuedAttr<NNK_I64Attr, "0">:$seed
  );
  let assemblyFormat = [{
    `ins` `(` $qkv `)` (`mask` `(` $mask^ `)`)? `outs` `(` $out `)`
    (`lse` `(` $lse^ `)`)? attr-dict `:` qualified(type(operands))
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def NNK_LossOp : NNK_Op<"loss"> {
  let summary = "mean-reduced loss into a scalar buffer";
  let description = [{
    `mse(pred, target)`, `cross_entropy(logits [..., C], target i32/i64
    [...], ignore_index)`, `bce_with_logits(logits, target, pos_weight?
    [C])`; out `[]`. `nncc_mse_loss_*`, `nncc_cross_entropy_*`,
    `nncc_bce_with_logits_*` (i32 targets widened by the emitter).
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$input,
    NNK_In<NNK_Buffer>:$target,
    NNK_In<Optional<NNK_FloatBuffer>>:$pos_weight,
    NNK_Out<NNK_FloatBuffer>:$out,
    NNK_LossKindAttr:$kind,
    DefaultValuedAttr<NNK_I64Attr, "-100">:$ignore_index
  );
  let assemblyFormat = [{
    `ins` `(` $input `,` $target `)` (`pos_weight` `(` $pos_weight^ `)`)?
    `outs` `(` $out `)` attr-dict `:` qualified(type(operands))
  }];
}

def NNK_LinearSampleOp : NNK_Op<"linear_sample", [AttrSizedOperandSegments]> {
  let summary = "chunked linear + Gumbel-max sampling of the drawn rows";
  let description = [{
    x `[..., K]` (N rows), weight `[V, K]`, bias `[V]`, rows i1 `[...]`,
    out i32 `[...]`: `nnk.sample` of the logits x weight^T + bias with the
    same `seed` and noise, computed for the drawn rows only, in chunks of
    `nncc_linear_ce_chunk_rows(N, V)` rows through a workspace of
    `nncc_linear_sample_workspace_size(N, K, V, elem)` bytes
    (`nncc_linear_sample_*`). CPU only (training functions).
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$x,
    NNK_In<NNK_FloatBuffer>:$weight,
    NNK_In<Optional<NNK_FloatBuffer>>:$bias,
    NNK_In<Optional<NNK_BoolBuffer>>:$rows,
    NNK_Out<NNK_IndexBuffer>:$out,
    DefaultValuedAttr<NNK_I64Attr, "0">:$seed
  );
  let assemblyFormat = [{
    `ins` `(` $x `,` $weight (`,` `bias` $bias^)? (`,` `rows` $rows^)? `)`
    `outs` `(` $out `)` attr-dict `:` qualified(type(operands))
  }];
}

def NNK_LinearCrossEntropyOp : NNK_Op<"linear_cross_entropy",
                                      [AttrSizedOperandSegments]> {
  let summary = "chunked linear + softmax cross-entropy with its unit-adjoint gradients";
  let description = [{
    x `[..., K]` (N rows), weight `[V, K]`, target i32/i64 `[...]`, bias
    `[V]`; writes loss `[]` (mean over the targets != `ignore_index`),
    dx `[..., K]`, dweight `[V, K]`, dbias `[V]` (the gradients for a unit
    loss adjoint) and, when present, the logits `[..., V]`. The kernel
    (`nncc_linear_cross_entropy_*`) walks the rows in chunks of
    `nncc_linear_ce_chunk_rows(N, V)`: per chunk one GEMM for the logits
    into a workspace of chunk × V values, the softmax gradient in place,
    then one GEMM for the chunk's dx rows and one accumulating dweight.
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$x,
    NNK_In<NNK_FloatBuffer>:$weight,
    NNK_In<NNK_IndexBuffer>:$target,
    NNK_In<Optional<NNK_FloatBuffer>>:$bias,
    NNK_Out<NNK_FloatBuffer>:$loss,
    NNK_Out<NNK_FloatBuffer>:$dx,
    NNK_Out<NNK_FloatBuffer>:$dweight,
    NNK_Out<NNK_FloatBuffer>:$dbias,
    NNK_Out<Optional<NNK_FloatBuffer>>:$logits,
    DefaultValuedAttr<NNK_I64Attr, "-100">:$ignore_index
  );
  let assemblyFormat = [{
    `ins` `(` $x `,` $weight `,` $target `)` (`bias` `(` $bias^ `)`)?
    `outs` `(` $loss `,` $dx `,` $dweight `,` $dbias `)`
    (`logits` `(` $logits^ `)`)? attr-dict `:` qualified(type(operands))
  }];
}

//===----------------------------------------------------------------------===//
// ODE solvers (host-side loops of launches)
//===----------------------------------------------------------------------===//

def NNK_ODESolveOp : NNK_Op<"ode_solve"> {
  let summary = "fixed-step or adaptive ODE solve; body = one dynamics evaluation";
  let description = [{
    Integrates dh/dt = f(t, h) from t0 to t1 (`[]` buffers) starting at h0,
    writing h(t1) to `out`. The `dynamics` region has arguments
    `(t : [] buffer, h : state buffer, dh : state buffer)`, evaluates f once
    into `dh` with nnk ops and ends with `nnk.yield`. The emitter runs a
    host-side loop: per RK stage, one evaluation of the body, then ONE fused
    elementwise kernel forming the next stage input
    `h + dt·Σ a_sj k_j` (and after the last stage the update
    `h + dt·Σ b_j k_j`). Euler: 1 stage; rk4: 4 (classic 1/6, 1/3, 1/3,
    1/6); dopri5: 7 (Dormand–Prince 5(4)), with `steps = 0` an adaptive
    host loop on the error-norm scalar
    `sqrt(mean((err / (atol + rtol·max(|h|,|h_new|)))²))` (accept if ≤ 1;
    step factor 0.9·e^(−1/5) clamped to [0.2, 10]).
    `work [K, ...state dims]` holds the stage slots: K = 2 (euler: k1,
    stage input), 5 (rk4: k1..k4, stage input), 9 (dopri5: k1..k7, stage
    input, error). `adjoint` is kept for training.
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$h0,
    NNK_In<NNK_FloatBuffer>:$t0,
    NNK_In<NNK_FloatBuffer>:$t1,
    NNK_Out<NNK_FloatBuffer>:$out,
    NNK_Out<NNK_FloatBuffer>:$work,
    NNK_ODEMethodAttr:$method,
    DefaultValuedAttr<NNK_I64Attr, "0">:$steps,
    DefaultValuedAttr<NNK_F64Attr, "1.0e-7">:$rtol,
    DefaultValuedAttr<NNK_F64Attr, "1.0e-9">:$atol,
    DefaultValuedAttr<BoolAttr, "false">:$adjoint
  );
  let regions = (region SizedRegion<1>:$dynamics);
  let assemblyFormat = [{
    `ins` `(` $h0 `,` $t0 `,` $t1 `)` `outs` `(` $out `)` `work` `(` $work `)`
    attr-dict `:` qualified(type(operands)) $dynamics
  }];
}

def NNK_ODERNNOp : NNK_Op<"ode_rnn"> {
  let summary = "ODE-RNN: per time step an ODE solve between observations, then the cell";
  let description = [{
    x `[B, T, I]`, times `[B, T]`, h0 `[B, H]` (absent: zeros), out
    `hs [B, T, H]`. For i = 0..T−1: per row b, h ← ODESolve(f, h,
    t_{i−1,b}, t_{i,b}) with t_{−1} = t_0 (so step 0 does not evolve),
    using the per-row time deltas `[B, 1]`; then h ← cell(x[:, i], h) and
    hs[:, i] = h. Region `dynamics (t : [B, 1], h : [B, H], dh : [B, H])`
    (t is each row's time), region `cell (x_t : [B, I], h : [B, H],
    h_out : [B, H])`; both end with `nnk.yield`. Stage combinations as in
    `nnk.ode_solve` (one fused elementwise kernel per stage, per-row dt).
    `work [K + 2, B, H]` (the solver's K slots, then the current h and the
    cell's output h_next); `xt [B, I]` receives x[:, i] before the cell runs.
  }];
  let arguments = (ins
    NNK_In<NNK_FloatBuffer>:$x,
    NNK_In<NNK_FloatBuffer>:$times,
    NNK_In<Optional<NNK_FloatBuffer>>:$h0,
    NNK_Out<NNK_FloatBuffer>:$out,
    NNK_Out<NNK_FloatBuffer>:$work,
    NNK_Out<NNK_FloatBuffer>:$xt,
    NNK_I64Attr:$hidden_size,
    NNK_ODEMethodAttr:$method,
    DefaultValuedAttr<NNK_I64Attr, "0">:$steps,
    DefaultValuedAttr<NNK_F64Attr, "1.0e-7">:$rtol,
    DefaultValuedAttr<NNK_F64Attr, "1.0e-9">:$atol,
    DefaultValuedAttr<BoolAttr, "false">:$adjoint
  );
  let regions = (region SizedRegion<1>:$dynamics, SizedRegion<1>:$cell);
  let assemblyFormat = [{
    `ins` `(` $x `,` $times (`,` $h0^)? `)` `outs` `(` $out `)`
    `work` `(` $work `,` $xt `)` attr-dict `:` qualified(type(operands))
    `dynamics` $dynamics `cell` $cell
  }];
}

include "dialects/NNK/IR/NNKGradOps.td"

#endif // NNCC_DIALECT_KERNEL_IR_NNKOPS_TD
