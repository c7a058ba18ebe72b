//===- Emitters.h - nnk -> host C++ / CUDA C++ / C header ------*- C++ -*-===//
//
// Each emitter walks a module in the `nnk` dialect (docs/nnk-spec.md) and
// prints a translation unit that, linked with libnncc_model_support,
// libnncc_runtime and libnncc_kernels, implements nncc_model.h. Emission
// fails with an error at the location of any op it cannot handle.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_TARGET_EMITTERS_H
#define NNCC_TARGET_EMITTERS_H

#include "nncc/Target/Precision.h"
#include "nncc/Target/TargetKind.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace nncc::target {

/// <model>.cpp: tables, buffer plan, the CPU launch sequence and the ABI.
/// `withCuda`: the definition refers to the forward of <model>.cu (compile
/// both and link them together). `precision` bf16: the CPU entries report
/// that the library runs on CUDA only (f32 and f64 print the same source).
mlir::LogicalResult emitCpp(mlir::ModuleOp module, llvm::raw_ostream &os, bool withCuda,
                            Precision precision = Precision::F32);
/// A header that includes every header emitCpp's sources may include: the
/// host compile's precompiled prelude (nncc/Target/Compile.h).
std::string hostPrelude();
/// <model>.cu: the CUDA launch sequence (generated kernels, cuBLAS, the
/// .cuh kernels of runtime/include/nncc/Kernels/CUDA). `precision` bf16:
/// fails at the first op without a bf16 kernel, and for a training module.
mlir::LogicalResult emitCuda(mlir::ModuleOp module, llvm::raw_ostream &os,
                             Precision precision = Precision::F32);
/// <model>.h: the C API of the generated library.
mlir::LogicalResult emitHeader(mlir::ModuleOp module, llvm::raw_ostream &os);

/// The launch of every op of the module's functions as `target`'s emitter
/// prints it into a generated library, one block per function headed
/// `// launches of @name`, without tables and prologues (nncc-translate's
/// --nnk-to-cpp / --nnk-to-cuda; for the CUDA target, the generated
/// __global__ kernels follow). For tests of the emitters, op by op.
mlir::LogicalResult emitLaunches(mlir::ModuleOp module, TargetKind target,
                                 llvm::raw_ostream &os);

/// The model's name as a C identifier (the module's `nn.model`).
std::string modelIdentifier(mlir::ModuleOp module);

} // namespace nncc::target

#endif // NNCC_TARGET_EMITTERS_H
