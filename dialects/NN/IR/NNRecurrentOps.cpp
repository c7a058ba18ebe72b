//===- NNRecurrentOps.cpp - nn recurrent layers and cells -------*- C++ -*-===//
//
// Shape rules of nn.rnn, nn.lstm, nn.gru and their cells, following
// PyTorch's conventions and `_flat_weights` layout (see NNOps.td).
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/IR/BPTTCheckpoint.h"
#include "dialects/NN/IR/NNOps.h"

#include "dialects/NN/IR/NNOpsCommon.h"
#include "nncc/Kernels/RecurrentMath.h"
#include "llvm/ADT/Twine.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace nncc::nn;
using nncc::nn::detail::InferDiagnostics;
using namespace nncc::nn::detail;

namespace {
using NNTensor = nncc::nn::TensorType;
} // namespace

namespace {
/// Configuration shared by the multi-layer recurrent ops.
struct RecurrentConfig {
  int64_t gates;
  int64_t hiddenSize;
  int64_t numLayers;
  bool bidirectional;
  bool hasBias;
  bool hasCellState;
};
} // namespace

/// Checks a weight (`rows` x `cols`, or a bias of `rows` when `cols` is
/// null) against the element type of the input.
static LogicalResult checkWeight(const InferDiagnostics &diag, Value value,
                                 Type elementType, ArrayRef<Dim> shape,
                                 const Twine &name) {
  std::string what = name.str();
  FailureOr<nncc::nn::TensorType> type = diag.tensor(value, what);
  if (failed(type) ||
      failed(diag.expectElementType(*type, elementType, what)) ||
      failed(diag.expectShape(*type, shape, what)))
    return failure();
  return success();
}

/// Shared inference of nn.rnn, nn.lstm and nn.gru: checks every operand and
/// appends y, h_n (and c_n).
static LogicalResult inferRecurrent(const InferDiagnostics &diag,
                                    const RecurrentConfig &config, Value xValue,
                                    Value h0, Value c0, Value lengths,
                                    ValueRange weights,
                                    SmallVectorImpl<Type> &inferred) {
  if (config.hiddenSize < 1)
    return diag.error("hidden_size must be >= 1, got ", config.hiddenSize);
  if (config.numLayers < 1)
    return diag.error("num_layers must be >= 1, got ", config.numLayers);
  FailureOr<nncc::nn::TensorType> x =
      diag.tensorOfRank(xValue, "x [B, T, I]", 3);
  if (failed(x))
    return failure();
  Type elementType = x->getElementType();
  Dim batch = x->getDim(0), time = x->getDim(1);
  int64_t directions = config.bidirectional ? 2 : 1;
  Dim hidden = Dim::getStatic(config.hiddenSize);
  Dim gateRows = Dim::getStatic(config.gates * config.hiddenSize);
  Dim stateRows = Dim::getStatic(config.numLayers * directions);

  // Weights, in PyTorch's _flat_weights order.
  int64_t perDirection = nncc::kernels::rnn_weights_per_cell(config.hasBias);
  int64_t expected = config.numLayers * directions * perDirection;
  if (static_cast<int64_t>(weights.size()) != expected)
    return diag.error("expected ", expected,
                      " weights (num_layers * directions * ", perDirection,
                      "), got ", weights.size());
  auto weight = weights.begin();
  for (int64_t layer = 0; layer < config.numLayers; ++layer) {
    Dim input = layer == 0 ? x->getDim(2)
                           : Dim::getStatic(directions * config.hiddenSize);
    for (int64_t direction = 0; direction < directions; ++direction) {
      std::string suffix =
          ("_l" + Twine(layer) + (direction ? "_reverse" : "")).str();
      if (failed(checkWeight(diag, *weight++, elementType, {gateRows, input},
                             "weight_ih" + suffix)) ||
          failed(checkWeight(diag, *weight++, elementType, {gateRows, hidden},
                             "weight_hh" + suffix)))
        return failure();
      if (config.hasBias &&
          (failed(checkWeight(diag, *weight++, elementType, {gateRows},
                              "bias_ih" + suffix)) ||
           failed(checkWeight(diag, *weight++, elementType, {gateRows},
                              "bias_hh" + suffix))))
        return failure();
    }
  }

  SmallVector<Dim> stateShape = {stateRows, batch, hidden};
  if (h0 && failed(checkWeight(diag, h0, elementType, stateShape,
                               "h0 [L*D, B, H]")))
    return failure();
  if (c0 && failed(checkWeight(diag, c0, elementType, stateShape,
                               "c0 [L*D, B, H]")))
    return failure();
  if (lengths) {
    FailureOr<nncc::nn::TensorType> type = diag.tensor(lengths, "lengths");
    if (failed(type) || failed(diag.expectIndex(*type, "lengths")) ||
        failed(diag.expectShape(*type, {batch}, "lengths [B]")))
      return failure();
  }

  auto state = x->withDims(stateShape);
  inferred.push_back(x->withDims(
      {batch, time, Dim::getStatic(directions * config.hiddenSize)}));
  inferred.push_back(state);
  if (config.hasCellState)
    inferred.push_back(state);
  return success();
}

