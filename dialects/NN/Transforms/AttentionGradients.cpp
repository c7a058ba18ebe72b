//===- AttentionGradients.cpp - rules of the attention ops ------*- C++ -*-===//
//
// One fused backward op reading the forward's reserve (packed projection,
// output, log-sum-exp).
// (GradientOpInterface models; docs/autodiff.md.)
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/Transforms/GradientRule.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::nn;
using namespace nncc::nn::gradients;

namespace {

void attentionSaved(AttentionOp op, SmallVectorImpl<Value> &s) { savedAll(op, s); }
LogicalResult attentionGradient(AttentionOp op, GradientBuilder &gb, ArrayRef<Value> r,
                                SmallVectorImpl<Value> &out) {
  auto grad = AttentionGradOp::create(
      gb.getBuilder(), op.getLoc(), gb.get(op.getX()), gb.get(op.getInProjWeight()),
      getOpt(gb, op.getInProjBias()), gb.get(op.getOutProjWeight()),
      getOpt(gb, op.getOutProjBias()), getOpt(gb, op.getKeyPaddingMask()),
      getOpt(gb, op.getRotations()), getOpt(gb, op.getGlobalMask()), r[0], keepReserve(gb, op),
      op.getNumHeads(), op.getKind(), op.getCausal(), op.getDropout(), op.getSeed());
  out.push_back(grad.getDx());
  // Operand order: x, in_w, in_b?, out_w, out_b?, mask?, rotations?,
  // global_mask?; dparams: in_w, in_b?, out_w, out_b?.
  llvm::append_range(out, grad.getDparams());
  if (op.getKeyPaddingMask())
    out.push_back(Value());
  if (op.getRotations())
    out.push_back(Value()); // the hash assignment is a constant
  if (op.getGlobalMask())
    out.push_back(Value());
  return success();
}

} // namespace

void nncc::nn::gradients::attachAttentionGradientRules(MLIRContext &ctx) {
  attachGradientRule<AttentionOp, attentionSaved, attentionGradient>(ctx);
}
