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

/// Statements setting attention dropout on `p` (training functions only:
/// prepareNNForKernels zeroes the rate elsewhere); the step offset makes
/// every training step draw a new mask, the backward the same one.
std::string attentionDropoutFields(double rate, int64_t seed) {
  if (rate <= 0)
    return "";
  return "p.dropout = " + fmtDouble(rate) + "; p.dropout_seed = " +
         std::to_string(seed) + "ULL; p.dropout_offset = nncc_ms_dropout_offset(m);\n";
}

class CppEmitter : public ModelEmitter {
public:
  using ModelEmitter::ModelEmitter;
  LogicalResult emit(raw_indented_ostream &os, bool withCuda);

private:
  bool needsODE = false;
  int regionCounter = 0;
  std::string body; // forward_cpu's statements
  LogicalResult emitOp(raw_indented_ostream &os, Operation *op);
  /// A region's body as a lambda `name(args...) -> int` (0 or a status);
  /// `argDecls` binds the block arguments (C++ statements naming them).
  LogicalResult emitRegionLambda(raw_indented_ostream &os, Region &region,
                                 const std::string &lambda, const std::string &params,
                                 const std::string &prologue);
  LogicalResult emitODESolve(raw_indented_ostream &os, nnk::ODESolveOp op);
  LogicalResult emitODERNN(raw_indented_ostream &os, nnk::ODERNNOp op);
  LogicalResult emitODESolveGrad(raw_indented_ostream &os, nnk::ODESolveGradOp op);
  LogicalResult emitODERNNGrad(raw_indented_ostream &os, nnk::ODERNNGradOp op);
  /// Names the destination arguments of a VJP region (the last
  /// 1 + k (dynamics) or 2 + k (cell) block arguments): the first `direct`
  /// ones are lambda parameters, the parameter gradients point into one
  /// concatenated vector `theta` at running offsets. Returns the prologue
  /// and sets `total` to the expression of the concatenated size.
  FailureOr<std::string> vjpDests(Operation *op, Block &body, unsigned nIn,
                                  ArrayRef<std::string> direct, const std::string &theta,
                                  std::string &total);
  std::string gradFailure(Operation *op) {
    return "if (rc_ != 0) {\n"
           "  if (rc_ < 0)\n"
           "    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, \"%s: %s\", " +
           cString(launchComment(op)) +
           ", nncc::grad::ode_grad_error_string(rc_));\n"
           "  return (nncc_status)rc_;\n"
           "}\n";
  }
  std::string odeFailure(Operation *op) {
    return "if (rc_ != 0) {\n"
           "  if (rc_ < 0)\n"
           "    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, \"%s: %s\", " +
           cString(launchComment(op)) +
           ", nncc::kernels::ode_error_string(rc_));\n"
           "  return (nncc_status)rc_;\n"
           "}\n";
  }
  LogicalResult emitStridedCopy(raw_indented_ostream &os, Operation *op, Value src,
                                Value dst, int64_t axis, const std::string &offsetExpr,
                                bool intoDst);
  /// The C++ expression of `target`'s class indices as int64_t, the loss
  /// kernels' index type: i32 targets are widened into a workspace slot
  /// (a uniquely named pointer, so several losses can share a scope).
  std::string int64Targets(raw_indented_ostream &os, Operation *op, Value target,
                           const std::string &count) {
    if (!cast<nnk::BufferType>(target.getType()).getElementType().isInteger(32))
      return name(target);
    int ws = addWorkspace(op, count + " * 8");
    std::string wide = "wide" + std::to_string(ws);
    os << "int64_t *" << wide << " = (int64_t *)nncc_ms_buffer_ptr(m, " << ws << ");\n";
    os << "for (int64_t i = 0; i < " << count << "; ++i) " << wide << "[i] = "
       << name(target) << "[i];\n";
    return wide;
  }
  LogicalResult emitSliceCopy(raw_indented_ostream &os, Operation *op, Value whole,
                              Value part, ArrayRef<int64_t> starts,
                              ArrayRef<int64_t> steps, ArrayRef<int64_t> squeeze,
                              bool intoWhole);
  std::string check(Operation *op, const std::string &call) {
    return "NNCC_GEN_CHECK(" + call + ", " + cString(launchComment(op)) + ");\n";
  }
  /// The leading arguments of the stack kernels (cell, B, T, I, H, L, D,
  /// has_bias) of a whole-stack op, and the pieces the workspace sizes use.
  struct StackCall {
    std::string cell, B, T, I, H, L, D, leading;
  };
  template <typename StackOp> FailureOr<StackCall> stackCall(StackOp o) {
    auto xType = cast<nnk::BufferType>(o.getX().getType());
    Operation *op = o.getOperation();
    auto B = dimExpr(op, xType.getDim(0)), Tn = dimExpr(op, xType.getDim(1)),
         I = dimExpr(op, xType.getDim(2));
    if (failed(B) || failed(Tn) || failed(I))
      return failure();
    StackCall c{std::to_string(static_cast<int>(o.getCell())),
                *B,
                *Tn,
                *I,
                std::to_string(o.getHiddenSize()),
                std::to_string(o.getNumLayers()),
                o.getBidirectional() ? "2" : "1",
                ""};
    c.leading = c.cell + ", " + c.B + ", " + c.T + ", " + c.I + ", " + c.H + ", " + c.L +
                ", " + c.D + ", " + (o.getHasBias() ? "1" : "0");
    return c;
  }
  /// The names of `values`, comma separated.
  std::string commaNames(ValueRange values) {
    std::string s;
    for (Value v : values)
      s += (s.empty() ? "" : ", ") + name(v);
    return s;
  }
  /// The int32 lengths the stack kernels take: the buffer, a widened copy of
  /// i64 lengths in a workspace slot (`len32_`), or NULL.
  std::string stackLengths(raw_indented_ostream &os, Operation *op, Value lengths,
                           const std::string &batch) {
    if (!lengths)
      return "NULL";
    if (!cast<nnk::BufferType>(lengths.getType()).getElementType().isInteger(64))
      return name(lengths);
    int lws = addWorkspace(op, batch + " * sizeof(int32_t)");
    os << "int32_t *len32_ = (int32_t *)nncc_ms_buffer_ptr(m, " << lws << ");\n";
    os << "for (int64_t b = 0; b < " << batch << "; ++b) len32_[b] = (int32_t)"
       << name(lengths) << "[b];\n";
    return "len32_";
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
    if (train) {
      // forward_train: the ops before the boundary (and the copies into
      // the model's outputs); backward: the rest.
      Block &tb = train.getBody().front();
      auto isOutputCopy = [&](Operation &op) {
        auto copy = dyn_cast<nnk::CopyOp>(op);
        if (!copy)
          return false;
        auto arg = dyn_cast<BlockArgument>(copy.getOut());
        return arg && arg.getOwner() == &tb &&
               llvm::StringRef(name(arg)).starts_with("out");
      };
      for (int half = 0; half < 2; ++half) {
        f << (half == 0 ? "static nncc_status forward_train_cpu(nncc_model *m, nncc_error *err) {\n"
                        : "static nncc_status backward_cpu(nncc_model *m, nncc_error *err) {\n");
        f.indent();
        if (failed(emitForwardPrologue(f, train)))
          return failure();
        bool after = false;
        for (Operation &op : tb.without_terminator()) {
          if (&op == boundary) {
            after = true;
            continue;
          }
          bool inHalf = half == 0 ? (!after || isOutputCopy(op)) : (after && !isOutputCopy(op));
          if (inHalf && failed(emitOp(f, &op)))
            return failure();
        }
        f << "return NNCC_OK;\n";
        f.unindent();
        f << "}\n";
      }
    }
  }

