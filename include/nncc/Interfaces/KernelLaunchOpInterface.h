//===- KernelLaunchOpInterface.h - an nnk op's kernel call ------*- C++ -*-===//
//
// KernelLaunchOpInterface (KernelLaunchOpInterface.td). The emitter core it
// talks to is nncc::target::LaunchEmitter (lib/Target/Common/LaunchEmitter.h).
//
//===----------------------------------------------------------------------===//

#ifndef NNCC_INTERFACES_KERNELLAUNCHOPINTERFACE_H
#define NNCC_INTERFACES_KERNELLAUNCHOPINTERFACE_H

#include "mlir/IR/OpDefinition.h"

namespace nncc::target {
class LaunchEmitter;
} // namespace nncc::target

#include "nncc/Interfaces/KernelLaunchOpInterface.h.inc"

#endif // NNCC_INTERFACES_KERNELLAUNCHOPINTERFACE_H
