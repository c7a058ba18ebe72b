//===- NNTensorOps.cpp - nn shape and reduction ops -------------*- C++ -*-===//
//
// Type inference of concat, split, slice, transpose, the reductions,
// argmax / max / topk, cumsum and their backward helpers.
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/IR/NNOps.h"

#include "dialects/NN/IR/NNOpsCommon.h"
#include "llvm/ADT/SmallBitVector.h"

#include <limits>

using namespace mlir;
using namespace nncc::nn;
using namespace nncc::nn::detail;

namespace {
using NNTensor = nncc::nn::TensorType;
} // namespace

/// Length of `start:stop:step` over a dim of static size `size`, with
/// Python's negative indices and clamping.
static int64_t getSliceLength(int64_t size, int64_t start, int64_t stop,
                              int64_t step) {
  auto clampIndex = [&](int64_t index) {
    if (index < 0)
      index = std::max<int64_t>(index, -size) + size;
    return std::min(index, size);
  };
  int64_t begin = clampIndex(start);
  int64_t end =
      stop == std::numeric_limits<int64_t>::max() ? size : clampIndex(stop);
  return end > begin ? (end - begin - 1) / step + 1 : 0;
}

/// Shared inference of the reductions.
static LogicalResult inferReduce(const InferDiagnostics &diag, Value input,
                                 ArrayRef<int64_t> axes, bool keepdim,
                                 SmallVectorImpl<Type> &inferred) {
  FailureOr<nncc::nn::TensorType> x = diag.tensor(input, "x");
  if (failed(x))
    return failure();
  int64_t rank = x->getRank();
  llvm::SmallBitVector reduced(rank, axes.empty());
  for (int64_t axis : axes) {
    std::optional<int64_t> dim = normalizeAxis(axis, rank);
    if (!dim)
      return diag.error("axis ", axis, " is out of range for ", *x);
    if (reduced.test(*dim))
      return diag.error("axis ", *dim, " is reduced twice");
    reduced.set(*dim);
  }
  SmallVector<Dim> dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced.test(d))
      dims.push_back(x->getDim(d));
    else if (keepdim)
      dims.push_back(Dim::getStatic(1));
  }
  inferred.push_back(x->withDims(dims));
  return success();
}

/// nn.argmax / nn.max: a float x, one axis dropped (or kept as 1).
static LogicalResult inferAxisMax(const InferDiagnostics &diag, Value input,
                                  int64_t axis, bool keepdim, Type element,
                                  SmallVectorImpl<Type> &inferred) {
  FailureOr<nncc::nn::TensorType> x = diag.tensor(input, "x");
  if (failed(x) || failed(diag.expectFloat(*x, "x")))
    return failure();
  FailureOr<SmallVector<Dim>> dims =
      nncc::nn::detail::inferAxisReduced(diag, *x, axis, keepdim);
  if (failed(dims))
    return failure();
  nncc::nn::TensorType result = x->withDims(*dims);
  inferred.push_back(element ? result.withElementType(element) : result);
  return success();
}

