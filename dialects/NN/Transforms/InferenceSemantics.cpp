//===- InferenceSemantics.cpp - Regularizers off outside training --------===//
//
// The nn-inference-semantics pass: dropout, zoneout and attention dropout
// become the identity in functions that are not training functions.
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/Transforms/Passes.h"

#include "dialects/NN/IR/NNOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace nncc::nn {
#define GEN_PASS_DEF_NNINFERENCESEMANTICS
#include "dialects/NN/Transforms/Passes.h.inc"
} // namespace nncc::nn

using namespace mlir;
using namespace nncc::nn;

namespace {
struct NNInferenceSemanticsPass
    : public nncc::nn::impl::NNInferenceSemanticsBase<
          NNInferenceSemanticsPass> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    // Training functions marked nn.eval_mode differentiate the
    // inference-mode loss, so they get inference semantics too.
    if (fn->hasAttr("nn.training") && !fn->hasAttr("nn.eval_mode"))
      return;
    FloatAttr zero = Builder(&getContext()).getF64FloatAttr(0.0);
    fn.walk([&](Operation *op) {
      if (auto dropout = dyn_cast<DropoutOp>(op)) {
        dropout.getResult().replaceAllUsesWith(dropout.getX());
        dropout.erase();
      } else if (auto zoneout = dyn_cast<ZoneoutOp>(op)) {
        zoneout.getResult().replaceAllUsesWith(zoneout.getNewState());
        zoneout.erase();
      } else if (auto lstm = dyn_cast<LSTMOp>(op)) {
        lstm.setZoneoutAttr(zero);
      } else if (auto grad = dyn_cast<LSTMGradOp>(op)) {
        grad.setZoneoutAttr(zero);
      } else if (auto attn = dyn_cast<AttentionOp>(op)) {
        attn.setDropoutAttr(zero);
      } else if (auto grad = dyn_cast<AttentionGradOp>(op)) {
        grad.setDropoutAttr(zero);
      }
    });
  }
};
} // namespace
