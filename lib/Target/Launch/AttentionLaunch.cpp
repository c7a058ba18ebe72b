//===- AttentionLaunch.cpp - launches of the attention cores --------------===//
//
// nnk.flash_attention (dense), nnk.banded_attention (dilated sliding window
// + global tokens), nnk.lsh_attention and their backward nnk.attention_grad.
// The CPU twin takes one parameter block (nncc_attention_params) for every
// kind, forward and backward; CUDA has one launcher per kind: inference and
// training forwards (Attention.cuh, LshAttention.cuh) and backwards
// (AttentionBackward.cuh).
//
//===----------------------------------------------------------------------===//
#include "../Common/LaunchEmitter.h"

#include "nncc/Kernels/Codes.h"

using namespace mlir;

namespace nncc::target {
namespace {

using nnk::AttentionKind;

/// What every attention op carries, read once from the forward op or from
/// its gradient.
struct AttentionConfig {
  AttentionKind kind = AttentionKind::dense;
  int64_t heads = 1;
  bool causal = false;
  double scale = 0;
  int64_t window = 0, dilation = 1;
  ArrayRef<int64_t> global;
  int64_t hashes = 0, chunk = 0, seed = 0;
  int64_t chunksBefore = 1, chunksAfter = 0; // local
  int64_t padToMultiple = 0, padAbove = 0;   // LSH, Hugging Face's convention
  double dropout = 0;
  Value rotations; // LSH: given rotations (else a seeded draw)
  bool lshHf = false; // LSH: Hugging Face's convention (NNCC_LSH_HF)
  Value globalMask;       // dilated: per-example global tokens
  bool dilatedHf = false; // dilated: Longformer's convention (NNCC_DILATED_HF)
};

AttentionConfig configOf(Operation *op) {
  AttentionConfig c;
  auto common = [&](auto o) {
    c.heads = o.getNumHeads();
    c.causal = o.getCausal();
    c.scale = o.getScale();
    c.seed = o.getSeed();
    c.dropout = o.getDropout();
  };
  if (auto g = dyn_cast<nnk::AttentionGradOp>(op)) {
    common(g);
    c.kind = g.getKind();
    c.window = g.getWindow();
    c.dilation = g.getDilation();
    c.global = g.getGlobal();
    c.hashes = g.getHashes();
    c.chunk = g.getChunk();
    c.rotations = g.getRotations();
    c.lshHf = c.kind == AttentionKind::lsh && g.getConvention() == "hf";
    c.globalMask = g.getGlobalMask();
    c.dilatedHf = g.getDilatedConvention() == "hf";
    c.chunksBefore = g.getChunksBefore();
    c.chunksAfter = g.getChunksAfter();
    c.padToMultiple = g.getPadToMultiple();
    c.padAbove = g.getPadAbove();
  } else if (auto l = dyn_cast<nnk::LocalAttentionOp>(op)) {
    common(l);
    c.kind = AttentionKind::local;
    c.chunk = l.getChunk();
    c.chunksBefore = l.getChunksBefore();
    c.chunksAfter = l.getChunksAfter();
    c.padToMultiple = l.getPadToMultiple();
    c.padAbove = l.getPadAbove();
  } else if (auto b = dyn_cast<nnk::BandedAttentionOp>(op)) {
    common(b);
    c.kind = AttentionKind::dilated;
    c.window = b.getWindow();
    c.dilation = b.getDilation();
    c.global = b.getGlobal();
    c.globalMask = b.getGlobalMask();
    c.dilatedHf = b.getConvention() == "hf";
  } else if (auto l = dyn_cast<nnk::LSHAttentionOp>(op)) {
    common(l);
    c.kind = AttentionKind::lsh;
    c.hashes = l.getHashes();
    c.chunk = l.getChunk();
    c.rotations = l.getRotations();
    c.lshHf = l.getConvention() == "hf";
    c.padToMultiple = l.getPadToMultiple();
    c.padAbove = l.getPadAbove();
  } else {
    common(cast<nnk::FlashAttentionOp>(op));
  }
  return c;
}

std::string globalList(ArrayRef<int64_t> global) {
  std::string s;
  for (int64_t g : global)
    s += (s.empty() ? "" : ", ") + std::to_string(g);
  return s;
}

/// The LSH rotations' element count without given rotations: hashes x dh x
/// buckets / 2 (times the heads for Hugging Face's per-head rotations),
/// buckets by HuggingFace's rule from T and the chunk.
Size drawnRotationCount(const AttentionConfig &c, const Size &T, const Size &dh) {
  Size halfBuckets =
      (Size::call(size_fn::lshBuckets, {T, Size::constant(c.chunk)}) / Size::constant(2)).paren();
  Size perHead = Size::constant(c.hashes) * dh * halfBuckets;
  return c.lshHf ? Size::constant(c.heads) * perHead : perHead;
}

/// Index of the rotations' buckets / 2 dimension: [hashes, dh, nb/2] or
/// Hugging Face's [heads, dh, hashes, nb/2].
unsigned rotationHalfDim(const AttentionConfig &c) { return c.lshHf ? 3 : 2; }

//===----------------------------------------------------------------------===//
// CPU: one parameter block, forward and backward
//===----------------------------------------------------------------------===//

/// NNCC_ATTN_* of `kind`.
Size kindCode(AttentionKind kind) {
  switch (kind) {
  case AttentionKind::dense:
    return Size::constant(NNCC_ATTN_DENSE, "NNCC_ATTN_DENSE");
  case AttentionKind::dilated:
    return Size::constant(NNCC_ATTN_DILATED, "NNCC_ATTN_DILATED");
  case AttentionKind::lsh:
    return Size::constant(NNCC_ATTN_LSH, "NNCC_ATTN_LSH");
  case AttentionKind::local:
    return Size::constant(NNCC_ATTN_LOCAL, "NNCC_ATTN_LOCAL");
  }
  llvm_unreachable("attention kind");
}

/// The counter offset of attention dropout (Kernels.h's counters: B*H*T*T
/// weights, times the hash rounds for LSH; batch-major, so micro-batches
/// draw their rows' masks; docs/training.md, "Random streams").
std::string attentionDropoutOffset(const AttentionConfig &c, const std::string &B,
                                   const std::string &T) {
  std::string rounds = c.kind == AttentionKind::lsh ? std::to_string(c.hashes) : "1";
  return "nncc_ms_rng_offset(m, (uint64_t)(" + B + ") * " + std::to_string(c.heads) + "ULL * " +
         rounds + "ULL * (uint64_t)(" + T + ") * (uint64_t)(" + T + "))";
}

/// Prints `nncc_attention_params p` for `c` and returns its workspace. The LSH
/// rotations, when not given, are drawn into a workspace slot from the op's
/// seed (stream 0x15A), the same values in the forward and the backward.
FailureOr<std::string> emitCpuParams(LaunchEmitter &e, const AttentionConfig &c,
                                     const std::string &B, const std::string &T,
                                     const std::string &dh, const Size &Bsize,
                                     const Size &Tsize, const Size &dhSize) {
  std::string p = "nncc_attention_params p; memset(&p, 0, sizeof(p)); ";
  p += "p.causal = " + LaunchEmitter::flag(c.causal) + "; p.scale = " + fmtDouble(c.scale) + "; ";
  std::string rotGiven;
  std::optional<Size> rotBytes;
  switch (c.kind) {
  case AttentionKind::dense:
    p += "p.kind = NNCC_ATTN_DENSE; ";
    break;
  case AttentionKind::dilated:
    p += "p.kind = NNCC_ATTN_DILATED; p.window = " + std::to_string(c.window) +
         "; p.dilation = " + std::to_string(c.dilation) + "; ";
    if (!c.global.empty())
      p += "static const int32_t kGlobal[] = {" + globalList(c.global) +
           "}; p.global_pos = kGlobal; p.n_global = " + std::to_string(c.global.size()) + "; ";
    if (c.globalMask)
      p += "p.global_mask = " + e.name(c.globalMask) + "; ";
    if (c.dilatedHf)
      p += "p.dilated_convention = NNCC_DILATED_HF; ";
    break;
  case AttentionKind::lsh:
    p += "p.kind = NNCC_ATTN_LSH; p.n_hashes = " + std::to_string(c.hashes) +
         "; p.chunk = " + std::to_string(c.chunk) +
         "; p.lsh_convention = " + (c.lshHf ? "NNCC_LSH_HF" : "NNCC_LSH_NNCC") + "; ";
    if (c.padToMultiple > 0)
      p += "p.pad_to_multiple = " + std::to_string(c.padToMultiple) +
           "; p.pad_above = " + std::to_string(c.padAbove) + "; ";
    if (c.rotations) {
      auto half = e.dim(c.rotations, rotationHalfDim(c));
      if (failed(half))
        return failure();
      p += "p.n_buckets = (int32_t)(2 * " + *half + "); ";
      // Not in the workspace-size expression (no buffers there).
      rotGiven = "p.rotations = " + e.name(c.rotations) + "; ";
    } else {
      p += "p.n_buckets = (int32_t)nncc_gen_lsh_buckets(" + T + ", " + std::to_string(c.chunk) +
           "); ";
      rotBytes = drawnRotationCount(c, Tsize, dhSize) * Size::realBytes();
    }
    break;
  case AttentionKind::local:
    p += "p.kind = NNCC_ATTN_LOCAL; p.chunk = " + std::to_string(c.chunk) +
         "; p.local_chunks_before = " + std::to_string(c.chunksBefore) +
         "; p.local_chunks_after = " + std::to_string(c.chunksAfter) + "; ";
    if (c.padToMultiple > 0)
      p += "p.pad_to_multiple = " + std::to_string(c.padToMultiple) +
           "; p.pad_above = " + std::to_string(c.padAbove) + "; ";
    break;
  }
  // nncc_attention[_backward]_workspace_size of this parameter block.
  std::string ws = e.workspace(Size::call(
      size_fn::attentionCoreWorkspace,
      {kindCode(c.kind), Bsize, Tsize, Size::constant(static_cast<int64_t>(c.global.size())),
       Size::constant(c.globalMask ? 1 : 0)}));
  e.out() << p << rotGiven << "\n";
  // Training only (nn-inference-semantics zeroes the rate in inference): the step
  // offset makes every step draw a new mask, the backward the same one.
  if (c.dropout > 0)
    e.out() << "p.dropout = " << fmtDouble(c.dropout) << "; p.dropout_seed = nncc_ms_rng_key(m, "
            << c.seed << "ULL); p.dropout_offset = " << attentionDropoutOffset(c, B, T) << ";\n";
  if (rotBytes) {
    e.out() << "real_t *rot = (real_t *)" << e.workspace(*rotBytes) << ";\n";
    e.out() << "NNCC_RNG_NORMAL(rot, (uint64_t)(" << rotBytes->str() << " / sizeof(real_t)), "
            << c.seed << "ULL, 0x15AULL, 0, 0, 1);\n";
    e.out() << "p.rotations = rot;\n";
  }
  return ws;
}

/// Pointers to Q, K and V inside the packed projection `qkv` (row stride
/// ld): [Q | K | V], or [QK | V] for LSH's shared query-key.
struct PackedQKV {
  std::string q, k, v;
};
PackedQKV unpack(const std::string &base, const std::string &E, AttentionKind kind,
                 llvm::StringRef nullPointer) {
  if (kind == AttentionKind::lsh)
    return {base, "(" + nullPointer.str() + ")NULL", base + " + " + E};
  return {base, base + " + " + E, base + " + 2 * " + E};
}

//===----------------------------------------------------------------------===//
// CUDA: one launcher per kind
//===----------------------------------------------------------------------===//

/// Head size, launcher template argument and score scale of a CUDA call.
struct CudaHead {
  std::string dh;         // C++ expression
  std::optional<Size> dhSize; // the same, as a Size
  std::string dhTemplate; // "32" / "64" / "128" (only that kernel built) or "0"
  std::string scale;      // initialiser of the local `scale`
};

/// From the core width `E` (a [B, T, E] buffer `core`, expression E):
/// static when the model width is, else a run-time value.
FailureOr<CudaHead> cudaHead(LaunchEmitter &e, Operation *op, const AttentionConfig &c,
                             Value core, const Size &E) {
  nncc::Dim width = e.bufferType(core).getDim(2);
  int64_t staticDh = width.isStatic() ? width.getSize() / c.heads : -1;
  if (staticDh > 256)
    return op->emitError("the CUDA attention kernels serve head sizes up to 256, got ")
           << staticDh;
  // The bf16 dense and dilated cores are the tensor-core tile kernels
  // (Attention.cuh's kMaxTileHeadDim); a run-time head size above it fails
  // at the launch. LSH widens bf16 to fp32 kernels: up to 256 as f32.
  if (e.isBf16() && staticDh > 128 && c.kind != AttentionKind::lsh)
    return op->emitError("the bf16 attention kernels serve head sizes up to 128, got ")
           << staticDh;
  CudaHead h;
  h.dhSize = staticDh > 0 ? Size::constant(staticDh)
                          : (E / Size::constant(c.heads)).paren();
  h.dh = h.dhSize->str();
  bool specialised = staticDh == 32 || staticDh == 64 || staticDh == 128;
  h.dhTemplate = specialised ? std::to_string(staticDh) : "0";
  // Hugging Face's LSH keys carry the 1/sqrt(dh): no further scale.
  h.scale = c.scale != 0 ? "(acc_t<real_t>)" + fmtDouble(c.scale)
            : c.lshHf    ? std::string("(acc_t<real_t>)1")
                         : "(acc_t<real_t>)1 / sqrt((acc_t<real_t>)" + h.dh + ")";
  return h;
}

/// The launcher arguments of attention dropout: rate, Philox key (the op's
/// seed and the run seed) and counter offset, the values the CPU puts in
/// nncc_attention_params (the offset only matters, and is only read, when
/// the rate is > 0).
SmallVector<std::string> cudaDropoutArgs(const AttentionConfig &c, const std::string &B,
                                         const std::string &T) {
  std::string seed = std::to_string(c.seed) + "ULL";
  if (c.dropout <= 0)
    return {fmtDouble(c.dropout), seed, "0ULL"};
  return {fmtDouble(c.dropout), "nncc_ms_rng_key(m, " + seed + ")",
          attentionDropoutOffset(c, B, T)};
}

/// Checks of the dilated kind's global positions; prints the static table.
LogicalResult cudaGlobals(LaunchEmitter &e, Operation *op, const AttentionConfig &c,
                          std::string &table) {
  if (c.globalMask || c.dilatedHf)
    return op->emitError("per-example global tokens (global_mask) and dilated attention in "
                         "convention hf (Longformer's global projections) are not supported "
                         "on CUDA yet; compile with --target cpu");
  for (int64_t g : c.global)
    if (g < 0)
      return op->emitError("negative global position ") << g;
  if (c.global.size() > 64)
    return op->emitError("the CUDA banded attention serves up to 64 global positions");
  if (!c.global.empty())
    e.out() << "static const int32_t kGlobal[] = {" << globalList(c.global) << "};\n";
  table = c.global.empty() ? "(const int32_t *)NULL" : "kGlobal";
  return success();
}

/// The LSH launchers' flags argument: kLshHfConvention (2) for Hugging
/// Face's convention, else 0 (LshAttention.cuh).
std::string lshFlags(const AttentionConfig &c) { return c.lshHf ? "2" : "0"; }

/// Prints `nbuckets` and the LSH rotations in acc_t<real_t> (bf16: fp32):
/// the op's (bf16 ones widened into workspace), or drawn on the device from
/// the op's seed (the CPU's values); returns the rotations' pointer
/// expression.
FailureOr<std::string> cudaLshRotations(LaunchEmitter &e, Operation *op,
                                        const AttentionConfig &c, const Size &T,
                                        const Size &dh) {
  if (c.padToMultiple > 0)
    return op->emitError("LSH attention with ReformerModel's padding (pad_to_multiple) is not "
                         "supported on CUDA yet; compile with --target cpu");
  if (c.hashes > 32)
    return op->emitError("the CUDA LSH attention serves up to 32 hash rounds");
  if (c.rotations) {
    auto half = e.dimSize(c.rotations, rotationHalfDim(c));
    if (failed(half))
      return failure();
    e.out() << "const int64_t nbuckets = 2 * " << half->str() << ";\n";
    Size perHead = Size::constant(c.hashes) * dh * *half;
    Size count = c.lshHf ? Size::constant(c.heads) * perHead : perHead;
    e.out() << "const acc_t<real_t> *rot = lsh_rotations_acc<real_t>(" << e.name(c.rotations)
            << ", " << count.str() << ", "
            << e.workspace(Size::call(size_fn::cudaLshRotationsAccBytes, {count}))
            << ", stream);\n";
    e.out() << e.checked("cudaGetLastError()");
    return std::string("rot");
  }
  e.out() << "const int64_t nbuckets = nncc_gen_lsh_buckets(" << T.str() << ", " << c.chunk
          << ");\n";
  Size count = drawnRotationCount(c, T, dh);
  e.out() << "acc_t<real_t> *rot = (acc_t<real_t> *)" << e.workspace(count * Size::accBytes())
          << ";\n";
  e.out() << "const int64_t nrot = " << count.str() << ";\n";
  e.out() << "// N(0, 1) rotations from Philox(seed " << c.seed << "), the CPU's values.\n";
  e.out() << "lsh_rotations_kernel<real_t><<<grid_for(nrot, 256), 256, 0, stream>>>(nrot, "
          << c.seed << "ULL, rot);\n";
  e.out() << e.checked("cudaGetLastError()");
  return std::string("rot");
}

/// The local kind has no CUDA kernel yet.
LogicalResult localOnCuda(Operation *op) {
  return op->emitError("local attention (Reformer's LocalSelfAttention) is not supported on "
                       "CUDA yet; compile with --target cpu");
}

/// Forward cores. Inference (no dropout, no kept log-sum-exp) calls the
/// inference launchers; a training forward the *_train ones, which add the
/// dropout and write `lse` [B, H, T] for nnk.attention_grad.
LogicalResult emitCudaAttention(LaunchEmitter &e, Operation *op, const AttentionConfig &c,
                                Value qkv, Value mask, Value out, Value lse) {
  auto B = e.dim(qkv, 0), T = e.dim(qkv, 1), ld = e.dim(qkv, 2), E = e.dim(out, 2);
  auto Bsize = e.dimSize(qkv, 0), Tsize = e.dimSize(qkv, 1);
  if (failed(B) || failed(T) || failed(ld) || failed(E) || failed(Bsize) || failed(Tsize))
    return failure();
  FailureOr<Size> Esize = e.dimSize(out, 2);
  if (failed(Esize))
    return failure();
  FailureOr<CudaHead> head = cudaHead(e, op, c, out, *Esize);
  if (failed(head))
    return failure();
  const std::string &dh = head->dh, &dhTemplate = head->dhTemplate;
  bool specialised = dhTemplate != "0";
  bool train = c.dropout > 0 || lse;
  std::string maskArg = e.nameOr(mask, "const uint8_t *"), causal = LaunchEmitter::flag(c.causal);
  std::string heads = std::to_string(c.heads);
  std::string lseArg = e.nameOr(lse, "real_t *");
  SmallVector<std::string> drop = cudaDropoutArgs(c, *B, *T);
  PackedQKV p = unpack(e.name(qkv), *E, c.kind, "const real_t *");
  e.out() << "{\n";
  e.out().indent();
  e.out() << "const acc_t<real_t> scale = " << head->scale << ";\n";
  switch (c.kind) {
  case AttentionKind::local:
    return localOnCuda(op);
  case AttentionKind::dense: {
    if (train) {
      SmallVector<std::string> args = {"(int)" + dh, "(int)" + *B, "(int)" + *T, heads, p.q,
                                       p.k, p.v, *ld, e.name(out), *E, maskArg, causal, "scale",
                                       lseArg};
      args.append(drop);
      args.push_back("stream");
      e.call({"launch_flash_attention_train<real_t, " + dhTemplate + ">", args});
      break;
    }
    SmallVector<std::string> args = {"(int)" + *B, "(int)" + *T, heads, p.q, p.k, p.v, *ld,
                                     e.name(out), *E, maskArg, causal, "scale",
                                     "(acc_t<real_t> *)NULL", "stream"};
    if (specialised) {
      e.call({"launch_flash_attention<real_t, " + dh + ">", args});
    } else {
      args.insert(args.begin(), "(int)" + dh);
      e.call({"launch_flash_attention_dyn<real_t>", args});
    }
    break;
  }
  case AttentionKind::dilated: {
    std::string table;
    if (failed(cudaGlobals(e, op, c, table)))
      return failure();
    std::string ws = e.workspace(
        Size::call(size_fn::cudaDilatedAttentionScratch,
                   {*Tsize, Size::constant(static_cast<int64_t>(c.global.size()))}));
    SmallVector<std::string> args = {"(int)" + dh, "(int)" + *B, "(int)" + *T, heads, p.q, p.k,
                                     p.v, *ld, e.name(out), *E, maskArg, causal, "scale",
                                     std::to_string(c.window), std::to_string(c.dilation), table,
                                     std::to_string(c.global.size())};
    if (train) {
      args.push_back(lseArg);
      args.append(drop);
      args.append({ws, "stream"});
      e.call({"launch_dilated_attention_train<real_t, " + dhTemplate + ">", args});
    } else {
      args.append({ws, "stream"});
      e.call({"launch_dilated_attention_dyn<real_t, " + dhTemplate + ">", args});
    }
    break;
  }
  case AttentionKind::lsh: {
    FailureOr<std::string> rot = cudaLshRotations(e, op, c, *Tsize, *head->dhSize);
    if (failed(rot))
      return failure();
    // The normalised keys and per-round outputs in acc_t<real_t>.
    std::string ws = e.workspace(Size::call(
        size_fn::cudaLshAttentionScratch, {*Bsize, *Tsize, Size::constant(c.heads), *head->dhSize,
                                           Size::constant(c.hashes), Size::accBytes()}));
    SmallVector<std::string> args = {"(int)" + dh, "(int)" + *B, "(int)" + *T, heads,
                                     std::to_string(c.hashes), "(int)nbuckets",
                                     std::to_string(c.chunk), causal, "scale", lshFlags(c), p.q,
                                     p.v, *ld,
                                     *rot, e.name(out), *E, maskArg};
    if (train) {
      args.push_back(lseArg);
      args.append(drop);
      args.append({ws, "stream"});
      e.call({"launch_lsh_attention_train<real_t, " + dhTemplate + ">", args});
    } else {
      args.append({ws, "stream"});
      e.call({"launch_lsh_attention<real_t, " + dhTemplate + ">", args});
    }
    break;
  }
  }
  e.out().unindent();
  e.out() << "}\n";
  return success();
}

/// nnk.attention_grad: one backward launcher per kind
/// (AttentionBackward.cuh), reading the forward's kept output and
/// log-sum-exp (`saved`) or recomputing them (into `core` when given).
LogicalResult emitCudaAttentionGrad(LaunchEmitter &e, nnk::AttentionGradOp o,
                                    const AttentionConfig &c) {
  Operation *op = o.getOperation();
  Value qkv = o.getQkv(), dout = o.getDout();
  auto B = e.dim(qkv, 0), T = e.dim(qkv, 1), ld = e.dim(qkv, 2), E = e.dim(dout, 2);
  auto Bsize = e.dimSize(qkv, 0), Tsize = e.dimSize(qkv, 1);
  if (failed(B) || failed(T) || failed(ld) || failed(E) || failed(Bsize) || failed(Tsize))
    return failure();
  FailureOr<Size> Esize = e.dimSize(dout, 2);
  if (failed(Esize))
    return failure();
  FailureOr<CudaHead> head = cudaHead(e, op, c, dout, *Esize);
  if (failed(head))
    return failure();
  const std::string &dh = head->dh;
  std::string launcherArgs = "<real_t, " + head->dhTemplate + ">";
  std::string maskArg = e.nameOr(o.getMask(), "const uint8_t *"),
              causal = LaunchEmitter::flag(c.causal);
  std::string heads = std::to_string(c.heads);
  bool saved = static_cast<bool>(o.getSavedOut());
  // The forward's kept output and log-sum-exp, or where the recomputed
  // output goes (the out-projection's weight gradient reads it).
  SmallVector<std::string> fwd =
      saved ? SmallVector<std::string>{e.name(o.getSavedOut()), e.name(o.getSavedLse()),
                                       "(real_t *)NULL"}
            : SmallVector<std::string>{"(const real_t *)NULL", "(const real_t *)NULL",
                                       e.nameOr(o.getCore(), "real_t *")};
  SmallVector<std::string> drop = cudaDropoutArgs(c, *B, *T);
  PackedQKV x = unpack(e.name(qkv), *E, c.kind, "const real_t *");
  PackedQKV dx = unpack(e.name(o.getDqkv()), *E, c.kind, "real_t *");
  e.out() << "{\n";
  e.out().indent();
  e.out() << "const acc_t<real_t> scale = " << head->scale << ";\n";
  SmallVector<std::string> args = {"(int)" + dh, "(int)" + *B, "(int)" + *T, heads};
  switch (c.kind) {
  case AttentionKind::local:
    return localOnCuda(op);
  case AttentionKind::dense: {
    std::string ws = e.workspace(Size::call(
        size_fn::cudaFlashAttentionBackwardWorkspace,
        {*Bsize, *Tsize, Size::constant(c.heads), *head->dhSize, Size::realBytes(),
         Size::constant(saved ? 0 : 1)}));
    args.append({x.q, x.k, x.v, *ld, e.name(dout), *E, dx.q, dx.k, dx.v, *ld, maskArg, causal,
                 "scale"});
    args.append(drop);
    args.append(fwd);
    args.append({ws, "stream"});
    e.call({"launch_flash_attention_backward" + launcherArgs, args});
    break;
  }
  case AttentionKind::dilated: {
    std::string table;
    if (failed(cudaGlobals(e, op, c, table)))
      return failure();
    std::string ng = std::to_string(c.global.size());
    std::string ws = e.workspace(Size::call(
        size_fn::cudaDilatedAttentionBackwardWorkspace,
        {*Bsize, *Tsize, Size::constant(c.heads), *head->dhSize,
         Size::constant(static_cast<int64_t>(c.global.size())), Size::realBytes(),
         Size::constant(saved ? 0 : 1)}));
    args.append({x.q, x.k, x.v, *ld, e.name(dout), *E, dx.q, dx.k, dx.v, *ld, maskArg, causal,
                 "scale", std::to_string(c.window), std::to_string(c.dilation), table, ng});
    args.append(drop);
    args.append(fwd);
    args.append({ws, "stream"});
    e.call({"launch_dilated_attention_backward" + launcherArgs, args});
    break;
  }
  case AttentionKind::lsh: {
    FailureOr<std::string> rot = cudaLshRotations(e, op, c, *Tsize, *head->dhSize);
    if (failed(rot))
      return failure();
    std::string ws = e.workspace(Size::call(
        size_fn::cudaLshAttentionBackwardWorkspace,
        {*Bsize, *Tsize, Size::constant(c.heads), *head->dhSize, Size::constant(c.hashes),
         Size::realBytes(), Size::constant(saved ? 0 : 1)}));
    // The shared QK's gradient (query and key path) into dx.q, dv into dx.v.
    args.append({std::to_string(c.hashes), "(int)nbuckets", std::to_string(c.chunk), causal,
                 "scale", lshFlags(c), x.q, x.v, *ld, *rot, e.name(dout), *E, dx.q, dx.v, *ld,
                 maskArg});
    args.append(drop);
    args.append(fwd);
    args.append({ws, "stream"});
    e.call({"launch_lsh_attention_backward" + launcherArgs, args});
    break;
  }
  }
  e.out().unindent();
  e.out() << "}\n";
  return success();
}

/// The sizes of a CPU attention call: from the packed projection and the
/// core width, and the workspace of its parameter block.
struct CpuAttentionCall {
  std::string B, T, ld, E, dh, workspace;
};

/// A CPU attention core call in its own scope: the parameter block for `c`
/// and its workspace, then the kernel call `describe` builds.
LogicalResult emitCpuAttention(LaunchEmitter &e, const AttentionConfig &c, Value qkv,
                               Value core,
                               llvm::function_ref<KernelCall(const CpuAttentionCall &)> describe) {
  FailureOr<Size> B = e.dimSize(qkv, 0), T = e.dimSize(qkv, 1), E = e.dimSize(core, 2);
  FailureOr<std::string> ld = e.dim(qkv, 2);
  if (failed(B) || failed(T) || failed(ld) || failed(E))
    return failure();
  Size dh = (*E / Size::constant(c.heads)).paren();
  CpuAttentionCall s{B->str(), T->str(), *ld, E->str(), dh.str(), ""};
  e.out() << "{\n";
  e.out().indent();
  FailureOr<std::string> ws = emitCpuParams(e, c, s.B, s.T, s.dh, *B, *T, dh);
  if (failed(ws))
    return failure();
  s.workspace = *ws;
  e.call(describe(s));
  e.out().unindent();
  e.out() << "}\n";
  return success();
}

template <typename AttentionOp>
LogicalResult emitAttention(LaunchEmitter &e, AttentionOp o) {
  AttentionConfig c = configOf(o.getOperation());
  Value qkv = o.getQkv(), out = o.getOut();
  if (e.isCuda())
    return emitCudaAttention(e, o.getOperation(), c, qkv, o.getMask(), out, o.getLse());
  return emitCpuAttention(
      e, c, qkv, out, [&](const CpuAttentionCall &s) {
        PackedQKV p = unpack(e.name(qkv), s.E, c.kind, "const real_t *");
        if (c.kind == AttentionKind::lsh)
          p.k = e.name(qkv); // the forward reads the shared QK as both
        return KernelCall{"NNCC_KFN(nncc_attention)",
                          {"&p", s.B, s.T, std::to_string(c.heads), s.dh, p.q, p.k, p.v, s.ld,
                           e.name(out), s.E, e.nameOrNull(o.getMask()), s.workspace, "NULL",
                           e.nameOrNull(o.getLse())}};
      });
}

LogicalResult emitAttentionGrad(LaunchEmitter &e, nnk::AttentionGradOp o) {
  AttentionConfig c = configOf(o.getOperation());
  if (e.isCuda())
    return emitCudaAttentionGrad(e, o, c);
  return emitCpuAttention(
      e, c, o.getQkv(), o.getDout(),
      [&](const CpuAttentionCall &s) {
        PackedQKV x = unpack(e.name(o.getQkv()), s.E, c.kind, "const real_t *");
        PackedQKV dx = unpack(e.name(o.getDqkv()), s.E, c.kind, "real_t *");
        // The forward's kept output and log-sum-exp, or where to put the
        // recomputed output (the out-projection's weight gradient reads it).
        std::string saved = o.getSavedOut()
                                ? e.name(o.getSavedOut()) + ", " + e.name(o.getSavedLse())
                                : e.nameOrNull(o.getCore()) + ", NULL";
        return KernelCall{"NNCC_KFN(nncc_attention_backward)",
                          {"&p", s.B, s.T, std::to_string(c.heads), s.dh, x.q, x.k, x.v, s.ld,
                           e.name(o.getDout()), s.E, dx.q, dx.k, dx.v, s.ld,
                           e.nameOrNull(o.getMask()), s.workspace, saved}};
      });
}

} // namespace

void attachAttentionLaunches(MLIRContext &ctx) {
  attachLaunch<nnk::FlashAttentionOp, emitAttention<nnk::FlashAttentionOp>, Bf16Kernel::Yes, CudaAttention>(ctx);
  attachLaunch<nnk::BandedAttentionOp, emitAttention<nnk::BandedAttentionOp>, Bf16Kernel::Yes, CudaAttention>(
      ctx);
  attachLaunch<nnk::LSHAttentionOp, emitAttention<nnk::LSHAttentionOp>, Bf16Kernel::Yes, CudaAttention | CudaLshAttention>(ctx);
  attachLaunch<nnk::LocalAttentionOp, emitAttention<nnk::LocalAttentionOp>, Bf16Kernel::No, CudaAttention>(ctx);
  attachLaunch<nnk::AttentionGradOp, emitAttentionGrad, Bf16Kernel::Yes, CudaAttentionBackward>(ctx);
}

} // namespace nncc::target
