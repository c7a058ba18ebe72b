//===- RecurrentLaunch.cpp - launches of the recurrent kernels ------------===//
//
// nnk.recurrent_scan (one layer and direction over time), recurrent_cell
// (one step), and the training ops: recurrent_forward (a whole stack,
// keeping its reserve), recurrent_grad (stack BPTT) and recurrent_cell_grad.
// The cell kind travels as its enum code (nnk::Cell = the kernels' CellKind).
// nnk.zoneout draws its mask from the op's random stream.
//
//===----------------------------------------------------------------------===//
#include "../Common/LaunchEmitter.h"

using namespace mlir;

namespace nncc::target {
namespace {

std::string cellCode(nnk::Cell cell) { return std::to_string(static_cast<int>(cell)); }
Size cellSize(nnk::Cell cell) { return Size::constant(static_cast<int>(cell)); }

/// LSTM zoneout arguments (training only; nn-inference-semantics zeroes the
/// rate in inference): rate, key (the op's seed and the run seed) and the
/// counter offset of B*T*H batch-major draws per layer and direction (RandomMasks.h
/// lstm_zoneout_counter; docs/training.md, "Random streams").
std::string zoneoutKey(int64_t seed) {
  return "nncc_ms_rng_key(m, " + std::to_string(seed) + "ULL)";
}
std::string zoneoutOffset(const std::string &B, const std::string &T, const std::string &H) {
  return "nncc_ms_rng_offset(m, (uint64_t)(" + B + ") * (uint64_t)(" + T + ") * (uint64_t)(" +
         H + "))";
}
std::string zoneoutArgs(double rate, int64_t seed, const std::string &B, const std::string &T,
                        const std::string &H) {
  return fmtDouble(rate) + ", " + zoneoutKey(seed) + ", " + zoneoutOffset(B, T, H);
}

/// The C++ type of an optional lengths buffer (the CUDA launchers'
/// template argument): int32_t or int64_t; int32_t when absent.
FailureOr<std::string> lengthTypeOf(LaunchEmitter &e, Value lengths) {
  if (!lengths)
    return std::string("int32_t");
  return e.cType(e.bufferType(lengths).getElementType());
}

LogicalResult emitScan(LaunchEmitter &e, nnk::RecurrentScanOp o) {
  auto B = e.dim(o.getXproj(), 0), T = e.dim(o.getXproj(), 1);
  auto Bsize = e.dimSize(o.getXproj(), 0);
  if (failed(B) || failed(T) || failed(Bsize))
    return failure();
  int64_t H = o.getHiddenSize();
  std::string cell = cellCode(o.getCell()), hs = std::to_string(H);
  if (!e.isCuda()) {
    // libnncc_kernels' time loop over the precomputed input projection
    // (active rows shrink as sequences end).
    std::string ws = e.workspace(Size::call(
        size_fn::rnnLayerWorkspace,
        {cellSize(o.getCell()), *Bsize, Size::constant(H), Size::realBytes()}));
    std::string len32 = "(const int32_t *)NULL", len64 = "(const int64_t *)NULL";
    if (Value l = o.getLengths())
      (e.bufferType(l).getElementType().isInteger(64) ? len64 : len32) = e.name(l);
    const bool zoneout = o.getZoneout() > 0;
    KernelCall c{zoneout ? "NNCC_KFN(nncc_rnn_layer_zoneout)" : "NNCC_KFN(nncc_rnn_layer)",
                 {cell, *B, *T, hs, std::to_string(o.getNumDirections()),
                  std::to_string(o.getStateIndex()), LaunchEmitter::flag(o.getReverse()),
                  e.name(o.getXproj()), e.name(o.getWHh()), e.nameOrNull(o.getBHh()),
                  e.nameOrNull(o.getH0()), e.nameOrNull(o.getC0()), len32, len64,
                  e.name(o.getY()), e.nameOrNull(o.getHN()), e.nameOrNull(o.getCN()), ws,
                  "NULL"}};
    if (zoneout)
      c.args.push_back(zoneoutArgs(o.getZoneout(), o.getSeed(), *B, *T, hs));
    e.call(c);
    return success();
  }
  FailureOr<std::string> lengthTypeOr = lengthTypeOf(e, o.getLengths());
  if (failed(lengthTypeOr))
    return failure();
  std::string lengthType = *lengthTypeOr;
  // The states of all layers and directions are stacked: this one's slice.
  std::string slice =
      " + (int64_t)" + std::to_string(o.getStateIndex()) + " * " + *B + " * " + hs;
  auto state = [&](Value v, const char *type) {
    return v ? e.name(v) + slice : std::string("(") + type + ")NULL";
  };
  std::string transposed =
      e.workspace(Size::constant(nnk::getGateCount(o.getCell()) * H * H) * Size::realBytes());
  e.out() << "// one persistent launch: layer/direction " << o.getStateIndex()
          << (o.getReverse() ? ", reverse" : "") << "\n";
  KernelCall c{"launch_rnn_scan<real_t, " + lengthType + ", " + cell + ">",
               {"(int)" + *B, "(int)" + *T, hs, LaunchEmitter::flag(o.getReverse()),
                std::to_string(o.getNumDirections() * H), o.getReverse() ? hs : "0",
                e.nameOr(o.getLengths(), "const int32_t *"), e.name(o.getXproj()),
                e.name(o.getWHh()), e.nameOr(o.getBHh(), "const real_t *"),
                state(o.getH0(), "const real_t *"), state(o.getC0(), "const real_t *"),
                e.name(o.getY()), state(o.getHN(), "real_t *"), state(o.getCN(), "real_t *"),
                "(real_t *)NULL", "0", "(real_t *)" + transposed, "stream"}};
  // LSTM zoneout (training): the CPU's masks, counter slot = state index.
  if (o.getZoneout() > 0)
    c.args.append({zoneoutArgs(o.getZoneout(), o.getSeed(), *B, *T, hs),
                   std::to_string(o.getStateIndex())});
  e.call(c);
  return success();
}

LogicalResult emitCell(LaunchEmitter &e, nnk::RecurrentCellOp o) {
  auto B = e.dim(o.getH(), 0), H = e.dim(o.getH(), 1);
  auto Bsize = e.dimSize(o.getH(), 0), Hsize = e.dimSize(o.getH(), 1);
  if (failed(B) || failed(H) || failed(Bsize) || failed(Hsize))
    return failure();
  std::string cell = cellCode(o.getCell());
  if (!e.isCuda()) {
    std::string ws = e.workspace(Size::call(
        size_fn::rnnCellWorkspace, {cellSize(o.getCell()), *Bsize, *Hsize, Size::realBytes()}));
    e.call({"NNCC_KFN(nncc_rnn_cell)",
            {cell, *B, *H, e.name(o.getXproj()), e.name(o.getH()), e.nameOrNull(o.getC()),
             e.name(o.getWHh()), e.nameOrNull(o.getBHh()), e.name(o.getHOut()),
             e.nameOrNull(o.getCOut()), ws}});
    return success();
  }
  std::string transposed = e.workspace(Size::constant(nnk::getGateCount(o.getCell())) * *Hsize *
                                       *Hsize * Size::realBytes());
  e.out() << "// one step of the recurrent scan kernel (T = 1)\n";
  e.call({"launch_rnn_scan<real_t, int32_t, " + cell + ">",
          {"(int)" + *B, "1", "(int)" + *H, "0", *H, "0", "(const int32_t *)NULL",
           e.name(o.getXproj()), e.name(o.getWHh()), e.nameOr(o.getBHh(), "const real_t *"),
           e.name(o.getH()), e.nameOr(o.getC(), "const real_t *"), e.name(o.getHOut()),
           "(real_t *)NULL", e.nameOr(o.getCOut(), "real_t *"), "(real_t *)NULL", "0",
           "(real_t *)" + transposed, "stream"}});
  return success();
}

LogicalResult emitCellGradCuda(LaunchEmitter &e, nnk::RecurrentCellGradOp o,
                               const std::string &B, const std::string &H,
                               const std::string &nWhh, const Size &Bsize, const Size &Hsize) {
  std::string cell = cellCode(o.getCell());
  std::string ws = e.workspace(
      Size::call(size_fn::cudaRnnCellBackwardScratch,
                 {cellSize(o.getCell()), Bsize, Hsize, Size::realBytes()}));
  // The launcher accumulates dw_hh / db_hh (as the CPU kernel): zero them first.
  e.out() << e.checked("cudaMemsetAsync(" + e.name(o.getDwHh()) + ", 0, " + nWhh +
                       " * sizeof(real_t), stream)");
  if (Value db = o.getDbHh()) {
    auto nb = e.numel(db);
    if (failed(nb))
      return failure();
    e.out() << e.checked("cudaMemsetAsync(" + e.name(db) + ", 0, " + *nb +
                         " * sizeof(real_t), stream)");
  }
  e.call({"launch_rnn_cell_backward<real_t, " + cell + ">",
          {"blas", B, H, e.name(o.getXproj()), e.name(o.getH()),
           e.nameOr(o.getC(), "const real_t *"), e.name(o.getWHh()),
           e.nameOr(o.getBHh(), "const real_t *"), e.nameOr(o.getDhOut(), "const real_t *"),
           e.nameOr(o.getDcOut(), "const real_t *"), e.name(o.getDxproj()), e.name(o.getDh()),
           e.nameOr(o.getDc(), "real_t *"), e.name(o.getDwHh()),
           e.nameOr(o.getDbHh(), "real_t *"), ws, "stream"}});
  return success();
}

LogicalResult emitCellGrad(LaunchEmitter &e, nnk::RecurrentCellGradOp o) {
  auto B = e.dim(o.getH(), 0), H = e.dim(o.getH(), 1);
  auto Bsize = e.dimSize(o.getH(), 0), Hsize = e.dimSize(o.getH(), 1);
  auto nWhh = e.numel(o.getWHh());
  if (failed(B) || failed(H) || failed(nWhh) || failed(Bsize) || failed(Hsize))
    return failure();
  if (e.isCuda())
    return emitCellGradCuda(e, o, *B, *H, *nWhh, *Bsize, *Hsize);
  std::string cell = cellCode(o.getCell());
  std::string ws = e.workspace(
      Size::call(size_fn::rnnCellBackwardWorkspace,
                 {cellSize(o.getCell()), *Bsize, *Hsize, Size::realBytes()}));
  // The kernel accumulates dw_hh / db_hh: zero them first.
  e.out() << "memset(" << e.name(o.getDwHh()) << ", 0, " << *nWhh << " * sizeof(real_t));\n";
  if (Value db = o.getDbHh()) {
    auto nb = e.numel(db);
    if (failed(nb))
      return failure();
    e.out() << "memset(" << e.name(db) << ", 0, " << *nb << " * sizeof(real_t));\n";
  }
  e.call({"NNCC_KFN(nncc_rnn_cell_backward)",
          {cell, *B, *H, e.name(o.getXproj()), e.name(o.getH()), e.nameOrNull(o.getC()),
           e.name(o.getWHh()), e.nameOrNull(o.getBHh()), e.nameOrNull(o.getDhOut()),
           e.nameOrNull(o.getDcOut()), e.name(o.getDxproj()), e.name(o.getDh()),
           e.nameOrNull(o.getDc()), e.name(o.getDwHh()), e.nameOrNull(o.getDbHh()), ws}});
  return success();
}

/// The sizes of a whole-stack op: the cell code, B, T, I, H, L, D.
struct Stack {
  std::string cell, B, T, I, H, L, D;
  /// The same sizes for the workspace sizes: cell code, B, T, I, H, L, D.
  SmallVector<Size, 7> sizeArgs;
  /// The CUDA launchers' leading arguments (the cell is their template
  /// argument).
  SmallVector<std::string> sizes() const { return {B, T, I, H, L, D}; }
};

template <typename StackOp>
FailureOr<Stack> stackOf(LaunchEmitter &e, StackOp o) {
  auto B = e.dimSize(o.getX(), 0), T = e.dimSize(o.getX(), 1), I = e.dimSize(o.getX(), 2);
  if (failed(B) || failed(T) || failed(I))
    return failure();
  Stack s{cellCode(o.getCell()),
          B->str(),
          T->str(),
          I->str(),
          std::to_string(o.getHiddenSize()),
          std::to_string(o.getNumLayers()),
          o.getBidirectional() ? "2" : "1",
          {}};
  s.sizeArgs = {cellSize(o.getCell()), *B, *T, *I, Size::constant(o.getHiddenSize()),
                Size::constant(o.getNumLayers()), Size::constant(o.getBidirectional() ? 2 : 1)};
  return s;
}

/// The int32 lengths the stack kernels take: the buffer, a widened copy of
/// i64 lengths in a workspace slot, or NULL.
std::string stackLengths(LaunchEmitter &e, Value lengths, const Stack &s) {
  if (!lengths)
    return "NULL";
  if (!e.bufferType(lengths).getElementType().isInteger(64))
    return e.name(lengths);
  std::string len32 = e.local("len32_");
  e.out() << "int32_t *" << len32 << " = (int32_t *)"
          << e.workspace(s.sizeArgs[1] * Size::bytesOf("int32_t", 4)) << ";\n";
  e.out() << "for (int64_t b = 0; b < " << s.B << "; ++b) " << len32 << "[b] = (int32_t)"
          << e.name(lengths) << "[b];\n";
  return len32;
}

/// Prints the CPU stack kernels' nncc_rnn_params `p_` (Kernels.h) of the op:
/// its sizes, bias, int32 lengths, LSTM zoneout with its random stream, and
/// the reserve's schedule.
template <typename StackOp>
void emitStackParams(LaunchEmitter &e, StackOp o, const Stack &s) {
  std::string lengths = stackLengths(e, o.getLengths(), s);
  e.out() << "nncc_rnn_params p_ = {};\n"
          << "p_.cell = " << s.cell << ";\n"
          << "p_.has_bias = " << LaunchEmitter::flag(o.getHasBias()) << ";\n"
          << "p_.batch = " << s.B << ";\n"
          << "p_.steps = " << s.T << ";\n"
          << "p_.input_size = " << s.I << ";\n"
          << "p_.hidden_size = " << s.H << ";\n"
          << "p_.num_layers = " << s.L << ";\n"
          << "p_.num_directions = " << s.D << ";\n";
  if (o.getLengths())
    e.out() << "p_.lengths = " << lengths << ";\n";
  if (o.getZoneout() > 0)
    e.out() << "p_.zoneout = " << fmtDouble(o.getZoneout()) << ";\n"
            << "p_.seed = " << zoneoutKey(o.getSeed()) << ";\n"
            << "p_.offset = " << zoneoutOffset(s.B, s.T, s.H) << ";\n";
  if (std::optional<int64_t> every = o.getCheckpointEvery())
    e.out() << "p_.checkpoint_every = " << *every << ";\n";
  if (std::optional<int64_t> snapshots = o.getCheckpointSnapshots())
    e.out() << "p_.checkpoint_snapshots = " << *snapshots << ";\n";
}

/// The CUDA stack launchers' trailing arguments: the checkpoint segment
/// (checkpoint_every) or, in the backward, the binomial schedule's
/// snapshots and its (unread) recomputed-step count; scratch and stream,
/// then for LSTM zoneout its rate, seed and step offset, as the CPU branch
/// passes them (the same masks).
template <typename StackOp>
void appendStackTail(KernelCall &c, StackOp o, const Stack &s, std::optional<int64_t> every,
                     std::optional<int64_t> snapshots, const std::string &ws) {
  if (every)
    c.args.push_back(std::to_string(*every));
  if (snapshots)
    c.args.append({std::to_string(*snapshots), "(int64_t *)NULL"});
  c.args.append({ws, "stream"});
  if (o.getZoneout() > 0)
    c.args.push_back(zoneoutArgs(o.getZoneout(), o.getSeed(), s.B, s.T, s.H));
}

/// The two schedules' integers of a scratch-size call: checkpoint_every,
/// checkpoint_snapshots (0 when absent).
template <typename StackOp> SmallVector<Size, 2> scheduleArgs(StackOp o) {
  return {Size::constant(o.getCheckpointEvery().value_or(0)),
          Size::constant(o.getCheckpointSnapshots().value_or(0))};
}

/// CUDA (RecurrentBackward.cuh): the stack's training forward with the
/// plain, the checkpointed or the binomial schedule's reserve; lengths i32
/// or i64 read on the device; LSTM zoneout masks as the CPU's.
LogicalResult emitStackForwardCuda(LaunchEmitter &e, nnk::RecurrentForwardOp o) {
  FailureOr<Stack> s = stackOf(e, o);
  FailureOr<std::string> lengthType = lengthTypeOf(e, o.getLengths());
  if (failed(s) || failed(lengthType))
    return failure();
  std::optional<int64_t> every = o.getCheckpointEvery();
  const bool revolve = o.getCheckpointSnapshots().has_value();
  // bf16: the f32 launch on fp32 copies in the scratch (the function adds
  // them when sizeof(real_t) is 2).
  SmallVector<Size, 12> args(s->sizeArgs.begin(), s->sizeArgs.end());
  args.push_back(Size::constant(o.getHasBias() ? 1 : 0));
  args.append(scheduleArgs(o));
  args.push_back(Size::realBytes());
  std::string ws = e.workspace(Size::call(size_fn::cudaRnnStackForwardScratch, args));
  e.out() << "{\n";
  e.out().indent();
  e.out() << "const real_t *w_[] = {" << e.commaNames(o.getWeights()) << "};\n";
  KernelCall c{std::string(every     ? "launch_rnn_forward_train_ckpt"
                           : revolve ? "launch_rnn_forward_train_revolve"
                                     : "launch_rnn_forward_train") +
                   "<real_t, " + *lengthType + ", " + s->cell + ">",
               {"blas"}};
  c.args.append(s->sizes());
  c.args.append({LaunchEmitter::flag(o.getHasBias()), e.name(o.getX()), "w_",
                 e.nameOr(o.getH0(), "const real_t *"), e.nameOr(o.getC0(), "const real_t *"),
                 e.nameOr(o.getLengths(), "const " + *lengthType + " *"), e.name(o.getY()),
                 e.nameOr(o.getHN(), "real_t *"), e.nameOr(o.getCN(), "real_t *"),
                 e.name(o.getReserve())});
  appendStackTail(c, o, *s, every, std::nullopt, ws);
  e.call(c);
  e.out().unindent();
  e.out() << "}\n";
  return success();
}

LogicalResult emitStackForward(LaunchEmitter &e, nnk::RecurrentForwardOp o) {
  if (e.isCuda())
    return emitStackForwardCuda(e, o);
  // libnncc_kernels' training forward of the stack: y, h_n, c_n and the
  // reserve the backward reads.
  FailureOr<Stack> s = stackOf(e, o);
  if (failed(s))
    return failure();
  std::string ws = e.workspace(
      Size::call(size_fn::rnnForwardTrainWorkspace, {s->sizeArgs[0], s->sizeArgs[1], s->sizeArgs[2],
                                                     s->sizeArgs[4], Size::realBytes()}));
  e.out() << "{\n";
  e.out().indent();
  e.out() << "const real_t *w_[] = {" << e.commaNames(o.getWeights()) << "};\n";
  // The reserve of the op's schedule: every step's gates; with
  // checkpoint_every the layer outputs and the LSTM's cell state every k
  // steps; with checkpoint_snapshots (the binomial schedule) the layer
  // outputs only (same workspace).
  emitStackParams(e, o, *s);
  KernelCall c{"NNCC_KFN(nncc_rnn_forward_train)",
               {"&p_", e.name(o.getX()), "w_", e.nameOrNull(o.getH0()), e.nameOrNull(o.getC0()),
                e.name(o.getY()), e.nameOrNull(o.getHN()), e.nameOrNull(o.getCN()),
                e.name(o.getReserve()), ws}};
  e.call(c);
  e.out().unindent();
  e.out() << "}\n";
  return success();
}

/// An out buffer no other op reads (a temporary: dx of a model input, dh0 /
/// dc0 of an initial state that is not a parameter) is passed as NULL, which
/// the kernels skip: for dx, the [B*T, G*H] x [G*H, I] GEMM of layer 0, a
/// fifth of an LSTM backward.
std::string gradOutOrNull(LaunchEmitter &e, nnk::RecurrentGradOp o, Value v,
                          StringRef nullExpr) {
  Operation *self = o.getOperation();
  if (!v || (v.getDefiningOp<nnk::AllocOp>() &&
             llvm::all_of(v.getUsers(), [&](Operation *u) { return u == self; })))
    return nullExpr.str();
  return e.name(v);
}

/// CUDA (RecurrentBackward.cuh): BPTT of the stack from the plain reserve,
/// from the checkpointed one, by the binomial schedule, or with the forward
/// recomputed into scratch; LSTM zoneout regenerates the forward's masks
/// (same rate, seed, offset).
LogicalResult emitStackGradCuda(LaunchEmitter &e, nnk::RecurrentGradOp o) {
  FailureOr<Stack> s = stackOf(e, o);
  FailureOr<std::string> lengthType = lengthTypeOf(e, o.getLengths());
  if (failed(s) || failed(lengthType))
    return failure();
  const bool reserved = static_cast<bool>(o.getReserve());
  std::optional<int64_t> every = o.getCheckpointEvery();
  std::optional<int64_t> snapshots = o.getCheckpointSnapshots();
  // The checkpointed, binomial, reserved or recomputing launch's scratch
  // (bf16: with the fp32 copies).
  SmallVector<Size, 12> args(s->sizeArgs.begin(), s->sizeArgs.end());
  args.push_back(Size::constant(o.getHasBias() ? 1 : 0));
  args.append(scheduleArgs(o));
  args.append({Size::constant(reserved ? 1 : 0), Size::realBytes()});
  std::string ws = e.workspace(Size::call(size_fn::cudaRnnStackBackwardScratch, args));
  e.out() << "{\n";
  e.out().indent();
  e.out() << "const real_t *w_[] = {" << e.commaNames(o.getWeights()) << "};\nreal_t *dw_[] = {"
          << e.commaNames(o.getDweights()) << "};\n";
  KernelCall c{std::string(every       ? "launch_rnn_backward_ckpt"
                           : snapshots ? "launch_rnn_backward_revolve"
                           : reserved  ? "launch_rnn_backward_reserved"
                                       : "launch_rnn_backward") +
                   "<real_t, " + *lengthType + ", " + s->cell + ">",
               {"blas"}};
  c.args.append(s->sizes());
  c.args.append({LaunchEmitter::flag(o.getHasBias()), e.name(o.getX()), "w_",
                 e.nameOr(o.getH0(), "const real_t *"), e.nameOr(o.getC0(), "const real_t *"),
                 e.nameOr(o.getLengths(), "const " + *lengthType + " *")});
  if (reserved)
    c.args.push_back(e.name(o.getReserve()));
  c.args.append({e.nameOr(o.getDy(), "const real_t *"), e.nameOr(o.getDhN(), "const real_t *"),
                 e.nameOr(o.getDcN(), "const real_t *"),
                 gradOutOrNull(e, o, o.getDx(), "(real_t *)NULL"),
                 gradOutOrNull(e, o, o.getDh0(), "(real_t *)NULL"),
                 gradOutOrNull(e, o, o.getDc0(), "(real_t *)NULL"), "dw_"});
  appendStackTail(c, o, *s, every, snapshots, ws);
  e.call(c);
  e.out().unindent();
  e.out() << "}\n";
  return success();
}

LogicalResult emitStackGrad(LaunchEmitter &e, nnk::RecurrentGradOp o) {
  if (e.isCuda())
    return emitStackGradCuda(e, o);
  // libnncc_kernels' stack BPTT: from the forward's reserve, or re-running
  // the forward into its workspace; overwrites dx, dh0, dc0 (each may be
  // NULL) and every weight gradient.
  FailureOr<Stack> s = stackOf(e, o);
  if (failed(s))
    return failure();
  const bool reserved = static_cast<bool>(o.getReserve());
  // BPTT checkpointing (the verifier ensures a reserve): segments of k steps.
  // The binomial schedule: one step at a time, at most `snapshots` cell
  // states.
  std::optional<int64_t> every = o.getCheckpointEvery();
  std::optional<int64_t> snapshots = o.getCheckpointSnapshots();
  // (cell, B, T, I, H, L, D) and the schedule's integer, or the reserved
  // backward's (cell, B, T, H, L, D).
  SmallVector<Size, 9> args(s->sizeArgs.begin(), s->sizeArgs.end());
  if (reserved && !every && !snapshots)
    args.erase(args.begin() + 3);
  if (every || snapshots)
    args.push_back(Size::constant(every ? *every : *snapshots));
  args.push_back(Size::realBytes());
  const SizeFunction &fn = every       ? size_fn::rnnBackwardCkptWorkspace
                           : snapshots ? size_fn::rnnBackwardRevolveWorkspace
                           : reserved  ? size_fn::rnnBackwardReservedWorkspace
                                       : size_fn::rnnBackwardWorkspace;
  std::string ws = e.workspace(Size::call(fn, args));
  e.out() << "{\n";
  e.out().indent();
  e.out() << "const real_t *w_[] = {" << e.commaNames(o.getWeights()) << "};\nreal_t *dw_[] = {"
          << e.commaNames(o.getDweights()) << "};\n";
  // Outputs no other op reads are passed as NULL (gradOutOrNull).
  auto outOrNull = [&](Value v) { return gradOutOrNull(e, o, v, "NULL"); };
  emitStackParams(e, o, *s);
  KernelCall c{"NNCC_KFN(nncc_rnn_backward)",
               {"&p_", e.name(o.getX()), "w_", e.nameOrNull(o.getH0()), e.nameOrNull(o.getC0()),
                reserved ? e.name(o.getReserve()) : std::string("NULL"), e.nameOrNull(o.getDy()),
                e.nameOrNull(o.getDhN()), e.nameOrNull(o.getDcN()), outOrNull(o.getDx()),
                outOrNull(o.getDh0()), outOrNull(o.getDc0()), "dw_", ws, "NULL"}};
  e.call(c);
  e.out().unindent();
  e.out() << "}\n";
  return success();
}

LogicalResult emitZoneout(LaunchEmitter &e, nnk::ZoneoutOp o) {
  auto n = e.numel(o.getNewState());
  if (failed(n))
    return failure();
  SmallVector<std::string> args = {*n};
  args.append(maskStream(e, o.getP(), o.getSeed(), *n));
  args.append({e.name(o.getNewState()), e.name(o.getPrev()), e.name(o.getOut())});
  if (!e.isCuda()) {
    e.call({"NNCC_KFN(nncc_zoneout)", args});
    return success();
  }
  args.push_back("stream");
  e.out() << "if (" << *n << " > 0)\n  ";
  e.call({"launch_zoneout<real_t>", args});
  return success();
}

} // namespace

void attachRecurrentLaunches(MLIRContext &ctx) {
  attachLaunch<nnk::RecurrentScanOp, emitScan, Bf16Kernel::Yes, CudaRecurrent>(ctx);
  attachLaunch<nnk::RecurrentCellOp, emitCell, Bf16Kernel::Yes, CudaRecurrent>(ctx);
  attachLaunch<nnk::RecurrentCellGradOp, emitCellGrad, Bf16Kernel::Yes, CudaRecurrentBackward>(ctx);
  attachLaunch<nnk::RecurrentForwardOp, emitStackForward, Bf16Kernel::Yes, CudaRecurrentBackward>(ctx);
  attachLaunch<nnk::RecurrentGradOp, emitStackGrad, Bf16Kernel::Yes, CudaRecurrentBackward>(ctx);
  attachLaunch<nnk::ZoneoutOp, emitZoneout, Bf16Kernel::Yes>(ctx);
}

} // namespace nncc::target