LogicalResult RNNOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  RecurrentConfig config{/*gates=*/1,
                         adaptor.getHiddenSize(),
                         adaptor.getNumLayers(),
                         adaptor.getBidirectional(),
                         adaptor.getHasBias(),
                         /*hasCellState=*/false};
  return inferRecurrent(InferDiagnostics(loc, getOperationName()), config,
                        adaptor.getX(), adaptor.getH0(), /*c0=*/nullptr,
                        adaptor.getLengths(), adaptor.getWeights(), inferred);
}

LogicalResult LSTMOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  RecurrentConfig config{/*gates=*/4,
                         adaptor.getHiddenSize(),
                         adaptor.getNumLayers(),
                         adaptor.getBidirectional(),
                         adaptor.getHasBias(),
                         /*hasCellState=*/true};
  return inferRecurrent(InferDiagnostics(loc, getOperationName()), config,
                        adaptor.getX(), adaptor.getH0(), adaptor.getC0(),
                        adaptor.getLengths(), adaptor.getWeights(), inferred);
}

LogicalResult LSTMOp::verify() {
  double zoneout = getZoneout();
  if (!(zoneout >= 0.0 && zoneout < 1.0))
    return emitOpError("zoneout must be in [0, 1), got ") << zoneout;
  if (failed(nncc::nn::detail::verifyCheckpointEvery(*this)))
    return failure();
  return nncc::nn::detail::verifyReserveUsers<LSTMGradOp>(*this, getReserve());
}

LogicalResult RNNOp::verify() {
  if (failed(nncc::nn::detail::verifyCheckpointEvery(*this)))
    return failure();
  return nncc::nn::detail::verifyReserveUsers<RNNGradOp>(*this, getReserve());
}

LogicalResult GRUOp::verify() {
  if (failed(nncc::nn::detail::verifyCheckpointEvery(*this)))
    return failure();
  return nncc::nn::detail::verifyReserveUsers<GRUGradOp>(*this, getReserve());
}

//===----------------------------------------------------------------------===//
// BPTT checkpointing (BPTTCheckpoint.h)
//===----------------------------------------------------------------------===//

namespace {
/// Applies `fn` to `op` as the recurrent forward or gradient op it is.
template <typename Fn> bool withRecurrentOp(Operation *op, Fn &&fn) {
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case<RNNOp, LSTMOp, GRUOp, RNNGradOp, LSTMGradOp, GRUGradOp>(
          [&](auto typed) {
            fn(typed);
            return true;
          })
      .Default([](Operation *) { return false; });
}

/// The reserve result of a recurrent forward op, or null.
Value recurrentReserve(Operation *forward) {
  Value reserve;
  llvm::TypeSwitch<Operation *>(forward)
      .Case<RNNOp, LSTMOp, GRUOp>([&](auto op) { reserve = op.getReserve(); });
  return reserve;
}
} // namespace

Operation *nncc::nn::getBPTTReserveGrad(Operation *forward) {
  Value reserve = recurrentReserve(forward);
  if (!reserve || !reserve.hasOneUse())
    return nullptr;
  Operation *user = *reserve.getUsers().begin();
  return isa<RNNGradOp, LSTMGradOp, GRUGradOp>(user) ? user : nullptr;
}

std::optional<int64_t> nncc::nn::getBPTTCheckpoint(Operation *op) {
  std::optional<int64_t> every;
  withRecurrentOp(op, [&](auto typed) { every = typed.getCheckpointEvery(); });
  return every;
}

