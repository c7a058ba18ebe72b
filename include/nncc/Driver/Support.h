//===- Support.h - Errors and strings shared by nncc subcommands -*- C++ -*-===//

#ifndef NNCC_DRIVER_SUPPORT_H
#define NNCC_DRIVER_SUPPORT_H

#include "nncc/Runtime/nncc_runtime.h"
#include "nncc/Target/Compile.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Twine.h"

#include <map>
#include <string>

namespace nncc::driver {

/// Prints `nncc: error: <msg>` on one line; returns 1 (the exit status).
/// Control characters in `msg` (from a file name or a tensor name, say)
/// are printed as `\xNN`, so no name can forge a line or drive the terminal.
int fail(const llvm::Twine &msg);

/// `s` with control characters (and DEL) as `\xNN`; other bytes kept.
std::string printable(llvm::StringRef s);

/// The most memory this process can expect to allocate: the machine's
/// physical memory, or its address-space or data limit when smaller.
uint64_t allocatableBytes();

/// Refuses `what` (e.g. "input 'x' (F32 [B, 3])") of `shape` with
/// `bytesPerElement` when its size overflows or exceeds allocatableBytes(),
/// naming the size it needs. Returns the exit status.
int checkAllocation(const llvm::Twine &what, llvm::ArrayRef<int64_t> shape,
                    uint64_t bytesPerElement);

/// Checks the values of input `s` (dtype, shape, data) against the range
/// its role admits: token ids in [0, vocabulary), class targets in
/// [0, classes) or an ignore_index, lengths in [0, T]. `dims` binds the
/// symbolic dims a limit may name; `source` says where the data came from.
/// The first value out of range is named with its index, value and limit.
/// Returns the exit status.
int checkInputValues(const TensorSignature &s, nncc_dtype dtype, llvm::ArrayRef<int64_t> shape,
                     const void *data, const std::map<std::string, int64_t> &dims,
                     llvm::StringRef source);

/// One path a command reads (`flag` names it in messages: "--data").
struct InputPath {
  llvm::StringRef flag;
  std::string path;
};

/// Checks, before any work, that `path` can be written as the output of
/// `flag`: its folder exists and can be written; it is not a directory,
/// device or FIFO (a symlink to a regular file is written through); it is
/// none of `inputs` (the same file or the same path). With `placeholder`
/// (e.g. "{step}") in the path only its folder is checked. Returns the exit
/// status.
int checkOutputPath(llvm::StringRef flag, const std::string &path,
                    llvm::ArrayRef<InputPath> inputs, llvm::StringRef placeholder = "");

/// Replaces `path` with `contents` through a private temporary beside it
/// (O_EXCL, a random name), synced and renamed into place, so a kill leaves
/// the old file or the new one whole. Errors name `flag`. Returns the exit
/// status.
int replaceFile(const std::string &path, llvm::StringRef contents, llvm::StringRef flag);

/// Refuses, before it is opened, an input path that is not a regular file
/// (a FIFO would block, a device never end); a missing one is left to the
/// reader's message. Returns the exit status.
int checkInputPath(llvm::StringRef flag, const std::string &path);

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
