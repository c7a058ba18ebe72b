//===- NNKDialect.td - The nnk kernel dialect ----------------*- tablegen -*-===//
//
// `nnk`: one op = one fused kernel launch over explicit buffers. The op
// contract is docs/nnk-spec.md.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DIALECT_KERNEL_IR_NNKDIALECT_TD
#define NNCC_DIALECT_KERNEL_IR_NNKDIALECT_TD

include "mlir/IR/OpBase.td"

def NNK_Dialect : Dialect {
  let name = "nnk";
  let cppNamespace = "::nncc::nnk";
  let summary = "Fused kernel launches over explicit buffers";
  let description = [{
    The `nnk` dialect is the input of the target emitters (host C++ calling
    libnncc_kernels, and CUDA). Values are `!nnk.buffer<[dims], elt>`:
    contiguous row-major buffers whose dims are static or symbolic (run-time
    sizes bound from the model's inputs). Every compute op is written in
    destination-passing style, `ins(...) outs(...)`, has no results, and is
    exactly one kernel launch (or one host-side loop of launches for the
    ODE ops). Temporaries come from `nnk.alloc` (one arena slot each),
    parameters from `nnk.weight @name`.
  }];
  let dependentDialects = [
    "::nncc::nn::NNDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect"
  ];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerTypes();
    void registerAttributes();
  }];
}

#endif // NNCC_DIALECT_KERNEL_IR_NNKDIALECT_TD
