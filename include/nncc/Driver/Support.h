//===- Support.h - Errors and strings shared by nncc subcommands -*- C++ -*-===//

#ifndef NNCC_DRIVER_SUPPORT_H
#define NNCC_DRIVER_SUPPORT_H

#include "nncc/Runtime/nncc_runtime.h"
#include "nncc/Target/Compile.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Twine.h"

#include <string>

namespace nncc::driver {

/// Prints `nncc: error: <msg>`; returns 1 (the exit status).
int fail(const llvm::Twine &msg);

/// "[4, 32]".
std::string shapeString(llvm::ArrayRef<int64_t> shape);

/// "F32 [B, T, 16]".
std::string signatureString(const TensorSignature &t);

/// The names of the tensors in `file`, comma-separated ("nothing" if none).
std::string tensorNames(nncc_safetensors *file);

/// `nncc: error: input 'x' (F32 [B, 4]) is missing from 'F' (it has: ...)`.
int failMissingInput(const TensorSignature &input, llvm::StringRef path,
                     nncc_safetensors *file);

} // namespace nncc::driver

#endif // NNCC_DRIVER_SUPPORT_H
