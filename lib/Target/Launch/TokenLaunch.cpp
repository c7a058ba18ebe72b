//===- TokenLaunch.cpp - embeddings, positions, tokens ----------*- C++ -*-===//
//
// embedding / embedding_grad (the backward's scratch on CUDA), sinusoidal
// and axial positions (+ axial_position_grad), token masking and Gumbel-max
// sampling (both from the op's random stream, seedAndOffset).
//
//===----------------------------------------------------------------------===//
#include "../Common/LaunchEmitter.h"

using namespace mlir;

namespace nncc::target {
namespace {

LogicalResult emitEmbedding(LaunchEmitter &e, nnk::EmbeddingOp o) {
  auto n = e.numel(o.getIndices());
  auto V = e.dim(o.getTable(), 0), E = e.dim(o.getTable(), 1);
  auto indexType = e.cType(e.bufferType(o.getIndices()).getElementType());
  if (failed(n) || failed(V) || failed(E) || failed(indexType))
    return failure();
  SmallVector<std::string> args = {*n, *V, *E, e.name(o.getIndices()), e.name(o.getTable()),
                                   e.name(o.getOut())};
  if (e.isCuda()) {
    args.append({"st->flag", std::to_string(e.indexCheckCode()), "stream"});
    e.call({"launch_embedding<real_t, " + *indexType + ">", args});
    return success();
  }
  bool i32 = *indexType == "int32_t";
  e.call({i32 ? "NNCC_KFN(nncc_embedding_i32)" : "NNCC_KFN(nncc_embedding)", args});
  return success();
}

LogicalResult emitEmbeddingGrad(LaunchEmitter &e, nnk::EmbeddingGradOp o) {
  auto n = e.numel(o.getIndices());
  auto V = e.dim(o.getOut(), 0), E = e.dim(o.getOut(), 1);
  if (failed(n) || failed(V) || failed(E))
    return failure();
  const std::string padding = std::to_string(int64_t(o.getPaddingIdx()));
  if (e.isCuda()) {
    auto index = e.cType(e.bufferType(o.getIndices()).getElementType());
    if (failed(index))
      return failure();
    auto nSize = e.numelSize(o.getIndices()), VSize = e.dimSize(o.getOut(), 0);
    if (failed(nSize) || failed(VSize))
      return failure();
    std::string ws =
        e.workspace(Size::call(size_fn::cudaEmbeddingBackwardScratch, {*nSize, *VSize}));
    e.call({"launch_embedding_backward<real_t, " + *index + ">",
            {*n, *V, *E, e.name(o.getIndices()), e.name(o.getDy()), padding, e.name(o.getOut()),
             ws, "stream"}});
    return success();
  }
  bool i32 = e.bufferType(o.getIndices()).getElementType().isInteger(32);
  e.call({i32 ? "NNCC_KFN(nncc_embedding_backward_i32)" : "NNCC_KFN(nncc_embedding_backward)",
          {*n, *V, *E, e.name(o.getIndices()), e.name(o.getDy()), padding, e.name(o.getOut())}});
  return success();
}

LogicalResult emitSinusoidalPosition(LaunchEmitter &e, nnk::SinusoidalPositionOp o) {
  auto B = e.dim(o.getX(), 0), T = e.dim(o.getX(), 1), E = e.dim(o.getX(), 2);
  if (failed(B) || failed(T) || failed(E))
    return failure();
  SmallVector<std::string> args = {*B, *T, *E, e.name(o.getX()), e.name(o.getOut())};
  if (!e.isCuda()) {
    e.call({"NNCC_KFN(nncc_sinusoidal_position)", args});
    return success();
  }
  args.push_back("stream");
  e.call({"launch_sinusoidal_position<real_t>", args});
  return success();
}

/// The grid of an axial table pair: n1, n2, d1, d2 (static).
SmallVector<std::string> axialGrid(Value rows, Value cols) {
  auto r = LaunchEmitter::bufferType(rows), c = LaunchEmitter::bufferType(cols);
  return {std::to_string(r.getDim(0).getSize()), std::to_string(c.getDim(1).getSize()),
          std::to_string(r.getDim(2).getSize()), std::to_string(c.getDim(2).getSize())};
}

LogicalResult emitAxialPosition(LaunchEmitter &e, nnk::AxialPositionOp o) {
  auto B = e.dim(o.getX(), 0), T = e.dim(o.getX(), 1);
  if (failed(B) || failed(T))
    return failure();
  SmallVector<std::string> g = axialGrid(o.getRows(), o.getCols());
  if (!e.isCuda()) {
    e.call({"NNCC_KFN(nncc_axial_position)",
            {*B, *T, g[0], g[1], g[2], g[3], e.name(o.getX()), e.name(o.getRows()),
             e.name(o.getCols()), e.name(o.getOut())}});
    return success();
  }
  e.call({"launch_axial_position<real_t>",
          {*B, *T, g[1], g[2], g[3], e.name(o.getX()), e.name(o.getRows()),
           e.name(o.getCols()), e.name(o.getOut()), "stream"}});
  return success();
}

LogicalResult emitAxialPositionGrad(LaunchEmitter &e, nnk::AxialPositionGradOp o) {
  auto B = e.dim(o.getDy(), 0), T = e.dim(o.getDy(), 1);
  if (failed(B) || failed(T))
    return failure();
  SmallVector<std::string> g = axialGrid(o.getDrows(), o.getDcols());
  SmallVector<std::string> args = {*B, *T, g[0], g[1], g[2], g[3], e.name(o.getDy()),
                                   e.name(o.getDrows()), e.name(o.getDcols())};
  if (!e.isCuda()) {
    e.call({"NNCC_KFN(nncc_axial_position_backward)", args});
    return success();
  }
  args.push_back("stream");
  e.call({"launch_axial_position_backward<real_t>", args});
  return success();
}

/// Token masking: rows of the last dim; i32 or i64 tokens.
LogicalResult emitMaskTokens(LaunchEmitter &e, nnk::MaskTokensOp o) {
  auto rows = e.numel(o.getTokens(), 0, LaunchEmitter::bufferType(o.getTokens()).getRank() - 1);
  auto n = e.dim(o.getTokens(), -1);
  if (failed(rows) || failed(n))
    return failure();
  bool i32 = LaunchEmitter::bufferType(o.getTokens()).getElementType().isInteger(32);
  SmallVector<std::string> args = {*rows, *n, fmtDouble(o.getP()),
                                   std::to_string(o.getMaskId()) + "LL"};
  args.append(seedAndOffset(e, o.getSeed(), "(" + *rows + ") * (" + *n + ")"));
  args.append({e.name(o.getTokens()), e.name(o.getMasked()), e.name(o.getMask())});
  if (!e.isCuda()) {
    e.call({i32 ? "nncc_mask_tokens_i32" : "nncc_mask_tokens_i64", args});
    return success();
  }
  args.push_back("stream");
  e.call({i32 ? "launch_mask_tokens<int32_t>" : "launch_mask_tokens<int64_t>", args});
  return success();
}

/// Gumbel-max sampling: one draw per row of the last dim.
LogicalResult emitSample(LaunchEmitter &e, nnk::SampleOp o) {
  auto rows = e.numel(o.getOut());
  auto V = e.dim(o.getLogits(), -1);
  if (failed(rows) || failed(V))
    return failure();
  SmallVector<std::string> args = {*rows, *V};
  args.append(seedAndOffset(e, o.getSeed(), "(" + *rows + ") * (" + *V + ")"));
  args.append({e.name(o.getLogits()), e.nameOr(o.getRows(), "const uint8_t *"),
               e.name(o.getOut())});
  if (!e.isCuda()) {
    e.call({"NNCC_KFN(nncc_sample)", args});
    return success();
  }
  args.push_back("stream");
  e.call({"launch_sample<real_t>", args});
  return success();
}

} // namespace

void attachTokenLaunches(MLIRContext &ctx) {
  attachLaunch<nnk::EmbeddingOp, emitEmbedding, Bf16Kernel::Yes, CudaToken>(ctx);
  attachLaunch<nnk::EmbeddingGradOp, emitEmbeddingGrad, Bf16Kernel::Yes,
               CudaTokenBackward>(ctx);
  attachLaunch<nnk::SinusoidalPositionOp, emitSinusoidalPosition, Bf16Kernel::Yes, CudaToken>(ctx);
  attachLaunch<nnk::AxialPositionOp, emitAxialPosition, Bf16Kernel::Yes, CudaToken>(ctx);
  attachLaunch<nnk::AxialPositionGradOp, emitAxialPositionGrad, Bf16Kernel::Yes,
               CudaTokenBackward>(ctx);
  attachLaunch<nnk::MaskTokensOp, emitMaskTokens, Bf16Kernel::Yes, CudaToken>(ctx);
  attachLaunch<nnk::SampleOp, emitSample, Bf16Kernel::Yes, CudaToken>(ctx);
}

} // namespace nncc::target
