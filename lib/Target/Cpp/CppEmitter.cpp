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

#include "../Common/LaunchEmitter.h"
#include "nncc/Kernels/ODESolver.h"


using namespace mlir;

namespace nncc::target {
namespace {

/// What a generated host source includes; `when`: for which models.
/// hostPrelude() includes them all.
struct HostInclude {
  const char *header;
  enum When { Always, ODE, Training } when;
};
constexpr HostInclude kHostIncludes[] = {
    {"\"nncc/ModelSupport/ModelSupport.h\"", HostInclude::Always},
    {"\"nncc/Kernels/Bf16.h\"", HostInclude::Always},
    {"\"nncc/Kernels/Common.h\"", HostInclude::Always},
    {"\"nncc/Kernels/AttentionMath.h\"", HostInclude::Always},
    {"\"nncc/Kernels/Kernels.h\"", HostInclude::Always},
    {"\"nncc/Kernels/ODESolver.h\"", HostInclude::ODE},
    {"\"nncc/Kernels/GradKernels.h\"", HostInclude::Training},
    {"<vector>", HostInclude::Training},
    {"<math.h>", HostInclude::Always},
    {"<stdint.h>", HostInclude::Always},
    {"<string.h>", HostInclude::Always},
};

class CppEmitter : public LaunchEmitter {
public:
  explicit CppEmitter(ModuleOp module, Precision precision = Precision::F32)
      : LaunchEmitter(module, TargetKind::CPU, precision) {}

  /// Only the buffer plan: the launch sequences run (they add the
  /// workspaces) without their comments, and nothing else is printed;
  /// `onlyTraining`: not @forward's sequence either (its workspaces are
  /// missing from the plan), and the module need not have @forward.
  void planBuffersOnly(bool onlyTraining) {
    planOnly = true;
    trainingOnly = onlyTraining;
  }
  LogicalResult emit(raw_indented_ostream &os, bool withCuda);

