//===- Passes.h - nncc conversion passes ------------------------*- C++ -*-===//

#ifndef NNCC_CONVERSION_PASSES_H
#define NNCC_CONVERSION_PASSES_H

#include "dialects/NNK/IR/NNKDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace nncc {

#define GEN_PASS_DECL
#include "nncc/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "nncc/Conversion/Passes.h.inc"

} // namespace nncc

#endif // NNCC_CONVERSION_PASSES_H
