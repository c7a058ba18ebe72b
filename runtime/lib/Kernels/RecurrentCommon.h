//===- RecurrentCommon.h - Shared by recurrent forward and backward -*- C++ -*-===//
#ifndef NNCC_LIB_KERNELS_RECURRENTCOMMON_H
#define NNCC_LIB_KERNELS_RECURRENTCOMMON_H

#include "Internal.h"
#include "nncc/Kernels/Bf16.h"
#include "nncc/Kernels/RecurrentMath.h"

#include <atomic>
#include <type_traits>

namespace nncc {
namespace kernels {

/// The recurrent inputs of one cell step for all B rows: hg = h W_hh^T
/// ([B, G*H]; for Cho's GRU only the r and z blocks), and for Cho's GRU also
/// rh = r * h and hrh = rh W_hn^T ([B, H] each), which its candidate needs.
template <typename T>
void cellRecurrentInputs(int cell, int64_t B, int64_t H, const T *xproj,
                         const T *h, const T *whh, const T *bhh, T *hg, T *rh,
                         T *hrh) {
  const int64_t GH = cell_gates(cell) * H;
  gemm(false, true, B, cell == CellGruCho ? 2 * H : GH, H, T(1), h, H, whh, H,
       T(0), hg, GH);
  if (cell != CellGruCho)
    return;
  for (int64_t e = 0; e < B * H; ++e) {
    const int64_t b = e / H, j = e % H;
    T r, z;
    rh[e] = gru_cho_gates(xproj + b * GH, hg + b * GH, bhh, (int)H, (int)j, h[e],
                          r, z);
  }
  gemm(false, true, B, H, H, T(1), rh, H, whh + 2 * H * H, H, T(0), hrh, H);
}

/// The element size a CPU workspace slot is sized for: bf16 libraries never
/// run the CPU kernels, but their plans (shared by both targets) keep the
/// slot, sized as f32's.
inline int64_t workspaceElem(int64_t elem) { return acc_elem_bytes(elem); }

/// The CPU-only workspace of the f32 AVX-512 time loops (RecurrentFast.cpp:
/// the packed W_hh, the second h buffer, the backward's row offsets):
/// whether the sizes computed on this thread count it. On by default (a CPU
/// library's plan, on every CPU, so that it does not depend on the
/// machine); off inside a size function asked for bf16 (elem 2: its
/// libraries never run the CPU kernels, and the f32 kernels are the only
/// ones with that workspace) and while the compiler plans for another
/// target (nncc_rnn_sizes_count_cpu_workspace(0): the CUDA plan and its
/// rematerialisation decisions). Carving a real workspace ignores it.
bool cpuOnlyCounted();
struct CpuOnlySizes {
  bool prev;
  explicit CpuOnlySizes(bool on);
  ~CpuOnlySizes();
  CpuOnlySizes(const CpuOnlySizes &) = delete;
  CpuOnlySizes &operator=(const CpuOnlySizes &) = delete;
};
/// Whether a carve into `a` takes the CPU-only slots (always when carving
/// a workspace, as the sizes of f32 count them).
inline bool takeCpuOnly(const Arena &a) {
  return a.base != nullptr || cpuOnlyCounted();
}
/// The scope of a public size function given `elem` (before workspaceElem):
/// bf16 sizes leave the CPU-only workspace out.
inline bool cpuOnlyFor(int64_t elem) { return elem != 2 && cpuOnlyCounted(); }

/// The per-step barrier of the fast time loops' OpenMP region (instead of
/// `omp barrier`): a short spin, then a futex sleep until the last arrives.
/// libgomp's barrier spins for a long while by default (GOMP_SPINCOUNT),
/// and when another process holds the core of the thread waited for, the
/// spinning thread burns its time slice, so a step costs slices instead of
/// a microsecond (LSTM B32 T128 H256 on 2 loaded cores: 2 s instead of
/// 66 ms). Acquire/release: what a thread wrote before it arrived is
/// visible to every thread after it returns. `n`: the team's size
/// (omp_get_num_threads(), which may be below the num_threads asked for).
class StepBarrier {
public:
  void wait(int n);

private:
  alignas(64) std::atomic<int> count{0};
  alignas(64) std::atomic<unsigned> generation{0};
  std::atomic<int> sleepers{0};
};

/// Whether `cell` is one of the kernel cell codes (RecurrentMath.h).
inline bool validCell(int cell) {
  return cell >= CellRnnTanh && cell <= CellGruCho;
}

/// Valid arguments of a whole recurrent stack (forward or backward): cell,
/// sizes, every weight present, lengths within [0, T].
inline bool stackArgsValid(int cell, int64_t B, int64_t Tn, int64_t I,
                           int64_t H, int64_t L, int64_t D, int hasBias,
                           const void *x, const void *const *weights,
                           const int32_t *lengths) {
  if (!validCell(cell) || B < 0 || Tn < 0 || I <= 0 || H <= 0 || L <= 0 ||
      (D != 1 && D != 2) || !weights || (B * Tn > 0 && !x))
    return false;
  const int per = rnn_weights_per_cell(hasBias);
  for (int64_t i = 0; i < L * D * per; ++i)
    if (!weights[i])
      return false;
  if (lengths)
    for (int64_t b = 0; b < B; ++b)
      if (lengths[b] < 0 || lengths[b] > Tn)
        return false;
  return true;
}

/// Gate math of one row at one step, units [j0, j1) of H: h, c (LSTM) and
/// the output row, or the Cho GRU's r, z and r*h. Every row pointer is the
/// whole row's (unit j at j, gate g's at g * H + j). `Saved` is a template
/// parameter and `bias` is never null, so the unit loop has no branches; the
/// rows are
/// disjoint buffers (projection, recurrent GEMM output, bias, state, output,
/// saved gates), declared __restrict so that it vectorises without runtime
/// alias checks. Not inlined: inside the OpenMP body GCC drops the
/// __restrict of the parameters and gives up on the LSTM's many alias checks
/// (the loop stays scalar); one call per row and step costs nothing.
template <int Kind, bool Saved, typename T>
__attribute__((noinline)) void
gateRow(int64_t H, int64_t j0, int64_t j1, const T *__restrict xr,
        const T *__restrict hr, const T *__restrict bias, T *__restrict hrow,
        T *__restrict crow, T *__restrict orow, T *__restrict sv, T *__restrict rh, T *__restrict r,
        T *__restrict z) {
  if (bias == nullptr)
    __builtin_unreachable();
  T *save = Saved ? sv : nullptr;
  // An int index, as the unit functions take: a truncated int64 index is not
  // an affine induction variable for the vectoriser.
  const int h = (int)H, jb = (int)j0, je = (int)j1;
  // LSTM / GRU saved slots as separate rows: with the stores inside
  // lstm_unit / gru_unit GCC cannot tell them from the state rows and keeps
  // the loop scalar.
  T *__restrict s0 = save, *__restrict s1 = Saved ? save + H : nullptr,
                *__restrict s2 = Saved ? save + 2 * H : nullptr,
                *__restrict s3 = Saved ? save + 3 * H : nullptr,
                *__restrict s4 =
                    Saved && Kind == CellLstm ? save + 4 * H : nullptr;
  for (int j = jb; j < je; ++j) {
    if (Kind == CellLstm) {
      T gi, gf, gg, go, cnew, hnew;
      lstm_gates(xr, hr, bias, h, j, crow[j], gi, gf, gg, go, cnew, hnew);
      if (Saved) {
        s0[j] = gi;
        s1[j] = gf;
        s2[j] = gg;
        s3[j] = go;
        s4[j] = cnew;
      }
      crow[j] = cnew;
      hrow[j] = hnew;
      orow[j] = hnew;
    } else if (Kind == CellGru) {
      T gr, gz, gn, ghn;
      T hnew = gru_gates(xr, hr, bias, h, j, hrow[j], gr, gz, gn, ghn);
      if (Saved) {
        s0[j] = gr;
        s1[j] = gz;
        s2[j] = gn;
        s3[j] = ghn;
      }
      hrow[j] = hnew;
      orow[j] = hnew;
    } else if (Kind == CellGruCho) {
      T rj, zj;
      rh[j] = gru_cho_gates(xr, hr, bias, h, j, hrow[j], rj, zj);
      r[j] = rj;
      z[j] = zj;
    } else {
      T hnew = rnn_unit(xr, hr, bias, j, Kind == CellRnnRelu, save, h);
      hrow[j] = hnew;
      orow[j] = hnew;
    }
  }
}

/// The f32 time loop of one layer and direction on AVX-512 or AVX2 CPUs
/// (RecurrentFast.cpp, RecurrentFastAvx2.cpp): W_hh packed once into
/// `packed`, a register-blocked recurrent product per step with the gate
/// math after it while the tile is hot, one OpenMP region over the time
/// loop. Rows in sorted order (perm / lens, as scanDirection); h holds the
/// initial state and receives the final one, hAlt is the second h buffer;
/// c (LSTM) is updated in place. `bias` is never null (zeros without b_hh).
/// `hg` [B, G*H] receives the step product on AVX2 (the portable loop's
/// buffer), where gateRow runs on it.
struct FastScan {
  int cell;
  int64_t B, Tn, H, D, col, sd;
  bool reverse;
  const float *xg, *packed, *bias;
  const int32_t *perm, *lens;
  float *h, *hAlt, *c, *out, *saved, *ckc, *hg;
  int64_t every;
};
/// Unit groups (of 16) per panel of the packed W_hh (fastScanPack): 4 for
/// the Elman RNN (one gate), else 1.
inline int fastScanGroupsPerPanel(int cell) { return cell_gates(cell) == 1 ? 4 : 1; }

/// The rows [0, n) as ceil(n / MR) tiles of nearly equal height (a tile of
/// one or two rows would stream a whole W panel for little work); calls
/// f(first row, std::integral_constant<int, rows>) per tile, the height a
/// compile-time constant for the register tiles' template argument.
template <int MR, typename F> inline void rowTiles(int64_t n, const F &f) {
  static_assert(MR >= 1 && MR <= 8, "row tiles of 1 to 8 rows");
  const int64_t tiles = (n + MR - 1) / MR;
  if (tiles == 0)
    return;
  const int64_t base = n / tiles, extra = n % tiles;
  int64_t r0 = 0;
  for (int64_t i = 0; i < tiles; ++i) {
    const int64_t R = base + (i < extra ? 1 : 0);
    switch (R) {
#define NNCC_ROWS(M)                                                           \
  case M:                                                                      \
    if constexpr (M <= MR)                                                     \
      f(r0, std::integral_constant<int, M>{});                                 \
    break;
      NNCC_ROWS(1)
      NNCC_ROWS(2)
      NNCC_ROWS(3)
      NNCC_ROWS(4)
      NNCC_ROWS(5)
      NNCC_ROWS(6)
      NNCC_ROWS(7)
      NNCC_ROWS(8)
#undef NNCC_ROWS
    default:
      break;
    }
    r0 += R;
  }
}

/// The fast loops use one thread when a step has fewer multiply-adds
/// (B * G * H * H): about 10 us of one core, against a barrier per step
/// that costs a microsecond on an idle machine and a time slice when
/// another process holds the other core (docs/runtime.md, "Threads") —
/// unless W_hh (G * H * H floats) is larger than kRecurrentThreadWeightBytes:
/// every step streams all of it, and from one core's L2 only when the
/// threads split it (LSTM H256, 1 MiB, batch 1, T128 on a 2-core AMD EPYC
/// with 1 MiB of L2 per core: 1.13 ms on one thread, 0.45 ms on two).
constexpr double kRecurrentThreadMacs = 1 << 20;
constexpr double kRecurrentThreadWeightBytes = 1 << 19;

/// Whether a step of B rows over the G * H x H matrix W_hh is worth more
/// than one thread (see kRecurrentThreadMacs).
inline bool recurrentStepThreads(int64_t B, int64_t GH, int64_t H) {
  return (double)B * GH * H >= kRecurrentThreadMacs ||
         (double)GH * H * sizeof(float) > kRecurrentThreadWeightBytes;
}

/// Whether fastScanRun runs `cell` here: Elman, LSTM or PyTorch's GRU, on a
/// CPU with AVX-512F/DQ or with AVX2 and FMA, unless NNCC_KERNELS_PORTABLE
/// is set (not "0").
bool fastScanAvailable(int cell);
/// One step of the AVX2 scan (RecurrentFastAvx2.cpp): rows [0, n) and the
/// units of panels [p0, p1), reading h from `cur` and writing it to `nxt`.
void fastScanStepAvx2(const FastScan &a, int64_t st, int64_t n, int64_t p0,
                      int64_t p1, const float *cur, float *nxt);
/// Floats of the packed W_hh (0 for cells fastScanRun does not run).
int64_t fastScanPackedFloats(int cell, int64_t H);
void fastScanPack(int cell, int64_t H, const float *whh, float *packed);
void fastScanRun(const FastScan &a);

/// Whether fastBackwardStep runs `cell` here (AVX-512 only).
bool fastBackwardAvailable(int cell);
/// The backward's step product on AVX-512:
/// dh[k, j] = direct[k, j] + sum_q A_k[q] W_hh[q, j] for the rows k < n and
/// the units of panels [p0, p1) (64 units each), A_k = a + rowOff[k] (K =
/// G*H gate adjoints of row k). W_hh [G*H, H] is packed by panels once.
int64_t fastBackwardPanels(int64_t H);
int64_t fastBackwardPackedFloats(int cell, int64_t H);
void fastBackwardPack(int cell, int64_t H, const float *whh, float *packed);
void fastBackwardStep(int64_t n, int64_t K, int64_t H, const float *a,
                      const int64_t *rowOff, const float *packed, int64_t p0,
                      int64_t p1, const float *direct, float *dh);

/// nncc_rnn_layer_zoneout_S (Recurrent.cpp) for the stack kernels of
/// RecurrentBackward.cpp. With `ckc` (LSTM, BPTT checkpointing) it also
/// stores the cell state entering every segment of `every` scan steps after
/// the first: entry m - 1 of ckc [ceil(T/every) - 1, B, H] (batch order) is
/// c entering step m * every, written for the rows still running there.
template <typename T>
int rnnLayerTrain(int cell, int64_t B, int64_t Tn, int64_t H, int64_t D,
                  int64_t stateIndex, int reverse, const T *xproj,
                  const T *whh, const T *bhh, const T *h0, const T *c0,
                  const int32_t *lengths, T *y, T *hn, T *cn, void *workspace,
                  T *saved, double zoneout, uint64_t seed, uint64_t offset,
                  T *ckc, int64_t every);

} // namespace kernels
} // namespace nncc

#endif