LogicalResult nncc::nn::setBPTTCheckpoint(Operation *forward, Operation *grad,
                                          std::optional<int64_t> every) {
  if ((every && *every < 1) || !forward || !grad ||
      getBPTTReserveGrad(forward) != grad)
    return failure();
  Builder b(forward->getContext());
  IntegerAttr attr = every ? b.getI64IntegerAttr(*every) : IntegerAttr();
  auto set = [&](auto typed) {
    typed.setCheckpointEveryAttr(attr);
    typed.setCheckpointSnapshotsAttr(IntegerAttr());
  };
  withRecurrentOp(forward, set);
  withRecurrentOp(grad, set);
  return success();
}

std::optional<int64_t> nncc::nn::getBPTTSnapshots(Operation *op) {
  std::optional<int64_t> snapshots;
  withRecurrentOp(op,
                  [&](auto typed) { snapshots = typed.getCheckpointSnapshots(); });
  return snapshots;
}

LogicalResult nncc::nn::setBPTTSnapshots(Operation *forward, Operation *grad,
                                         std::optional<int64_t> snapshots) {
  if ((snapshots && *snapshots < 1) || !forward || !grad ||
      getBPTTReserveGrad(forward) != grad)
    return failure();
  Builder b(forward->getContext());
  IntegerAttr attr = snapshots ? b.getI64IntegerAttr(*snapshots) : IntegerAttr();
  auto set = [&](auto typed) {
    typed.setCheckpointSnapshotsAttr(attr);
    typed.setCheckpointEveryAttr(IntegerAttr());
  };
  withRecurrentOp(forward, set);
  withRecurrentOp(grad, set);
  return success();
}

LogicalResult GRUOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  RecurrentConfig config{/*gates=*/3,
                         adaptor.getHiddenSize(),
                         adaptor.getNumLayers(),
                         adaptor.getBidirectional(),
                         adaptor.getHasBias(),
                         /*hasCellState=*/false};
  return inferRecurrent(InferDiagnostics(loc, getOperationName()), config,
                        adaptor.getX(), adaptor.getH0(), /*c0=*/nullptr,
                        adaptor.getLengths(), adaptor.getWeights(), inferred);
}

/// Shared inference of the cells: x [B, I], h [B, H] (and c [B, H]),
/// w_ih [G*H, I], w_hh [G*H, H], both or neither bias [G*H]. Appends the
/// new h (and c), [B, H].
static LogicalResult inferCell(const InferDiagnostics &diag, int64_t gates,
                               Value xValue, Value hValue, Value cValue,
                               Value wIh, Value wHh, Value bIh, Value bHh,
                               SmallVectorImpl<Type> &inferred) {
  FailureOr<nncc::nn::TensorType> x = diag.tensorOfRank(xValue, "x [B, I]", 2);
  FailureOr<nncc::nn::TensorType> h = diag.tensorOfRank(hValue, "h [B, H]", 2);
  if (failed(x) || failed(h) ||
      failed(diag.expectElementType(*h, x->getElementType(), "h")))
    return failure();
  Type elementType = x->getElementType();
  if (!x->getDim(0).isCompatibleWith(h->getDim(0)))
    return diag.error("batch dims of x ", *x, " and h ", *h, " differ");
  Dim batch = x->getDim(0).isDynamic() ? h->getDim(0) : x->getDim(0);
  Dim hidden = h->getDim(1);
  Dim gateRows = hidden.scaled(gates);
  SmallVector<Dim> stateShape = {batch, hidden};
  if (cValue && failed(checkWeight(diag, cValue, elementType, stateShape,
                                   "c [B, H]")))
    return failure();
  if (failed(checkWeight(diag, wIh, elementType, {gateRows, x->getDim(1)},
                         "w_ih [G*H, I]")) ||
      failed(checkWeight(diag, wHh, elementType, {gateRows, hidden},
                         "w_hh [G*H, H]")))
    return failure();
  if (static_cast<bool>(bIh) != static_cast<bool>(bHh))
    return diag.error("expected both biases b_ih and b_hh or neither");
  if (bIh && (failed(checkWeight(diag, bIh, elementType, {gateRows},
                                 "b_ih [G*H]")) ||
              failed(checkWeight(diag, bHh, elementType, {gateRows},
                                 "b_hh [G*H]"))))
    return failure();
  auto state = x->withDims(stateShape);
  inferred.push_back(state);
  if (cValue)
    inferred.push_back(state);
  return success();
}

LogicalResult RNNCellOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferCell(InferDiagnostics(loc, getOperationName()), /*gates=*/1,
                   adaptor.getX(), adaptor.getH(), /*c=*/nullptr,
                   adaptor.getWIh(), adaptor.getWHh(), adaptor.getBIh(),
                   adaptor.getBHh(), inferred);
}