  os << "// Generated by nncc from model '" << modelName
     << "': host C++ (the CPU launch sequence) and the C ABI of nncc_model.h.\n"
     << "// Do not edit; regenerate with `nncc compile`.\n"
     << "#include \"nncc/Runtime/ModelSupport.h\"\n"
     << "#include \"nncc/Kernels/Common.h\"\n"
     << "#include \"nncc/Kernels/AttentionMath.h\"\n"
     << "#include \"nncc/Kernels/Kernels.h\"\n";
  if (needsODE)
    os << "#include \"nncc/Kernels/ODESolver.h\"\n";
  if (train)
    os << "#include \"nncc/Runtime/GradKernels.h\"\n#include <vector>\n";
  os << "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n\n";
  emitPrecision(os);
  os << "#define NNCC_GEN_CHECK(call, what)                                   \\\n"
        "  do {                                                               \\\n"
        "    int rc_ = (call);                                                \\\n"
        "    if (rc_ != 0)                                                    \\\n"
        "      return nncc_ms_kernel_status(rc_, what, err);                  \\\n"
        "  } while (0)\n\n";
  os << "namespace {\n";
  emitMathPrelude(os, "static inline", /*hostPolynomials=*/true);
  os << "static inline int64_t nncc_gen_lsh_buckets(int64_t T, int64_t chunk) {\n"
        "  return nncc::kernels::lsh_num_buckets(T, chunk);\n}\n";
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

/// The strided copy between a tensor `whole` and its slice `part`: out of
/// the whole for nnk.slice, back into it for nnk.slice_grad. Per dim of the
/// whole: a start (negative: from the end) and a step; squeezed dims drop.
LogicalResult CppEmitter::emitSliceCopy(raw_indented_ostream &os, Operation *op,
                                        Value whole, Value part,
                                        ArrayRef<int64_t> starts,
                                        ArrayRef<int64_t> steps,
                                        ArrayRef<int64_t> squeeze, bool intoWhole) {
  auto wholeType = cast<nnk::BufferType>(whole.getType());
  auto partType = cast<nnk::BufferType>(part.getType());
  llvm::SmallDenseSet<int64_t> squeezed(squeeze.begin(), squeeze.end());
  std::string shape, wholeStrides, partStrides, base = "0";
  int64_t od = 0;
  for (int64_t d = 0; d < wholeType.getRank(); ++d) {
    FailureOr<std::string> size = dimExpr(op, wholeType.getDim(d));
    FailureOr<std::string> stride = numel(op, wholeType, d + 1);
    if (failed(size) || failed(stride))
      return failure();
    std::string start = starts[d] >= 0
                            ? std::to_string(starts[d])
                            : "(" + *size + " - " + std::to_string(-starts[d]) + ")";
    base += " + " + start + " * " + *stride;
    if (squeezed.contains(d))
      continue;
    FailureOr<std::string> e = dimExpr(op, partType.getDim(od));
    FailureOr<std::string> ps = numel(op, partType, od + 1);
    if (failed(e) || failed(ps))
      return failure();
    shape += (od ? ", " : "") + *e;
    wholeStrides += (od ? ", " : "") + std::to_string(steps[d]) + " * " + *stride;
    partStrides += (od ? ", " : "") + *ps;
    ++od;
  }
  std::string wholeAt = name(whole) + " + (" + base + ")";
  if (od == 0) {
    if (intoWhole)
      os << name(whole) << "[" << base << "] = " << name(part) << "[0];\n";
    else
      os << name(part) << "[0] = " << name(whole) << "[" << base << "];\n";
    return success();
  }
  os << "{\n  const int64_t shape[] = {" << shape << "}, ws[] = {" << wholeStrides
     << "}, ps[] = {" << partStrides << "};\n  nncc_ms_copy_nd(sizeof(*" << name(part)
     << "), " << od << ", shape, ";
  if (intoWhole)
    os << wholeAt << ", ws, " << name(part) << ", ps);\n}\n";
  else
    os << name(part) << ", ps, " << wholeAt << ", ws);\n}\n";
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
          std::string target = int64Targets(os, op, o.getTarget(), *n);
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
        return emitSliceCopy(os, op, o.getX(), o.getOut(), o.getStarts(), o.getSteps(),
                             o.getSqueeze(), /*intoWhole=*/false);
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
            std::string rotBytes, rotGiven;
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
                p += "p.n_buckets = (int32_t)(2 * " + *half + "); ";
                // Not in the workspace-size expression (no buffers there).
                rotGiven = "p.rotations = " + name(l.getRotations()) + "; ";
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
            os << p << rotGiven << "\n"
               << attentionDropoutFields(o.getDropout(), o.getSeed());
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
                                ", nncc_ms_buffer_ptr(m, " + std::to_string(ws) + "), NULL, " +
                                nameOrNull(o.getLse()) + ")");
            os.unindent();
            os << "}\n";
            return success();
          })
      .Case<nnk::RecurrentScanOp>([&](nnk::RecurrentScanOp o) -> LogicalResult {
        // One layer and direction: libnncc_kernels' time loop over the
        // precomputed input projection (active rows shrink as sequences end).
        auto B = D(o.getXproj(), 0), Tn = D(o.getXproj(), 1);
        if (failed(B) || failed(Tn))
          return failure();
        int64_t H = o.getHiddenSize();
        std::string cell = std::to_string(static_cast<int>(o.getCell()));
        int ws = addWorkspace(op, "nncc_rnn_layer_workspace_size(" + cell + ", " + *B +
                                      ", " + std::to_string(H) + ", sizeof(real_t))");
        std::string len32 = "(const int32_t *)NULL", len64 = "(const int64_t *)NULL";
        if (Value l = o.getLengths())
          (T(l).getElementType().isInteger(64) ? len64 : len32) = name(l);
        // LSTM zoneout (training only; prepareNNForKernels zeroes it in
        // inference): the same call with the mask's seed and step offset.
        const bool zo = o.getZoneout() > 0;
        std::string zoArgs = zo ? ", " + fmtDouble(o.getZoneout()) + ", " +
                                      std::to_string(o.getSeed()) +
                                      "ULL, nncc_ms_dropout_offset(m)"
                                : "";
        os << check(op, std::string(zo ? "NNCC_KFN(nncc_rnn_layer_zoneout)("
                                       : "NNCC_KFN(nncc_rnn_layer)(") +
                            cell + ", " + *B + ", " + *Tn +
                            ", " + std::to_string(H) + ", " +
                            std::to_string(o.getNumDirections()) + ", " +
                            std::to_string(o.getStateIndex()) + ", " +
                            (o.getReverse() ? "1" : "0") + ", " + name(o.getXproj()) + ", " +
                            name(o.getWHh()) + ", " + nameOrNull(o.getBHh()) + ", " +
                            nameOrNull(o.getH0()) + ", " + nameOrNull(o.getC0()) + ", " +
                            len32 + ", " + len64 + ", " + name(o.getY()) + ", " +
                            nameOrNull(o.getHN()) + ", " + nameOrNull(o.getCN()) +
                            ", nncc_ms_buffer_ptr(m, " + std::to_string(ws) + "), NULL" +
                            zoArgs + ")");
        return success();
      })
      .Case<nnk::RecurrentCellOp>([&](nnk::RecurrentCellOp o) -> LogicalResult {
        auto B = D(o.getH(), 0), H = D(o.getH(), 1);
        if (failed(B) || failed(H))
          return failure();
        std::string cell = std::to_string(static_cast<int>(o.getCell()));
        int ws = addWorkspace(op, "nncc_rnn_cell_workspace_size(" + cell + ", " + *B +
                                      ", " + *H + ", sizeof(real_t))");
        os << check(op, "NNCC_KFN(nncc_rnn_cell)(" + cell + ", " + *B + ", " + *H + ", " +
                            name(o.getXproj()) + ", " + name(o.getH()) + ", " +
                            nameOrNull(o.getC()) + ", " + name(o.getWHh()) + ", " +
                            nameOrNull(o.getBHh()) + ", " + name(o.getHOut()) + ", " +
                            nameOrNull(o.getCOut()) + ", nncc_ms_buffer_ptr(m, " +
                            std::to_string(ws) + "))");
        return success();
      })
      .Case<nnk::ODESolveOp>([&](nnk::ODESolveOp o) { return emitODESolve(os, o); })
      .Case<nnk::ODERNNOp>([&](nnk::ODERNNOp o) { return emitODERNN(os, o); })
      .Case<nnk::ODESolveGradOp>([&](nnk::ODESolveGradOp o) { return emitODESolveGrad(os, o); })
      .Case<nnk::ODERNNGradOp>([&](nnk::ODERNNGradOp o) { return emitODERNNGrad(os, o); })
      .Case<nnk::RecurrentCellGradOp>([&](nnk::RecurrentCellGradOp o) -> LogicalResult {
        auto B = D(o.getH(), 0), H = D(o.getH(), 1);
        auto nWhh = N(o.getWHh());
        if (failed(B) || failed(H) || failed(nWhh))
          return failure();
        std::string cell = std::to_string(static_cast<int>(o.getCell()));
        int ws = addWorkspace(op, "nncc_rnn_cell_backward_workspace_size(" + cell + ", " +
                                      *B + ", " + *H + ", sizeof(real_t))");
        // The kernel accumulates dw_hh / db_hh: zero them first.
        os << "memset(" << name(o.getDwHh()) << ", 0, " << *nWhh << " * sizeof(real_t));\n";
        if (Value db = o.getDbHh()) {
          auto nb = N(db);
          if (failed(nb))
            return failure();
          os << "memset(" << name(db) << ", 0, " << *nb << " * sizeof(real_t));\n";
        }
        os << check(op, "NNCC_KFN(nncc_rnn_cell_backward)(" + cell + ", " + *B + ", " + *H +
                            ", " + name(o.getXproj()) + ", " + name(o.getH()) + ", " +
                            nameOrNull(o.getC()) + ", " + name(o.getWHh()) + ", " +
                            nameOrNull(o.getBHh()) + ", " + nameOrNull(o.getDhOut()) + ", " +
                            nameOrNull(o.getDcOut()) + ", " + name(o.getDxproj()) + ", " +
                            name(o.getDh()) + ", " + nameOrNull(o.getDc()) + ", " +
                            name(o.getDwHh()) + ", " + nameOrNull(o.getDbHh()) +
                            ", nncc_ms_buffer_ptr(m, " + std::to_string(ws) + "))");
        return success();
      })
      .Case<nnk::BoundaryOp>([&](auto) { return success(); })
      .Case<nnk::ReduceToShapeOp>([&](nnk::ReduceToShapeOp o) -> LogicalResult {
        auto tx = T(o.getX()), ty = T(o.getOut());
        int64_t r = tx.getRank(), ry = ty.getRank();
        uint32_t mask = 0;
        std::string shape;
        for (int64_t d = 0; d < r; ++d) {
          auto e = D(o.getX(), d);
          if (failed(e))
            return failure();
          shape += (d ? ", " : "") + *e;
          int64_t yd = d - (r - ry);
          if (yd < 0 || (ty.getDim(yd).isStatic() && ty.getDim(yd).getSize() == 1 &&
                         !(tx.getDim(d).isStatic() && tx.getDim(d).getSize() == 1)))
            mask |= 1u << d;
        }
        if (r == 0) {
          os << name(o.getOut()) << "[0] = " << name(o.getX()) << "[0];\n";
          return success();
        }
        os << "{\n  const int64_t shape[] = {" << shape << "};\n  NNCC_MS_REDUCE(" << r
           << ", shape, " << mask << "u, 0, " << name(o.getX()) << ", " << name(o.getOut())
           << ");\n}\n";
        return success();
      })
      .Case<nnk::BroadcastAxesOp>([&](nnk::BroadcastAxesOp o) -> LogicalResult {
        auto t = T(o.getOut());
        uint32_t mask = 0;
        for (int64_t a : o.getAxes())
          mask |= 1u << a;
        std::string shape;
        for (int64_t d = 0; d < t.getRank(); ++d) {
          auto e = D(o.getOut(), d);
          if (failed(e))
            return failure();
          shape += (d ? ", " : "") + *e;
        }
        os << "{\n  const int64_t shape[] = {" << (shape.empty() ? "1" : shape)
           << "};\n  nncc::grad::broadcast_axes<real_t>(" << t.getRank() << ", shape, "
           << mask << "u, " << (o.getMean() ? 1 : 0) << ", " << name(o.getDy()) << ", "
           << name(o.getOut()) << ");\n}\n";
        return success();
      })
      .Case<nnk::SliceGradOp>([&](nnk::SliceGradOp o) -> LogicalResult {
        auto n = N(o.getOut());
        if (failed(n))
          return failure();
        os << "memset(" << name(o.getOut()) << ", 0, " << *n << " * sizeof(real_t));\n";
        return emitSliceCopy(os, op, o.getOut(), o.getDy(), o.getStarts(), o.getSteps(),
                             o.getSqueeze(), /*intoWhole=*/true);
      })
      .Case<nnk::LinearWeightGradOp>([&](nnk::LinearWeightGradOp o) -> LogicalResult {
        auto rows = N(o.getDy(), 0, T(o.getDy()).getRank() - 1);
        auto Nn = D(o.getDy(), -1), K = D(o.getX(), -1);
        if (failed(rows) || failed(Nn) || failed(K))
          return failure();
        os << check(op, "NNCC_KFN(nncc_gemm)(1, 0, " + *Nn + ", " + *K + ", " + *rows +
                            ", (real_t)1, " + name(o.getDy()) + ", " + *Nn + ", " +
                            name(o.getX()) + ", " + *K + ", (real_t)0, " +
                            name(o.getOut()) + ", " + *K + ")");
        return success();
      })
      .Case<nnk::EmbeddingGradOp>([&](nnk::EmbeddingGradOp o) -> LogicalResult {
        auto n = N(o.getIndices());
        auto V = D(o.getOut(), 0), E = D(o.getOut(), 1);
        if (failed(n) || failed(V) || failed(E))
          return failure();
        bool i32 = T(o.getIndices()).getElementType().isInteger(32);
        os << check(op, std::string(i32 ? "NNCC_KFN(nncc_embedding_backward_i32)("
                                        : "NNCC_KFN(nncc_embedding_backward)(") +
                            *n + ", " + *V + ", " + *E + ", " + name(o.getIndices()) + ", " +
                            name(o.getDy()) + ", -1, " + name(o.getOut()) + ")");
        return success();
      })
      .Case<nnk::LayerNormGradOp>([&](nnk::LayerNormGradOp o) -> LogicalResult {
        auto rows = N(o.getX(), 0, T(o.getX()).getRank() - 1);
        auto n = D(o.getX(), -1);
        if (failed(rows) || failed(n))
          return failure();
        os << check(op, "NNCC_KFN(nncc_layer_norm_backward)(" + *rows + ", " + *n + ", " +
                            name(o.getX()) + ", NULL, " + nameOrNull(o.getWeight()) +
                            ", NULL, NULL, " + fmtDouble(o.getEps()) + ", " +
                            name(o.getDy()) + ", NULL, " + name(o.getDx()) + ", " +
                            nameOrNull(o.getDweight()) + ", NULL)");
        return success();
      })
      .Case<nnk::LossGradOp>([&](nnk::LossGradOp o) -> LogicalResult {
        auto ti = T(o.getInput());
        switch (o.getKind()) {
        case nnk::LossKind::mse: {
          auto n = N(o.getInput());
          if (failed(n))
            return failure();
          os << check(op, "NNCC_KFN(nncc_mse_loss_backward)(" + *n + ", " +
                              name(o.getInput()) + ", " + name(o.getTarget()) + ", " +
                              name(o.getDloss()) + ", " + name(o.getOut()) + ", NULL)");
          return success();
        }
        case nnk::LossKind::cross_entropy: {
          auto n = N(o.getTarget());
          auto C = D(o.getInput(), -1);
          if (failed(n) || failed(C))
            return failure();
          std::string target = int64Targets(os, op, o.getTarget(), *n);
          os << check(op, "NNCC_KFN(nncc_cross_entropy_backward)(" + *n + ", " + *C + ", " +
                              name(o.getInput()) + ", " + target + ", " +
                              std::to_string(o.getIgnoreIndex()) + ", " +
                              name(o.getDloss()) + ", " + name(o.getOut()) + ")");
          return success();
        }
        case nnk::LossKind::bce_with_logits: {
          auto rows = N(o.getInput(), 0, ti.getRank() ? ti.getRank() - 1 : 0);
          auto C = ti.getRank() ? D(o.getInput(), -1) : FailureOr<std::string>(std::string("1"));
          if (failed(rows) || failed(C))
            return failure();
          os << check(op, "NNCC_KFN(nncc_bce_with_logits_backward)(" + *rows + ", " + *C +
                              ", " + name(o.getInput()) + ", " + name(o.getTarget()) + ", " +
                              nameOrNull(o.getPosWeight()) + ", " + name(o.getDloss()) +
                              ", " + name(o.getOut()) + ")");
          return success();
        }
        }
        return failure();
      })
      .Case<nnk::DropoutOp>([&](nnk::DropoutOp o) -> LogicalResult {
        auto n = N(o.getX());
        if (failed(n))
          return failure();
        os << check(op, "NNCC_KFN(nncc_dropout)(" + *n + ", " + fmtDouble(o.getP()) + ", " +
                            std::to_string(o.getSeed()) + "ULL, nncc_ms_dropout_offset(m), " + name(o.getX()) + ", " +
                            name(o.getOut()) + ", " +
                            (o.getMask() ? name(o.getMask()) : std::string("NULL")) + ")");
        return success();
      })
      .Case<nnk::ZoneoutOp>([&](nnk::ZoneoutOp o) -> LogicalResult {
        auto n = N(o.getNewState());
        if (failed(n))
          return failure();
        os << check(op, "NNCC_KFN(nncc_zoneout)(" + *n + ", " + fmtDouble(o.getP()) + ", " +
                            std::to_string(o.getSeed()) + "ULL, nncc_ms_dropout_offset(m), " +
                            name(o.getNewState()) + ", " + name(o.getPrev()) + ", " +
                            name(o.getOut()) + ")");
        return success();
      })
      .Case<nnk::RecurrentForwardOp>([&](nnk::RecurrentForwardOp o) -> LogicalResult {
        // libnncc_kernels' training forward of the stack: y, h_n, c_n and
        // the reserve the backward reads.
        FailureOr<StackCall> c = stackCall(o);
        if (failed(c))
          return failure();
        int wsi = addWorkspace(op, "nncc_rnn_forward_train_workspace_size(" + c->cell + ", " +
                                       c->B + ", " + c->T + ", " + c->H + ", sizeof(real_t))");
        os << "{\n";
        os.indent();
        os << "const real_t *w_[] = {" << commaNames(o.getWeights()) << "};\n";
        std::string len = stackLengths(os, op, o.getLengths(), c->B);
        os << check(op, "NNCC_KFN(nncc_rnn_forward_train)(" + c->leading + ", " +
                            name(o.getX()) + ", w_, " +
                            nameOrNull(o.getH0()) + ", " + nameOrNull(o.getC0()) + ", " +
                            len + ", " + name(o.getY()) + ", " + nameOrNull(o.getHN()) + ", " +
                            nameOrNull(o.getCN()) + ", " + name(o.getReserve()) +
                            ", nncc_ms_buffer_ptr(m, " + std::to_string(wsi) + "), " +
                            fmtDouble(o.getZoneout()) + ", " + std::to_string(o.getSeed()) +
                            "ULL, nncc_ms_dropout_offset(m))");
        os.unindent();
        os << "}\n";
        return success();
      })
      .Case<nnk::RecurrentGradOp>([&](nnk::RecurrentGradOp o) -> LogicalResult {
        // libnncc_kernels' stack BPTT: from the forward's reserve, or
        // re-running the forward into its workspace; overwrites dx, dh0,
        // dc0 (each may be NULL) and every weight gradient.
        FailureOr<StackCall> c = stackCall(o);
        if (failed(c))
          return failure();
        const bool reserved = static_cast<bool>(o.getReserve());
        int wsi = addWorkspace(
            op, reserved ? "nncc_rnn_backward_reserved_workspace_size(" + c->cell + ", " +
                               c->B + ", " + c->T + ", " + c->H + ", " + c->L + ", " + c->D +
                               ", sizeof(real_t))"
                         : "nncc_rnn_backward_workspace_size(" + c->cell + ", " + c->B +
                               ", " + c->T + ", " + c->I + ", " + c->H + ", " + c->L + ", " +
                               c->D + ", sizeof(real_t))");
        os << "{\n";
        os.indent();
        os << "const real_t *w_[] = {" << commaNames(o.getWeights()) << "};\nreal_t *dw_[] = {"
           << commaNames(o.getDweights()) << "};\n";
        std::string len = stackLengths(os, op, o.getLengths(), c->B);
        // An out buffer no other op reads (a temporary: dx of a model input,
        // dh0 / dc0 of an initial state that is not a parameter) is passed
        // as NULL, which the kernel skips: for dx, the [B*T, G*H] x [G*H, I]
        // GEMM of layer 0, a fifth of an LSTM backward.
        auto outOrNull = [&](Value v) -> std::string {
          if (v && v.getDefiningOp<nnk::AllocOp>() &&
              llvm::all_of(v.getUsers(), [&](Operation *u) { return u == op; }))
            return "NULL";
          return nameOrNull(v);
        };
        const bool zo = o.getZoneout() > 0 || reserved;
        std::string zoArgs = zo ? ", " + fmtDouble(o.getZoneout()) + ", " +
                                      std::to_string(o.getSeed()) +
                                      "ULL, nncc_ms_dropout_offset(m)"
                                : "";
        os << check(op, std::string(reserved ? "NNCC_KFN(nncc_rnn_backward_reserved)("
                                    : zo     ? "NNCC_KFN(nncc_rnn_backward_zoneout)("
                                             : "NNCC_KFN(nncc_rnn_backward)(") +
                            c->leading + ", " + name(o.getX()) + ", w_, " +
                            nameOrNull(o.getH0()) + ", " + nameOrNull(o.getC0()) + ", " +
                            len + ", " + (reserved ? name(o.getReserve()) + ", " : "") +
                            nameOrNull(o.getDy()) + ", " +
                            nameOrNull(o.getDhN()) + ", " + nameOrNull(o.getDcN()) + ", " +
                            outOrNull(o.getDx()) + ", " + outOrNull(o.getDh0()) + ", " +
                            outOrNull(o.getDc0()) + ", dw_, nncc_ms_buffer_ptr(m, " +
                            std::to_string(wsi) + ")" + zoArgs + ")");
        os.unindent();
        os << "}\n";
        return success();
      })
      .Case<nnk::AttentionGradOp>([&](nnk::AttentionGradOp o) -> LogicalResult {
        // libnncc_kernels' core backward (recomputes the probabilities; LSH
        // with the forward's rotations: the op's operand or the same seeded
        // draw as nnk.lsh_attention).
        auto B = D(o.getQkv(), 0), Tn = D(o.getQkv(), 1), ld = D(o.getQkv(), 2),
             E = D(o.getDout(), 2);
        if (failed(B) || failed(Tn) || failed(ld) || failed(E))
          return failure();
        int64_t heads = o.getNumHeads();
        std::string dh = "(" + *E + " / " + std::to_string(heads) + ")";
        std::string p = "nncc_attention_params p; memset(&p, 0, sizeof(p)); ";
        p += "p.causal = " + std::to_string(o.getCausal() ? 1 : 0) +
             "; p.scale = " + fmtDouble(o.getScale()) + "; ";
        std::string q = name(o.getQkv()), k = q + " + " + *E, v = q + " + 2 * " + *E;
        std::string dq = name(o.getDqkv()), dk = dq + " + " + *E, dv = dq + " + 2 * " + *E;
        std::string globals, rotBytes, rotGiven;
        if (o.getKind() == 0) {
          p += "p.kind = NNCC_ATTN_DENSE; ";
        } else if (o.getKind() == 1) {
          p += "p.kind = NNCC_ATTN_DILATED; p.window = " + std::to_string(o.getWindow()) +
               "; p.dilation = " + std::to_string(o.getDilation()) + "; ";
          if (!o.getGlobal().empty()) {
            for (int64_t g : o.getGlobal())
              globals += (globals.empty() ? "" : ", ") + std::to_string(g);
            p += "static const int32_t kGlobal[] = {" + globals +
                 "}; p.global_pos = kGlobal; p.n_global = " +
                 std::to_string(o.getGlobal().size()) + "; ";
          }
        } else if (o.getKind() == 2) {
          k = "(const real_t *)NULL";
          v = q + " + " + *E;
          dk = "(real_t *)NULL";
          dv = dq + " + " + *E;
          std::string chunk = std::to_string(o.getChunk());
          p += "p.kind = NNCC_ATTN_LSH; p.n_hashes = " + std::to_string(o.getHashes()) +
               "; p.chunk = " + chunk + "; ";
          if (Value rot = o.getRotations()) {
            auto half = D(rot, 2);
            if (failed(half))
              return failure();
            p += "p.n_buckets = (int32_t)(2 * " + *half + "); ";
            rotGiven = "p.rotations = " + name(rot) + "; ";
          } else {
            p += "p.n_buckets = (int32_t)nncc_gen_lsh_buckets(" + *Tn + ", " + chunk + "); ";
            rotBytes = std::to_string(o.getHashes()) + " * " + dh +
                       " * (nncc_gen_lsh_buckets(" + *Tn + ", " + chunk +
                       ") / 2) * sizeof(real_t)";
          }
        } else {
          return o.emitError("nnk.attention_grad: unknown kind ") << o.getKind();
        }
        int ws = addWorkspace(op, "[&] { " + p +
                                      "return nncc_attention_backward_workspace_size(&p, " +
                                      *B + ", " + *Tn + ", " + std::to_string(heads) + ", " +
                                      dh + ", (int64_t)sizeof(real_t)); }()");
        os << "{\n";
        os.indent();
        os << p << rotGiven << "\n"
           << attentionDropoutFields(o.getDropout(), o.getSeed());
        if (!rotBytes.empty()) {
          // The forward's draw (nnk.lsh_attention without rotations).
          int rws = addWorkspace(op, rotBytes);
          os << "real_t *rot = (real_t *)nncc_ms_buffer_ptr(m, " << rws << ");\n";
          os << "NNCC_RNG_NORMAL(rot, (uint64_t)(" << rotBytes << " / sizeof(real_t)), "
             << o.getSeed() << "ULL, 0x15AULL, 0, 0, 1);\n";
          os << "p.rotations = rot;\n";
        }
        os << check(op, "NNCC_KFN(nncc_attention_backward)(&p, " + *B + ", " + *Tn + ", " +
                            std::to_string(heads) + ", " + dh + ", " + q + ", " + k + ", " +
                            v + ", " + *ld + ", " + name(o.getDout()) + ", " + *E + ", " +
                            dq + ", " + dk + ", " + dv + ", " + *ld + ", " +
                            nameOrNull(o.getMask()) + ", nncc_ms_buffer_ptr(m, " +
                            std::to_string(ws) + "), " +
                            (o.getSavedOut() ? name(o.getSavedOut()) + ", " + name(o.getSavedLse())
                                             : nameOrNull(o.getCore()) + ", NULL") +
                            ")");
        os.unindent();
        os << "}\n";
        return success();
      })
      .Default([&](Operation *other) -> LogicalResult {
        return other->emitError()
               << "the C++ emitter cannot handle '" << other->getName()
               << "' yet (supported: alloc, weight, fill, copy, elementwise, gemm, "
                  "matmul, layer_norm, softmax, reduce, embedding, sinusoidal_position, "
                  "loss, transpose, slice, concat, split, flash/banded/lsh attention, "
                  "recurrent_scan, recurrent_cell, ode_solve, ode_rnn)";
      });
}


