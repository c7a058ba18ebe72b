//===- NNKAttentionOps.cpp - nnk attention cores ----------------*- C++ -*-===//
//
// Verifiers of the attention family's nnk ops (NNKAttentionOps.td).
//
//===----------------------------------------------------------------------===//

#include "dialects/NNK/IR/NNKOps.h"

#include "dialects/NNK/IR/NNKOpsCommon.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::nnk;
using namespace nncc::nnk::detail;

namespace {

/// qkv [B, T, packs·E], out [B, T, E], E divisible by heads, mask [B, T].
LogicalResult verifyAttention(Operation *op, Value qkv, Value mask,
                                     Value out, Value lse, int64_t heads,
                                     int64_t packs, double dropout) {
  if (!(dropout >= 0.0 && dropout < 1.0))
    return op->emitOpError("dropout must be in [0, 1), got ") << dropout;
  if (failed(expectSameElementType(op, {qkv, out})) ||
      failed(expectRank(op, out, 3, "out")))
    return failure();
  if (heads < 1)
    return op->emitOpError("num_heads must be >= 1");
  BufferType o = bufferOf(out);
  Dim b = o.getDim(0), t = o.getDim(1), e = o.getDim(2);
  if (e.isStatic() && e.getSize() % heads != 0)
    return op->emitOpError("embedding size ")
           << e.str() << " is not divisible by num_heads " << heads;
  if (failed(expectDims(op, qkv, {b, t, e.scaled(packs)}, "qkv")))
    return failure();
  if (mask && failed(expectDims(op, mask, {b, t}, "mask")))
    return failure();
  if (lse && (failed(expectSameElementType(op, {lse, out})) ||
              failed(expectDims(op, lse, {b, Dim::getStatic(heads), t}, "lse"))))
    return failure();
  return success();
}

/// The global tokens and the convention of a dilated core (forward or
/// backward): a static list or a per-example mask [B, T] (b, t), not both;
/// convention "nncc" or "hf" (whose global tokens come from the mask).
LogicalResult verifyDilatedGlobals(Operation *op, ArrayRef<int64_t> global,
                                          Value globalMask, StringRef convention, Dim b,
                                          Dim t) {
  if (convention != "hf" && convention != "nncc")
    return op->emitOpError("dilated convention must be \"hf\" or \"nncc\", got \"")
           << convention << "\"";
  for (int64_t g : global)
    if (g < 0)
      return op->emitOpError("global positions must be >= 0, got ") << g;
  if (globalMask && !global.empty())
    return op->emitOpError("global_mask and a global list exclude each other");
  if (convention == "hf" && !global.empty())
    return op->emitOpError("convention \"hf\" takes its global tokens from global_mask");
  if (globalMask && failed(expectDims(op, globalMask, {b, t}, "global_mask")))
    return failure();
  return success();
}

/// The LSH convention and the rotations' shape of an LSH core (forward or
/// backward): [hashes, dh, n_buckets/2] (nncc) or [num_heads, dh, hashes,
/// n_buckets/2] (hf), E read from `e`.
LogicalResult verifyLshRotations(Operation *op, StringRef convention, Value r,
                                        Dim e, int64_t heads, int64_t hashes,
                                        Value sameType) {
  if (convention != "hf" && convention != "nncc")
    return op->emitOpError("convention must be \"hf\" or \"nncc\", got \"")
           << convention << "\"";
  if (!r)
    return success();
  const bool hf = convention == "hf";
  if (failed(expectSameElementType(op, {r, sameType})) ||
      failed(expectRank(op, r, hf ? 4 : 3, "rotations")))
    return failure();
  Dim dh = e.isStatic() && heads > 0 ? Dim::getStatic(e.getSize() / heads)
                                     : Dim::getDynamic();
  if (hf)
    return expectDims(op, r,
                      {Dim::getStatic(heads), dh, Dim::getStatic(hashes),
                       bufferOf(r).getDim(3)},
                      "rotations");
  return expectDims(op, r, {Dim::getStatic(hashes), dh, bufferOf(r).getDim(2)},
                    "rotations");
}

/// The window of a local attention core (forward or backward).
LogicalResult verifyLocalWindow(Operation *op, int64_t chunk, int64_t before,
                                       int64_t after) {
  if (chunk < 1)
    return op->emitOpError("chunk must be >= 1, got ") << chunk;
  if (before < 0 || after < 0)
    return op->emitOpError("chunks_before and chunks_after must be >= 0, got ")
           << before << " and " << after;
  return success();
}

} // namespace

