//===- NNTypes.td - nn dialect types -------------------------*- tablegen -*-===//

#ifndef NNCC_DIALECT_NN_IR_NNTYPES_TD
#define NNCC_DIALECT_NN_IR_NNTYPES_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinTypes.td"
include "dialects/NN/IR/NNDialect.td"

class NN_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<NN_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def NN_TensorType : NN_Type<"Tensor", "tensor"> {
  let summary = "ranked tensor whose dims are static, symbolic or unknown";
  let description = [{
    A ranked tensor `!nn.tensor<[d0, d1, ...], elt>`. Each dim is a
    non-negative static size (`256`), a symbolic size named by an identifier
    (`B`, `seq_len`; equal wherever the same name appears) or unknown (`?`).
    Scalars have no dims: `!nn.tensor<[], f32>`. The element type is one of
    f32, f64, bf16, f16, i32, i64 or i1.

    Two dims are compatible when either is `?`, or both are the same static
    size, or both are the same symbol.

    ```mlir
    !nn.tensor<[B, T, 256], f32>
    !nn.tensor<[?, 10], i64>
    !nn.tensor<[], f32>
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"::nncc::nn::Dim", "dimensions">:$dims,
    "::mlir::Type":$elementType
  );
  let builders = [
    TypeBuilderWithInferredContext<(ins
        "::llvm::ArrayRef<::nncc::nn::Dim>":$dims,
        "::mlir::Type":$elementType), [{
      return $_get(elementType.getContext(), dims, elementType);
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Number of dims; 0 for a scalar.
    int64_t getRank() const { return getDims().size(); }
    bool isScalar() const { return getDims().empty(); }
    /// The dim at `index`, which must be in [0, rank).
    ::nncc::nn::Dim getDim(int64_t index) const { return getDims()[index]; }
    /// This type with other dims and the same element type.
    TensorType withDims(::llvm::ArrayRef<::nncc::nn::Dim> dims) const {
      return get(getContext(), dims, getElementType());
    }
    /// This type with the same dims and another element type.
    TensorType withElementType(::mlir::Type elementType) const {
      return get(getContext(), getDims(), elementType);
    }
    /// Same element type, same rank and pairwise compatible dims.
    bool isCompatibleWith(TensorType other) const;
    /// True for the element types the type accepts.
    static bool isValidElementType(::mlir::Type type);
  }];
}

def NN_ReserveType : NN_Type<"Reserve", "reserve"> {
  let summary = "what a training forward keeps for its gradient op";
  let description = [{
    An opaque value produced by a training forward op (the optional
    `reserve` result of `nn.rnn`, `nn.lstm`, `nn.gru` and `nn.attention`)
    and consumed by its gradient op (the `reserve` operand of the matching
    `nn.*_grad`): the state the backward reads instead of running the
    forward again. What it holds is decided by the lowering: a stack's layer
    outputs and gates; attention's packed projection, output and
    log-sum-exp. A gradient op without the operand recomputes all of it
    from its saved inputs, so keeping or recomputing is the presence of
    this use-def edge (docs/autodiff.md).

    ```mlir
    %y, %hn, %r = nn.lstm %x weights(...) {hidden_size = 16 : i64} : (...) -> (!nn.tensor<[B, T, 16], f32>, ..., !nn.reserve)
    ```
  }];
}

#endif // NNCC_DIALECT_NN_IR_NNTYPES_TD
