//===- SizeExpr.h - sizes the launches print and the plan evaluates -*- C++ -*-===//
//
// A launch sizes its kernel workspace (and a few host buffers) with an
// expression over the bound dims that the generated code evaluates; the
// memory plan needs the same number at compile time. A `Size` carries both
// at once: the C++ text the emitters print and the expression tree the plan
// evaluates, built together by the launch descriptions (from dims, integer
// constants, sizeof of the element types, + - * / and calls of the kernel
// library's size functions). Nothing is parsed back from the text. A size
// that the compiler cannot evaluate (a CUDA header's scratch size) says so
// by name when a plan asks for it.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_LIB_TARGET_COMMON_SIZEEXPR_H
#define NNCC_LIB_TARGET_COMMON_SIZEEXPR_H

#include "nncc/Target/TargetKind.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>

namespace nncc::target {

/// What a Size is evaluated in.
struct SizeEnv {
  llvm::StringMap<int64_t> dims; // by model dim name
  int64_t realSize = 4;          // sizeof(real_t): 4 (f32), 8 (f64) or 2 (bf16)
  /// The target planned for: on the CPU the recurrent sizes count the
  /// workspace only the CPU kernels use (the AVX-512 time loops' packed
  /// W_hh, ...); CUDA's plan (and its rematerialisation) leaves it out.
  TargetKind target = TargetKind::CPU;
};

/// A size function a launch calls: its C name, its arity and, for the
/// functions of libnncc_kernels that the compiler links, how to evaluate
/// it (null for the CUDA headers' scratch sizes).
struct SizeFunction {
  const char *name;
  unsigned arity;
  int64_t (*evaluate)(llvm::ArrayRef<int64_t> args);
};

/// The size functions the launches print (SizeExpr.cpp).
namespace size_fn {
extern const SizeFunction attentionCoreWorkspace, linearSampleWorkspace, linearCeWorkspace,
    rnnLayerWorkspace, rnnCellWorkspace, rnnCellBackwardWorkspace, rnnForwardTrainWorkspace,
    rnnBackwardReservedWorkspace, rnnBackwardWorkspace, rnnBackwardCkptWorkspace,
    rnnBackwardRevolveWorkspace, odeGradWorkspace, lshBuckets;
// CUDA headers (sized by the generated code only).
extern const SizeFunction cudaLayerNormBackwardScratch, cudaEmbeddingBackwardScratch,
    cudaReduceScratch, cudaLossScratch, cudaCrossEntropyBackwardScratch,
    cudaLinearCrossEntropyScratch, cudaLinearSampleScratch, cudaDilatedAttentionScratch,
    cudaLshAttentionScratch, cudaFlashAttentionBackwardWorkspace,
    cudaDilatedAttentionBackwardWorkspace, cudaLshAttentionBackwardWorkspace,
    cudaRnnCellBackwardScratch, cudaRnnStackForwardScratch, cudaRnnStackBackwardScratch,
    cudaLshRotationsAccBytes;
} // namespace size_fn

class Size {
public:
  /// The constant `v`, printed as `text` (its decimal digits by default).
  static Size constant(int64_t v);
  static Size constant(int64_t v, std::string text);
  /// The bound model dim `name`, printed as `text` (d_<name>).
  static Size dim(llvm::StringRef name, std::string text);
  /// sizeof(real_t), and sizeof(acc_t<real_t>) (bf16 computes in fp32).
  static Size realBytes();
  static Size accBytes();
  /// sizeof(`cType`), a fixed-size C type of `bytes` bytes.
  static Size bytesOf(llvm::StringRef cType, int64_t bytes);
  /// `fn(args...)`.
  static Size call(const SizeFunction &fn, llvm::ArrayRef<Size> args);

  /// Arithmetic with the text `a op b` (no parentheses: see paren()).
  friend Size operator+(const Size &a, const Size &b);
  friend Size operator-(const Size &a, const Size &b);
  friend Size operator*(const Size &a, const Size &b);
  friend Size operator/(const Size &a, const Size &b);
  /// The same value printed in parentheses.
  Size paren() const;
  /// The same value printed as `prefix` + text (a cast such as "(int)").
  Size prefixed(llvm::StringRef prefix) const;

  /// The C++ expression the generated code evaluates.
  const std::string &str() const { return text; }
  /// The value in `env`, or an error naming what could not be evaluated.
  llvm::Expected<int64_t> evaluate(const SizeEnv &env) const;

  struct Node;

private:
  Size(std::shared_ptr<const Node> node, std::string text)
      : node(std::move(node)), text(std::move(text)) {}
  std::shared_ptr<const Node> node;
  std::string text;
};

} // namespace nncc::target

#endif