LogicalResult FlashAttentionOp::verify() {
  return verifyAttention(*this, getQkv(), getMask(), getOut(), getLse(),
                         getNumHeads(), 3, getDropout());
}

LogicalResult BandedAttentionOp::verify() {
  if (getWindow() < 1 || getDilation() < 1)
    return emitOpError("window and dilation must be >= 1");
  BufferType o = bufferOf(getOut());
  if (o.getRank() == 3 &&
      failed(verifyDilatedGlobals(*this, getGlobal(), getGlobalMask(), getConvention(),
                                  o.getDim(0), o.getDim(1))))
    return failure();
  return verifyAttention(*this, getQkv(), getMask(), getOut(), getLse(), getNumHeads(),
                         getConvention() == "hf" ? 6 : 3, getDropout());
}

LogicalResult LSHAttentionOp::verify() {
  if (getHashes() < 1 || getChunk() < 1)
    return emitOpError("hashes and chunk must be >= 1");
  if (getPadToMultiple() < 0 || getPadAbove() < 0 ||
      (getPadToMultiple() > 0 && getConvention() != "hf"))
    return emitOpError("pad_to_multiple and pad_above must be >= 0, and set only in "
                       "convention \"hf\"");
  if (failed(verifyAttention(*this, getQkv(), getMask(), getOut(), getLse(),
                             getNumHeads(), 2, getDropout())))
    return failure();
  return verifyLshRotations(*this, getConvention(), getRotations(),
                            bufferOf(getOut()).getDim(2), getNumHeads(), getHashes(),
                            getOut());
}

LogicalResult LocalAttentionOp::verify() {
  if (getPadToMultiple() < 0 || getPadAbove() < 0)
    return emitOpError("pad_to_multiple and pad_above must be >= 0");
  return verifyLocalWindow(*this, getChunk(), getChunksBefore(), getChunksAfter());
}

LogicalResult AttentionGradOp::verify() {
  if (getKind() == AttentionKind::local &&
      failed(verifyLocalWindow(*this, getChunk(), getChunksBefore(), getChunksAfter())))
    return failure();
  if (getKind() != AttentionKind::local && (getChunksBefore() != 1 || getChunksAfter() != 0))
    return emitOpError("chunks_before and chunks_after apply only to kind local");
  if (getKind() != AttentionKind::lsh && getKind() != AttentionKind::local &&
      (getPadToMultiple() != 0 || getPadAbove() != 0))
    return emitOpError("pad_to_multiple and pad_above apply only to kinds lsh and local");
  if (getKind() != AttentionKind::dilated &&
      (getGlobalMask() || getDilatedConvention() != "nncc" || !getGlobal().empty()))
    return emitOpError("global_mask, global and dilated_convention apply only to kind dilated");
  if (getKind() == AttentionKind::dilated) {
    BufferType d = bufferOf(getDout());
    if (d.getRank() == 3 &&
        failed(verifyDilatedGlobals(*this, getGlobal(), getGlobalMask(),
                                    getDilatedConvention(), d.getDim(0), d.getDim(1))))
      return failure();
  }
  if (getKind() != AttentionKind::lsh) {
    if (getConvention() != "hf")
      return emitOpError("convention applies only to kind lsh");
    return success();
  }
  return verifyLshRotations(*this, getConvention(), getRotations(),
                            bufferOf(getDout()).getDim(2), getNumHeads(), getHashes(),
                            getDout());
}
