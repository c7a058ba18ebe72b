//===- NormLaunch.cpp - launches of norms, softmax, argmax/max, topk ------===//
#include "../Common/LaunchEmitter.h"

using namespace mlir;

namespace nncc::target {
namespace {

LogicalResult emitLayerNorm(LaunchEmitter &e, nnk::LayerNormOp o) {
  auto rows = e.numel(o.getX(), 0, e.bufferType(o.getX()).getRank() - 1);
  auto n = e.dim(o.getX(), -1);
  if (failed(rows) || failed(n))
    return failure();
  // Rows of x (+ residual, whose sum is kept in `sum` when given), then
  // the kernel's optional mean / rstd outputs (unused here).
  SmallVector<std::string> args = {*rows, *n, e.name(o.getX()), e.nameOrNull(o.getResidual()),
                                   e.nameOrNull(o.getWeight()), e.nameOrNull(o.getBias()),
                                   (e.isCuda() ? "(acc_t<real_t>)" : "") + fmtDouble(o.getEps()),
                                   e.name(o.getOut()), e.nameOrNull(o.getSum()), "NULL", "NULL"};
  if (e.isCuda()) {
    args.push_back("stream");
    e.call({"nncc::kernels::cuda::launch_layer_norm<real_t>", args});
  } else {
    e.call({"NNCC_KFN(nncc_layer_norm)", args});
  }
  return success();
}

LogicalResult emitLayerNormGrad(LaunchEmitter &e, nnk::LayerNormGradOp o) {
  auto rows = e.numel(o.getX(), 0, e.bufferType(o.getX()).getRank() - 1);
  auto n = e.dim(o.getX(), -1);
  if (failed(rows) || failed(n))
    return failure();
  if (e.isCuda()) {
    std::string ws = e.workspace("layer_norm_backward_scratch_bytes(" + *rows + ", " + *n + ")");
    e.call({"launch_layer_norm_backward<real_t>",
            {*rows, *n, e.name(o.getX()), "(const real_t *)NULL",
             e.nameOr(o.getWeight(), "const real_t *"), fmtDouble(o.getEps()), e.name(o.getDy()),
             "(const real_t *)NULL", e.name(o.getDx()), e.nameOr(o.getDweight(), "real_t *"),
             "(real_t *)NULL", ws, "stream"}});
    return success();
  }
  e.call({"NNCC_KFN(nncc_layer_norm_backward)",
          {*rows, *n, e.name(o.getX()), "NULL", e.nameOrNull(o.getWeight()), "NULL", "NULL",
           fmtDouble(o.getEps()), e.name(o.getDy()), "NULL", e.name(o.getDx()),
           e.nameOrNull(o.getDweight()), "NULL"}});
  return success();
}

LogicalResult emitSoftmax(LaunchEmitter &e, nnk::SoftmaxOp o) {
  int64_t axis = o.getAxis();
  auto outer = e.numel(o.getX(), 0, axis), n = e.dim(o.getX(), axis),
       inner = e.numel(o.getX(), axis + 1);
  if (failed(outer) || failed(n) || failed(inner))
    return failure();
  if (!e.isCuda()) {
    e.call({"NNCC_KFN(nncc_softmax)", {*outer, *n, *inner, e.name(o.getX()), e.name(o.getOut())}});
    return success();
  }
  e.out() << "nncc_gen_softmax<real_t><<<grid_for(" << *outer << " * " << *inner
          << ", 256), 256, 0, stream>>>(" << *outer << ", " << *n << ", " << *inner << ", "
          << e.name(o.getX()) << ", " << e.name(o.getOut()) << ");\n";
  e.out() << e.checked("cudaGetLastError()");
  return success();
}

/// argmax / max / max_grad along one axis of [outer, N, inner]: CPU
/// kernels only (nncc_max_axis{,_backward}_*); CUDA reports the op.
template <typename OpT> LogicalResult axisMaxDims(LaunchEmitter &e, OpT o, Value x,
                                                   SmallVectorImpl<std::string> &dims) {
  if (e.isCuda())
    return o.emitOpError("is not supported on CUDA yet (argmax and max with an axis "
                         "run on the CPU target only)");
  int64_t axis = o.getAxis();
  auto outer = e.numel(x, 0, axis), n = e.dim(x, axis), inner = e.numel(x, axis + 1);
  if (failed(outer) || failed(n) || failed(inner))
    return failure();
  dims.append({*outer, *n, *inner});
  return success();
}

LogicalResult emitArgmax(LaunchEmitter &e, nnk::ArgmaxOp o) {
  SmallVector<std::string> args;
  if (failed(axisMaxDims(e, o, o.getX(), args)))
    return failure();
  args.append({e.name(o.getX()), "NULL", e.name(o.getOut())});
  e.call({"NNCC_KFN(nncc_max_axis)", args});
  return success();
}

LogicalResult emitMax(LaunchEmitter &e, nnk::MaxOp o) {
  SmallVector<std::string> args;
  if (failed(axisMaxDims(e, o, o.getX(), args)))
    return failure();
  args.append({e.name(o.getX()), e.name(o.getOut()), "NULL"});
  e.call({"NNCC_KFN(nncc_max_axis)", args});
  return success();
}

LogicalResult emitMaxGrad(LaunchEmitter &e, nnk::MaxGradOp o) {
  SmallVector<std::string> args;
  if (failed(axisMaxDims(e, o, o.getX(), args)))
    return failure();
  args.append({e.name(o.getX()), e.name(o.getDy()), e.name(o.getDx())});
  e.call({"NNCC_KFN(nncc_max_axis_backward)", args});
  return success();
}

/// topk / topk_grad along one axis: [outer, N, inner] around it with k
/// (CPU kernels nncc_topk_axis{,_backward}_*); CUDA reports the op.
template <typename OpT>
LogicalResult topkDims(LaunchEmitter &e, OpT o, Value full, Value part,
                       SmallVectorImpl<std::string> &dims) {
  if (e.isCuda())
    return o.emitOpError("is not supported on CUDA yet (topk runs on the CPU "
                         "target only)");
  int64_t axis = o.getAxis();
  auto outer = e.numel(full, 0, axis), n = e.dim(full, axis),
       inner = e.numel(full, axis + 1), k = e.dim(part, axis);
  if (failed(outer) || failed(n) || failed(inner) || failed(k))
    return failure();
  dims.append({*outer, *n, *inner, *k});
  return success();
}

LogicalResult emitTopk(LaunchEmitter &e, nnk::TopkOp o) {
  SmallVector<std::string> args;
  if (failed(topkDims(e, o, o.getX(), o.getValues(), args)))
    return failure();
  args.append({e.name(o.getX()), e.name(o.getValues()), e.name(o.getIndices())});
  e.call({"NNCC_KFN(nncc_topk_axis)", args});
  return success();
}

LogicalResult emitTopkGrad(LaunchEmitter &e, nnk::TopkGradOp o) {
  SmallVector<std::string> args;
  if (failed(topkDims(e, o, o.getDx(), o.getDy(), args)))
    return failure();
  args.append({e.name(o.getIndices()), e.name(o.getDy()), e.name(o.getDx())});
  e.call({"NNCC_KFN(nncc_topk_axis_backward)", args});
  return success();
}

/// Running sums along one axis: nncc_cumsum_axis_{f32,f64} for floats,
/// _i32 / _i64 for integers; CPU only.
LogicalResult emitCumsum(LaunchEmitter &e, nnk::CumsumOp o) {
  if (e.isCuda())
    return o.emitOpError("is not supported on CUDA yet (cumsum runs on the CPU target only)");
  int64_t axis = o.getAxis();
  Value x = o.getX();
  auto outer = e.numel(x, 0, axis), n = e.dim(x, axis), inner = e.numel(x, axis + 1);
  if (failed(outer) || failed(n) || failed(inner))
    return failure();
  Type element = e.bufferType(x).getElementType();
  std::string fn = element.isInteger(32)   ? "nncc_cumsum_axis_i32"
                   : element.isInteger(64) ? "nncc_cumsum_axis_i64"
                                           : "NNCC_KFN(nncc_cumsum_axis)";
  e.call({fn, {*outer, *n, *inner, o.getReverse() ? "1" : "0", e.name(x), e.name(o.getOut())}});
  return success();
}

} // namespace

void attachNormLaunches(MLIRContext &ctx) {
  attachLaunch<nnk::LayerNormOp, emitLayerNorm, Bf16Kernel::Yes>(ctx);
  attachLaunch<nnk::LayerNormGradOp, emitLayerNormGrad, Bf16Kernel::Yes>(ctx);
  attachLaunch<nnk::SoftmaxOp, emitSoftmax, Bf16Kernel::Yes>(ctx);
  attachLaunch<nnk::ArgmaxOp, emitArgmax>(ctx);
  attachLaunch<nnk::MaxOp, emitMax>(ctx);
  attachLaunch<nnk::MaxGradOp, emitMaxGrad>(ctx);
  attachLaunch<nnk::CumsumOp, emitCumsum>(ctx);
  attachLaunch<nnk::TopkOp, emitTopk>(ctx);
  attachLaunch<nnk::TopkGradOp, emitTopkGrad>(ctx);
}

} // namespace nncc::target
