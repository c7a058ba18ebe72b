//===- NNKOps.cpp - what the nnk op families share --------------*- C++ -*-===//
//
// Every op checks its buffers' ranks, dims (up to compatibility: `?` matches
// any dim) and element types against docs/nnk-spec.md, in the verifiers of
// its family's NNK<Family>Ops.cpp. Here: the checks they share
// (NNKOpsCommon.h), the enum codes the emitters print, and the generated
// definitions.
//
//===----------------------------------------------------------------------===//

#include "dialects/NNK/IR/NNKOps.h"

#include "dialects/NNK/IR/NNKOpsCommon.h"
#include "nncc/Kernels/Codes.h"
#include "nncc/Kernels/RecurrentMath.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace nncc;
using namespace nncc::nnk;

// The emitters print these enums' integer values as kernel-library codes
// (nncc/Kernels/Codes.h, the one definition of each code set).
#define NNCC_SAME_CODE(E, C)                                                   \
  static_assert(static_cast<int>(E) == (C), #E " != " #C " (Codes.h)")
NNCC_SAME_CODE(Activation::none, NNCC_ACT_NONE);
NNCC_SAME_CODE(Activation::relu, NNCC_ACT_RELU);
NNCC_SAME_CODE(Activation::leaky_relu, NNCC_ACT_LEAKY_RELU);
NNCC_SAME_CODE(Activation::gelu, NNCC_ACT_GELU);
NNCC_SAME_CODE(Activation::gelu_tanh, NNCC_ACT_GELU_TANH);
NNCC_SAME_CODE(Activation::tanh, NNCC_ACT_TANH);
NNCC_SAME_CODE(Activation::sigmoid, NNCC_ACT_SIGMOID);
NNCC_SAME_CODE(Cell::rnn_tanh, NNCC_CELL_RNN_TANH);
NNCC_SAME_CODE(Cell::rnn_relu, NNCC_CELL_RNN_RELU);
NNCC_SAME_CODE(Cell::lstm, NNCC_CELL_LSTM);
NNCC_SAME_CODE(Cell::gru, NNCC_CELL_GRU);
NNCC_SAME_CODE(Cell::gru_cho2014, NNCC_CELL_GRU_CHO2014);
NNCC_SAME_CODE(AttentionKind::dense, NNCC_ATTN_DENSE);
NNCC_SAME_CODE(AttentionKind::dilated, NNCC_ATTN_DILATED);
NNCC_SAME_CODE(AttentionKind::lsh, NNCC_ATTN_LSH);
NNCC_SAME_CODE(AttentionKind::local, NNCC_ATTN_LOCAL);
NNCC_SAME_CODE(ODEMethod::euler, NNCC_ODE_EULER);
NNCC_SAME_CODE(ODEMethod::rk4, NNCC_ODE_RK4);
NNCC_SAME_CODE(ODEMethod::dopri5, NNCC_ODE_DOPRI5);
#undef NNCC_SAME_CODE

int64_t nncc::nnk::getGateCount(Cell cell) {
  return nncc::kernels::cell_gates(static_cast<int>(cell)); // codes asserted above
}

int64_t nncc::nnk::getODEWorkSlots(ODEMethod method) {
  switch (method) {
  case ODEMethod::euler:
    return 2;
  case ODEMethod::rk4:
    return 5;
  case ODEMethod::dopri5:
    return 9;
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace nncc::nnk::detail {

BufferType bufferOf(Value v) { return cast<BufferType>(v.getType()); }

/// Checks that `v` has exactly `dims` (up to compatibility).
LogicalResult expectDims(Operation *op, Value v, ArrayRef<Dim> dims,
                         StringRef what) {
  BufferType type = bufferOf(v);
  if (!nncc::areCompatibleShapes(type.getDims(), dims))
    return op->emitOpError() << what << " must have shape "
                             << nncc::formatShape(dims) << ", got "
                             << nncc::formatShape(type.getDims());
  return success();
}

LogicalResult expectRank(Operation *op, Value v, int64_t rank, StringRef what) {
  if (bufferOf(v).getRank() != rank)
    return op->emitOpError() << what << " must have rank " << rank << ", got "
                             << bufferOf(v).getRank();
  return success();
}

/// All values share the element type of the first.
LogicalResult expectSameElementType(Operation *op, ValueRange values) {
  Type elt;
  for (Value v : values) {
    if (!v)
      continue;
    Type t = bufferOf(v).getElementType();
    if (!elt)
      elt = t;
    else if (t != elt)
      return op->emitOpError()
             << "buffers must share one element type, got " << elt << " and "
             << t;
  }
  return success();
}

} // namespace nncc::nnk::detail

#define GET_OP_CLASSES
#include "dialects/NNK/IR/NNKOps.cpp.inc"
