//===- TrainingBoundary.cpp - Where forward_train ends ---------------------===//
//
// The nn-insert-training-boundary pass: one nnk.boundary after the last
// residual (nn.save) of a training function.
//
//===----------------------------------------------------------------------===//

#include "Common.h"
#include "nncc/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace nncc {
#define GEN_PASS_DEF_NNINSERTTRAININGBOUNDARY
#include "nncc/Conversion/Passes.h.inc"
} // namespace nncc

using namespace mlir;
using namespace nncc;

namespace {
struct NNInsertTrainingBoundaryPass
    : public nncc::impl::NNInsertTrainingBoundaryBase<
          NNInsertTrainingBoundaryPass> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (!fn->hasAttr("nn.training") || fn.getBody().empty())
      return;
    Block &body = fn.getBody().front();
    Operation *last = nullptr;
    for (Operation &op : body)
      if (isa<nn::SaveOp>(op))
        last = &op;
    OpBuilder b(fn.getContext());
    if (last)
      b.setInsertionPointAfter(last);
    else
      b.setInsertionPoint(body.getTerminator());
    nnk::BoundaryOp::create(b, fn.getLoc());
  }
};
} // namespace
