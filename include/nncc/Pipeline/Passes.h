//===- Passes.h - passes of the nncc pipeline -------------------*- C++ -*-===//
#ifndef NNCC_PIPELINE_PASSES_H
#define NNCC_PIPELINE_PASSES_H

#include "dialects/NN/IR/NNDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace nncc {

#define GEN_PASS_DECL
#include "nncc/Pipeline/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "nncc/Pipeline/Passes.h.inc"

} // namespace nncc

#endif // NNCC_PIPELINE_PASSES_H
