//===- ModelHandle.h - A generated library, loaded --------------*- C++ -*-===//

#ifndef NNCC_DRIVER_MODELHANDLE_H
#define NNCC_DRIVER_MODELHANDLE_H

#include "nncc/Runtime/nncc_model.h"
#include "nncc/Target/TargetKind.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace nncc::driver {

/// A model created from a generated lib<model>.so (nncc_model.h). The
/// library stays loaded after destruction: its OpenMP threads may still be
/// parked.
struct ModelHandle {
  void *lib = nullptr;
  const nncc_model_abi *abi = nullptr;
  nncc_model *model = nullptr;

  ModelHandle() = default;
  ModelHandle(const ModelHandle &) = delete;
  ModelHandle &operator=(const ModelHandle &) = delete;
  ~ModelHandle();

  /// dlopens `libPath`, checks the ABI version and creates the model for
  /// `target`. Returns the exit status (1 after printing the error).
  int load(llvm::StringRef libPath, TargetKind target);

  /// Loads `weightsFile` (safetensors), or, when empty, init_weights(seed).
  /// Returns the exit status.
  int initWeights(llvm::StringRef weightsFile, uint64_t seed);
};

} // namespace nncc::driver

#endif // NNCC_DRIVER_MODELHANDLE_H
