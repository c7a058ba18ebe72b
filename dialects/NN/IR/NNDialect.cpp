//===- NNDialect.cpp - The nn dialect ---------------------------*- C++ -*-===//

#include "dialects/NN/IR/NNDialect.h"

#include "dialects/NN/IR/NNOps.h"

using namespace mlir;
using namespace nncc::nn;

#include "dialects/NN/IR/NNDialect.cpp.inc"

void NNDialect::initialize() {
  registerTypes();
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "dialects/NN/IR/NNOps.cpp.inc"
      >();
}
