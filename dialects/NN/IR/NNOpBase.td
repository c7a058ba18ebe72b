//===- NNOpBase.td - nn op constraints and base classes ----*- tablegen -*-===//
//
// Tensor constraints, attribute kinds and the base classes every nn op
// family file builds on (NN_Op, NN_ReserveOp, the unary and binary
// elementwise shapes).
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NN_IR_NNOPBASE_TD
#define NNCC_DIALECT_NN_IR_NNOPBASE_TD

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

#endif // NNCC_DIALECT_NN_IR_NNOPBASE_TD