LogicalResult CppEmitter::emitRegionLambda(raw_indented_ostream &os, Region &region,
                                           const std::string &lambda,
                                           const std::string &params,
                                           const std::string &prologue) {
  if (!region.hasOneBlock())
    return region.getParentOp()->emitError("a region of one block is expected");
  os << "auto " << lambda << " = [&](" << params << ") -> int {\n";
  os.indent();
  os << prologue;
  for (Operation &inner : region.front().without_terminator())
    if (failed(emitOp(os, &inner)))
      return failure();
  os << "return 0;\n";
  os.unindent();
  os << "};\n";
  return success();
}

static int odeMethodCode(nn::ODEMethod m) {
  switch (m) {
  case nn::ODEMethod::euler:
    return 0;
  case nn::ODEMethod::rk4:
    return 1;
  case nn::ODEMethod::dopri5:
    return 2;
  }
  return -1;
}

static int odeStages(int method) { return method == 0 ? 1 : method == 1 ? 4 : 7; }

LogicalResult CppEmitter::emitODESolve(raw_indented_ostream &os, nnk::ODESolveOp o) {
  needsODE = true;
  Operation *op = o.getOperation();
  auto outT = cast<nnk::BufferType>(o.getOut().getType());
  auto workT = cast<nnk::BufferType>(o.getWork().getType());
  int method = odeMethodCode(o.getMethod());
  int S = odeStages(method);
  int64_t K = workT.getDim(0).isStatic() ? workT.getDim(0).getSize() : -1;
  bool adaptive = method == 2 && o.getSteps() == 0;
  if (K < S + (adaptive ? 2 : 1))
    return o.emitError() << "nnk.ode_solve: the work buffer needs at least "
                         << S + (adaptive ? 2 : 1) << " stage slots, it has " << K;
  FailureOr<std::string> n = numel(op, outT);
  if (failed(n))
    return failure();
  Block &body = o.getDynamics().front();
  if (body.getNumArguments() != 3)
    return o.emitError("nnk.ode_solve: the dynamics region takes (t, h, dh)");
  std::string id = std::to_string(regionCounter++);
  std::string tn = "ode" + id + "_t", hn = "ode" + id + "_h", dn = "ode" + id + "_dh";
  names[body.getArgument(0)] = tn;
  names[body.getArgument(1)] = hn;
  names[body.getArgument(2)] = dn;
  os << "{\n";
  os.indent();
  os << "// " << stringifyEnum(o.getMethod())
     << (adaptive ? ", adaptive (rtol " + fmtDouble(o.getRtol()) + ", atol " +
                        fmtDouble(o.getAtol()) + ")"
                  : ", " + std::to_string(o.getSteps()) + " fixed steps")
     << "; h evolves in the output\n";
  os << "const int64_t n = " << *n << ";\n";
  os << "real_t *work = " << name(o.getWork()) << ";\n";
  os << "real_t *k[" << S << "];\n";
  os << "for (int s = 0; s < " << S << "; ++s) k[s] = work + (int64_t)s * n;\n";
  os << "memcpy(" << name(o.getOut()) << ", " << name(o.getH0()) << ", n * sizeof(real_t));\n";
  os << "real_t tbuf[1] = {0};\n";
  if (failed(emitRegionLambda(os, o.getDynamics(), "dynamics",
                              "double s_, const real_t *hin_, real_t *dh_",
                              "tbuf[0] = (real_t)s_;\nreal_t *" + tn + " = tbuf; (void)" + tn +
                                  ";\nreal_t *" + hn + " = (real_t *)hin_; (void)" + hn +
                                  ";\nreal_t *" + dn + " = dh_;\n")))
    return failure();
  os << "const int rc_ = nncc::kernels::ode_integrate<real_t>(" << method << ", "
     << o.getSteps() << ", " << fmtDouble(o.getRtol()) << ", " << fmtDouble(o.getAtol())
     << ", n, n, (const real_t *)NULL, (double)" << name(o.getT0()) << "[0], (double)"
     << name(o.getT1()) << "[0], " << name(o.getOut()) << ", k, work + " << S << " * n, "
     << (adaptive ? "work + " + std::to_string(S + 1) + " * n" : std::string("(real_t *)NULL"))
     << ", dynamics, (int64_t *)NULL);\n";
  os << odeFailure(op);
  os.unindent();
  os << "}\n";
  return success();
}

