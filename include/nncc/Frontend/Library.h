//===- Library.h - Signatures of the built-in layers and functions -------===//
//
// The single table of what the language knows about each library layer
// (constructor parameters, how it is applied, what it returns) and each
// forward function. Checking (arity, keyword names, value kinds) is driven by
// these tables; the IR emission for each entry lives in Layers.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_FRONTEND_LIBRARY_H
#define NNCC_FRONTEND_LIBRARY_H

#include "nncc/Frontend/ConstEval.h"
#include "llvm/ADT/ArrayRef.h"

#include <optional>
#include <string>
#include <vector>

namespace nncc {
namespace frontend {

/// What kind of argument a parameter accepts.
enum class PK {
  Int,         // any integer
  PosInt,      // integer > 0 (sizes, counts)
  NonNegInt,   // integer >= 0
  Float,       // number (ints accepted)
  Prob,        // number in [0, 1)
  Bool,        // true / false
  Enum,        // one of ParamSpec::options (bare identifier)
  IntOrList,   // integer or list of integers
  IntList,     // list of integers
  FloatList,   // list of numbers
  AttnKind,    // dense | dilated(window:, dilation:, global:) | lsh(hashes:, chunk:)
  Activation,  // relu | gelu | tanh | sigmoid | leaky_relu(alpha)
  Layer,       // a layer constructor expression, e.g. ffn(D, 2*D)
  Tensor,      // (forward only) a run-time tensor or a number
  LayerRef,    // (forward only) the name of a declared layer
};

struct ParamSpec {
  const char *name;
  PK kind;
  bool required;
  std::optional<CValue> defaultValue; // when !required (absent: "not given")
  std::vector<const char *> options;  // for PK::Enum
};

/// Result shape of applying a layer or calling a function, as a tuple tree.
enum class ResultKind {
  Tensor,       // one tensor
  SeqState,     // (y, h_n)
  SeqLSTM,      // (y, (h_n, c_n))
  Pair,         // (a, b)
  Split,        // n tensors (n from the call's arguments)
  FromBlock,    // determined by the user block's `return`
};

struct LayerSpec {
  const char *name;
  std::vector<ParamSpec> ctorParams;  // declaration `name = layer(...)`
  std::vector<ParamSpec> applyParams; // application `name(...)` (Tensor kinds)
  ResultKind result;
};

struct FuncSpec {
  const char *name;
  std::vector<ParamSpec> params;
  ResultKind result;
  bool variadicTensors = false; // concat: all positional args are tensors
  bool isLoss = false;
};

const LayerSpec *lookupLayer(llvm::StringRef name);
const FuncSpec *lookupFunc(llvm::StringRef name);
llvm::ArrayRef<LayerSpec> allLayers();
llvm::ArrayRef<FuncSpec> allFuncs();

/// Signature of `optimizer`/`schedule` calls in the train clause.
const FuncSpec *lookupOptimizer(llvm::StringRef name);
const FuncSpec *lookupSchedule(llvm::StringRef name);

/// A reference to one written argument, for binding.
struct ArgRef {
  std::string name; // empty: positional
  SrcLoc loc;
};

/// Matches written arguments to parameters: positional in order, then by
/// keyword. `slots[i]` is the index into `args` bound to `params[i]`, or -1.
/// With `variadic`, every positional argument goes to `variadicArgs` and
/// parameters are keyword-only. Reports too many arguments, unknown or
/// repeated keywords, and missing required parameters.
bool bindArgs(llvm::StringRef what, llvm::ArrayRef<ParamSpec> params,
              llvm::ArrayRef<ArgRef> args, SrcLoc callLoc, DiagEngine &diag,
              std::vector<int> &slots, std::vector<int> *variadicArgs = nullptr);

/// `name` written without arguments (an Enum value), as the constructor
/// `name()`.
CValue enumAsCtor(const CValue &v);

/// Checks `v` against a compile-time parameter kind and normalizes it (ints
/// become floats for PK::Float, a single int becomes a list for
/// PK::IntOrList stays as is). Reports located errors.
bool checkValue(llvm::StringRef what, const ParamSpec &p, CValue &v,
                DiagEngine &diag);

/// Binds and checks a constructor-style CValue (a Ctor) against `params`,
/// filling defaults; `out` maps parameter names to values (absent optional
/// parameters without a default are left out).
bool bindCtor(llvm::StringRef what, llvm::ArrayRef<ParamSpec> params,
              const CValue &ctor, DiagEngine &diag,
              std::vector<std::pair<std::string, CValue>> &out);

} // namespace frontend
} // namespace nncc

#endif
