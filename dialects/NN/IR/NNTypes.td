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

#endif // NNCC_DIALECT_NN_IR_NNTYPES_TD