LogicalResult CppEmitter::emitODERNN(raw_indented_ostream &os, nnk::ODERNNOp o) {
  needsODE = true;
  Operation *op = o.getOperation();
  auto xT = cast<nnk::BufferType>(o.getX().getType());
  auto workT = cast<nnk::BufferType>(o.getWork().getType());
  int method = odeMethodCode(o.getMethod());
  int S = odeStages(method);
  bool adaptive = method == 2 && o.getSteps() == 0;
  int64_t K = workT.getDim(0).isStatic() ? workT.getDim(0).getSize() - 2 : -1;
  if (K < S + (adaptive ? 2 : 1))
    return o.emitError() << "nnk.ode_rnn: the work buffer needs at least "
                         << S + (adaptive ? 2 : 1) + 2 << " slots";
  auto B = dimExpr(op, xT.getDim(0)), Tn = dimExpr(op, xT.getDim(1)),
       I = dimExpr(op, xT.getDim(2));
  if (failed(B) || failed(Tn) || failed(I))
    return failure();
  int64_t H = o.getHiddenSize();
  Block &dyn = o.getDynamics().front();
  Block &cell = o.getCell().front();
  if (dyn.getNumArguments() != 3 || cell.getNumArguments() != 3)
    return o.emitError("nnk.ode_rnn: the regions take (t, h, dh) and (x_t, h, h_out)");
  std::string id = std::to_string(regionCounter++);
  std::string p = "odernn" + id + "_";
  names[dyn.getArgument(0)] = p + "t";
  names[dyn.getArgument(1)] = p + "h";
  names[dyn.getArgument(2)] = p + "dh";
  names[cell.getArgument(0)] = p + "xt";
  names[cell.getArgument(1)] = p + "ch";
  names[cell.getArgument(2)] = p + "chout";
  int ws = addWorkspace(op, "3 * " + *B + " * sizeof(real_t)");
  os << "{\n";
  os.indent();
  os << "// ODE-RNN (Rubanova et al. 2019): the first observation is folded in at\n"
        "// t_0 without evolution; then per step each row evolves over its own\n"
        "// [t_{i-1}, t_i] (" << stringifyEnum(o.getMethod())
     << (adaptive ? ", adaptive" : ", " + std::to_string(o.getSteps()) + " steps")
     << "), then the cell.\n";
  os << "const int64_t B = " << *B << ", Tn = " << *Tn << ", I = " << *I << ", H = " << H
     << ", n = B * H;\n";
  os << "real_t *work = " << name(o.getWork()) << ";\n";
  os << "real_t *k[" << S << "];\n";
  os << "for (int s = 0; s < " << S << "; ++s) k[s] = work + (int64_t)s * n;\n";
  os << "real_t *h = work + " << K << "LL * n, *hnext = work + " << K + 1 << "LL * n;\n";
  os << "real_t *delta = (real_t *)nncc_ms_buffer_ptr(m, " << ws
     << "), *tcur = delta + B, *tprev = delta + 2 * B;\n";
  if (o.getH0())
    os << "memcpy(h, " << name(o.getH0()) << ", n * sizeof(real_t));\n";
  else
    os << "memset(h, 0, n * sizeof(real_t));\n";
  os << "const real_t *times = " << name(o.getTimes()) << ";\n";
  if (failed(emitRegionLambda(
          os, o.getDynamics(), "dynamics", "double s_, const real_t *hin_, real_t *dh_",
          "for (int64_t b = 0; b < B; ++b) tcur[b] = (real_t)((double)tprev[b] + s_ * "
          "(double)delta[b]);\nreal_t *" +
              p + "t = tcur; (void)" + p + "t;\nreal_t *" + p + "h = (real_t *)hin_; (void)" +
              p + "h;\nreal_t *" + p + "dh = dh_;\n")))
    return failure();
  if (failed(emitRegionLambda(os, o.getCell(), "cell", "",
                              "real_t *" + p + "xt = " + name(o.getXt()) + "; (void)" + p +
                                  "xt;\nreal_t *" + p + "ch = h; (void)" + p +
                                  "ch;\nreal_t *" + p + "chout = hnext;\n")))
    return failure();
  os << "for (int64_t i = 0; i < Tn; ++i) {\n";
  os.indent();
  os << "if (i > 0) {\n";
  os.indent();
  os << "for (int64_t b = 0; b < B; ++b) {\n"
        "  tprev[b] = times[b * Tn + i - 1];\n"
        "  delta[b] = times[b * Tn + i] - tprev[b];\n"
        "}\n";
  os << "const int rc_ = nncc::kernels::ode_integrate<real_t>(" << method << ", "
     << o.getSteps() << ", " << fmtDouble(o.getRtol()) << ", " << fmtDouble(o.getAtol())
     << ", n, H, delta, 0.0, 1.0, h, k, work + " << S << " * n, "
     << (adaptive ? "work + " + std::to_string(S + 1) + " * n" : std::string("(real_t *)NULL"))
     << ", dynamics, (int64_t *)NULL);\n";
  os << odeFailure(op);
  os.unindent();
  os << "}\n";
  os << "for (int64_t b = 0; b < B; ++b)\n"
        "  memcpy("
     << name(o.getXt()) << " + b * I, " << name(o.getX())
     << " + (b * Tn + i) * I, I * sizeof(real_t));\n";
  os << "{\n  const int rc_ = cell();\n";
  os << "  if (rc_ != 0) return (nncc_status)rc_;\n}\n";
  os << "memcpy(h, hnext, n * sizeof(real_t));\n";
  os << "for (int64_t b = 0; b < B; ++b)\n"
        "  memcpy("
     << name(o.getOut()) << " + (b * Tn + i) * H, h + b * H, H * sizeof(real_t));\n";
  os.unindent();
  os << "}\n";
  os.unindent();
  os << "}\n";
  return success();
}