/// The nn tensor type held by a TypeAttr (`what` names it in the error).
static FailureOr<NNTensor> typeAttr(const InferDiagnostics &diag,
                                    TypeAttr attr, StringRef what) {
  auto type = attr ? dyn_cast<NNTensor>(attr.getValue()) : NNTensor();
  if (!type)
    return diag.error("expected '", what, "' to be an nn tensor type");
  return type;
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return diag.error("expected at least one input");
  FailureOr<nncc::nn::TensorType> first = diag.tensor(inputs.front(), "input");
  if (failed(first))
    return failure();
  int64_t rank = first->getRank();
  std::optional<int64_t> axis = normalizeAxis(adaptor.getAxis(), rank);
  if (!axis)
    return diag.error("axis ", adaptor.getAxis(), " is out of range for ",
                      *first);
  SmallVector<Dim> dims(first->getDims());
  int64_t total = 0;
  bool allStatic = true;
  for (auto [index, input] : llvm::enumerate(inputs)) {
    FailureOr<nncc::nn::TensorType> type = diag.tensor(input, "input");
    if (failed(type) ||
        failed(diag.expectElementType(*type, first->getElementType(),
                                      "input #" + Twine(index))))
      return failure();
    if (type->getRank() != rank)
      return diag.error("expected input #", index, " of rank ", rank,
                        ", got ", *type);
    for (int64_t d = 0; d < rank; ++d) {
      Dim dim = type->getDim(d);
      if (d == *axis) {
        allStatic &= dim.isStatic();
        total += dim.isStatic() ? dim.getSize() : 0;
        continue;
      }
      if (!dim.isCompatibleWith(dims[d]))
        return diag.error("input #", index, " has shape ",
                          formatShape(type->getDims()), ", incompatible with ",
                          formatShape(first->getDims()), " outside axis ",
                          *axis);
      if (dims[d].isDynamic())
        dims[d] = dim;
    }
  }
  if (inputs.size() > 1)
    dims[*axis] = allStatic ? Dim::getStatic(total) : Dim::getDynamic();
  inferred.push_back(first->withDims(dims));
  return success();
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> x = diag.tensor(adaptor.getX(), "x");
  if (failed(x))
    return failure();
  std::optional<int64_t> axis = normalizeAxis(adaptor.getAxis(), x->getRank());
  if (!axis)
    return diag.error("axis ", adaptor.getAxis(), " is out of range for ",
                      *x);
  if (!adaptor.getSizesAttr())
    return diag.error("missing sizes");
  ArrayRef<int64_t> sizes = adaptor.getSizes();
  if (sizes.empty())
    return diag.error("expected at least one size");
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size < 0)
      return diag.error("sizes must be >= 0, got ", size);
    if (size > std::numeric_limits<int64_t>::max() - total)
      return diag.error("sizes overflow int64");
    total += size;
  }
  Dim dim = x->getDim(*axis);
  if (dim.isSymbolic())
    return diag.error("cannot split the symbolic dim ", dim.str(),
                      " into static sizes");
  if (dim.isStatic() && dim.getSize() != total)
    return diag.error("sizes add up to ", total, " but dim ", *axis, " of ",
                      *x, " is ", dim.getSize());
  SmallVector<Dim> dims(x->getDims());
  for (int64_t size : sizes) {
    dims[*axis] = Dim::getStatic(size);
    inferred.push_back(x->withDims(dims));
  }
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> x = diag.tensor(adaptor.getX(), "x");
  if (failed(x))
    return failure();
  if (!adaptor.getStartsAttr() || !adaptor.getStopsAttr() ||
      !adaptor.getStepsAttr())
    return diag.error("missing starts, stops or steps");
  ArrayRef<int64_t> starts = adaptor.getStarts(), stops = adaptor.getStops(),
                    steps = adaptor.getSteps();
  int64_t rank = x->getRank();
  if (static_cast<int64_t>(starts.size()) != rank ||
      static_cast<int64_t>(stops.size()) != rank ||
      static_cast<int64_t>(steps.size()) != rank)
    return diag.error("expected ", rank,
                      " starts, stops and steps (one per dim of ", *x,
                      "), got ", starts.size(), ", ", stops.size(), " and ",
                      steps.size());
  llvm::SmallBitVector squeezed(rank);
  for (int64_t entry : adaptor.getSqueeze()) {
    std::optional<int64_t> dim = normalizeAxis(entry, rank);
    if (!dim)
      return diag.error("squeezed dim ", entry, " is out of range for ", *x);
    if (squeezed.test(*dim))
      return diag.error("dim ", *dim, " is squeezed twice");
    squeezed.set(*dim);
  }
  constexpr int64_t kToEnd = std::numeric_limits<int64_t>::max();
  SmallVector<Dim> dims;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t start = starts[d], stop = stops[d], step = steps[d];
    if (step < 1)
      return diag.error("steps must be >= 1, got ", step, " for dim ", d);
    Dim dim = x->getDim(d);
    Dim sliced = Dim::getDynamic();
    if (dim.isStatic())
      sliced = Dim::getStatic(getSliceLength(dim.getSize(), start, stop, step));
    else if (start == 0 && stop == kToEnd && step == 1)
      sliced = dim;
    else if (start >= 0 && stop >= 0 && stop != kToEnd)
      sliced = Dim::getStatic(stop > start ? (stop - start - 1) / step + 1 : 0);
    if (!squeezed.test(d)) {
      dims.push_back(sliced);
      continue;
    }
    if (sliced.isStatic() && sliced.getSize() != 1)
      return diag.error("squeezed dim ", d, " must select one element, but ",
                        start, ":", stop, ":", step, " selects ",
                        sliced.getSize());
  }
  inferred.push_back(x->withDims(dims));
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> x = diag.tensor(adaptor.getX(), "x");
  if (failed(x))
    return failure();
  if (!adaptor.getPermAttr())
    return diag.error("missing perm");
  ArrayRef<int64_t> perm = adaptor.getPerm();
  int64_t rank = x->getRank();
  llvm::SmallBitVector seen(rank);
  bool isPermutation = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t index : perm) {
    if (!isPermutation || index < 0 || index >= rank || seen.test(index)) {
      isPermutation = false;
      break;
    }
    seen.set(index);
  }
  if (!isPermutation)
    return diag.error("perm must be a permutation of [0, ", rank, ") for ",
                      *x);
  SmallVector<Dim> dims;
  for (int64_t index : perm)
    dims.push_back(x->getDim(index));
  inferred.push_back(x->withDims(dims));
  return success();
}