LogicalResult LSTMCellOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  if (!adaptor.getC())
    return diag.error("missing c");
  return inferCell(diag, /*gates=*/4, adaptor.getX(), adaptor.getH(),
                   adaptor.getC(), adaptor.getWIh(), adaptor.getWHh(),
                   adaptor.getBIh(), adaptor.getBHh(), inferred);
}

LogicalResult GRUCellOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferCell(InferDiagnostics(loc, getOperationName()), /*gates=*/3,
                   adaptor.getX(), adaptor.getH(), /*c=*/nullptr,
                   adaptor.getWIh(), adaptor.getWHh(), adaptor.getBIh(),
                   adaptor.getBHh(), inferred);
}

LogicalResult ZoneoutOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> next =
      diag.tensor(adaptor.getNewState(), "new_state");
  FailureOr<nncc::nn::TensorType> prev =
      diag.tensor(adaptor.getPrevState(), "prev_state");
  if (failed(next) || failed(prev))
    return failure();
  if (!next->isCompatibleWith(*prev))
    return diag.error("states have incompatible types ", *next, " and ",
                      *prev);
  inferred.push_back(
      next->withDims(detail::refineShape(next->getDims(), prev->getDims())));
  return success();
}

LogicalResult ZoneoutOp::verify() {
  return verifyProbability(*this, getP(), "p");
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

/// dx (type of x), the state adjoints [L*D, B, H] (`numStates` of them),
/// then the type of each weight.
static LogicalResult inferRecurrentGrad(const InferDiagnostics &diag, Value x,
                                        int64_t hidden, int64_t layers,
                                        bool bidirectional, unsigned numStates,
                                        ValueRange weights, Value dy,
                                        SmallVectorImpl<Type> &inferred) {
  FailureOr<NNTensor> xType = diag.tensorOfRank(x, "x [B, T, I]", 3);
  if (failed(xType))
    return failure();
  if (hidden < 1 || layers < 1)
    return diag.error("hidden_size and num_layers must be >= 1");
  int64_t directions = bidirectional ? 2 : 1;
  if (failed(expectAdjoint(
          diag, dy,
          xType->withDims({xType->getDim(0), xType->getDim(1),
                           Dim::getStatic(directions * hidden)}),
          "dy [B, T, D*H]")))
    return failure();
  inferred.push_back(*xType);
  auto state = xType->withDims({Dim::getStatic(layers * directions),
                                xType->getDim(0), Dim::getStatic(hidden)});
  for (unsigned i = 0; i < numStates; ++i)
    inferred.push_back(state);
  return appendTypes(diag, weights, "weight", inferred);
}

/// The number of weights the forward op takes.
template <typename OpTy>
static LogicalResult verifyRecurrentWeights(OpTy op) {
  int64_t perCell = nncc::kernels::rnn_weights_per_cell(op.getHasBias());
  int64_t expected =
      op.getNumLayers() * (op.getBidirectional() ? 2 : 1) * perCell;
  if (static_cast<int64_t>(op.getWeights().size()) != expected)
    return op.emitOpError("expected ")
           << expected << " weights, got " << op.getWeights().size();
  return success();
}

/// A recurrent gradient's reserve comes from a stack of the same shape.
/// Its checkpoint_every / checkpoint_snapshots are the forward's (what the
/// reserve holds).
template <typename FwdOp, typename GradOp, typename Pred>
static LogicalResult verifyRecurrentReserve(GradOp op, Pred sameCell) {
  if (failed(nncc::nn::detail::verifyCheckpointEvery(op)))
    return failure();
  if (auto fwd = op.getReserve() ? op.getReserve().template getDefiningOp<FwdOp>()
                                 : FwdOp()) {
    auto show = [](std::optional<int64_t> v) {
      return v ? std::to_string(*v) : std::string("absent");
    };
    auto same = [&](const char *name, std::optional<int64_t> mine,
                    std::optional<int64_t> theirs) -> LogicalResult {
      if (mine == theirs)
        return success();
      return op.emitOpError("'")
             << name << "' (" << show(mine) << ") differs from its reserve's '"
             << FwdOp::getOperationName() << "' (" << show(theirs) << ")";
    };
    if (failed(same("checkpoint_every", op.getCheckpointEvery(),
                    fwd.getCheckpointEvery())) ||
        failed(same("checkpoint_snapshots", op.getCheckpointSnapshots(),
                    fwd.getCheckpointSnapshots())))
      return failure();
  }
  return nncc::nn::detail::verifyReserveProducer<FwdOp>(op, [&](FwdOp fwd) {
    return fwd.getHiddenSize() == op.getHiddenSize() &&
           fwd.getNumLayers() == op.getNumLayers() &&
           fwd.getBidirectional() == op.getBidirectional() &&
           fwd.getHasBias() == op.getHasBias() && sameCell(fwd);
  });
}

/// dx, dh (, dc), then the weights' types.
static LogicalResult inferCellGrad(const InferDiagnostics &diag, Value x,
                                   Value h, Value c, ValueRange weights,
                                   Value dhNext,
                                   SmallVectorImpl<Type> &inferred) {
  FailureOr<NNTensor> xType = diag.tensorOfRank(x, "x [B, I]", 2);
  FailureOr<NNTensor> hType = diag.tensorOfRank(h, "h [B, H]", 2);
  if (failed(xType) || failed(hType) ||
      failed(expectAdjoint(diag, dhNext, *hType, "dh_next")))
    return failure();
  inferred.push_back(*xType);
  inferred.push_back(*hType);
  if (c && failed(appendTypes(diag, c, "c", inferred)))
    return failure();
  SmallVector<Value> present;
  for (Value w : weights)
    if (w)
      present.push_back(w);
  return appendTypes(diag, present, "weight", inferred);
}

LogicalResult RNNGradOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferRecurrentGrad(InferDiagnostics(loc, getOperationName()),
                            adaptor.getX(), adaptor.getHiddenSize(),
                            adaptor.getNumLayers(), adaptor.getBidirectional(),
                            1, adaptor.getWeights(), adaptor.getDy(),
                            inferred);
}