FailureOr<std::string> CppEmitter::vjpDests(Operation *op, Block &body, unsigned nIn,
                                            ArrayRef<std::string> direct,
                                            const std::string &theta, std::string &total) {
  std::string prologue, offset = "0";
  for (unsigned i = nIn; i < body.getNumArguments(); ++i) {
    BlockArgument arg = body.getArgument(i);
    unsigned k = i - nIn;
    std::string nm = theta + "_d" + std::to_string(k);
    names[arg] = nm;
    if (k < direct.size()) {
      prologue += "real_t *" + nm + " = " + direct[k] + "; (void)" + nm + ";\n";
      continue;
    }
    FailureOr<std::string> sz = numel(op, cast<nnk::BufferType>(arg.getType()));
    if (failed(sz))
      return failure();
    prologue += "real_t *" + nm + " = " + theta + " + (" + offset + "); (void)" + nm + ";\n";
    offset += " + " + *sz;
  }
  total = offset;
  return prologue;
}

LogicalResult CppEmitter::emitODESolveGrad(raw_indented_ostream &os, nnk::ODESolveGradOp o) {
  needsODE = true;
  Operation *op = o.getOperation();
  auto hT = cast<nnk::BufferType>(o.getH().getType());
  int method = odeMethodCode(o.getMethod());
  FailureOr<std::string> n = numel(op, hT);
  if (failed(n))
    return failure();
  Block &dyn = o.getDynamics().front();
  Block &vjp = o.getVjp().front();
  if (dyn.getNumArguments() != 3 || vjp.getNumArguments() != 4 + o.getDparams().size())
    return o.emitError("nnk.ode_solve_grad: regions (t, h, dh) and (t, h, a, dh, dθ...)");
  std::string id = std::to_string(regionCounter++);
  std::string p = "odeg" + id + "_";
  names[dyn.getArgument(0)] = p + "t";
  names[dyn.getArgument(1)] = p + "h";
  names[dyn.getArgument(2)] = p + "dh";
  names[vjp.getArgument(0)] = p + "vt";
  names[vjp.getArgument(1)] = p + "vh";
  names[vjp.getArgument(2)] = p + "va";
  std::string total;
  FailureOr<std::string> dests = vjpDests(op, vjp, 3, {"dh_"}, p + "th", total);
  if (failed(dests))
    return failure();
  os << "{\n";
  os.indent();
  os << "// " << (o.getAdjoint() ? "adjoint method (augmented state integrated back)"
                                 : "backpropagation through the solver steps")
     << ", " << stringifyEnum(o.getMethod()) << ", "
     << (o.getSteps() ? std::to_string(o.getSteps()) + " steps" : std::string("adaptive"))
     << "\n";
  os << "const int64_t n = " << *n << ", P = " << total << ";\n";
  os << "std::vector<real_t> thacc_((size_t)P, (real_t)0), thtmp_((size_t)P + 1);\n";
  os << "real_t tbuf[1] = {0};\n";
  if (failed(emitRegionLambda(os, o.getDynamics(), "dynamics",
                              "double s_, const real_t *hin_, real_t *dh_",
                              "tbuf[0] = (real_t)s_;\nreal_t *" + p + "t = tbuf; (void)" + p +
                                  "t;\nreal_t *" + p + "h = (real_t *)hin_; (void)" + p +
                                  "h;\nreal_t *" + p + "dh = dh_;\n")))
    return failure();
  if (failed(emitRegionLambda(
          os, o.getVjp(), "vjp",
          "double s_, const real_t *hin_, const real_t *ain_, real_t *dh_, real_t *th_",
          "tbuf[0] = (real_t)s_;\nreal_t *" + p + "vt = tbuf; (void)" + p + "vt;\nreal_t *" +
              p + "vh = (real_t *)hin_; (void)" + p + "vh;\nreal_t *" + p +
              "va = (real_t *)ain_; (void)" + p + "va;\nreal_t *" + p + "th = th_; (void)" +
              p + "th;\n" + *dests)))
    return failure();
  os << "memcpy(" << name(o.getDh0()) << ", " << name(o.getA1()) << ", n * sizeof(real_t));\n";
  os << "const int rc_ = nncc::grad::ode_grad<real_t>(" << method << ", " << o.getSteps()
     << ", " << fmtDouble(o.getRtol()) << ", " << fmtDouble(o.getAtol()) << ", "
     << (o.getAdjoint() ? 1 : 0) << ", n, n, (const real_t *)NULL, (double)"
     << name(o.getT0()) << "[0], (double)" << name(o.getT1()) << "[0], " << name(o.getH())
     << ", " << name(o.getDh0())
     << ", P, thacc_.data(), dynamics, [&](double s_, const real_t *h_, const real_t *a_, "
        "real_t *dh_, real_t *th_) { return vjp(s_, h_, a_, dh_, th_); });\n";
  os << gradFailure(op);
  std::string off = "0";
  for (Value d : o.getDparams()) {
    FailureOr<std::string> sz = numel(op, cast<nnk::BufferType>(d.getType()));
    if (failed(sz))
      return failure();
    os << "memcpy(" << name(d) << ", thacc_.data() + (" << off << "), " << *sz
       << " * sizeof(real_t));\n";
    off += " + " + *sz;
  }
  os.unindent();
  os << "}\n";
  return success();
}

