//===- cuda_runtime.h - host emulation of the CUDA runtime ------*- C++ -*-===//
//
// Test-only. Lets runtime/include/nncc/Kernels/CUDA/*.cuh, after
// rewrite_cuda.py (launches -> ::emu::launch, __shared__ -> static + a NaN
// fill), compile with the host C++ compiler and run on the CPU.
//
// Execution model:
//  - a launch runs synchronously; its CTAs run one after another (x fastest,
//    then y, then z); streams are ignored;
//  - a cooperative launch (cudaLaunchCooperativeKernel) runs ALL its CTAs
//    at once: every thread of the grid is a fiber, each CTA with its own
//    blockIdx and its own dynamic shared-memory buffer; grid.sync()
//    (cooperative_groups.h here) is an exact barrier over every thread of
//    the grid, checked like __syncthreads (divergent sites, threads that
//    exited, deadlocks). The launch fails with
//    cudaErrorCooperativeLaunchTooLarge unless the grid is co-resident
//    (cudaOccupancyMaxActiveBlocksPerMultiprocessor x the SM count). Static
//    __shared__ in a cooperative kernel is reported (not emulated: use
//    dynamic shared memory);
//  - device model: EMU_SMS (default 132) SMs, emu::g.sms for the tests;
//    228 KiB of shared memory and 2048 threads per SM, 1 KiB reserved per
//    CTA; cooperative launch supported unless emu::g.coop = 0;
//  - a CTA's threads are user-space fibers on ONE OS thread (own stacks, a
//    small x86-64 context switch, ucontext elsewhere); a fiber runs until it
//    blocks in __syncthreads / a warp primitive or returns. The order in
//    which the runnable fibers resume after each barrier is a deterministic
//    pseudo-random permutation (EMU_SCHEDULE=forward|reverse|random,
//    EMU_SEED), so code that depends on the order of threads between
//    barriers tends to give different answers than the CPU twin; with
//    random (the default) threads a barrier or warp primitive releases are
//    also interleaved with the threads already runnable (other warps, other
//    CTAs of a cooperative launch) instead of queued behind them. A
//    cooperative launch queues its threads CTA by CTA (random CTA order) at
//    the start and after each grid.sync(), and one in two (at random) runs
//    the threads each barrier or warp primitive releases next, so that a
//    CTA runs ahead of the others up to its next grid.sync();
//  - __syncthreads: exact barrier over the CTA's live threads (a thread that
//    exited while others wait is reported), per CTA also in a cooperative
//    launch; warp primitives (__syncwarp,
//    __shfl*_sync, __ballot_sync, __any/__all_sync, __match_any_sync):
//    exact per-warp exchange over the lanes named in the mask (lane =
//    threadIdx.x % 32); a lane outside its own mask, masks that disagree,
//    or a shuffle from a lane not taking part are reported;
//  - deadlocks (no fiber runnable, some not finished) are reported;
//  - __shared__ arrays are function statics (CTAs of an ordinary launch
//    never overlap), filled
//    with 0xff bytes (NaN for float/double) the first time a CTA reaches the
//    declaration; dynamic (extern) shared memory is a per-CTA buffer of
//    exactly the launch's size, ending at a PROT_NONE page, 0xff-filled
//    before every CTA; the top EMU_STACK_POISON bytes of each fiber stack
//    (default 4096) are 0xff-filled before every CTA;
//  - device memory is host memory; atomics are plain read-modify-writes
//    (fibers switch only at barriers, so they are atomic);
//  - blocks must be 1-D (blockDim.y = blockDim.z = 1: reported otherwise);
//    grids may be 3-D.
// Reports go to stderr, count in ::emu::g.problems, and (EMU_FATAL, default
// 1) abort the program.
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_TEST_EMU_CUDA_RUNTIME_H
#define NNCC_TEST_EMU_CUDA_RUNTIME_H

// Kernels that use inline PTX (tensor-core mma) take their portable path
// (the same operation written with warp shuffles) under the emulation.
#define NNCC_CUDA_EMULATION 1

// Device code paths of the shared math headers (nexp = expf etc.).
#ifndef __CUDA_ARCH__
#define __CUDA_ARCH__ 900
#endif
#ifndef __CUDACC__
#define __CUDACC__ 1
#endif

#include <algorithm>
#include <cstdarg>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <source_location>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>
#include <sys/mman.h>
#include <unistd.h>
#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
// Empty: a fiber may read, after a barrier, memory another fiber wrote
// through its own copy of the pointer; restrict would let the host compiler
// keep stale values across the barrier.
#define __restrict__
#define __align__(n) alignas(n)
#define __launch_bounds__(...)
#define __constant__ static
// Any __shared__ the rewriter did not turn into static + fill.
#define __shared__ static

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
typedef dim3 uint3;

typedef struct emu_stream *cudaStream_t;
typedef struct emu_event *cudaEvent_t;
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorLaunchFailure = 4,
  cudaErrorLaunchOutOfResources = 7,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDeviceFunction = 98,
  cudaErrorNoDevice = 100,
  cudaErrorCooperativeLaunchTooLarge = 720,
  cudaErrorNotSupported = 801,
  cudaErrorUnknown = 999,
};
typedef cudaError_t cudaError;
enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMaxSharedMemoryPerBlock = 8,
  cudaDevAttrWarpSize = 10,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrMaxThreadsPerMultiProcessor = 39,
  cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81,
  cudaDevAttrCooperativeLaunch = 95,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
};
enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
  cudaFuncAttributePreferredSharedMemoryCarveout = 9,
};
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

extern "C" void emu_ctx_switch(void **save_sp, void *to_sp);

