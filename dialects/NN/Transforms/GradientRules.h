//===- GradientRules.h - GradientOpInterface models of nn ops ---*- C++ -*-===//

#ifndef NNCC_DIALECT_NN_TRANSFORMS_GRADIENTRULES_H
#define NNCC_DIALECT_NN_TRANSFORMS_GRADIENTRULES_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace nncc::nn {

/// Adds a dialect extension that attaches the reverse-mode rules
/// (nncc::GradientOpInterface external models) to the nn ops when the nn
/// dialect is loaded. Tools call it on their registry (nncc, nncc-opt), the
/// way upstream registers external models; nncc-autodiff fails at the first
/// op without a rule when it was not called.
void registerNNGradientInterfaces(mlir::DialectRegistry &registry);

} // namespace nncc::nn

#endif // NNCC_DIALECT_NN_TRANSFORMS_GRADIENTRULES_H