LogicalResult ReduceMeanOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  return inferReduce(InferDiagnostics(loc, getOperationName()),
                     adaptor.getX(), adaptor.getAxes(), adaptor.getKeepdim(),
                     inferred);
}

LogicalResult ReduceSumOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  return inferReduce(InferDiagnostics(loc, getOperationName()),
                     adaptor.getX(), adaptor.getAxes(), adaptor.getKeepdim(),
                     inferred);
}

LogicalResult ArgmaxOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  return inferAxisMax(InferDiagnostics(loc, getOperationName()),
                      adaptor.getX(), adaptor.getAxis(), adaptor.getKeepdim(),
                      IntegerType::get(ctx, 32), inferred);
}

LogicalResult MaxOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  return inferAxisMax(InferDiagnostics(loc, getOperationName()),
                      adaptor.getX(), adaptor.getAxis(), adaptor.getKeepdim(),
                      Type(), inferred);
}

LogicalResult CumsumOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> x = diag.tensor(adaptor.getX(), "x");
  if (failed(x))
    return failure();
  if (!normalizeAxis(adaptor.getAxis(), x->getRank()))
    return diag.error("axis ", adaptor.getAxis(), " is out of range for ", *x);
  inferred.push_back(*x);
  return success();
}

LogicalResult TopkOp::inferReturnTypes(MLIRContext *ctx,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<nncc::nn::TensorType> x = diag.tensor(adaptor.getX(), "x");
  if (failed(x) || failed(diag.expectFloat(*x, "x")))
    return failure();
  int64_t axis = adaptor.getAxis(), k = adaptor.getK();
  std::optional<int64_t> dim = normalizeAxis(axis, x->getRank());
  if (!dim)
    return diag.error("axis ", axis, " is out of range for ", *x);
  Dim n = x->getDim(*dim);
  if (!n.isStatic())
    return diag.error("needs a static size along axis ", axis, " of ", *x,
                      " (k is checked against it)");
  if (k < 1 || k > n.getSize())
    return diag.error("k = ", k, " must be in [1, ", n.getSize(),
                      "] (the size of axis ", axis, " of ", *x, ")");
  SmallVector<Dim> dims(x->getDims());
  dims[*dim] = Dim::getStatic(k);
  nncc::nn::TensorType values = x->withDims(dims);
  inferred.push_back(values);
  inferred.push_back(values.withElementType(IntegerType::get(ctx, 32)));
  return success();
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

LogicalResult ZerosOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  FailureOr<NNTensor> type = typeAttr(InferDiagnostics(loc, getOperationName()),
                                      adaptor.getTypeAttr(), "type");
  if (failed(type))
    return failure();
  inferred.push_back(*type);
  return success();
}

