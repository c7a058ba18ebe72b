//===- NNKTypes.td - nnk dialect types -----------------------*- tablegen -*-===//

#ifndef NNCC_DIALECT_KERNEL_IR_NNKTYPES_TD
#define NNCC_DIALECT_KERNEL_IR_NNKTYPES_TD

include "mlir/IR/AttrTypeBase.td"
include "dialects/NNK/IR/NNKDialect.td"

def NNK_BufferType : TypeDef<NNK_Dialect, "Buffer"> {
  let mnemonic = "buffer";
  let summary = "contiguous row-major buffer with static or symbolic dims";
  let description = [{
    `!nnk.buffer<[B, T, 256], f32>`: a contiguous, row-major, batch-first
    buffer. Dims are `nncc::Dim` (nncc/Support/Shape.h, shared with `!nn.tensor`): a static size, a symbolic size (a
    run-time value bound from the model's inputs, equal wherever the name
    appears) or `?` (unknown; not allowed on `nnk.alloc`). Scalars are
    `!nnk.buffer<[], f32>` (one element). Element types as `!nn.tensor`.
  }];
  let parameters = (ins
    ArrayRefParameter<"::nncc::Dim", "dimensions">:$dims,
    "::mlir::Type":$elementType
  );
  let builders = [
    TypeBuilderWithInferredContext<(ins
        "::llvm::ArrayRef<::nncc::Dim>":$dims,
        "::mlir::Type":$elementType), [{
      return $_get(elementType.getContext(), dims, elementType);
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getRank() const { return getDims().size(); }
    bool isScalar() const { return getDims().empty(); }
    ::nncc::Dim getDim(int64_t index) const { return getDims()[index]; }
    BufferType withDims(::llvm::ArrayRef<::nncc::Dim> dims) const {
      return get(getContext(), dims, getElementType());
    }
    /// Same element type and pairwise compatible dims.
    bool isCompatibleWith(BufferType other) const;
    /// True when no dim is `?`.
    bool hasKnownDims() const;
  }];
}

#endif // NNCC_DIALECT_KERNEL_IR_NNKTYPES_TD
