//===- NNGradOps.cpp - nn ops of the backward pass --------------*- C++ -*-===//
//
// Type inference and verifiers of the backward ops (the "Backward" sections
// of the NN<Family>Ops.td files, built by nncc-autodiff, docs/autodiff.md). Results mirror the forward operands whose
// adjoints they are.
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/IR/NNOps.h"

#include "dialects/NN/IR/NNOpsCommon.h"
#include "nncc/Kernels/RecurrentMath.h"

using namespace mlir;
using namespace nncc::nn;
using nncc::nn::detail::InferDiagnostics;

namespace {
using NNTensor = nncc::nn::TensorType;
}

/// The nn tensor type held by a TypeAttr (`what` names it in the error).
static FailureOr<NNTensor> typeAttr(const InferDiagnostics &diag,
                                    TypeAttr attr, StringRef what) {
  auto type = attr ? dyn_cast<NNTensor>(attr.getValue()) : NNTensor();
  if (!type)
    return diag.error("expected '", what, "' to be an nn tensor type");
  return type;
}

/// Appends the type of each value (all must be nn tensors).
static LogicalResult appendTypes(const InferDiagnostics &diag,
                                 ValueRange values, StringRef what,
                                 SmallVectorImpl<Type> &inferred) {
  for (Value value : values) {
    FailureOr<NNTensor> type = diag.tensor(value, what);
    if (failed(type))
      return failure();
    inferred.push_back(*type);
  }
  return success();
}

/// `adjoint` must be compatible with `expected` when present.
static LogicalResult expectAdjoint(const InferDiagnostics &diag, Value adjoint,
                                   Type expected, StringRef what) {
  if (!adjoint)
    return success();
  if (!areCompatibleTypes(adjoint.getType(), expected))
    return diag.error("expected ", what, " of type ", expected, ", got ",
                      adjoint.getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Residuals and helpers
//===----------------------------------------------------------------------===//

LogicalResult SaveOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  return appendTypes(InferDiagnostics(loc, getOperationName()),
                     adaptor.getValue(), "value", inferred);
}

LogicalResult ZerosOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  FailureOr<NNTensor> type = typeAttr(InferDiagnostics(loc, getOperationName()),
                                      adaptor.getTypeAttr(), "type");
  if (failed(type))
    return failure();
  inferred.push_back(*type);
  return success();
}

LogicalResult ReduceToShapeOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> x = diag.tensor(adaptor.getX(), "x");
  FailureOr<NNTensor> type = typeAttr(diag, adaptor.getTypeAttr(), "type");
  if (failed(x) || failed(type) ||
      failed(diag.expectElementType(*type, x->getElementType(), "type")))
    return failure();
  if (type->getRank() > x->getRank())
    return diag.error("type ", *type, " has more dims than x ", *x);
  std::optional<SmallVector<Dim>> shape =
      broadcastShapes(type->getDims(), x->getDims());
  if (!shape || !areCompatibleShapes(*shape, x->getDims()))
    return diag.error("type ", *type, " does not broadcast to x ", *x);
  inferred.push_back(*type);
  return success();
}

LogicalResult ReduceGradOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> dy = diag.tensor(adaptor.getDy(), "dy");
  FailureOr<NNTensor> type = typeAttr(diag, adaptor.getTypeAttr(), "type");
  if (failed(dy) || failed(type) ||
      failed(diag.expectElementType(*type, dy->getElementType(), "type")))
    return failure();
  int64_t rank = type->getRank();
  ArrayRef<int64_t> axes = adaptor.getAxes();
  int64_t reduced = axes.empty() ? rank : static_cast<int64_t>(axes.size());
  for (int64_t axis : axes)
    if (!normalizeAxis(axis, rank))
      return diag.error("axis ", axis, " out of range for ", *type);
  int64_t expectedRank = adaptor.getKeepdim() ? rank : rank - reduced;
  if (dy->getRank() != expectedRank)
    return diag.error("expected dy of rank ", expectedRank, ", got ", *dy);
  inferred.push_back(*type);
  return success();
}

