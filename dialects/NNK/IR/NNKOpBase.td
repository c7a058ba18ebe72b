//===- NNKOpBase.td - nnk constraints and base classes -----*- tablegen -*-===//
//
// Buffer constraints, read / write operand markers, attribute kinds and the
// base classes every nnk op family file builds on.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_NNK_IR_NNKOPBASE_TD
#define NNCC_DIALECT_NNK_IR_NNKOPBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "dialects/NNK/IR/NNKDialect.td"
include "dialects/NNK/IR/NNKTypes.td"
include "dialects/NNK/IR/NNKAttrs.td"

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

class NNK_GradOp<string mnemonic, list<Trait> traits = []>
    : NNK_Op<mnemonic, traits> {
  let hasVerifier = 0;
}

#endif // NNCC_DIALECT_NNK_IR_NNKOPBASE_TD
