//===- ModuleLoader.h - Source file -> verified nn module -------*- C++ -*-===//
//
// The one front end every nncc subcommand uses: read a file, then parse,
// check (Sema) and generate the nn module, or parse a .mlir module.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_DRIVER_MODULELOADER_H
#define NNCC_DRIVER_MODULELOADER_H

#include "nncc/Frontend/AST.h"
#include "nncc/Frontend/Sema.h"
#include "nncc/Pipeline/Pipeline.h"
#include "nncc/Pipeline/RematSearch.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/SourceMgr.h"

#include <memory>
#include <optional>
#include <string>

namespace nncc::driver {

/// Registers and loads the dialects nncc modules use (nn, nnk, func, arith,
/// math) and the nn gradient interfaces; single-threaded.
void prepareContext(mlir::MLIRContext &context);

/// Reads `path` ("-": stdin) into `sourceMgr`; its buffer id, or nullopt
/// after printing `nncc: error: cannot read ...`.
std::optional<unsigned> readSourceFile(llvm::SourceMgr &sourceMgr,
                                       llvm::StringRef path);

/// A parsed and checked model (the ModelInfo refers into the AST).
struct CheckedModel {
  std::unique_ptr<frontend::FileAST> ast;
  std::unique_ptr<frontend::ModelInfo> model;
};

/// Parses and checks buffer `bufId` of `sourceMgr` (a .nn source); null
/// members after the diagnostics are printed.
CheckedModel checkModel(mlir::MLIRContext &context, llvm::SourceMgr &sourceMgr,
                        unsigned bufId);

/// Source file -> verified module: a .nn file is parsed, checked and lowered
/// to nn (MLIRGen); a .mlir file is parsed and verified, at whatever stage it
/// is (nn or nnk). `source`, when given, receives the file's text. Null after
/// the diagnostics are printed.
mlir::OwningOpRef<mlir::ModuleOp> loadModule(mlir::MLIRContext &context,
                                             llvm::SourceMgr &sourceMgr,
                                             llvm::StringRef path,
                                             std::string *source = nullptr);

/// What nncc-autodiff adds: nothing, the loss gradient, or the
/// vector-Jacobian product (`nncc compile --grad --vjp`).
enum class GradKind { None, Loss, VJP };

/// Runs the nncc pipeline (buildNNCCPipeline) on a module from loadModule:
/// nncc-autodiff first unless `grad` is None (after a failure, and when
/// `what` is not empty, also prints `nncc: error: cannot differentiate model
/// '<what>'`), then, for stop = nnk, the lowering, unless the module is
/// already at the nnk stage (a .mlir input).
mlir::LogicalResult runPipeline(mlir::ModuleOp module, GradKind grad,
                                bool trainMode, PipelineStage stop,
                                llvm::StringRef what = "",
                                bool fuseLossHeads = false);

/// A memory budget for the training step (`--memory-budget`), for the
/// binding `dims`; `chosen` receives what nncc-remat decided.
struct RematRequest {
  MemoryBudget budget;
  RematSearchOptions search;
  RematPlan chosen;
  /// Whether the loss heads were fused (nn.linear_cross_entropy) for the
  /// chosen plan.
  bool fusedHeads = false;
  /// The compile cache key: "" without a budget, else the form of the loss
  /// heads and the chosen candidate ids.
  std::string key() const;
};

/// runPipeline with `grad` (Loss or VJP), and between differentiation and
/// lowering the rematerialisation for `remat` (nothing when its budget is
/// unlimited).
mlir::LogicalResult runPipeline(mlir::ModuleOp module, GradKind grad, bool trainMode,
                                PipelineStage stop, RematRequest &remat,
                                llvm::StringRef what = "");

} // namespace nncc::driver

#endif // NNCC_DRIVER_MODULELOADER_H
