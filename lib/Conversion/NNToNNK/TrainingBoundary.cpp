//===- TrainingBoundary.cpp - Where forward_train ends ---------------------===//
//
// The nn-insert-training-boundary pass: one nnk.boundary in a training
// function, after its last residual (nn.save) or, when nothing is saved,
// where its backward begins: after the last op that a forward result (any
// result not named grad.<...>) reads. Either way the boundary must come
// before every op that reads (transitively) a cotangent argument
// (cotangent.<...>, `--vjp`): those run in backward, after set_cotangent.
//
//===----------------------------------------------------------------------===//

#include "PatternHelpers.h"
#include "nncc/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace nncc {
#define GEN_PASS_DEF_NNINSERTTRAININGBOUNDARY
#include "nncc/Conversion/Passes.h.inc"
} // namespace nncc

using namespace mlir;
using namespace nncc;

namespace {

/// The values `op` reads: its operands and what its regions capture.
llvm::SetVector<Value> readsOf(Operation &op) {
  llvm::SetVector<Value> reads;
  reads.insert(op.operand_begin(), op.operand_end());
  getUsedValuesDefinedAbove(op.getRegions(), reads);
  return reads;
}

bool named(StringAttr name, StringRef prefix) {
  return name && name.getValue().starts_with(prefix);
}

struct NNInsertTrainingBoundaryPass
    : public nncc::impl::NNInsertTrainingBoundaryBase<
          NNInsertTrainingBoundaryPass> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (!fn->hasAttr("nn.training") || fn.getBody().empty())
      return;
    Block &body = fn.getBody().front();
    Operation *ret = body.getTerminator();

    // The first op that reads a cotangent argument, directly or not.
    llvm::DenseSet<Value> fromCotangent;
    for (BlockArgument arg : body.getArguments())
      if (named(fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "nn.name"),
                "cotangent."))
        fromCotangent.insert(arg);
    Operation *firstCotangentReader = nullptr;
    if (!fromCotangent.empty())
      for (Operation &op : body.without_terminator())
        if (llvm::any_of(readsOf(op), [&](Value v) { return fromCotangent.contains(v); })) {
          if (!firstCotangentReader)
            firstCotangentReader = &op;
          fromCotangent.insert(op.result_begin(), op.result_end());
        }

    // The last op that a forward result (outputs, loss) reads.
    llvm::DenseSet<Value> forwardValues;
    for (OpOperand &result : ret->getOpOperands())
      if (!named(fn.getResultAttrOfType<StringAttr>(result.getOperandNumber(), "nn.name"),
                 "grad."))
        forwardValues.insert(result.get());
    Operation *lastForward = nullptr;
    for (Operation &op : llvm::reverse(body.without_terminator())) {
      if (llvm::none_of(op.getResults(), [&](Value v) { return forwardValues.contains(v); }))
        continue;
      if (!lastForward)
        lastForward = &op;
      for (Value v : readsOf(op))
        forwardValues.insert(v);
    }

    Operation *lastSave = nullptr;
    for (Operation &op : body)
      if (isa<nn::SaveOp>(op))
        lastSave = &op;

    // After the residuals, or after the forward when there are none.
    Operation *after = lastSave ? lastSave : lastForward;
    if (after && firstCotangentReader && firstCotangentReader->isBeforeInBlock(after)) {
      InFlightDiagnostic diag = firstCotangentReader->emitError()
                                << "reads a cotangent before the end of the forward part of "
                                   "the training function (the "
                                << (lastSave ? "last residual" : "last op a forward result reads")
                                << "): no place for the forward_train/backward boundary";
      diag.attachNote(after->getLoc()) << "the forward part ends here";
      return signalPassFailure();
    }
    OpBuilder b(fn.getContext());
    if (after)
      b.setInsertionPointAfter(after);
    else
      b.setInsertionPointToStart(&body);
    nnk::BoundaryOp::create(b, fn.getLoc());
  }
};
} // namespace
