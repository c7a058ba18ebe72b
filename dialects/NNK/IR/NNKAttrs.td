//===- NNKAttrs.td - nnk dialect enums -----------------------*- tablegen -*-===//

#ifndef NNCC_DIALECT_KERNEL_IR_NNKATTRS_TD
#define NNCC_DIALECT_KERNEL_IR_NNKATTRS_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "dialects/NNK/IR/NNKDialect.td"

// Values equal the kernel library's NNCC_ACT_* constants
// (include/nncc/Kernels/Codes.h; static_asserts in NNKOps.cpp).
def NNK_Activation : I32EnumAttr<"Activation", "GEMM epilogue activation", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"relu", 1>,
    I32EnumAttrCase<"leaky_relu", 2>,
    I32EnumAttrCase<"gelu", 3>,
    I32EnumAttrCase<"gelu_tanh", 4>,
    I32EnumAttrCase<"tanh", 5>,
    I32EnumAttrCase<"sigmoid", 6>]> {
  let cppNamespace = "::nncc::nnk";
  let genSpecializedAttr = 0;
}
def NNK_ActivationAttr : EnumAttr<NNK_Dialect, NNK_Activation, "act"> {
  let summary = "activation of a GEMM epilogue (NNCC_ACT_*)";
  let description = [{ Written `#nnk<act gelu>`. }];
  let assemblyFormat = "$value";
}

// Values equal the kernel library's NNCC_CELL_* constants
// (include/nncc/Kernels/Codes.h; static_asserts in NNKOps.cpp).
def NNK_Cell : I32EnumAttr<"Cell", "recurrent cell equations", [
    I32EnumAttrCase<"rnn_tanh", 0>,
    I32EnumAttrCase<"rnn_relu", 1>,
    I32EnumAttrCase<"lstm", 2>,
    I32EnumAttrCase<"gru", 3>,
    I32EnumAttrCase<"gru_cho2014", 4>]> {
  let cppNamespace = "::nncc::nnk";
  let genSpecializedAttr = 0;
}
def NNK_CellAttr : EnumAttr<NNK_Dialect, NNK_Cell, "cell"> {
  let summary = "recurrent cell (NNCC_CELL_*)";
  let description = [{ Written `#nnk<cell lstm>`. }];
  let assemblyFormat = "$value";
}

def NNK_ReduceKind : I32EnumAttr<"ReduceKind", "reduction", [
    I32EnumAttrCase<"sum", 0>,
    I32EnumAttrCase<"mean", 1>]> {
  let cppNamespace = "::nncc::nnk";
  let genSpecializedAttr = 0;
}
def NNK_ReduceKindAttr : EnumAttr<NNK_Dialect, NNK_ReduceKind, "reduce"> {
  let summary = "reduction kind (sum or mean)";
  let description = [{ Written `#nnk<reduce mean>`. }];
  let assemblyFormat = "$value";
}

def NNK_LossKind : I32EnumAttr<"LossKind", "loss function", [
    I32EnumAttrCase<"mse", 0>,
    I32EnumAttrCase<"cross_entropy", 1>,
    I32EnumAttrCase<"bce_with_logits", 2>]> {
  let cppNamespace = "::nncc::nnk";
  let genSpecializedAttr = 0;
}
def NNK_LossKindAttr : EnumAttr<NNK_Dialect, NNK_LossKind, "loss"> {
  let summary = "loss function (mean reduction)";
  let description = [{ Written `#nnk<loss mse>`. }];
  let assemblyFormat = "$value";
}

// Values equal the kernel library's NNCC_ATTN_* constants.
def NNK_AttentionKind : I32EnumAttr<"AttentionKind", "attention core", [
    I32EnumAttrCase<"dense", 0>,
    I32EnumAttrCase<"dilated", 1>,
    I32EnumAttrCase<"lsh", 2>,
    I32EnumAttrCase<"local", 3>]> {
  let cppNamespace = "::nncc::nnk";
  let genSpecializedAttr = 0;
}
def NNK_AttentionKindAttr : EnumAttr<NNK_Dialect, NNK_AttentionKind, "attention"> {
  let summary = "attention core of a backward op (NNCC_ATTN_*)";
  let description = [{
    Written `#nnk<attention dilated>`: which forward core (flash, banded,
    LSH or local attention) an `nnk.attention_grad` differentiates.
  }];
  let assemblyFormat = "$value";
}

// Values equal the kernel library's NNCC_ODE_* constants.
def NNK_ODEMethod : I32EnumAttr<"ODEMethod", "ODE solver of a host loop", [
    I32EnumAttrCase<"euler", 0>,
    I32EnumAttrCase<"rk4", 1>,
    I32EnumAttrCase<"dopri5", 2>]> {
  let cppNamespace = "::nncc::nnk";
  let genSpecializedAttr = 0;
}
def NNK_ODEMethodAttr : EnumAttr<NNK_Dialect, NNK_ODEMethod, "ode_method"> {
  let summary = "ODE solver of nnk.ode_solve / ode_rnn (NNCC_ODE_*)";
  let description = [{
    Written `#nnk<ode_method rk4>`: the tableau (and, for `dopri5` with
    `steps` = 0, the adaptive controller) of runtime/include/nncc/Kernels/
    ODESolver.h. The conversion maps `#nn<ode_method>` onto it.
  }];
  let assemblyFormat = "$value";
}

#endif // NNCC_DIALECT_KERNEL_IR_NNKATTRS_TD
