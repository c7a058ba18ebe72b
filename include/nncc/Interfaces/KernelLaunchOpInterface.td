//===- KernelLaunchOpInterface.td - an nnk op's kernel call -*- tablegen -*-===//
//
// How the back end learns what an `nnk` compute op launches. Each op family
// implements the interface as an external model (lib/Target/Launch/*.cpp,
// registered by `nncc::target::registerKernelLaunchInterfaces`); the one
// emitter core (`nncc::target::LaunchEmitter`) walks a function and asks
// every op for its launch on the emitter's target.
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_INTERFACES_KERNELLAUNCHOPINTERFACE_TD
#define NNCC_INTERFACES_KERNELLAUNCHOPINTERFACE_TD

include "mlir/IR/OpBase.td"

def KernelLaunchOpInterface : OpInterface<"KernelLaunchOpInterface"> {
  let cppNamespace = "::nncc";
  let description = [{
    One `nnk` compute op = one kernel launch (or a short fixed sequence of
    them: a zero fill before an accumulating kernel, a copy per concat
    piece). The op describes its call for the emitter's target: the callee,
    its arguments in order (buffers by the emitter's names, scalars and
    sizes as C++ expressions of the bound dims), the workspace it needs
    (an arena slot on the CPU, kernel scratch on CUDA) and, on CUDA, the
    launch shape of kernels the compiler generates. The emitter prints the
    description with the target's status check; the op never prints
    prologues, tables or buffer declarations.

    An op that a target cannot run (e.g. a CPU-only backward op on CUDA)
    returns a located error naming the target.
  }];
  let methods = [
    InterfaceMethod<[{
        Describes this op's launch to `emitter` (for its target, see
        `emitter.getTarget()`). Fails with a diagnostic at the op.
      }],
      "::mlir::LogicalResult", "emitLaunch",
      (ins "::nncc::target::LaunchEmitter &":$emitter)>,
    InterfaceMethod<[{
        Whether the CUDA launch has a bf16 instantiation (bf16 storage,
        fp32 arithmetic): a library compiled with `--precision bf16` may
        contain only such ops.
      }],
      "bool", "hasBf16Kernel", (ins)>,
    InterfaceMethod<[{
        The CUDA kernel headers the launch's code needs beyond those every
        generated `.cu` includes, as a mask of `nncc::target::CudaHeader`
        bits: a model's `.cu` includes only what its ops use.
      }],
      "unsigned", "getCudaHeaders", (ins)>,
  ];
}

#endif // NNCC_INTERFACES_KERNELLAUNCHOPINTERFACE_TD