LogicalResult MaxGradOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> dy = diag.tensor(adaptor.getDy(), "dy");
  FailureOr<NNTensor> x = diag.tensor(adaptor.getX(), "x");
  if (failed(dy) || failed(x) ||
      failed(diag.expectElementType(*dy, x->getElementType(), "dy")))
    return failure();
  FailureOr<SmallVector<Dim>> dims = nncc::nn::detail::inferAxisReduced(
      diag, *x, adaptor.getAxis(), adaptor.getKeepdim());
  if (failed(dims) ||
      failed(diag.expectShape(*dy, *dims, "dy (nn.max's result)")))
    return failure();
  inferred.push_back(*x);
  return success();
}

LogicalResult TopkGradOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> dy = diag.tensor(adaptor.getDy(), "dy");
  FailureOr<NNTensor> indices = diag.tensor(adaptor.getIndices(), "indices");
  if (failed(dy) || failed(indices) ||
      failed(diag.expectElementType(*indices, IntegerType::get(
                                                  dy->getContext(), 32),
                                    "indices")) ||
      failed(diag.expectShape(*indices, dy->getDims(),
                              "indices (nn.topk's, of dy's shape)")))
    return failure();
  int64_t axis = adaptor.getAxis();
  std::optional<int64_t> dim = normalizeAxis(axis, dy->getRank());
  if (!dim)
    return diag.error("axis ", axis, " is out of range for ", *dy);
  if (adaptor.getSize() < 1)
    return diag.error("size ", adaptor.getSize(), " must be positive");
  SmallVector<Dim> dims(dy->getDims());
  dims[*dim] = Dim::getStatic(adaptor.getSize());
  inferred.push_back(dy->withDims(dims));
  return success();
}

LogicalResult SliceGradOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> dy = diag.tensor(adaptor.getDy(), "dy");
  FailureOr<NNTensor> type = typeAttr(diag, adaptor.getTypeAttr(), "type");
  if (failed(dy) || failed(type) ||
      failed(diag.expectElementType(*type, dy->getElementType(), "type")))
    return failure();
  int64_t rank = type->getRank();
  if (static_cast<int64_t>(adaptor.getStarts().size()) != rank ||
      static_cast<int64_t>(adaptor.getStops().size()) != rank ||
      static_cast<int64_t>(adaptor.getSteps().size()) != rank)
    return diag.error("expected one start, stop and step per dim of ", *type);
  for (int64_t step : adaptor.getSteps())
    if (step < 1)
      return diag.error("steps must be >= 1, got ", step);
  int64_t expectedRank =
      rank - static_cast<int64_t>(adaptor.getSqueeze().size());
  if (dy->getRank() != expectedRank)
    return diag.error("expected dy of rank ", expectedRank, ", got ", *dy);
  inferred.push_back(*type);
  return success();
}

LogicalResult ActivationGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> x = diag.tensor(adaptor.getX(), "x");
  if (failed(x) || failed(expectAdjoint(diag, adaptor.getDy(), *x, "dy")))
    return failure();
  inferred.push_back(*x);
  return success();
}

LogicalResult ActivationGradOp::verify() {
  StringRef kind = getKind();
  if (kind != "relu" && kind != "leaky_relu" && kind != "gelu")
    return emitOpError("kind must be \"relu\", \"leaky_relu\" or \"gelu\", "
                       "got \"")
           << kind << "\"";
  return success();
}

LogicalResult LinearWeightGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> dy = diag.tensorOfMinRank(adaptor.getDy(), "dy", 1);
  FailureOr<NNTensor> x = diag.tensorOfMinRank(adaptor.getX(), "x", 1);
  if (failed(dy) || failed(x) ||
      failed(diag.expectElementType(*x, dy->getElementType(), "x")))
    return failure();
  if (dy->getRank() != x->getRank() ||
      !areCompatibleShapes(dy->getDims().drop_back(), x->getDims().drop_back()))
    return diag.error("dy ", *dy, " and x ", *x,
                      " must have the same leading dims");
  inferred.push_back(
      dy->withDims({dy->getDims().back(), x->getDims().back()}));
  return success();
}

