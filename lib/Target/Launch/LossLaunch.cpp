//===- LossLaunch.cpp - losses and fused output heads -----------*- C++ -*-===//
//
// nnk.loss / loss_grad (mse, cross-entropy over class indices, BCE with
// logits), the fused linear + cross-entropy head and the fused linear +
// sample head (its Gumbel noise from the op's random stream).
//
//===----------------------------------------------------------------------===//
#include "../Common/LaunchEmitter.h"

using namespace mlir;

namespace nncc::target {
namespace {

/// The loss kernels' shape: (count, classes) for cross-entropy over class
/// indices, (rows, columns) for BCE, the element count for MSE.
struct LossShape {
  std::string count, classes;
};

FailureOr<LossShape> lossShape(LaunchEmitter &e, nnk::LossKind kind, Value input, Value target) {
  int64_t rank = e.bufferType(input).getRank();
  switch (kind) {
  case nnk::LossKind::mse: {
    auto n = e.numel(input);
    if (failed(n))
      return failure();
    return LossShape{*n, ""};
  }
  case nnk::LossKind::cross_entropy: {
    auto n = e.numel(target);
    auto C = e.dim(input, -1);
    if (failed(n) || failed(C))
      return failure();
    return LossShape{*n, *C};
  }
  case nnk::LossKind::bce_with_logits: {
    auto rows = e.numel(input, 0, rank ? rank - 1 : 0);
    auto C = rank ? e.dim(input, -1) : FailureOr<std::string>(std::string("1"));
    if (failed(rows) || failed(C))
      return failure();
    return LossShape{*rows, *C};
  }
  }
  return failure();
}

/// The class indices of `target` as int64_t, the CPU loss kernels' index
/// type: i32 targets are widened into a workspace slot (a uniquely named
/// pointer, so several losses can share a scope).
FailureOr<std::string> int64Targets(LaunchEmitter &e, Value target) {
  if (!e.bufferType(target).getElementType().isInteger(32))
    return e.name(target);
  FailureOr<Size> count = e.numelSize(target);
  if (failed(count))
    return failure();
  std::string wide = e.local("wide");
  e.out() << "int64_t *" << wide << " = (int64_t *)"
          << e.workspace(*count * Size::constant(8)) << ";\n";
  e.out() << "for (int64_t i = 0; i < " << count->str() << "; ++i) " << wide << "[i] = "
          << e.name(target) << "[i];\n";
  return wide;
}

LogicalResult emitLoss(LaunchEmitter &e, nnk::LossOp o) {
  FailureOr<LossShape> s = lossShape(e, o.getKind(), o.getInput(), o.getTarget());
  if (failed(s))
    return failure();
  std::string input = e.name(o.getInput()), target = e.name(o.getTarget()),
              out = e.name(o.getOut()), ignore = std::to_string(o.getIgnoreIndex());
  if (!e.isCuda()) {
    switch (o.getKind()) {
    case nnk::LossKind::mse:
      e.call({"NNCC_KFN(nncc_mse_loss)", {s->count, input, target, out}});
      break;
    case nnk::LossKind::cross_entropy:
    {
      FailureOr<std::string> wide = int64Targets(e, o.getTarget());
      if (failed(wide))
        return failure();
      e.call({"NNCC_KFN(nncc_cross_entropy)", {s->count, s->classes, input, *wide, ignore, out}});
    }
      break;
    case nnk::LossKind::bce_with_logits:
      e.call({"NNCC_KFN(nncc_bce_with_logits)",
              {s->count, s->classes, input, target, e.nameOrNull(o.getPosWeight()), out}});
      break;
    }
    return success();
  }
  std::string partials = e.workspace(Size::call(size_fn::cudaLossScratch, {}));
  switch (o.getKind()) {
  case nnk::LossKind::mse:
    e.call({"launch_mse_loss<real_t>", {s->count, input, target, out, partials, "stream"}});
    break;
  case nnk::LossKind::cross_entropy: {
    auto indexType = e.cType(e.bufferType(o.getTarget()).getElementType());
    if (failed(indexType))
      return failure();
    e.call({"launch_cross_entropy<real_t, " + *indexType + ">",
            {s->count, s->classes, input, target, ignore + "LL", out, partials, "st->flag",
             std::to_string(e.indexCheckCode()), "stream"}});
    break;
  }
  case nnk::LossKind::bce_with_logits:
    e.call({"launch_bce_with_logits<real_t>",
            {s->count, s->classes, input, target, e.nameOr(o.getPosWeight(), "const real_t *"),
             out, partials, "stream"}});
    break;
  }
  return success();
}

LogicalResult emitLossGrad(LaunchEmitter &e, nnk::LossGradOp o) {
  FailureOr<LossShape> s = lossShape(e, o.getKind(), o.getInput(), o.getTarget());
  if (failed(s))
    return failure();
  std::string input = e.name(o.getInput()), target = e.name(o.getTarget()),
              dloss = e.name(o.getDloss()), out = e.name(o.getOut());
  if (e.isCuda()) {
    // The targets are read as they are (i32 or i64), as by the forward.
    switch (o.getKind()) {
    case nnk::LossKind::mse:
      e.call({"launch_mse_loss_backward<real_t>", {s->count, input, target, dloss, out, "stream"}});
      break;
    case nnk::LossKind::cross_entropy: {
      auto index = e.cType(e.bufferType(o.getTarget()).getElementType());
      if (failed(index))
        return failure();
      std::string ws = e.workspace(Size::call(size_fn::cudaCrossEntropyBackwardScratch, {}));
      e.call({"launch_cross_entropy_backward<real_t, " + *index + ">",
              {s->count, s->classes, input, target, std::to_string(o.getIgnoreIndex()), dloss,
               out, ws, "stream"}});
      break;
    }
    case nnk::LossKind::bce_with_logits:
      e.call({"launch_bce_with_logits_backward<real_t>",
              {s->count, s->classes, input, target, e.nameOr(o.getPosWeight(), "const real_t *"),
               dloss, out, "stream"}});
      break;
    }
    return success();
  }
  switch (o.getKind()) {
  case nnk::LossKind::mse:
    e.call({"NNCC_KFN(nncc_mse_loss_backward)", {s->count, input, target, dloss, out, "NULL"}});
    break;
  case nnk::LossKind::cross_entropy:
  {
    FailureOr<std::string> wide = int64Targets(e, o.getTarget());
    if (failed(wide))
      return failure();
    e.call({"NNCC_KFN(nncc_cross_entropy_backward)",
            {s->count, s->classes, input, *wide, std::to_string(o.getIgnoreIndex()), dloss,
             out}});
  }
    break;
  case nnk::LossKind::bce_with_logits:
    e.call({"NNCC_KFN(nncc_bce_with_logits_backward)",
            {s->count, s->classes, input, target, e.nameOrNull(o.getPosWeight()), dloss, out}});
    break;
  }
  return success();
}

/// The fused loss head: rows in chunks, the chunk's logits in a workspace
/// of nncc_linear_ce_workspace_size bytes (LossHead.cpp).
LogicalResult emitLinearCrossEntropy(LaunchEmitter &e, nnk::LinearCrossEntropyOp o) {
  auto N = e.numel(o.getTarget());
  auto K = e.dim(o.getX(), -1);
  auto V = e.dim(o.getWeight(), 0);
  auto Ns = e.numelSize(o.getTarget()), Ks = e.dimSize(o.getX(), -1),
       Vs = e.dimSize(o.getWeight(), 0);
  if (failed(N) || failed(K) || failed(V) || failed(Ns) || failed(Ks) || failed(Vs))
    return failure();
  if (e.isCuda()) {
    // LossHead.cuh: the targets as they are, an out-of-range one to the
    // index-check flag.
    auto index = e.cType(e.bufferType(o.getTarget()).getElementType());
    if (failed(index))
      return failure();
    std::string ws = e.workspace(Size::call(size_fn::cudaLinearCrossEntropyScratch,
                                            {*Ns, *Ks, *Vs, Size::realBytes()}));
    e.call({"launch_linear_cross_entropy<real_t, " + *index + ">",
            {"blas", *N, *K, *V, e.name(o.getX()), e.name(o.getWeight()),
             e.nameOr(o.getBias(), "const real_t *"), e.name(o.getTarget()),
             std::to_string(o.getIgnoreIndex()), e.name(o.getLoss()), e.name(o.getDx()),
             e.name(o.getDweight()), e.name(o.getDbias()), e.nameOr(o.getLogits(), "real_t *"),
             "st->flag", std::to_string(e.indexCheckCode()), ws, "stream"}});
    return success();
  }
  FailureOr<std::string> target = int64Targets(e, o.getTarget());
  if (failed(target))
    return failure();
  std::string ws =
      e.workspace(Size::call(size_fn::linearCeWorkspace, {*Ns, *Vs, Size::realBytes()}));
  e.call({"NNCC_KFN(nncc_linear_cross_entropy)",
          {*N, *K, *V, e.name(o.getX()), e.name(o.getWeight()), e.nameOrNull(o.getBias()),
           *target, std::to_string(o.getIgnoreIndex()), e.name(o.getLoss()), e.name(o.getDx()),
           e.name(o.getDweight()), e.name(o.getDbias()), e.nameOrNull(o.getLogits()), ws}});
  return success();
}

/// The fused sampling head (training functions).
LogicalResult emitLinearSample(LaunchEmitter &e, nnk::LinearSampleOp o) {
  auto N = e.numel(o.getOut());
  auto K = e.dim(o.getX(), -1);
  auto V = e.dim(o.getWeight(), 0);
  auto Ns = e.numelSize(o.getOut()), Ks = e.dimSize(o.getX(), -1),
       Vs = e.dimSize(o.getWeight(), 0);
  if (failed(N) || failed(K) || failed(V) || failed(Ns) || failed(Ks) || failed(Vs))
    return failure();
  if (e.isCuda()) {
    std::string ws = e.workspace(
        Size::call(size_fn::cudaLinearSampleScratch, {*Ns, *Vs, Size::realBytes()}));
    SmallVector<std::string> args = {"blas", *N, *K, *V};
    args.append(seedAndOffset(e, o.getSeed(), "(" + *N + ") * (" + *V + ")"));
    args.append({e.name(o.getX()), e.name(o.getWeight()), e.nameOr(o.getBias(), "const real_t *"),
                 e.nameOr(o.getRows(), "const uint8_t *"), ws, e.name(o.getOut()), "stream"});
    e.call({"launch_linear_sample<real_t>", args});
    return success();
  }
  std::string ws = e.workspace(
      Size::call(size_fn::linearSampleWorkspace, {*Ns, *Ks, *Vs, Size::realBytes()}));
  SmallVector<std::string> args = {*N, *K, *V};
  args.append(seedAndOffset(e, o.getSeed(), "(" + *N + ") * (" + *V + ")"));
  args.append({e.name(o.getX()), e.name(o.getWeight()), e.nameOrNull(o.getBias()),
               e.nameOrNull(o.getRows()), ws, e.name(o.getOut())});
  e.call({"NNCC_KFN(nncc_linear_sample)", args});
  return success();
}

} // namespace

void attachLossLaunches(MLIRContext &ctx) {
  attachLaunch<nnk::LossOp, emitLoss, Bf16Kernel::Yes, CudaLoss>(ctx);
  attachLaunch<nnk::LossGradOp, emitLossGrad, Bf16Kernel::Yes, CudaLossBackward>(ctx);
  attachLaunch<nnk::LinearCrossEntropyOp, emitLinearCrossEntropy, Bf16Kernel::Yes, CudaLossHead>(ctx);
  attachLaunch<nnk::LinearSampleOp, emitLinearSample, Bf16Kernel::Yes, CudaToken>(ctx);
}

} // namespace nncc::target
