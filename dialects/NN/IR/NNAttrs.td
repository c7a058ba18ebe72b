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

def NN_ComparePredicate : I32EnumAttr<"ComparePredicate",
    "elementwise comparison", [
    I32EnumAttrCase<"eq", 0>,
    I32EnumAttrCase<"ne", 1>,
    I32EnumAttrCase<"lt", 2>,
    I32EnumAttrCase<"le", 3>,
    I32EnumAttrCase<"gt", 4>,
    I32EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::nncc::nn";
  let genSpecializedAttr = 0;
}
def NN_ComparePredicateAttr : EnumAttr<NN_Dialect, NN_ComparePredicate,
                                       "cmp"> {
  let summary = "the relation nn.compare tests (eq, ne, lt, le, gt, ge)";
  let description = [{
    `lhs == rhs`, `!=`, `<`, `<=`, `>`, `>=` in the `.nn` language. Floats
    compare as IEEE ordered relations (a NaN is unequal to everything, `ne`
    included: `ne` is true for NaN). Written `#nn<cmp ne>`.
  }];
  let assemblyFormat = "$value";
}

// The conversion maps it onto nnk's solver enum (#nnk<ode_method>, whose
// values are the kernel library's NNCC_ODE_* codes).
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

def NN_OptimizerKind : I32EnumAttr<"OptimizerKind", "training optimizer", [
    I32EnumAttrCase<"sgd", 0>,
    I32EnumAttrCase<"adam", 1>,
    I32EnumAttrCase<"adamw", 2>]> {
  let cppNamespace = "::nncc::nn";
  let genSpecializedAttr = 0;
}

def NN_ScheduleKind : I32EnumAttr<"ScheduleKind", "learning-rate schedule", [
    I32EnumAttrCase<"constant", 0>,
    I32EnumAttrCase<"warmup_cosine", 1>,
    I32EnumAttrCase<"cosine", 2>,
    I32EnumAttrCase<"linear", 3>,
    I32EnumAttrCase<"step", 4>]> {
  let cppNamespace = "::nncc::nn";
  let genSpecializedAttr = 0;
}

def NN_InputRoleKind : I32EnumAttr<"InputRoleKind", "what a model input is used for", [
    I32EnumAttrCase<"token_ids", 0>,
    I32EnumAttrCase<"class_targets", 1>,
    I32EnumAttrCase<"binary_targets", 2>,
    I32EnumAttrCase<"lengths", 3>,
    I32EnumAttrCase<"times", 4>,
    I32EnumAttrCase<"mask", 5>]> {
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
    `dilation` apart around it; positions listed in `global` (or, per
    example, those `nn.attention`'s `global_mask` marks) attend to and are
    attended by all positions. window >= 1, dilation >= 1, every global
    position >= 0. Input projection `[3E, E]`.

    `convention` (default `"nncc"`, left out when printed): `"hf"` is Hugging
    Face's `LongformerSelfAttention`: global queries attend with their own
    projections (`query_global`, `key_global`, `value_global`, stacked after
    q, k, v: input projection `[6E, E]`), and a padded query's row is zero.
    Its global tokens come from `global_mask` (`global` stays empty).
    docs/kernels.md, "Dilated sliding window".

    ```mlir
    #nn.dilated<window = 64, dilation = 2, global = [0]>
    #nn.dilated<window = 128, dilation = 1>
    #nn.dilated<window = 512, dilation = 1, convention = "hf">
    ```
  }];
  let parameters = (ins
    "int64_t":$window,
    "int64_t":$dilation,
    NN_I64ListParameter:$global,
    StringRefParameter<"dilated convention: nncc or hf", "\"nncc\"">:$convention
  );
  let extraClassDeclaration = [{
    /// Whether this is Hugging Face's (Longformer's) convention.
    bool isHf() const { return getConvention() == "hf"; }
  }];
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

    `convention` (default `"hf"`, left out when printed) selects whose
    semantics: `"hf"`, Hugging Face transformers' `LSHSelfAttention` (keys
    normalised to unit length and 1/sqrt(dh) with eps 1e-6, no further
    scale; all rounds sorted into one sequence, each chunk looking one chunk
    back with wrap-around across rounds; self score -1e5; padded positions
    in an extra bucket; plain attention when T <= chunk; rotations
    `[num_heads, E / num_heads, hashes, buckets / 2]`, per head), or
    `"nncc"`, nncc's earlier semantics (scores scaled by 1/sqrt(dh), no
    look-back across rounds, rotations `[hashes, E / num_heads, buckets / 2]`
    shared by the heads). docs/kernels.md, "LSH".

    `pad_to_multiple` and `pad_above` (convention hf; 0, left out when
    printed: none) are `ReformerModel`'s padding of its input: a T above
    `pad_above` that is not a multiple of `pad_to_multiple` is attended as
    the next multiple, the added positions padded (they take slots in the
    sorted sequence). import-hf sets them to the least common multiple and
    the shortest of the model's chunk lengths.

    ```mlir
    #nn.lsh<hashes = 4, chunk = 64>
    #nn.lsh<hashes = 1, chunk = 4, pad_to_multiple = 12, pad_above = 3>
    #nn.lsh<hashes = 4, chunk = 64, convention = "nncc">
    ```
  }];
  let parameters = (ins "int64_t":$hashes, "int64_t":$chunk,
                    StringRefParameter<"LSH convention: hf or nncc", "\"hf\"">:$convention,
                    DefaultValuedParameter<"int64_t", "0">:$pad_to_multiple,
                    DefaultValuedParameter<"int64_t", "0">:$pad_above);
  let extraClassDeclaration = [{
    /// Whether this is Hugging Face's convention (the default).
    bool isHf() const { return getConvention() == "hf"; }
  }];
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}


