//===- ExpandReversible.cpp - Inline nn.reversible blocks ----------------===//
//
// The nn-expand-reversible pass: each reversible block becomes
// split + F + add + G + add + concat; split(concat) pairs are then folded.
// nncc-remat inlines chosen blocks the same way, before differentiation,
// when it stores their activations instead of reconstructing them
// (storeReversibleBlocks).
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/Transforms/Passes.h"
#include "dialects/NN/Transforms/Remat.h"

#include "dialects/NN/IR/NNOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace nncc::nn {
#define GEN_PASS_DEF_NNEXPANDREVERSIBLE
#include "dialects/NN/Transforms/Passes.h.inc"
} // namespace nncc::nn

using namespace mlir;
using namespace nncc::nn;

/// y = concat(x1 + F(x2), x2 + G(x1 + F(x2))) with x1, x2 the halves of x.
/// With `mark`, every top-level op created gets that unit attribute.
static LogicalResult expandReversible(ReversibleOp op, StringRef mark = "") {
  OpBuilder builder(op);
  Location loc = op.getLoc();
  auto xType = cast<nncc::nn::TensorType>(op.getX().getType());
  int64_t rank = xType.getRank();
  Dim last = xType.getDims().back();
  if (!last.isStatic() || last.getSize() % 2 != 0)
    return op.emitError("reversible blocks need a static, even last dim to "
                        "split into halves, got ")
           << last.str();
  int64_t F = last.getSize() / 2;
  SmallVector<Dim> halfDims(xType.getDims());
  halfDims.back() = Dim::getStatic(F);
  auto half = xType.withDims(halfDims);
  auto split = SplitOp::create(builder, loc, TypeRange{half, half}, op.getX(),
                               rank - 1, ArrayRef<int64_t>{F, F});
  SmallVector<Operation *> created{split};
  Value x1 = split.getResult(0), x2 = split.getResult(1);
  auto inlineRegion = [&](Region &region, Value arg) -> Value {
    Block &block = region.front();
    IRMapping map;
    map.map(block.getArgument(0), arg);
    for (Operation &inner : block.without_terminator())
      created.push_back(builder.clone(inner, map));
    return map.lookupOrDefault(block.getTerminator()->getOperand(0));
  };
  // The branch output first, so the add joins the branch's GEMM chain
  // (residual = the other half).
  Value fy = inlineRegion(op.getF(), x2);
  Value y1 = AddOp::create(builder, loc, half, fy, x1);
  Value gy = inlineRegion(op.getG(), y1);
  Value y2 = AddOp::create(builder, loc, half, gy, x2);
  Value y = ConcatOp::create(builder, loc, xType, ValueRange{y1, y2}, rank - 1);
  if (!mark.empty()) {
    created.append({y1.getDefiningOp(), y2.getDefiningOp(), y.getDefiningOp()});
    for (Operation *c : created)
      c->setAttr(mark, builder.getUnitAttr());
  }
  op.getResult().replaceAllUsesWith(y);
  op.erase();
  return success();
}

namespace {
/// split(concat(a, b, ...)) -> (a, b, ...) when both use the same axis and
/// each piece has the type of the matching input; the concat goes when this
/// was its last use.
struct FoldSplitOfConcat : OpRewritePattern<SplitOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SplitOp split,
                                PatternRewriter &rewriter) const override {
    auto concat = split.getX().getDefiningOp<ConcatOp>();
    if (!concat || concat.getInputs().size() != split.getNumResults())
      return failure();
    int64_t rank = cast<nncc::nn::TensorType>(split.getX().getType()).getRank();
    if (normalizeAxis(concat.getAxis(), rank) !=
        normalizeAxis(split.getAxis(), rank))
      return failure();
    for (auto [in, out] :
         llvm::zip_equal(concat.getInputs(), split.getResults()))
      if (in.getType() != out.getType())
        return failure();
    rewriter.replaceOp(split, concat.getInputs());
    if (concat.getResult().use_empty())
      rewriter.eraseOp(concat);
    return success();
  }
};

} // namespace

static void foldSplitsOfConcats(Operation *root) {
  // Only the split(concat) fold: no folding or dead-code elimination of
  // anything else (the walk driver does neither).
  RewritePatternSet patterns(root->getContext());
  patterns.add<FoldSplitOfConcat>(root->getContext());
  walkAndApplyPatterns(root, std::move(patterns));
}

SmallVector<ReversibleOp> nncc::nn::topLevelReversibleBlocks(func::FuncOp fn) {
  SmallVector<ReversibleOp> blocks;
  if (!fn.getBody().empty())
    llvm::append_range(blocks, fn.getBody().front().getOps<ReversibleOp>());
  return blocks;
}

LogicalResult nncc::nn::storeReversibleBlocks(ArrayRef<ReversibleOp> blocks) {
  if (blocks.empty())
    return success();
  Operation *fn = blocks.front()->getParentOp();
  for (ReversibleOp op : blocks)
    if (failed(expandReversible(op, kStoredAttrName)))
      return failure();
  foldSplitsOfConcats(fn);
  return success();
}

namespace {
struct NNExpandReversiblePass
    : public nncc::nn::impl::NNExpandReversibleBase<NNExpandReversiblePass> {
  using NNExpandReversibleBase::NNExpandReversibleBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (storedLast >= 0) {
      for (auto fn : module.getOps<func::FuncOp>()) {
        SmallVector<ReversibleOp> blocks = topLevelReversibleBlocks(fn);
        size_t n = std::min<size_t>(blocks.size(), static_cast<size_t>(storedLast));
        if (failed(storeReversibleBlocks(ArrayRef(blocks).take_back(n))))
          return signalPassFailure();
      }
      return;
    }
    // Outermost blocks only: a reversible nested in another's region is
    // cloned with it (the original is erased with its parent) and expanded
    // when the next walk reaches the clone.
    SmallVector<ReversibleOp> reversibles;
    auto collect = [&] {
      module.walk<WalkOrder::PreOrder>([&](ReversibleOp op) {
        reversibles.push_back(op);
        return WalkResult::skip();
      });
    };
    collect();
    while (!reversibles.empty()) {
      for (ReversibleOp op : reversibles)
        if (failed(expandReversible(op)))
          return signalPassFailure();
      reversibles.clear();
      collect();
    }
    foldSplitsOfConcats(module);
  }
};
} // namespace