namespace emu {

inline constexpr unsigned kWarp = 32;
inline constexpr size_t kStaticSmemLimit = 48 * 1024;
inline constexpr int kGatherWords = 8; // words a lane deposits in one warp_gather
using WarpWords = uint32_t[kWarp][kGatherWords];

struct Fiber {
  unsigned tid = 0; // threadIdx.x
  unsigned cta = 0; // index of its CTA in Global::cta
  enum State { Runnable, AtBlockBarrier, AtGridBarrier, AtWarp, Done } state = Runnable;
  void *sp = nullptr;
  char *stack_lo = nullptr, *stack_hi = nullptr;
#if !defined(__x86_64__)
  ucontext_t uc;
#endif
  // Warp request / answer.
  int op = 0;
  unsigned mask = 0;
  uint64_t value = 0;
  int arg = 0, width = 32;
  uint64_t result = 0;
  const void *site = nullptr;
  uint32_t words[kGatherWords] = {}; // OpGather: the words the lane deposits
};

/// One running CTA: its threads are fibers [base, base + blockDim.x).
struct Cta {
  dim3 idx;
  unsigned base = 0;
  unsigned live = 0, at_block = 0;
  const void *block_site = nullptr;
  std::vector<unsigned> warp_waiting; // per warp: mask of lanes waiting
  std::vector<unsigned> warp_done;    // per warp: mask of lanes that returned
  struct Gathered {
    WarpWords words;
  };
  std::vector<Gathered> gathered; // per warp: the last warp_gather's table
  unsigned char *dyn = nullptr;       // its dynamic shared memory
};

/// A dynamic shared-memory buffer ending at a PROT_NONE page.
struct DynBuf {
  unsigned char *map = nullptr;
  size_t bytes = 0;
};

struct Global {
  // Device model.
  int sms = 132;
  int optin = 227 * 1024;
  int smem_per_sm = 228 * 1024;
  int threads_per_sm = 2048;
  int coop = 1; // cudaDevAttrCooperativeLaunch
  // Configuration.
  int schedule = 2; // 0 forward, 1 reverse, 2 random
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  size_t stack_bytes = 256 * 1024, stack_poison = 4096;
  bool fatal = true;
  bool configured = false;
  // Statistics.
  long launches = 0, coop_launches = 0, ctas = 0, problems = 0;
  // Runtime state.
  cudaError_t last_error = cudaSuccess;
  std::map<const void *, int> max_dyn_smem;
  // Current launch / CTA.
  const char *kernel = "";
  dim3 grid, block;
  std::vector<Fiber> fibers;
  std::vector<char *> stacks; // stack_lo of each allocated stack
  Fiber *cur = nullptr;
  void *sched_sp = nullptr;
#if !defined(__x86_64__)
  ucontext_t sched_uc;
#endif
  std::vector<Cta> cta; // the CTAs running now (one, or the whole grid)
  bool cooperative = false;
  bool run_ahead = false; // this cooperative launch: released threads run next
  unsigned grid_threads = 0, grid_live = 0, at_grid = 0;
  const void *grid_site = nullptr;
  std::vector<unsigned> runq;
  size_t runq_head = 0; // next entry of runq to resume
  uint64_t cta_gen = 1;
  std::unordered_map<const void *, uint64_t> shared_gen;
  size_t static_smem = 0;
  unsigned char *dyn = nullptr; // the running fiber's CTA's buffer
  size_t dyn_bytes = 0;
  std::vector<DynBuf> dyn_pool;
  void (*body)(void *) = nullptr;
  void *body_arg = nullptr;
};
inline Global g;

} // namespace emu

// Kernel-visible built-ins: set by the scheduler before each fiber resumes.
inline dim3 threadIdx, blockIdx, blockDim, gridDim;
inline constexpr int warpSize = 32;