def NN_LocalAttentionAttr : NN_Attr<"LocalAttention", "local",
    [DeclareAttrInterfaceMethods<NN_AttentionKindAttrInterface>]> {
  let summary = "chunked local attention (Reformer's LocalSelfAttention)";
  let description = [{
    Hugging Face transformers' `LocalSelfAttention`, the "local" layers of
    `ReformerModel`: with T > chunk the sequence is cut into chunks of
    `chunk` positions and the queries of chunk c attend to the keys of
    chunks c - `before` ... c + `after`, the chunk indices wrapping around
    the sequence (chunk 0 looks back at the last chunk); with T <= chunk
    every query attends to every key. Masked keys (padding, and under
    `causal` a later position, by absolute index) score -1e9 rather than
    being left out, so a query whose window is all masked averages it, as
    Hugging Face's does. chunk >= 1, before >= 0, after >= 0. Input
    projection `[3E, E]` (query, key, value). `pad_to_multiple` and
    `pad_above` are `#nn.lsh`'s: the chunks are cut from T padded as
    `ReformerModel` pads it. docs/kernels.md, "Local".

    ```mlir
    #nn.local<chunk = 64, before = 1, after = 0>
    ```
  }];
  let parameters = (ins "int64_t":$chunk, "int64_t":$before, "int64_t":$after,
                    DefaultValuedParameter<"int64_t", "0">:$pad_to_multiple,
                    DefaultValuedParameter<"int64_t", "0">:$pad_above);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Training configuration (the DSL's `train { }` clause)
//===----------------------------------------------------------------------===//

def NN_OptimizerAttr : NN_Attr<"Optimizer", "optimizer"> {
  let summary = "optimizer of the train clause, defaults filled";
  let description = [{
    The `optimizer` setting of a `train { }` clause (docs/training.md). The
    kind comes first, then `key = value` pairs; a key left out takes its
    default, and the printer writes every key of the kind:

    ```mlir
    #nn.optimizer<adam, lr = 1.0e-03, betas = [0.9, 0.999], eps = 1.0e-08, weight_decay = 0.0>
    #nn.optimizer<adamw, lr = 7.0e-05, eps = 1.0e-04, weight_decay = 2.0e-02>
    #nn.optimizer<sgd, lr = 0.1, momentum = 0.9, weight_decay = 0.0, nesterov = false>
    ```

    Keys: adam / adamw take `lr` (1e-3), `betas` (two numbers, [0.9,
    0.999]), `eps` (1e-8), `weight_decay` (0, adamw 0.01); sgd takes `lr`
    (required), `momentum` (0), `weight_decay` (0), `nesterov` (false).
    Ranges: lr > 0, each beta in [0, 1), eps > 0, weight_decay >= 0,
    momentum >= 0. Fields of the other kind hold their defaults.
  }];
  let parameters = (ins
    "::nncc::nn::OptimizerKind":$kind,
    APFloatParameter<"base learning rate">:$lr,
    APFloatParameter<"first moment decay">:$beta1,
    APFloatParameter<"second moment decay">:$beta2,
    APFloatParameter<"denominator epsilon">:$eps,
    APFloatParameter<"weight decay">:$weightDecay,
    APFloatParameter<"sgd momentum">:$momentum,
    "bool":$nesterov
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The defaults of `kind` (sgd's lr, which has none, is set to 1e-3).
    static OptimizerAttr getDefault(::mlir::MLIRContext *ctx, OptimizerKind kind);
    /// Copy with the float field `key` (lr, eps, weight_decay, momentum,
    /// beta1, beta2) set; null if `key` is not one.
    OptimizerAttr withFloat(::llvm::StringRef key, double value) const;
    OptimizerAttr withNesterov(bool nesterov) const;
    double getLrValue() const { return getLr().convertToDouble(); }
    double getBeta1Value() const { return getBeta1().convertToDouble(); }
    double getBeta2Value() const { return getBeta2().convertToDouble(); }
    double getEpsValue() const { return getEps().convertToDouble(); }
    double getWeightDecayValue() const { return getWeightDecay().convertToDouble(); }
    double getMomentumValue() const { return getMomentum().convertToDouble(); }
  }];
}

def NN_ScheduleAttr : NN_Attr<"Schedule", "schedule"> {
  let summary = "learning-rate schedule of the train clause, defaults filled";
  let description = [{
    The `schedule` setting of a `train { }` clause (docs/training.md, the
    formulas). The kind, then its keys; absent keys take their defaults and
    the printer writes every key of the kind that is set:

    ```mlir
    #nn.schedule<constant>
    #nn.schedule<warmup_cosine, warmup = 1000, total = 100000, cycles = 0.5>
    #nn.schedule<warmup_cosine, warmup_fraction = 0.3, cycles = 0.2>
    #nn.schedule<cosine, total = 500>
    #nn.schedule<linear, warmup = 10, total = 100>
    #nn.schedule<step, step_size = 30, gamma = 0.1>
    ```

    warmup_cosine: `warmup` (steps >= 0) or `warmup_fraction` (in [0, 1))
    of `total`; neither: no warm-up. `total` (>= 1) when absent is set by
    the trainer (epochs x steps per epoch). `cycles` (the final lr
    fraction, in [0, 1], default 0.5). cosine: `total`. linear: `warmup`,
    `total`. step: `step_size` (>= 1, required), `gamma` (> 0, default
    0.1). `warmup` = -1, `warmup_fraction` = 0 and `total` = 0 stand for
    "absent".
  }];
  let parameters = (ins
    "::nncc::nn::ScheduleKind":$kind,
    "int64_t":$warmup,
    APFloatParameter<"warm-up fraction of total">:$warmupFraction,
    "int64_t":$total,
    APFloatParameter<"final lr fraction">:$cycles,
    "int64_t":$stepSize,
    APFloatParameter<"step decay factor">:$gamma
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    static ScheduleAttr getDefault(::mlir::MLIRContext *ctx, ScheduleKind kind);
    /// Copy with the field `key` set from `value` (integers for warmup,
    /// total, step_size); null if `key` is not one.
    ScheduleAttr with(::llvm::StringRef key, double value) const;
    double getWarmupFractionValue() const { return getWarmupFraction().convertToDouble(); }
    double getCyclesValue() const { return getCycles().convertToDouble(); }
    double getGammaValue() const { return getGamma().convertToDouble(); }
  }];
}

def NN_TrainAttr : NN_Attr<"Train", "train"> {
  let summary = "the model's train clause (module attribute `nn.train`)";
  let description = [{
    Every setting of the DSL's `train { }` clause, typed and with defaults
    filled; the generated library bakes it in as `kTrainConfig`.

    ```mlir
    #nn.train<optimizer = #nn.optimizer<adamw, ...>,
              schedule = #nn.schedule<warmup_cosine, ...>,
              clip = 5.0, layer_decay = 0.95, epochs = 20, batch = 32, seed = 0>
    ```

    All keys are optional on input (`#nn.train<>` is the default clause:
    adam, constant, no clipping, layer_decay 1, 1 epoch, batch 32, seed 0);
    the printer writes every key but `clip` when there is no clipping.
    clip > 0 (0: none), layer_decay in (0, 1], epochs >= 1, batch >= 1.
  }];
  let parameters = (ins
    "::nncc::nn::OptimizerAttr":$optimizer,
    "::nncc::nn::ScheduleAttr":$schedule,
    APFloatParameter<"max global gradient norm; 0: none">:$clip,
    APFloatParameter<"layer-wise lr decay f_d">:$layerDecay,
    "int64_t":$epochs,
    "int64_t":$batch,
    "int64_t":$seed
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    static TrainAttr getDefault(::mlir::MLIRContext *ctx);
    double getClipValue() const { return getClip().convertToDouble(); }
    double getLayerDecayValue() const { return getLayerDecay().convertToDouble(); }
  }];
}