  //===--- target hooks -----------------------------------------------------===//
  std::string checked(const std::string &callExpr) override {
    return "NNCC_GEN_CHECK(" + callExpr + ", " + cString(launchComment(op())) + ");\n";
  }
  /// An arena slot live only during the current launch.
  std::string workspace(const Size &bytes) override {
    return "nncc_ms_buffer_ptr(m, " + std::to_string(addWorkspace(op(), bytes)) + ")";
  }
  LogicalResult copyNd(const StridedCopy &c) override {
    auto ct = cType(c.elementType);
    if (failed(ct))
      return failure();
    out() << "{\n  const int64_t shape[] = {" << llvm::join(c.shape, ", ") << "}, ds[] = {"
          << llvm::join(c.dstStrides, ", ") << "}, ss[] = {" << llvm::join(c.srcStrides, ", ")
          << "};\n  nncc_ms_copy_nd(sizeof(" << *ct << "), " << c.shape.size() << ", shape, "
          << c.dst << ", ds, " << c.src << ", ss);\n}\n";
    return success();
  }
  void copyOne(const std::string &dst, const std::string &src) override {
    out() << "*(" << dst << ") = *(" << src << ");\n";
  }
  LogicalResult odeSolveLoop(nnk::ODESolveOp o) override { return emitODESolve(out(), o); }
  LogicalResult odeRNNLoop(nnk::ODERNNOp o) override { return emitODERNN(out(), o); }
  LogicalResult odeSolveGradLoop(nnk::ODESolveGradOp o) override {
    return emitODESolveGrad(out(), o);
  }
  LogicalResult odeRNNGradLoop(nnk::ODERNNGradOp o) override { return emitODERNNGrad(out(), o); }

private:
  bool needsODE = false;
  int regionCounter = 0; // unique names of region lambdas
  /// A region's body as a lambda `name(args...) -> int` (0 or a status);
  /// `prologue` binds the block arguments (C++ statements naming them).
  LogicalResult emitRegionLambda(raw_indented_ostream &os, Region &region,
                                 const std::string &lambda, const std::string &params,
                                 const std::string &prologue);
  LogicalResult emitODESolve(raw_indented_ostream &os, nnk::ODESolveOp op);
  LogicalResult emitODERNN(raw_indented_ostream &os, nnk::ODERNNOp op);
  LogicalResult emitODESolveGrad(raw_indented_ostream &os, nnk::ODESolveGradOp op);
  LogicalResult emitODERNNGrad(raw_indented_ostream &os, nnk::ODERNNGradOp op);
  /// The ODE-RNN backward's region lambdas: dynamics, dynvjp and cellvjp.
  LogicalResult emitODERNNGradLambdas(raw_indented_ostream &os, nnk::ODERNNGradOp o,
                                      const std::string &p, const std::string &dDests,
                                      const std::string &cDests);
  /// The ODE-RNN backward's loop over the observations, last to first.
  /// The status check after a solver call that returns rc_ (negative: the
  /// solver's own error, described by `describe`).
  std::string solverFailure(Operation *op, const char *describe) {
    return "if (rc_ != 0) {\n"
           "  if (rc_ < 0)\n"
           "    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, \"%s: %s\", " +
           cString(launchComment(op)) + ", " + describe +
           "(rc_));\n"
           "  return (nncc_status)rc_;\n"
           "}\n";
  }
  /// The bytes of ode_grad's scratch (nncc_ode_grad_workspace_size) for
  /// `n` state and `P` parameter elements: an evaluable expression.
  static Size odeGradScratch(int method, int64_t steps, int64_t maxSteps, bool adjoint,
                             const Size &n, const Size &P) {
    return Size::call(size_fn::odeGradWorkspace,
                      {Size::constant(method), Size::constant(steps), Size::constant(maxSteps),
                       Size::constant(adjoint ? 1 : 0), n, P, Size::realBytes()});
  }
  std::string odeFailure(Operation *op) {
    return solverFailure(op, "nncc::kernels::ode_error_string");
  }
};

void emitPrecision(raw_indented_ostream &os) {
  os << "// The float type of every kernel: one alias, f64 and bf16 are switches\n"
        "// (compile with -DNNCC_PRECISION_F64 / _BF16; a bf16 library's CPU entries\n"
        "// report that it runs on CUDA only).\n"
        "#if defined(NNCC_PRECISION_F64)\n"
        "typedef double real_t;\n"
        "#define NNCC_REAL_DTYPE NNCC_DTYPE_F64\n"
        "#define NNCC_PRECISION \"f64\"\n"
        "#define NNCC_KFN(name) name##_f64\n"
        "#define NNCC_MS_REDUCE nncc_ms_reduce_f64\n"
        "#define NNCC_RNG_NORMAL nncc_rng_fill_normal_f64\n"
        "#elif defined(NNCC_PRECISION_BF16)\n"
        "typedef nncc::kernels::bf16_t real_t;\n"
        "#define NNCC_REAL_DTYPE NNCC_DTYPE_BF16\n"
        "#define NNCC_PRECISION \"bf16\"\n"
        "#else\n"
        "typedef float real_t;\n"
        "#define NNCC_REAL_DTYPE NNCC_DTYPE_F32\n"
        "#define NNCC_PRECISION \"f32\"\n"
        "#define NNCC_KFN(name) name##_f32\n"
        "#define NNCC_MS_REDUCE nncc_ms_reduce_f32\n"
        "#define NNCC_RNG_NORMAL nncc_rng_fill_normal_f32\n"
        "#endif\n"
        "using nncc::kernels::acc_t;\n"
        "using nncc::kernels::load_acc;\n"
        "using nncc::kernels::store_acc;\n"
        "#ifndef NNCC_MODEL_EXPORT\n"
        "#define NNCC_MODEL_EXPORT __attribute__((visibility(\"default\")))\n"
        "#endif\n\n";
}



LogicalResult CppEmitter::emit(raw_indented_ostream &os, bool withCuda) {
  if (failed(analyze()))
    return failure();
  // Print the launch sequence first: it adds workspace buffers to the plan.
  profileLaunches = true;
  std::string fwd;
  {
    llvm::raw_string_ostream fs(fwd);
    raw_indented_ostream f(fs);
    f << "static nncc_status forward_cpu(nncc_model *m, nncc_error *err) {\n";
    f.indent();
    if (!planOnly && failed(emitForwardPrologue(f)))
      return failure();
    SmallVector<Operation *> ops;
    if (!trainingOnly)
      for (Operation &op : forward.getBody().front().without_terminator())
        ops.push_back(&op);
    if (failed(emitLaunchSequence(f, ops)))
      return failure();
    f << "return NNCC_OK;\n";
    f.unindent();
    f << "}\n";
    if (train) {
      auto [fwdTrain, bwd] = trainHalves();
      for (int half = 0; half < 2; ++half) {
        f << (half == 0 ? "static nncc_status forward_train_cpu(nncc_model *m, nncc_error *err) {\n"
                        : "static nncc_status backward_cpu(nncc_model *m, nncc_error *err) {\n");
        f.indent();
        if (!planOnly && failed(emitForwardPrologue(f, train)))
          return failure();
        if (failed(emitLaunchSequence(f, half == 0 ? fwdTrain : bwd)))
          return failure();
        f << "return NNCC_OK;\n";
        f.unindent();
        f << "}\n";
      }
    }
  }
  if (planOnly)
    return success();
  // bf16 has no CPU kernels: the sequence above only planned the CPU
  // workspaces (the arena is the same plan on both targets).
  if (isBf16()) {
    fwd.clear();
    llvm::raw_string_ostream fs(fwd);
    const std::string why =
        cString("'" + modelName + "' was compiled with --precision bf16, which runs on CUDA only");
    for (const char *fn : {"forward_cpu", "forward_train_cpu", "backward_cpu"}) {
      if (!train && llvm::StringRef(fn) != "forward_cpu")
        continue;
      fs << "static nncc_status " << fn << "(nncc_model *m, nncc_error *err) {\n"
         << "  (void)m;\n  return nncc_error_set(err, NNCC_ERROR_UNSUPPORTED, \"%s\", " << why
         << ");\n}\n";
    }
  }

  os << "// Generated by nncc from model '" << modelName
     << "': host C++ (the CPU launch sequence) and the C ABI of nncc_model.h.\n"
     << "// Do not edit; regenerate with `nncc compile`.\n";
  for (const HostInclude &inc : kHostIncludes)
    if (inc.when == HostInclude::Always || (inc.when == HostInclude::ODE && needsODE) ||
        (inc.when == HostInclude::Training && train))
      os << "#include " << inc.header << "\n";
  os << "\n";
  emitPrecision(os);
  os << "#define NNCC_GEN_CHECK(call, what)                                   \\\n"
        "  do {                                                               \\\n"
        "    int rc_ = (call);                                                \\\n"
        "    if (rc_ != 0)                                                    \\\n"
        "      return nncc_ms_kernel_status(rc_, what, err);                  \\\n"
        "  } while (0)\n\n";
  os << "namespace {\n";
  emitMathPrelude(os, "static inline", /*hostPolynomials=*/true);
  emitSharedHelpers(os, "static inline");
  os << "} // namespace\n\n";
  if (failed(emitTables(os, withCuda)))
    return failure();
  os << "// ---- the CPU launch sequence ----\n";
  os << fwd;
  return success();
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
    if (failed(emitLaunch(os, &inner)))
      return failure();
  os << "return 0;\n";
  os.unindent();
  os << "};\n";
  return success();
}

/// The solver's method code (Codes.h's NNCC_ODE_*, asserted equal to the
/// enum in NNKOps.cpp).
static int odeMethodCode(nnk::ODEMethod m) { return static_cast<int>(m); }

LogicalResult CppEmitter::emitODESolve(raw_indented_ostream &os, nnk::ODESolveOp o) {
  needsODE = true;
  Operation *op = o.getOperation();
  auto outT = cast<nnk::BufferType>(o.getOut().getType());
  auto workT = cast<nnk::BufferType>(o.getWork().getType());
  int method = odeMethodCode(o.getMethod());
  int S = nncc::kernels::ode_stages(method);
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
  int S = nncc::kernels::ode_stages(method);
  bool adaptive = method == 2 && o.getSteps() == 0;
  int64_t K = workT.getDim(0).isStatic() ? workT.getDim(0).getSize() - 2 : -1;
  if (K < S + (adaptive ? 2 : 1))
    return o.emitError() << "nnk.ode_rnn: the work buffer needs at least "
                         << S + (adaptive ? 2 : 1) + 2 << " slots";
  auto B = dimExpr(op, xT.getDim(0)), Tn = dimExpr(op, xT.getDim(1)),
       I = dimExpr(op, xT.getDim(2));
  auto Bsize = dimSize(op, xT.getDim(0));
  if (failed(B) || failed(Tn) || failed(I) || failed(Bsize))
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
  int ws = addWorkspace(op, Size::constant(3) * *Bsize * Size::realBytes());
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
  os << "real_t *h = work + " << K << "LL * n, *hnext = work + " << K + 1 << "LL * n;\n";
  os << "real_t *delta = (real_t *)nncc_ms_buffer_ptr(m, " << ws
     << "), *tcur = delta + B, *tprev = delta + 2 * B;\n";
  // The rows' times are in tcur when the dynamics run (set by the driver);
  // the cell maps (x_t, h) to hnext.
  if (failed(emitRegionLambda(os, o.getDynamics(), "dynamics",
                              "double s_, const real_t *hin_, real_t *dh_",
                              "(void)s_;\nreal_t *" + p + "t = tcur; (void)" + p +
                                  "t;\nreal_t *" + p + "h = (real_t *)hin_; (void)" + p +
                                  "h;\nreal_t *" + p + "dh = dh_;\n")))
    return failure();
  if (failed(emitRegionLambda(os, o.getCell(), "cell", "",
                              "real_t *" + p + "xt = " + name(o.getXt()) + "; (void)" + p +
                                  "xt;\nreal_t *" + p + "ch = h; (void)" + p +
                                  "ch;\nreal_t *" + p + "chout = hnext;\n")))
    return failure();
  os << "const int rc_ = nncc::kernels::ode_rnn<real_t>(" << method << ", " << o.getSteps()
     << ", " << fmtDouble(o.getRtol()) << ", " << fmtDouble(o.getAtol()) << ", B, Tn, I, H, "
     << name(o.getX()) << ", " << name(o.getTimes()) << ", "
     << (o.getH0() ? name(o.getH0()) : std::string("(const real_t *)NULL")) << ", "
     << name(o.getOut()) << ", work, " << K << ", " << name(o.getXt())
     << ", delta, tprev, tcur, dynamics, cell);\n";
  os << odeFailure(op);
  os.unindent();
  os << "}\n";
  return success();
}

LogicalResult CppEmitter::emitODESolveGrad(raw_indented_ostream &os, nnk::ODESolveGradOp o) {
  needsODE = true;
  Operation *op = o.getOperation();
  auto hT = cast<nnk::BufferType>(o.getH().getType());
  int method = odeMethodCode(o.getMethod());
  FailureOr<Size> n = numelSize(op, hT);
  if (failed(n))
    return failure();
  Block &vjp = o.getVjp().front();
  std::string id = std::to_string(regionCounter++);
  std::string p = "odeg" + id + "_";
  if (failed(nameOdeGradRegions(o, p)))
    return failure();
  std::optional<Size> total;
  FailureOr<std::string> dests = odeVjpDests(vjp, 3, {"dh_"}, p + "th", total);
  if (failed(dests))
    return failure();
  os << "{\n";
  os.indent();
  os << "// " << (o.getAdjoint() ? "adjoint method (augmented state integrated back)"
                                 : "backpropagation through the solver steps")
     << ", " << stringifyEnum(o.getMethod()) << ", "
     << (o.getSteps() ? std::to_string(o.getSteps()) + " steps" : std::string("adaptive"))
     << "\n";
  // One arena workspace: ode_grad's scratch, then the accumulated dθ [P].
  Size scratch =
      odeGradScratch(method, o.getSteps(), o.getMaxSteps(), o.getAdjoint(), *n, *total);
  int ws = addWorkspace(op, (scratch + total->paren() * Size::realBytes()).paren());
  os << "const int64_t n = " << n->str() << ", P = " << total->str() << ";\n";
  os << "char *ws_ = (char *)nncc_ms_buffer_ptr(m, " << ws << ");\n";
  os << "real_t *thacc_ = (real_t *)(ws_ + " << scratch.str() << ");\n";
  os << "memset(thacc_, 0, (size_t)P * sizeof(real_t));\n";
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
     << ", " << o.getMaxSteps() << ", " << fmtDouble(o.getRtol()) << ", "
     << fmtDouble(o.getAtol()) << ", " << (o.getAdjoint() ? 1 : 0)
     << ", n, n, (const real_t *)NULL, (double)" << name(o.getT0()) << "[0], (double)"
     << name(o.getT1()) << "[0], " << name(o.getH()) << ", " << name(o.getDh0())
     << ", P, thacc_, ws_, dynamics, [&](double s_, const real_t *h_, const real_t *a_, "
        "real_t *dh_, real_t *th_) { return vjp(s_, h_, a_, dh_, th_); });\n";
  os << odeGradFailure(o.getMaxSteps());
  FailureOr<SmallVector<OdeParamSlice>> slices = odeParamSlices(o.getDparams());
  if (failed(slices))
    return failure();
  for (const OdeParamSlice &sl : *slices)
    os << "memcpy(" << sl.dest << ", thacc_ + (" << sl.offset << "), " << sl.size
       << " * sizeof(real_t));\n";
  os.unindent();
  os << "}\n";
  return success();
}

LogicalResult CppEmitter::emitODERNNGrad(raw_indented_ostream &os, nnk::ODERNNGradOp o) {
  needsODE = true;
  Operation *op = o.getOperation();
  auto xT = cast<nnk::BufferType>(o.getX().getType());
  int method = odeMethodCode(o.getMethod());
  int S = nncc::kernels::ode_stages(method);
  bool adaptive = method == 2 && o.getSteps() == 0;
  auto B = dimExpr(op, xT.getDim(0)), Tn = dimExpr(op, xT.getDim(1)),
       I = dimExpr(op, xT.getDim(2));
  auto Bsize = dimSize(op, xT.getDim(0)), Isize = dimSize(op, xT.getDim(2));
  if (failed(B) || failed(Tn) || failed(I) || failed(Bsize) || failed(Isize))
    return failure();
  int64_t H = o.getHiddenSize();
  int64_t nDyn = o.getNumDynamicsParams();
  Block &dvjp = o.getDynamicsVjp().front();
  Block &cvjp = o.getCellVjp().front();
  std::string id = std::to_string(regionCounter++);
  std::string p = "odernng" + id + "_";
  if (failed(nameOdeGradRegions(o, p)))
    return failure();
  std::optional<Size> dynTotal, cellTotal;
  FailureOr<std::string> dDests = odeVjpDests(dvjp, 3, {"dh_"}, p + "th", dynTotal);
  FailureOr<std::string> cDests = odeVjpDests(cvjp, 3, {"dx_", "dh_"}, p + "ph", cellTotal);
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
     << ";\n";
  os << "const int64_t Pd = " << dynTotal->str() << ", Pc = " << cellTotal->str() << ";\n";
  // One arena workspace: the segments' ode_grad scratch (reused by each),
  // then the loop's own arrays (real_t, ode_rnn_grad_layout): dθ, dφ, the
  // cell VJP's dφ (Pc + 1), the row times (3 B), the states and adjoints
  // (5 n), x_t and dx_t (2 B I), the forward re-solve's stage slots
  // (S + 2) n.
  Size nSize = (*Bsize * Size::constant(H, std::to_string(H) + "LL")).paren();
  Size scratch = odeGradScratch(method, o.getSteps(), o.getMaxSteps(), o.getAdjoint(), nSize,
                                *dynTotal);
  Size own = dynTotal->paren() + Size::constant(2) * cellTotal->paren() + Size::constant(1) +
             Size::constant(3) * *Bsize + Size::constant(5 + S + 2) * nSize +
             Size::constant(2) * *Bsize * *Isize;
  int ws = addWorkspace(op, (scratch + own.paren() * Size::realBytes()).paren());
  os << "char *ws_ = (char *)nncc_ms_buffer_ptr(m, " << ws << ");\n";
  os << "const nncc::grad::OdeRnnGradLayout lay_ = nncc::grad::ode_rnn_grad_layout(" << method
     << ", " << o.getSteps() << ", " << o.getMaxSteps() << ", " << (o.getAdjoint() ? 1 : 0)
     << ", B, I, H, Pd, Pc, (int64_t)sizeof(real_t));\n";
  os << "real_t *arr_ = (real_t *)(ws_ + lay_.scratch);\n";
  os << "real_t *thacc_ = arr_ + lay_.thacc, *phacc_ = arr_ + lay_.phacc;\n";
  os << "real_t *tcur = arr_ + lay_.tcur; (void)tcur; // the rows' times (the driver's)\n";
  if (failed(emitODERNNGradLambdas(os, o, p, *dDests, *cDests)))
    return failure();
  os << "const int rc_ = nncc::grad::ode_rnn_grad<real_t>(" << method << ", " << o.getSteps()
     << ", " << o.getMaxSteps() << ", " << fmtDouble(o.getRtol()) << ", "
     << fmtDouble(o.getAtol()) << ", " << (o.getAdjoint() ? 1 : 0) << ", B, Tn, I, H, "
     << name(o.getX()) << ", " << name(o.getTimes()) << ", "
     << (o.getH0() ? name(o.getH0()) : std::string("(const real_t *)NULL")) << ", "
     << name(o.getHs()) << ", " << name(o.getDhs()) << ", " << name(o.getDx()) << ", "
     << name(o.getDh0()) << ", Pd, thacc_, Pc, phacc_, ws_, dynamics, dynvjp, cellvjp);\n";
  os << odeGradFailure(o.getMaxSteps());
  FailureOr<SmallVector<OdeParamSlice>> dynSlices =
      odeParamSlices(o.getDparams().take_front(nDyn));
  FailureOr<SmallVector<OdeParamSlice>> cellSlices =
      odeParamSlices(o.getDparams().drop_front(nDyn));
  if (failed(dynSlices) || failed(cellSlices))
    return failure();
  for (auto [acc, slices] : {std::pair{"thacc_", &*dynSlices}, {"phacc_", &*cellSlices}})
    for (const OdeParamSlice &sl : *slices)
      os << "memcpy(" << sl.dest << ", " << acc << " + (" << sl.offset << "), " << sl.size
         << " * sizeof(real_t));\n";
  os.unindent();
  os << "}\n";
  return success();
}

LogicalResult CppEmitter::emitODERNNGradLambdas(raw_indented_ostream &os, nnk::ODERNNGradOp o,
                                                const std::string &p,
                                                const std::string &dDests,
                                                const std::string &cDests) {
  // The rows' times are in tcur when the regions run (set by the driver).
  if (failed(emitRegionLambda(os, o.getDynamics(), "dynamics",
                              "double s_, const real_t *hin_, real_t *dh_",
                              "(void)s_;\nreal_t *" + p + "t = tcur; (void)" + p +
                                  "t;\nreal_t *" + p + "h = (real_t *)hin_; (void)" + p +
                                  "h;\nreal_t *" + p + "dh = dh_;\n")))
    return failure();
  if (failed(emitRegionLambda(
          os, o.getDynamicsVjp(), "dynvjp",
          "double s_, const real_t *hin_, const real_t *ain_, real_t *dh_, real_t *th_",
          "(void)s_;\nreal_t *" + p + "vt = tcur; (void)" + p + "vt;\nreal_t *" + p +
              "vh = (real_t *)hin_; (void)" + p + "vh;\nreal_t *" + p +
              "va = (real_t *)ain_; (void)" + p + "va;\nreal_t *" + p + "th = th_; (void)" +
              p + "th;\n" + dDests)))
    return failure();
  if (failed(emitRegionLambda(
          os, o.getCellVjp(), "cellvjp",
          "const real_t *xin_, const real_t *hin_, const real_t *ain_, real_t *dx_, real_t *dh_, "
          "real_t *ph_",
          "real_t *" + p + "cx = (real_t *)xin_; (void)" + p + "cx;\nreal_t *" + p +
              "ch = (real_t *)hin_; (void)" + p + "ch;\nreal_t *" + p +
              "ca = (real_t *)ain_; (void)" + p + "ca;\nreal_t *" + p + "ph = ph_; (void)" + p +
              "ph;\n" + cDests)))
    return failure();
  return success();
}

} // namespace

std::unique_ptr<LaunchEmitter> createCppLaunchEmitter(ModuleOp module) {
  return std::make_unique<CppEmitter>(module);
}

LogicalResult emitCpp(ModuleOp module, llvm::raw_ostream &os, bool withCuda,
                      Precision precision) {
  CppEmitter emitter(module, precision);
  return printIfEmitted(os,
                        [&](raw_indented_ostream &out) { return emitter.emit(out, withCuda); });
}

std::string hostPrelude() {
  std::string text = "// Every header a source of nncc's C++ emitter may include.\n";
  for (const HostInclude &inc : kHostIncludes)
    text += std::string("#include ") + inc.header + "\n";
  return text;
}

LogicalResult withCpuBufferPlan(ModuleOp module,
                                llvm::function_ref<LogicalResult(const ModelEmitter &)> use,
                                bool trainingOnly) {
  CppEmitter emitter(module);
  emitter.planBuffersOnly(trainingOnly);
  raw_indented_ostream os(llvm::nulls());
  if (failed(emitter.emit(os, /*withCuda=*/false)))
    return failure();
  return use(emitter);
}

} // namespace nncc::target