namespace emu {

inline void configure() {
  if (g.configured)
    return;
  g.configured = true;
  if (const char *s = getenv("EMU_SCHEDULE"))
    g.schedule = !strcmp(s, "forward") ? 0 : !strcmp(s, "reverse") ? 1 : 2;
  if (const char *s = getenv("EMU_SEED"))
    g.seed = strtoull(s, nullptr, 0) | 1;
  if (const char *s = getenv("EMU_STACK_POISON"))
    g.stack_poison = strtoull(s, nullptr, 0);
  if (const char *s = getenv("EMU_FATAL"))
    g.fatal = atoi(s) != 0;
  if (const char *s = getenv("EMU_SMS"))
    g.sms = std::max(1, atoi(s));
}

[[gnu::format(printf, 1, 2)]] inline void problem(const char *fmt, ...) {
  ++g.problems;
  fprintf(stderr, "EMU ERROR in %s block (%u,%u,%u) thread %d: ", g.kernel, blockIdx.x,
          blockIdx.y, blockIdx.z, g.cur ? (int)g.cur->tid : -1);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  if (g.fatal)
    abort();
}

inline uint64_t next_random() {
  uint64_t x = g.seed;
  x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
  g.seed = x;
  return x * 0x2545F4914F6CDD1Dull;
}

/// A pseudo-random index below n (multiply-high instead of a division).
inline size_t random_below(size_t n) {
  return (size_t)(((unsigned __int128)next_random() * n) >> 64);
}

inline void shuffle(std::vector<unsigned> &ids) {
  if (g.schedule == 1)
    std::reverse(ids.begin(), ids.end());
  else if (g.schedule == 2)
    for (size_t i = ids.size(); i > 1; --i)
      std::swap(ids[i - 1], ids[random_below(i)]);
}

/// Appends the released threads to the run queue in the schedule's order.
inline void release(std::vector<unsigned> &ids) {
  shuffle(ids);
  if (g.schedule == 2 && g.cooperative && g.run_ahead) {
    // Cooperative launch in run-ahead mode: the released threads run next,
    // so that a CTA runs through its barriers ahead of the others.
    for (unsigned t : ids)
      g.fibers[t].state = Fiber::Runnable;
    g.runq.insert(g.runq.begin() + (ptrdiff_t)g.runq_head, ids.begin(), ids.end());
    return;
  }
  for (unsigned t : ids) {
    g.fibers[t].state = Fiber::Runnable;
    g.runq.push_back(t);
    // random: the released thread may also run before threads that were
    // runnable already (other warps, other CTAs of a cooperative launch).
    if (g.schedule == 2) {
      const size_t n = g.runq.size() - g.runq_head;
      std::swap(g.runq.back(), g.runq[g.runq_head + random_below(n)]);
    }
  }
}

/// Queues a cooperative launch's threads CTA by CTA, the CTAs in the
/// schedule's order and each CTA's threads too: CTAs run ahead of or behind
/// each other, as on a GPU (at the start and after every grid.sync()).
inline void release_by_cta(std::vector<unsigned> &ids) {
  std::vector<std::vector<unsigned>> per(g.cta.size());
  for (unsigned t : ids)
    per[g.fibers[t].cta].push_back(t);
  std::vector<unsigned> order(per.size());
  for (unsigned c = 0; c < order.size(); ++c)
    order[c] = c;
  shuffle(order);
  for (unsigned c : order) {
    shuffle(per[c]);
    for (unsigned t : per[c]) {
      g.fibers[t].state = Fiber::Runnable;
      g.runq.push_back(t);
    }
  }
}

/// Back to the scheduler (the fiber's state says why).
inline void yield_to_scheduler() {
  Fiber *f = g.cur;
#if defined(__x86_64__)
  emu_ctx_switch(&f->sp, g.sched_sp);
#else
  swapcontext(&f->uc, &g.sched_uc);
#endif
  asm volatile("" ::: "memory");
}

inline void check_block_barrier(Cta &c) {
  if (c.at_block == 0 || c.at_block != c.live)
    return;
  std::vector<unsigned> ids;
  for (unsigned t = 0; t < g.block.x; ++t)
    if (g.fibers[c.base + t].state == Fiber::AtBlockBarrier)
      ids.push_back(c.base + t);
  c.at_block = 0;
  c.block_site = nullptr;
  release(ids);
}

[[gnu::noinline]] inline void syncthreads(const void *site) {
  Fiber *f = g.cur;
  Cta &c = g.cta[f->cta];
  if (c.at_block == 0)
    c.block_site = site;
  else if (site != c.block_site)
    problem("threads of the CTA wait at different __syncthreads (divergent barrier)");
  if (c.live != g.block.x)
    problem("__syncthreads after %u of the CTA's %u threads exited (divergent barrier)",
            g.block.x - c.live, g.block.x);
  f->state = Fiber::AtBlockBarrier;
  ++c.at_block;
  check_block_barrier(c);
  yield_to_scheduler();
}

inline void check_grid_barrier() {
  if (g.at_grid == 0 || g.at_grid != g.grid_live)
    return;
  std::vector<unsigned> ids;
  for (unsigned i = 0; i < g.fibers.size(); ++i)
    if (g.fibers[i].state == Fiber::AtGridBarrier)
      ids.push_back(i);
  g.at_grid = 0;
  g.grid_site = nullptr;
  release_by_cta(ids);
}

/// cooperative_groups::grid_group::sync(): every thread of the grid.
[[gnu::noinline]] inline void grid_sync(const void *site) {
  Fiber *f = g.cur;
  if (!g.cooperative)
    problem("grid.sync() in a launch that is not cooperative (cudaLaunchCooperativeKernel)");
  if (g.at_grid == 0)
    g.grid_site = site;
  else if (site != g.grid_site)
    problem("threads of the grid wait at different grid.sync() (divergent barrier)");
  if (g.grid_live != g.grid_threads)
    problem("grid.sync() after %u of the grid's %u threads exited (divergent barrier)",
            g.grid_threads - g.grid_live, g.grid_threads);
  f->state = Fiber::AtGridBarrier;
  ++g.at_grid;
  check_grid_barrier();
  yield_to_scheduler();
}

enum WarpOp {
  OpSync = 1,
  OpShflIdx,
  OpShflUp,
  OpShflDown,
  OpShflXor,
  OpBallot,
  OpAny,
  OpAll,
  OpMatchAny,
  OpGather
};

inline unsigned existing_lanes(unsigned w) {
  const unsigned n = g.block.x - w * kWarp;
  return n >= 32 ? 0xffffffffu : ((1u << n) - 1u);
}

/// The lanes of warp `w` named by mask `m` (that of lane `last`, the last to
/// arrive) all wait: check that they agree on the mask and the call,
/// compute every lane's answer and release them.
inline void complete_warp_group(Cta &c, unsigned w, unsigned m, unsigned last) {
  Fiber *lane0 = &g.fibers[c.base + w * kWarp];
  const unsigned live = m & existing_lanes(w);
  const Fiber &ref = lane0[last];
  for (unsigned l = 0; l < 32; ++l) {
    if (!(live >> l & 1))
      continue;
    const Fiber &o = lane0[l];
    if (o.mask != m)
      problem("warp masks disagree: lane %u 0x%08x, lane %u 0x%08x", last, m, l, o.mask);
    else if (o.op != ref.op || o.site != ref.site)
      problem("lanes %u and %u meet at different warp primitives (divergence)", last, l);
  }
  if (ref.op == OpGather) {
    if (live != 0xffffffffu)
      problem("warp_gather by lanes 0x%08x: it needs the whole warp", live);
    if (c.gathered.empty())
      c.gathered.resize((g.block.x + kWarp - 1) / kWarp);
    for (unsigned l = 0; l < 32; ++l)
      memcpy(c.gathered[w].words[l], lane0[l].words, sizeof(lane0[l].words));
  }
  static std::vector<unsigned> ids; // reused: the emulation runs on one OS thread
  ids.clear();
  unsigned ballot = 0;
  for (unsigned l = 0; l < 32; ++l)
    if (live >> l & 1)
      ballot |= (lane0[l].value != 0) << l;
  for (unsigned l = 0; l < 32; ++l) {
    if (!(live >> l & 1))
      continue;
    Fiber &f = lane0[l];
    const int width = f.width;
    if (width <= 0 || width > 32 || (width & (width - 1)))
      problem("shuffle width %d is not a power of two <= 32", width);
    const unsigned base = l & ~(unsigned)(width - 1), inseg = l & (width - 1);
    int src = -1; // -1: own value
    switch (f.op) {
    case OpShflIdx:
      src = (int)(base + ((unsigned)f.arg & (width - 1)));
      break;
    case OpShflUp:
      src = (int)inseg - f.arg >= 0 ? (int)(l - f.arg) : -1;
      break;
    case OpShflDown:
      src = (int)inseg + f.arg < width ? (int)(l + f.arg) : -1;
      break;
    case OpShflXor: {
      const unsigned s = inseg ^ (unsigned)f.arg;
      src = s < (unsigned)width ? (int)(base + s) : -1;
      break;
    }
    default:
      break;
    }
    switch (f.op) {
    case OpSync:
    case OpGather:
      f.result = 0;
      break;
    case OpShflIdx:
    case OpShflUp:
    case OpShflDown:
    case OpShflXor:
      if (src < 0)
        f.result = f.value;
      else if (!(live >> src & 1)) {
        problem("lane %u shuffles from lane %d, which is not in the mask 0x%08x", l, src, m);
        f.result = ~0ull;
      } else
        f.result = lane0[src].value;
      break;
    case OpBallot:
      f.result = ballot;
      break;
    case OpAny:
      f.result = ballot != 0;
      break;
    case OpAll:
      f.result = ballot == live;
      break;
    case OpMatchAny: {
      unsigned r = 0;
      for (unsigned k = 0; k < 32; ++k)
        if ((live >> k & 1) && lane0[k].value == f.value)
          r |= 1u << k;
      f.result = r;
      break;
    }
    }
    ids.push_back(c.base + w * kWarp + l);
  }
  c.warp_waiting[w] &= ~live;
  release(ids);
}

/// A lane arrives at a warp primitive. Agreement within a group is checked
/// when the group completes (complete_warp_group); lanes that never form a
/// complete group end in a reported deadlock. Only the arriving lane's group
/// can have become complete: every other group was checked at its own last
/// arrival.
[[gnu::noinline]] inline uint64_t warp_op(int op, unsigned mask, uint64_t value, int arg,
                                           int width, const void *site) {
  Fiber *f = g.cur;
  Cta &c = g.cta[f->cta];
  const unsigned lane = f->tid % kWarp, w = f->tid / kWarp;
  if (!(mask >> lane & 1))
    problem("lane %u calls a warp primitive with mask 0x%08x that does not name it", lane, mask);
  const unsigned need = mask & existing_lanes(w);
  if (const unsigned gone = need & c.warp_done[w])
    problem("warp mask 0x%08x names lane %u, which has exited", mask,
            (unsigned)__builtin_ctz(gone));
  f->op = op, f->mask = mask, f->value = value, f->arg = arg, f->width = width, f->site = site;
  f->state = Fiber::AtWarp;
  c.warp_waiting[w] |= 1u << lane;
  if ((c.warp_waiting[w] & need) == need)
    complete_warp_group(c, w, mask, lane);
  yield_to_scheduler();
  return f->result;
}

/// Every lane of the (whole) warp deposits n <= kGatherWords words and
/// receives the table of all 32 lanes' words: one warp collective where the
/// same exchange by shuffles costs one per word and source lane (the
/// emulation's cost is per collective: a context switch per lane). The
/// table stays valid until the warp's next warp_gather, which needs every
/// lane, so no lane overwrites it while another still reads it.
[[gnu::noinline]] inline const WarpWords &warp_gather(const uint32_t *w, int n,
                                                      const void *site) {
  Fiber *f = g.cur;
  if (n < 0 || n > kGatherWords)
    problem("warp_gather of %d words (at most %d)", n, kGatherWords);
  memcpy(f->words, w, sizeof(uint32_t) * (size_t)std::clamp(n, 0, kGatherWords));
  warp_op(OpGather, 0xffffffffu, 0, n, 32, site);
  return g.cta[f->cta].gathered[f->tid / kWarp].words;
}

template <typename T> inline uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "warp value of at most 8 bytes");
  uint64_t b = 0;
  memcpy(&b, &v, sizeof(T));
  return b;
}
template <typename T> inline T from_bits(uint64_t b) {
  T v;
  memcpy(&v, &b, sizeof(T));
  return v;
}