LogicalResult RNNGradOp::verify() {
  if (failed(verifyRecurrentReserve<RNNOp>(*this, [&](RNNOp fwd) {
        return fwd.getNonlinearity() == getNonlinearity();
      })))
    return failure();
  return verifyRecurrentWeights(*this);
}

LogicalResult LSTMGradOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  return inferRecurrentGrad(InferDiagnostics(loc, getOperationName()),
                            adaptor.getX(), adaptor.getHiddenSize(),
                            adaptor.getNumLayers(), adaptor.getBidirectional(),
                            2, adaptor.getWeights(), adaptor.getDy(),
                            inferred);
}

LogicalResult LSTMGradOp::verify() {
  double zoneout = getZoneout();
  if (!(zoneout >= 0.0 && zoneout < 1.0))
    return emitOpError("zoneout must be in [0, 1), got ") << zoneout;
  if (failed(verifyRecurrentReserve<LSTMOp>(*this, [&](LSTMOp fwd) {
        return fwd.getZoneout() == getZoneout() && fwd.getSeed() == getSeed();
      })))
    return failure();
  return verifyRecurrentWeights(*this);
}

LogicalResult GRUGradOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferRecurrentGrad(InferDiagnostics(loc, getOperationName()),
                            adaptor.getX(), adaptor.getHiddenSize(),
                            adaptor.getNumLayers(), adaptor.getBidirectional(),
                            1, adaptor.getWeights(), adaptor.getDy(),
                            inferred);
}

LogicalResult GRUGradOp::verify() {
  if (failed(verifyRecurrentReserve<GRUOp>(
          *this, [&](GRUOp fwd) { return fwd.getVariant() == getVariant(); })))
    return failure();
  return verifyRecurrentWeights(*this);
}

LogicalResult RNNCellGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  return inferCellGrad(InferDiagnostics(loc, getOperationName()),
                       adaptor.getX(), adaptor.getH(), nullptr,
                       {adaptor.getWIh(), adaptor.getWHh(), adaptor.getBIh(),
                        adaptor.getBHh()},
                       adaptor.getDhNext(), inferred);
}

LogicalResult LSTMCellGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  return inferCellGrad(InferDiagnostics(loc, getOperationName()),
                       adaptor.getX(), adaptor.getH(), adaptor.getC(),
                       {adaptor.getWIh(), adaptor.getWHh(), adaptor.getBIh(),
                        adaptor.getBHh()},
                       adaptor.getDhNext(), inferred);
}

LogicalResult GRUCellGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  return inferCellGrad(InferDiagnostics(loc, getOperationName()),
                       adaptor.getX(), adaptor.getH(), nullptr,
                       {adaptor.getWIh(), adaptor.getWHh(), adaptor.getBIh(),
                        adaptor.getBHh()},
                       adaptor.getDhNext(), inferred);
}
