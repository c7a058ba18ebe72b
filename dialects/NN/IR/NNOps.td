//===- NNOps.td - nn dialect operations ----------------------*- tablegen -*-===//
//
// The op contract is docs/dialect-spec.md. Every op but nn.get_parameter
// computes its result types with InferTypeOpInterface; the inference is where
// shape and dtype errors are diagnosed. Result types need only be compatible
// with the inferred ones (`?` matches any dim).
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NN_IR_NNOPS_TD
#define NNCC_DIALECT_NN_IR_NNOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "dialects/NN/IR/NNDialect.td"
include "dialects/NN/IR/NNTypes.td"
include "dialects/NN/IR/NNAttrs.td"
include "dialects/NN/IR/NNInterfaces.td"

//===----------------------------------------------------------------------===//
// Constraints
//===----------------------------------------------------------------------===//

class NN_TensorOf<list<Type> allowed, string desc>
    : Type<And<[NN_TensorType.predicate,
                SubstLeaves<"$_self",
                  "::llvm::cast<::nncc::nn::TensorType>($_self).getElementType()",
                  AnyTypeOf<allowed>.predicate>]>,
           desc, "::nncc::nn::TensorType">;

def NN_FloatTensor : NN_TensorOf<[F32, F64, BF16, F16],
                                 "nn tensor of floating-point values">;
def NN_IndexTensor : NN_TensorOf<[I32, I64], "nn tensor of i32 or i64 values">;
def NN_BoolTensor : NN_TensorOf<[I1], "nn tensor of i1 values">;

// Integer attribute read as a signed int64_t (axes may be negative).
def NN_I64Attr : TypedSignlessIntegerAttrBase<I64, "int64_t",
                                              "64-bit integer attribute"> {
  let convertFromStorage = "$_self.getValue().getSExtValue()";
}
// Float attribute read as a double.
def NN_F64Attr : FloatAttrBase<F64, "64-bit float attribute"> {
  let returnType = "double";
  let convertFromStorage = "$_self.getValueAsDouble()";
  let constBuilderCall = "$_builder.getF64FloatAttr($0)";
}

//===----------------------------------------------------------------------===//
// Base classes
//===----------------------------------------------------------------------===//

// InferTypeOpInterface through the op's adaptor, accepting result types that
// are compatible (not only equal) with the inferred ones.
def NN_InferTypeOpAdaptor : InferTypeOpAdaptorBase<[{
    static bool isCompatibleReturnTypes(::mlir::TypeRange lhs,
                                        ::mlir::TypeRange rhs) {
      return ::nncc::nn::areCompatibleTypes(lhs, rhs);
    }
  }]>;

// For ops with an optional trailing `reserve` result (!nn.reserve): the
// inferred types leave it out.
def NN_InferTypeOpAdaptorWithReserve : InferTypeOpAdaptorBase<[{
    static bool isCompatibleReturnTypes(::mlir::TypeRange lhs,
                                        ::mlir::TypeRange rhs) {
      return ::nncc::nn::areCompatibleTypesUpToReserve(lhs, rhs);
    }
  }]>;

class NN_Op<string mnemonic, list<Trait> traits = [],
            Trait inferTypes = NN_InferTypeOpAdaptor>
    : Op<NN_Dialect, mnemonic, traits # [inferTypes]>;

// A forward op that may keep a reserve for its gradient op.
class NN_ReserveOp<string mnemonic, list<Trait> traits = []>
    : NN_Op<mnemonic, traits, NN_InferTypeOpAdaptorWithReserve>;

defvar NN_ReserveDoc = [{

    The optional last result `reserve` (`!nn.reserve`) may only be read by
    the `reserve` operand of this op's gradient op, which then reads what
    this op kept instead of running it again. `nncc-autodiff` adds it in
    the training function when the op and its gradient op sit at the
    function's top level; type inference leaves it out.
}];

// Shared form: operands, then every type once as a function type.
defvar NN_FunctionalFormat =
    "operands attr-dict `:` functional-type(operands, results)";

//===----------------------------------------------------------------------===//
// Structural ops
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
// Elementwise ops
//===----------------------------------------------------------------------===//