// ---- fibers -----------------------------------------------------------------

[[noreturn]] inline void fiber_main() {
  Fiber *f = g.cur;
  g.body(g.body_arg);
  f = g.cur;
  Cta &c = g.cta[f->cta];
  f->state = Fiber::Done;
  --c.live;
  --g.grid_live;
  const unsigned w = f->tid / kWarp;
  c.warp_done[w] |= 1u << (f->tid % kWarp);
  for (unsigned l = 0; l < 32; ++l)
    if ((c.warp_waiting[w] >> l & 1) &&
        (g.fibers[c.base + w * kWarp + l].mask >> (f->tid % kWarp) & 1))
      problem("thread exits while lane %u waits for it at a warp primitive", l);
  if (c.at_block) {
    problem("thread exits while %u others wait at __syncthreads", c.at_block);
    check_block_barrier(c);
  }
  if (g.at_grid) {
    problem("thread exits while %u others wait at grid.sync()", g.at_grid);
    check_grid_barrier();
  }
  yield_to_scheduler();
  __builtin_unreachable();
}

extern "C" inline void emu_fiber_entry() { fiber_main(); }
#if !defined(__x86_64__)
extern "C" inline void emu_fiber_entry_uc() { fiber_main(); }
#endif

inline void prepare_stacks(unsigned n) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  while (g.stacks.size() < n) {
    const size_t total = g.stack_bytes + page;
    char *p = (char *)mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                           -1, 0);
    if (p == MAP_FAILED) {
      perror("emu: mmap stack");
      abort();
    }
    mprotect(p, page, PROT_NONE); // guard below the stack
    g.stacks.push_back(p + page);
  }
}

