//===- TargetKind.h - where generated code runs -----------------*- C++ -*-===//
//
// One name for a target, from the command line (`--target cpu|cuda`)
// through memory planning, the remat search, the compile cache and the
// emitters. The runtime's C ABI spells the same two as `nncc_target`
// (nncc_model.h); driver::ModelHandle::load is where one becomes the other.
//
// A library always holds the CPU code; whether it also holds CUDA code is
// CompileOptions::cuda (Compile.h), not a third target.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_TARGET_TARGETKIND_H
#define NNCC_TARGET_TARGETKIND_H

namespace nncc {

enum class TargetKind { CPU, CUDA };

/// "cpu", "cuda": the spelling of `--target` and of cache keys.
inline const char *targetName(TargetKind t) {
  return t == TargetKind::CUDA ? "cuda" : "cpu";
}

} // namespace nncc

#endif // NNCC_TARGET_TARGETKIND_H
