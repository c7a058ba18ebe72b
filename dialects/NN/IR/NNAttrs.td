//===- NNAttrs.td - nn dialect attributes and enums ----------*- tablegen -*-===//

#ifndef NNCC_DIALECT_NN_IR_NNATTRS_TD
#define NNCC_DIALECT_NN_IR_NNATTRS_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "dialects/NN/IR/NNDialect.td"
include "dialects/NN/IR/NNInterfaces.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def NN_GRUVariant : I32EnumAttr<"GRUVariant", "GRU cell equations", [
    I32EnumAttrCase<"pytorch", 0>,
    I32EnumAttrCase<"cho2014", 1>]> {
  let cppNamespace = "::nncc::nn";
  let genSpecializedAttr = 0;
}
def NN_GRUVariantAttr : EnumAttr<NN_Dialect, NN_GRUVariant, "gru_variant"> {
  let summary = "GRU variant: PyTorch's equations or Cho et al. 2014";
  let description = [{
    `pytorch` applies the reset gate after the hidden-to-hidden product
    (`n = tanh(W_in x + b_in + r * (W_hn h + b_hn))`); `cho2014` applies it
    before (`h~ = tanh(W x + U (r * h) + b)`). Both store weights in the same
    `[3H, .]` layout with rows r, z, n. Written `#nn<gru_variant pytorch>`.
  }];
  let assemblyFormat = "$value";
}

def NN_Nonlinearity : I32EnumAttr<"Nonlinearity",
    "activation of an Elman RNN", [
    I32EnumAttrCase<"tanh", 0>,
    I32EnumAttrCase<"relu", 1>]> {
  let cppNamespace = "::nncc::nn";
  let genSpecializedAttr = 0;
}
def NN_NonlinearityAttr : EnumAttr<NN_Dialect, NN_Nonlinearity,
                                   "nonlinearity"> {
  let summary = "activation of an Elman RNN (tanh or relu)";
  let description = [{
    The activation `nn.rnn` and `nn.rnn_cell` apply to the new hidden state.
    Written `#nn<nonlinearity tanh>`.
  }];
  let assemblyFormat = "$value";
}

// Values equal the kernel library's NNCC_ODE_* constants
// (runtime/include/nncc/Kernels/Codes.h; static_asserts in dialects/NNK/IR/NNKOps.cpp).
def NN_ODEMethod : I32EnumAttr<"ODEMethod", "ODE integration scheme", [
    I32EnumAttrCase<"euler", 0>,
    I32EnumAttrCase<"rk4", 1>,
    I32EnumAttrCase<"dopri5", 2>]> {
  let cppNamespace = "::nncc::nn";
  let genSpecializedAttr = 0;
}
def NN_ODEMethodAttr : EnumAttr<NN_Dialect, NN_ODEMethod, "ode_method"> {
  let summary = "ODE integration scheme (euler, rk4 or dopri5)";
  let description = [{
    `euler` and `rk4` are fixed-step schemes (`steps` >= 1); `dopri5` is the
    adaptive Dormand-Prince scheme controlled by `rtol`/`atol` (`steps` = 0),
    or fixed-step when `steps` > 0. Written `#nn<ode_method rk4>`.
  }];
  let assemblyFormat = "$value";
}

def NN_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "approximation used by GELU", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"tanh", 1>]> {
  let cppNamespace = "::nncc::nn";
  let genSpecializedAttr = 0;
}
def NN_GeluApproximationAttr : EnumAttr<NN_Dialect, NN_GeluApproximation,
                                        "gelu_approx"> {
  let summary = "GELU approximation (none = exact erf, or tanh)";
  let description = [{
    Same meaning as PyTorch's `approximate` argument of `nn.GELU`.
    Written `#nn<gelu_approx none>`.
  }];
  let assemblyFormat = "$value";
}

