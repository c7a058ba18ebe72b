//===- NormLaunch.cpp - layer norm and softmax ------------------*- C++ -*-===//
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
    auto rowsSize = e.numelSize(o.getX(), 0, e.bufferType(o.getX()).getRank() - 1);
    auto nSize = e.dimSize(o.getX(), -1);
    if (failed(rowsSize) || failed(nSize))
      return failure();
    std::string ws =
        e.workspace(Size::call(size_fn::cudaLayerNormBackwardScratch, {*rowsSize, *nSize}));
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
  e.out() << "softmax_axis_kernel<real_t><<<grid_for(" << *outer << " * " << *inner
          << ", 256), 256, 0, stream>>>(" << *outer << ", " << *n << ", " << *inner << ", "
          << e.name(o.getX()) << ", " << e.name(o.getOut()) << ");\n";
  e.out() << e.checked("cudaGetLastError()");
  return success();
}

} // namespace

void attachNormLaunches(MLIRContext &ctx) {
  attachLaunch<nnk::LayerNormOp, emitLayerNorm, Bf16Kernel::Yes, CudaNorm>(ctx);
  attachLaunch<nnk::LayerNormGradOp, emitLayerNormGrad, Bf16Kernel::Yes, CudaNormBackward>(ctx);
  attachLaunch<nnk::SoftmaxOp, emitSoftmax, Bf16Kernel::Yes, CudaNorm>(ctx);
}

} // namespace nncc::target
