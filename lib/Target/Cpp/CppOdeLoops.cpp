//===- CppOdeLoops.cpp - the ODE ops on the CPU ----------------------------===//
//
// nnk.ode_solve, nnk.ode_rnn and their gradients: each region becomes a
// lambda of launches and the op one call of the shared host driver
// (ode_integrate, ode_rnn in ODESolver.h; nncc::grad::ode_grad,
// ode_rnn_grad in GradKernels.h) in the op's arena workspace.
//
//===----------------------------------------------------------------------===//
#include "CppEmitter.h"

#include "nncc/Kernels/ODESolver.h"

using namespace mlir;

namespace nncc::target {

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
  os << "const int rc_ = nncc::kernels::ode_rnn<real_t>(" << odeRnnArgs(o, K, "tcur") << ");\n";
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
  os << "const int rc_ = nncc::grad::ode_rnn_grad<real_t>(" << odeRnnGradArgs(o) << ");\n";
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

} // namespace nncc::target