inline void start_fiber(Fiber &f, char *lo) {
  f.stack_lo = lo;
  f.stack_hi = lo + g.stack_bytes;
  const size_t poison = std::min(g.stack_poison, g.stack_bytes);
  memset(f.stack_hi - poison, 0xff, poison);
#if defined(__x86_64__)
  uint64_t *sp = (uint64_t *)(((uintptr_t)f.stack_hi - 64) & ~(uintptr_t)15);
  *--sp = 0;                                 // fake return address of the entry
  *--sp = (uint64_t)(uintptr_t)&emu_fiber_entry;
  for (int i = 0; i < 6; ++i)
    *--sp = 0;                               // rbp rbx r12..r15
  uint32_t mx, cw = 0;
  asm volatile("stmxcsr %0" : "=m"(mx));
  asm volatile("fnstcw %0" : "=m"(cw));
  *--sp = (uint64_t)mx | ((uint64_t)cw << 32);
  f.sp = sp;
#else
  getcontext(&f.uc);
  f.uc.uc_stack.ss_sp = f.stack_lo;
  f.uc.uc_stack.ss_size = g.stack_bytes;
  f.uc.uc_link = nullptr;
  makecontext(&f.uc, (void (*)())emu_fiber_entry_uc, 0);
#endif
}

inline void resume(Fiber &f) {
  g.cur = &f;
  threadIdx = dim3(f.tid, 0, 0);
  blockIdx = g.cta[f.cta].idx;
  g.dyn = g.cta[f.cta].dyn;
#if defined(__x86_64__)
  emu_ctx_switch(&g.sched_sp, f.sp);
#else
  swapcontext(&g.sched_uc, &f.uc);
#endif
  g.cur = nullptr;
}

/// The dynamic shared memory buffer of running CTA i: exactly `bytes` long,
/// ending at a PROT_NONE page (reads past the end fault).
inline unsigned char *dynamic_buffer(size_t i, size_t bytes) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t need = (bytes + 127) / 128 * 128;
  const size_t total = (need + page - 1) / page * page + page;
  if (g.dyn_pool.size() <= i)
    g.dyn_pool.resize(i + 1);
  DynBuf &d = g.dyn_pool[i];
  if (total > d.bytes) {
    if (d.map)
      munmap(d.map, d.bytes);
    d.map = (unsigned char *)mmap(nullptr, total, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (d.map == MAP_FAILED) {
      perror("emu: mmap smem");
      abort();
    }
    d.bytes = total;
  }
  mprotect(d.map, d.bytes, PROT_READ | PROT_WRITE);
  unsigned char *end = d.map + d.bytes - page;
  mprotect(end, page, PROT_NONE);
  unsigned char *p = end - need; // 128-byte aligned; the last need - bytes are slack
  memset(p, 0xff, bytes);
  return p;
}

/// Runs the CTAs `idx` together (one for an ordinary launch, the whole grid
/// for a cooperative one): blockDim.x fibers each, calling body(arg).
inline void run_ctas(const std::vector<dim3> &idx, void (*body)(void *), void *arg) {
  const unsigned n = g.block.x, nc = (unsigned)idx.size();
  g.ctas += nc;
  ++g.cta_gen;
  g.static_smem = 0;
  g.body = body;
  g.body_arg = arg;
  prepare_stacks(n * nc);
  g.fibers.assign((size_t)n * nc, Fiber());
  g.cta.assign(nc, Cta());
  g.runq.clear();
  g.runq_head = 0;
  g.grid_threads = g.grid_live = n * nc;
  g.at_grid = 0;
  g.grid_site = nullptr;
  std::vector<unsigned> ids;
  for (unsigned c = 0; c < nc; ++c) {
    Cta &C = g.cta[c];
    C.idx = idx[c];
    C.base = c * n;
    C.live = n;
    C.warp_waiting.assign((n + kWarp - 1) / kWarp, 0);
    C.warp_done.assign((n + kWarp - 1) / kWarp, 0);
    C.dyn = dynamic_buffer(c, g.dyn_bytes);
    for (unsigned t = 0; t < n; ++t) {
      Fiber &f = g.fibers[C.base + t];
      f.tid = t;
      f.cta = c;
      start_fiber(f, g.stacks[C.base + t]);
      ids.push_back(C.base + t);
    }
  }
  if (g.cooperative)
    release_by_cta(ids);
  else
    release(ids);
  for (;;) {
    if (g.runq_head == g.runq.size()) {
      g.runq.clear();
      g.runq_head = 0;
      if (g.grid_live == 0)
        break;
      // Nothing runnable, some threads not done: deadlock.
      unsigned atw = 0, atb = 0;
      for (auto &f : g.fibers)
        atw += f.state == Fiber::AtWarp, atb += f.state == Fiber::AtBlockBarrier;
      g.fatal = true;
      problem("deadlock: %u live threads, %u at __syncthreads, %u at grid.sync(), %u at warp "
              "primitives",
              g.grid_live, atb, g.at_grid, atw);
    }
    Fiber &f = g.fibers[g.runq[g.runq_head++]];
    if (f.state != Fiber::Runnable)
      continue;
    resume(f);
  }
  if (g.static_smem > kStaticSmemLimit)
    problem("static shared memory %zu bytes > 48 KiB", g.static_smem);
  if (g.static_smem + g.dyn_bytes > (size_t)g.optin)
    problem("shared memory %zu static + %zu dynamic > the opt-in limit %d", g.static_smem,
            g.dyn_bytes, g.optin);
}

/// CTAs of `block` threads with `dyn` bytes of dynamic shared memory that
/// one SM holds at once (the device model of the header comment).
inline int blocks_per_sm(int block, size_t dyn) {
  if (block <= 0 || block > 1024 || dyn > (size_t)g.optin)
    return 0;
  const int by_threads = g.threads_per_sm / ((block + kWarp - 1) / kWarp * kWarp);
  const int by_smem = (int)((size_t)g.smem_per_sm / (dyn + 1024));
  return std::min(std::min(by_threads, by_smem), 32);
}

/// `extern __shared__ T name[]` (rewritten): the launch's dynamic buffer.
inline void *dynamic_smem() { return g.dyn; }

/// `__shared__ T name[...]` (rewritten to static + this call): 0xff-fill the
/// array the first time a CTA reaches its declaration.
inline void shared_array(const void *p, size_t bytes) {
  if (g.cooperative)
    problem("static __shared__ in a cooperative kernel is not emulated (use dynamic shared "
            "memory)");
  uint64_t &gen = g.shared_gen[p];
  if (gen == g.cta_gen)
    return;
  gen = g.cta_gen;
  memset(const_cast<void *>(p), 0xff, bytes);
  g.static_smem += bytes;
}

