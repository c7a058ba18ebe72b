//===- CppEmitter.cpp - nnk -> host C++ (the CPU twin of every kernel) ----===//
//
// Prints <model>.cpp: the signature tables and buffer plan (ModelEmitter),
// then `forward_cpu`, one block per nnk op: a call into libnncc_kernels' C
// ABI, an OpenMP loop for nnk.elementwise, or a data-movement helper of
// libnncc_model_support. The float type is the single alias `real_t`
// (NNCC_PRECISION_F64 switches it and the kernel suffix to double / _f64).
//
//===----------------------------------------------------------------------===//
#include "nncc/Target/Emitters.h"

#include "../Common/ModelEmitter.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace nncc::target {
namespace {

class CppEmitter : public ModelEmitter {
public:
  using ModelEmitter::ModelEmitter;
  LogicalResult emit(raw_indented_ostream &os, bool withCuda);

private:
  bool needsRecurrent = false;
  std::string body; // forward_cpu's statements
  LogicalResult emitOp(raw_indented_ostream &os, Operation *op);
  LogicalResult emitStridedCopy(raw_indented_ostream &os, Operation *op, Value src,
                                Value dst, int64_t axis, const std::string &offsetExpr,
                                bool intoDst);
  std::string check(Operation *op, const std::string &call) {
    return "NNCC_GEN_CHECK(" + call + ", " + cString(launchComment(op)) + ");\n";
  }
};

void emitPrecision(raw_indented_ostream &os) {
  os << "// The float type of every kernel: one alias, f64 is a switch\n"
        "// (compile with -DNNCC_PRECISION_F64).\n"
        "#ifdef NNCC_PRECISION_F64\n"
        "typedef double real_t;\n"
        "#define NNCC_REAL_DTYPE NNCC_DTYPE_F64\n"
        "#define NNCC_PRECISION \"f64\"\n"
        "#define NNCC_KFN(name) name##_f64\n"
        "#define NNCC_MS_REDUCE nncc_ms_reduce_f64\n"
        "#define NNCC_RNG_NORMAL nncc_rng_fill_normal_f64\n"
        "#else\n"
        "typedef float real_t;\n"
        "#define NNCC_REAL_DTYPE NNCC_DTYPE_F32\n"
        "#define NNCC_PRECISION \"f32\"\n"
        "#define NNCC_KFN(name) name##_f32\n"
        "#define NNCC_MS_REDUCE nncc_ms_reduce_f32\n"
        "#define NNCC_RNG_NORMAL nncc_rng_fill_normal_f32\n"
        "#endif\n"
        "#ifndef NNCC_MODEL_EXPORT\n"
        "#define NNCC_MODEL_EXPORT __attribute__((visibility(\"default\")))\n"
        "#endif\n\n";
}

const char *kRecurrentPrelude = R"cpp(
// One layer and direction of a recurrent stack over a precomputed input
// projection (nnk.recurrent_scan): per step one GEMM h . W_hh^T over all rows,
// then the gate math of RecurrentMath.h (shared with the CUDA kernel) on the
// rows still inside their length. ws: [B, H] h, [B, H] c, [B, G*H], [B, H] x2.
template <typename T, typename L>
static int nncc_gen_recurrent_scan(int cell, int64_t B, int64_t Tn, int64_t H,
                                   int64_t D, int64_t state_index, int reverse,
                                   const T *xproj, const T *whh, const T *bhh,
                                   const T *h0, const T *c0, const L *lengths, T *y,
                                   T *hn, T *cn, T *ws) {
  using namespace nncc::kernels;
  const int64_t G = cell_gates(cell), GH = G * H, BH = B * H;
  T *h = ws, *c = h + BH, *hg = c + BH, *rh = hg + B * GH, *hrh = rh + BH;
  for (int64_t i = 0; i < BH; ++i) {
    h[i] = h0 ? h0[state_index * BH + i] : T(0);
    c[i] = c0 ? c0[state_index * BH + i] : T(0);
    rh[i] = T(0);
  }
  const int64_t ldy = D * H, col = reverse ? H : 0;
  for (int64_t s = 0; s < Tn; ++s) {
    int rc = NNCC_KFN(nncc_gemm)(0, 1, B, GH, H, T(1), h, H, whh, H, T(0), hg, GH);
    if (rc)
      return rc;
    if (cell == NNCC_CELL_GRU_CHO2014) {
      for (int64_t b = 0; b < B; ++b) {
        const int64_t len = lengths ? (int64_t)lengths[b] : Tn;
        if (s >= len)
          continue;
        const int64_t t = reverse ? len - 1 - s : s;
        const T *xg = xproj + (b * Tn + t) * GH;
        for (int64_t j = 0; j < H; ++j) {
          T r, z;
          rh[b * H + j] = gru_cho_gates(xg, hg + b * GH, bhh, (int)H, (int)j, h[b * H + j], r, z);
        }
      }
      rc = NNCC_KFN(nncc_gemm)(0, 1, B, H, H, T(1), rh, H, whh + 2 * H * H, H, T(0), hrh, H);
      if (rc)
        return rc;
    }
#pragma omp parallel for if (B * H > 4096)
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = lengths ? (int64_t)lengths[b] : Tn;
      if (s >= len)
        continue;
      const int64_t t = reverse ? len - 1 - s : s;
      const T *xg = xproj + (b * Tn + t) * GH;
      const T *g = hg + b * GH;
      T *yr = y + (b * Tn + t) * ldy + col;
      for (int64_t j = 0; j < H; ++j) {
        T &hj = h[b * H + j];
        switch (cell) {
        case NNCC_CELL_RNN_TANH:
        case NNCC_CELL_RNN_RELU:
          hj = rnn_unit(xg, g, bhh, (int)j, cell == NNCC_CELL_RNN_RELU, (T *)nullptr, (int)H);
          break;
        case NNCC_CELL_LSTM: {
          T cn2, hn2;
          lstm_unit(xg, g, bhh, (int)H, (int)j, c[b * H + j], cn2, hn2, (T *)nullptr);
          c[b * H + j] = cn2;
          hj = hn2;
          break;
        }
        case NNCC_CELL_GRU:
          hj = gru_unit(xg, g, bhh, (int)H, (int)j, hj, (T *)nullptr);
          break;
        default: {
          T r, z;
          gru_cho_gates(xg, g, bhh, (int)H, (int)j, hj, r, z);
          hj = gru_cho_update(xg, hrh[b * H + j], bhh, (int)H, (int)j, hj, r, z, (T *)nullptr);
          break;
        }
        }
        yr[j] = hj;
      }
    }
  }
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = lengths ? (int64_t)lengths[b] : Tn;
    for (int64_t t = len < 0 ? 0 : len; t < Tn; ++t)
      for (int64_t j = 0; j < H; ++j)
        y[(b * Tn + t) * ldy + col + j] = T(0);
  }
  for (int64_t i = 0; i < BH; ++i) {
    if (hn)
      hn[state_index * BH + i] = h[i];
    if (cn)
      cn[state_index * BH + i] = c[i];
  }
  return 0;
}
)cpp";