class NN_BinaryOp<string mnemonic, string noun>
    : NN_Op<mnemonic, [Pure]> {
  let summary = noun # " with NumPy broadcasting";
  let description = [{
    Elementwise }] # noun # [{ of `lhs` and `rhs`, which have the same
    element type and broadcastable shapes (aligned on the right, each pair of
    dims equal or one of them 1). The result has the broadcast shape.

    ```mlir
    %z = nn.}] # mnemonic # [{ %x, %y : (!nn.tensor<[B, 4], f32>, !nn.tensor<[4], f32>) -> !nn.tensor<[B, 4], f32>
    ```
  }];
  let arguments = (ins NN_TensorType:$lhs, NN_TensorType:$rhs);
  let results = (outs NN_TensorType:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_AddOp : NN_BinaryOp<"add", "sum">;
def NN_SubOp : NN_BinaryOp<"sub", "difference">;
def NN_MulOp : NN_BinaryOp<"mul", "product">;
def NN_DivOp : NN_BinaryOp<"div", "quotient">;

def NN_CompareOp : NN_Op<"compare", [Pure]> {
  let summary = "elementwise comparison into an i1 tensor, NumPy broadcasting";
  let description = [{
    `predicate`(`lhs`, `rhs`) per element: `lhs` and `rhs` have the same
    element type (integer or float) and broadcastable shapes; the result is
    an i1 tensor of the broadcast shape. It has no gradient.

    ```mlir
    %c = nn.compare %x, %y {predicate = #nn<cmp ne>} : (!nn.tensor<[B, T], i32>, !nn.tensor<[B, T], i32>) -> !nn.tensor<[B, T], i1>
    ```
  }];
  let arguments = (ins NN_TensorType:$lhs, NN_TensorType:$rhs,
                       NN_ComparePredicateAttr:$predicate);
  let results = (outs NN_BoolTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_SelectOp : NN_Op<"select", [Pure]> {
  let summary = "elementwise choice cond ? a : b, NumPy broadcasting";
  let description = [{
    Per element, `a` where the i1 `cond` is true and `b` where it is false.
    `a` and `b` have the same element type, which is the result's; the three
    shapes broadcast to the result's. The gradient of a float select routes
    the result's adjoint to `a` where `cond` holds and to `b` elsewhere.

    ```mlir
    %t = nn.select %mask, %tokens, %ignore : (!nn.tensor<[B, T], i1>, !nn.tensor<[B, T], i32>, !nn.tensor<[], i32>) -> !nn.tensor<[B, T], i32>
    ```
  }];
  let arguments = (ins NN_BoolTensor:$cond, NN_TensorType:$a,
                       NN_TensorType:$b);
  let results = (outs NN_TensorType:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_CastOp : NN_Op<"cast", [Pure]> {
  let summary = "elementwise conversion to another element type";
  let description = [{
    Converts `x` to the element type `to` (f32, f64, i32, i64 or i1); the
    shape is kept. i1 becomes 0 or 1; a float or integer becomes i1 as
    `x != 0`; a float becomes an integer by truncation toward zero. Only
    float-to-float casts carry a gradient (the adjoint cast back).

    ```mlir
    %f = nn.cast %mask {to = f32} : (!nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T], f32>
    ```
  }];
  let arguments = (ins NN_TensorType:$x, TypeAttr:$to);
  let results = (outs NN_TensorType:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

class NN_UnaryOp<string mnemonic, string noun,
                 dag extraArguments = (ins), list<Trait> traits = []>
    : NN_Op<mnemonic, !listconcat([Pure], traits)> {
  let summary = noun;
  let description = [{
    Applies }] # noun # [{ elementwise to the floating-point tensor
    `x`; the result has the type of `x`.

    ```mlir
    %y = nn.}] # mnemonic # [{ %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    ```
  }];
  let arguments = !con((ins NN_FloatTensor:$x), extraArguments);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_NegOp : NN_UnaryOp<"neg", "negation">;
def NN_ReluOp : NN_UnaryOp<"relu", "the rectified linear unit max(x, 0)">;
def NN_TanhOp : NN_UnaryOp<"tanh", "the hyperbolic tangent">;
def NN_SigmoidOp : NN_UnaryOp<"sigmoid", "the logistic sigmoid 1 / (1 + e^-x)">;
def NN_ExpOp : NN_UnaryOp<"exp", "the exponential">;
def NN_LogOp : NN_UnaryOp<"log", "the natural logarithm">;

def NN_LeakyReluOp : NN_UnaryOp<"leaky_relu",
    "the leaky ReLU max(x, 0) + alpha * min(x, 0)",
    (ins DefaultValuedAttr<NN_F64Attr, "0.01">:$alpha)>;

def NN_GeluOp : NN_UnaryOp<"gelu",
    "the Gaussian error linear unit (exact or tanh-approximated)",
    (ins DefaultValuedAttr<NN_GeluApproximationAttr,
                           "::nncc::nn::GeluApproximation::none">:$approximate)>;

def NN_SoftmaxOp : NN_UnaryOp<"softmax",
    "softmax along `axis` (negative counts from the end)",
    (ins DefaultValuedAttr<NN_I64Attr, "-1">:$axis)> {
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Tensor ops
//===----------------------------------------------------------------------===//

def NN_MatmulOp : NN_Op<"matmul", [Pure]> {
  let summary = "batched matrix product";
  let description = [{
    `lhs` [..., M, K] times `rhs` [..., K, N] gives [..., M, N]; both have
    rank >= 2 and the same element type, and the batch dims broadcast.

    ```mlir
    %c = nn.matmul %a, %b : (!nn.tensor<[B, T, 8], f32>, !nn.tensor<[8, 4], f32>) -> !nn.tensor<[B, T, 4], f32>
    ```
  }];
  let arguments = (ins NN_TensorType:$lhs, NN_TensorType:$rhs);
  let results = (outs NN_TensorType:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_LinearOp : NN_Op<"linear", [Pure]> {
  let summary = "affine map x W^T + b over the last dim";
  let description = [{
    As `torch.nn.functional.linear`: `x` [..., in], `weight` [out, in] and the
    optional `bias` [out] give [..., out].

    ```mlir
    %y = nn.linear %x, %w, %b : (!nn.tensor<[B, 20], f32>, !nn.tensor<[10, 20], f32>, !nn.tensor<[10], f32>) -> !nn.tensor<[B, 10], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x, NN_FloatTensor:$weight,
                       Optional<NN_FloatTensor>:$bias);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_EmbeddingOp : NN_Op<"embedding", [Pure]> {
  let summary = "table lookup";
  let description = [{
    Gathers rows of `table` [V, E] at the integer `indices` [...], giving
    [..., E]. With `padding_idx` p >= 0 (PyTorch's `nn.Embedding(padding_idx=)`,
    Hugging Face's `pad_token_id`), row p gets no gradient: it is looked up
    as any row but stays as it is in training. -1 (the default): none.

    ```mlir
    %e = nn.embedding %ids, %table {padding_idx = 0 : i64} : (!nn.tensor<[B, T], i64>, !nn.tensor<[1000, 64], f32>) -> !nn.tensor<[B, T, 64], f32>
    ```
  }];
  let arguments = (ins NN_IndexTensor:$indices, NN_FloatTensor:$table,
                       DefaultValuedAttr<NN_I64Attr, "-1">:$padding_idx);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
  let hasVerifier = 1;
}

def NN_LayerNormOp : NN_Op<"layer_norm", [Pure, AttrSizedOperandSegments]> {
  let summary = "layer normalisation over the last dim";
  let description = [{
    Normalises `x` [..., N] over its last dim with epsilon `eps` (> 0), then
    scales by the optional `weight` [N] and shifts by the optional `bias`
    [N]. The result has the type of `x`.

    ```mlir
    %y = nn.layer_norm %x weight %g bias %b {eps = 1.0e-05 : f64} : (!nn.tensor<[B, 64], f32>, !nn.tensor<[64], f32>, !nn.tensor<[64], f32>) -> !nn.tensor<[B, 64], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x,
                       Optional<NN_FloatTensor>:$weight,
                       Optional<NN_FloatTensor>:$bias,
                       DefaultValuedAttr<NN_F64Attr, "1.0e-5">:$eps);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $x (`weight` $weight^)? (`bias` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_DropoutOp : NN_Op<"dropout", [Pure]> {
  let summary = "inverted dropout with a fixed seed";
  let description = [{
    In training, zeroes each element of `x` with probability `p` (in [0, 1))
    and scales the rest by 1 / (1 - p); the mask is a function of `seed`, so
    the op is deterministic. Result type = type of `x`.

    ```mlir
    %y = nn.dropout %x {p = 1.0e-01 : f64, seed = 7 : i64} : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x,
                       DefaultValuedAttr<NN_F64Attr, "0.5">:$p,
                       DefaultValuedAttr<NN_I64Attr, "0">:$seed);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
  let hasVerifier = 1;
}

def NN_MaskTokensOp : NN_Op<"mask_tokens", [Pure]> {
  let summary = "masks floor(p * n) random positions of each row of tokens";
  let description = [{
    Token masking of ELECTRA / BERT pretraining (seed thesis §4.4.4,
    Algorithm 2, steps 1-3): in each row (the last dim, n tokens) of
    `tokens`, floor(`p` * n) positions chosen uniformly without replacement
    are replaced by `mask_id` in `masked`; `mask` is true exactly there. The
    choice is a function of `seed` and the training step (Philox, like
    dropout), so a backward pass or a reference can reproduce it; it is made
    in inference as well. No gradient flows through either result.

    ```mlir
    %masked, %mask = nn.mask_tokens %tokens {p = 1.5e-01 : f64, mask_id = 103 : i64, seed = 3 : i64} : (!nn.tensor<[B, T], i32>) -> (!nn.tensor<[B, T], i32>, !nn.tensor<[B, T], i1>)
    ```
  }];
  let arguments = (ins NN_IndexTensor:$tokens, NN_F64Attr:$p,
                       NN_I64Attr:$mask_id,
                       DefaultValuedAttr<NN_I64Attr, "0">:$seed);
  let results = (outs NN_IndexTensor:$masked, NN_BoolTensor:$mask);
  let assemblyFormat = NN_FunctionalFormat;
  let hasVerifier = 1;
}

def NN_SampleOp : NN_Op<"sample", [Pure]> {
  let summary = "draws a class from softmax(logits) by the Gumbel-max trick";
  let description = [{
    For each row of `logits` [..., V], the index argmax_v (logits[v] + g_v)
    with independent Gumbel noise g_v (seeded Philox, a function of `seed`
    and the training step): a sample from softmax(logits) (ELECTRA's
    generator sample, seed thesis Algorithm 2 step 5). The result [...] is
    i32 and carries no gradient. With the optional `rows` mask [...] only the
    rows where it is true are drawn; the others hold 0.

    ```mlir
    %s = nn.sample %logits {seed = 4 : i64} : (!nn.tensor<[B, T, 1000], f32>) -> !nn.tensor<[B, T], i32>
    %t = nn.sample %logits, %mask {seed = 5 : i64} : (!nn.tensor<[B, T, 1000], f32>, !nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T], i32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$logits, Optional<NN_BoolTensor>:$rows,
                       DefaultValuedAttr<NN_I64Attr, "0">:$seed);
  let results = (outs NN_IndexTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_StopGradientOp : NN_Op<"stop_gradient", [Pure]> {
  let summary = "the identity, through which no gradient flows";
  let description = [{
    Returns `x` unchanged; `nncc-autodiff` gives `x` no adjoint from this
    use (JAX's `lax.stop_gradient`, PyTorch's `detach`).

    ```mlir
    %y = nn.stop_gradient %x : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
    ```
  }];
  let arguments = (ins NN_TensorType:$x);
  let results = (outs NN_TensorType:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_ZoneoutOp : NN_Op<"zoneout", [Pure]> {
  let summary = "zoneout regularisation of a recurrent state";
  let description = [{
    In training, keeps each element of `prev_state` with probability `p`
    (in [0, 1)) instead of taking `new_state`; at inference (and in
    `nn.eval_mode` training functions) zoneout is off: the result is
    `new_state`. Both states have the same type, which is the result type.
    The mask is a function of `seed` and the training step (Philox, the
    same draw in the backward).

    ```mlir
    %h = nn.zoneout %new, %prev {p = 1.0e-01 : f64} : (!nn.tensor<[B, 8], f32>, !nn.tensor<[B, 8], f32>) -> !nn.tensor<[B, 8], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$new_state, NN_FloatTensor:$prev_state,
                       DefaultValuedAttr<NN_F64Attr, "0.0">:$p,
                       DefaultValuedAttr<NN_I64Attr, "0">:$seed);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
  let hasVerifier = 1;
}

def NN_SinusoidalPositionOp : NN_Op<"sinusoidal_position", [Pure]> {
  let summary = "adds the sinusoidal position encoding";
  let description = [{
    `x` [B, T, E] (E even) plus the fixed encoding of Vaswani et al.:
    PE(t, 2i) = sin(t / 10000^(2i/E)), PE(t, 2i+1) = cos(t / 10000^(2i/E)).

    ```mlir
    %y = nn.sinusoidal_position %x : (!nn.tensor<[B, T, 64], f32>) -> !nn.tensor<[B, T, 64], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_LearnedPositionOp : NN_Op<"learned_position", [Pure]> {
  let summary = "adds a learned position embedding";
  let description = [{
    `x` [B, T, E] plus the first T rows of `table` [P, E] (T <= P when both
    are static).

    ```mlir
    %y = nn.learned_position %x, %pos : (!nn.tensor<[B, T, 64], f32>, !nn.tensor<[512, 64], f32>) -> !nn.tensor<[B, T, 64], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x, NN_FloatTensor:$table);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_AxialPositionOp : NN_Op<"axial_position", [Pure]> {
  let summary = "adds an axial position embedding (Reformer, Kitaev et al.)";
  let description = [{
    `x` [B, T, E] plus the embedding of position t on an (n1, n2) grid:
    the concatenation of `rows[t / n2]` (d1 values) and `cols[t % n2]`
    (d2 values), E = d1 + d2, T <= n1 * n2 (seed thesis §5.3.2). `rows` is
    [n1, 1, d1] and `cols` [1, n2, d2], as Hugging Face's
    `ReformerAxialPositionEmbeddings` stores them; both must be static.

    ```mlir
    %y = nn.axial_position %x, %rows, %cols : (!nn.tensor<[B, T, 64], f32>, !nn.tensor<[8, 1, 16], f32>, !nn.tensor<[1, 16, 48], f32>) -> !nn.tensor<[B, T, 64], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x, NN_FloatTensor:$rows,
                       NN_FloatTensor:$cols);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

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
// Recurrent ops
//===----------------------------------------------------------------------===//

defvar NN_RecurrentWeightsDoc = [{
    PyTorch conventions: `x` is [B, T, I] (batch first), states are
    [L*D, B, H] with D = 2 if `bidirectional` else 1 and L = `num_layers`.
    `lengths` (i32/i64 [B]) gives each sequence's true length (packed
    sequences). `weights` follow PyTorch's `_flat_weights` order: for each
    layer l and direction d, `weight_ih` [G*H, in_l], `weight_hh` [G*H, H]
    and, with `has_bias`, `bias_ih` [G*H] and `bias_hh` [G*H]; in_0 = I and
    in_l = D*H for l > 0. Results: `y` [B, T, D*H] and `h_n` [L*D, B, H].
}];


defvar NN_CheckpointDoc = [{

    `checkpoint_every` (optional, >= 1; the same on this op and its gradient
    op when they share a reserve) asks for BPTT checkpointing: the reserve
    keeps each layer's output sequence and, for the LSTM, the cell state
    every `checkpoint_every` steps instead of every step's gates, and the
    gradient recomputes the gates one segment of that many steps at a time.
    Without a reserve it has no effect. Absent: every step's gates are kept.

    `checkpoint_snapshots` (optional, >= 1; exclusive with
    `checkpoint_every`, the same on this op and its gradient op) asks for
    the binomial (Griewank-Walther Revolve) schedule instead: the reserve
    keeps only each layer's output sequence, and the gradient reverses each
    layer's scan one step at a time, keeping at most that many LSTM cell
    states and recomputing the forward steps between them by the binomial
    schedule (T <= C(s + 1 + r, s + 1) steps with r recomputation sweeps).
}];

def NN_RNNOp : NN_ReserveOp<"rnn", [Pure, AttrSizedOperandSegments]> {
  let summary = "multi-layer Elman RNN (torch.nn.RNN)";
  let description = [{
    h_t = nonlinearity(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh) with G = 1.
  }] # NN_RecurrentWeightsDoc # NN_ReserveDoc # NN_CheckpointDoc # [{
    ```mlir
    %y, %hn = nn.rnn %x weights(%wih, %whh, %bih, %bhh) {hidden_size = 16 : i64} : (...) -> (!nn.tensor<[B, T, 16], f32>, !nn.tensor<[1, B, 16], f32>)
    ```
  }];
  let arguments = (ins
    NN_FloatTensor:$x,
    Optional<NN_FloatTensor>:$h0,
    Optional<NN_IndexTensor>:$lengths,
    Variadic<NN_FloatTensor>:$weights,
    NN_I64Attr:$hidden_size,
    DefaultValuedAttr<NN_I64Attr, "1">:$num_layers,
    DefaultValuedAttr<BoolAttr, "false">:$bidirectional,
    DefaultValuedAttr<BoolAttr, "true">:$has_bias,
    DefaultValuedAttr<NN_NonlinearityAttr,
                      "::nncc::nn::Nonlinearity::tanh">:$nonlinearity
,
    OptionalAttr<NN_I64Attr>:$checkpoint_every,
    OptionalAttr<NN_I64Attr>:$checkpoint_snapshots
  );
  let results = (outs NN_FloatTensor:$y, NN_FloatTensor:$h_n,
                      Optional<NN_ReserveType>:$reserve);
  let assemblyFormat = [{
    $x (`h0` $h0^)? (`lengths` $lengths^)? `weights` `(` $weights `)`
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_LSTMOp : NN_ReserveOp<"lstm", [Pure, AttrSizedOperandSegments]> {
  let summary = "multi-layer LSTM (torch.nn.LSTM), optionally with zoneout";
  let description = [{
    Gates i, f, g, o (G = 4). `c0` and the result `c_n` are the cell states,
    shaped like the hidden states. `zoneout` in [0, 1) applies zoneout with
    that probability to both states at each step (0 = off), in training-mode
    functions only (inference: off): per unit and step one Bernoulli(p)
    mask m keeps h and c, h_t = m h_{t-1} + (1 - m) h~_t, c_t likewise; m is
    drawn from Philox(`seed`, step offset + counter of (layer, direction,
    t, b, j)), so the backward regenerates the same masks.
  }] # NN_RecurrentWeightsDoc # NN_ReserveDoc # NN_CheckpointDoc # [{
    ```mlir
    %y, %hn, %cn = nn.lstm %x h0 %h0 c0 %c0 weights(%wih, %whh, %bih, %bhh) {hidden_size = 16 : i64} : (...) -> (...)
    ```
  }];
  let arguments = (ins
    NN_FloatTensor:$x,
    Optional<NN_FloatTensor>:$h0,
    Optional<NN_FloatTensor>:$c0,
    Optional<NN_IndexTensor>:$lengths,
    Variadic<NN_FloatTensor>:$weights,
    NN_I64Attr:$hidden_size,
    DefaultValuedAttr<NN_I64Attr, "1">:$num_layers,
    DefaultValuedAttr<BoolAttr, "false">:$bidirectional,
    DefaultValuedAttr<BoolAttr, "true">:$has_bias,
    DefaultValuedAttr<NN_F64Attr, "0.0">:$zoneout,
    DefaultValuedAttr<NN_I64Attr, "0">:$seed
,
    OptionalAttr<NN_I64Attr>:$checkpoint_every,
    OptionalAttr<NN_I64Attr>:$checkpoint_snapshots
  );
  let results = (outs NN_FloatTensor:$y, NN_FloatTensor:$h_n,
                      NN_FloatTensor:$c_n, Optional<NN_ReserveType>:$reserve);
  let assemblyFormat = [{
    $x (`h0` $h0^)? (`c0` $c0^)? (`lengths` $lengths^)?
    `weights` `(` $weights `)` attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def NN_GRUOp : NN_ReserveOp<"gru", [Pure, AttrSizedOperandSegments]> {
  let summary = "multi-layer GRU (torch.nn.GRU or Cho et al. 2014)";
  let description = [{
    Gates r, z, n (G = 3); `variant` selects the cell equations.
  }] # NN_RecurrentWeightsDoc # NN_ReserveDoc # NN_CheckpointDoc # [{
    ```mlir
    %y, %hn = nn.gru %x weights(%wih, %whh, %bih, %bhh) {hidden_size = 16 : i64} : (...) -> (...)
    ```
  }];
  let arguments = (ins
    NN_FloatTensor:$x,
    Optional<NN_FloatTensor>:$h0,
    Optional<NN_IndexTensor>:$lengths,
    Variadic<NN_FloatTensor>:$weights,
    NN_I64Attr:$hidden_size,
    DefaultValuedAttr<NN_I64Attr, "1">:$num_layers,
    DefaultValuedAttr<BoolAttr, "false">:$bidirectional,
    DefaultValuedAttr<BoolAttr, "true">:$has_bias,
    DefaultValuedAttr<NN_GRUVariantAttr,
                      "::nncc::nn::GRUVariant::pytorch">:$variant
,
    OptionalAttr<NN_I64Attr>:$checkpoint_every,
    OptionalAttr<NN_I64Attr>:$checkpoint_snapshots
  );
  let results = (outs NN_FloatTensor:$y, NN_FloatTensor:$h_n,
                      Optional<NN_ReserveType>:$reserve);
  let assemblyFormat = [{
    $x (`h0` $h0^)? (`lengths` $lengths^)? `weights` `(` $weights `)`
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

defvar NN_CellDoc = [{
    `x` is [B, I] and `h` [B, H]; `w_ih` is [G*H, I], `w_hh` [G*H, H] and the
    optional biases `b_ih`, `b_hh` are [G*H] (both or neither).
}];

def NN_RNNCellOp : NN_Op<"rnn_cell", [Pure, AttrSizedOperandSegments]> {
  let summary = "one step of an Elman RNN (torch.nn.RNNCell)";
  let description = [{
    h' = nonlinearity(W_ih x + b_ih + W_hh h + b_hh), G = 1.
  }] # NN_CellDoc # [{
    ```mlir
    %h1 = nn.rnn_cell %x, %h, %wih, %whh bias(%bih, %bhh) : (...) -> !nn.tensor<[B, 16], f32>
    ```
  }];
  let arguments = (ins
    NN_FloatTensor:$x, NN_FloatTensor:$h,
    NN_FloatTensor:$w_ih, NN_FloatTensor:$w_hh,
    Optional<NN_FloatTensor>:$b_ih, Optional<NN_FloatTensor>:$b_hh,
    DefaultValuedAttr<NN_NonlinearityAttr,
                      "::nncc::nn::Nonlinearity::tanh">:$nonlinearity
  );
  let results = (outs NN_FloatTensor:$h_next);
  let assemblyFormat = [{
    $x `,` $h `,` $w_ih `,` $w_hh (`bias` `(` $b_ih^ `,` $b_hh `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def NN_LSTMCellOp : NN_Op<"lstm_cell", [Pure, AttrSizedOperandSegments]> {
  let summary = "one step of an LSTM (torch.nn.LSTMCell)";
  let description = [{
    Gates i, f, g, o (G = 4); `c` [B, H] is the cell state. Results: the new
    hidden and cell states.
  }] # NN_CellDoc # [{
    ```mlir
    %h1, %c1 = nn.lstm_cell %x, %h, %c, %wih, %whh : (...) -> (...)
    ```
  }];
  let arguments = (ins
    NN_FloatTensor:$x, NN_FloatTensor:$h, NN_FloatTensor:$c,
    NN_FloatTensor:$w_ih, NN_FloatTensor:$w_hh,
    Optional<NN_FloatTensor>:$b_ih, Optional<NN_FloatTensor>:$b_hh
  );
  let results = (outs NN_FloatTensor:$h_next, NN_FloatTensor:$c_next);
  let assemblyFormat = [{
    $x `,` $h `,` $c `,` $w_ih `,` $w_hh (`bias` `(` $b_ih^ `,` $b_hh `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def NN_GRUCellOp : NN_Op<"gru_cell", [Pure, AttrSizedOperandSegments]> {
  let summary = "one step of a GRU (torch.nn.GRUCell or Cho et al. 2014)";
  let description = [{
    Gates r, z, n (G = 3); `variant` selects the cell equations.
  }] # NN_CellDoc # [{
    ```mlir
    %h1 = nn.gru_cell %x, %h, %wih, %whh {variant = #nn<gru_variant cho2014>} : (...) -> !nn.tensor<[B, 16], f32>
    ```
  }];
  let arguments = (ins
    NN_FloatTensor:$x, NN_FloatTensor:$h,
    NN_FloatTensor:$w_ih, NN_FloatTensor:$w_hh,
    Optional<NN_FloatTensor>:$b_ih, Optional<NN_FloatTensor>:$b_hh,
    DefaultValuedAttr<NN_GRUVariantAttr,
                      "::nncc::nn::GRUVariant::pytorch">:$variant
  );
  let results = (outs NN_FloatTensor:$h_next);
  let assemblyFormat = [{
    $x `,` $h `,` $w_ih `,` $w_hh (`bias` `(` $b_ih^ `,` $b_hh `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def NN_AttentionOp : NN_ReserveOp<"attention", [Pure, AttrSizedOperandSegments]> {
  let summary = "multi-head self-attention (dense, dilated or LSH)";
  let description = [{
    Self-attention over `x` [B, T, E] with `num_heads` heads, as
    `torch.nn.MultiheadAttention` with `batch_first`. `kind` selects the
    pattern (`#nn.dense`, `#nn.dilated<...>`, `#nn.lsh<...>`,
    `#nn.local<...>`). The heads together are A wide (A = num_heads x head
    size, divisible by num_heads), the out-projection's input width: A = E
    as in PyTorch, or another width (Hugging Face's Reformer,
    `num_attention_heads x attention_head_size` != `hidden_size`).

    - `in_proj_weight` is [3A, E] (query, key, value) or, for LSH, [2A, E]
      (shared query/key, value), [6A, E] for Longformer's convention;
      `in_proj_bias` is [3A], [2A] or [6A].
    - `out_proj_weight` [E, A], `out_proj_bias` [E].
    - `key_padding_mask` (i1 [B, T]) marks padded keys.
    - `rotations` (float [num_heads, A / num_heads, hashes, buckets / 2] in
      convention hf, [hashes, A / num_heads, buckets / 2] in convention
      nncc) fixes the random LSH rotations; only with `#nn.lsh`.
    - `global_mask` (i1 [B, T]; only with `#nn.dilated` and no `global`
      list) marks each example's global tokens (Hugging Face's
      `global_attention_mask`); a padded position is never global.

    `causal` masks future keys; `dropout` (in [0, 1)) applies to attention
    weights with `seed`. The result is [B, T, E].
  }] # NN_ReserveDoc # [{

    ```mlir
    %y = nn.attention %x, %w_in in_bias %b_in out %w_out out_bias %b_out {kind = #nn.dense, num_heads = 4 : i64} : (...) -> !nn.tensor<[B, T, 64], f32>
    ```
  }];
  let arguments = (ins
    NN_FloatTensor:$x,
    NN_FloatTensor:$in_proj_weight,
    Optional<NN_FloatTensor>:$in_proj_bias,
    NN_FloatTensor:$out_proj_weight,
    Optional<NN_FloatTensor>:$out_proj_bias,
    Optional<NN_BoolTensor>:$key_padding_mask,
    Optional<NN_FloatTensor>:$rotations,
    Optional<NN_BoolTensor>:$global_mask,
    NN_I64Attr:$num_heads,
    NN_AttentionKindAttrInterface:$kind,
    DefaultValuedAttr<BoolAttr, "false">:$causal,
    DefaultValuedAttr<NN_F64Attr, "0.0">:$dropout,
    DefaultValuedAttr<NN_I64Attr, "0">:$seed
  );
  let results = (outs NN_FloatTensor:$result,
                      Optional<NN_ReserveType>:$reserve);
  let assemblyFormat = [{
    $x `,` $in_proj_weight (`in_bias` $in_proj_bias^)?
    `out` $out_proj_weight (`out_bias` $out_proj_bias^)?
    (`mask` $key_padding_mask^)? (`rotations` $rotations^)?
    (`global_mask` $global_mask^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// A, the heads' total width (out_proj_weight's columns).
    ::nncc::Dim getHeadsWidth() {
      return ::llvm::cast<::nncc::nn::TensorType>(getOutProjWeight().getType()).getDim(1);
    }
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Composite control ops
//===----------------------------------------------------------------------===//

def NN_ReversibleOp : NN_Op<"reversible", [
    RecursiveMemoryEffects, RecursivelySpeculatable,
    DeclareOpInterfaceMethods<NN_RegionSignatureOpInterface>]> {
  let summary = "reversible residual block (RevNet / Reformer)";
  let description = [{
    Splits `x` [..., 2F] into halves x1, x2 along the last dim and returns
    concat(y1, y2) with y1 = x1 + f(x2) and y2 = x2 + g(y1). Regions `f` and
    `g` each have one block taking one [..., F] tensor and yielding one
    [..., F] tensor (F is `?` when the last dim is not static).

    ```mlir
    %y = nn.reversible %x : (!nn.tensor<[B, 8], f32>) -> !nn.tensor<[B, 8], f32> f {
    ^bb0(%x2: !nn.tensor<[B, 4], f32>):
      nn.yield %x2 : !nn.tensor<[B, 4], f32>
    } g {
    ^bb0(%y1: !nn.tensor<[B, 4], f32>):
      nn.yield %y1 : !nn.tensor<[B, 4], f32>
    }
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x);
  let results = (outs NN_FloatTensor:$result);
  let regions = (region SizedRegion<1>:$f, SizedRegion<1>:$g);
  let assemblyFormat = [{
    $x attr-dict `:` functional-type(operands, results) `f` $f `g` $g
  }];
  let hasRegionVerifier = 1;
}

def NN_ODESolveOp : NN_Op<"odesolve", [
    RecursiveMemoryEffects, RecursivelySpeculatable,
    DeclareOpInterfaceMethods<NN_RegionSignatureOpInterface>]> {
  let summary = "integrates an ODE dh/dt = f(t, h) from t0 to t1";
  let description = [{
    Returns h(t1) for h(t0) = `h0`, where the single-block region `dynamics`
    takes (t: float scalar [] of `t0`'s element type, h: type of `h0`) and
    yields dh/dt of `h0`'s type. `t0`, `t1` are float scalars. `method`
    selects the scheme: `euler` and `rk4` need `steps` >= 1; `dopri5` is
    adaptive with tolerances `rtol`, `atol` (> 0) when `steps` = 0. With
    `adjoint`, gradients use the adjoint method (torchdiffeq's
    `odeint_adjoint`). `max_steps` (>= 1, default 1000) bounds the accepted
    steps of an adaptive dopri5 solve differentiated through the steps
    (`adjoint` false): the backward keeps one state per accepted step in a
    workspace sized for `max_steps`; more is a runtime error.

    ```mlir
    %h1 = nn.odesolve rk4 %h0, %t0, %t1 {steps = 10 : i64} : (!nn.tensor<[B, 4], f32>, !nn.tensor<[], f32>, !nn.tensor<[], f32>) -> !nn.tensor<[B, 4], f32> {
    ^bb0(%t: !nn.tensor<[], f32>, %h: !nn.tensor<[B, 4], f32>):
      %dh = nn.tanh %h : (!nn.tensor<[B, 4], f32>) -> !nn.tensor<[B, 4], f32>
      nn.yield %dh : !nn.tensor<[B, 4], f32>
    }
    ```
  }];
  let arguments = (ins
    NN_FloatTensor:$h0, NN_FloatTensor:$t0, NN_FloatTensor:$t1,
    NN_ODEMethodAttr:$method,
    DefaultValuedAttr<NN_I64Attr, "0">:$steps,
    DefaultValuedAttr<NN_F64Attr, "1.0e-7">:$rtol,
    DefaultValuedAttr<NN_F64Attr, "1.0e-9">:$atol,
    DefaultValuedAttr<BoolAttr, "false">:$adjoint,
    DefaultValuedAttr<NN_I64Attr, "1000">:$max_steps
  );
  let results = (outs NN_FloatTensor:$result);
  let regions = (region SizedRegion<1>:$dynamics);
  let assemblyFormat = [{
    `` $method $h0 `,` $t0 `,` $t1 attr-dict `:` functional-type(operands, results)
    $dynamics
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def NN_ODERNNOp : NN_Op<"ode_rnn", [
    RecursiveMemoryEffects, RecursivelySpeculatable,
    DeclareOpInterfaceMethods<NN_RegionSignatureOpInterface>]> {
  let summary = "ODE-RNN over irregularly sampled sequences (Rubanova 2019)";
  let description = [{
    For each step t of `x` [B, T, I] at `times` [B, T] (float), evolves the
    hidden state [B, H] (H = `hidden_size`; initially `h0` or zeros) with the
    ODE `dynamics` from the previous time to the current one, then applies
    `cell` to (x_t, h). Region `dynamics` takes (t [B, 1], h [B, H]) and
    yields [B, H]: every sequence has its own observation times, so t holds
    each row's current time (use it broadcast, e.g. `t * h`); region `cell`
    takes (x_t [B, I], h [B, H]) and yields [B, H]. The
    result stacks the hidden states: [B, T, H]. `method`, `steps`, `rtol`,
    `atol`, `adjoint` and `max_steps` are as in `nn.odesolve` (per segment).

    ```mlir
    %hs = nn.ode_rnn euler %x, %times {hidden_size = 8 : i64, steps = 1 : i64} : (...) -> !nn.tensor<[B, T, 8], f32> dynamics {
    ^bb0(%t: !nn.tensor<[B, 1], f32>, %h: !nn.tensor<[B, 8], f32>):
      nn.yield %h : !nn.tensor<[B, 8], f32>
    } cell {
    ^bb0(%xt: !nn.tensor<[B, 3], f32>, %h: !nn.tensor<[B, 8], f32>):
      nn.yield %h : !nn.tensor<[B, 8], f32>
    }
    ```
  }];
  let arguments = (ins
    NN_FloatTensor:$x, NN_FloatTensor:$times, Optional<NN_FloatTensor>:$h0,
    NN_I64Attr:$hidden_size,
    NN_ODEMethodAttr:$method,
    DefaultValuedAttr<NN_I64Attr, "0">:$steps,
    DefaultValuedAttr<NN_F64Attr, "1.0e-7">:$rtol,
    DefaultValuedAttr<NN_F64Attr, "1.0e-9">:$atol,
    DefaultValuedAttr<BoolAttr, "false">:$adjoint,
    DefaultValuedAttr<NN_I64Attr, "1000">:$max_steps
  );
  let results = (outs NN_FloatTensor:$result);
  let regions = (region SizedRegion<1>:$dynamics, SizedRegion<1>:$cell);
  let assemblyFormat = [{
    `` $method $x `,` $times (`,` $h0^)? attr-dict `:`
    functional-type(operands, results) `dynamics` $dynamics `cell` $cell
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def NN_MSEOp : NN_Op<"mse", [Pure]> {
  let summary = "mean squared error";
  let description = [{
    mean((pred - target)^2) over all elements; `pred` and `target` have
    compatible types. The result is a scalar [] of their element type.

    ```mlir
    %l = nn.mse %p, %t : (!nn.tensor<[B, 1], f32>, !nn.tensor<[B, 1], f32>) -> !nn.tensor<[], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$pred, NN_FloatTensor:$target);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_CrossEntropyOp : NN_Op<"cross_entropy", [Pure]> {
  let summary = "softmax cross-entropy over the last dim";
  let description = [{
    `logits` [..., C] against integer class indices `target` [...]; targets
    equal to `ignore_index` do not count. Mean over the counted positions:
    a scalar [] of the logits' element type.

    ```mlir
    %l = nn.cross_entropy %logits, %t : (!nn.tensor<[B, T, 100], f32>, !nn.tensor<[B, T], i64>) -> !nn.tensor<[], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_IndexTensor:$target,
                       DefaultValuedAttr<NN_I64Attr, "-100">:$ignore_index);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

def NN_LinearCrossEntropyOp : NN_Op<"linear_cross_entropy", [Pure]> {
  let summary = "fused language-model head: linear map, softmax cross-entropy and its gradients";
  let description = [{
    The loss of `nn.cross_entropy(nn.linear(x, weight, bias), target)`
    (`ignore_index`, mean over the counted positions) together with its
    gradients for a unit loss adjoint: `dx` (type of `x` [..., K]),
    `dweight` [V, K] and `dbias` [V] (also when `bias` is absent). The
    [..., V] logits and their gradient are never materialised: the kernel
    computes them a bounded chunk of rows at a time (one GEMM for the
    chunk's logits, one each for its dx rows and its dweight update). With
    `with_logits` the op also writes the logits (a training function that
    returns them) as the optional last result.

    Formed by nncc-autodiff (`fuse-loss-heads`) in @forward_backward, where
    a linear's result feeds only a cross_entropy (and the return); its
    gradient rule scales `dx`, `dweight` and `dbias` by the loss adjoint.

    ```mlir
    %l, %dx, %dw, %db = nn.linear_cross_entropy %x, %w, %t bias %b : (!nn.tensor<[B, T, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[B, T], i32>, !nn.tensor<[100], f32>) -> (!nn.tensor<[], f32>, !nn.tensor<[B, T, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[100], f32>)
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x, NN_FloatTensor:$weight,
                       NN_IndexTensor:$target,
                       Optional<NN_FloatTensor>:$bias,
                       DefaultValuedAttr<NN_I64Attr, "-100">:$ignore_index,
                       UnitAttr:$with_logits);
  let results = (outs NN_FloatTensor:$loss, NN_FloatTensor:$dx,
                      NN_FloatTensor:$dweight, NN_FloatTensor:$dbias,
                      Optional<NN_FloatTensor>:$logits);
  let assemblyFormat = [{
    $x `,` $weight `,` $target (`bias` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_LinearSampleOp : NN_Op<"linear_sample", [Pure, AttrSizedOperandSegments]> {
  let summary = "fused sampling head: Gumbel-max draws from a linear map's logits";
  let description = [{
    `nn.sample(nn.linear(x, weight, bias), rows)` with the same `seed` and
    the same draws, without the [..., V] logits: the kernel computes the
    logits of the drawn rows only (those where `rows` is true, all without
    it), a bounded chunk of rows at a time. x [..., K], weight [V, K], bias
    [V]; the result is i32 [...] (0 in rows not drawn) and carries no
    gradient.

    Formed by nncc-autodiff (`fuse-loss-heads`) in @forward_backward, where
    a linear's result feeds one cross_entropy, which becomes
    `nn.linear_cross_entropy`, and samples (ELECTRA's generator).

    ```mlir
    %s = nn.linear_sample %x, %w bias %b rows %m {seed = 4 : i64} : (!nn.tensor<[B, T, 32], f32>, !nn.tensor<[100, 32], f32>, !nn.tensor<[100], f32>, !nn.tensor<[B, T], i1>) -> !nn.tensor<[B, T], i32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x, NN_FloatTensor:$weight,
                       Optional<NN_FloatTensor>:$bias,
                       Optional<NN_BoolTensor>:$rows,
                       DefaultValuedAttr<NN_I64Attr, "0">:$seed);
  let results = (outs NN_IndexTensor:$result);
  let assemblyFormat = [{
    $x `,` $weight (`bias` $bias^)? (`rows` $rows^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def NN_BCEWithLogitsOp : NN_Op<"bce_with_logits", [Pure]> {
  let summary = "binary cross-entropy on logits";
  let description = [{
    As `torch.nn.BCEWithLogitsLoss`: `logits` and `target` have compatible
    float types; the optional `pos_weight` [C] weights positives per class
    of the last dim. Mean reduction to a scalar [].

    ```mlir
    %l = nn.bce_with_logits %z, %t : (!nn.tensor<[B, 3], f32>, !nn.tensor<[B, 3], f32>) -> !nn.tensor<[], f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_FloatTensor:$target,
                       Optional<NN_FloatTensor>:$pos_weight);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = NN_FunctionalFormat;
}

// Ops of the backward pass (nncc-autodiff).
include "dialects/NN/IR/NNGradOps.td"

#endif // NNCC_DIALECT_NN_IR_NNOPS_TD
