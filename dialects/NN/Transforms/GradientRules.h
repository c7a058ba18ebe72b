//===- GradientRules.h - GradientOpInterface models of nn ops ---*- C++ -*-===//

#ifndef NNCC_DIALECT_NN_TRANSFORMS_GRADIENTRULES_H
#define NNCC_DIALECT_NN_TRANSFORMS_GRADIENTRULES_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace nncc::nn {

/// Attaches the reverse-mode rules (nncc::GradientOpInterface external
/// models) to the nn ops. Called by the nncc-autodiff pass for its context.
void registerGradientRules(mlir::DialectRegistry &registry);

} // namespace nncc::nn

#endif // NNCC_DIALECT_NN_TRANSFORMS_GRADIENTRULES_H
