// Self-test of the emulation's warp primitives (cuda_runtime.h): the
// shuffles at every width, ballot / any / all / match_any, a warp split into
// two groups with their own masks, a partial last warp; and the misuses the
// emulation must report. The kernels are written here (the form
// rewrite_cuda.py gives .cuh code).
//
// usage: warp              the checks that must pass
//        warp MODE         one misuse that the emulation must report:
//          self       a lane's mask does not name the lane
//          masks      lanes of one group pass different masks
//          sites      the lanes of a group meet at different primitives
//          outside    a lane shuffles from a lane outside the mask
//          exited     the mask names a lane that has returned
//          split      two groups that overlap at one lane (a mask
//                     disagreement, an exit the other group waits for, or a
//                     deadlock: whichever the schedule meets first)
//          gather     __nncc_emu_warp_gather in a warp of 16 lanes
// The checks include __nncc_emu_warp_gather (the kernels' fragment exchange
// for mma and ldmatrix): every lane's words, round after round (a lane that
// runs ahead must not overwrite the table another lane still reads).
#include <cuda_runtime.h>

#include "emu_test.h"

#include <string>

/// Every thread writes kOut values: its lane's answers to each primitive.
constexpr int kOut = 12;

__global__ void primitives_kernel(int *out) {
  const int t = (int)threadIdx.x, lane = t % 32;
  int *o = out + t * kOut;
  const int v = 100 * t + 7;
  o[0] = __shfl_xor_sync(0xffffffffu, v, 5);
  o[1] = __shfl_xor_sync(0xffffffffu, v, 3, 8);
  o[2] = __shfl_up_sync(0xffffffffu, v, 3);
  o[3] = __shfl_down_sync(0xffffffffu, v, 2, 16);
  o[4] = __shfl_sync(0xffffffffu, v, 9);
  o[5] = __shfl_sync(0xffffffffu, v, lane + 1, 4);
  o[6] = (int)__ballot_sync(0xffffffffu, lane % 3 == 0);
  o[7] = __any_sync(0xffffffffu, lane == 13);
  o[8] = __all_sync(0xffffffffu, lane < 40);
  o[9] = (int)__match_any_sync(0xffffffffu, lane / 5);
  // Two groups of 16 lanes, each with its own mask, at the same call.
  const unsigned half = lane < 16 ? 0x0000ffffu : 0xffff0000u;
  o[10] = __shfl_xor_sync(half, v, 1);
  double d = 0.5 * t;
  o[11] = (int)(4 * __shfl_down_sync(half, d, 1, 16));
  __syncwarp();
}

__global__ void misuse_kernel(int mode, int *out) {
  const int lane = (int)threadIdx.x % 32;
  int v = lane;
  switch (mode) {
  case 0: // self
    v = __shfl_xor_sync(lane == 7 ? 0xffffff7fu : 0xffffffffu, v, 1);
    break;
  case 1: // masks
    v = __shfl_xor_sync(lane == 1 ? 0x3u : 0xffffffffu, v, 1);
    break;
  case 2: // sites
    if (lane == 4)
      v = __shfl_xor_sync(0xffffffffu, v, 1);
    else
      v = __shfl_xor_sync(0xffffffffu, v, 2);
    break;
  case 3: // outside
    if (lane < 8)
      v = __shfl_sync(0xffu, v, 9);
    break;
  case 4: // exited
    if (lane == 3)
      return;
    v = __shfl_xor_sync(0xffffffffu, v, 1);
    break;
  case 5: // split
    v = __shfl_xor_sync(lane < 16 ? 0x1ffffu : 0xffff0000u, v, 1);
    break;
  }
  out[threadIdx.x] = v;
}

/// Round r: lane t deposits r * 1000 + 8 t + i (i < 6) and checks the whole
/// table; out[t] counts the wrong words.
__global__ void gather_kernel(int rounds, int *out) {
  const int t = (int)threadIdx.x, w0 = t - t % 32;
  int wrong = 0;
  for (int r = 0; r < rounds; ++r) {
    uint32_t mine[6];
    for (int i = 0; i < 6; ++i)
      mine[i] = (uint32_t)(r * 1000 + 8 * t + i);
    const uint32_t(*all)[8] = __nncc_emu_warp_gather(mine, 6);
    for (int l = 0; l < 32; ++l)
      for (int i = 0; i < 6; ++i)
        wrong += all[l][i] != (uint32_t)(r * 1000 + 8 * (w0 + l) + i);
  }
  out[t] = wrong;
}

__global__ void gather_partial_kernel(int *out) {
  const uint32_t mine[1] = {threadIdx.x};
  out[threadIdx.x] = (int)__nncc_emu_warp_gather(mine, 1)[0][0];
}

template <typename K, typename... A> void run(K k, const char *name, dim3 block, A... a) {
  ::emu::launch(k, dim3(1), block, 0, nullptr, name, [&](auto... x) { k(x...); })(a...);
}

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (!mode.empty()) {
    const char *modes[] = {"self", "masks", "sites", "outside", "exited", "split", "gather"};
    int m = -1;
    for (int i = 0; i < 7; ++i)
      if (mode == modes[i])
        m = i;
    if (m < 0) {
      fprintf(stderr, "unknown mode %s\n", mode.c_str());
      return 2;
    }
    std::vector<int> out(48);
    if (mode == "gather")
      run(gather_partial_kernel, "gather_partial_kernel", dim3(48), out.data());
    else
      run(misuse_kernel, "misuse_kernel", dim3(32), m, out.data());
    return emutest::finish();
  }
  {
    emutest::Group G("warp primitives", 0);
    // 48 threads: warp 1 has 16 lanes; a full mask names only those.
    for (int threads : {32, 48}) {
      std::vector<int> out(threads * kOut, -1), want(threads * kOut);
      run(primitives_kernel, "primitives_kernel", dim3(threads), out.data());
      for (int t = 0; t < threads; ++t) {
        const int lane = t % 32, w0 = t - lane, lanes = std::min(32, threads - w0);
        auto val = [&](int l) { return 100 * (w0 + l) + 7; };
        int *o = want.data() + t * kOut;
        o[0] = val(lane ^ 5);
        o[1] = val((lane & ~7) | ((lane & 7) ^ 3));
        o[2] = lane >= 3 ? val(lane - 3) : val(lane);
        o[3] = (lane & 15) + 2 < 16 ? val(lane + 2) : val(lane);
        o[4] = val(9);
        o[5] = val((lane & ~3) | ((lane + 1) & 3));
        unsigned ballot = 0, match = 0;
        for (int l = 0; l < lanes; ++l) {
          ballot |= (unsigned)(l % 3 == 0) << l;
          match |= (unsigned)(l / 5 == lane / 5) << l;
        }
        o[6] = (int)ballot;
        o[7] = lanes > 13;
        o[8] = 1;
        o[9] = (int)match;
        o[10] = val(lane ^ 1);
        o[11] = (int)(4 * 0.5 * (lane % 16 == 15 ? t : t + 1));
      }
      G.cmp(std::to_string(threads) + " threads", want.data(), out.data(), want.size());
    }
    std::vector<int> wrong(64, -1), none(64, 0);
    run(gather_kernel, "gather_kernel", dim3(64), 50, wrong.data());
    G.cmp("gather, 2 warps x 50 rounds", none.data(), wrong.data(), none.size());
  }
  return emutest::finish();
}
