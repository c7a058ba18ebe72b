//===- CudaOdeLoops.cpp - the ODE ops on CUDA ------------------------------===//
//
// nnk.ode_solve, nnk.ode_rnn and their gradients: each region becomes a
// lambda of CUDA launches and the op one call of the device driver of
// ODE.cuh (the CPU's loops with device kernels), the gradients in the
// workspace slot the CPU plan gives the op.
//
//===----------------------------------------------------------------------===//
#include "CudaEmitter.h"

#include "nncc/Kernels/ODESolver.h"

using namespace mlir;

namespace nncc::target {

LogicalResult CudaEmitter::emitRegion(raw_indented_ostream &os, Region &region,
                                      Operation *parent) {
  Block &block = region.front();
  for (Operation &op : block.without_terminator()) {
    launchIndex[&op] = launchIndex.lookup(parent);
    // Weights and temporaries of regions are declared by the shared forward
    // prologue (arena slots live for the whole launch of the parent op).
    if (isa<nnk::WeightOp, nnk::AllocOp>(op))
      continue;
    if (failed(emitLaunch(os, &op)))
      return failure();
  }
  return success();
}

/// `real_t *<name> = <init>;` binding a region argument that the region
/// reads; nothing for one it ignores (nvcc warns about a pointer that is
/// set but never used, a `(void)` cast notwithstanding).
static std::string bindArg(BlockArgument arg, const std::string &name, const std::string &init) {
  return arg.use_empty() ? std::string() : "real_t *" + name + " = " + init + ";\n";
}

LogicalResult CudaEmitter::emitDynamicsLambda(raw_indented_ostream &os, Region &dynamics,
                                              Operation *parent, const std::string &prefix,
                                              const std::string &timeStmts) {
  Block &dyn = dynamics.front();
  return emitRegionLambda(os, dynamics, parent, "dynamics",
                          "double s_, const real_t *hin_, real_t *dh_",
                          timeStmts + bindArg(dyn.getArgument(1), prefix + "h", "(real_t *)hin_") +
                              bindArg(dyn.getArgument(2), prefix + "dh", "dh_"));
}

std::string CudaEmitter::scalarTime(BlockArgument t, const std::string &name) {
  if (t.use_empty())
    return "(void)s_;\n";
  std::string fill;
  llvm::raw_string_ostream fs(fill);
  fs << "fill_kernel<real_t><<<1, 32, 0, stream>>>(1, (real_t)s_, tbuf);\n"
     << checked("cudaGetLastError()") << bindArg(t, name, "tbuf");
  return fill;
}

/// nnk.ode_solve: ode_integrate_device (ODE.cuh, the CPU solver's loop:
/// double step sizes, the same stages, FSAL and step-size control) over
/// the dynamics region's launches; h evolves in the output.
LogicalResult CudaEmitter::emitOdeSolve(raw_indented_ostream &os, nnk::ODESolveOp o) {
  Operation *op = o.getOperation();
  FailureOr<std::string> n = numel(o.getOut());
  if (failed(n))
    return failure();
  const int method = static_cast<int>(o.getMethod()); // == kernels::OdeMethod
  const int S = kernels::ode_stages(method);
  const bool adaptive = o.getMethod() == nnk::ODEMethod::dopri5 && o.getSteps() == 0;
  if (!adaptive && o.getSteps() < 1)
    return o.emitError("fixed-step ODE methods need steps >= 1");
  nnk::BufferType workT = bufferType(o.getWork());
  const int64_t K = workT.getDim(0).isStatic() ? workT.getDim(0).getSize() : -1;
  if (K < S + (adaptive ? 2 : 1))
    return o.emitError() << "nnk.ode_solve: the work buffer needs at least "
                         << S + (adaptive ? 2 : 1) << " stage slots, it has " << K;
  Block &dyn = o.getDynamics().front();
  if (dyn.getNumArguments() != 3)
    return o.emitError("nnk.ode_solve: the dynamics region takes (t, h, dh)");
  const bool readsTime = !dyn.getArgument(0).use_empty();
  std::string p = local("ode") + "_";
  names[dyn.getArgument(0)] = p + "t";
  names[dyn.getArgument(1)] = p + "h";
  names[dyn.getArgument(2)] = p + "dh";
  os << "{\n";
  os.indent();
  os << "// ode_integrate_device (" << stringifyEnum(o.getMethod())
     << (adaptive ? ", adaptive: the error norm read back per attempt"
                  : ", " + std::to_string(o.getSteps()) + " steps")
     << "); h evolves in the output\n";
  os << "const int64_t n = " << *n << ";\n";
  os << "real_t *work = " << name(o.getWork()) << ";\n";
  os << "real_t *k[" << S << "];\n";
  os << "for (int s = 0; s < " << S << "; ++s) k[s] = work + (int64_t)s * n;\n";
  if (readsTime)
    os << "real_t *tbuf = (real_t *)" << workspace(Size::realBytes()) << ";\n";
  emitOdeDevice(os);
  os << checked("cudaMemcpyAsync(" + name(o.getOut()) + ", " + name(o.getH0()) +
                ", n * sizeof(real_t), cudaMemcpyDeviceToDevice, stream)");
  os << "real_t tv0{}, tv1{};\n";
  os << checked("cudaMemcpyAsync(&tv0, " + name(o.getT0()) +
                ", sizeof(real_t), cudaMemcpyDeviceToHost, stream)");
  os << checked("cudaMemcpyAsync(&tv1, " + name(o.getT1()) +
                ", sizeof(real_t), cudaMemcpyDeviceToHost, stream)");
  os << checked("cudaStreamSynchronize(stream)");
  if (failed(emitDynamicsLambda(os, o.getDynamics(), op, p,
                                scalarTime(dyn.getArgument(0), p + "t"))))
    return failure();
  os << "const int rc_ = ode_integrate_device<real_t>(ode_dev, " << method << ", "
     << o.getSteps() << ", " << fmtDouble(o.getRtol()) << ", " << fmtDouble(o.getAtol())
     << ", n, n, (const real_t *)NULL, (double)load_acc(tv0), (double)load_acc(tv1), "
     << name(o.getOut()) << ", k, work + " << S << "LL * n, "
     << (adaptive ? "work + " + std::to_string(S + 1) + "LL * n" : std::string("(real_t *)NULL"))
     << ", dynamics, (int64_t *)NULL);\n";
  os << odeSolveFailure();
  os.unindent();
  os << "}\n";
  return success();
}

std::string CudaEmitter::odeSolveFailure() {
  return "if (rc_ != 0) {\n" + odeDeviceBranch() +
         "  if (rc_ < 0)\n"
         "    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT, \"%s: %s\", " +
         cString(launchComment(op())) +
         ", nncc::kernels::ode_error_string(rc_));\n"
         "  return (nncc_status)rc_;\n"
         "}\n";
}

/// nnk.ode_rnn: ode_rnn_device (ODE.cuh: the CPU's loop, ode_rnn_with,
/// with the device's kernels): per observation i > 0 every row evolves over
/// its own [t_{i-1}, t_i] (s in [0, 1] with the row scale t_i - t_{i-1},
/// fixed or adaptive), then the cell; the backward (ode_rnn_grad_device)
/// recomputes the states the same way.
LogicalResult CudaEmitter::emitOdeRnn(raw_indented_ostream &os, nnk::ODERNNOp o) {
  Operation *op = o.getOperation();
  FailureOr<std::string> B = dim(o.getX(), 0), Tn = dim(o.getX(), 1), I = dim(o.getX(), 2);
  FailureOr<Size> Bsize = dimSize(o.getX(), 0);
  if (failed(B) || failed(Tn) || failed(I) || failed(Bsize))
    return failure();
  const int64_t H = o.getHiddenSize();
  const int method = static_cast<int>(o.getMethod()); // == kernels::OdeMethod
  const int S = kernels::ode_stages(method);
  const bool adaptive = o.getMethod() == nnk::ODEMethod::dopri5 && o.getSteps() == 0;
  nnk::BufferType workT = bufferType(o.getWork());
  const int64_t K = workT.getDim(0).isStatic() ? workT.getDim(0).getSize() - 2 : -1;
  if (K < S + (adaptive ? 2 : 1))
    return o.emitError() << "nnk.ode_rnn: the work buffer needs at least "
                         << S + (adaptive ? 2 : 1) + 2 << " slots";
  Block &dyn = o.getDynamics().front();
  Block &cell = o.getCell().front();
  if (dyn.getNumArguments() != 3 || cell.getNumArguments() != 3)
    return o.emitError("nnk.ode_rnn: the regions take (t, h, dh) and (x_t, h, h_out)");
  const bool readsTime = !dyn.getArgument(0).use_empty();
  std::string p = local("odernn") + "_";
  names[dyn.getArgument(0)] = p + "t";
  names[dyn.getArgument(1)] = p + "h";
  names[dyn.getArgument(2)] = p + "dh";
  names[cell.getArgument(0)] = p + "xt";
  names[cell.getArgument(1)] = p + "ch";
  names[cell.getArgument(2)] = p + "chout";
  os << "{\n";
  os.indent();
  os << "// ODE-RNN: per observation i > 0 each row evolves over its own [t_{i-1}, t_i]\n"
        "// (ode_rnn_device, "
     << stringifyEnum(o.getMethod())
     << (adaptive ? ", adaptive" : ", " + std::to_string(o.getSteps()) + " steps")
     << "), then the cell.\n";
  os << "const int64_t B = " << *B << ", Tn = " << *Tn << ", I = " << *I << ", H = " << H
     << ";\n";
  os << "real_t *work = " << name(o.getWork()) << ";\n";
  os << "real_t *delta = (real_t *)" << workspace(*Bsize * Size::realBytes())
     << ", *tprev = (real_t *)" << workspace(*Bsize * Size::realBytes()) << ";\n";
  if (readsTime)
    os << "real_t *tcur = (real_t *)" << workspace(*Bsize * Size::realBytes()) << ";\n";
  emitOdeDevice(os);
  // The rows' times are in tcur when the dynamics run (set by the driver);
  // the cell maps (x_t, work slot K) to slot K + 1.
  if (failed(emitDynamicsLambda(os, o.getDynamics(), op, p,
                                "(void)s_;\n" + bindArg(dyn.getArgument(0), p + "t", "tcur"))))
    return failure();
  const std::string hSlot = "work + " + std::to_string(K) + "LL * (B * H)",
                    hNextSlot = "work + " + std::to_string(K + 1) + "LL * (B * H)";
  if (failed(emitRegionLambda(os, o.getCell(), op, "cell", "",
                              bindArg(cell.getArgument(0), p + "xt", name(o.getXt())) +
                                  bindArg(cell.getArgument(1), p + "ch", hSlot) +
                                  bindArg(cell.getArgument(2), p + "chout", hNextSlot))))
    return failure();
  os << "const int rc_ = ode_rnn_device<real_t>(ode_dev, "
     << odeRnnArgs(o, K, readsTime ? "tcur" : "(real_t *)NULL") << ");\n";
  os << odeSolveFailure();
  os.unindent();
  os << "}\n";
  return success();
}

FailureOr<int> CudaEmitter::plannedWorkspace(Operation *op) {
  if (!cpuPlanned) {
    cpuPlanned = true;
    if (failed(withCpuBufferPlan(module, [&](const ModelEmitter &cpu) {
          for (auto [i, b] : llvm::enumerate(cpu.buffers))
            if (b.workspaceBytes && b.owner)
              cpuWorkspaces.try_emplace(b.owner, (int)i);
          return success();
        })))
      return failure();
  }
  auto it = cpuWorkspaces.find(op);
  if (it == cpuWorkspaces.end())
    return op->emitError("the CPU buffer plan has no workspace for this op"), failure();
  return it->second;
}

LogicalResult CudaEmitter::emitRegionLambda(raw_indented_ostream &os, Region &region,
                                            Operation *parent, const std::string &lambda,
                                            const std::string &params,
                                            const std::string &prologue) {
  os << "auto " << lambda << " = [&](" << params << ") -> int {\n";
  os.indent();
  os << prologue;
  if (failed(emitRegion(os, region, parent)))
    return failure();
  os << "return 0;\n";
  os.unindent();
  os << "};\n";
  return success();
}

void CudaEmitter::emitOdeDevice(raw_indented_ostream &os) {
  os << "OdeDevice ode_dev;\n"
     << "ode_dev.stream = stream;\n"
     << "ode_dev.norm_scratch = " << workspace(Size::call(size_fn::cudaLossScratch, {})) << ";\n"
     << "ode_dev.norm = (double *)" << workspace(Size::bytesOf("double", 8)) << ";\n";
}

std::string CudaEmitter::odeDeviceBranch() {
  return "  if (rc_ == OdeDeviceError)\n"
         "    return nncc_error_set(err, ode_dev.error == cudaErrorMemoryAllocation\n"
         "                                   ? NNCC_ERROR_OUT_OF_MEMORY : NNCC_ERROR_CUDA,\n"
         "                          \"%s: %s (%s)\", " +
         cString(launchComment(op())) +
         ", cudaGetErrorName(ode_dev.error), cudaGetErrorString(ode_dev.error));\n";
}

/// nnk.ode_solve_grad: the device driver ode_grad_device (ODE.cuh: the
/// CPU's ode_grad_with, device kernels) over the regions' launches; its scratch is the
/// op's arena slot of the CPU plan, the accumulated dθ after it.
LogicalResult CudaEmitter::emitOdeSolveGrad(raw_indented_ostream &os, nnk::ODESolveGradOp o) {
  Operation *op = o.getOperation();
  const int method = static_cast<int>(o.getMethod()); // == kernels::OdeMethod
  FailureOr<std::string> n = numel(o.getH());
  FailureOr<int> ws = plannedWorkspace(op);
  if (failed(n) || failed(ws))
    return failure();
  Block &dyn = o.getDynamics().front();
  Block &vjp = o.getVjp().front();
  std::string p = local("odeg") + "_";
  if (failed(nameOdeGradRegions(o, p)))
    return failure();
  std::optional<Size> total;
  FailureOr<std::string> dests = odeVjpDests(vjp, 3, {"dh_"}, p + "th", total);
  FailureOr<SmallVector<OdeParamSlice>> slices = odeParamSlices(o.getDparams());
  if (failed(dests) || failed(slices))
    return failure();
  os << "{\n";
  os.indent();
  os << "// " << (o.getAdjoint() ? "adjoint method (augmented state integrated back)"
                                 : "backpropagation through the solver steps")
     << ", " << stringifyEnum(o.getMethod()) << ", "
     << (o.getSteps() ? std::to_string(o.getSteps()) + " steps" : std::string("adaptive"))
     << ": ode_grad_device\n";
  os << "const int64_t n = " << *n << ", P = " << total->str() << ";\n";
  os << "// The CPU plan's workspace: ode_grad's scratch, then the accumulated dθ [P].\n";
  os << "char *ws_ = (char *)nncc_ms_buffer_ptr(m, " << *ws << ");\n";
  os << "real_t *thacc_ = (real_t *)(ws_ + nncc::grad::ode_grad_layout(" << method << ", "
     << o.getSteps() << ", " << o.getMaxSteps() << ", " << (o.getAdjoint() ? 1 : 0)
     << ", n, P, (int64_t)sizeof(real_t)).bytes);\n";
  os << checked("cudaMemsetAsync(thacc_, 0, (size_t)P * sizeof(real_t), stream)");
  // The regions' time argument: a device scalar, when a region reads it.
  if (!dyn.getArgument(0).use_empty() || !vjp.getArgument(0).use_empty())
    os << "real_t *tbuf = (real_t *)" << workspace(Size::realBytes()) << ";\n";
  emitOdeDevice(os);
  os << "real_t tv0{}, tv1{};\n";
  os << checked("cudaMemcpyAsync(&tv0, " + name(o.getT0()) +
                ", sizeof(real_t), cudaMemcpyDeviceToHost, stream)");
  os << checked("cudaMemcpyAsync(&tv1, " + name(o.getT1()) +
                ", sizeof(real_t), cudaMemcpyDeviceToHost, stream)");
  os << checked("cudaStreamSynchronize(stream)");
  if (failed(emitDynamicsLambda(os, o.getDynamics(), op, p,
                                scalarTime(dyn.getArgument(0), p + "t"))))
    return failure();
  if (failed(emitRegionLambda(
          os, o.getVjp(), op, "vjp",
          "double s_, const real_t *hin_, const real_t *ain_, real_t *dh_, real_t *th_",
          scalarTime(vjp.getArgument(0), p + "vt") +
              bindArg(vjp.getArgument(1), p + "vh", "(real_t *)hin_") +
              bindArg(vjp.getArgument(2), p + "va", "(real_t *)ain_") +
              (o.getDparams().empty() ? "" : "real_t *" + p + "th = th_;\n") + *dests)))
    return failure();
  os << checked("cudaMemcpyAsync(" + name(o.getDh0()) + ", " + name(o.getA1()) +
                ", n * sizeof(real_t), cudaMemcpyDeviceToDevice, stream)");
  os << "const int rc_ = ode_grad_device<real_t>(ode_dev, " << method << ", " << o.getSteps()
     << ", " << o.getMaxSteps() << ", " << fmtDouble(o.getRtol()) << ", "
     << fmtDouble(o.getAtol()) << ", " << (o.getAdjoint() ? 1 : 0)
     << ", n, n, (const real_t *)NULL, (double)load_acc(tv0), (double)load_acc(tv1), "
     << name(o.getH()) << ", " << name(o.getDh0()) << ", P, thacc_, ws_, dynamics, vjp);\n";
  os << odeGradFailure(o.getMaxSteps(), odeDeviceBranch());
  for (const OdeParamSlice &sl : *slices)
    os << checked("cudaMemcpyAsync(" + sl.dest + ", thacc_ + (" + sl.offset + "), " + sl.size +
                  " * sizeof(real_t), cudaMemcpyDeviceToDevice, stream)");
  os.unindent();
  os << "}\n";
  return success();
}

/// nnk.ode_rnn_grad: the device driver ode_rnn_grad_device (ODE.cuh, the
/// CPU's BPTT over the observations with ode_grad per segment) over the
/// three regions' launches, in the op's arena slot of the CPU plan.
LogicalResult CudaEmitter::emitOdeRnnGrad(raw_indented_ostream &os, nnk::ODERNNGradOp o) {
  Operation *op = o.getOperation();
  const int method = static_cast<int>(o.getMethod()); // == kernels::OdeMethod
  FailureOr<std::string> B = dim(o.getX(), 0), Tn = dim(o.getX(), 1), I = dim(o.getX(), 2);
  FailureOr<int> ws = plannedWorkspace(op);
  if (failed(B) || failed(Tn) || failed(I) || failed(ws))
    return failure();
  const int64_t nDyn = o.getNumDynamicsParams();
  const int64_t nCell = (int64_t)o.getDparams().size() - nDyn;
  Block &dyn = o.getDynamics().front();
  Block &dvjp = o.getDynamicsVjp().front();
  Block &cvjp = o.getCellVjp().front();
  std::string p = local("odernng") + "_";
  if (failed(nameOdeGradRegions(o, p)))
    return failure();
  std::optional<Size> dynTotal, cellTotal;
  FailureOr<std::string> dDests = odeVjpDests(dvjp, 3, {"dh_"}, p + "th", dynTotal);
  FailureOr<std::string> cDests = odeVjpDests(cvjp, 3, {"dx_", "dh_"}, p + "ph", cellTotal);
  FailureOr<SmallVector<OdeParamSlice>> dynSlices =
      odeParamSlices(o.getDparams().take_front(nDyn));
  FailureOr<SmallVector<OdeParamSlice>> cellSlices =
      odeParamSlices(o.getDparams().drop_front(nDyn));
  if (failed(dDests) || failed(cDests) || failed(dynSlices) || failed(cellSlices))
    return failure();
  const bool adaptive = o.getMethod() == nnk::ODEMethod::dopri5 && o.getSteps() == 0;
  os << "{\n";
  os.indent();
  os << "// ODE-RNN backward (ode_rnn_grad_device): BPTT over the observations; per\n"
        "// segment the state before the cell evolved again, the cell's VJP, then the\n"
        "// segment's "
     << (o.getAdjoint() ? "adjoint solve" : "backpropagation through the solver steps") << " ("
     << stringifyEnum(o.getMethod())
     << (adaptive ? ", adaptive" : ", " + std::to_string(o.getSteps()) + " steps") << ").\n";
  os << "const int64_t B = " << *B << ", Tn = " << *Tn << ", I = " << *I
     << ", H = " << o.getHiddenSize() << ";\n";
  os << "const int64_t Pd = " << dynTotal->str() << ", Pc = " << cellTotal->str() << ";\n";
  os << "// The CPU plan's workspace: ode_grad's scratch, then the loop's arrays.\n";
  os << "char *ws_ = (char *)nncc_ms_buffer_ptr(m, " << *ws << ");\n";
  os << "const OdeRnnGradLayout lay_ = ode_rnn_grad_layout(" << method << ", " << o.getSteps()
     << ", " << o.getMaxSteps() << ", " << (o.getAdjoint() ? 1 : 0)
     << ", B, I, H, Pd, Pc, (int64_t)sizeof(real_t));\n";
  os << "real_t *arr_ = (real_t *)(ws_ + lay_.scratch);\n";
  os << "real_t *thacc_ = arr_ + lay_.thacc, *phacc_ = arr_ + lay_.phacc;\n";
  // The rows' times, when a region reads them (the driver fills them).
  if (!dyn.getArgument(0).use_empty() || !dvjp.getArgument(0).use_empty())
    os << "real_t *tcur = arr_ + lay_.tcur;\n";
  emitOdeDevice(os);
  // The rows' times are in tcur when the regions run (set by the driver).
  if (failed(emitDynamicsLambda(os, o.getDynamics(), op, p,
                                "(void)s_;\n" + bindArg(dyn.getArgument(0), p + "t", "tcur"))))
    return failure();
  if (failed(emitRegionLambda(
          os, o.getDynamicsVjp(), op, "dynvjp",
          "double s_, const real_t *hin_, const real_t *ain_, real_t *dh_, real_t *th_",
          "(void)s_;\n" + bindArg(dvjp.getArgument(0), p + "vt", "tcur") +
              bindArg(dvjp.getArgument(1), p + "vh", "(real_t *)hin_") +
              bindArg(dvjp.getArgument(2), p + "va", "(real_t *)ain_") +
              (nDyn == 0 ? "" : "real_t *" + p + "th = th_;\n") + *dDests)))
    return failure();
  if (failed(emitRegionLambda(
          os, o.getCellVjp(), op, "cellvjp",
          "const real_t *xin_, const real_t *hin_, const real_t *ain_, real_t *dx_, real_t *dh_, "
          "real_t *ph_",
          bindArg(cvjp.getArgument(0), p + "cx", "(real_t *)xin_") +
              bindArg(cvjp.getArgument(1), p + "ch", "(real_t *)hin_") +
              bindArg(cvjp.getArgument(2), p + "ca", "(real_t *)ain_") +
              (nCell == 0 ? "" : "real_t *" + p + "ph = ph_;\n") + *cDests)))
    return failure();
  os << "const int rc_ = ode_rnn_grad_device<real_t>(ode_dev, " << odeRnnGradArgs(o) << ");\n";
  os << odeGradFailure(o.getMaxSteps(), odeDeviceBranch());
  for (auto [acc, slices] : {std::pair{"thacc_", &*dynSlices}, {"phacc_", &*cellSlices}})
    for (const OdeParamSlice &sl : *slices)
      os << checked("cudaMemcpyAsync(" + sl.dest + ", " + acc + " + (" + sl.offset + "), " +
                    sl.size + " * sizeof(real_t), cudaMemcpyDeviceToDevice, stream)");
  os.unindent();
  os << "}\n";
  return success();
}

} // namespace nncc::target