def NN_LrGroup : I32EnumAttr<"LrGroup", "layer-wise lr decay group", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"layer", 1>,
    I32EnumAttrCase<"embedding", 2>]> {
  let cppNamespace = "::nncc::nn";
  let genSpecializedAttr = 0;
}

def NN_ParamGroupAttr : NN_Attr<"ParamGroup", "param_group"> {
  let summary = "optimizer group of a parameter, decided by the front end";
  let description = [{
    Whether weight decay applies to a parameter and its group for
    layer-wise learning-rate decay, from the layer that created it:

    ```mlir
    #nn.param_group<decay>                 // weights: decay, lr multiplier 1
    #nn.param_group<no_decay>              // biases and norm weights
    #nn.param_group<decay, layer 3>        // member 3 (0-based) of the layer stack
    #nn.param_group<decay, embedding>      // embedding tables
    ```

    With L layers in the stack (1 + the largest `layer`) and f_d the clause's
    `layer_decay`, the lr multiplier is f_d^(L-1-layer) for `layer`,
    f_d^(L+1) for `embedding` and 1 otherwise (docs/training.md).
    `layer` >= 0.
  }];
  let parameters = (ins
    "bool":$decay,
    "::nncc::nn::LrGroup":$lrGroup,
    "int64_t":$layer
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The exponent of layer_decay in this parameter's lr multiplier, for a
    /// stack of `numLayers` layers.
    int64_t getLrDepth(int64_t numLayers) const;
  }];
}