LogicalResult EmbeddingGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> indices = diag.tensor(adaptor.getIndices(), "indices");
  FailureOr<NNTensor> dy = diag.tensorOfMinRank(adaptor.getDy(), "dy", 1);
  if (failed(indices) || failed(dy))
    return failure();
  if (dy->getRank() != indices->getRank() + 1 ||
      !areCompatibleShapes(dy->getDims().drop_back(), indices->getDims()))
    return diag.error("expected dy of shape [indices..., E], got ", *dy);
  if (adaptor.getNumEmbeddings() < 1)
    return diag.error("num_embeddings must be >= 1");
  inferred.push_back(dy->withDims(
      {Dim::getStatic(adaptor.getNumEmbeddings()), dy->getDims().back()}));
  return success();
}

LogicalResult EmbeddingGradOp::verify() {
  if (getPaddingIdx() < -1 || getPaddingIdx() >= getNumEmbeddings())
    return emitOpError("padding_idx ") << getPaddingIdx() << " is not a row of the "
                                       << getNumEmbeddings() << "-row table";
  return success();
}

LogicalResult AxialPositionGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> dy = diag.tensorOfRank(adaptor.getDy(), "dy [B, T, E]", 3);
  if (failed(dy))
    return failure();
  ArrayRef<int64_t> shape = adaptor.getShape();
  int64_t d1 = adaptor.getD1();
  Dim embed = dy->getDim(2);
  if (shape.size() != 2 || shape[0] < 1 || shape[1] < 1)
    return diag.error("shape must be two positive sizes [n1, n2]");
  if (!embed.isStatic() || d1 < 1 || d1 >= embed.getSize())
    return diag.error("d1 = ", d1, " must lie in [1, E) for a static E, got E = ",
                      embed.str());
  inferred.push_back(dy->withDims({Dim::getStatic(shape[0]), Dim::getStatic(1),
                                   Dim::getStatic(d1)}));
  inferred.push_back(dy->withDims({Dim::getStatic(1), Dim::getStatic(shape[1]),
                                   Dim::getStatic(embed.getSize() - d1)}));
  return success();
}

LogicalResult LayerNormGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> x = diag.tensorOfMinRank(adaptor.getX(), "x", 1);
  if (failed(x) || failed(expectAdjoint(diag, adaptor.getDy(), *x, "dy")))
    return failure();
  inferred.push_back(*x);
  if (Value weight = adaptor.getWeight()) {
    FailureOr<NNTensor> w = diag.tensorOfRank(weight, "weight", 1);
    if (failed(w) ||
        failed(diag.expectShape(*w, {x->getDims().back()}, "weight [N]")))
      return failure();
    inferred.push_back(*w);
  }
  return success();
}

/// Loss adjoints: the type of the first operand; `dloss` is a scalar.
static LogicalResult inferLossGrad(const InferDiagnostics &diag, Value input,
                                   Value dloss,
                                   SmallVectorImpl<Type> &inferred) {
  FailureOr<NNTensor> type = diag.tensor(input, "input");
  FailureOr<NNTensor> dl = diag.tensorOfRank(dloss, "dloss", 0);
  if (failed(type) || failed(dl))
    return failure();
  inferred.push_back(*type);
  return success();
}

LogicalResult MSEGradOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferLossGrad(InferDiagnostics(loc, getOperationName()),
                       adaptor.getPred(), adaptor.getDloss(), inferred);
}

LogicalResult CrossEntropyGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  return inferLossGrad(InferDiagnostics(loc, getOperationName()),
                       adaptor.getLogits(), adaptor.getDloss(), inferred);
}

LogicalResult BCEWithLogitsGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  return inferLossGrad(InferDiagnostics(loc, getOperationName()),
                       adaptor.getLogits(), adaptor.getDloss(), inferred);
}

//===----------------------------------------------------------------------===//
// Recurrent backward
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

//===----------------------------------------------------------------------===//
// Attention backward
//===----------------------------------------------------------------------===//

LogicalResult AttentionGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> x = diag.tensorOfRank(adaptor.getX(), "x [B, T, E]", 3);
  if (failed(x) || failed(expectAdjoint(diag, adaptor.getDy(), *x, "dy")))
    return failure();
  if (adaptor.getNumHeads() < 1)
    return diag.error("num_heads must be >= 1");
  inferred.push_back(*x);
  SmallVector<Value> params = {adaptor.getInProjWeight()};
  if (adaptor.getInProjBias())
    params.push_back(adaptor.getInProjBias());
  params.push_back(adaptor.getOutProjWeight());
  if (adaptor.getOutProjBias())
    params.push_back(adaptor.getOutProjBias());
  return appendTypes(diag, params, "projection", inferred);
}