LogicalResult CppEmitter::emitODERNNGrad(raw_indented_ostream &os, nnk::ODERNNGradOp o) {
  needsODE = true;
  Operation *op = o.getOperation();
  auto xT = cast<nnk::BufferType>(o.getX().getType());
  int method = odeMethodCode(o.getMethod());
  int S = odeStages(method);
  bool adaptive = method == 2 && o.getSteps() == 0;
  auto B = dimExpr(op, xT.getDim(0)), Tn = dimExpr(op, xT.getDim(1)),
       I = dimExpr(op, xT.getDim(2));
  if (failed(B) || failed(Tn) || failed(I))
    return failure();
  int64_t H = o.getHiddenSize();
  int64_t nDyn = o.getNumDynamicsParams();
  int64_t nCell = (int64_t)o.getDparams().size() - nDyn;
  Block &dyn = o.getDynamics().front();
  Block &dvjp = o.getDynamicsVjp().front();
  Block &cvjp = o.getCellVjp().front();
  if (dyn.getNumArguments() != 3 || dvjp.getNumArguments() != 4 + nDyn ||
      cvjp.getNumArguments() != 5 + nCell || nCell < 0)
    return o.emitError("nnk.ode_rnn_grad: unexpected region signatures");
  std::string id = std::to_string(regionCounter++);
  std::string p = "odernng" + id + "_";
  names[dyn.getArgument(0)] = p + "t";
  names[dyn.getArgument(1)] = p + "h";
  names[dyn.getArgument(2)] = p + "dh";
  names[dvjp.getArgument(0)] = p + "vt";
  names[dvjp.getArgument(1)] = p + "vh";
  names[dvjp.getArgument(2)] = p + "va";
  names[cvjp.getArgument(0)] = p + "cx";
  names[cvjp.getArgument(1)] = p + "ch";
  names[cvjp.getArgument(2)] = p + "ca";
  std::string dynTotal, cellTotal;
  FailureOr<std::string> dDests = vjpDests(op, dvjp, 3, {"dh_"}, p + "th", dynTotal);
  FailureOr<std::string> cDests = vjpDests(op, cvjp, 3, {"dx_", "dh_"}, p + "ph", cellTotal);
  if (failed(dDests) || failed(cDests))
    return failure();
  os << "{\n";
  os.indent();
  os << "// ODE-RNN backward: BPTT over the observations; per segment the state\n"
        "// before the cell is recomputed, then the cell's VJP, then the segment's\n"
        "// "
     << (o.getAdjoint() ? "adjoint solve" : "backpropagation through the solver steps")
     << " (" << stringifyEnum(o.getMethod())
     << (adaptive ? ", adaptive" : ", " + std::to_string(o.getSteps()) + " steps") << ").\n";
  os << "const int64_t B = " << *B << ", Tn = " << *Tn << ", I = " << *I << ", H = " << H
     << ", n = B * H;\n";
  os << "const int64_t Pd = " << dynTotal << ", Pc = " << cellTotal << ";\n";
  os << "std::vector<real_t> thacc_((size_t)Pd, (real_t)0), phacc_((size_t)Pc, (real_t)0),"
        " phtmp_((size_t)Pc + 1);\n";
  os << "std::vector<real_t> delta((size_t)B), tcur((size_t)B), tprev((size_t)B);\n";
  os << "std::vector<real_t> hprev((size_t)n), htil((size_t)n), a((size_t)n), carry((size_t)n, "
        "(real_t)0), dhtil((size_t)n);\n";
  os << "std::vector<real_t> xt((size_t)(B * I)), dxt((size_t)(B * I));\n";
  os << "std::vector<real_t> kb_((size_t)" << S + 2 << " * n);\n";
  os << "real_t *k[" << S << "];\n";
  os << "for (int s = 0; s < " << S << "; ++s) k[s] = kb_.data() + (int64_t)s * n;\n";
  os << "const real_t *times = " << name(o.getTimes()) << ";\n";
  std::string tmap = "for (int64_t b = 0; b < B; ++b) tcur[b] = (real_t)((double)tprev[b] + "
                     "s_ * (double)delta[b]);\n";
  if (failed(emitRegionLambda(os, o.getDynamics(), "dynamics",
                              "double s_, const real_t *hin_, real_t *dh_",
                              tmap + "real_t *" + p + "t = tcur.data(); (void)" + p +
                                  "t;\nreal_t *" + p + "h = (real_t *)hin_; (void)" + p +
                                  "h;\nreal_t *" + p + "dh = dh_;\n")))
    return failure();
  if (failed(emitRegionLambda(
          os, o.getDynamicsVjp(), "dynvjp",
          "double s_, const real_t *hin_, const real_t *ain_, real_t *dh_, real_t *th_",
          tmap + "real_t *" + p + "vt = tcur.data(); (void)" + p + "vt;\nreal_t *" + p +
              "vh = (real_t *)hin_; (void)" + p + "vh;\nreal_t *" + p +
              "va = (real_t *)ain_; (void)" + p + "va;\nreal_t *" + p + "th = th_; (void)" +
              p + "th;\n" + *dDests)))
    return failure();
  if (failed(emitRegionLambda(
          os, o.getCellVjp(), "cellvjp",
          "const real_t *xin_, const real_t *hin_, const real_t *ain_, real_t *dx_, real_t *dh_, "
          "real_t *ph_",
          "real_t *" + p + "cx = (real_t *)xin_; (void)" + p + "cx;\nreal_t *" + p +
              "ch = (real_t *)hin_; (void)" + p + "ch;\nreal_t *" + p +
              "ca = (real_t *)ain_; (void)" + p + "ca;\nreal_t *" + p + "ph = ph_; (void)" + p +
              "ph;\n" + *cDests)))
    return failure();
  os << "for (int64_t i = Tn - 1; i >= 0; --i) {\n";
  os.indent();
  os << "for (int64_t b = 0; b < B; ++b)\n";
  os << "  for (int64_t j = 0; j < H; ++j)\n";
  os << "    hprev[b * H + j] = i > 0 ? " << name(o.getHs()) << "[(b * Tn + i - 1) * H + j] : "
     << (o.getH0() ? name(o.getH0()) + "[b * H + j]" : std::string("(real_t)0")) << ";\n";
  os << "memcpy(htil.data(), hprev.data(), n * sizeof(real_t));\n";
  os << "if (i > 0) {\n";
  os.indent();
  os << "for (int64_t b = 0; b < B; ++b) {\n"
        "  tprev[b] = times[b * Tn + i - 1];\n"
        "  delta[b] = times[b * Tn + i] - tprev[b];\n"
        "}\n";
  os << "const int rc_ = nncc::kernels::ode_integrate<real_t>(" << method << ", "
     << o.getSteps() << ", " << fmtDouble(o.getRtol()) << ", " << fmtDouble(o.getAtol())
     << ", n, H, delta.data(), 0.0, 1.0, htil.data(), k, kb_.data() + " << S << " * n, "
     << (adaptive ? "kb_.data() + " + std::to_string(S + 1) + " * n"
                  : std::string("(real_t *)NULL"))
     << ", dynamics, (int64_t *)NULL);\n";
  os << odeFailure(op);
  os.unindent();
  os << "}\n";
  os << "for (int64_t b = 0; b < B; ++b) {\n"
        "  memcpy(xt.data() + b * I, "
     << name(o.getX()) << " + (b * Tn + i) * I, I * sizeof(real_t));\n"
     << "  for (int64_t j = 0; j < H; ++j)\n"
     << "    a[b * H + j] = " << name(o.getDhs()) << "[(b * Tn + i) * H + j] + carry[b * H + j];\n"
     << "}\n";
  os << "{\n  const int rc_ = cellvjp(xt.data(), htil.data(), a.data(), dxt.data(), "
        "dhtil.data(), phtmp_.data());\n";
  os << "  if (rc_ != 0) return (nncc_status)rc_;\n}\n";
  os << "for (int64_t q = 0; q < Pc; ++q) phacc_[q] += phtmp_[q];\n";
  os << "for (int64_t b = 0; b < B; ++b)\n"
        "  memcpy("
     << name(o.getDx()) << " + (b * Tn + i) * I, dxt.data() + b * I, I * sizeof(real_t));\n";
  os << "if (i > 0) {\n";
  os.indent();
  os << "const int rc_ = nncc::grad::ode_grad<real_t>(" << method << ", " << o.getSteps()
     << ", " << fmtDouble(o.getRtol()) << ", " << fmtDouble(o.getAtol()) << ", "
     << (o.getAdjoint() ? 1 : 0) << ", n, H, delta.data(), 0.0, 1.0, "
     << (o.getAdjoint() ? "htil.data()" : "hprev.data()")
     << ", dhtil.data(), Pd, thacc_.data(), dynamics, [&](double s_, const real_t *h_, "
        "const real_t *a_, real_t *dh_, real_t *th_) { return dynvjp(s_, h_, a_, dh_, th_); });\n";
  os << gradFailure(op);
  os.unindent();
  os << "}\n";
  os << "memcpy(carry.data(), dhtil.data(), n * sizeof(real_t));\n";
  os.unindent();
  os << "}\n";
  os << "memcpy(" << name(o.getDh0()) << ", carry.data(), n * sizeof(real_t));\n";
  std::string offD = "0", offC = "0";
  for (auto [k, d] : llvm::enumerate(o.getDparams())) {
    FailureOr<std::string> sz = numel(op, cast<nnk::BufferType>(d.getType()));
    if (failed(sz))
      return failure();
    bool isDyn = (int64_t)k < nDyn;
    std::string &off = isDyn ? offD : offC;
    os << "memcpy(" << name(d) << ", " << (isDyn ? "thacc_" : "phacc_") << ".data() + ("
       << off << "), " << *sz << " * sizeof(real_t));\n";
    off += " + " + *sz;
  }
  os.unindent();
  os << "}\n";
  return success();
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