LogicalResult ReduceToShapeOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> x = diag.tensor(adaptor.getX(), "x");
  FailureOr<NNTensor> type = typeAttr(diag, adaptor.getTypeAttr(), "type");
  if (failed(x) || failed(type) ||
      failed(diag.expectElementType(*type, x->getElementType(), "type")))
    return failure();
  if (type->getRank() > x->getRank())
    return diag.error("type ", *type, " has more dims than x ", *x);
  std::optional<SmallVector<Dim>> shape =
      broadcastShapes(type->getDims(), x->getDims());
  if (!shape || !areCompatibleShapes(*shape, x->getDims()))
    return diag.error("type ", *type, " does not broadcast to x ", *x);
  inferred.push_back(*type);
  return success();
}

LogicalResult ReduceGradOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> dy = diag.tensor(adaptor.getDy(), "dy");
  FailureOr<NNTensor> type = typeAttr(diag, adaptor.getTypeAttr(), "type");
  if (failed(dy) || failed(type) ||
      failed(diag.expectElementType(*type, dy->getElementType(), "type")))
    return failure();
  int64_t rank = type->getRank();
  ArrayRef<int64_t> axes = adaptor.getAxes();
  int64_t reduced = axes.empty() ? rank : static_cast<int64_t>(axes.size());
  for (int64_t axis : axes)
    if (!normalizeAxis(axis, rank))
      return diag.error("axis ", axis, " out of range for ", *type);
  int64_t expectedRank = adaptor.getKeepdim() ? rank : rank - reduced;
  if (dy->getRank() != expectedRank)
    return diag.error("expected dy of rank ", expectedRank, ", got ", *dy);
  inferred.push_back(*type);
  return success();
}

LogicalResult MaxGradOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> dy = diag.tensor(adaptor.getDy(), "dy");
  FailureOr<NNTensor> x = diag.tensor(adaptor.getX(), "x");
  if (failed(dy) || failed(x) ||
      failed(diag.expectElementType(*dy, x->getElementType(), "dy")))
    return failure();
  FailureOr<SmallVector<Dim>> dims = nncc::nn::detail::inferAxisReduced(
      diag, *x, adaptor.getAxis(), adaptor.getKeepdim());
  if (failed(dims) ||
      failed(diag.expectShape(*dy, *dims, "dy (nn.max's result)")))
    return failure();
  inferred.push_back(*x);
  return success();
}

LogicalResult TopkGradOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> dy = diag.tensor(adaptor.getDy(), "dy");
  FailureOr<NNTensor> indices = diag.tensor(adaptor.getIndices(), "indices");
  if (failed(dy) || failed(indices) ||
      failed(diag.expectElementType(*indices, IntegerType::get(
                                                  dy->getContext(), 32),
                                    "indices")) ||
      failed(diag.expectShape(*indices, dy->getDims(),
                              "indices (nn.topk's, of dy's shape)")))
    return failure();
  int64_t axis = adaptor.getAxis();
  std::optional<int64_t> dim = normalizeAxis(axis, dy->getRank());
  if (!dim)
    return diag.error("axis ", axis, " is out of range for ", *dy);
  if (adaptor.getSize() < 1)
    return diag.error("size ", adaptor.getSize(), " must be positive");
  SmallVector<Dim> dims(dy->getDims());
  dims[*dim] = Dim::getStatic(adaptor.getSize());
  inferred.push_back(dy->withDims(dims));
  return success();
}

LogicalResult SliceGradOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  InferDiagnostics diag(loc, getOperationName());
  FailureOr<NNTensor> dy = diag.tensor(adaptor.getDy(), "dy");
  FailureOr<NNTensor> type = typeAttr(diag, adaptor.getTypeAttr(), "type");
  if (failed(dy) || failed(type) ||
      failed(diag.expectElementType(*type, dy->getElementType(), "type")))
    return failure();
  int64_t rank = type->getRank();
  if (static_cast<int64_t>(adaptor.getStarts().size()) != rank ||
      static_cast<int64_t>(adaptor.getStops().size()) != rank ||
      static_cast<int64_t>(adaptor.getSteps().size()) != rank)
    return diag.error("expected one start, stop and step per dim of ", *type);
  for (int64_t step : adaptor.getSteps())
    if (step < 1)
      return diag.error("steps must be >= 1, got ", step);
  int64_t expectedRank =
      rank - static_cast<int64_t>(adaptor.getSqueeze().size());
  if (dy->getRank() != expectedRank)
    return diag.error("expected dy of rank ", expectedRank, ", got ", *dy);
  inferred.push_back(*type);
  return success();
}
