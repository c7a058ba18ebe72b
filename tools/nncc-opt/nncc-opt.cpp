//===- nncc-opt.cpp - Parse, verify and transform nn IR ---------*- C++ -*-===//

#include "dialects/NNK/IR/NNKDialect.h"
#include "dialects/NN/IR/NNDialect.h"
#include "dialects/NN/Transforms/GradientRules.h"
#include "dialects/NN/Transforms/Passes.h"
#include "nncc/Conversion/Passes.h"
#include "nncc/Pipeline/Passes.h"
#include "nncc/Pipeline/Pipeline.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<nncc::nn::NNDialect, nncc::nnk::NNKDialect,
                  mlir::func::FuncDialect>();
  nncc::nn::registerNNGradientInterfaces(registry);
  nncc::nn::registerNNPasses();
  nncc::registerNNCCConversionPasses();
  nncc::registerNNCCPipeline();
  nncc::registerNNCCPipelinePasses();
  // Generic passes (canonicalize, cse, symbol-dce, ...) for pipelines.
  mlir::registerTransformsPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "nncc optimizer driver\n", registry));
}
