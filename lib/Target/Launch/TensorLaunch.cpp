//===- TensorLaunch.cpp - data movement, reductions, selections -*- C++ -*-===//
//
// fill, copy, transpose, slice / slice_grad, concat, split, reduce,
// reduce_to_shape, broadcast_axes, and along one axis argmax / max /
// max_grad, topk / topk_grad and cumsum. Strided copies go through the target's `copyNd`
// (libnncc_model_support's nncc_ms_copy_nd on the CPU, launch_copy_nd of
// Tensor.cuh on CUDA); the index math is computed here once.
//
//===----------------------------------------------------------------------===//
#include "../Common/LaunchEmitter.h"

using namespace mlir;

namespace nncc::target {
namespace {

LogicalResult emitFill(LaunchEmitter &e, nnk::FillOp o) {
  auto n = e.numel(o.getOut());
  auto ct = e.cType(e.bufferType(o.getOut()).getElementType());
  if (failed(n) || failed(ct))
    return failure();
  std::string value = "(" + *ct + ")" + fmtDouble(o.getValue());
  if (!e.isCuda()) {
    e.out() << "for (int64_t i = 0; i < " << *n << "; ++i) " << e.name(o.getOut())
            << "[i] = " << value << ";\n";
    return success();
  }
  if (*ct == "real_t") // rounded to the storage type once, on the host
    value = "nncc_gen_real(" + fmtDouble(o.getValue()) + ")";
  e.out() << "fill_kernel<" << *ct << "><<<grid_for(" << *n
          << ", 256), 256, 0, stream>>>(" << *n << ", " << value << ", "
          << e.name(o.getOut()) << ");\n";
  e.out() << e.checked("cudaGetLastError()");
  return success();
}

LogicalResult emitCopy(LaunchEmitter &e, nnk::CopyOp o) {
  auto n = e.numel(o.getOut());
  if (failed(n))
    return failure();
  std::string bytes = *n + " * sizeof(*" + e.name(o.getOut()) + ")";
  if (e.isCuda())
    e.out() << e.checked("cudaMemcpyAsync(" + e.name(o.getOut()) + ", " + e.name(o.getIn()) +
                         ", " + bytes + ", cudaMemcpyDeviceToDevice, stream)");
  else
    e.out() << "memcpy(" << e.name(o.getOut()) << ", " << e.name(o.getIn()) << ", " << bytes
            << ");\n";
  return success();
}

LogicalResult emitTranspose(LaunchEmitter &e, nnk::TransposeOp o) {
  StridedCopy c{e.bufferType(o.getOut()).getElementType(), {}, {}, {}, e.name(o.getOut()),
                e.name(o.getX())};
  auto perm = o.getPerm();
  for (size_t d = 0; d < perm.size(); ++d) {
    auto size = e.dim(o.getOut(), d);
    auto srcStride = e.numel(o.getX(), perm[d] + 1);
    auto dstStride = e.numel(o.getOut(), d + 1);
    if (failed(size) || failed(srcStride) || failed(dstStride))
      return failure();
    c.shape.push_back(*size);
    c.srcStrides.push_back(*srcStride);
    c.dstStrides.push_back(*dstStride);
  }
  return e.copyNd(c);
}

/// The strided copy between a tensor `whole` and its slice `part`: out of
/// the whole for nnk.slice, back into it for nnk.slice_grad. Per dim of the
/// whole: a start (negative: from the end) and a step; squeezed dims drop.
LogicalResult emitSliceCopy(LaunchEmitter &e, Value whole, Value part,
                            ArrayRef<int64_t> starts, ArrayRef<int64_t> steps,
                            ArrayRef<int64_t> squeeze, bool intoWhole) {
  llvm::SmallDenseSet<int64_t> squeezed(squeeze.begin(), squeeze.end());
  SmallVector<std::string> shape, wholeStrides, partStrides;
  std::string base = "0";
  int64_t partDim = 0;
  for (int64_t d = 0; d < e.bufferType(whole).getRank(); ++d) {
    auto size = e.dim(whole, d);
    auto stride = e.numel(whole, d + 1);
    if (failed(size) || failed(stride))
      return failure();
    std::string start = starts[d] >= 0
                            ? std::to_string(starts[d])
                            : "(" + *size + " - " + std::to_string(-starts[d]) + ")";
    base += " + " + start + " * " + *stride;
    if (squeezed.contains(d))
      continue;
    auto partSize = e.dim(part, partDim);
    auto partStride = e.numel(part, partDim + 1);
    if (failed(partSize) || failed(partStride))
      return failure();
    shape.push_back(*partSize);
    wholeStrides.push_back(std::to_string(steps[d]) + " * " + *stride);
    partStrides.push_back(*partStride);
    ++partDim;
  }
  std::string wholeAt = e.name(whole) + " + (" + base + ")";
  if (shape.empty()) {
    if (intoWhole)
      e.copyOne(wholeAt, e.name(part));
    else
      e.copyOne(e.name(part), wholeAt);
    return success();
  }
  Type elt = e.bufferType(part).getElementType();
  if (intoWhole)
    return e.copyNd({elt, shape, wholeStrides, partStrides, wholeAt, e.name(part)});
  return e.copyNd({elt, shape, partStrides, wholeStrides, e.name(part), wholeAt});
}

LogicalResult emitSlice(LaunchEmitter &e, nnk::SliceOp o) {
  return emitSliceCopy(e, o.getX(), o.getOut(), o.getStarts(), o.getSteps(), o.getSqueeze(),
                       /*intoWhole=*/false);
}

LogicalResult emitSliceGrad(LaunchEmitter &e, nnk::SliceGradOp o) {
  auto n = e.numel(o.getOut());
  if (failed(n))
    return failure();
  if (e.isCuda())
    e.out() << e.checked("cudaMemsetAsync(" + e.name(o.getOut()) + ", 0, " + *n +
                         " * sizeof(real_t), stream)");
  else
    e.out() << "memset(" << e.name(o.getOut()) << ", 0, " << *n << " * sizeof(real_t));\n";
  return emitSliceCopy(e, o.getOut(), o.getDy(), o.getStarts(), o.getSteps(), o.getSqueeze(),
                       /*intoWhole=*/true);
}

/// Copies each piece into `whole` at its running offset along `axis`
/// (concat), or out of it (split).
LogicalResult emitPieces(LaunchEmitter &e, Value whole, ValueRange pieces, int64_t axis,
                         bool intoWhole) {
  std::string offset = "0";
  for (Value piece : pieces) {
    StridedCopy c;
    c.elementType = e.bufferType(piece).getElementType();
    SmallVector<std::string> pieceStrides, wholeStrides;
    for (int64_t d = 0; d < e.bufferType(piece).getRank(); ++d) {
      auto size = e.dim(piece, d);
      auto ps = e.numel(piece, d + 1);
      auto ws = e.numel(whole, d + 1);
      if (failed(size) || failed(ps) || failed(ws))
        return failure();
      c.shape.push_back(*size);
      pieceStrides.push_back(*ps);
      wholeStrides.push_back(*ws);
    }
    auto axisStride = e.numel(whole, axis + 1);
    auto axisSize = e.dim(piece, axis);
    if (failed(axisStride) || failed(axisSize))
      return failure();
    std::string at = e.name(whole) + " + (" + offset + ") * " + *axisStride;
    c.dst = intoWhole ? at : e.name(piece);
    c.src = intoWhole ? e.name(piece) : at;
    c.dstStrides = intoWhole ? wholeStrides : pieceStrides;
    c.srcStrides = intoWhole ? pieceStrides : wholeStrides;
    if (failed(e.copyNd(c)))
      return failure();
    offset += " + " + *axisSize;
  }
  return success();
}

LogicalResult emitConcat(LaunchEmitter &e, nnk::ConcatOp o) {
  return emitPieces(e, o.getOut(), o.getInputs(), o.getAxis(), /*intoWhole=*/true);
}

LogicalResult emitSplit(LaunchEmitter &e, nnk::SplitOp o) {
  return emitPieces(e, o.getX(), o.getOuts(), o.getAxis(), /*intoWhole=*/false);
}

/// A reduction of `x` over the dims in `mask` into `out` (mean: divided by
/// the reduced count).
LogicalResult emitReduceMask(LaunchEmitter &e, Value x, Value out, uint32_t mask, bool mean) {
  auto shape = e.shape(x);
  if (failed(shape))
    return failure();
  int64_t rank = e.bufferType(x).getRank();
  if (!e.isCuda()) {
    if (rank > 31)
      return e.op()->emitError("nnk reductions serve rank <= 31");
    e.out() << "{\n  const int64_t shape[] = {"
            << (shape->empty() ? std::string("1") : llvm::join(*shape, ", "))
            << "};\n  NNCC_MS_REDUCE(" << rank << ", shape, " << mask << "u, " << (mean ? 1 : 0)
            << ", " << e.name(x) << ", " << e.name(out) << ");\n}\n";
    return success();
  }
  if (rank > 16)
    return e.op()->emitError("the CUDA nnk.reduce serves rank <= 16");
  e.out() << "{\n";
  e.out().indent();
  e.out() << "ReduceNd r{};\n";
  e.out() << "r.rank = " << (rank ? rank : 1) << ";\n";
  e.out() << "r.mask = " << (rank ? mask : 1u) << "u;\n";
  if (rank == 0)
    e.out() << "r.shape[0] = 1;\n";
  for (int64_t d = 0; d < rank; ++d)
    e.out() << "r.shape[" << d << "] = " << (*shape)[d] << ";\n";
  std::optional<Size> kept, reduced;
  for (int64_t d = 0; d < rank; ++d) {
    FailureOr<Size> size = e.dimSize(x, d);
    if (failed(size))
      return failure();
    std::optional<Size> &side = mask >> d & 1u ? reduced : kept;
    side = side ? *side * *size : *size;
  }
  auto product = [](const std::optional<Size> &dims) {
    return dims ? dims->paren() : Size::constant(1);
  };
  std::string ws =
      e.workspace(Size::call(size_fn::cudaReduceScratch, {product(kept), product(reduced)}));
  e.out() << e.checked("launch_reduce<real_t>(r, " + std::to_string(mean ? 1 : 0) + ", " +
                       e.name(x) + ", " + e.name(out) + ", " + ws + ", stream)");
  e.out().unindent();
  e.out() << "}\n";
  return success();
}

LogicalResult emitReduce(LaunchEmitter &e, nnk::ReduceOp o) {
  int64_t rank = e.bufferType(o.getX()).getRank();
  uint32_t mask = 0;
  for (int64_t a : o.getAxes())
    mask |= 1u << a;
  if (o.getAxes().empty())
    mask = rank ? (1u << rank) - 1 : 0;
  return emitReduceMask(e, o.getX(), o.getOut(), mask, o.getKind() == nnk::ReduceKind::mean);
}

LogicalResult emitReduceToShape(LaunchEmitter &e, nnk::ReduceToShapeOp o) {
  auto tx = e.bufferType(o.getX()), ty = e.bufferType(o.getOut());
  int64_t r = tx.getRank(), ry = ty.getRank();
  if (r == 0) {
    e.copyOne(e.name(o.getOut()), e.name(o.getX()));
    return success();
  }
  // Summed: the leading dims the result lacks, and its size-1 dims where x
  // has more.
  uint32_t mask = 0;
  for (int64_t d = 0; d < r; ++d) {
    int64_t yd = d - (r - ry);
    if (yd < 0 || (ty.getDim(yd).isStatic() && ty.getDim(yd).getSize() == 1 &&
                   !(tx.getDim(d).isStatic() && tx.getDim(d).getSize() == 1)))
      mask |= 1u << d;
  }
  return emitReduceMask(e, o.getX(), o.getOut(), mask, /*mean=*/false);
}

LogicalResult emitBroadcastAxes(LaunchEmitter &e, nnk::BroadcastAxesOp o) {
  auto shape = e.shape(o.getOut());
  if (failed(shape))
    return failure();
  uint32_t mask = 0;
  for (int64_t a : o.getAxes())
    mask |= 1u << a;
  if (e.isCuda()) {
    if (shape->size() > 16)
      return e.op()->emitError("the CUDA nnk.broadcast_axes serves rank <= 16");
    e.out() << "{\n";
    e.out().indent();
    e.out() << "ReduceNd r{};\n";
    e.out() << "r.rank = " << shape->size() << ";\n";
    e.out() << "r.mask = " << mask << "u;\n";
    for (size_t d = 0; d < shape->size(); ++d)
      e.out() << "r.shape[" << d << "] = " << (*shape)[d] << ";\n";
    e.out() << e.checked("launch_broadcast_axes<real_t>(r, " + LaunchEmitter::flag(o.getMean()) + ", " +
                         e.name(o.getDy()) + ", " + e.name(o.getOut()) + ", stream)");
    e.out().unindent();
    e.out() << "}\n";
    return success();
  }
  e.out() << "{\n  const int64_t shape[] = {"
          << (shape->empty() ? std::string("1") : llvm::join(*shape, ", "))
          << "};\n  nncc::grad::broadcast_axes<real_t>(" << shape->size() << ", shape, " << mask
          << "u, " << (o.getMean() ? 1 : 0) << ", " << e.name(o.getDy()) << ", "
          << e.name(o.getOut()) << ");\n}\n";
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

void attachTensorLaunches(MLIRContext &ctx) {
  attachLaunch<nnk::FillOp, emitFill, Bf16Kernel::Yes>(ctx);
  attachLaunch<nnk::CopyOp, emitCopy, Bf16Kernel::Yes>(ctx);
  attachLaunch<nnk::TransposeOp, emitTranspose, Bf16Kernel::Yes>(ctx);
  attachLaunch<nnk::SliceOp, emitSlice, Bf16Kernel::Yes>(ctx);
  attachLaunch<nnk::SliceGradOp, emitSliceGrad, Bf16Kernel::Yes>(ctx);
  attachLaunch<nnk::ConcatOp, emitConcat, Bf16Kernel::Yes>(ctx);
  attachLaunch<nnk::SplitOp, emitSplit, Bf16Kernel::Yes>(ctx);
  attachLaunch<nnk::ReduceOp, emitReduce, Bf16Kernel::Yes>(ctx);
  attachLaunch<nnk::ReduceToShapeOp, emitReduceToShape, Bf16Kernel::Yes>(ctx);
  attachLaunch<nnk::BroadcastAxesOp, emitBroadcastAxes, Bf16Kernel::Yes,
               CudaTensorBackward>(ctx);
  attachLaunch<nnk::ArgmaxOp, emitArgmax>(ctx);
  attachLaunch<nnk::MaxOp, emitMax>(ctx);
  attachLaunch<nnk::MaxGradOp, emitMaxGrad>(ctx);
  attachLaunch<nnk::CumsumOp, emitCumsum>(ctx);
  attachLaunch<nnk::TopkOp, emitTopk>(ctx);
  attachLaunch<nnk::TopkGradOp, emitTopkGrad>(ctx);
}

} // namespace nncc::target
