//===- NNDialect.cpp - The nn dialect ---------------------------*- C++ -*-===//

#include "dialects/NN/IR/NNDialect.h"

#include "dialects/NN/IR/NNAttrs.h"
#include "dialects/NN/IR/NNOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace nncc::nn;

#include "dialects/NN/IR/NNDialect.cpp.inc"

void NNDialect::initialize() {
  registerTypes();
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "dialects/NN/IR/NNOps.cpp.inc"
      >();
}

/// The discardable `nn.*` attributes and where they may appear:
///   nn.model        string, on the module: the model's name
///   nn.dims         array of strings, on the module: the symbolic dims
///   nn.train        #nn.train<...>, on the module: the train clause
///   nn.training     unit, on a func: the training-mode forward_backward
///   nn.eval_mode    unit, on a func: gradients of the inference forward
/// (nn.name, on func arguments and results, and nn.role, on func arguments,
/// are checked below.)
LogicalResult NNDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  auto onModule = [&]() -> LogicalResult {
    if (!isa<ModuleOp>(op))
      return op->emitOpError("'") << name << "' is a module attribute";
    return success();
  };
  if (name == "nn.model") {
    if (failed(onModule()))
      return failure();
    if (!isa<StringAttr>(value))
      return op->emitOpError("'nn.model' must be a string, got ") << value;
    return success();
  }
  if (name == "nn.dims") {
    if (failed(onModule()))
      return failure();
    auto arr = dyn_cast<ArrayAttr>(value);
    if (!arr || !llvm::all_of(arr, [](Attribute a) { return isa<StringAttr>(a); }))
      return op->emitOpError("'nn.dims' must be an array of strings, got ")
             << value;
    return success();
  }
  if (name == "nn.train") {
    if (failed(onModule()))
      return failure();
    if (!isa<TrainAttr>(value))
      return op->emitOpError("'nn.train' must be an #nn.train<...>, got ")
             << value;
    return success();
  }
  if (name == "nn.training" || name == "nn.eval_mode") {
    if (!isa<FunctionOpInterface>(op))
      return op->emitOpError("'") << name << "' is a function attribute";
    if (!isa<UnitAttr>(value))
      return op->emitOpError("'") << name << "' must be a unit attribute";
    return success();
  }
  if (name == "nn.recomputed" || name == "nn.stored") {
    // nn.recomputed: a clone of a forward op in the backward (the
    // rematerialisation); nn.stored: an op of a reversible block inlined so
    // that its activations are kept rather than reconstructed.
    if (!isa<UnitAttr>(value) || isa<FunctionOpInterface, ModuleOp>(op))
      return op->emitOpError("'") << name << "' is a unit attribute of an op in a function";
    return success();
  }
  return op->emitOpError("unknown nn dialect attribute '") << name << "'";
}

static LogicalResult verifyNameAttr(Operation *op, NamedAttribute attr,
                                    const char *what) {
  if (attr.getName().getValue() != "nn.name")
    return op->emitOpError("unknown nn dialect ")
           << what << " attribute '" << attr.getName().getValue() << "'";
  if (!isa<StringAttr>(attr.getValue()))
    return op->emitOpError("'nn.name' must be a string, got ")
           << attr.getValue();
  return success();
}

/// Function arguments: nn.name (the input's name) and nn.role
/// (#nn.role<...>, what the front end found the input used for).
LogicalResult NNDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                  unsigned,
                                                  NamedAttribute attr) {
  if (attr.getName().getValue() == "nn.role") {
    if (!isa<FunctionOpInterface>(op))
      return op->emitOpError("'nn.role' is a function argument attribute");
    if (!isa<InputRoleAttr>(attr.getValue()))
      return op->emitOpError("'nn.role' must be an #nn.role<...>, got ")
             << attr.getValue();
    return success();
  }
  return verifyNameAttr(op, attr, "argument");
}

LogicalResult NNDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                     unsigned,
                                                     NamedAttribute attr) {
  return verifyNameAttr(op, attr, "result");
}
