//===- NNKRecurrentOps.cpp - nnk recurrent scans and cells ------*- C++ -*-===//
//
// Verifiers of the recurrent family's nnk ops (NNKRecurrentOps.td).
//
//===----------------------------------------------------------------------===//

#include "dialects/NNK/IR/NNKOps.h"

#include "dialects/NNK/IR/NNKOpsCommon.h"
#include "nncc/Kernels/RecurrentMath.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::nnk;
using namespace nncc::nnk::detail;

namespace {

/// BPTT checkpointing: checkpoint_every or checkpoint_snapshots >= 1, on a stack of the kernels'
/// CPU form (zoneout only on the LSTM, as the nn verifiers already ensure).
template <typename Op> LogicalResult verifyCheckpointEvery(Op op) {
  std::optional<int64_t> every = op.getCheckpointEvery();
  if (every && *every < 1)
    return op.emitOpError("'checkpoint_every' must be at least 1, got ")
           << *every;
  std::optional<int64_t> snapshots = op.getCheckpointSnapshots();
  if (snapshots && *snapshots < 1)
    return op.emitOpError("'checkpoint_snapshots' must be at least 1, got ")
           << *snapshots;
  if (every && snapshots)
    return op.emitOpError(
        "'checkpoint_every' and 'checkpoint_snapshots' are exclusive");
  return success();
}

} // namespace

LogicalResult ZoneoutOp::verify() {
  if (failed(expectSameElementType(*this, {getNewState(), getPrev(), getOut()})))
    return failure();
  if (getP() < 0 || getP() >= 1)
    return emitOpError("p must be in [0, 1), got ") << getP();
  ArrayRef<Dim> dims = bufferOf(getNewState()).getDims();
  if (failed(expectDims(*this, getPrev(), dims, "prev")) ||
      failed(expectDims(*this, getOut(), dims, "out")))
    return failure();
  return success();
}

LogicalResult RecurrentScanOp::verify() {
  if (failed(expectSameElementType(*this, {getXproj(), getWHh(), getBHh(),
                                           getH0(), getC0(), getY(), getHN(),
                                           getCN()})) ||
      failed(expectRank(*this, getXproj(), 3, "xproj")) ||
      failed(expectRank(*this, getY(), 3, "y")))
    return failure();
  int64_t h = getHiddenSize(), g = getGateCount(getCell());
  int64_t dirs = getNumDirections();
  if (h < 1)
    return emitOpError("hidden_size must be >= 1");
  if (dirs != 1 && dirs != 2)
    return emitOpError("num_directions must be 1 or 2, got ") << dirs;
  if (getReverse() && dirs != 2)
    return emitOpError("reverse requires num_directions = 2");
  if (getStateIndex() < 0)
    return emitOpError("state_index must be >= 0");
  if (getZoneout() < 0 || getZoneout() >= 1)
    return emitOpError("zoneout must be in [0, 1)");
  bool lstm = getCell() == Cell::lstm;
  if (!lstm && (getC0() || getCN()))
    return emitOpError("c0/c_n are only for lstm cells");
  BufferType x = bufferOf(getXproj());
  Dim b = x.getDim(0), t = x.getDim(1);
  Dim gh = Dim::getStatic(g * h), hd = Dim::getStatic(h);
  if (failed(expectDims(*this, getXproj(), {b, t, gh}, "xproj")) ||
      failed(expectDims(*this, getWHh(), {gh, hd}, "w_hh")) ||
      failed(expectDims(*this, getY(), {b, t, Dim::getStatic(dirs * h)}, "y")))
    return failure();
  if (getBHh() && failed(expectDims(*this, getBHh(), {gh}, "b_hh")))
    return failure();
  for (auto [v, what] : {std::pair<Value, StringRef>{getH0(), "h0"},
                         {getC0(), "c0"},
                         {getHN(), "h_n"},
                         {getCN(), "c_n"}}) {
    if (!v)
      continue;
    if (failed(expectRank(*this, v, 3, what)))
      return failure();
    Dim states = bufferOf(v).getDim(0);
    if (failed(expectDims(*this, v, {states, b, hd}, what)))
      return failure();
    if (states.isStatic() && states.getSize() <= getStateIndex())
      return emitOpError(what) << " has " << states.getSize()
                               << " states, state_index is "
                               << getStateIndex();
  }
  if (getLengths() && failed(expectDims(*this, getLengths(), {b}, "lengths")))
    return failure();
  return success();
}

LogicalResult RecurrentCellOp::verify() {
  if (failed(expectSameElementType(*this, {getXproj(), getH(), getC(), getWHh(),
                                           getBHh(), getHOut(), getCOut()})) ||
      failed(expectRank(*this, getH(), 2, "h")))
    return failure();
  bool lstm = getCell() == Cell::lstm;
  if (lstm != (bool)getC() || lstm != (bool)getCOut())
    return emitOpError("c and c_out are required for lstm cells and only for them");
  BufferType h = bufferOf(getH());
  Dim b = h.getDim(0), hd = h.getDim(1);
  Dim gh = hd.scaled(getGateCount(getCell()));
  if (failed(expectDims(*this, getXproj(), {b, gh}, "xproj")) ||
      failed(expectDims(*this, getWHh(), {gh, hd}, "w_hh")) ||
      failed(expectDims(*this, getHOut(), {b, hd}, "h_out")))
    return failure();
  if (getBHh() && failed(expectDims(*this, getBHh(), {gh}, "b_hh")))
    return failure();
  if (getC() && (failed(expectDims(*this, getC(), {b, hd}, "c")) ||
                 failed(expectDims(*this, getCOut(), {b, hd}, "c_out"))))
    return failure();
  return success();
}

LogicalResult RecurrentForwardOp::verify() {
  return verifyCheckpointEvery(*this);
}

LogicalResult RecurrentGradOp::verify() {
  if (failed(verifyCheckpointEvery(*this)))
    return failure();
  if (getCheckpointEvery() && !getReserve())
    return emitOpError("'checkpoint_every' needs the 'reserve' of a "
                       "checkpointed 'nnk.recurrent_forward'");
  if (getCheckpointSnapshots() && !getReserve())
    return emitOpError("'checkpoint_snapshots' needs the 'reserve' of a "
                       "checkpointed 'nnk.recurrent_forward'");
  return success();
}
