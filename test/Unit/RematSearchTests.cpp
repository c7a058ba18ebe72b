//===- RematSearchTests.cpp - nncc-remat against exhaustive search --------===//
//
// On graphs small enough to try every subset of residuals, each with its
// recomputation chains per save and shared, the plan nncc-remat chooses for
// a budget recomputes at most 10% more FLOPs than the cheapest plan whose
// exact memory plan fits, its planned peak fits, and a larger budget never
// recomputes more: with 9 candidates (the pass itself tries every subset up
// to 12) and with 13 (the pass walks the subsets in order of FLOPs from its
// heuristic plans; those alone are 1.3-2x off the optimum at some budgets).
// The searches and the exhaustive reference share one memo of exact plans.
//
//===----------------------------------------------------------------------===//
#include "dialects/NN/Transforms/Remat.h"
#include "nncc/Driver/ModuleLoader.h"
#include "nncc/Pipeline/Pipeline.h"
#include "nncc/Pipeline/RematSearch.h"
#include "nncc/Target/MemoryPlan.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

using namespace nncc;

namespace {
struct Exhaustive {
  std::vector<RematPlan> all; // every subset and chain mode, planned exactly
  uint64_t lo = 0, hi = 0;    // smallest and largest peak
};

/// Loads `path` as a training module (train mode, N=32) and checks the
/// pass against every subset of its `minCands`..`maxCands` candidates.
void checkAgainstExhaustive(const char *path, size_t minCands, size_t maxCands) {
  mlir::MLIRContext context;
  driver::prepareContext(context);
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  auto module = driver::loadModule(context, sourceMgr, path);
  ASSERT_TRUE(module);
  ASSERT_TRUE(mlir::succeeded(driver::runPipeline(*module, driver::GradKind::Loss, /*trainMode=*/true,
                                                  PipelineStage::NN)));
  RematMemo memo;
  RematSearchOptions options;
  options.dims["N"] = 32;
  options.memo = &memo;
  auto fn = module->lookupSymbol<mlir::func::FuncOp>("forward_backward");
  ASSERT_TRUE(fn);
  llvm::SmallVector<nn::RematCandidate> cands = nn::collectRematCandidates(fn);
  ASSERT_GE(cands.size(), minCands);
  ASSERT_LE(cands.size(), maxCands);

  // Shared chains rewrite a subset differently only when two of its chains
  // have an op in common, which is when sharing lowers the cost model's
  // FLOPs; those subsets are planned in both modes.
  auto modelFlops = [&](llvm::ArrayRef<int64_t> ids, bool shared) {
    nn::RematCostEnv env;
    env.dims["N"] = 32;
    env.shareChains = shared;
    double f = 0;
    for (const nn::RematEntry &e : nn::describeRemat(fn, ids, env))
      if (e.decision == nn::RematEntry::Decision::Recomputed)
        f += e.flops;
    return f;
  };
  Exhaustive ex;
  size_t sharing = 0;
  for (uint32_t mask = 0; mask < (1u << cands.size()); ++mask) {
    llvm::SmallVector<int64_t> ids;
    for (size_t i = 0; i < cands.size(); ++i)
      if (mask >> i & 1)
        ids.push_back(cands[i].id);
    for (bool shared : {false, true}) {
      if (shared && !(modelFlops(ids, true) < modelFlops(ids, false)))
        continue;
      RematSearchOptions mode = options;
      mode.shareChains = shared;
      mlir::FailureOr<RematPlan> p = memo.get(*module, ids, mode);
      ASSERT_TRUE(mlir::succeeded(p));
      ASSERT_EQ(p->shareChains, shared);
      if (shared) {
        ++sharing;
        EXPECT_LE(p->flops, modelFlops(ids, false)) << "sharing chains never recomputes more";
      }
      ex.all.push_back(*p);
    }
  }
  ASSERT_GT(sharing, 0u) << "some subsets must have chains to share here";
  ex.lo = ex.hi = ex.all.front().peakBytes;
  for (const RematPlan &p : ex.all) {
    ex.lo = std::min(ex.lo, p.peakBytes);
    ex.hi = std::max(ex.hi, p.peakBytes);
  }
  ASSERT_LT(ex.lo, ex.all.front().peakBytes) << "recomputing must be able to save memory here";

  double lastFlops = -1;
  for (int step = 8; step >= 0; --step) { // budgets from high to low
    uint64_t budget = ex.lo + (ex.hi - ex.lo) * step / 8;
    double optimum = -1;
    for (const RematPlan &p : ex.all)
      if (p.peakBytes <= budget && (optimum < 0 || p.flops < optimum))
        optimum = p.flops;
    MemoryBudget b;
    b.kind = MemoryBudget::Kind::Bytes;
    b.bytes = budget;
    mlir::FailureOr<RematPlan> chosen = chooseRemat(*module, b, options);
    ASSERT_TRUE(mlir::succeeded(chosen)) << "budget " << budget;
    EXPECT_LE(chosen->peakBytes, budget);
    EXPECT_LE(chosen->flops, 1.1 * optimum + 1e-9)
        << "budget " << budget << ": chosen " << chosen->flops << " FLOPs, optimum " << optimum;
    EXPECT_GE(chosen->flops + 1e-9, lastFlops) << "a smaller budget recomputed less";
    lastFlops = chosen->flops;
  }
  // `min` reaches the smallest peak of any subset here, within 10% of the
  // cheapest subset with that peak.
  MemoryBudget m;
  m.kind = MemoryBudget::Kind::Min;
  mlir::FailureOr<RematPlan> smallest = chooseRemat(*module, m, options);
  ASSERT_TRUE(mlir::succeeded(smallest));
  EXPECT_EQ(smallest->peakBytes, ex.lo);
  double optimum = -1;
  for (const RematPlan &p : ex.all)
    if (p.peakBytes <= ex.lo && (optimum < 0 || p.flops < optimum))
      optimum = p.flops;
  EXPECT_LE(smallest->flops, 1.1 * optimum + 1e-9);
}
} // namespace

