//===- BPTTCheckpoint.cpp - nn-bptt-checkpoint ----------------------------===//
//
// Sets checkpoint_every on every recurrent reserve pair of the module.
//
//===----------------------------------------------------------------------===//
#include "dialects/NN/IR/BPTTCheckpoint.h"
#include "dialects/NN/IR/NNOps.h"
#include "dialects/NN/Transforms/Passes.h"

namespace nncc::nn {
#define GEN_PASS_DEF_NNBPTTCHECKPOINT
#include "dialects/NN/Transforms/Passes.h.inc"
} // namespace nncc::nn

using namespace mlir;

namespace {
struct NNBPTTCheckpointPass
    : public nncc::nn::impl::NNBPTTCheckpointBase<NNBPTTCheckpointPass> {
  using Base::Base;

  void runOnOperation() override {
    if (every < 1) {
      getOperation().emitError("nn-bptt-checkpoint: 'every' must be at "
                               "least 1, got ")
          << static_cast<int64_t>(every);
      return signalPassFailure();
    }
    getOperation().walk([&](Operation *op) {
      if (!isa<nncc::nn::RNNOp, nncc::nn::LSTMOp, nncc::nn::GRUOp>(op))
        return;
      if (Operation *grad = nncc::nn::getBPTTReserveGrad(op))
        (void)nncc::nn::setBPTTCheckpoint(op, grad, every.getValue());
    });
  }
};
} // namespace