inline const char *kernel_name(const void *f) {
  (void)f;
  return "kernel";
}

/// One launch: `call(args...)` runs the kernel (by name, so parameters with
/// default arguments may be left out at the launch); `k` is the kernel's
/// address (its cudaFuncSetAttribute entry).
template <typename K, typename Call> struct Launch;
template <typename... P, typename Call> struct Launch<void (*)(P...), Call> {
  void (*k)(P...);
  dim3 grid, block;
  size_t smem;
  const char *name;
  Call call;
  template <typename... A> void operator()(A... p) const {
    configure();
    ++g.launches;
    auto bad = [&](cudaError_t e) {
      if (g.last_error == cudaSuccess)
        g.last_error = e;
    };
    if (block.x == 0 || block.x > 1024 || block.y == 0 || block.z == 0 ||
        (uint64_t)block.x * block.y * block.z > 1024 || grid.x == 0 || grid.y == 0 ||
        grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535)
      return bad(cudaErrorInvalidConfiguration);
    if (block.y != 1 || block.z != 1) {
      fprintf(stderr, "EMU: %s: multi-dimensional blocks (%u,%u,%u) are not emulated\n", name,
              block.x, block.y, block.z);
      abort();
    }
    auto it = g.max_dyn_smem.find((const void *)k);
    const size_t allowed = it != g.max_dyn_smem.end() ? (size_t)it->second : kStaticSmemLimit;
    if (smem > allowed)
      return bad(cudaErrorInvalidValue);
    std::tuple<A...> args(p...);
    struct Ctx {
      const Call *call;
      std::tuple<A...> *args;
    } ctx{&call, &args};
    auto body = [](void *c) {
      Ctx *x = (Ctx *)c;
      std::apply(*x->call, *x->args); // each thread gets its own copies
    };
    g.kernel = name;
    g.grid = grid;
    g.block = block;
    g.cooperative = false;
    g.dyn_bytes = smem;
    blockDim = block;
    gridDim = grid;
    for (unsigned z = 0; z < grid.z; ++z)
      for (unsigned y = 0; y < grid.y; ++y)
        for (unsigned x = 0; x < grid.x; ++x)
          run_ctas({dim3(x, y, z)}, body, &ctx);
    g.kernel = "";
  }
};

/// cudaLaunchCooperativeKernel: every CTA of the grid at once (run_ctas),
/// after the checks of the CUDA runtime (configuration, dynamic shared
/// memory, cooperative support, co-residency).
template <typename... P>
cudaError_t launch_cooperative(void (*k)(P...), dim3 grid, dim3 block, void **args,
                               size_t smem) {
  configure();
  ++g.launches;
  if (block.x == 0 || block.x > 1024 || block.y != 1 || block.z != 1 || grid.x == 0 ||
      grid.y == 0 || grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535)
    return cudaErrorInvalidConfiguration;
  if (!g.coop)
    return cudaErrorNotSupported;
  auto it = g.max_dyn_smem.find((const void *)k);
  const size_t allowed = it != g.max_dyn_smem.end() ? (size_t)it->second : kStaticSmemLimit;
  if (smem > allowed)
    return cudaErrorInvalidValue;
  const uint64_t ctas = (uint64_t)grid.x * grid.y * grid.z;
  if (ctas > (uint64_t)g.sms * blocks_per_sm((int)block.x, smem))
    return cudaErrorCooperativeLaunchTooLarge;
  // The arguments, copied out of args[] as the runtime does; each thread
  // then gets its own copies (by-value parameters).
  std::tuple<std::decay_t<P>...> a = [&]<size_t... I>(std::index_sequence<I...>) {
    return std::tuple<std::decay_t<P>...>(*(std::decay_t<P> *)args[I]...);
  }(std::index_sequence_for<P...>{});
  struct Ctx {
    void (*k)(P...);
    std::tuple<std::decay_t<P>...> *a;
  } ctx{k, &a};
  auto body = [](void *c) {
    Ctx *x = (Ctx *)c;
    std::apply(x->k, *x->a);
  };
  g.kernel = "cooperative kernel";
  g.grid = grid;
  g.block = block;
  g.cooperative = true;
  g.dyn_bytes = smem;
  blockDim = block;
  gridDim = grid;
  std::vector<dim3> idx;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x)
        idx.push_back(dim3(x, y, z));
  ++g.coop_launches;
  g.run_ahead = g.schedule == 2 && (next_random() & 1);
  run_ctas(idx, body, &ctx);
  g.cooperative = false;
  g.kernel = "";
  return cudaSuccess;
}

/// `k<<<grid, block, smem, stream>>>(args)` is rewritten to
/// `::emu::launch(k, grid, block, smem, stream, "k",
///                [&](auto... a) { k(a...); })(args)`.
template <typename... P, typename Call>
Launch<void (*)(P...), Call> launch(void (*k)(P...), dim3 grid, dim3 block, size_t smem,
                                    cudaStream_t, const char *name, Call call) {
  return Launch<void (*)(P...), Call>{k, grid, block, smem, name, call};
}

} // namespace emu

#if defined(__x86_64__)
// emu_ctx_switch(void **save_sp, void *to_sp): saves the callee-saved
// registers, MXCSR and the x87 control word on the current stack, stores the
// stack pointer in *save_sp and continues on to_sp. Weak: every test
// program's translation units may define it.
asm(R"(
  .text
  .weak emu_ctx_switch
  .type emu_ctx_switch, @function
emu_ctx_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size emu_ctx_switch, .-emu_ctx_switch
)");
#endif

// ---- device built-ins -------------------------------------------------------

