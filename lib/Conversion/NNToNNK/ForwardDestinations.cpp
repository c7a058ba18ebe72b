//===- ForwardDestinations.cpp - Producers write into the outputs ---------===//
//
// The nnk-forward-destinations pass: an nnk.alloc only copied into one
// output argument is replaced by that argument.
//
//===----------------------------------------------------------------------===//

#include "PatternHelpers.h"
#include "nncc/Conversion/Passes.h"

namespace nncc {
#define GEN_PASS_DEF_NNKFORWARDDESTINATIONS
#include "nncc/Conversion/Passes.h.inc"
} // namespace nncc

using namespace mlir;
using namespace nncc;

/// True for a copy into a block argument (an output or a region
/// destination) that is not a self-copy.
static bool isCopyIntoArgument(Operation *user) {
  auto copy = dyn_cast<nnk::CopyOp>(user);
  return copy && isa<BlockArgument>(copy.getOut()) &&
         copy.getIn() != copy.getOut();
}

namespace {
struct NNKForwardDestinationsPass
    : public nncc::impl::NNKForwardDestinationsBase<
          NNKForwardDestinationsPass> {
  void runOnOperation() override {
    SmallVector<nnk::CopyOp> copies;
    getOperation().walk([&](nnk::CopyOp copy) { copies.push_back(copy); });
    for (nnk::CopyOp copy : copies) {
      auto alloc = copy.getIn().getDefiningOp<nnk::AllocOp>();
      auto dest = dyn_cast<BlockArgument>(copy.getOut());
      if (!alloc || !dest || dest.getOwner() != copy->getBlock() ||
          alloc->getBlock() != copy->getBlock() || !dest.hasOneUse() ||
          alloc.getType() != dest.getType())
        continue;
      // The alloc must not be copied anywhere else.
      if (llvm::count_if(alloc->getUsers(), isCopyIntoArgument) != 1)
        continue;
      copy.erase();
      alloc.getResult().replaceAllUsesWith(dest);
      alloc.erase();
    }
  }
};
} // namespace