LogicalResult CppEmitter::emit(raw_indented_ostream &os, bool withCuda) {
  if (failed(analyze()))
    return failure();
  // Print the launch sequence first: it adds workspace buffers to the plan.
  std::string fwd;
  {
    llvm::raw_string_ostream fs(fwd);
    raw_indented_ostream f(fs);
    f << "static nncc_status forward_cpu(nncc_model *m, nncc_error *err) {\n";
    f.indent();
    if (failed(emitForwardPrologue(f)))
      return failure();
    for (Operation &op : forward.getBody().front().without_terminator())
      if (failed(emitOp(f, &op)))
        return failure();
    f << "return NNCC_OK;\n";
    f.unindent();
    f << "}\n";
  }

  os << "// Generated by nncc from model '" << modelName
     << "': host C++ (the CPU launch sequence) and the C ABI of nncc_model.h.\n"
     << "// Do not edit; regenerate with `nncc compile`.\n"
     << "#include \"nncc/Runtime/ModelSupport.h\"\n"
     << "#include \"nncc/Kernels/Kernels.h\"\n";
  if (needsRecurrent)
    os << "#include \"nncc/Kernels/RecurrentMath.h\"\n";
  os << "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n\n";
  emitPrecision(os);
  os << "#define NNCC_GEN_CHECK(call, what)                                   \\\n"
        "  do {                                                               \\\n"
        "    int rc_ = (call);                                                \\\n"
        "    if (rc_ != 0)                                                    \\\n"
        "      return nncc_ms_kernel_status(rc_, what, err);                  \\\n"
        "  } while (0)\n\n";
  os << "namespace {\n";
  emitMathPrelude(os, "static inline");
  os << "static inline int64_t nncc_gen_lsh_buckets(int64_t T, int64_t chunk) {\n"
        "  int64_t n = 2 * (T / chunk), bits = 0;\n"
        "  while (n) { ++bits; n >>= 1; }\n"
        "  int64_t b = bits > 0 ? (int64_t)1 << (bits - 1) : 1;\n"
        "  return b < 2 ? 2 : b;\n}\n";
  if (needsRecurrent)
    os << kRecurrentPrelude;
  os << "} // namespace\n\n";
  if (failed(emitTables(os, withCuda)))
    return failure();
  os << "// ---- the CPU launch sequence ----\n";
  os << fwd;
  return success();
}

