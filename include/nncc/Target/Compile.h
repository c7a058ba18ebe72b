//===- Compile.h - nn module -> generated sources -> lib<model>.so -*- C++ -*-===//
#ifndef NNCC_TARGET_COMPILE_H
#define NNCC_TARGET_COMPILE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace nncc {

enum class CompileTarget { CPU, CUDA, All };

struct CompileOptions {
  std::string outputDir;              // DIR: <model>.{cpp,cu,h}, lib<model>.so
  CompileTarget target = CompileTarget::CPU;
  std::string cudaArch = "sm_90";     // nvcc -arch
  std::string hostCompiler;           // empty: $CXX or "c++"
  std::string nvcc;                   // empty: the one found at configure time
  bool build = true;                  // false: write the sources only
};

struct CompileArtifacts {
  std::string modelName;
  std::string cppPath, cuPath, headerPath, libraryPath;
  bool builtCuda = false;
};

/// Lowers `module` to nnk when it is still in the nn dialect (the
/// --convert-nn-to-nnk pass), emits the sources into opts.outputDir and
/// builds the shared library. Errors are reported through the module's
/// diagnostic engine (compiler output included).
mlir::LogicalResult compileModel(mlir::ModuleOp module, const CompileOptions &opts,
                                 CompileArtifacts &out);

/// Lowers `module` in place to the nnk dialect when needed.
mlir::LogicalResult lowerToNNK(mlir::ModuleOp module);

} // namespace nncc

#endif
