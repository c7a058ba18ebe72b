//===- Profiling.cpp - NNCC_PROFILE: per-launch wall time -----------------===//
//
// NNCC_PROFILE=1 (stderr) or =FILE: the generated code times every launch
// (nncc_ms_prof_begin / end) and the totals are written at exit, slowest
// first; NNCC_PROFILE_SKIP=N leaves each launch's first N calls out.
//
//===----------------------------------------------------------------------===//
#include "ModelState.h"

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <unordered_map>

using namespace nncc::ms;

namespace {
struct ProfileEntry {
  std::string launch;
  uint64_t calls = 0, skipped = 0;
  double seconds = 0;
};
struct Profile {
  std::string path;               // "" = stderr
  uint64_t skip = 0;              // NNCC_PROFILE_SKIP: untimed first calls
  std::vector<ProfileEntry> entries;
  std::unordered_map<std::string, size_t> index;
};
// -1: not read yet, 0: off, 1: on. Launches run on the caller's thread.
int gProfileState = -1;
Profile *gProfile = nullptr;

void writeProfile() {
  Profile *p = gProfile;
  if (!p)
    return;
  FILE *f = p->path.empty() ? stderr : std::fopen(p->path.c_str(), "a");
  if (!f)
    return;
  std::vector<const ProfileEntry *> order;
  double total = 0;
  for (const ProfileEntry &e : p->entries) {
    order.push_back(&e);
    total += e.seconds;
  }
  std::stable_sort(order.begin(), order.end(), [](const ProfileEntry *a, const ProfileEntry *b) {
    return a->seconds > b->seconds;
  });
  std::fprintf(f, "# nncc profile: seconds\tcalls\tlaunch (total %.6f s)\n", total);
  for (const ProfileEntry *e : order)
    if (e->calls) // launches whose every call was skipped are left out
      std::fprintf(f, "%.6f\t%" PRIu64 "\t%s\n", e->seconds, e->calls, e->launch.c_str());
  if (f != stderr)
    std::fclose(f);
}

bool profileOn() {
  if (gProfileState < 0) {
    const char *env = std::getenv("NNCC_PROFILE");
    gProfileState = env && *env && std::strcmp(env, "0") != 0;
    if (gProfileState) {
      gProfile = new Profile();
      if (std::strcmp(env, "1") != 0 && std::strcmp(env, "-") != 0)
        gProfile->path = env;
      if (const char *skip = std::getenv("NNCC_PROFILE_SKIP"))
        gProfile->skip = std::strtoull(skip, nullptr, 10);
      std::atexit(writeProfile);
    }
  }
  return gProfileState == 1;
}

double profileNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
} // namespace

double nncc_ms_prof_begin(void) { return profileOn() ? profileNow() : 0.0; }

void nncc_ms_prof_end(double t0, const char *launch) {
  if (gProfileState == 1)
    nncc_ms_prof_add(profileNow() - t0, launch);
}

void nncc_ms_prof_add(double dt, const char *launch) {
  if (gProfileState != 1)
    return;
  auto [it, fresh] = gProfile->index.try_emplace(launch, gProfile->entries.size());
  if (fresh)
    gProfile->entries.push_back({launch, 0, 0});
  ProfileEntry &e = gProfile->entries[it->second];
  if (e.skipped < gProfile->skip) {
    e.skipped += 1;
    return;
  }
  e.calls += 1;
  e.seconds += dt;
}