LogicalResult CppEmitter::emitStridedCopy(raw_indented_ostream &os, Operation *op,
                                          Value src, Value dst, int64_t axis,
                                          const std::string &offsetExpr, bool intoDst) {
  // Copies the piece `src` into `dst` at `offsetExpr` along `axis`
  // (concat), or the piece of `src` at the offset into `dst` (split).
  auto piece = cast<nnk::BufferType>(intoDst ? src.getType() : dst.getType());
  auto whole = cast<nnk::BufferType>(intoDst ? dst.getType() : src.getType());
  int64_t r = piece.getRank();
  std::string shape, pieceStrides, wholeStrides;
  for (int64_t d = 0; d < r; ++d) {
    FailureOr<std::string> e = dimExpr(op, piece.getDim(d));
    FailureOr<std::string> ps = numel(op, piece, d + 1);
    FailureOr<std::string> ws = numel(op, whole, d + 1);
    if (failed(e) || failed(ps) || failed(ws))
      return failure();
    shape += (d ? ", " : "") + *e;
    pieceStrides += (d ? ", " : "") + *ps;
    wholeStrides += (d ? ", " : "") + *ws;
  }
  FailureOr<std::string> axisStride = numel(op, whole, axis + 1);
  if (failed(axisStride))
    return failure();
  std::string base = "(" + offsetExpr + ") * " + *axisStride;
  os << "{\n";
  os.indent();
  os << "const int64_t shape[] = {" << shape << "};\n";
  os << "const int64_t ps[] = {" << pieceStrides << "};\n";
  os << "const int64_t ws[] = {" << wholeStrides << "};\n";
  if (intoDst)
    os << "nncc_ms_copy_nd(sizeof(*" << name(dst) << "), " << r << ", shape, "
       << name(dst) << " + " << base << ", ws, " << name(src) << ", ps);\n";
  else
    os << "nncc_ms_copy_nd(sizeof(*" << name(dst) << "), " << r << ", shape, " << name(dst)
       << ", ps, " << name(src) << " + " << base << ", ws);\n";
  os.unindent();
  os << "}\n";
  return success();
}

