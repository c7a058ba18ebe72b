//===- BPTTCheckpoint.cpp - nn-bptt-checkpoint ----------------------------===//
//
// Sets checkpoint_every (or checkpoint_snapshots) on every recurrent
// reserve pair of the module.
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
    if ((every < 1) == (snapshots < 1)) {
      getOperation().emitError("nn-bptt-checkpoint: exactly one of 'every' "
                               "and 'snapshots' must be at least 1, got ")
          << static_cast<int64_t>(every) << " and "
          << static_cast<int64_t>(snapshots);
      return signalPassFailure();
    }
    getOperation().walk([&](Operation *op) {
      if (!isa<nncc::nn::RNNOp, nncc::nn::LSTMOp, nncc::nn::GRUOp>(op))
        return;
      Operation *grad = nncc::nn::getBPTTReserveGrad(op);
      if (!grad)
        return;
      if (snapshots >= 1)
        (void)nncc::nn::setBPTTSnapshots(op, grad, snapshots.getValue());
      else
        (void)nncc::nn::setBPTTCheckpoint(op, grad, every.getValue());
    });
  }
};
} // namespace