// A barrier's or warp primitive's site is its source location (the rewritten
// headers keep the original file and lines), not its return address: the
// host compiler may duplicate one call into several (tail duplication of a
// branch), and lanes at the same source call must still meet.
namespace emu {
inline const void *site_of(const std::source_location &l) {
  static std::map<std::tuple<const char *, unsigned, unsigned>, char> sites;
  // A direct-mapped cache in front of the map (called at every primitive).
  struct Entry {
    const char *file = nullptr;
    unsigned line = 0, column = 0;
    const void *site = nullptr;
  };
  static Entry cache[256];
  const unsigned line = (unsigned)l.line(), column = (unsigned)l.column();
  Entry &e = cache[(line * 2654435761u ^ column * 40503u) >> 24];
  if (e.file != l.file_name() || e.line != line || e.column != column)
    e = {l.file_name(), line, column, &sites[{l.file_name(), line, column}]};
  return e.site;
}
} // namespace emu
#define EMU_LOC std::source_location emu_loc = std::source_location::current()
#define EMU_SITE ::emu::site_of(emu_loc)
[[gnu::noinline]] inline void __syncthreads(EMU_LOC) { emu::syncthreads(EMU_SITE); }
[[gnu::noinline]] inline int __syncthreads_count(int p) {
  (void)p;
  fprintf(stderr, "EMU: __syncthreads_count is not emulated\n");
  abort();
}
[[gnu::noinline]] inline void __syncwarp(unsigned mask = 0xffffffffu, EMU_LOC) {
  emu::warp_op(emu::OpSync, mask, 0, 0, 32, EMU_SITE);
}
template <typename T> [[gnu::noinline]] T __shfl_sync(unsigned m, T v, int src, int w = 32, EMU_LOC) {
  return emu::from_bits<T>(emu::warp_op(emu::OpShflIdx, m, emu::to_bits(v), src, w, EMU_SITE));
}
template <typename T> [[gnu::noinline]] T __shfl_up_sync(unsigned m, T v, unsigned d, int w = 32, EMU_LOC) {
  return emu::from_bits<T>(emu::warp_op(emu::OpShflUp, m, emu::to_bits(v), (int)d, w, EMU_SITE));
}
template <typename T>
[[gnu::noinline]] T __shfl_down_sync(unsigned m, T v, unsigned d, int w = 32, EMU_LOC) {
  return emu::from_bits<T>(emu::warp_op(emu::OpShflDown, m, emu::to_bits(v), (int)d, w, EMU_SITE));
}
template <typename T> [[gnu::noinline]] T __shfl_xor_sync(unsigned m, T v, int x, int w = 32, EMU_LOC) {
  return emu::from_bits<T>(emu::warp_op(emu::OpShflXor, m, emu::to_bits(v), x, w, EMU_SITE));
}
[[gnu::noinline]] inline unsigned __ballot_sync(unsigned m, int p, EMU_LOC) {
  return (unsigned)emu::warp_op(emu::OpBallot, m, p != 0, 0, 32, EMU_SITE);
}
[[gnu::noinline]] inline int __any_sync(unsigned m, int p, EMU_LOC) {
  return (int)emu::warp_op(emu::OpAny, m, p != 0, 0, 32, EMU_SITE);
}
[[gnu::noinline]] inline int __all_sync(unsigned m, int p, EMU_LOC) {
  return (int)emu::warp_op(emu::OpAll, m, p != 0, 0, 32, EMU_SITE);
}
template <typename T> [[gnu::noinline]] unsigned __match_any_sync(unsigned m, T v, EMU_LOC) {
  return (unsigned)emu::warp_op(emu::OpMatchAny, m, emu::to_bits(v), 0, 32, EMU_SITE);
}
/// The emulation's warp_gather for the kernels' fragment exchanges
/// (AttnWarpWords in nncc/Kernels/CUDA/Attention.cuh).
[[gnu::noinline]] inline const emu::WarpWords &__nncc_emu_warp_gather(const uint32_t *w, int n,
                                                                    EMU_LOC) {
  return emu::warp_gather(w, n, EMU_SITE);
}
inline unsigned __activemask() { return 0xffffffffu; }
inline void __threadfence() {}
inline void __threadfence_block() {}

inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i)
    r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
template <typename T> inline T __ldg(const T *p) { return *p; }
template <typename T> inline T __ldcg(const T *p) { return *p; }

// 16-byte vector types (the subset the kernels use).
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(16) double2 {
  double x, y;
};

// Math: the host libm stands in for the device's (not bit-identical for
// float: the device's expf/tanhf/... differ in the last bits, and nvcc
// contracts a*b+c into FMAs by default).
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline float __powf(float a, float b) { return powf(a, b); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x < 0.f ? 0.f : x > 1.f ? 1.f : x; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return sqrtf(a); }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __dsqrt_rn(double a) { return sqrt(a); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float rsqrt(float x) { return 1.0f / sqrtf(x); }
inline float exp10f(float x) { return powf(10.f, x); }
inline int __float_as_int(float x) { return emu::from_bits<int>(emu::to_bits(x)); }
inline float __int_as_float(int x) { return emu::from_bits<float>(emu::to_bits(x)); }
inline unsigned __float_as_uint(float x) { return emu::from_bits<unsigned>(emu::to_bits(x)); }
inline float __uint_as_float(unsigned x) { return emu::from_bits<float>(emu::to_bits(x)); }
inline long long __double_as_longlong(double x) { return (long long)emu::to_bits(x); }
inline double __longlong_as_double(long long x) { return emu::from_bits<double>((uint64_t)x); }
inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
inline int __float2int_rz(float x) { return (int)x; }
inline int __double2int_rn(double x) { return (int)nearbyint(x); }
inline float __int2float_rn(int x) { return (float)x; }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((uint64_t)a * b) >> 32); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}

// CUDA's min/max overloads (math_functions.hpp).
#define EMU_MINMAX(T)                                                                      \
  inline T min(T a, T b) { return a < b ? a : b; }                                          \
  inline T max(T a, T b) { return a > b ? a : b; }
EMU_MINMAX(int)
EMU_MINMAX(unsigned)
EMU_MINMAX(long)
EMU_MINMAX(unsigned long)
EMU_MINMAX(long long)
EMU_MINMAX(unsigned long long)
#undef EMU_MINMAX
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }

