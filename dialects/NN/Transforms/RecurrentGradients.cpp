//===- RecurrentGradients.cpp - recurrent layers and cells ------*- C++ -*-===//
//
// One fused BPTT op per layer stack (reading the reserve its forward
// kept) and per cell; zoneout routes dy by its mask.
// (GradientOpInterface models; docs/autodiff.md.)
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/Transforms/GradientRule.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::nn;
using namespace nncc::nn::gradients;

namespace {

/// Saved: the non-weight operands (weights are parameters, re-read).
template <typename OpTy> void savedRecurrent(OpTy op, SmallVectorImpl<Value> &s) {
  for (Value v : op->getOperands())
    if (!llvm::is_contained(op.getWeights(), v))
      s.push_back(v);
}

LogicalResult zoneoutGradient(ZoneoutOp op, GradientBuilder &gb, ArrayRef<Value> r,
                              SmallVectorImpl<Value> &out) {
  // y = m * prev + (1 - m) * new with the seeded mask m: recompute m by
  // zoning out between dy and zeros.
  OpBuilder &b = gb.getBuilder();
  Location loc = op.getLoc();
  Value zero = zeros(b, loc, r[0].getType());
  out.push_back(ZoneoutOp::create(b, loc, r[0], zero, op.getP(), op.getSeed()));
  out.push_back(ZoneoutOp::create(b, loc, zero, r[0], op.getP(), op.getSeed()));
  return success();
}

void rnnSaved(RNNOp op, SmallVectorImpl<Value> &s) { savedRecurrent(op, s); }
LogicalResult rnnGradient(RNNOp op, GradientBuilder &gb, ArrayRef<Value> r,
                          SmallVectorImpl<Value> &out) {
  auto grad = RNNGradOp::create(
      gb.getBuilder(), op.getLoc(), gb.get(op.getX()), getOpt(gb, op.getH0()),
      getOpt(gb, op.getLengths()), getAll(gb, op.getWeights()), r[0], r[1], keepReserve(gb, op),
      op.getHiddenSize(), op.getNumLayers(), op.getBidirectional(), op.getHasBias(),
      op.getNonlinearity(), op.getCheckpointEveryAttr(), op.getCheckpointSnapshotsAttr());
  out.push_back(grad.getDx());
  if (op.getH0())
    out.push_back(grad.getDh0());
  if (op.getLengths())
    out.push_back(Value());
  llvm::append_range(out, grad.getDweights());
  return success();
}

void lstmSaved(LSTMOp op, SmallVectorImpl<Value> &s) { savedRecurrent(op, s); }
LogicalResult lstmGradient(LSTMOp op, GradientBuilder &gb, ArrayRef<Value> r,
                           SmallVectorImpl<Value> &out) {
  auto grad = LSTMGradOp::create(
      gb.getBuilder(), op.getLoc(), gb.get(op.getX()), getOpt(gb, op.getH0()),
      getOpt(gb, op.getC0()), getOpt(gb, op.getLengths()), getAll(gb, op.getWeights()), r[0], r[1],
      r[2], keepReserve(gb, op), op.getHiddenSize(), op.getNumLayers(), op.getBidirectional(),
      op.getHasBias(), op.getZoneout(), op.getSeed(), op.getCheckpointEveryAttr(),
      op.getCheckpointSnapshotsAttr());
  out.push_back(grad.getDx());
  if (op.getH0())
    out.push_back(grad.getDh0());
  if (op.getC0())
    out.push_back(grad.getDc0());
  if (op.getLengths())
    out.push_back(Value());
  llvm::append_range(out, grad.getDweights());
  return success();
}

void gruSaved(GRUOp op, SmallVectorImpl<Value> &s) { savedRecurrent(op, s); }
LogicalResult gruGradient(GRUOp op, GradientBuilder &gb, ArrayRef<Value> r,
                          SmallVectorImpl<Value> &out) {
  auto grad = GRUGradOp::create(
      gb.getBuilder(), op.getLoc(), gb.get(op.getX()), getOpt(gb, op.getH0()),
      getOpt(gb, op.getLengths()), getAll(gb, op.getWeights()), r[0], r[1], keepReserve(gb, op),
      op.getHiddenSize(), op.getNumLayers(), op.getBidirectional(), op.getHasBias(),
      op.getVariant(), op.getCheckpointEveryAttr(), op.getCheckpointSnapshotsAttr());
  out.push_back(grad.getDx());
  if (op.getH0())
    out.push_back(grad.getDh0());
  if (op.getLengths())
    out.push_back(Value());
  llvm::append_range(out, grad.getDweights());
  return success();
}

void rnnCellSaved(RNNCellOp op, SmallVectorImpl<Value> &s) { savedAll(op, s); }
LogicalResult rnnCellGradient(RNNCellOp op, GradientBuilder &gb, ArrayRef<Value> r,
                              SmallVectorImpl<Value> &out) {
  auto grad =
      RNNCellGradOp::create(gb.getBuilder(), op.getLoc(), gb.get(op.getX()), gb.get(op.getH()),
                            gb.get(op.getWIh()), gb.get(op.getWHh()), getOpt(gb, op.getBIh()),
                            getOpt(gb, op.getBHh()), r[0], op.getNonlinearity());
  out.push_back(grad.getDx());
  out.push_back(grad.getDh());
  llvm::append_range(out, grad.getDweights());
  return success();
}

void lstmCellSaved(LSTMCellOp op, SmallVectorImpl<Value> &s) { savedAll(op, s); }
LogicalResult lstmCellGradient(LSTMCellOp op, GradientBuilder &gb, ArrayRef<Value> r,
                               SmallVectorImpl<Value> &out) {
  auto grad =
      LSTMCellGradOp::create(gb.getBuilder(), op.getLoc(), gb.get(op.getX()), gb.get(op.getH()),
                             gb.get(op.getC()), gb.get(op.getWIh()), gb.get(op.getWHh()),
                             getOpt(gb, op.getBIh()), getOpt(gb, op.getBHh()), r[0], r[1]);
  out.push_back(grad.getDx());
  out.push_back(grad.getDh());
  out.push_back(grad.getDc());
  llvm::append_range(out, grad.getDweights());
  return success();
}

void gruCellSaved(GRUCellOp op, SmallVectorImpl<Value> &s) { savedAll(op, s); }
LogicalResult gruCellGradient(GRUCellOp op, GradientBuilder &gb, ArrayRef<Value> r,
                              SmallVectorImpl<Value> &out) {
  auto grad = GRUCellGradOp::create(
      gb.getBuilder(), op.getLoc(), gb.get(op.getX()), gb.get(op.getH()), gb.get(op.getWIh()),
      gb.get(op.getWHh()), getOpt(gb, op.getBIh()), getOpt(gb, op.getBHh()), r[0], op.getVariant());
  out.push_back(grad.getDx());
  out.push_back(grad.getDh());
  llvm::append_range(out, grad.getDweights());
  return success();
}

} // namespace

void nncc::nn::gradients::attachRecurrentGradientRules(MLIRContext &ctx) {
  attachGradientRule<ZoneoutOp, savesNothing<ZoneoutOp>, zoneoutGradient>(ctx);
  attachGradientRule<RNNOp, rnnSaved, rnnGradient>(ctx);
  attachGradientRule<LSTMOp, lstmSaved, lstmGradient>(ctx);
  attachGradientRule<GRUOp, gruSaved, gruGradient>(ctx);
  attachGradientRule<RNNCellOp, rnnCellSaved, rnnCellGradient>(ctx);
  attachGradientRule<LSTMCellOp, lstmCellSaved, lstmCellGradient>(ctx);
  attachGradientRule<GRUCellOp, gruCellSaved, gruCellGradient>(ctx);
}
