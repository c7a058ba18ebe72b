//===- RematPlanCache.cpp - On-disk cache of memory-budget decisions ------===//

#include "nncc/Driver/RematPlanCache.h"
#include "nncc/Driver/CompileCache.h"

#include "nncc/Target/Compile.h"

#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace nncc;

namespace {

/// Bump when the entry's format or the meaning of a key part changes.
constexpr llvm::StringLiteral kFormat = "nncc-remat-choice-2";

/// The entries' folder; empty when the cache is not this user's alone (a
/// choice is then neither read nor stored).
std::string cacheDir() {
  std::string root = driver::cacheRoot(), error;
  if (!driver::privateCacheDir(root, error))
    return "";
  std::string dir = root + "/remat";
  if (!driver::privateCacheDir(dir, error))
    return "";
  return dir;
}

void hashModule(llvm::SHA256 &h, mlir::ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  // Locations do not change the choice (the report takes them from the
  // module the plan is applied to).
  module->print(os);
  h.update(text);
  h.update(llvm::StringRef("\0", 1));
}

} // namespace

std::string driver::rematChoiceKey(mlir::ModuleOp asWritten, mlir::ModuleOp fusedHeads,
                                   const MemoryBudget &budget,
                                   const RematSearchOptions &options) {
  llvm::SHA256 h;
  h.update(kFormat);
  h.update("|" + compilerFingerprint() + "|");
  hashModule(h, asWritten);
  if (fusedHeads)
    hashModule(h, fusedHeads);
  else
    h.update("no-fused-heads|");
  h.update("budget=" + budget.str());
  std::vector<std::pair<std::string, int64_t>> dims;
  for (const auto &d : options.dims)
    dims.emplace_back(d.getKey().str(), d.getValue());
  llvm::sort(dims);
  for (const auto &[name, size] : dims)
    h.update("|dim " + name + "=" + std::to_string(size));
  h.update("|real=" + std::to_string(options.realSize) +
           "|" + targetName(options.target) +
           "|exhaustive=" + std::to_string(options.exhaustiveLimit) +
           "|prune=" + std::to_string(options.pruneLimit) +
           "|cost-order=" + std::to_string(options.costOrderLimit) +
           (options.shareChains ? "|shared" : "|per-save"));
  for (auto [id, snapshots] : options.bpttSnapshots)
    h.update("|binomial " + std::to_string(id) + "=" + std::to_string(snapshots));
  return llvm::toHex(h.final(), /*LowerCase=*/true).substr(0, 32);
}

std::optional<driver::RematChoice> driver::loadRematChoice(const std::string &key) {
  std::string dir = cacheDir();
  if (dir.empty())
    return std::nullopt;
  std::string path = dir + "/" + key + ".json";
  // A regular file of a sane size only (a FIFO would block the read).
  llvm::sys::fs::file_status st;
  if (llvm::sys::fs::status(path, st, /*follow=*/false) ||
      st.type() != llvm::sys::fs::file_type::regular_file || st.getSize() > (1u << 20))
    return std::nullopt;
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return std::nullopt;
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse((*buffer)->getBuffer());
  if (!parsed) {
    llvm::consumeError(parsed.takeError());
    return std::nullopt;
  }
  const llvm::json::Object *o = parsed->getAsObject();
  if (!o || o->getString("format") != kFormat)
    return std::nullopt;
  RematChoice c;
  std::optional<bool> fused = o->getBoolean("fused_heads");
  std::optional<bool> shared = o->getBoolean("share_chains");
  std::optional<int64_t> peak = o->getInteger("peak_bytes");
  std::optional<double> flops = o->getNumber("flops");
  std::optional<int64_t> stored = o->getInteger("stored_reversible");
  std::optional<double> reconstructFlops = o->getNumber("reconstruct_flops");
  const llvm::json::Array *ids = o->getArray("recompute");
  const llvm::json::Array *binomial = o->getArray("binomial");
  if (!fused || !shared || !peak || !flops || !stored || !reconstructFlops || !ids ||
      !binomial || *peak < 0 || *stored < 0 || *stored > UINT32_MAX)
    return std::nullopt;
  c.fusedHeads = *fused;
  c.plan.shareChains = *shared;
  c.plan.peakBytes = static_cast<uint64_t>(*peak);
  c.plan.flops = *flops;
  c.plan.storedReversible = static_cast<unsigned>(*stored);
  c.plan.reconstructFlops = *reconstructFlops;
  for (const llvm::json::Value &v : *ids) {
    std::optional<int64_t> id = v.getAsInteger();
    if (!id)
      return std::nullopt;
    c.plan.recompute.push_back(*id);
  }
  for (const llvm::json::Value &v : *binomial) {
    const llvm::json::Array *pair = v.getAsArray();
    if (!pair || pair->size() != 2 || !(*pair)[0].getAsInteger() || !(*pair)[1].getAsInteger())
      return std::nullopt;
    c.plan.bpttSnapshots.push_back({*(*pair)[0].getAsInteger(), *(*pair)[1].getAsInteger()});
  }
  return c;
}

void driver::storeRematChoice(const std::string &key, const RematChoice &choice) {
  std::string dir = cacheDir();
  if (dir.empty())
    return;
  removeStaleTemporaries(dir, "tmp-");
  llvm::json::Array ids, binomial;
  for (int64_t id : choice.plan.recompute)
    ids.push_back(id);
  for (auto [id, snapshots] : choice.plan.bpttSnapshots)
    binomial.push_back(llvm::json::Array{id, snapshots});
  llvm::json::Object o{{"format", kFormat},
                       {"fused_heads", choice.fusedHeads},
                       {"share_chains", choice.plan.shareChains},
                       {"recompute", std::move(ids)},
                       {"binomial", std::move(binomial)},
                       {"peak_bytes", static_cast<int64_t>(choice.plan.peakBytes)},
                       {"flops", choice.plan.flops},
                       {"stored_reversible", static_cast<int64_t>(choice.plan.storedReversible)},
                       {"reconstruct_flops", choice.plan.reconstructFlops}};
  llvm::SmallString<256> tmp;
  int fd;
  if (llvm::sys::fs::createUniqueFile(dir + "/tmp-" + key + "-%%%%%%.json", fd, tmp))
    return;
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << llvm::json::Value(std::move(o)) << "\n";
    if (os.has_error()) {
      os.clear_error();
      llvm::sys::fs::remove(tmp);
      return;
    }
  }
  if (llvm::sys::fs::rename(tmp, dir + "/" + key + ".json"))
    llvm::sys::fs::remove(tmp);
}
