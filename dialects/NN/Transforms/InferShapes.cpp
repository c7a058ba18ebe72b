//===- InferShapes.cpp - Refine result types of nn ops ----------*- C++ -*-===//

#include "dialects/NN/Transforms/Passes.h"

#include "dialects/NN/IR/NNOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace nncc::nn {
#define GEN_PASS_DEF_NNINFERSHAPES
#include "dialects/NN/Transforms/Passes.h.inc"
} // namespace nncc::nn

using namespace mlir;

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
