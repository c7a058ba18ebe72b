//===- MLIRGen.h - Lowering of a checked model to the nn dialect ----------===//
#ifndef NNCC_FRONTEND_MLIRGEN_H
#define NNCC_FRONTEND_MLIRGEN_H

#include "nncc/Frontend/Sema.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace nncc {
namespace frontend {

/// Loads the dialects the generated IR uses (nn, func) into `ctx`.
void loadFrontendDialects(mlir::MLIRContext &ctx);

/// Builds the `nn` module of a model: parameters as `nn.parameter` symbols
/// named like PyTorch's state_dict, one `func.func @forward`, module
/// attributes `nn.model`, `nn.dims`, `nn.train`. Forward bodies are checked
/// here (names, arities, keyword names, value kinds); shapes and dtypes are
/// checked by the dialect's type inference. Returns null after reporting an
/// error; the returned module has been verified.
mlir::OwningOpRef<mlir::ModuleOp> mlirGen(mlir::MLIRContext &ctx,
                                          const ModelInfo &model,
                                          DiagEngine &diag);

} // namespace frontend
} // namespace nncc

#endif