def NN_InputRoleAttr : NN_Attr<"InputRole", "role"> {
  let summary = "what a model input is used for, decided by the front end";
  let description = [{
    Attached as `nn.role` to an argument of the model's forward function by
    the front end when the input (possibly through slices, transposes,
    splits and concats) reaches an operand of this kind, so that tools can
    draw valid inputs (`nncc run --random-inputs`):

    ```mlir
    #nn.role<token_ids, limit = 30522>  // nn.embedding indices in [0, limit)
    #nn.role<class_targets, limit = C>  // nn.cross_entropy targets in [0, limit)
    #nn.role<binary_targets>            // nn.bce_with_logits targets in {0, 1}
    #nn.role<lengths, limit = T>        // recurrent lengths in [1, limit]
    #nn.role<times>                     // nn.ode_rnn times, increasing
    #nn.role<mask>                      // nn.attention key-padding mask
    ```

    `limit` is a static size (> 0) or a symbolic dim of the model; only
    `token_ids`, `class_targets` and `lengths` have one, and may omit it
    when the size is unknown (`?`).
  }];
  let parameters = (ins
    "::nncc::nn::InputRoleKind":$kind,
    "int64_t":$size,
    "::mlir::StringAttr":$symbol
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "::nncc::nn::InputRoleKind":$kind), [{
      return $_get($_ctxt, kind, 0, ::mlir::StringAttr());
    }]>
  ];
  let extraClassDeclaration = [{
    /// Whether `limit` is given (a static size or a symbol).
    bool hasLimit() const { return getSize() > 0 || getSymbol(); }
  }];
}

#endif // NNCC_DIALECT_NN_IR_NNATTRS_TD