// Atomics: fibers switch only at barriers, so a plain read-modify-write is
// atomic.
#define EMU_ATOMIC_ADD(T)                                                                  \
  inline T atomicAdd(T *p, T v) {                                                           \
    T o = *p;                                                                               \
    *p = o + v;                                                                             \
    return o;                                                                               \
  }                                                                                         \
  inline T atomicExch(T *p, T v) {                                                          \
    T o = *p;                                                                               \
    *p = v;                                                                                 \
    return o;                                                                               \
  }
EMU_ATOMIC_ADD(int)
EMU_ATOMIC_ADD(unsigned)
EMU_ATOMIC_ADD(unsigned long long)
EMU_ATOMIC_ADD(float)
EMU_ATOMIC_ADD(double)
#undef EMU_ATOMIC_ADD
#define EMU_ATOMIC_INT(T)                                                                  \
  inline T atomicCAS(T *p, T c, T v) {                                                      \
    T o = *p;                                                                               \
    if (o == c)                                                                             \
      *p = v;                                                                               \
    return o;                                                                               \
  }                                                                                         \
  inline T atomicMax(T *p, T v) {                                                           \
    T o = *p;                                                                               \
    if (v > o)                                                                              \
      *p = v;                                                                               \
    return o;                                                                               \
  }                                                                                         \
  inline T atomicMin(T *p, T v) {                                                           \
    T o = *p;                                                                               \
    if (v < o)                                                                              \
      *p = v;                                                                               \
    return o;                                                                               \
  }                                                                                         \
  inline T atomicSub(T *p, T v) {                                                           \
    T o = *p;                                                                               \
    *p = o - v;                                                                             \
    return o;                                                                               \
  }                                                                                         \
  inline T atomicOr(T *p, T v) {                                                            \
    T o = *p;                                                                               \
    *p = o | v;                                                                             \
    return o;                                                                               \
  }                                                                                         \
  inline T atomicAnd(T *p, T v) {                                                           \
    T o = *p;                                                                               \
    *p = o & v;                                                                             \
    return o;                                                                               \
  }
EMU_ATOMIC_INT(int)
EMU_ATOMIC_INT(unsigned)
EMU_ATOMIC_INT(unsigned long long)
#undef EMU_ATOMIC_INT

// ---- runtime API ------------------------------------------------------------

inline cudaError_t cudaGetLastError() {
  cudaError_t e = emu::g.last_error;
  emu::g.last_error = cudaSuccess;
  return e;
}
inline cudaError_t cudaPeekAtLastError() { return emu::g.last_error; }
inline const char *cudaGetErrorString(cudaError_t e) {
  switch (e) {
  case cudaSuccess: return "no error";
  case cudaErrorInvalidValue: return "invalid argument";
  case cudaErrorMemoryAllocation: return "out of memory";
  case cudaErrorInvalidConfiguration: return "invalid configuration argument";
  case cudaErrorCooperativeLaunchTooLarge:
    return "too many blocks in cooperative launch";
  case cudaErrorNotSupported: return "operation not supported";
  default: return "emulated CUDA error";
  }
}
inline const char *cudaGetErrorName(cudaError_t e) {
  switch (e) {
  case cudaSuccess: return "cudaSuccess";
  case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
  case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
  case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
  case cudaErrorCooperativeLaunchTooLarge: return "cudaErrorCooperativeLaunchTooLarge";
  case cudaErrorNotSupported: return "cudaErrorNotSupported";
  default: return "cudaErrorUnknown";
  }
}
inline cudaError_t cudaGetDevice(int *d) {
  *d = 0;
  return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int) { return cudaSuccess; }
inline cudaError_t cudaGetDeviceCount(int *n) {
  *n = 1;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int) {
  emu::configure();
  switch (a) {
  case cudaDevAttrMultiProcessorCount: *v = emu::g.sms; break;
  case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = emu::g.optin; break;
  case cudaDevAttrMaxSharedMemoryPerBlock: *v = (int)emu::kStaticSmemLimit; break;
  case cudaDevAttrMaxThreadsPerBlock: *v = 1024; break;
  case cudaDevAttrWarpSize: *v = 32; break;
  case cudaDevAttrMaxThreadsPerMultiProcessor: *v = emu::g.threads_per_sm; break;
  case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *v = emu::g.smem_per_sm; break;
  case cudaDevAttrCooperativeLaunch: *v = emu::g.coop; break;
  default: return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}
template <typename F>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, F *, int block, size_t dyn) {
  emu::configure();
  *n = emu::blocks_per_sm(block, dyn);
  return cudaSuccess;
}
template <typename... P>
cudaError_t cudaLaunchCooperativeKernel(void (*k)(P...), dim3 grid, dim3 block, void **args,
                                        size_t smem = 0, cudaStream_t = nullptr) {
  return emu::launch_cooperative(k, grid, block, args, smem);
}
template <typename F> cudaError_t cudaFuncSetAttribute(F *f, cudaFuncAttribute a, int v) {
  if (a == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (v < 0 || v > emu::g.optin)
      return cudaErrorInvalidValue;
    emu::g.max_dyn_smem[(const void *)f] = v;
  }
  return cudaSuccess;
}
inline cudaError_t cudaMalloc(void **p, size_t n) {
  *p = malloc(n ? n : 1);
  if (!*p)
    return cudaErrorMemoryAllocation;
  memset(*p, 0xff, n); // device memory starts as garbage
  return cudaSuccess;
}
template <typename T> cudaError_t cudaMalloc(T **p, size_t n) { return cudaMalloc((void **)p, n); }
inline cudaError_t cudaFree(void *p) {
  free(p);
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t = nullptr) {
  memset(p, v, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemset(void *p, int v, size_t n) { return cudaMemsetAsync(p, v, n); }
inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind,
                                   cudaStream_t = nullptr) {
  memmove(d, s, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy(void *d, const void *s, size_t n, cudaMemcpyKind k) {
  return cudaMemcpyAsync(d, s, n, k);
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }

#endif
