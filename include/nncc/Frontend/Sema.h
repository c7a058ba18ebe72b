//===- Sema.h - Declaration checking and layer instantiation --------------===//
//
// Evaluates constants, checks inputs, and instantiates every declared layer
// (library layers, user blocks, `repeat` stacks, `parallel` groups) into a
// tree of LayerInstances that carry their evaluated arguments and their
// PyTorch state_dict path. Forward bodies are checked by MLIRGen, which walks
// them once with full knowledge of the operand types.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_FRONTEND_SEMA_H
#define NNCC_FRONTEND_SEMA_H

#include "nncc/Frontend/AST.h"
#include "nncc/Frontend/ConstEval.h"
#include "nncc/Frontend/Library.h"
#include "llvm/ADT/StringMap.h"

#include <memory>
#include <string>
#include <vector>

namespace nncc {
namespace frontend {

struct LayerInstance {
  enum Kind { Library, Block, Repeat, Parallel } kind = Library;
  std::string callee;            // "linear", a block name, ...
  const LayerSpec *spec = nullptr; // Library
  const BlockDef *block = nullptr; // Block
  std::string path;              // state_dict prefix: "stack.0.up"
  SrcLoc loc;                    // the constructor
  /// Library: bound constructor arguments (defaults filled), by name.
  std::vector<std::pair<std::string, CValue>> args;
  /// Block: parameters and constants visible in the block body.
  llvm::StringMap<CValue> consts;
  /// Block: declared sub-layers; Repeat/Parallel: the members;
  /// residual: [inner]; reversible: [f, g].
  std::vector<std::pair<std::string, std::unique_ptr<LayerInstance>>> children;

  const CValue *arg(llvm::StringRef name) const;
  int64_t intArg(llvm::StringRef name, int64_t dflt = 0) const;
  double floatArg(llvm::StringRef name, double dflt = 0.0) const;
  bool boolArg(llvm::StringRef name, bool dflt = false) const;
  std::string enumArg(llvm::StringRef name, llvm::StringRef dflt = "") const;
  LayerInstance *child(llvm::StringRef name) const;
  /// The state_dict name of a parameter of this layer: "path.name".
  std::string paramName(llvm::StringRef name) const {
    return path.empty() ? name.str() : path + "." + name.str();
  }
};

/// A dimension of an input: static size or symbolic dim.
struct DimValue {
  bool symbolic = false;
  int64_t size = 0;
  std::string symbol;
};

struct InputInfo {
  std::string name;
  SrcLoc loc;
  std::string dtype;
  std::vector<DimValue> shape;
};

struct ModelInfo {
  const FileAST *ast = nullptr;
  const ModelDef *model = nullptr;
  std::string name;
  std::vector<std::string> dims;
  llvm::StringMap<CValue> consts;
  std::vector<InputInfo> inputs;
  std::vector<std::pair<std::string, std::unique_ptr<LayerInstance>>> layers;
  llvm::StringMap<const BlockDef *> blocks;
  /// The train clause: word -> value (optimizer/schedule with defaults).
  std::vector<std::pair<std::string, CValue>> train;

  LayerInstance *layer(llvm::StringRef name) const;
  bool isDim(llvm::StringRef name) const;
};

/// Checks declarations and instantiates layers; null after an error (which
/// was reported through `diag`).
std::unique_ptr<ModelInfo> analyzeModel(const FileAST &file, DiagEngine &diag);

/// Limits that keep any input from exhausting time or memory.
constexpr int64_t kMaxRepeat = 4096;
constexpr int64_t kMaxLayerInstances = 100000;
constexpr unsigned kMaxBlockNesting = 64;

} // namespace frontend
} // namespace nncc

#endif