LogicalResult AttentionGradOp::verify() {
  return nncc::nn::detail::verifyReserveProducer<AttentionOp>(
      *this, [&](AttentionOp fwd) {
        return fwd.getKind() == getKind() &&
               fwd.getNumHeads() == getNumHeads() &&
               fwd.getCausal() == getCausal() &&
               fwd.getDropout() == getDropout() && fwd.getSeed() == getSeed();
      });
}

//===----------------------------------------------------------------------===//
// ODE backward
//===----------------------------------------------------------------------===//

/// The types yielded by the single block of `region` from index `from` on;
/// nothing when the region is not built yet.
static void appendYieldTypes(Region &region, unsigned from,
                             SmallVectorImpl<Type> &inferred) {
  if (!llvm::hasSingleElement(region) || region.front().empty())
    return;
  auto yield = dyn_cast<YieldOp>(region.front().back());
  if (!yield)
    return;
  for (Value value : yield.getValues().drop_front(from))
    inferred.push_back(value.getType());
}

LogicalResult ODESolveGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> h = diag.tensor(adaptor.getH(), "h");
  if (failed(h) || failed(expectAdjoint(diag, adaptor.getA1(), *h, "a1")))
    return failure();
  inferred.push_back(*h);
  appendYieldTypes(adaptor.getVjp(), 1, inferred);
  return success();
}

/// One block with `numArgs` arguments ending in nn.yield of `numYields`
/// values.
static LogicalResult verifyBlockShape(Operation *op, Region &region,
                                      StringRef name, unsigned numArgs,
                                      size_t numYields) {
  if (!llvm::hasSingleElement(region))
    return op->emitOpError("region '") << name << "' must have one block";
  Block &block = region.front();
  if (block.getNumArguments() != numArgs)
    return op->emitOpError("region '")
           << name << "' must have " << numArgs << " arguments";
  auto yield = block.empty() ? YieldOp() : dyn_cast<YieldOp>(block.back());
  if (!yield)
    return op->emitOpError("region '") << name << "' must end with nn.yield";
  if (yield.getValues().size() != numYields)
    return op->emitOpError("region '")
           << name << "' must yield " << numYields << " values, got "
           << yield.getValues().size();
  return success();
}

LogicalResult ODESolveGradOp::verifyRegions() {
  if (failed(verifyBlockShape(*this, getDynamics(), "dynamics", 2, 1)) ||
      failed(verifyBlockShape(*this, getVjp(), "vjp", 3,
                              1 + getParams().size())))
    return failure();
  if (!llvm::all_of(getParams(), llvm::IsaPred<FlatSymbolRefAttr>))
    return emitOpError("params must be symbol references");
  return success();
}

LogicalResult ODERNNGradOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> x = diag.tensorOfRank(adaptor.getX(), "x [B, T, I]", 3);
  FailureOr<NNTensor> hs = diag.tensorOfRank(adaptor.getHs(), "hs", 3);
  if (failed(x) || failed(hs) ||
      failed(expectAdjoint(diag, adaptor.getDhs(), *hs, "dhs")))
    return failure();
  inferred.push_back(*x);
  inferred.push_back(x->withDims(
      {x->getDim(0), Dim::getStatic(adaptor.getHiddenSize())}));
  appendYieldTypes(adaptor.getDynamicsVjp(), 1, inferred);
  appendYieldTypes(adaptor.getCellVjp(), 2, inferred);
  return success();
}

LogicalResult ODERNNGradOp::verifyRegions() {
  if (failed(verifyBlockShape(*this, getDynamics(), "dynamics", 2, 1)) ||
      failed(verifyBlockShape(*this, getDynamicsVjp(), "dynamics_vjp", 3,
                              1 + getDynamicsParams().size())) ||
      failed(verifyBlockShape(*this, getCellVjp(), "cell_vjp", 3,
                              2 + getCellParams().size())))
    return failure();
  return success();
}
