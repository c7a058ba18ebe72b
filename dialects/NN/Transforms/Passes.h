//===- Passes.h - nn dialect passes -----------------------------*- C++ -*-===//

#ifndef NNCC_DIALECT_NN_TRANSFORMS_PASSES_H
#define NNCC_DIALECT_NN_TRANSFORMS_PASSES_H

#include "dialects/NN/IR/NNDialect.h"
#include "mlir/Pass/Pass.h"

namespace nncc::nn {

#define GEN_PASS_DECL
#include "dialects/NN/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/NN/Transforms/Passes.h.inc"

} // namespace nncc::nn

#endif // NNCC_DIALECT_NN_TRANSFORMS_PASSES_H
