//===- Compile.h - nnk module -> generated sources -> lib<model>.so -*- C++ -*-===//
#ifndef NNCC_TARGET_COMPILE_H
#define NNCC_TARGET_COMPILE_H

#include "nncc/Target/Precision.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>
#include <vector>

namespace nncc {

/// Whether lib<model>.so also holds CUDA code; the CPU code it always holds
/// (docs/cuda.md). The command line's `--target cpu | cuda | all`.
enum class CudaCode {
  None,          // cpu
  Required,      // cuda: an error when nvcc is missing
  WhenNvccFound, // all: CUDA code when nvcc is there, else the CPU only
};

struct CompileOptions {
  std::string outputDir;              // DIR: <model>.{cpp,cu,h}, lib<model>.so
  CudaCode cuda = CudaCode::None;
  std::string cudaArch = "sm_90";     // nvcc -arch
  std::string hostCompiler;           // empty: $CXX or "c++"
  std::string nvcc;                   // empty: the one found at configure time
  bool build = true;                  // false: write the sources only
  Precision precision = Precision::F32; // real_t (-DNNCC_PRECISION_F64 / _BF16)
  bool bundle = false;                // a self-contained directory (nncc-runner, libraries)
  int optLevel = 3;                   // -O of the host C++ (and nvcc's host pass), 0-3
  /// Where the host compile keeps its precompiled prelude (GCC only): the
  /// runtime headers every generated source includes, parsed once per
  /// compiler, flags and header state instead of once per model. Empty:
  /// none (the headers are parsed each time).
  std::string pchDir;
};

/// The host code's optimisation level when no -O is given:
/// $NNCC_OPT_LEVEL (0, 1, 2 or 3) when set, else 3. An invalid value
/// returns std::nullopt with the reason in `error`.
std::optional<int> defaultOptLevel(std::string &error);

struct CompileArtifacts {
  std::string modelName;
  std::string cppPath, cuPath, headerPath, libraryPath;
  bool builtCuda = false;
};

/// Emits the sources of `module`, which must be at the nnk stage (the
/// nncc pipeline's last, nncc/Pipeline/Pipeline.h), into opts.outputDir and
/// builds the shared library. Errors are reported through the module's
/// diagnostic engine (compiler output included).
mlir::LogicalResult compileModel(mlir::ModuleOp module, const CompileOptions &opts,
                                 CompileArtifacts &out);

/// The generated sources of a model, before anything is written or built.
struct ModelSources {
  std::string modelName;            // C identifier
  std::string cpp, header, cuda;    // cuda: empty without CUDA
  bool withCuda = false;
};

/// compileModel's first half: the sources it would write for `opts` (the
/// target, the precision and whether nvcc is there decide them).
mlir::LogicalResult emitModelSources(mlir::ModuleOp module, const CompileOptions &opts,
                                     ModelSources &out);

/// compileModel's second half: writes `sources` into opts.outputDir and
/// builds the library.
mlir::LogicalResult buildModel(mlir::ModuleOp module, const ModelSources &sources,
                               const CompileOptions &opts, CompileArtifacts &out);

/// What a model input is used for (so that `nncc run --random-inputs` can
/// draw valid values): the front end's `nn.role` on the forward function's
/// argument (#nn.role<...>); Data for an input without one.
enum class InputRole {
  Data,          // anything else: N(0, 1) floats, {0, 1} integers
  TokenIds,      // nnk.embedding indices: [0, limit)
  ClassTargets,  // cross-entropy targets: [0, limit)
  BinaryTargets, // bce_with_logits targets: {0, 1}
  Lengths,       // recurrent_scan lengths: [1, limit]
  Times,         // ode_rnn observation times: increasing along the last dim
  Mask           // attention key-padding mask (true = padded)
};

struct TensorSignature {
  std::string name;
  std::string dtype;              // safetensors spelling: F32, I64, BOOL, ...
  std::vector<std::string> dims;  // "16" or a symbolic dim name "B"
  InputRole role = InputRole::Data;
  std::string limit;              // TokenIds/ClassTargets/Lengths: a size or dim name
  std::vector<int64_t> exempt;    // ClassTargets: values outside the range that count as
                                  // no target (cross-entropy's ignore_index)
  bool inference = true;          // inputs: forward needs it (false: only the loss reads it)
  bool decay = true;              // parameters: weight decay applies (#nn.param_group)
  int64_t lrDepth = 0;            // parameters: lr multiplier = layer_decay^lrDepth
};

/// The sizes one symbolic dim may take: [min, max] (max < 0: no upper
/// bound), set by ops that read a window of a static dim with it (a
/// position table of S rows serves T <= S) or a static window of it (the
/// first token: T >= 1). minWhy / maxWhy name the op that sets each bound
/// ("file:line:col: ..."), empty when none does.
struct DimRange {
  int64_t min = 0, max = -1;
  std::string minWhy, maxWhy;
  /// Why `size` (for dim `name`) is not admitted; empty when it is.
  std::string rejection(llvm::StringRef name, int64_t size) const;
};

struct ModelSignature {
  std::string model;
  std::vector<std::string> dims;
  std::vector<DimRange> dimRanges; // one per dims entry
  std::vector<TensorSignature> inputs, outputs, params;  // outputs end with "loss"
};

/// The C ABI signature of the model; `module` must be at the nnk stage and
/// is not changed. Float tensors are given as F32 (the generated library's
/// default precision).
mlir::FailureOr<ModelSignature> getSignature(mlir::ModuleOp module);

/// Where the generated code's headers and support libraries are: beside the
/// executable for an installed nncc (<prefix>/include, <prefix>/lib), else
/// the build tree nncc was configured in.
struct RuntimeLocation {
  std::string includeDir, libDir;
};
RuntimeLocation runtimeLocation();

/// A string that changes whenever the generated code may change: the nncc
/// version and the identity (size, mtime) of the nncc binary, the support
/// libraries and the headers the generated code includes.
std::string compilerFingerprint();

} // namespace nncc

#endif
