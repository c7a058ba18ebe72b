//===- nncc-translate.cpp - nnk launches as C++ / CUDA, for tests -*- C++ -*-===//
//
// Prints the launch of every op of an nnk module's functions, as the CPU
// (--nnk-to-cpp) or the CUDA (--nnk-to-cuda) emitter writes it into a
// generated library, without the tables and prologues around them: the
// tool behind the per-family emitter tests in test/Target/Launch.
//
//===----------------------------------------------------------------------===//
#include "dialects/NN/IR/NNDialect.h"
#include "dialects/NNK/IR/NNKDialect.h"
#include "nncc/Target/Emitters.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"

using namespace mlir;

static void registerNNKDialects(DialectRegistry &registry) {
  registry.insert<nncc::nn::NNDialect, nncc::nnk::NNKDialect, func::FuncDialect,
                  arith::ArithDialect, math::MathDialect>();
}

/// A translation printing the launches of `target`.
/// (The registry keeps the name and description as given: literals.)
static void registerLaunches(const char *name, const char *description,
                             nncc::TargetKind target) {
  TranslateFromMLIRRegistration(
      name, description,
      [target](Operation *op, llvm::raw_ostream &os) -> LogicalResult {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return op->emitError("expected a builtin.module");
        return nncc::target::emitLaunches(module, target, os);
      },
      registerNNKDialects);
}

int main(int argc, char **argv) {
  registerLaunches("nnk-to-cpp", "print the CPU launches of every nnk op",
                   nncc::TargetKind::CPU);
  registerLaunches("nnk-to-cuda", "print the CUDA launches of every nnk op",
                   nncc::TargetKind::CUDA);
  return failed(mlirTranslateMain(argc, argv, "nncc translation driver\n"));
}