TEST(RematSearch, NineCandidatesWithinTenPercentOfExhaustiveOptimum) {
  checkAgainstExhaustive(NNCC_REMAT_SMALL_MODEL, 6, 12);
}

TEST(RematSearch, ThirteenCandidatesWithinTenPercentOfExhaustiveOptimum) {
  checkAgainstExhaustive(NNCC_REMAT_MID_MODEL, 13, 14); // 13: above the exhaustive limit
}

// The search compares trainingPeak, which plans the training step without
// @forward's launches, on clones from which @forward is erased before
// lowering; it must equal the full plan's training peak, with everything
// kept and with every candidate recomputed (chains per save and shared), on
// models with workspaces, recurrences, ODE solves and reversible blocks.
TEST(RematSearch, TrainingPeakEqualsTheFullPlan) {
  struct Case {
    const char *model;
    std::vector<std::pair<const char *, int64_t>> dims;
  };
  const Case cases[] = {{"deep_mlp", {{"N", 5}}},
                        {"lstm_lm", {{"B", 2}, {"T", 8}}},
                        {"ode_rnn", {{"B", 2}, {"T", 6}}},
                        {"bert_small", {{"B", 2}, {"T", 16}}},
                        {"reversible_dilated_bert", {{"B", 2}, {"T", 16}}},
                        {"reformer_lsh", {{"B", 2}, {"T", 16}}}};
  for (const Case &c : cases) {
    SCOPED_TRACE(c.model);
    mlir::MLIRContext context;
    driver::prepareContext(context);
    llvm::SourceMgr sourceMgr;
    mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
    std::string path = std::string(NNCC_MODELS_DIR) + "/" + c.model + ".nn";
    auto module = driver::loadModule(context, sourceMgr, path);
    ASSERT_TRUE(module);
    ASSERT_TRUE(mlir::succeeded(driver::runPipeline(*module, driver::GradKind::Loss,
                                                    /*trainMode=*/true, PipelineStage::NN)));
    llvm::StringMap<int64_t> dims;
    for (auto [name, size] : c.dims)
      dims[name] = size;
    auto fn = module->lookupSymbol<mlir::func::FuncOp>("forward_backward");
    ASSERT_TRUE(fn);
    llvm::SmallVector<int64_t> all;
    for (const nn::RematCandidate &cand : nn::collectRematCandidates(fn))
      all.push_back(cand.id);
    for (int variant = 0; variant < 3; ++variant) {
      mlir::OwningOpRef<mlir::ModuleOp> clone(mlir::cast<mlir::ModuleOp>((*module)->clone()));
      if (variant > 0) {
        nn::RematCostEnv env;
        env.dims = dims;
        env.shareChains = variant == 2;
        auto cloneFn = clone->lookupSymbol<mlir::func::FuncOp>("forward_backward");
        ASSERT_TRUE(mlir::succeeded(nn::applyRemat(cloneFn, all, env)));
      }
      mlir::PassManager pm(&context);
      NNCCPipelineOptions lower;
      lower.stop = PipelineStage::NNK;
      buildNNCCPipeline(pm, lower);
      mlir::OwningOpRef<mlir::ModuleOp> stepOnly(mlir::cast<mlir::ModuleOp>((*clone)->clone()));
      stepOnly->lookupSymbol<mlir::func::FuncOp>("forward").erase();
      ASSERT_TRUE(mlir::succeeded(pm.run(*clone)));
      ASSERT_TRUE(mlir::succeeded(pm.run(*stepOnly)));
      auto full = target::planMemory(*clone, dims, target::PlanMode::Training);
      auto step = target::trainingPeak(*clone, dims);
      auto withoutForward = target::trainingPeak(*stepOnly, dims);
      ASSERT_TRUE(mlir::succeeded(full) && mlir::succeeded(step) &&
                  mlir::succeeded(withoutForward));
      EXPECT_GT(full->peakBytes, 0u) << "variant " << variant;
      EXPECT_EQ(*step, full->peakBytes) << "variant " << variant;
      EXPECT_EQ(*withoutForward, full->peakBytes) << "variant " << variant;
    }
  }
}
