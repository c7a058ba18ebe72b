//===- NNAttentionOps.cpp - nn.attention ------------------------*- C++ -*-===//

#include "dialects/NN/IR/NNOps.h"

#include "dialects/NN/IR/NNOpsCommon.h"

using namespace mlir;
using namespace nncc::nn;
using nncc::nn::detail::InferDiagnostics;
using namespace nncc::nn::detail;

namespace {
using NNTensor = nncc::nn::TensorType;
} // namespace

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  auto kind = adaptor.getKindAttr();
  if (!kind)
    return diag.error("missing attention kind");
  int64_t numHeads = adaptor.getNumHeads();
  if (numHeads < 1)
    return diag.error("num_heads must be >= 1, got ", numHeads);
  FailureOr<nncc::nn::TensorType> x =
      diag.tensorOfRank(adaptor.getX(), "x [B, T, E]", 3);
  if (failed(x))
    return failure();
  Type elementType = x->getElementType();
  Dim batch = x->getDim(0), time = x->getDim(1), embed = x->getDim(2);

  // Checks a float operand of the given shape and x's element type.
  auto check = [&](Value value, ArrayRef<Dim> shape,
                   StringRef name) -> LogicalResult {
    FailureOr<nncc::nn::TensorType> type = diag.tensor(value, name);
    if (failed(type) ||
        failed(diag.expectElementType(*type, elementType, name)) ||
        failed(diag.expectShape(*type, shape, name)))
      return failure();
    return success();
  };
  // The heads' width A: out_proj_weight's columns (E unless the model
  // says otherwise).
  FailureOr<nncc::nn::TensorType> outWeight =
      diag.tensorOfRank(adaptor.getOutProjWeight(), "out_proj_weight [E, A]", 2);
  if (failed(outWeight) || failed(check(adaptor.getOutProjWeight(),
                                        {embed, outWeight->getDim(1)},
                                        "out_proj_weight [E, A]")))
    return failure();
  Dim width = outWeight->getDim(1);
  if (width.isStatic() && width.getSize() % numHeads != 0)
    return diag.error("num_heads ", numHeads, " does not divide the heads' width ",
                      width.getSize(), width == embed ? " (the embedding size)" : "");
  const int64_t projections = kind.getNumInputProjections();
  Dim projected = width.scaled(projections);
  std::string packs = projections == 1 ? "" : std::to_string(projections);
  if (failed(check(adaptor.getInProjWeight(), {projected, embed},
                   "in_proj_weight [" + packs + "A, E]")))
    return failure();
  if (Value bias = adaptor.getInProjBias();
      bias && failed(check(bias, {projected}, "in_proj_bias [" + packs + "A]")))
    return failure();
  if (Value bias = adaptor.getOutProjBias();
      bias && failed(check(bias, {embed}, "out_proj_bias [E]")))
    return failure();
  if (Value mask = adaptor.getKeyPaddingMask()) {
    FailureOr<nncc::nn::TensorType> type = diag.tensor(mask, "mask");
    if (failed(type) ||
        failed(diag.expectElementType(
            *type, IntegerType::get(elementType.getContext(), 1),
            "key_padding_mask")) ||
        failed(diag.expectShape(*type, {batch, time}, "key_padding_mask [B, T]")))
      return failure();
  }
  if (Value globalMask = adaptor.getGlobalMask()) {
    auto dilated = dyn_cast<DilatedAttentionAttr>(kind);
    if (!dilated)
      return diag.error("global_mask is only allowed with #nn.dilated attention");
    if (!dilated.getGlobal().empty())
      return diag.error("global_mask and a global list exclude each other");
    FailureOr<nncc::nn::TensorType> type = diag.tensor(globalMask, "global_mask");
    if (failed(type) ||
        failed(diag.expectElementType(
            *type, IntegerType::get(elementType.getContext(), 1), "global_mask")) ||
        failed(diag.expectShape(*type, {batch, time}, "global_mask [B, T]")))
      return failure();
  }
  if (Value rotations = adaptor.getRotations()) {
    auto lsh = dyn_cast<LshAttentionAttr>(kind);
    if (!lsh)
      return diag.error("rotations are only allowed with #nn.lsh attention");
    Dim headSize = width.isStatic()
                       ? Dim::getStatic(width.getSize() / numHeads)
                       : Dim::getDynamic();
    FailureOr<nncc::nn::TensorType> type = diag.tensor(rotations, "rotations");
    if (failed(type))
      return failure();
    if (lsh.isHf()
            ? failed(check(rotations,
                           {Dim::getStatic(numHeads), headSize,
                            Dim::getStatic(lsh.getHashes()), Dim::getDynamic()},
                           "rotations [num_heads, A / num_heads, hashes, "
                           "buckets / 2] (convention hf)"))
            : failed(check(rotations,
                           {Dim::getStatic(lsh.getHashes()), headSize,
                            Dim::getDynamic()},
                           "rotations [hashes, A / num_heads, buckets / 2] "
                           "(convention nncc)")))
      return failure();
  }
  inferred.push_back(*x);
  return success();
}

LogicalResult AttentionOp::verify() {
  double dropout = getDropout();
  if (!(dropout >= 0.0 && dropout < 1.0))
    return emitOpError("dropout must be in [0, 1), got ") << dropout;
  return nncc::nn::detail::verifyReserveUsers<AttentionGradOp>(*this,
                                                               getReserve());
}

//===----------------------------------------------------------------------===//
// Backward ops
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