def NN_InitKind : I32EnumAttr<"InitKind", "parameter initializer", [
    I32EnumAttrCase<"uniform", 0>,
    I32EnumAttrCase<"normal", 1>,
    I32EnumAttrCase<"constant", 2>,
    I32EnumAttrCase<"zeros", 3>,
    I32EnumAttrCase<"ones", 4>]> {
  let cppNamespace = "::nncc::nn";
  let genSpecializedAttr = 0;
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class NN_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<NN_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def NN_InitAttr : NN_Attr<"Init", "init"> {
  let summary = "initializer of a parameter";
  let description = [{
    How the runtime samples a parameter before training:

    ```mlir
    #nn.init<uniform, -0.0625, 0.0625>   // U(lo, hi), lo <= hi
    #nn.init<normal, 0.0, 1.0>           // N(mean, std), std >= 0
    #nn.init<constant, 0.5>
    #nn.init<zeros>
    #nn.init<ones>
    ```

    `values` holds the numbers after the kind (2, 2, 1, 0 and 0 of them).
  }];
  let parameters = (ins
    "::nncc::nn::InitKind":$kind,
    "::mlir::DenseF64ArrayAttr":$values
  );
  let builders = [
    AttrBuilder<(ins "::nncc::nn::InitKind":$kind,
                     CArg<"::llvm::ArrayRef<double>", "{}">:$values), [{
      return $_get($_ctxt, kind, ::mlir::DenseF64ArrayAttr::get($_ctxt, values));
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    static InitAttr getUniform(::mlir::MLIRContext *ctx, double lo, double hi) {
      return get(ctx, InitKind::uniform, ::llvm::ArrayRef<double>{lo, hi});
    }
    static InitAttr getNormal(::mlir::MLIRContext *ctx, double mean,
                              double stddev) {
      return get(ctx, InitKind::normal, ::llvm::ArrayRef<double>{mean, stddev});
    }
    static InitAttr getConstant(::mlir::MLIRContext *ctx, double value) {
      return get(ctx, InitKind::constant, ::llvm::ArrayRef<double>{value});
    }
    static InitAttr getZeros(::mlir::MLIRContext *ctx) {
      return get(ctx, InitKind::zeros);
    }
    static InitAttr getOnes(::mlir::MLIRContext *ctx) {
      return get(ctx, InitKind::ones);
    }
    /// Number of values `kind` takes.
    static size_t getNumValues(InitKind kind);
  }];
}

// `[1, 2, 3]`; may be empty, in which case the struct field may be omitted.
def NN_I64ListParameter : OptionalArrayRefParameter<"int64_t",
                                                    "list of integers"> {
  let parser = [{ ::nncc::nn::parseBracketedI64List($_parser) }];
  let printer = [{ ::nncc::nn::printBracketedI64List($_printer, $_self) }];
}

def NN_DenseAttentionAttr : NN_Attr<"DenseAttention", "dense",
    [DeclareAttrInterfaceMethods<NN_AttentionKindAttrInterface>]> {
  let summary = "full (optionally causal) scaled dot-product attention";
  let description = [{
    Every query attends to every key, as `torch.nn.MultiheadAttention`.
    The input projection stacks query, key and value: `[3E, E]`.

    ```mlir
    #nn.dense
    ```
  }];
}

def NN_DilatedAttentionAttr : NN_Attr<"DilatedAttention", "dilated",
    [DeclareAttrInterfaceMethods<NN_AttentionKindAttrInterface>]> {
  let summary = "sliding-window attention with dilation and global tokens";
  let description = [{
    Longformer-style attention: each query attends to `window` keys spaced
    `dilation` apart around it; positions listed in `global` attend to and
    are attended by all positions. window >= 1, dilation >= 1, every global
    position >= 0. Input projection `[3E, E]`.

    ```mlir
    #nn.dilated<window = 64, dilation = 2, global = [0]>
    #nn.dilated<window = 128, dilation = 1>
    ```
  }];
  let parameters = (ins
    "int64_t":$window,
    "int64_t":$dilation,
    NN_I64ListParameter:$global
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def NN_LshAttentionAttr : NN_Attr<"LshAttention", "lsh",
    [DeclareAttrInterfaceMethods<NN_AttentionKindAttrInterface>]> {
  let summary = "Reformer locality-sensitive-hashing attention";
  let description = [{
    Queries and keys share one projection and are hashed `hashes` times by
    random rotations into buckets; attention runs within sorted chunks of
    `chunk` positions. hashes >= 1, chunk >= 1. Input projection `[2E, E]`
    (shared query/key, then value).

    ```mlir
    #nn.lsh<hashes = 4, chunk = 64>
    ```
  }];
  let parameters = (ins "int64_t":$hashes, "int64_t":$chunk);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // NNCC_DIALECT_NN_IR_NNATTRS_TD
