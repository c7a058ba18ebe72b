//===- InferShapes.cpp - Refine result types of nn ops ----------*- C++ -*-===//

#include "dialects/NN/Transforms/Passes.h"

#include "dialects/NN/IR/NNOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace nncc::nn {
#define GEN_PASS_DEF_NNINFERSHAPES
#include "dialects/NN/Transforms/Passes.h.inc"
} // namespace nncc::nn

using namespace mlir;

/// Refines the block argument types of the regions of `op` with the types
/// its RegionSignatureOpInterface expects, keeping what the current types
/// know where the expected dim is `?`. Incompatible arguments are left for
/// the verifier to report.
static void refineRegionArguments(nncc::nn::RegionSignatureOpInterface op) {
  for (auto [index, region] : llvm::enumerate(op->getRegions())) {
    SmallVector<Type> argTypes, yieldTypes;
    if (region.empty() ||
        failed(op.getRegionSignature(index, argTypes, yieldTypes)) ||
        region.getNumArguments() != argTypes.size())
      continue;
    for (auto [arg, expectedType] :
         llvm::zip_equal(region.getArguments(), argTypes)) {
      auto current = dyn_cast<nncc::nn::TensorType>(arg.getType());
      auto expected = dyn_cast<nncc::nn::TensorType>(expectedType);
      if (!current || !expected || !current.isCompatibleWith(expected))
        continue;
      SmallVector<nncc::nn::Dim> dims(expected.getDims());
      for (auto [dim, known] : llvm::zip_equal(dims, current.getDims()))
        if (dim.isDynamic())
          dim = known;
      arg.setType(expected.withDims(dims));
    }
  }
}

namespace {
struct NNInferShapesPass
    : public nncc::nn::impl::NNInferShapesBase<NNInferShapesPass> {
  void runOnOperation() override {
    // Pre-order visits an op before the ops nested in its regions, and
    // operands are defined before their users.
    WalkResult result =
        getOperation()->walk<WalkOrder::PreOrder>([](Operation *op) {
          if (failed(nncc::nn::inferResultTypesInPlace(op)))
            return WalkResult::interrupt();
          // Before the walk enters the regions.
          if (auto regionOp =
                  dyn_cast<nncc::nn::RegionSignatureOpInterface>(op))
            refineRegionArguments(regionOp);
          return WalkResult::advance();
        });
    if (result.wasInterrupted())
      return signalPassFailure();

    // Keep function signatures in step with what they now return.
    getOperation()->walk([](func::FuncOp func) {
      if (func.isExternal() || !llvm::hasSingleElement(func.getBody()))
        return;
      auto ret = dyn_cast<func::ReturnOp>(func.getBody().front().back());
      if (!ret)
        return;
      func.setFunctionType(FunctionType::get(func.getContext(),
                                             func.getArgumentTypes(),
                                             ret.getOperandTypes()));
    });
  }
};
} // namespace