LogicalResult CppEmitter::emitOp(raw_indented_ostream &os, Operation *op) {
  if (isa<nnk::AllocOp, nnk::WeightOp>(op))
    return success();
  os << "// " << launchComment(op) << "\n";
  auto T = [](Value v) { return cast<nnk::BufferType>(v.getType()); };
  auto N = [&](Value v, int64_t from = 0, int64_t to = -1) {
    return numel(op, T(v), from, to);
  };
  auto D = [&](Value v, int64_t i) {
    auto t = T(v);
    return dimExpr(op, t.getDim(i < 0 ? t.getRank() + i : i));
  };

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<nnk::FillOp>([&](auto o) -> LogicalResult {
        auto n = N(o.getOut());
        if (failed(n))
          return failure();
        os << "for (int64_t i = 0; i < " << *n << "; ++i) " << name(o.getOut())
           << "[i] = (" << *cType(op, T(o.getOut()).getElementType()) << ")"
           << fmtDouble(o.getValue()) << ";\n";
        return success();
      })
      .Case<nnk::CopyOp>([&](auto o) -> LogicalResult {
        auto n = N(o.getOut());
        if (failed(n))
          return failure();
        os << "memcpy(" << name(o.getOut()) << ", " << name(o.getIn()) << ", " << *n
           << " * sizeof(*" << name(o.getOut()) << "));\n";
        return success();
      })
      .Case<nnk::ElementwiseOp>([&](nnk::ElementwiseOp o) -> LogicalResult {
        Value out = o->getOperand(o->getNumOperands() - 1);
        auto n = N(out);
        if (failed(n))
          return failure();
        os << "{\n";
        os.indent();
        os << "const int64_t n = " << *n << ";\n";
        os << "#pragma omp parallel for simd if (n > 16384)\n";
        os << "for (int64_t i = 0; i < n; ++i) {\n";
        os.indent();
        for (auto [k, in] : llvm::enumerate(o.getInputs())) {
          auto idx = broadcastIndex(op, T(in), T(out), "i");
          auto ct = cType(op, T(in).getElementType());
          if (failed(idx) || failed(ct))
            return failure();
          os << "const " << *ct << " a" << k << " = " << name(in) << "[" << *idx << "];\n";
        }
        if (failed(emitElementwiseBody(os, o, name(out), "i")))
          return failure();
        os.unindent();
        os << "}\n";
        os.unindent();
        os << "}\n";
        return success();
      })
      .Case<nnk::GemmOp>([&](nnk::GemmOp o) -> LogicalResult {
        auto M = N(o.getX(), 0, T(o.getX()).getRank() - 1);
        auto K = D(o.getX(), -1);
        auto Nn = D(o.getWeight(), 0);
        if (failed(M) || failed(K) || failed(Nn))
          return failure();
        os << check(op, "NNCC_KFN(nncc_linear)(" + *M + ", " + *Nn + ", " + *K + ", " +
                            name(o.getX()) + ", " + name(o.getWeight()) + ", " +
                            nameOrNull(o.getBias()) + ", " + nameOrNull(o.getResidual()) +
                            ", " + std::to_string(static_cast<int>(o.getActivation())) +
                            ", " + fmtDouble(o.getAlpha()) + ", " +
                            name(o.getOut()) + ")");
        return success();
      })
      .Case<nnk::MatmulOp>([&](nnk::MatmulOp o) -> LogicalResult {
        auto ta = T(o.getLhs()), tb = T(o.getRhs()), tc = T(o.getOut());
        int64_t rc = tc.getRank();
        auto M = D(o.getOut(), -2), Nn = D(o.getOut(), -1), K = D(o.getLhs(), -1);
        auto batch = N(o.getOut(), 0, rc - 2);
        auto aBatch = N(o.getLhs(), 0, ta.getRank() - 2);
        auto bBatch = N(o.getRhs(), 0, tb.getRank() - 2);
        if (failed(M) || failed(Nn) || failed(K) || failed(batch) || failed(aBatch) ||
            failed(bBatch))
          return failure();
        auto sameBatch = [&](nnk::BufferType t) {
          if (t.getRank() == 2)
            return true;
          if (t.getRank() != rc)
            return false;
          for (int64_t i = 0; i < rc - 2; ++i)
            if (t.getDim(i) != tc.getDim(i))
              return false;
          return true;
        };
        if (!sameBatch(ta) || !sameBatch(tb))
          return o.emitError("nnk.matmul: broadcasting batch dims other than a "
                             "missing batch is not supported by the emitters yet");
        os << "for (int64_t bi = 0; bi < " << *batch << "; ++bi)\n";
        os.indent();
        std::string aOff = ta.getRank() == 2 ? "0" : "bi * " + *M + " * " + *K;
        std::string bOff = tb.getRank() == 2 ? "0" : "bi * " + *K + " * " + *Nn;
        os << check(op, "NNCC_KFN(nncc_gemm)(0, 0, " + *M + ", " + *Nn + ", " + *K +
                            ", (real_t)1, " + name(o.getLhs()) + " + " + aOff + ", " + *K +
                            ", " + name(o.getRhs()) + " + " + bOff + ", " + *Nn +
                            ", (real_t)0, " + name(o.getOut()) + " + bi * " + *M + " * " +
                            *Nn + ", " + *Nn + ")");
        os.unindent();
        return success();
      })
      .Case<nnk::LayerNormOp>([&](nnk::LayerNormOp o) -> LogicalResult {
        auto rows = N(o.getX(), 0, T(o.getX()).getRank() - 1);
        auto n = D(o.getX(), -1);
        if (failed(rows) || failed(n))
          return failure();
        os << check(op, "NNCC_KFN(nncc_layer_norm)(" + *rows + ", " + *n + ", " +
                            name(o.getX()) + ", " + nameOrNull(o.getResidual()) + ", " +
                            nameOrNull(o.getWeight()) + ", " + nameOrNull(o.getBias()) +
                            ", " + fmtDouble(o.getEps()) + ", " +
                            name(o.getOut()) + ", " + nameOrNull(o.getSum()) +
                            ", NULL, NULL)");
        return success();
      })
      .Case<nnk::SoftmaxOp>([&](nnk::SoftmaxOp o) -> LogicalResult {
        int64_t axis = o.getAxis();
        auto outer = N(o.getX(), 0, axis), n = D(o.getX(), axis),
             inner = N(o.getX(), axis + 1);
        if (failed(outer) || failed(n) || failed(inner))
          return failure();
        os << check(op, "NNCC_KFN(nncc_softmax)(" + *outer + ", " + *n + ", " + *inner +
                            ", " + name(o.getX()) + ", " + name(o.getOut()) + ")");
        return success();
      })
      .Case<nnk::ReduceOp>([&](nnk::ReduceOp o) -> LogicalResult {
        auto t = T(o.getX());
        if (t.getRank() > 31)
          return o.emitError("nnk.reduce of rank > 31");
        uint32_t mask = 0;
        for (int64_t a : o.getAxes())
          mask |= 1u << a;
        if (o.getAxes().empty())
          mask = (t.getRank() ? (1u << t.getRank()) - 1 : 0);
        std::string shape;
        for (int64_t d = 0; d < t.getRank(); ++d) {
          auto e = D(o.getX(), d);
          if (failed(e))
            return failure();
          shape += (d ? ", " : "") + *e;
        }
        os << "{\n";
        os << "  const int64_t shape[] = {" << (shape.empty() ? "1" : shape) << "};\n";
        os << "  NNCC_MS_REDUCE(" << t.getRank() << ", shape, " << mask << "u, "
           << (o.getKind() == nnk::ReduceKind::mean ? 1 : 0) << ", " << name(o.getX())
           << ", " << name(o.getOut()) << ");\n}\n";
        return success();
      })
      .Case<nnk::EmbeddingOp>([&](nnk::EmbeddingOp o) -> LogicalResult {
        auto n = N(o.getIndices());
        auto V = D(o.getTable(), 0), E = D(o.getTable(), 1);
        if (failed(n) || failed(V) || failed(E))
          return failure();
        bool i32 = T(o.getIndices()).getElementType().isInteger(32);
        os << check(op, std::string(i32 ? "NNCC_KFN(nncc_embedding_i32)("
                                        : "NNCC_KFN(nncc_embedding)(") +
                            *n + ", " + *V + ", " + *E + ", " + name(o.getIndices()) +
                            ", " + name(o.getTable()) + ", " + name(o.getOut()) + ")");
        return success();
      })
      .Case<nnk::SinusoidalPositionOp>([&](auto o) -> LogicalResult {
        auto B = D(o.getX(), 0), Tn = D(o.getX(), 1), E = D(o.getX(), 2);
        if (failed(B) || failed(Tn) || failed(E))
          return failure();
        os << check(op, "NNCC_KFN(nncc_sinusoidal_position)(" + *B + ", " + *Tn + ", " +
                            *E + ", " + name(o.getX()) + ", " + name(o.getOut()) + ")");
        return success();
      })
      .Case<nnk::LossOp>([&](nnk::LossOp o) -> LogicalResult {
        auto ti = T(o.getInput());
        switch (o.getKind()) {
        case nnk::LossKind::mse: {
          auto n = N(o.getInput());
          if (failed(n))
            return failure();
          os << check(op, "NNCC_KFN(nncc_mse_loss)(" + *n + ", " + name(o.getInput()) +
                              ", " + name(o.getTarget()) + ", " + name(o.getOut()) + ")");
          return success();
        }
        case nnk::LossKind::cross_entropy: {
          auto n = N(o.getTarget());
          auto C = D(o.getInput(), -1);
          if (failed(n) || failed(C))
            return failure();
          std::string target = name(o.getTarget());
          if (T(o.getTarget()).getElementType().isInteger(32)) {
            int ws = addWorkspace(op, *n + " * 8");
            os << "int64_t *wide = (int64_t *)nncc_ms_buffer_ptr(m, " << ws << ");\n";
            os << "for (int64_t i = 0; i < " << *n << "; ++i) wide[i] = " << target
               << "[i];\n";
            target = "wide";
          }
          os << check(op, "NNCC_KFN(nncc_cross_entropy)(" + *n + ", " + *C + ", " +
                              name(o.getInput()) + ", " + target + ", " +
                              std::to_string(o.getIgnoreIndex()) + ", " +
                              name(o.getOut()) + ")");
          return success();
        }
        case nnk::LossKind::bce_with_logits: {
          auto rows = N(o.getInput(), 0, ti.getRank() ? ti.getRank() - 1 : 0);
          auto C = ti.getRank() ? D(o.getInput(), -1) : FailureOr<std::string>(std::string("1"));
          if (failed(rows) || failed(C))
            return failure();
          os << check(op, "NNCC_KFN(nncc_bce_with_logits)(" + *rows + ", " + *C + ", " +
                              name(o.getInput()) + ", " + name(o.getTarget()) + ", " +
                              nameOrNull(o.getPosWeight()) + ", " + name(o.getOut()) +
                              ")");
          return success();
        }
        }
        return failure();
      })
      .Case<nnk::TransposeOp>([&](nnk::TransposeOp o) -> LogicalResult {
        auto perm = o.getPerm();
        std::string shape, src, dst;
        for (size_t d = 0; d < perm.size(); ++d) {
          auto e = D(o.getOut(), d);
          auto ss = N(o.getX(), perm[d] + 1);
          auto ds = N(o.getOut(), d + 1);
          if (failed(e) || failed(ss) || failed(ds))
            return failure();
          shape += (d ? ", " : "") + *e;
          src += (d ? ", " : "") + *ss;
          dst += (d ? ", " : "") + *ds;
        }
        os << "{\n  const int64_t shape[] = {" << shape << "}, ss[] = {" << src
           << "}, ds[] = {" << dst << "};\n  nncc_ms_copy_nd(sizeof(*" << name(o.getOut())
           << "), " << perm.size() << ", shape, " << name(o.getOut()) << ", ds, "
           << name(o.getX()) << ", ss);\n}\n";
        return success();
      })
      .Case<nnk::SliceOp>([&](nnk::SliceOp o) -> LogicalResult {
        auto tx = T(o.getX());
        auto starts = o.getStarts(), steps = o.getSteps();
        llvm::SmallDenseSet<int64_t> squeezed;
        for (int64_t s : o.getSqueeze())
          squeezed.insert(s);
        std::string shape, src, dst, base = "0";
        int64_t od = 0;
        for (int64_t d = 0; d < tx.getRank(); ++d) {
          auto xd = D(o.getX(), d);
          auto xs = N(o.getX(), d + 1);
          if (failed(xd) || failed(xs))
            return failure();
          std::string start = starts[d] >= 0
                                  ? std::to_string(starts[d])
                                  : "(" + *xd + " - " + std::to_string(-starts[d]) + ")";
          base += " + " + start + " * " + *xs;
          if (squeezed.contains(d))
            continue;
          auto e = D(o.getOut(), od);
          auto ds = N(o.getOut(), od + 1);
          if (failed(e) || failed(ds))
            return failure();
          shape += (od ? ", " : "") + *e;
          src += (od ? ", " : "") + std::to_string(steps[d]) + " * " + *xs;
          dst += (od ? ", " : "") + *ds;
          ++od;
        }
        if (od == 0) {
          os << name(o.getOut()) << "[0] = " << name(o.getX()) << "[" << base << "];\n";
          return success();
        }
        os << "{\n  const int64_t shape[] = {" << shape << "}, ss[] = {" << src
           << "}, ds[] = {" << dst << "};\n  nncc_ms_copy_nd(sizeof(*" << name(o.getOut())
           << "), " << od << ", shape, " << name(o.getOut()) << ", ds, " << name(o.getX())
           << " + (" << base << "), ss);\n}\n";
        return success();
      })
      .Case<nnk::ConcatOp>([&](nnk::ConcatOp o) -> LogicalResult {
        std::string offset = "0";
        for (Value in : o.getInputs()) {
          if (failed(emitStridedCopy(os, op, in, o.getOut(), o.getAxis(), offset, true)))
            return failure();
          auto e = D(in, o.getAxis());
          if (failed(e))
            return failure();
          offset += " + " + *e;
        }
        return success();
      })
      .Case<nnk::SplitOp>([&](nnk::SplitOp o) -> LogicalResult {
        std::string offset = "0";
        for (Value out : o.getOuts()) {
          if (failed(emitStridedCopy(os, op, o.getX(), out, o.getAxis(), offset, false)))
            return failure();
          auto e = D(out, o.getAxis());
          if (failed(e))
            return failure();
          offset += " + " + *e;
        }
        return success();
      })
      .Case<nnk::FlashAttentionOp, nnk::BandedAttentionOp, nnk::LSHAttentionOp>(
          [&](auto o) -> LogicalResult {
            Value qkv = o.getQkv(), out = o.getOut();
            auto B = D(qkv, 0), Tn = D(qkv, 1), E = D(out, 2), ld = D(qkv, 2);
            if (failed(B) || failed(Tn) || failed(E) || failed(ld))
              return failure();
            int64_t heads = o.getNumHeads();
            std::string dh = "(" + *E + " / " + std::to_string(heads) + ")";
            std::string p = "nncc_attention_params p; memset(&p, 0, sizeof(p)); ";
            p += "p.causal = " + std::to_string(o.getCausal() ? 1 : 0) + "; p.scale = " +
                 fmtDouble(o.getScale()) + "; ";
            std::string globals, kPtr = name(qkv) + " + " + *E,
                                 vPtr = name(qkv) + " + 2 * " + *E;
            std::string rotBytes;
            Operation *raw = o.getOperation();
            if (auto b = dyn_cast<nnk::BandedAttentionOp>(raw)) {
              p += "p.kind = NNCC_ATTN_DILATED; p.window = " +
                   std::to_string(b.getWindow()) +
                   "; p.dilation = " + std::to_string(b.getDilation()) + "; ";
              if (!b.getGlobal().empty()) {
                for (int64_t g : b.getGlobal())
                  globals += (globals.empty() ? "" : ", ") + std::to_string(g);
                p += "static const int32_t kGlobal[] = {" + globals +
                     "}; p.global_pos = kGlobal; p.n_global = " +
                     std::to_string(b.getGlobal().size()) + "; ";
              }
            } else if (auto l = dyn_cast<nnk::LSHAttentionOp>(raw)) {
              kPtr = name(qkv);
              vPtr = name(qkv) + " + " + *E;
              p += "p.kind = NNCC_ATTN_LSH; p.n_hashes = " + std::to_string(l.getHashes()) +
                   "; p.chunk = " + std::to_string(l.getChunk()) + "; ";
              if (l.getRotations()) {
                auto half = D(l.getRotations(), 2);
                if (failed(half))
                  return failure();
                p += "p.n_buckets = (int32_t)(2 * " + *half + "); p.rotations = " +
                     name(l.getRotations()) + "; ";
              } else {
                p += "p.n_buckets = (int32_t)nncc_gen_lsh_buckets(" + *Tn + ", " +
                     std::to_string(l.getChunk()) + "); ";
                rotBytes = std::to_string(l.getHashes()) + " * " + dh +
                           " * (nncc_gen_lsh_buckets(" + *Tn + ", " +
                           std::to_string(l.getChunk()) + ") / 2) * sizeof(real_t)";
              }
            } else {
              p += "p.kind = NNCC_ATTN_DENSE; ";
            }
            int ws = addWorkspace(op, "[&] { " + p + "return nncc_attention_workspace_size(&p, " +
                                          *B + ", " + *Tn + ", " + std::to_string(heads) +
                                          ", " + dh + ", (int64_t)sizeof(real_t)); }()");
            os << "{\n";
            os.indent();
            os << p << "\n";
            if (!rotBytes.empty()) {
              int rws = addWorkspace(op, rotBytes);
              auto l = cast<nnk::LSHAttentionOp>(raw);
              os << "real_t *rot = (real_t *)nncc_ms_buffer_ptr(m, " << rws << ");\n";
              os << "NNCC_RNG_NORMAL(rot, (uint64_t)(" << rotBytes
                 << " / sizeof(real_t)), " << l.getSeed() << "ULL, 0x15AULL, 0, 0, 1);\n";
              os << "p.rotations = rot;\n";
            }
            os << check(op, "NNCC_KFN(nncc_attention)(&p, " + *B + ", " + *Tn + ", " +
                                std::to_string(heads) + ", " + dh + ", " + name(qkv) + ", " +
                                kPtr + ", " + vPtr + ", " + *ld + ", " + name(out) + ", " +
                                *E + ", " + nameOrNull(o.getMask()) +
                                ", nncc_ms_buffer_ptr(m, " + std::to_string(ws) + "), NULL)");
            os.unindent();
            os << "}\n";
            return success();
          })
      .Case<nnk::RecurrentScanOp>([&](nnk::RecurrentScanOp o) -> LogicalResult {
        needsRecurrent = true;
        auto B = D(o.getXproj(), 0), Tn = D(o.getXproj(), 1);
        if (failed(B) || failed(Tn))
          return failure();
        int64_t H = o.getHiddenSize();
        int64_t G = o.getCell() == nnk::Cell::lstm ? 4
                    : (o.getCell() == nnk::Cell::gru || o.getCell() == nnk::Cell::gru_cho2014)
                        ? 3
                        : 1;
        int ws = addWorkspace(op, *B + " * " + std::to_string(H * (G + 4)) +
                                      " * sizeof(real_t)");
        std::string lengths = o.getLengths() ? name(o.getLengths()) : "(const int32_t *)NULL";
        os << check(op, "nncc_gen_recurrent_scan<real_t>(" +
                            std::to_string(static_cast<int>(o.getCell())) + ", " + *B +
                            ", " + *Tn + ", " + std::to_string(H) + ", " +
                            std::to_string(o.getNumDirections()) + ", " +
                            std::to_string(o.getStateIndex()) + ", " +
                            (o.getReverse() ? "1" : "0") + ", " + name(o.getXproj()) + ", " +
                            name(o.getWHh()) + ", " + nameOrNull(o.getBHh()) + ", " +
                            nameOrNull(o.getH0()) + ", " + nameOrNull(o.getC0()) + ", " +
                            lengths + ", " + name(o.getY()) + ", " +
                            nameOrNull(o.getHN()) + ", " + nameOrNull(o.getCN()) +
                            ", (real_t *)nncc_ms_buffer_ptr(m, " + std::to_string(ws) +
                            "))");
        return success();
      })
      .Default([&](Operation *other) -> LogicalResult {
        return other->emitError()
               << "the C++ emitter cannot handle '" << other->getName()
               << "' yet (supported: alloc, weight, fill, copy, elementwise, gemm, "
                  "matmul, layer_norm, softmax, reduce, embedding, sinusoidal_position, "
                  "loss, transpose, slice, concat, split, flash/banded/lsh attention, "
                  "recurrent_scan)";
      });
}

} // namespace

LogicalResult emitCpp(ModuleOp module, llvm::raw_ostream &os, bool withCuda) {
  std::string text;
  llvm::raw_string_ostream ss(text);
  raw_indented_ostream ios(ss);
  CppEmitter emitter(module);
  if (failed(emitter.emit(ios, withCuda)))
    return failure();
  os << text;
  return success();
}

} // namespace nncc::target
