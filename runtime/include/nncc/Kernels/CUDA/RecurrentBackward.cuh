//===- RecurrentBackward.cuh - Recurrent training on CUDA ------*- CUDA -*-===//
//
// CUDA twins of the CPU recurrent training kernels
// (runtime/lib/Kernels/RecurrentBackward.cpp, docs/kernels.md "Recurrent
// BPTT"), with the same operands, layouts, reserve and length semantics:
//
//   launch_rnn_forward_train       nncc_rnn_forward_train   (plain reserve)
//   launch_rnn_forward_train_ckpt  nncc_rnn_forward_train_ckpt
//   launch_rnn_backward_reserved   nncc_rnn_backward_reserved
//   launch_rnn_backward            nncc_rnn_backward (forward recomputed)
//   launch_rnn_backward_ckpt       nncc_rnn_backward_ckpt
//   launch_rnn_forward_train_revolve  nncc_rnn_forward_train_revolve
//   launch_rnn_backward_revolve    nncc_rnn_backward_revolve
//   launch_rnn_cell_backward       nncc_rnn_cell_backward
//
// LSTM zoneout (training) is an optional trailing argument of the stack
// launchers (rate, seed, offset; the CPU's nncc_rnn_*_zoneout / the zoneout
// arguments of the reserve and checkpoint kernels): the same Philox masks
// (RandomMasks.h zoneout_keep_prev with lstm_zoneout_counter), the same reserve
// (the saved c slot holds the kept c). The binomial (Revolve) schedule
// drives the same RevolveCursor (Revolve.h) from the host, its state
// operations enqueued on the stream.
//
// bf16 (T = bf16_t): the stack launchers run the f32 ones on fp32 copies
// in the scratch and round the outputs once (section "bf16 stacks" at the
// end); their scratch is rnn_stack_forward_scratch_bytes /
// rnn_stack_backward_scratch_bytes, which the generated code uses for
// every precision.
//
// Status: compiled with nvcc (sm_90, -Werror all-warnings); fp32 ran on an
// H100 in the recurrent seed models' training steps (docs/cuda.md, "First
// run on an H100 (2026-11-26)"), fp64 has not run on a GPU; bf16 and the
// binomial schedule have run under the host emulation only
// (cuda-emu-recurrent-train-bf16.test, cuda-emu-recurrent.test).
//
// Shape of the work, per layer and direction (as the CPU):
//   forward: xg = X W_ih^T + b_ih (cuBLAS) and the persistent scan kernel of
//     Recurrent.cuh, which also writes the gates into the reserve;
//   backward: ONE persistent reverse-scan launch (rnn_scan_backward_kernel:
//     per step the unit derivatives of BackwardMath.h for the CTA's active
//     rows, then dh_prev = direct + dhg W_hh, Cho's GRU one more product for
//     r*h; or, chosen as the forward's kernel is (NNCC_CUDA_RNN), the
//     cooperative rnn_grid_backward_kernel over hidden-unit slices with
//     W_hh's columns resident per CTA), then dW_hh, dW_ih and dx as cuBLAS
//     GEMMs over all steps and the bias gradients as deterministic column
//     sums (rnn_col_sum_add: Common.cuh's column-sum kernel, fixed order).
//
// Conventions: row-major operands (cuBLAS sees them transposed), the cuBLAS
// handle in CUBLAS_POINTER_MODE_HOST (its default; the generated code's own
// GEMMs assume it too); its stream is set to `stream`. Launchers return the
// first cudaError_t; a failing cuBLAS call maps to a cudaError_t by
// cublas_error (Blas.cuh).
// Bad arguments (the CPU's NNCC_K_EINVAL) return cudaErrorInvalidValue.
// Lengths (i32 or i64 on the device) are clamped to [0, T] as in the
// inference kernel (the CPU rejects lengths outside [0, T]). Weight tables
// are HOST arrays of device pointers in PyTorch _flat_weights order.
// Scratch: a `char *` of device memory of the matching *_scratch_bytes().
//
//===----------------------------------------------------------------------===//
#ifndef NNCC_KERNELS_CUDA_RECURRENTBACKWARD_CUH
#define NNCC_KERNELS_CUDA_RECURRENTBACKWARD_CUH

#include "nncc/Kernels/BackwardMath.h"
#include "nncc/Kernels/CUDA/Blas.cuh"
#include "nncc/Kernels/CUDA/Common.cuh"
#include "nncc/Kernels/CUDA/Recurrent.cuh"
#include "nncc/Kernels/RecurrentMath.h"
#include "nncc/Kernels/Revolve.h"

#include <cublas_v2.h>
#include <limits.h>

#include <vector>

namespace nncc {
namespace kernels {
namespace cuda {

//===----------------------------------------------------------------------===//
// Host helpers: cuBLAS, scratch carving, launch configuration
//===----------------------------------------------------------------------===//

/// Carves the launchers' device scratch: pieces aligned to 256 bytes from a
/// base aligned up to 256. With a null base it only counts (the
/// *_scratch_bytes functions), so sizes and layouts cannot diverge.
class RnnScratch {
public:
  explicit RnnScratch(char *base) : base_(base) {
    if (base_)
      base_ += (256 - (reinterpret_cast<uintptr_t>(base_) & 255)) & 255;
  }
  char *take(int64_t bytes) {
    const uint64_t at = off_;
    off_ += ((uint64_t)(bytes > 0 ? bytes : 0) + 255) & ~(uint64_t)255;
    return base_ ? base_ + at : nullptr;
  }
  template <typename U> U *take(int64_t n, int64_t elem) {
    return reinterpret_cast<U *>(take(n * elem));
  }
  /// Bytes the pieces need, plus the base's alignment slack.
  uint64_t bytes() const { return off_ + 256; }

private:
  char *base_;
  uint64_t off_ = 0;
};

/// SM count and opt-in shared memory per block of the current device.
inline cudaError_t rnn_device_limits(int &sms, int &optin) {
  int dev = 0;
  cudaError_t e;
  sms = 1;
  optin = 48 * 1024;
  if ((e = cudaGetDevice(&dev)) != cudaSuccess)
    return e;
  if ((e = cudaDeviceGetAttribute(
           &optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)) !=
      cudaSuccess)
    return e;
  return cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
}

/// Whether the stack sizes fit the kernels' int indexing of B, T, H, I.
inline bool rnn_stack_dims_ok(int64_t B, int64_t Tn, int64_t I, int64_t H,
                              int64_t L, int64_t D) {
  return B >= 0 && Tn >= 0 && I > 0 && H > 0 && L > 0 && (D == 1 || D == 2) &&
         B <= INT_MAX && Tn <= INT_MAX && I <= INT_MAX &&
         H * 4 <= INT_MAX && B * Tn <= INT_MAX;
}

inline bool rnn_cell_ok(int cell) {
  return cell >= CellRnnTanh && cell <= CellGruCho;
}

/// LSTM zoneout of a training call (the CPU's Zoneout; p = 0: off).
struct RnnZoneout {
  double p = 0;
  uint64_t seed = 0, offset = 0;
};

//===----------------------------------------------------------------------===//
// Small kernels
//===----------------------------------------------------------------------===//

/// out[r, :] = bias for rows r < rows (the CPU's bias pre-fill of a GEMM
/// with beta = 1).
template <typename T>
__global__ void rnn_bias_rows_kernel(int64_t rows, int64_t n,
                                     const T *__restrict__ bias,
                                     T *__restrict__ out) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
       i < rows * n; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = bias[i % n];
}

/// The store of rnn_col_sum_add: adds the sums into one or two outputs.
template <typename T> struct RnnColAdd {
  T *out, *out2;
  __device__ void operator()(int64_t j, const double sums[1]) const {
    if (out)
      out[j] += (T)sums[0];
    if (out2)
      out2[j] += (T)sums[0];
  }
};

/// out[j] += sum_r a[r*lda + j] (and out2[j] += the same sum when given):
/// Common.cuh's column-sum kernel with all rows as one slice (no scratch;
/// 16 warps per 32 columns, fixed order, double accumulation).
template <typename T>
inline cudaError_t rnn_col_sum_add(int64_t rows, int64_t n, const T *a,
                                   int64_t lda, T *out, T *out2,
                                   cudaStream_t stream) {
  if ((!out && !out2) || n <= 0 || rows <= 0)
    return cudaSuccess;
  col_sum_slices_kernel<1, RowMajorColTerms<T>, RnnColAdd<T>>
      <<<grid_for((n + 31) / 32, 1), 32 * kColSumWarps, 0, stream>>>(
          rows, n, rows, 1, RowMajorColTerms<T>{a, lda}, RnnColAdd<T>{out, out2}, nullptr);
  return cudaGetLastError();
}

/// The bias adjoints of a layer and direction: RNN / LSTM both biases are
/// the column sums of dxg (= dhg); GRU / Cho db_hh from dhg, db_ih from dxg.
template <typename T>
inline cudaError_t rnn_bias_grads(int64_t rows, int64_t GH, const T *dxg,
                                  const T *dhg, T *dbih, T *dbhh,
                                  cudaStream_t stream) {
  if (dhg == dxg)
    return rnn_col_sum_add<T>(rows, GH, dxg, GH, dbih, dbhh, stream);
  cudaError_t e = rnn_col_sum_add<T>(rows, GH, dhg, GH, dbhh, (T *)nullptr,
                                     stream);
  if (e != cudaSuccess)
    return e;
  return rnn_col_sum_add<T>(rows, GH, dxg, GH, dbih, (T *)nullptr, stream);
}

//===----------------------------------------------------------------------===//
// The reverse scan
//===----------------------------------------------------------------------===//

/// Shared memory of one CTA of rnn_scan_backward_kernel: the carried dh,
/// dc (LSTM), the direct path, the step operand dstep [rows, G*H], Cho's
/// dah, and W_hh [G*H, H] when it fits.
template <typename T, int Kind>
__host__ __device__ inline size_t rnn_bwd_smem_bytes(int rows, int H,
                                                     bool weights_in_smem) {
  const int G = cell_gates(Kind);
  size_t n = (size_t)rows * H * (2 + (Kind == CellLstm ? 1 : 0) +
                                 (Kind == CellGruCho ? 1 : 0)) +
             (size_t)rows * G * H;
  if (weights_in_smem)
    n += (size_t)G * H * H;
  return n * sizeof(T);
}

/// rows per CTA and W_hh placement, as rnn_scan_config.
template <typename T, int Kind>
inline bool rnn_scan_backward_config(int B, int H, int sms, int optin,
                                     int &rows, bool &inSmem, size_t &smem) {
  rows = (B + 2 * sms - 1) / (2 * (sms > 0 ? sms : 1));
  rows = rows < 1 ? 1 : (rows > 8 ? 8 : rows);
  inSmem = rnn_bwd_smem_bytes<T, Kind>(rows, H, true) <= (size_t)optin;
  smem = rnn_bwd_smem_bytes<T, Kind>(rows, H, inSmem);
  while (smem > (size_t)optin && rows > 1) {
    rows /= 2;
    smem = rnn_bwd_smem_bytes<T, Kind>(rows, H, inSmem);
  }
  return smem <= (size_t)optin;
}

/// Reverse time loop of one layer and direction (the CPU's
/// scanBackwardSteps between scanBackwardBegin and scanBackwardEnd), scan
/// steps [s_begin, s_end) last first; CTA x owns batch rows
/// [x*rows, x*rows + rows), a row takes part at step s while s < len_b and
/// then works on t = rnn_time_index(s, len_b, reverse).
///
/// Row indexing (the CPU's FullIndex / SegmentIndex):
///   full (Segmented = false; s_begin = 0, s_end = T): adjoint rows
///     b*T + t of dxg / dhg / hprev / rh, gates `saved` [B, T, slots*H];
///   segment (BPTT checkpointing, scan steps [s_begin, s_begin + K)):
///     adjoint rows b*K + (s - s_begin), gates [B, K+1, slots*H] at row
///     b*(K+1) + (s - s_begin) + 1 (row b*(K+1) holds in its c slot the
///     cell state entering the segment).
/// h_{t-1} is read from the layer output y [B, T, D*H] (columns
/// [col*H, col*H + H)) for s > 0, else h0 / zeros; the LSTM's c_{t-1} from
/// the previous step's saved c slot for s > 0, else c0 / zeros.
/// The carried adjoints start from dh_in / dc_in ([B, H]; null = 0) and end
/// in dh_out / dc_out (null: not stored); in place is fine (each CTA reads
/// its own rows before the loop and writes them after).
/// Writes the gate adjoints of every valid (row, step) -- dxg (input
/// projection) and, GRU / Cho, dhg (recurrent product; otherwise dhg is
/// dxg) -- and hprev (h_{t-1}), Cho rh (r*h_{t-1}); the other rows of
/// these buffers (steps past a length or past s_end) are zeroed, so the
/// weight-gradient GEMMs over all rows read zeros there.
/// LSTM zoneout (zo_p > 0; sd = the state slot l*D + d of the mask counter):
/// the forward's masks regenerated; at a zoned-out unit dh and dc pass
/// through and the gate adjoints are zero (the CPU's scanBackwardSteps).
template <typename T, typename Len, int Kind, bool WeightsInSmem,
          bool Segmented>
__global__ void rnn_scan_backward_kernel(
    int B, int Tn, int H, int reverse, int D, int col, int rows,
    const Len *__restrict__ lengths, int s_begin, int s_end, int K,
    const T *__restrict__ whh, const T *__restrict__ saved,
    const T *__restrict__ y, const T *__restrict__ h0,
    const T *__restrict__ c0, const T *__restrict__ dy, const T *dh_in,
    const T *dc_in, T *dh_out, T *dc_out, T *__restrict__ dxg,
    T *__restrict__ dhg, T *__restrict__ hprev, T *__restrict__ rh,
    float zo_p, uint64_t zo_seed, uint64_t zo_offset, int sd) {
  extern __shared__ __align__(16) unsigned char nncc_rnn_bwd_smem[];
  const int G = cell_gates(Kind), GH = G * H;
  const int slots = cell_saved_slots(Kind);
  const bool twoG = Kind == CellGru || Kind == CellGruCho;
  const int64_t DH = (int64_t)D * H, cofs = (int64_t)col * H;
  T *sdh = reinterpret_cast<T *>(nncc_rnn_bwd_smem);
  T *sdc = sdh + rows * H;
  T *sdir = sdc + (Kind == CellLstm ? rows * H : 0);
  T *sdst = sdir + rows * H;
  T *sdah = sdst + rows * GH;
  T *sw = sdah + (Kind == CellGruCho ? rows * H : 0);
  const T *W = WeightsInSmem ? sw : whh;

  const int b0 = blockIdx.x * rows;
  const int nr = min(rows, B - b0);
  if (nr <= 0)
    return;
  if (WeightsInSmem)
    for (int64_t i = threadIdx.x; i < (int64_t)GH * H; i += blockDim.x)
      sw[i] = whh[i];
  int maxLen = 0;
  for (int r = 0; r < nr; ++r)
    maxLen = max(maxLen, rnn_len(lengths, b0 + r, Tn));
  // Rows the scan does not write read zero in the GEMMs that follow.
  const int nsteps = Segmented ? K : Tn;
  const int64_t nrows = (int64_t)nr * nsteps;
  for (int64_t i = threadIdx.x; i < nrows * (GH + H); i += blockDim.x) {
    const int64_t rq = i / (GH + H), o = i % (GH + H);
    const int r = (int)(rq / nsteps), q = (int)(rq % nsteps), b = b0 + r;
    const int len = rnn_len(lengths, b, Tn);
    const bool valid = Segmented ? (s_begin + q < s_end && s_begin + q < len)
                                 : q < len;
    if (valid)
      continue;
    const int64_t row = (int64_t)b * nsteps + q;
    if (o < GH) {
      dxg[row * GH + o] = T(0);
      if (twoG)
        dhg[row * GH + o] = T(0);
    } else {
      hprev[row * H + (o - GH)] = T(0);
      if (Kind == CellGruCho)
        rh[row * H + (o - GH)] = T(0);
    }
  }
  for (int i = threadIdx.x; i < nr * H; i += blockDim.x) {
    const int64_t g = (int64_t)b0 * H + i;
    sdh[i] = dh_in ? dh_in[g] : T(0);
    if (Kind == CellLstm)
      sdc[i] = dc_in ? dc_in[g] : T(0);
  }
  __syncthreads();

  const int Gc = Kind == CellGruCho ? 2 * H : GH; // dstep columns times W_hh
  const int sTop = min(s_end, maxLen);
  for (int s = sTop - 1; s >= s_begin; --s) {
    // Unit derivatives (BackwardMath.h), thread per (row, unit).
    for (int i = threadIdx.x; i < nr * H; i += blockDim.x) {
      const int r = i / H, j = i % H, b = b0 + r;
      const int len = rnn_len(lengths, b, Tn);
      if (s >= len)
        continue;
      const int t = rnn_time_index(s, len, reverse != 0);
      const int tp = reverse ? t + 1 : t - 1;
      const int64_t row = Segmented ? (int64_t)b * K + (s - s_begin)
                                    : (int64_t)b * Tn + t;
      const int64_t srow = Segmented
                               ? (int64_t)b * (K + 1) + (s - s_begin) + 1
                               : (int64_t)b * Tn + t;
      const int64_t sprev = Segmented ? srow - 1 : (int64_t)b * Tn + tp;
      const T *sv = saved + srow * slots * H;
      const T hp = s > 0 ? y[((int64_t)b * Tn + tp) * DH + cofs + j]
                         : (h0 ? h0[(int64_t)b * H + j] : T(0));
      const T dht =
          sdh[i] + (dy ? dy[((int64_t)b * Tn + t) * DH + cofs + j] : T(0));
      T *dxr = dxg + row * GH;
      T *dsr = sdst + r * GH;
      hprev[row * H + j] = hp;
      if (Kind == CellLstm && zo_p > 0.0f &&
          zoneout_keep_prev(lstm_zoneout_key(zo_seed, sd), zo_offset,
                            lstm_zoneout_counter(sd, t, b, j, B, Tn, H),
                            zo_p)) {
        // Zoned-out unit (h_t = h_{t-1}, c_t = c_{t-1}): dh and dc pass to
        // step t-1 unchanged, the gates of this step get no adjoint.
        for (int gi = 0; gi < 4; ++gi)
          dxr[gi * H + j] = dsr[gi * H + j] = T(0);
        sdir[i] = dht;
      } else if (Kind == CellLstm) {
        const T cp = s > 0 ? saved[sprev * slots * H + 4 * H + j]
                           : (c0 ? c0[(int64_t)b * H + j] : T(0));
        T dc = sdc[i], di, df, dg, dout;
        lstm_unit_grads(sv, H, j, cp, dht, dc, di, df, dg, dout);
        sdc[i] = dc;
        dxr[j] = dsr[j] = di;
        dxr[H + j] = dsr[H + j] = df;
        dxr[2 * H + j] = dsr[2 * H + j] = dg;
        dxr[3 * H + j] = dsr[3 * H + j] = dout;
        sdir[i] = T(0);
      } else if (Kind == CellGru) {
        T dar, daz, dan, dhn;
        sdir[i] = gru_unit_grads(sv, H, j, hp, dht, dar, daz, dan, dhn);
        T *dhr = dhg + row * GH;
        dxr[j] = dhr[j] = dsr[j] = dar;
        dxr[H + j] = dhr[H + j] = dsr[H + j] = daz;
        dxr[2 * H + j] = dan;
        dhr[2 * H + j] = dsr[2 * H + j] = dhn;
      } else if (Kind == CellGruCho) {
        T daz, dah;
        sdir[i] = gru_cho_grads1(sv, H, j, hp, dht, daz, dah);
        T *dhr = dhg + row * GH;
        dxr[H + j] = dhr[H + j] = dsr[H + j] = daz;
        dxr[2 * H + j] = dhr[2 * H + j] = dah;
        sdah[i] = dah;
        rh[row * H + j] = sv[j] * hp;
      } else {
        const T da = rnn_unit_backward(sv[j], Kind == CellRnnRelu, dht);
        dxr[j] = dsr[j] = da;
        sdir[i] = T(0);
      }
    }
    __syncthreads();
    if (Kind == CellGruCho) {
      // Phase 2: drh = dah . W_hh[2H:3H], then the r gate. The thread of
      // (row, unit) is the one that wrote that unit's hprev above.
      for (int i = threadIdx.x; i < nr * H; i += blockDim.x) {
        const int r = i / H, k = i % H, b = b0 + r;
        const int len = rnn_len(lengths, b, Tn);
        if (s >= len)
          continue;
        const int t = rnn_time_index(s, len, reverse != 0);
        const int64_t row = Segmented ? (int64_t)b * K + (s - s_begin)
                                      : (int64_t)b * Tn + t;
        const int64_t srow = Segmented
                                 ? (int64_t)b * (K + 1) + (s - s_begin) + 1
                                 : (int64_t)b * Tn + t;
        const T *dah = sdah + r * H;
        T drh = T(0);
        for (int o = 0; o < H; ++o)
          drh += dah[o] * W[(int64_t)(2 * H + o) * H + k];
        T dar;
        sdir[i] += gru_cho_grads2(saved + srow * slots * H, k,
                                  hprev[row * H + k], drh, dar);
        dxg[row * GH + k] = dhg[row * GH + k] = sdst[r * GH + k] = dar;
      }
      __syncthreads();
    }
    // dh_prev = direct + dstep . W_hh (Cho: only the r, z blocks).
    for (int i = threadIdx.x; i < nr * H; i += blockDim.x) {
      const int r = i / H, k = i % H;
      if (s >= rnn_len(lengths, b0 + r, Tn))
        continue;
      const T *ds = sdst + r * GH;
      T acc = T(0);
      for (int o = 0; o < Gc; ++o)
        acc += ds[o] * W[(int64_t)o * H + k];
      sdh[i] = sdir[i] + acc;
    }
    __syncthreads();
  }
  for (int i = threadIdx.x; i < nr * H; i += blockDim.x) {
    const int64_t g = (int64_t)b0 * H + i;
    if (dh_out)
      dh_out[g] = sdh[i];
    if (Kind == CellLstm && dc_out)
      dc_out[g] = sdc[i];
  }
}

/// Shared memory of one CTA of rnn_grid_backward_kernel for us units per
/// CTA: W_hh's columns of the own units transposed, [rp, Gcp] (rows
/// jj < u: W_hh[o, j0 + jj] for the o < Gc gate rows of the dh product,
/// Gc = G*H, Cho 2H) and, Cho, [rp, Hp] (W_hh[2H + o, j0 + jj]); the staged
/// gate adjoints [B, max(Gcp, Hp)]; the products [B, rp]; dh, the direct
/// dh and (LSTM) dc of the own units [B, us]; the clamped lengths [B].
/// rp = us rounded up to the warp item's rows, Gcp / Hp padded to the
/// vector length.
template <typename T, int Kind>
__host__ __device__ inline size_t rnn_grid_bwd_smem_bytes(int B, int H, int us) {
  const int V = RnnVec<T>::n, RO = kRnnGridRows;
  const int Gc = Kind == CellGruCho ? 2 * H : cell_gates(Kind) * H;
  const int64_t Gcp = (Gc + V - 1) / V * V, Hp = (H + V - 1) / V * V;
  const int64_t rp = (us + RO - 1) / RO * RO;
  const int64_t wide = Gcp > Hp ? Gcp : Hp;
  const int64_t n = rp * Gcp + (Kind == CellGruCho ? rp * Hp : 0) + B * wide + B * rp +
                    (int64_t)B * us * (Kind == CellLstm ? 3 : 2);
  return (size_t)n * sizeof(T) + (size_t)B * sizeof(int);
}

/// The reverse time loop of rnn_scan_backward_kernel (same arguments, rows
/// and results) as ONE cooperative launch over the hidden units, the
/// decomposition of Recurrent.cuh's rnn_grid_kernel: CTA c owns the units
/// [c*H/nc, (c+1)*H/nc) of every batch row and keeps W_hh's columns of
/// them in shared memory for the whole launch (dh_prev[k] = sum_o
/// dstep[o] W_hh[o, k] needs column k). Per step: the unit derivatives of
/// the own units (BackwardMath.h), whose gate adjoints go to dxg / dhg as
/// in the scan kernel; grid.sync(); every unit's adjoints of the step
/// staged from there (__ldcg); dh_prev of the own units as warp products.
/// Cho's GRU first exchanges dah the same way for drh = dah W_hh[2H:3H]
/// and its r gate: two grid barriers per step, one otherwise. dh and dc
/// stay in the CTA between steps; dh_in / dh_out may alias (own units).
template <typename T, typename Len, int Kind, bool Segmented>
__global__ void __launch_bounds__(kRnnGridThreads) rnn_grid_backward_kernel(
    int B, int Tn, int H, int reverse, int D, int col, int us,
    const Len *__restrict__ lengths, int s_begin, int s_end, int K,
    const T *__restrict__ whh, const T *__restrict__ saved,
    const T *__restrict__ y, const T *__restrict__ h0,
    const T *__restrict__ c0, const T *__restrict__ dy, const T *dh_in,
    const T *dc_in, T *dh_out, T *dc_out, T *dxg, T *dhg, T *hprev, T *rh,
    float zo_p, uint64_t zo_seed, uint64_t zo_offset, int sd) {
  namespace cg = cooperative_groups;
  extern __shared__ __align__(16) unsigned char nncc_rnn_grid_bwd_smem[];
  cg::grid_group grid = cg::this_grid();
  constexpr int G = cell_gates(Kind), slots = cell_saved_slots(Kind);
  constexpr bool twoG = Kind == CellGru || Kind == CellGruCho;
  constexpr int V = RnnVec<T>::n, RO = kRnnGridRows;
  const int GH = G * H, Gc = Kind == CellGruCho ? 2 * H : GH;
  const int Gcp = (Gc + V - 1) / V * V, Hp = (H + V - 1) / V * V;
  const int rp = (us + RO - 1) / RO * RO, wide = Gcp > Hp ? Gcp : Hp;
  const int64_t DH = (int64_t)D * H, cofs = (int64_t)col * H;
  T *swa = reinterpret_cast<T *>(nncc_rnn_grid_bwd_smem); // [rp, Gcp]
  T *swb = swa + (int64_t)rp * Gcp;                       // [rp, Hp] (Cho)
  T *sst = swb + (Kind == CellGruCho ? (int64_t)rp * Hp : 0); // [B, wide] staged
  T *sprod = sst + (int64_t)B * wide;                     // [B, rp]
  T *sdh = sprod + (int64_t)B * rp;                       // [B, us]
  T *sdir = sdh + (int64_t)B * us;                        // [B, us]
  T *sdc = sdir + (int64_t)B * us;                        // [B, us] (LSTM)
  int *slen = reinterpret_cast<int *>(sdc + (Kind == CellLstm ? (int64_t)B * us : 0));
  // The step's gate adjoints as the next product reads them (dstep).
  const T *ex = twoG ? dhg : dxg;

  const int nc = gridDim.x, c = blockIdx.x;
  const int j0 = (int)((int64_t)c * H / nc), u = (int)((int64_t)(c + 1) * H / nc) - j0;
  for (int64_t i = threadIdx.x; i < (int64_t)rp * Gcp; i += blockDim.x) {
    const int jj = (int)(i / Gcp), o = (int)(i % Gcp);
    swa[i] = jj < u && o < Gc ? whh[(int64_t)o * H + j0 + jj] : T(0);
  }
  if (Kind == CellGruCho)
    for (int64_t i = threadIdx.x; i < (int64_t)rp * Hp; i += blockDim.x) {
      const int jj = (int)(i / Hp), o = (int)(i % Hp);
      swb[i] = jj < u && o < H ? whh[(int64_t)(2 * H + o) * H + j0 + jj] : T(0);
    }
  for (int b = threadIdx.x; b < B; b += blockDim.x)
    slen[b] = rnn_len(lengths, b, Tn);
  int maxLen = 0;
  for (int b = 0; b < B; ++b)
    maxLen = max(maxLen, rnn_len(lengths, b, Tn));
  // Rows the scan does not write read zero in the GEMMs that follow (the
  // own units' columns).
  const int nsteps = Segmented ? K : Tn;
  for (int64_t i = threadIdx.x; i < (int64_t)B * nsteps * (G + 1) * u; i += blockDim.x) {
    const int64_t rq = i / ((G + 1) * u);
    const int o = (int)(i % ((G + 1) * u)), g = o / u, j = j0 + o % u;
    const int b = (int)(rq / nsteps), q = (int)(rq % nsteps);
    const int len = rnn_len(lengths, b, Tn);
    const bool valid = Segmented ? (s_begin + q < s_end && s_begin + q < len) : q < len;
    if (valid)
      continue;
    const int64_t row = (int64_t)b * nsteps + q;
    if (g < G) {
      dxg[row * GH + g * H + j] = T(0);
      if (twoG)
        dhg[row * GH + g * H + j] = T(0);
    } else {
      hprev[row * H + j] = T(0);
      if (Kind == CellGruCho)
        rh[row * H + j] = T(0);
    }
  }
  for (int i = threadIdx.x; i < B * u; i += blockDim.x) {
    const int b = i / u, jj = i % u;
    const int64_t gi = (int64_t)b * H + j0 + jj;
    sdh[b * us + jj] = dh_in ? dh_in[gi] : T(0);
    if (Kind == CellLstm)
      sdc[b * us + jj] = dc_in ? dc_in[gi] : T(0);
  }
  __syncthreads();

  // Adjoint row of (b, s) and its gates' row in `saved`.
  auto adjRow = [&](int b, int s, int t) {
    return Segmented ? (int64_t)b * K + (s - s_begin) : (int64_t)b * Tn + t;
  };
  auto savedRow = [&](int b, int s, int t) {
    return Segmented ? (int64_t)b * (K + 1) + (s - s_begin) + 1 : (int64_t)b * Tn + t;
  };
  // Stages columns [c0s, c0s + n) of each active row's adjoints into sst
  // (row stride `stride`, zeros up to it), in vectors when the rows allow.
  const bool vec_ex = H % V == 0 && rnn_aligned16(ex);
  auto stage = [&](int s, int c0s, int n, int stride) {
    rnn_grid_stage_rows<8>(
        B, n, stride, vec_ex,
        [&](int b) -> const T * {
          if (s >= slen[b])
            return nullptr;
          const int t = rnn_time_index(s, slen[b], reverse != 0);
          return ex + adjRow(b, s, t) * GH + c0s;
        },
        sst, [] {});
  };

  const int sTop = min(s_end, maxLen);
  for (int s = sTop - 1; s >= s_begin; --s) {
    // Unit derivatives of the own units (as rnn_scan_backward_kernel).
    for (int i = threadIdx.x; i < B * u; i += blockDim.x) {
      const int b = i / u, jj = i % u, j = j0 + jj;
      const int len = slen[b];
      if (s >= len)
        continue;
      const int t = rnn_time_index(s, len, reverse != 0);
      const int tp = reverse ? t + 1 : t - 1;
      const int64_t row = adjRow(b, s, t), srow = savedRow(b, s, t);
      const int64_t sprev = Segmented ? srow - 1 : (int64_t)b * Tn + tp;
      const T *sv = saved + srow * slots * H;
      const T hp = s > 0 ? y[((int64_t)b * Tn + tp) * DH + cofs + j]
                         : (h0 ? h0[(int64_t)b * H + j] : T(0));
      const T dht = sdh[b * us + jj] + (dy ? dy[((int64_t)b * Tn + t) * DH + cofs + j] : T(0));
      T *dxr = dxg + row * GH;
      hprev[row * H + j] = hp;
      T direct = T(0);
      if (Kind == CellLstm && zo_p > 0.0f &&
          zoneout_keep_prev(lstm_zoneout_key(zo_seed, sd), zo_offset, lstm_zoneout_counter(sd, t, b, j, B, Tn, H),
                            zo_p)) {
        // Zoned-out unit: dh and dc pass to step t-1, the gates get none.
#pragma unroll
        for (int gi = 0; gi < 4; ++gi)
          dxr[gi * H + j] = T(0);
        direct = dht;
      } else if (Kind == CellLstm) {
        const T cp = s > 0 ? saved[sprev * slots * H + 4 * H + j]
                           : (c0 ? c0[(int64_t)b * H + j] : T(0));
        T dc = sdc[b * us + jj], di, df, dg, dout;
        lstm_unit_grads(sv, H, j, cp, dht, dc, di, df, dg, dout);
        sdc[b * us + jj] = dc;
        dxr[j] = di;
        dxr[H + j] = df;
        dxr[2 * H + j] = dg;
        dxr[3 * H + j] = dout;
      } else if (Kind == CellGru) {
        T dar, daz, dan, dhn;
        direct = gru_unit_grads(sv, H, j, hp, dht, dar, daz, dan, dhn);
        T *dhr = dhg + row * GH;
        dxr[j] = dhr[j] = dar;
        dxr[H + j] = dhr[H + j] = daz;
        dxr[2 * H + j] = dan;
        dhr[2 * H + j] = dhn;
      } else if (Kind == CellGruCho) {
        T daz, dah;
        direct = gru_cho_grads1(sv, H, j, hp, dht, daz, dah);
        T *dhr = dhg + row * GH;
        dxr[H + j] = dhr[H + j] = daz;
        dxr[2 * H + j] = dhr[2 * H + j] = dah;
        rh[row * H + j] = sv[j] * hp;
      } else {
        dxr[j] = rnn_unit_backward(sv[j], Kind == CellRnnRelu, dht);
      }
      sdir[b * us + jj] = direct;
    }
    if (Kind == CellGruCho) {
      // drh = dah . W_hh[2H:3H] over every unit's dah, then the r gate
      // (the thread of (row, unit) wrote that unit's hprev above).
      grid.sync();
      stage(s, 2 * H, H, Hp);
      __syncthreads();
      rnn_grid_product(swb, sst, sprod, B, Hp, rp, 0, us);
      __syncthreads();
      for (int i = threadIdx.x; i < B * u; i += blockDim.x) {
        const int b = i / u, jj = i % u, j = j0 + jj;
        const int len = slen[b];
        if (s >= len)
          continue;
        const int t = rnn_time_index(s, len, reverse != 0);
        const int64_t row = adjRow(b, s, t), srow = savedRow(b, s, t);
        T dar;
        sdir[b * us + jj] += gru_cho_grads2(saved + srow * slots * H, j, hprev[row * H + j],
                                            sprod[b * rp + jj], dar);
        dxg[row * GH + j] = dhg[row * GH + j] = dar;
      }
    }
    // dh_prev = direct + dstep . W_hh over every unit's dstep (Cho: the r,
    // z blocks).
    grid.sync();
    stage(s, 0, Gc, Gcp);
    __syncthreads();
    rnn_grid_product(swa, sst, sprod, B, Gcp, rp, 0, us);
    __syncthreads();
    for (int i = threadIdx.x; i < B * u; i += blockDim.x) {
      const int b = i / u, jj = i % u;
      if (s < slen[b])
        sdh[b * us + jj] = sdir[b * us + jj] + sprod[b * rp + jj];
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < B * u; i += blockDim.x) {
    const int b = i / u, jj = i % u;
    const int64_t gi = (int64_t)b * H + j0 + jj;
    if (dh_out)
      dh_out[gi] = sdh[b * us + jj];
    if (Kind == CellLstm && dc_out)
      dc_out[gi] = sdc[b * us + jj];
  }
}

/// Buffers of one layer and direction's backward: gate adjoints dxg and
/// (GRU / Cho) dhg [rows, G*H], hprev and (Cho) rh [rows, H].
template <typename T> struct RnnBwdBuffers {
  T *dxg, *dhg, *hprev, *rh;
};

/// Carves RnnBwdBuffers for `rows` adjoint rows (B*T, or B*K per segment).
inline void rnn_carve_bwd_buffers(RnnScratch &a, int cell, int64_t rows,
                                  int64_t H, int64_t elem, char **dxg,
                                  char **dhg, char **hprev, char **rh) {
  const int64_t GH = cell_gates(cell) * H;
  const bool twoG = cell == CellGru || cell == CellGruCho;
  *dxg = a.take(rows * GH * elem);
  *dhg = a.take(twoG ? rows * GH * elem : 0);
  *hprev = a.take(rows * H * elem);
  *rh = a.take(cell == CellGruCho ? rows * H * elem : 0);
}

template <typename T>
inline RnnBwdBuffers<T> rnn_bwd_buffers(RnnScratch &a, int cell, int64_t rows,
                                        int64_t H) {
  char *p[4];
  rnn_carve_bwd_buffers(a, cell, rows, H, sizeof(T), &p[0], &p[1], &p[2],
                        &p[3]);
  const bool twoG = cell == CellGru || cell == CellGruCho;
  RnnBwdBuffers<T> w;
  w.dxg = reinterpret_cast<T *>(p[0]);
  w.dhg = twoG ? reinterpret_cast<T *>(p[1]) : w.dxg;
  w.hprev = reinterpret_cast<T *>(p[2]);
  w.rh = reinterpret_cast<T *>(p[3]);
  return w;
}

/// One reverse-scan launch: rnn_grid_backward_kernel or
/// rnn_scan_backward_kernel, chosen as launch_rnn_scan_ckpt chooses
/// (NNCC_CUDA_RNN=auto|scan|grid, the same shape checks and errors).
template <typename T, typename Len, int Kind, bool Segmented>
inline cudaError_t launch_rnn_scan_backward(
    int B, int Tn, int H, int reverse, int D, int col, const Len *lengths,
    int s_begin, int s_end, int K, const T *whh, const T *saved, const T *y,
    const T *h0, const T *c0, const T *dy, const T *dh_in, const T *dc_in,
    T *dh_out, T *dc_out, const RnnBwdBuffers<T> &w, cudaStream_t stream,
    const RnnZoneout &zo = RnnZoneout(), int sd = 0) {
  if (B <= 0)
    return cudaSuccess;
  const bool twoG = Kind == CellGru || Kind == CellGruCho;
  cudaError_t e;
  // The grid kernel as launch_rnn_scan_ckpt chooses it (NNCC_CUDA_RNN).
  const RnnKernelChoice choice = rnn_kernel_choice();
  if (choice == RnnKernelBad)
    return cudaErrorInvalidValue;
  if (rnn_try_grid(choice, B, H)) {
    auto gk = rnn_grid_backward_kernel<T, Len, Kind, Segmented>;
    int nc = 0, us = 0;
    size_t gsmem = 0;
    e = rnn_grid_fit(gk, H, nc, us, gsmem,
                     [&](int n) { return rnn_grid_bwd_smem_bytes<T, Kind>(B, H, n); });
    if (e == cudaSuccess) {
      float zp = Kind == CellLstm ? (float)zo.p : 0.0f;
      uint64_t zs = zo.seed, zf = zo.offset;
      T *dxg = w.dxg, *dhg = twoG ? w.dhg : nullptr, *hprev = w.hprev, *rh = w.rh;
      void *args[] = {&B,     &Tn,    &H,      &reverse, &D,      &col,    &us,    &lengths,
                      &s_begin, &s_end, &K,    &whh,     &saved,  &y,      &h0,    &c0,
                      &dy,    &dh_in, &dc_in,  &dh_out,  &dc_out, &dxg,    &dhg,   &hprev,
                      &rh,    &zp,    &zs,     &zf,      &sd};
      return cudaLaunchCooperativeKernel(gk, dim3((unsigned)nc), dim3(kRnnGridThreads), args,
                                         gsmem, stream);
    }
    if (!rnn_fall_back(choice, e))
      return e;
  }
  int sms, optin, rows;
  bool inSmem;
  size_t smem;
  if ((e = rnn_device_limits(sms, optin)) != cudaSuccess)
    return e;
  if (!rnn_scan_backward_config<T, Kind>(B, H, sms, optin, rows, inSmem, smem))
    return cudaErrorInvalidConfiguration;
  auto k = inSmem ? rnn_scan_backward_kernel<T, Len, Kind, true, Segmented>
                  : rnn_scan_backward_kernel<T, Len, Kind, false, Segmented>;
  if ((e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)smem)) != cudaSuccess)
    return e;
  const unsigned grid = (unsigned)((B + rows - 1) / rows);
  // RNN / LSTM: dhg is dxg, which the kernel does not touch through dhg.
  k<<<grid, 256, smem, stream>>>(B, Tn, H, reverse, D, col, rows, lengths,
                                 s_begin, s_end, K, whh, saved, y, h0, c0, dy,
                                 dh_in, dc_in, dh_out, dc_out, w.dxg,
                                 twoG ? w.dhg : nullptr, w.hprev, w.rh,
                                 Kind == CellLstm ? (float)zo.p : 0.0f,
                                 zo.seed, zo.offset, sd);
  return cudaGetLastError();
}

/// Weight gradients of one layer and direction over `rows` adjoint rows
/// (all accumulate; each may be null): dW_hh += dhg^T hprev (Cho: rows
/// 2H:3H use rh), db_ih / db_hh, dW_ih += dxg^T in, dx += dxg W_ih (dx with
/// leading dimension inSize; the caller passes null when it scatters).
template <typename T, int Kind>
inline cudaError_t rnn_layer_weight_grads(cublasHandle_t blas, int64_t rows,
                                          int64_t inSize, int64_t H,
                                          const RnnBwdBuffers<T> &w,
                                          const T *in, const T *wih, T *dx,
                                          T *dwih, T *dwhh, T *dbih, T *dbhh,
                                          cudaStream_t stream) {
  const int64_t GH = cell_gates(Kind) * H;
  cudaError_t e;
  if (dwhh) {
    if (Kind == CellGruCho) {
      if ((e = gemm_rowmajor<T>(blas, true, false, 2 * H, H, rows, T(1), w.dhg, GH,
                           w.hprev, H, T(1), dwhh, H)) != cudaSuccess)
        return e;
      if ((e = gemm_rowmajor<T>(blas, true, false, H, H, rows, T(1), w.dhg + 2 * H,
                           GH, w.rh, H, T(1), dwhh + 2 * H * H, H)) !=
          cudaSuccess)
        return e;
    } else if ((e = gemm_rowmajor<T>(blas, true, false, GH, H, rows, T(1), w.dhg,
                                GH, w.hprev, H, T(1), dwhh, H)) != cudaSuccess)
      return e;
  }
  if ((e = rnn_bias_grads<T>(rows, GH, w.dxg, w.dhg, dbih, dbhh, stream)) !=
      cudaSuccess)
    return e;
  if (dwih && (e = gemm_rowmajor<T>(blas, true, false, GH, inSize, rows, T(1),
                               w.dxg, GH, in, inSize, T(1), dwih, inSize)) !=
                  cudaSuccess)
    return e;
  if (dx && (e = gemm_rowmajor<T>(blas, false, false, rows, inSize, GH, T(1), w.dxg,
                             GH, wih, inSize, T(1), dx, inSize)) != cudaSuccess)
    return e;
  return cudaSuccess;
}

//===----------------------------------------------------------------------===//
// Stack forward (training)
//===----------------------------------------------------------------------===//

/// Scratch of the stack forward: the input projection [B*T, G*H] and
/// W_hh^T [G*H, H] of one layer and direction.
inline void rnn_forward_carve(RnnScratch &a, int cell, int64_t B, int64_t Tn,
                              int64_t H, int64_t elem, char **xg, char **wt) {
  const int64_t GH = cell_gates(cell) * H;
  *xg = a.take(B * Tn * GH * elem);
  *wt = a.take(GH * H * elem);
}

/// Device scratch bytes of launch_rnn_forward_train(_ckpt).
inline uint64_t rnn_forward_train_scratch_bytes(int cell, int64_t B,
                                                int64_t Tn, int64_t H,
                                                int64_t elem) {
  RnnScratch a(nullptr);
  char *xg, *wt;
  rnn_forward_carve(a, cell, B, Tn, H, elem, &xg, &wt);
  return a.bytes();
}

/// LSTM checkpoints per layer and direction (the CPU's ckptCount).
inline int64_t rnn_ckpt_count(int64_t Tn, int64_t every) {
  return every > 0 && Tn > 0 ? (Tn - 1) / every : 0;
}

/// The stack's forward (the CPU's stackForward): per layer and direction
/// xg = in W_ih^T + b_ih and one persistent scan writing outs [L, B*T, D*H]
/// (zeros past each length), the gates into saved (slot l*D+d of
/// [L*D, B, T, slots*H]; may be null), the final states (may be null) and,
/// with ck (LSTM, every >= 1), the cell-state checkpoints
/// [L*D, rnn_ckpt_count(T, every), B, H]; LSTM zoneout masks `zo`.
template <typename T, typename Len, int Kind>
inline cudaError_t rnn_stack_forward(cublasHandle_t blas, int64_t B,
                                     int64_t Tn, int64_t I, int64_t H,
                                     int64_t L, int64_t D, int has_bias,
                                     const T *x, const T *const *weights,
                                     const T *h0, const T *c0,
                                     const Len *lengths, T *outs, T *saved,
                                     T *hn, T *cn, T *ck, int64_t every,
                                     char *scratch, cudaStream_t stream,
                                     const RnnZoneout &zo = RnnZoneout()) {
  const int per = rnn_weights_per_cell(has_bias != 0);
  const int slots = cell_saved_slots(Kind);
  const int64_t GH = cell_gates(Kind) * H, DH = D * H, BT = B * Tn;
  const int64_t nck = rnn_ckpt_count(Tn, every);
  RnnScratch a(scratch);
  char *xgp, *wtp;
  rnn_forward_carve(a, Kind, B, Tn, H, sizeof(T), &xgp, &wtp);
  T *xg = reinterpret_cast<T *>(xgp), *wt = reinterpret_cast<T *>(wtp);
  cudaError_t e;
  for (int64_t l = 0; l < L; ++l) {
    const T *in = l == 0 ? x : outs + (l - 1) * BT * DH;
    const int64_t inSize = l == 0 ? I : DH;
    for (int64_t d = 0; d < D; ++d) {
      const int64_t sd = l * D + d;
      const T *const *wp = weights + sd * per;
      const T *bih = has_bias ? wp[2] : nullptr;
      const T *bhh = has_bias ? wp[3] : nullptr;
      if (bih && BT > 0) {
        rnn_bias_rows_kernel<T><<<grid_for(BT * GH, 256), 256, 0, stream>>>(
            BT, GH, bih, xg);
        if ((e = cudaGetLastError()) != cudaSuccess)
          return e;
      }
      if ((e = gemm_rowmajor<T>(blas, false, true, BT, GH, inSize, T(1), in,
                           inSize, wp[0], inSize, bih ? T(1) : T(0), xg,
                           GH)) != cudaSuccess)
        return e;
      const int64_t st = sd * B * H;
      if ((e = launch_rnn_scan_ckpt<T, Len, Kind>(
               (int)B, (int)Tn, (int)H, (int)d, DH, (int)(d * H), lengths, xg,
               wp[1], bhh, h0 ? h0 + st : nullptr, c0 ? c0 + st : nullptr,
               outs + l * BT * DH, hn ? hn + st : nullptr,
               cn ? cn + st : nullptr,
               saved ? saved + sd * BT * slots * H : nullptr,
               (int64_t)slots * H,
               ck && Kind == CellLstm ? ck + sd * nck * B * H : nullptr,
               (int)(every > INT_MAX ? INT_MAX : every), wt, stream,
               Kind == CellLstm ? zo.p : 0.0, zo.seed, zo.offset, sd)) !=
          cudaSuccess)
        return e;
    }
  }
  return cudaSuccess;
}

template <typename T, typename Len>
inline bool rnn_stack_args_ok(int cell, int64_t B, int64_t Tn, int64_t I,
                              int64_t H, int64_t L, int64_t D, int has_bias,
                              const T *x, const T *const *weights) {
  if (!rnn_cell_ok(cell) || !rnn_stack_dims_ok(B, Tn, I, H, L, D) ||
      !weights || (B * Tn > 0 && !x))
    return false;
  const int per = rnn_weights_per_cell(has_bias != 0);
  for (int64_t i = 0; i < L * D * per; ++i)
    if (!weights[i])
      return false;
  return true;
}

/// The training forward of every launcher: the reserve with the gates
/// (every = 0), the LSTM's checkpoints every `every` > 0 scan steps, or
/// the layer outputs only (every < 0, the binomial schedule).
template <typename T, typename Len, int Kind>
inline cudaError_t rnn_forward_train_impl(
    cublasHandle_t blas, int64_t B, int64_t Tn, int64_t I, int64_t H,
    int64_t L, int64_t D, int has_bias, const T *x, const T *const *weights,
    const T *h0, const T *c0, const Len *lengths, T *y, T *hn, T *cn,
    T *reserve, int64_t every, char *scratch, cudaStream_t stream,
    const RnnZoneout &zo) {
  if (!rnn_stack_args_ok<T, Len>(Kind, B, Tn, I, H, L, D, has_bias, x,
                                 weights) ||
      !rnn_zoneout_ok(Kind, zo.p) || !scratch || !y ||
      (B * Tn > 0 && !reserve))
    return cudaErrorInvalidValue;
  cudaError_t e = cublas_error(cublasSetStream(blas, stream));
  if (e != cudaSuccess)
    return e;
  const int64_t BT = B * Tn, DH = D * H;
  // The reserve: every layer's output [L, B*T, D*H], then the gates of
  // every layer and direction [L*D, B, T, slots*H] (checkpointed, every >
  // 0: the LSTM's cell states [L*D, ckpt count, B, H] instead of the gates;
  // the binomial schedule, every < 0: nothing more).
  T *outs = reserve, *rest = reserve ? reserve + L * BT * DH : nullptr;
  if ((e = rnn_stack_forward<T, Len, Kind>(
           blas, B, Tn, I, H, L, D, has_bias, x, weights, h0, c0, lengths,
           outs, every == 0 ? rest : nullptr, hn, cn,
           every > 0 && Kind == CellLstm ? rest : nullptr, every > 0 ? every : 0,
           scratch, stream, zo)) != cudaSuccess)
    return e;
  if (BT * DH == 0)
    return cudaSuccess;
  return cudaMemcpyAsync(y, outs + (L - 1) * BT * DH, sizeof(T) * BT * DH,
                         cudaMemcpyDeviceToDevice, stream);
}

/// nncc_rnn_forward_train: y [B, T, D*H], h_n / c_n [L*D, B, H] (may be
/// null) and the reserve (nncc_rnn_reserve_size bytes: layer outputs
/// [L, B*T, D*H], then gates [L*D, B, T, slots*H]; entries past a length
/// are not written, as on the CPU). LSTM zoneout in training: rate
/// `zoneout` in [0, 1) (0: off; > 0 only for the LSTM, else
/// cudaErrorInvalidValue), the op's `seed` and the step's `offset`
/// (nncc_ms_dropout_offset): the CPU's masks, the kept c in the c slot.
template <typename T, typename Len, int Kind,
          std::enable_if_t<!is_bf16_v<T>, int> = 0>
inline cudaError_t launch_rnn_forward_train(
    cublasHandle_t blas, int64_t B, int64_t Tn, int64_t I, int64_t H,
    int64_t L, int64_t D, int has_bias, const T *x, const T *const *weights,
    const T *h0, const T *c0, const Len *lengths, T *y, T *hn, T *cn,
    T *reserve, char *scratch, cudaStream_t stream, double zoneout = 0,
    uint64_t seed = 0, uint64_t offset = 0) {
  const RnnZoneout zo{zoneout, seed, offset};
  return rnn_forward_train_impl<T, Len, Kind>(blas, B, Tn, I, H, L, D,
                                              has_bias, x, weights, h0, c0,
                                              lengths, y, hn, cn, reserve, 0,
                                              scratch, stream, zo);
}

/// nncc_rnn_forward_train_ckpt: the reserve holds the layer outputs and,
/// for the LSTM, the cell state entering every segment of `every` scan
/// steps after the first (nncc_rnn_reserve_ckpt_size bytes; with zoneout
/// the kept c). Scratch: rnn_forward_train_scratch_bytes. Zoneout as
/// launch_rnn_forward_train.
template <typename T, typename Len, int Kind,
          std::enable_if_t<!is_bf16_v<T>, int> = 0>
inline cudaError_t launch_rnn_forward_train_ckpt(
    cublasHandle_t blas, int64_t B, int64_t Tn, int64_t I, int64_t H,
    int64_t L, int64_t D, int has_bias, const T *x, const T *const *weights,
    const T *h0, const T *c0, const Len *lengths, T *y, T *hn, T *cn,
    T *reserve, int64_t every, char *scratch, cudaStream_t stream,
    double zoneout = 0, uint64_t seed = 0, uint64_t offset = 0) {
  if (every < 1)
    return cudaErrorInvalidValue;
  const RnnZoneout zo{zoneout, seed, offset};
  return rnn_forward_train_impl<T, Len, Kind>(blas, B, Tn, I, H, L, D,
                                              has_bias, x, weights, h0, c0,
                                              lengths, y, hn, cn, reserve,
                                              every, scratch, stream, zo);
}

/// nncc_rnn_forward_train_revolve: the reserve of the binomial schedule,
/// every layer's output [L, B*T, D*H] only (rnn_reserve_elems with
/// snapshots > 0). Scratch: rnn_forward_train_scratch_bytes. Zoneout as
/// launch_rnn_forward_train.
template <typename T, typename Len, int Kind,
          std::enable_if_t<!is_bf16_v<T>, int> = 0>
inline cudaError_t launch_rnn_forward_train_revolve(
    cublasHandle_t blas, int64_t B, int64_t Tn, int64_t I, int64_t H,
    int64_t L, int64_t D, int has_bias, const T *x, const T *const *weights,
    const T *h0, const T *c0, const Len *lengths, T *y, T *hn, T *cn,
    T *reserve, char *scratch, cudaStream_t stream, double zoneout = 0,
    uint64_t seed = 0, uint64_t offset = 0) {
  const RnnZoneout zo{zoneout, seed, offset};
  return rnn_forward_train_impl<T, Len, Kind>(blas, B, Tn, I, H, L, D,
                                              has_bias, x, weights, h0, c0,
                                              lengths, y, hn, cn, reserve, -1,
                                              scratch, stream, zo);
}

//===----------------------------------------------------------------------===//
// Stack backward from the full reserve (and with the forward recomputed)
//===----------------------------------------------------------------------===//

/// Elements of weight i of a stack's table (per layer and direction W_ih
/// [GH, inSize], W_hh [GH, H], then with biases b_ih, b_hh [GH]).
inline int64_t rnn_stack_weight_elems(int64_t i, int64_t D, int per,
                                      int64_t I, int64_t DH, int64_t H,
                                      int64_t GH) {
  const int64_t l = i / (D * per), kind = i % per;
  const int64_t inSize = l == 0 ? I : DH;
  return kind == 0 ? GH * inSize : kind == 1 ? GH * H : GH;
}

/// Zeroes what the layer backwards accumulate into (the CPU's
/// zeroStackGradients): every weight gradient and dx.
template <typename T>
inline cudaError_t rnn_zero_stack_grads(T *const *dweights, T *dx, int64_t L,
                                        int64_t D, int per, int64_t I,
                                        int64_t DH, int64_t H, int64_t GH,
                                        int64_t BT, cudaStream_t stream) {
  cudaError_t e;
  for (int64_t i = 0; dweights && i < L * D * per; ++i) {
    if (!dweights[i])
      continue;
    const int64_t n = rnn_stack_weight_elems(i, D, per, I, DH, H, GH);
    if ((e = cudaMemsetAsync(dweights[i], 0, sizeof(T) * n, stream)) !=
        cudaSuccess)
      return e;
  }
  if (dx && BT > 0)
    return cudaMemsetAsync(dx, 0, sizeof(T) * BT * I, stream);
  return cudaSuccess;
}

/// Scratch of the reserved backward: the two layer-input adjoints
/// [2, B*T, D*H], then one layer's buffers (rnn_bwd_buffers, B*T rows).
inline uint64_t rnn_backward_reserved_scratch_bytes(int cell, int64_t B,
                                                    int64_t Tn, int64_t H,
                                                    int64_t L, int64_t D,
                                                    int64_t elem) {
  (void)L;
  RnnScratch a(nullptr);
  a.take(2 * B * Tn * D * H * elem);
  char *p[4];
  rnn_carve_bwd_buffers(a, cell, B * Tn, H, elem, &p[0], &p[1], &p[2], &p[3]);
  return a.bytes();
}

template <typename T, typename Len, int Kind>
inline cudaError_t rnn_backward_reserved_impl(
    cublasHandle_t blas, int64_t B, int64_t Tn, int64_t I, int64_t H,
    int64_t L, int64_t D, int has_bias, const T *x, const T *const *weights,
    const T *h0, const T *c0, const Len *lengths, const T *reserve,
    const T *dy, const T *dhn, const T *dcn, T *dx, T *dh0, T *dc0,
    T *const *dweights, char *scratch, cudaStream_t stream,
    const RnnZoneout &zo) {
  const int per = rnn_weights_per_cell(has_bias != 0);
  const int slots = cell_saved_slots(Kind);
  const int64_t GH = cell_gates(Kind) * H, DH = D * H, BT = B * Tn;
  cudaError_t e;
  RnnScratch a(scratch);
  T *din = a.take<T>(2 * BT * DH, sizeof(T));
  const RnnBwdBuffers<T> w = rnn_bwd_buffers<T>(a, Kind, BT, H);
  const T *outs = reserve, *saved = reserve ? reserve + L * BT * DH : nullptr;
  if ((e = rnn_zero_stack_grads<T>(dweights, dx, L, D, per, I, DH, H, GH, BT,
                                   stream)) != cudaSuccess)
    return e;
  for (int64_t l = L - 1; l >= 0; --l) {
    const T *dyl = l == L - 1 ? dy : din + ((l + 1) % 2) * BT * DH;
    T *dxl = l == 0 ? dx : din + (l % 2) * BT * DH;
    const T *in = l == 0 ? x : outs + (l - 1) * BT * DH;
    const int64_t inSize = l == 0 ? I : DH;
    if (l > 0 && BT > 0 &&
        (e = cudaMemsetAsync(dxl, 0, sizeof(T) * BT * DH, stream)) !=
            cudaSuccess)
      return e;
    for (int64_t d = 0; d < D; ++d) {
      const int64_t sd = l * D + d, st = sd * B * H;
      const T *const *wp = weights + sd * per;
      T *const *dwp = dweights ? dweights + sd * per : nullptr;
      if ((e = launch_rnn_scan_backward<T, Len, Kind, false>(
               (int)B, (int)Tn, (int)H, (int)d, (int)D, (int)d, lengths, 0,
               (int)Tn, 1, wp[1], saved ? saved + sd * BT * slots * H : nullptr,
               outs ? outs + l * BT * DH : nullptr, h0 ? h0 + st : nullptr,
               c0 ? c0 + st : nullptr, dyl, dhn ? dhn + st : nullptr,
               dcn ? dcn + st : nullptr, dh0 ? dh0 + st : nullptr,
               dc0 ? dc0 + st : nullptr, w, stream, zo, (int)sd)) !=
          cudaSuccess)
        return e;
      if ((e = rnn_layer_weight_grads<T, Kind>(
               blas, BT, inSize, H, w, in, wp[0], dxl, dwp ? dwp[0] : nullptr,
               dwp ? dwp[1] : nullptr, (dwp && has_bias) ? dwp[2] : nullptr,
               (dwp && has_bias) ? dwp[3] : nullptr, stream)) != cudaSuccess)
        return e;
    }
  }
  return cudaSuccess;
}

/// nncc_rnn_backward_reserved: BPTT of the whole stack from
/// launch_rnn_forward_train's reserve, last layer first. Overwrites dx
/// [B, T, I], dh0 / dc0 [L*D, B, H] (each may be null) and every weight
/// gradient of `dweights` (a host array in _flat_weights order; it or any
/// entry may be null). Absent dy / dh_n / dc_n are zero. LSTM zoneout: the
/// forward's rate, seed and offset (masks regenerated; at a zoned-out unit
/// dh and dc pass to step t-1, the gates get no adjoint).
/// Scratch: rnn_backward_reserved_scratch_bytes.
template <typename T, typename Len, int Kind,
          std::enable_if_t<!is_bf16_v<T>, int> = 0>
inline cudaError_t launch_rnn_backward_reserved(
    cublasHandle_t blas, int64_t B, int64_t Tn, int64_t I, int64_t H,
    int64_t L, int64_t D, int has_bias, const T *x, const T *const *weights,
    const T *h0, const T *c0, const Len *lengths, const T *reserve,
    const T *dy, const T *dhn, const T *dcn, T *dx, T *dh0, T *dc0,
    T *const *dweights, char *scratch, cudaStream_t stream,
    double zoneout = 0, uint64_t seed = 0, uint64_t offset = 0) {
  if (!rnn_stack_args_ok<T, Len>(Kind, B, Tn, I, H, L, D, has_bias, x,
                                 weights) ||
      !rnn_zoneout_ok(Kind, zoneout) || !scratch || (B * Tn > 0 && !reserve))
    return cudaErrorInvalidValue;
  cudaError_t e = cublas_error(cublasSetStream(blas, stream));
  if (e != cudaSuccess)
    return e;
  const RnnZoneout zo{zoneout, seed, offset};
  return rnn_backward_reserved_impl<T, Len, Kind>(
      blas, B, Tn, I, H, L, D, has_bias, x, weights, h0, c0, lengths, reserve,
      dy, dhn, dcn, dx, dh0, dc0, dweights, scratch, stream, zo);
}

/// Scratch of launch_rnn_backward: a reserve (nncc_rnn_reserve_size), the
/// forward's scratch, then the reserved backward's.
inline uint64_t rnn_backward_scratch_bytes(int cell, int64_t B, int64_t Tn,
                                           int64_t H, int64_t L, int64_t D,
                                           int64_t elem) {
  RnnScratch a(nullptr);
  a.take(L * B * Tn * D * H * (1 + cell_saved_slots(cell)) * elem);
  a.take((int64_t)rnn_forward_train_scratch_bytes(cell, B, Tn, H, elem));
  a.take((int64_t)rnn_backward_reserved_scratch_bytes(cell, B, Tn, H, L, D,
                                                      elem));
  return a.bytes();
}

/// nncc_rnn_backward / nncc_rnn_backward_zoneout (no reserve edge): the
/// stack's forward is run again into the scratch (layer outputs and gates,
/// the same zoneout masks), then the reserved backward. Same outputs as
/// launch_rnn_backward_reserved. Scratch: rnn_backward_scratch_bytes.
template <typename T, typename Len, int Kind,
          std::enable_if_t<!is_bf16_v<T>, int> = 0>
inline cudaError_t launch_rnn_backward(
    cublasHandle_t blas, int64_t B, int64_t Tn, int64_t I, int64_t H,
    int64_t L, int64_t D, int has_bias, const T *x, const T *const *weights,
    const T *h0, const T *c0, const Len *lengths, const T *dy, const T *dhn,
    const T *dcn, T *dx, T *dh0, T *dc0, T *const *dweights, char *scratch,
    cudaStream_t stream, double zoneout = 0, uint64_t seed = 0,
    uint64_t offset = 0) {
  if (!rnn_stack_args_ok<T, Len>(Kind, B, Tn, I, H, L, D, has_bias, x,
                                 weights) ||
      !rnn_zoneout_ok(Kind, zoneout) || !scratch)
    return cudaErrorInvalidValue;
  const RnnZoneout zo{zoneout, seed, offset};
  cudaError_t e = cublas_error(cublasSetStream(blas, stream));
  if (e != cudaSuccess)
    return e;
  const int64_t BT = B * Tn, DH = D * H;
  RnnScratch a(scratch);
  T *reserve = a.take<T>(L * BT * DH * (1 + cell_saved_slots(Kind)),
                         sizeof(T));
  char *fws = a.take(
      (int64_t)rnn_forward_train_scratch_bytes(Kind, B, Tn, H, sizeof(T)));
  char *bws = a.take((int64_t)rnn_backward_reserved_scratch_bytes(
      Kind, B, Tn, H, L, D, sizeof(T)));
  if ((e = rnn_stack_forward<T, Len, Kind>(
           blas, B, Tn, I, H, L, D, has_bias, x, weights, h0, c0, lengths,
           reserve, reserve + L * BT * DH, nullptr, nullptr, nullptr, 0, fws,
           stream, zo)) != cudaSuccess)
    return e;
  return rnn_backward_reserved_impl<T, Len, Kind>(
      blas, B, Tn, I, H, L, D, has_bias, x, weights, h0, c0, lengths, reserve,
      dy, dhn, dcn, dx, dh0, dc0, dweights, bws, stream, zo);
}

//===----------------------------------------------------------------------===//
// Checkpointed stack backward (BPTT checkpointing every k scan steps)
//===----------------------------------------------------------------------===//

/// Segment gather (the CPU's layerBackwardCkpt step 1): rows r = b*K + q of
/// xs [B*K, inSize] and hprev [B*K, H] hold scan step s0 + q of row b when
/// it is valid (< s1 and < len_b), else zeros; Cho's rh rows are zeroed
/// (the gate kernel writes the valid ones).
template <typename T, typename Len>
__global__ void rnn_ckpt_gather_kernel(int B, int Tn, int H, int K, int s0,
                                       int s1, int reverse, int64_t inSize,
                                       int64_t DH, int64_t cofs,
                                       const Len *__restrict__ lengths,
                                       const T *__restrict__ in,
                                       const T *__restrict__ y,
                                       const T *__restrict__ h0,
                                       T *__restrict__ xs,
                                       T *__restrict__ hprev,
                                       T *__restrict__ rh) {
  const int64_t width = inSize + H, n = (int64_t)B * K * width;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / width, e = i % width;
    const int b = (int)(r / K), q = (int)(r % K), s = s0 + q;
    const int len = rnn_len(lengths, b, Tn);
    const bool valid = s < s1 && s < len;
    const int t = valid ? rnn_time_index(s, len, reverse != 0) : 0;
    if (e < inSize) {
      xs[r * inSize + e] = valid ? in[((int64_t)b * Tn + t) * inSize + e] : T(0);
      continue;
    }
    const int64_t j = e - inSize;
    const int tp = reverse ? t + 1 : t - 1;
    T hp = T(0);
    if (valid)
      hp = s > 0 ? y[((int64_t)b * Tn + tp) * DH + cofs + j]
                 : (h0 ? h0[(int64_t)b * H + j] : T(0));
    hprev[r * H + j] = hp;
    if (rh)
      rh[r * H + j] = T(0);
  }
}

/// Segment gate recomputation (step 3), thread per (row b, unit j), the
/// segment's steps in order (the LSTM's c recursion): gates into seg
/// [B, K+1, slots*H] at row b*(K+1) + q + 1; for the LSTM row b*(K+1)'s c
/// slot first gets the cell state entering the segment (ckc [B, H] for
/// s0 > 0, else c0 / zeros). Cho: r, z and rh = r*h_{t-1} only (h~ after
/// the second product, rnn_ckpt_cho_update_kernel). LSTM zoneout (zo_p >
/// 0, state slot sd): a zoned-out unit's c slot gets the kept c_{t-1}, as
/// the forward wrote it.
template <typename T, typename Len, int Kind>
__global__ void rnn_ckpt_gates_kernel(int B, int Tn, int H, int K, int s0,
                                      int s1, int reverse, float zo_p,
                                      uint64_t zo_seed, uint64_t zo_offset,
                                      int sd, const Len *__restrict__ lengths,
                                      const T *__restrict__ xg,
                                      const T *__restrict__ hg,
                                      const T *__restrict__ bhh,
                                      const T *__restrict__ ckc,
                                      const T *__restrict__ c0,
                                      const T *__restrict__ hprev, T *seg,
                                      T *__restrict__ rh) {
  const int GH = cell_gates(Kind) * H, slots = cell_saved_slots(Kind);
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
       i < (int64_t)B * H; i += (int64_t)gridDim.x * blockDim.x) {
    const int b = (int)(i / H), j = (int)(i % H);
    const int len = rnn_len(lengths, b, Tn);
    T *svRow = seg + (int64_t)b * (K + 1) * slots * H;
    if (Kind == CellLstm && s0 < len)
      svRow[4 * H + j] = s0 > 0 ? ckc[(int64_t)b * H + j]
                                : (c0 ? c0[(int64_t)b * H + j] : T(0));
    const int send = min(s1, len);
    for (int s = s0; s < send; ++s) {
      const int64_t r = (int64_t)b * K + (s - s0);
      const T *xr = xg + r * GH, *hr = hg + r * GH;
      T *sv = svRow + (int64_t)(s - s0 + 1) * slots * H;
      if (Kind == CellLstm) {
        T cn, hn;
        const T cp = (sv - slots * H)[4 * H + j];
        lstm_unit(xr, hr, bhh, H, j, cp, cn, hn, sv);
        if (zo_p > 0.0f &&
            zoneout_keep_prev(lstm_zoneout_key(zo_seed, sd), zo_offset,
                lstm_zoneout_counter(sd, rnn_time_index(s, len, reverse != 0),
                                     b, j, B, Tn, H),
                zo_p))
          sv[4 * H + j] = cp;
      } else if (Kind == CellGru) {
        gru_unit(xr, hr, bhh, H, j, hprev[r * H + j], sv);
      } else if (Kind == CellGruCho) {
        T rg, zg;
        rh[r * H + j] = gru_cho_gates(xr, hr, bhh, H, j, hprev[r * H + j], rg, zg);
        sv[j] = rg;
        sv[H + j] = zg;
      } else {
        rnn_unit(xr, hr, bhh, j, Kind == CellRnnRelu, sv, H);
      }
    }
  }
}

/// Cho's GRU in a segment: h~ from hrh = (r*h) W_hh[2H:3H]^T, all slots.
template <typename T, typename Len>
__global__ void rnn_ckpt_cho_update_kernel(int B, int Tn, int H, int K, int s0,
                                           int s1,
                                           const Len *__restrict__ lengths,
                                           const T *__restrict__ xg,
                                           const T *__restrict__ hrh,
                                           const T *__restrict__ bhh,
                                           const T *__restrict__ hprev,
                                           T *seg) {
  const int GH = 3 * H, slots = 3;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
       i < (int64_t)B * K * H; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / H;
    const int j = (int)(i % H), b = (int)(r / K), q = (int)(r % K);
    const int s = s0 + q;
    if (s >= s1 || s >= rnn_len(lengths, b, Tn))
      continue;
    T *sv = seg + ((int64_t)b * (K + 1) + q + 1) * slots * H;
    gru_cho_update(xg + r * GH, hrh[r * H + j], bhh, H, j, hprev[r * H + j],
                   sv[j], sv[H + j], sv);
  }
}

/// dx rows of a segment (step 5): dx[b, t] += src[b*K + q] for its valid
/// steps.
template <typename T, typename Len>
__global__ void rnn_ckpt_scatter_dx_kernel(int B, int Tn, int K, int s0,
                                           int s1, int reverse, int64_t inSize,
                                           const Len *__restrict__ lengths,
                                           const T *__restrict__ src,
                                           T *__restrict__ dx) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
       i < (int64_t)B * K * inSize; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / inSize, e = i % inSize;
    const int b = (int)(r / K), q = (int)(r % K), s = s0 + q;
    const int len = rnn_len(lengths, b, Tn);
    if (s >= s1 || s >= len)
      continue;
    const int t = rnn_time_index(s, len, reverse != 0);
    dx[((int64_t)b * Tn + t) * inSize + e] += src[i];
  }
}

/// Segment length K of the checkpointed backward (the CPU's
/// max(1, min(every, T))).
inline int64_t rnn_ckpt_segment(int64_t Tn, int64_t every) {
  const int64_t k = every < Tn ? every : Tn;
  return k < 1 ? 1 : k;
}

/// Layout of launch_rnn_backward_ckpt's scratch: the two layer-input
/// adjoints [2, B*T, D*H], the carried dh / dc [B, H], then the segment's
/// buffers (B*K adjoint rows), gates [B, K+1, slots*H], recurrent
/// projection hg [B*K, G*H], Cho's hrh [B*K, H] and the gathered input xs
/// [B*K, max layer input] (also dx's segment rows).
struct RnnCkptLayout {
  char *din, *dh, *dc, *dxg, *dhg, *hprev, *rh, *seg, *hg, *hrh, *xs;
};

inline RnnCkptLayout rnn_ckpt_carve(RnnScratch &a, int cell, int64_t B,
                                    int64_t Tn, int64_t I, int64_t H,
                                    int64_t L, int64_t D, int64_t every,
                                    int64_t elem) {
  const int64_t K = rnn_ckpt_segment(Tn, every), M = B * K;
  const int64_t GH = cell_gates(cell) * H, DH = D * H;
  const int64_t inMax = L > 1 && DH > I ? DH : I;
  RnnCkptLayout c;
  c.din = a.take(2 * B * Tn * DH * elem);
  c.dh = a.take(B * H * elem);
  c.dc = a.take(cell == CellLstm ? B * H * elem : 0);
  rnn_carve_bwd_buffers(a, cell, M, H, elem, &c.dxg, &c.dhg, &c.hprev, &c.rh);
  c.seg = a.take(B * (K + 1) * cell_saved_slots(cell) * H * elem);
  c.hg = a.take(M * GH * elem);
  c.hrh = a.take(cell == CellGruCho ? M * H * elem : 0);
  c.xs = a.take(M * inMax * elem);
  return c;
}

/// Device scratch bytes of launch_rnn_backward_ckpt.
inline uint64_t rnn_backward_ckpt_scratch_bytes(int cell, int64_t B,
                                                int64_t Tn, int64_t I,
                                                int64_t H, int64_t L,
                                                int64_t D, int64_t every,
                                                int64_t elem) {
  RnnScratch a(nullptr);
  rnn_ckpt_carve(a, cell, B, Tn, I, H, L, D, every, elem);
  return a.bytes();
}

/// The binomial schedule's device state of one layer and direction (the
/// LSTM only; other cells carry h, which the reserve keeps): `snapshots`
/// cell-state slots snaps [snapshots, B, H] and the working state cur
/// [B, H]. Rows in batch order (the CPU sorts them by length).
template <typename T> struct RnnRevolveState {
  int64_t snapshots = 0;
  T *snaps = nullptr, *cur = nullptr;
};

/// launch_rnn_backward_revolve's scratch: rnn_ckpt_carve's with one-step
/// segments, then the LSTM's RnnRevolveState (reused by every layer and
/// direction).
template <typename T>
inline RnnRevolveState<T> rnn_revolve_carve(RnnScratch &a, int cell, int64_t B,
                                            int64_t H, int64_t snapshots,
                                            int64_t elem) {
  RnnRevolveState<T> rv;
  if (cell != CellLstm)
    return rv;
  rv.snapshots = snapshots;
  rv.snaps = a.take<T>(snapshots * B * H, elem);
  rv.cur = a.take<T>(B * H, elem);
  return rv;
}

/// Device scratch bytes of launch_rnn_backward_revolve.
inline uint64_t rnn_backward_revolve_scratch_bytes(int cell, int64_t B,
                                                   int64_t Tn, int64_t I,
                                                   int64_t H, int64_t L,
                                                   int64_t D, int64_t snapshots,
                                                   int64_t elem) {
  RnnScratch a(nullptr);
  rnn_ckpt_carve(a, cell, B, Tn, I, H, L, D, 1, elem);
  rnn_revolve_carve<char>(a, cell, B, H, snapshots, elem);
  return a.bytes();
}

/// One forward step of the LSTM's c recursion for the binomial schedule
/// (the CPU's RevolveOps::advance), thread per (row b, unit j): c[b, j]
/// becomes the cell state entering scan step s + 1 from xg / hg of step s
/// ([B, 4H], gathered one row per sequence). Rows past their length keep
/// their (unused) state; a zoned-out unit keeps c_{t-1} as the forward did.
template <typename T, typename Len>
__global__ void rnn_revolve_advance_kernel(int B, int Tn, int H, int s,
                                           int reverse, float zo_p,
                                           uint64_t zo_seed, uint64_t zo_offset,
                                           int sd, const Len *__restrict__ lengths,
                                           const T *__restrict__ xg,
                                           const T *__restrict__ hg,
                                           const T *__restrict__ bhh,
                                           T *__restrict__ c) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
       i < (int64_t)B * H; i += (int64_t)gridDim.x * blockDim.x) {
    const int b = (int)(i / H), j = (int)(i % H);
    const int len = rnn_len(lengths, b, Tn);
    if (s >= len)
      continue;
    T cn, hn;
    lstm_unit(xg + (int64_t)b * 4 * H, hg + (int64_t)b * 4 * H, bhh, H, j,
              c[i], cn, hn, (T *)nullptr);
    if (!(zo_p > 0.0f &&
          zoneout_keep_prev(lstm_zoneout_key(zo_seed, sd), zo_offset,
                            lstm_zoneout_counter(sd, rnn_time_index(s, len, reverse != 0), b,
                                j, B, Tn, H),
                            zo_p)))
      c[i] = cn;
  }
}

/// The state operations of a RevolveCursor on an RnnRevolveState, enqueued
/// on the stream (the CPU's RevolveOps). advance(s) recomputes step s's
/// xg and hg for every row with the segment's buffers (xs, hprev, dxg, hg;
/// free between segments) and keeps c only. The first error sticks in
/// `err` and turns the later operations into no-ops.
template <typename T, typename Len> struct RnnRevolveOps {
  cublasHandle_t blas;
  int64_t B, Tn, inSize, H, DH, d;
  const Len *lengths;
  const T *in, *wih, *whh, *bih, *bhh, *y, *h0, *c0;
  T *xs, *hprev, *xg, *hg;
  const RnnRevolveState<T> &rv;
  const RnnZoneout &zo;
  int sd;
  cudaStream_t stream;
  cudaError_t err = cudaSuccess;

  void reset() {
    if (err == cudaSuccess)
      err = c0 ? cudaMemcpyAsync(rv.cur, c0, sizeof(T) * B * H,
                                 cudaMemcpyDeviceToDevice, stream)
               : cudaMemsetAsync(rv.cur, 0, sizeof(T) * B * H, stream);
  }
  void load(int64_t slot) {
    if (err == cudaSuccess)
      err = cudaMemcpyAsync(rv.cur, rv.snaps + slot * B * H, sizeof(T) * B * H,
                            cudaMemcpyDeviceToDevice, stream);
  }
  void store(int64_t slot) {
    if (err == cudaSuccess)
      err = cudaMemcpyAsync(rv.snaps + slot * B * H, rv.cur, sizeof(T) * B * H,
                            cudaMemcpyDeviceToDevice, stream);
  }
  void advance(int64_t st) {
    if (err != cudaSuccess)
      return;
    const int64_t GH = 4 * H;
    const int s = (int)st;
    rnn_ckpt_gather_kernel<T, Len>
        <<<grid_for(B * (inSize + H), 256), 256, 0, stream>>>(
            (int)B, (int)Tn, (int)H, 1, s, s + 1, (int)d, inSize, DH, d * H,
            lengths, in, y, h0, xs, hprev, nullptr);
    if ((err = cudaGetLastError()) != cudaSuccess)
      return;
    if (bih) {
      rnn_bias_rows_kernel<T><<<grid_for(B * GH, 256), 256, 0, stream>>>(
          B, GH, bih, xg);
      if ((err = cudaGetLastError()) != cudaSuccess)
        return;
    }
    if ((err = gemm_rowmajor<T>(blas, false, true, B, GH, inSize, T(1), xs,
                                inSize, wih, inSize, bih ? T(1) : T(0), xg,
                                GH)) != cudaSuccess ||
        (err = gemm_rowmajor<T>(blas, false, true, B, GH, H, T(1), hprev, H,
                                whh, H, T(0), hg, GH)) != cudaSuccess)
      return;
    rnn_revolve_advance_kernel<T, Len>
        <<<grid_for(B * H, 128), 128, 0, stream>>>(
            (int)B, (int)Tn, (int)H, s, (int)d, (float)zo.p, zo.seed,
            zo.offset, sd, lengths, xg, hg, bhh, rv.cur);
    err = cudaGetLastError();
  }
};

/// One layer and direction of the checkpointed backward (the CPU's
/// layerBackwardCkpt): segments of K scan steps, last first. Segments
/// cover [0, T) (the host does not know the longest length; a segment past
/// every length does no work). With `rv` (the binomial schedule, K = 1,
/// LSTM) the cell state entering each step comes from a RevolveCursor over
/// rv's snapshots instead of ckc; `advanced` (may be null) accumulates the
/// forward steps it recomputed.
template <typename T, typename Len, int Kind>
inline cudaError_t rnn_layer_backward_ckpt(
    cublasHandle_t blas, int64_t B, int64_t Tn, int64_t inSize, int64_t H,
    int64_t D, int64_t d, int64_t K, const Len *lengths, const T *in,
    const T *wih, const T *whh, const T *bih, const T *bhh, const T *y,
    const T *h0, const T *c0, const T *ckc, const T *dy, const T *dhn,
    const T *dcn, T *dx, T *dh0, T *dc0, T *dwih, T *dwhh, T *dbih, T *dbhh,
    const RnnCkptLayout &c, cudaStream_t stream,
    const RnnZoneout &zo = RnnZoneout(), int sd = 0,
    const RnnRevolveState<T> *rv = nullptr, int64_t *advanced = nullptr) {
  const float zp = Kind == CellLstm ? (float)zo.p : 0.0f;
  const int64_t GH = cell_gates(Kind) * H, DH = D * H, M = B * K;
  const bool cho = Kind == CellGruCho;
  const int Bi = (int)B, Ti = (int)Tn, Hi = (int)H, Ki = (int)K, rev = (int)d;
  RnnBwdBuffers<T> w;
  w.dxg = reinterpret_cast<T *>(c.dxg);
  w.dhg = (Kind == CellGru || cho) ? reinterpret_cast<T *>(c.dhg) : w.dxg;
  w.hprev = reinterpret_cast<T *>(c.hprev);
  w.rh = reinterpret_cast<T *>(c.rh);
  T *seg = reinterpret_cast<T *>(c.seg), *hg = reinterpret_cast<T *>(c.hg);
  T *hrh = reinterpret_cast<T *>(c.hrh), *xs = reinterpret_cast<T *>(c.xs);
  T *dhs = reinterpret_cast<T *>(c.dh), *dcs = reinterpret_cast<T *>(c.dc);
  const int64_t nseg = (Tn + K - 1) / K;
  cudaError_t e;
  // The binomial schedule: the cursor's positions live on the host.
  const bool revolve = Kind == CellLstm && rv && rv->cur;
  std::vector<int64_t> pos(revolve ? (size_t)rv->snapshots + 1 : 1);
  RnnRevolveState<T> noRv;
  RnnRevolveOps<T, Len> ops{blas, B, Tn, inSize, H, DH, d, lengths, in, wih,
                            whh, bih, bhh, y, h0, c0, xs, w.hprev, w.dxg, hg,
                            revolve ? *rv : noRv, zo, sd, stream};
  RevolveCursor cursor(revolve ? rv->snapshots : 0, pos.data());
  for (int64_t m = nseg - 1; m >= 0; --m) {
    const int s0 = (int)(m * K), s1 = (int)(m * K + K < Tn ? m * K + K : Tn);
    if (revolve) {
      cursor.seek(s0, ops);
      if (ops.err != cudaSuccess)
        return ops.err;
    }
    // 1. Gather the segment's inputs and previous states.
    rnn_ckpt_gather_kernel<T, Len>
        <<<grid_for(M * (inSize + H), 256), 256, 0, stream>>>(
            Bi, Ti, Hi, Ki, s0, s1, rev, inSize, DH, d * H, lengths, in, y,
            h0, xs, w.hprev, cho ? w.rh : nullptr);
    if ((e = cudaGetLastError()) != cudaSuccess)
      return e;
    // 2. xg (in dxg) = xs W_ih^T + b_ih, hg = hprev W_hh^T (Cho: r, z).
    if (bih) {
      rnn_bias_rows_kernel<T><<<grid_for(M * GH, 256), 256, 0, stream>>>(
          M, GH, bih, w.dxg);
      if ((e = cudaGetLastError()) != cudaSuccess)
        return e;
    }
    if ((e = gemm_rowmajor<T>(blas, false, true, M, GH, inSize, T(1), xs, inSize,
                         wih, inSize, bih ? T(1) : T(0), w.dxg, GH)) !=
        cudaSuccess)
      return e;
    if ((e = gemm_rowmajor<T>(blas, false, true, M, cho ? 2 * H : GH, H, T(1),
                         w.hprev, H, whh, H, T(0), hg, GH)) != cudaSuccess)
      return e;
    // 3. The gates of every step of the segment.
    rnn_ckpt_gates_kernel<T, Len, Kind>
        <<<grid_for(B * H, 128), 128, 0, stream>>>(
            Bi, Ti, Hi, Ki, s0, s1, rev, zp, zo.seed, zo.offset, sd, lengths,
            w.dxg, hg, bhh,
            s0 == 0 ? nullptr
            : revolve ? rv->cur
            : ckc     ? ckc + (m - 1) * B * H
                      : nullptr,
            c0, w.hprev, seg, cho ? w.rh : nullptr);
    if ((e = cudaGetLastError()) != cudaSuccess)
      return e;
    if (cho) {
      if ((e = gemm_rowmajor<T>(blas, false, true, M, H, H, T(1), w.rh, H,
                           whh + 2 * H * H, H, T(0), hrh, H)) != cudaSuccess)
        return e;
      rnn_ckpt_cho_update_kernel<T, Len>
          <<<grid_for(M * H, 256), 256, 0, stream>>>(
              Bi, Ti, Hi, Ki, s0, s1, lengths, w.dxg, hrh, bhh, w.hprev, seg);
      if ((e = cudaGetLastError()) != cudaSuccess)
        return e;
    }
    // 4. The reverse scan of the segment (dh / dc carried in scratch).
    const bool first = m == nseg - 1, last = m == 0;
    if ((e = launch_rnn_scan_backward<T, Len, Kind, true>(
             Bi, Ti, Hi, rev, (int)D, rev, lengths, s0, s1, Ki, whh, seg, y,
             h0, c0, dy, first ? dhn : dhs, first ? dcn : dcs,
             last ? dh0 : dhs, last ? dc0 : dcs, w, stream, zo, sd)) !=
        cudaSuccess)
      return e;
    // 5. Weight gradients over the segment's rows; dx through xs.
    if ((e = rnn_layer_weight_grads<T, Kind>(blas, M, inSize, H, w, xs, wih,
                                             nullptr, dwih, dwhh, dbih, dbhh,
                                             stream)) != cudaSuccess)
      return e;
    if (dx) {
      if ((e = gemm_rowmajor<T>(blas, false, false, M, inSize, GH, T(1), w.dxg, GH,
                           wih, inSize, T(0), xs, inSize)) != cudaSuccess)
        return e;
      rnn_ckpt_scatter_dx_kernel<T, Len>
          <<<grid_for(M * inSize, 256), 256, 0, stream>>>(
              Bi, Ti, Ki, s0, s1, rev, inSize, lengths, xs, dx);
      if ((e = cudaGetLastError()) != cudaSuccess)
        return e;
    }
  }
  if (nseg == 0) {
    // T = 0: the adjoints pass straight through.
    for (int pass = 0; pass < (Kind == CellLstm ? 2 : 1); ++pass) {
      T *dst = pass ? dc0 : dh0;
      const T *src = pass ? dcn : dhn;
      if (!dst || B == 0)
        continue;
      e = src ? cudaMemcpyAsync(dst, src, sizeof(T) * B * H,
                                cudaMemcpyDeviceToDevice, stream)
              : cudaMemsetAsync(dst, 0, sizeof(T) * B * H, stream);
      if (e != cudaSuccess)
        return e;
    }
  }
  if (advanced)
    *advanced += cursor.advanced();
  return cudaSuccess;
}

/// The checkpointed and the binomial backwards of the whole stack (every
/// >= 1 xor snapshots >= 1): rnn_layer_backward_ckpt per layer, last
/// first, and direction.
template <typename T, typename Len, int Kind>
inline cudaError_t rnn_backward_ckpt_impl(
    cublasHandle_t blas, int64_t B, int64_t Tn, int64_t I, int64_t H,
    int64_t L, int64_t D, int has_bias, const T *x, const T *const *weights,
    const T *h0, const T *c0, const Len *lengths, const T *reserve,
    const T *dy, const T *dhn, const T *dcn, T *dx, T *dh0, T *dc0,
    T *const *dweights, int64_t every, int64_t snapshots, int64_t *advanced,
    char *scratch, cudaStream_t stream, const RnnZoneout &zo) {
  if (!rnn_stack_args_ok<T, Len>(Kind, B, Tn, I, H, L, D, has_bias, x,
                                 weights) ||
      !rnn_zoneout_ok(Kind, zo.p) || !scratch || (every < 1) == (snapshots < 1) ||
      (B * Tn > 0 && !reserve))
    return cudaErrorInvalidValue;
  cudaError_t e = cublas_error(cublasSetStream(blas, stream));
  if (e != cudaSuccess)
    return e;
  const int per = rnn_weights_per_cell(has_bias != 0);
  const int64_t GH = cell_gates(Kind) * H, DH = D * H, BT = B * Tn;
  const bool revolve = snapshots > 0;
  const int64_t K = revolve ? 1 : rnn_ckpt_segment(Tn, every);
  const int64_t nck = revolve ? 0 : rnn_ckpt_count(Tn, every);
  if (B * K * (I > DH ? I : DH) > INT_MAX || B * K * GH > INT_MAX)
    return cudaErrorInvalidValue;
  RnnScratch a(scratch);
  const RnnCkptLayout c =
      rnn_ckpt_carve(a, Kind, B, Tn, I, H, L, D, revolve ? 1 : every, sizeof(T));
  const RnnRevolveState<T> rv =
      revolve ? rnn_revolve_carve<T>(a, Kind, B, H, snapshots, sizeof(T))
              : RnnRevolveState<T>();
  T *din = reinterpret_cast<T *>(c.din);
  const T *outs = reserve, *ck = reserve && !revolve ? reserve + L * BT * DH : nullptr;
  if ((e = rnn_zero_stack_grads<T>(dweights, dx, L, D, per, I, DH, H, GH, BT,
                                   stream)) != cudaSuccess)
    return e;
  for (int64_t l = L - 1; l >= 0; --l) {
    const T *dyl = l == L - 1 ? dy : din + ((l + 1) % 2) * BT * DH;
    T *dxl = l == 0 ? dx : din + (l % 2) * BT * DH;
    const T *in = l == 0 ? x : outs + (l - 1) * BT * DH;
    const int64_t inSize = l == 0 ? I : DH;
    if (l > 0 && BT > 0 &&
        (e = cudaMemsetAsync(dxl, 0, sizeof(T) * BT * DH, stream)) !=
            cudaSuccess)
      return e;
    for (int64_t d = 0; d < D; ++d) {
      const int64_t sd = l * D + d, st = sd * B * H;
      const T *const *wp = weights + sd * per;
      T *const *dwp = dweights ? dweights + sd * per : nullptr;
      if ((e = rnn_layer_backward_ckpt<T, Len, Kind>(
               blas, B, Tn, inSize, H, D, d, K, lengths, in, wp[0], wp[1],
               has_bias ? wp[2] : nullptr, has_bias ? wp[3] : nullptr,
               outs ? outs + l * BT * DH : nullptr, h0 ? h0 + st : nullptr,
               c0 ? c0 + st : nullptr,
               Kind == CellLstm && ck ? ck + sd * nck * B * H : nullptr, dyl,
               dhn ? dhn + st : nullptr, dcn ? dcn + st : nullptr, dxl,
               dh0 ? dh0 + st : nullptr, dc0 ? dc0 + st : nullptr,
               dwp ? dwp[0] : nullptr, dwp ? dwp[1] : nullptr,
               (dwp && has_bias) ? dwp[2] : nullptr,
               (dwp && has_bias) ? dwp[3] : nullptr, c, stream, zo, (int)sd,
               revolve ? &rv : nullptr, advanced)) != cudaSuccess)
        return e;
    }
  }
  return cudaSuccess;
}

/// nncc_rnn_backward_ckpt: BPTT of the stack from
/// launch_rnn_forward_train_ckpt's reserve (layer outputs, then the LSTM's
/// checkpoints), recomputing each segment's gates (zoneout masks
/// regenerated). Outputs and zoneout arguments as
/// launch_rnn_backward_reserved. Scratch: rnn_backward_ckpt_scratch_bytes.
template <typename T, typename Len, int Kind,
          std::enable_if_t<!is_bf16_v<T>, int> = 0>
inline cudaError_t launch_rnn_backward_ckpt(
    cublasHandle_t blas, int64_t B, int64_t Tn, int64_t I, int64_t H,
    int64_t L, int64_t D, int has_bias, const T *x, const T *const *weights,
    const T *h0, const T *c0, const Len *lengths, const T *reserve,
    const T *dy, const T *dhn, const T *dcn, T *dx, T *dh0, T *dc0,
    T *const *dweights, int64_t every, char *scratch, cudaStream_t stream,
    double zoneout = 0, uint64_t seed = 0, uint64_t offset = 0) {
  if (every < 1)
    return cudaErrorInvalidValue;
  const RnnZoneout zo{zoneout, seed, offset};
  return rnn_backward_ckpt_impl<T, Len, Kind>(
      blas, B, Tn, I, H, L, D, has_bias, x, weights, h0, c0, lengths, reserve,
      dy, dhn, dcn, dx, dh0, dc0, dweights, every, 0, nullptr, scratch, stream,
      zo);
}

/// nncc_rnn_backward_revolve: BPTT of the stack from
/// launch_rnn_forward_train_revolve's reserve (the layer outputs only), one
/// scan step at a time; the LSTM's cell state entering each step is served
/// by the binomial schedule (Revolve.h) from at most `snapshots` (>= 1)
/// device snapshots, recomputed forward steps enqueued on the stream.
/// `recomputed_steps` (may be null) receives the forward steps advanced:
/// L*D*revolve_forward_steps(T, snapshots) for the LSTM, 0 otherwise (the
/// host schedules over T, not the longest length, which it does not know).
/// Outputs and zoneout arguments as launch_rnn_backward_reserved. Scratch:
/// rnn_backward_revolve_scratch_bytes.
template <typename T, typename Len, int Kind,
          std::enable_if_t<!is_bf16_v<T>, int> = 0>
inline cudaError_t launch_rnn_backward_revolve(
    cublasHandle_t blas, int64_t B, int64_t Tn, int64_t I, int64_t H,
    int64_t L, int64_t D, int has_bias, const T *x, const T *const *weights,
    const T *h0, const T *c0, const Len *lengths, const T *reserve,
    const T *dy, const T *dhn, const T *dcn, T *dx, T *dh0, T *dc0,
    T *const *dweights, int64_t snapshots, int64_t *recomputed_steps,
    char *scratch, cudaStream_t stream, double zoneout = 0, uint64_t seed = 0,
    uint64_t offset = 0) {
  if (recomputed_steps)
    *recomputed_steps = 0;
  if (snapshots < 1)
    return cudaErrorInvalidValue;
  const RnnZoneout zo{zoneout, seed, offset};
  return rnn_backward_ckpt_impl<T, Len, Kind>(
      blas, B, Tn, I, H, L, D, has_bias, x, weights, h0, c0, lengths, reserve,
      dy, dhn, dcn, dx, dh0, dc0, dweights, 0, snapshots, recomputed_steps,
      scratch, stream, zo);
}

//===----------------------------------------------------------------------===//
// One cell step (nnk.recurrent_cell_grad)
//===----------------------------------------------------------------------===//

/// Forward gates of one step (the CPU's cellBackward first loop), thread
/// per (b, j): saved slots into sv [B, slots*H]; Cho: r, z into slots 0, 1
/// and rh = r*h (h~ after the second product).
template <typename T, int Kind>
__global__ void rnn_cell_gates_kernel(int B, int H, const T *__restrict__ xproj,
                                      const T *__restrict__ h,
                                      const T *__restrict__ c,
                                      const T *__restrict__ hg,
                                      const T *__restrict__ bhh, T *sv,
                                      T *__restrict__ rh) {
  const int GH = cell_gates(Kind) * H, slots = cell_saved_slots(Kind);
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
       e < (int64_t)B * H; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t b = e / H;
    const int j = (int)(e % H);
    const T *xr = xproj + b * GH, *hr = hg + b * GH;
    T *s = sv + b * slots * H;
    if (Kind == CellLstm) {
      T cn, hn;
      lstm_unit(xr, hr, bhh, H, j, c ? c[e] : T(0), cn, hn, s);
    } else if (Kind == CellGru) {
      gru_unit(xr, hr, bhh, H, j, h[e], s);
    } else if (Kind == CellGruCho) {
      T r, z;
      rh[e] = gru_cho_gates(xr, hr, bhh, H, j, h[e], r, z);
      s[j] = r;
      s[H + j] = z;
    } else {
      rnn_unit(xr, hr, bhh, j, Kind == CellRnnRelu, s, H);
    }
  }
}

/// Cho: h~ from hrh, all three slots.
template <typename T>
__global__ void rnn_cell_cho_update_kernel(int B, int H,
                                           const T *__restrict__ xproj,
                                           const T *__restrict__ h,
                                           const T *__restrict__ hrh,
                                           const T *__restrict__ bhh, T *sv) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
       e < (int64_t)B * H; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t b = e / H;
    const int j = (int)(e % H);
    T *s = sv + b * 3 * H;
    gru_cho_update(xproj + b * 3 * H, hrh[e], bhh, H, j, h[e], s[j], s[H + j],
                   s);
  }
}

/// Unit derivatives of one step (the CPU's second loop): dxproj, dhg, the
/// direct path, dc (LSTM); Cho: dah into `dah`.
template <typename T, int Kind>
__global__ void rnn_cell_backward1_kernel(
    int B, int H, const T *__restrict__ sv, const T *__restrict__ h,
    const T *__restrict__ c, const T *__restrict__ dh_out,
    const T *__restrict__ dc_out, T *__restrict__ dxproj, T *__restrict__ dhg,
    T *__restrict__ direct, T *__restrict__ dc, T *__restrict__ dah) {
  const int GH = cell_gates(Kind) * H, slots = cell_saved_slots(Kind);
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
       e < (int64_t)B * H; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t b = e / H;
    const int j = (int)(e % H);
    const T *s = sv + b * slots * H;
    T *dxr = dxproj + b * GH, *dhr = dhg + b * GH;
    const T d = dh_out ? dh_out[e] : T(0);
    if (Kind == CellLstm) {
      T dcv = dc_out ? dc_out[e] : T(0);
      lstm_unit_backward(s, H, j, c ? c[e] : T(0), d, dcv, dxr);
      dc[e] = dcv;
      for (int gi = 0; gi < 4; ++gi)
        dhr[gi * H + j] = dxr[gi * H + j];
      direct[e] = T(0);
    } else if (Kind == CellGru) {
      direct[e] = gru_unit_backward(s, H, j, h[e], d, dxr, dhr);
    } else if (Kind == CellGruCho) {
      T a;
      direct[e] = gru_cho_backward1(s, H, j, h[e], d, dxr, dhr, a);
      dah[e] = a;
    } else {
      const T da = rnn_unit_backward(s[j], Kind == CellRnnRelu, d);
      dxr[j] = da;
      dhr[j] = da;
      direct[e] = T(0);
    }
  }
}

/// Cho phase 2 of one step: the r gate from drh = dah W_hh[2H:3H].
template <typename T>
__global__ void rnn_cell_cho_backward2_kernel(int B, int H,
                                              const T *__restrict__ sv,
                                              const T *__restrict__ h,
                                              const T *__restrict__ drh,
                                              T *__restrict__ dxproj,
                                              T *__restrict__ dhg,
                                              T *__restrict__ direct) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
       e < (int64_t)B * H; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t b = e / H;
    const int j = (int)(e % H);
    direct[e] += gru_cho_backward2(sv + b * 3 * H, H, j, h[e], drh[e],
                                   dxproj + b * 3 * H, dhg + b * 3 * H);
  }
}

/// Scratch of launch_rnn_cell_backward: hg [B, G*H], saved [B, slots*H],
/// rh, hrh (Cho) [B, H], dhg [B, G*H], direct [B, H], dah and drh (Cho).
inline void rnn_cell_backward_carve(RnnScratch &a, int cell, int64_t B,
                                    int64_t H, int64_t elem, char **p) {
  const int64_t GH = cell_gates(cell) * H;
  const bool cho = cell == CellGruCho;
  p[0] = a.take(B * GH * elem);
  p[1] = a.take(B * cell_saved_slots(cell) * H * elem);
  p[2] = a.take(cho ? B * H * elem : 0);
  p[3] = a.take(cho ? B * H * elem : 0);
  p[4] = a.take(B * GH * elem);
  p[5] = a.take(B * H * elem);
  p[6] = a.take(cho ? B * H * elem : 0);
  p[7] = a.take(cho ? B * H * elem : 0);
}

/// bf16 (launch_rnn_cell_backward<bf16_t>): fp32 copies of the operands,
/// after the f32 launcher's own scratch. dW_hh and db_hh are widened too
/// (the launcher accumulates into them).
struct RnnCellBf16Copies {
  float *xproj, *h, *c, *whh, *bhh, *dh_out, *dc_out, *dxproj, *dh, *dc, *dwhh, *dbhh;
};
inline RnnCellBf16Copies rnn_cell_bf16_carve(RnnScratch &a, int cell, int64_t B, int64_t H) {
  const int64_t GH = cell_gates(cell) * H;
  RnnCellBf16Copies f;
  f.xproj = a.take<float>(B * GH, 4);
  f.h = a.take<float>(B * H, 4);
  f.c = a.take<float>(B * H, 4);
  f.whh = a.take<float>(GH * H, 4);
  f.bhh = a.take<float>(GH, 4);
  f.dh_out = a.take<float>(B * H, 4);
  f.dc_out = a.take<float>(B * H, 4);
  f.dxproj = a.take<float>(B * GH, 4);
  f.dh = a.take<float>(B * H, 4);
  f.dc = a.take<float>(B * H, 4);
  f.dwhh = a.take<float>(GH * H, 4);
  f.dbhh = a.take<float>(GH, 4);
  return f;
}

/// Device scratch bytes of launch_rnn_cell_backward at element size `elem`
/// (sizeof(real_t); 2: the f32 launcher's scratch and the fp32 copies).
inline uint64_t rnn_cell_backward_scratch_bytes(int cell, int64_t B,
                                                int64_t H, int64_t elem) {
  RnnScratch a(nullptr);
  char *p[8];
  rnn_cell_backward_carve(a, cell, B, H, acc_elem_bytes(elem), p);
  if (elem == 2)
    (void)rnn_cell_bf16_carve(a, cell, B, H);
  return a.bytes();
}

/// nncc_rnn_cell_backward: the backward of one step of a cell for B rows,
/// gates recomputed from xproj [B, G*H] (= x W_ih^T + b_ih), h and c
/// (LSTM; null = 0). dh_out / dc_out may be null (zero). Overwrites dxproj
/// [B, G*H], dh [B, H] and dc (LSTM, required); ACCUMULATES dw_hh += and
/// db_hh += (each may be null; the caller zeroes them, as on the CPU).
/// Scratch: rnn_cell_backward_scratch_bytes.
template <typename T, int Kind, std::enable_if_t<!is_bf16_v<T>, int> = 0>
inline cudaError_t launch_rnn_cell_backward(
    cublasHandle_t blas, int64_t B, int64_t H, const T *xproj, const T *h,
    const T *c, const T *whh, const T *bhh, const T *dh_out, const T *dc_out,
    T *dxproj, T *dh, T *dc, T *dwhh, T *dbhh, char *scratch,
    cudaStream_t stream) {
  if (B < 0 || H <= 0 || B > INT_MAX || H * 4 > INT_MAX || !whh || !scratch ||
      (B > 0 && (!xproj || !h || !dxproj || !dh)) ||
      (Kind == CellLstm && B > 0 && !dc))
    return cudaErrorInvalidValue;
  if (B == 0)
    return cudaSuccess;
  cudaError_t e = cublas_error(cublasSetStream(blas, stream));
  if (e != cudaSuccess)
    return e;
  const int64_t GH = cell_gates(Kind) * H, Gc = Kind == CellGruCho ? 2 * H : GH;
  const bool cho = Kind == CellGruCho;
  RnnScratch a(scratch);
  char *p[8];
  rnn_cell_backward_carve(a, Kind, B, H, sizeof(T), p);
  T *hg = reinterpret_cast<T *>(p[0]), *sv = reinterpret_cast<T *>(p[1]);
  T *rh = reinterpret_cast<T *>(p[2]), *hrh = reinterpret_cast<T *>(p[3]);
  T *dhg = reinterpret_cast<T *>(p[4]), *direct = reinterpret_cast<T *>(p[5]);
  T *dah = reinterpret_cast<T *>(p[6]), *drh = reinterpret_cast<T *>(p[7]);
  const unsigned grid = grid_for(B * H, 256);
  // Forward gates.
  if ((e = gemm_rowmajor<T>(blas, false, true, B, Gc, H, T(1), h, H, whh, H, T(0),
                       hg, GH)) != cudaSuccess)
    return e;
  rnn_cell_gates_kernel<T, Kind><<<grid, 256, 0, stream>>>(
      (int)B, (int)H, xproj, h, c, hg, bhh, sv, rh);
  if ((e = cudaGetLastError()) != cudaSuccess)
    return e;
  if (cho) {
    if ((e = gemm_rowmajor<T>(blas, false, true, B, H, H, T(1), rh, H,
                         whh + 2 * H * H, H, T(0), hrh, H)) != cudaSuccess)
      return e;
    rnn_cell_cho_update_kernel<T><<<grid, 256, 0, stream>>>((int)B, (int)H,
                                                             xproj, h, hrh,
                                                             bhh, sv);
    if ((e = cudaGetLastError()) != cudaSuccess)
      return e;
  }
  // Unit derivatives.
  rnn_cell_backward1_kernel<T, Kind><<<grid, 256, 0, stream>>>(
      (int)B, (int)H, sv, h, c, dh_out, dc_out, dxproj, dhg, direct, dc, dah);
  if ((e = cudaGetLastError()) != cudaSuccess)
    return e;
  if (cho) {
    if ((e = gemm_rowmajor<T>(blas, false, false, B, H, H, T(1), dah, H,
                         whh + 2 * H * H, H, T(0), drh, H)) != cudaSuccess)
      return e;
    rnn_cell_cho_backward2_kernel<T><<<grid, 256, 0, stream>>>(
        (int)B, (int)H, sv, h, drh, dxproj, dhg, direct);
    if ((e = cudaGetLastError()) != cudaSuccess)
      return e;
  }
  // Weight gradients (accumulated), then dh = direct + dhg W_hh.
  if (dwhh) {
    if (cho) {
      if ((e = gemm_rowmajor<T>(blas, true, false, 2 * H, H, B, T(1), dhg, GH, h, H,
                           T(1), dwhh, H)) != cudaSuccess)
        return e;
      if ((e = gemm_rowmajor<T>(blas, true, false, H, H, B, T(1), dhg + 2 * H, GH,
                           rh, H, T(1), dwhh + 2 * H * H, H)) != cudaSuccess)
        return e;
    } else if ((e = gemm_rowmajor<T>(blas, true, false, GH, H, B, T(1), dhg, GH, h,
                                H, T(1), dwhh, H)) != cudaSuccess)
      return e;
  }
  if ((e = rnn_col_sum_add<T>(B, GH, dhg, GH, dbhh, (T *)nullptr, stream)) !=
      cudaSuccess)
    return e;
  if ((e = cudaMemcpyAsync(dh, direct, sizeof(T) * B * H,
                           cudaMemcpyDeviceToDevice, stream)) != cudaSuccess)
    return e;
  return gemm_rowmajor<T>(blas, false, false, B, H, Gc, T(1), dhg, GH, whh, H, T(1),
                     dh, H);
}

//===----------------------------------------------------------------------===//
// bf16 stacks: the fp32 launchers on widened copies
//===----------------------------------------------------------------------===//
//
// T = bf16_t (bf16 x, weights, states, reserve and gradients): the inputs
// are widened into fp32 copies in the scratch, the f32 launcher runs on
// them (its own scratch carved first) and every output is rounded to bf16
// once. Between the forward and the backward the reserve is the arena's
// bf16 one, so the backward reads the saved layer outputs and gates
// rounded; everything else is the f32 computation (fp32 states, fp32
// gradient sums). The fp32 copies (x, weights, states and reserve, and in
// the backward their gradients) are scratch, outside the memory plan as
// every CUDA scratch is. The scratch of a launch at element size `elem`
// (sizeof(real_t)): rnn_stack_forward_scratch_bytes and
// rnn_stack_backward_scratch_bytes.

/// The stack launches a bf16 launch runs in fp32.
enum class RnnStackLaunch {
  Forward,
  Backward,
  BackwardReserved,
  BackwardCkpt,
  BackwardRevolve
};

/// Scratch bytes of the f32 / f64 stack launch `launch` (element size
/// elem; every >= 1: the checkpointed forward / backward; snapshots >= 1:
/// the binomial schedule's).
inline uint64_t rnn_stack_launch_scratch_bytes(RnnStackLaunch launch, int cell,
                                               int64_t B, int64_t Tn, int64_t I,
                                               int64_t H, int64_t L, int64_t D,
                                               int64_t every, int64_t snapshots,
                                               int64_t elem) {
  switch (launch) {
  case RnnStackLaunch::Forward:
    return rnn_forward_train_scratch_bytes(cell, B, Tn, H, elem);
  case RnnStackLaunch::Backward:
    return rnn_backward_scratch_bytes(cell, B, Tn, H, L, D, elem);
  case RnnStackLaunch::BackwardReserved:
    return rnn_backward_reserved_scratch_bytes(cell, B, Tn, H, L, D, elem);
  case RnnStackLaunch::BackwardRevolve:
    return rnn_backward_revolve_scratch_bytes(cell, B, Tn, I, H, L, D, snapshots, elem);
  case RnnStackLaunch::BackwardCkpt:
    break;
  }
  return rnn_backward_ckpt_scratch_bytes(cell, B, Tn, I, H, L, D, every, elem);
}

/// Elements of the reserve the training forward writes and the backward
/// reads: the layer outputs [L, B*T, D*H], then the gates
/// [L*D, B, T, slots*H] or, with every >= 1, the LSTM's cell-state
/// checkpoints [L*D, rnn_ckpt_count, B, H]; with snapshots >= 1 (the
/// binomial schedule) nothing more.
inline int64_t rnn_reserve_elems(int cell, int64_t B, int64_t Tn, int64_t H,
                                 int64_t L, int64_t D, int64_t every,
                                 int64_t snapshots) {
  const int64_t outs = L * B * Tn * D * H;
  if (snapshots > 0)
    return outs;
  if (every > 0)
    return outs + (cell == CellLstm ? L * D * rnn_ckpt_count(Tn, every) * B * H : 0);
  return outs * (1 + cell_saved_slots(cell));
}

/// The scratch of a bf16 stack launch: the f32 launch's scratch, then the
/// fp32 copies of its operands (x, the weight table end to end, h0, c0, the
/// reserve; the forward's y, h_n, c_n; the backward's dy, dh_n, dc_n, dx,
/// dh0, dc0 and weight gradients). With a null base it only counts.
struct RnnBf16Layout {
  char *f32 = nullptr;
  float *x = nullptr, *w = nullptr, *h0 = nullptr, *c0 = nullptr, *reserve = nullptr;
  float *y = nullptr, *hn = nullptr, *cn = nullptr;
  float *dy = nullptr, *dhn = nullptr, *dcn = nullptr, *dx = nullptr, *dh0 = nullptr,
        *dc0 = nullptr, *dw = nullptr;
  int64_t reserveElems = 0;
};

inline RnnBf16Layout rnn_bf16_carve(RnnScratch &a, RnnStackLaunch launch, int cell,
                                    int64_t B, int64_t Tn, int64_t I, int64_t H,
                                    int64_t L, int64_t D, int has_bias,
                                    int64_t every, int64_t snapshots) {
  const int per = rnn_weights_per_cell(has_bias != 0);
  const int64_t GH = cell_gates(cell) * H, DH = D * H, BT = B * Tn;
  const int64_t states = L * D * B * H;
  int64_t weights = 0;
  for (int64_t i = 0; i < L * D * per; ++i)
    weights += rnn_stack_weight_elems(i, D, per, I, DH, H, GH);
  const int64_t f = sizeof(float);
  RnnBf16Layout c;
  c.f32 = a.take((int64_t)rnn_stack_launch_scratch_bytes(launch, cell, B, Tn, I, H, L,
                                                         D, every, snapshots, f));
  c.x = a.take<float>(BT * I, f);
  c.w = a.take<float>(weights, f);
  c.h0 = a.take<float>(states, f);
  c.c0 = a.take<float>(states, f);
  if (launch != RnnStackLaunch::Backward) {
    c.reserveElems = rnn_reserve_elems(cell, B, Tn, H, L, D, every, snapshots);
    c.reserve = a.take<float>(c.reserveElems, f);
  }
  if (launch == RnnStackLaunch::Forward) {
    c.y = a.take<float>(BT * DH, f);
    c.hn = a.take<float>(states, f);
    c.cn = a.take<float>(states, f);
  } else {
    c.dy = a.take<float>(BT * DH, f);
    c.dhn = a.take<float>(states, f);
    c.dcn = a.take<float>(states, f);
    c.dx = a.take<float>(BT * I, f);
    c.dh0 = a.take<float>(states, f);
    c.dc0 = a.take<float>(states, f);
    c.dw = a.take<float>(weights, f);
  }
  return c;
}

/// Device scratch bytes of the stack's training forward at element size
/// elem (launch_rnn_forward_train; with every >= 1 _ckpt, with snapshots
/// >= 1 _revolve); bf16 adds the fp32 copies (rnn_bf16_carve). The
/// generated code's scratch expression.
inline uint64_t rnn_stack_forward_scratch_bytes(int cell, int64_t B, int64_t Tn,
                                                int64_t I, int64_t H, int64_t L,
                                                int64_t D, int has_bias,
                                                int64_t every, int64_t snapshots,
                                                int64_t elem) {
  if (elem != (int64_t)sizeof(bf16_t))
    return rnn_forward_train_scratch_bytes(cell, B, Tn, H, elem);
  RnnScratch a(nullptr);
  rnn_bf16_carve(a, RnnStackLaunch::Forward, cell, B, Tn, I, H, L, D, has_bias, every,
                 snapshots);
  return a.bytes();
}

/// Device scratch bytes of the stack's backward at element size elem:
/// launch_rnn_backward_ckpt with every >= 1, launch_rnn_backward_revolve
/// with snapshots >= 1, else launch_rnn_backward_reserved with `reserved`,
/// else launch_rnn_backward; bf16 adds the fp32 copies. The generated
/// code's scratch expression.
inline uint64_t rnn_stack_backward_scratch_bytes(int cell, int64_t B, int64_t Tn,
                                                 int64_t I, int64_t H, int64_t L,
                                                 int64_t D, int has_bias,
                                                 int64_t every, int64_t snapshots,
                                                 int reserved, int64_t elem) {
  const RnnStackLaunch launch = every > 0       ? RnnStackLaunch::BackwardCkpt
                                : snapshots > 0 ? RnnStackLaunch::BackwardRevolve
                                : reserved      ? RnnStackLaunch::BackwardReserved
                                                : RnnStackLaunch::Backward;
  if (elem != (int64_t)sizeof(bf16_t))
    return rnn_stack_launch_scratch_bytes(launch, cell, B, Tn, I, H, L, D, every,
                                          snapshots, elem);
  RnnScratch a(nullptr);
  rnn_bf16_carve(a, launch, cell, B, Tn, I, H, L, D, has_bias, every, snapshots);
  return a.bytes();
}

/// Widens x, the weight table (into c.w end to end; w32 gets its fp32
/// table), h0 and c0.
inline cudaError_t rnn_bf16_widen_stack(const RnnBf16Layout &c, int cell, int64_t B,
                                        int64_t Tn, int64_t I, int64_t H, int64_t L,
                                        int64_t D, int has_bias, const bf16_t *x,
                                        const bf16_t *const *weights,
                                        const bf16_t *h0, const bf16_t *c0,
                                        std::vector<const float *> &w32,
                                        cudaStream_t stream) {
  const int per = rnn_weights_per_cell(has_bias != 0);
  const int64_t GH = cell_gates(cell) * H, DH = D * H, states = L * D * B * H;
  cudaError_t e;
  if ((e = convert_elements(B * Tn * I, x, c.x, stream)) != cudaSuccess ||
      (e = convert_elements(states, h0, c.h0, stream)) != cudaSuccess ||
      (e = convert_elements(states, c0, c.c0, stream)) != cudaSuccess)
    return e;
  w32.assign((size_t)(L * D * per), nullptr);
  float *at = c.w;
  for (int64_t i = 0; i < L * D * per; ++i) {
    const int64_t n = rnn_stack_weight_elems(i, D, per, I, DH, H, GH);
    if ((e = convert_elements(n, weights[i], at, stream)) != cudaSuccess)
      return e;
    w32[(size_t)i] = at;
    at += n;
  }
  return cudaSuccess;
}

/// The bf16 training forward (launch_rnn_forward_train; with every >= 1
/// launch_rnn_forward_train_ckpt, with snapshots >= 1 _revolve): the f32
/// launch on fp32 copies; y, h_n, c_n and the reserve rounded once.
template <typename Len, int Kind>
inline cudaError_t rnn_bf16_forward_train(
    cublasHandle_t blas, int64_t B, int64_t Tn, int64_t I, int64_t H, int64_t L,
    int64_t D, int has_bias, const bf16_t *x, const bf16_t *const *weights,
    const bf16_t *h0, const bf16_t *c0, const Len *lengths, bf16_t *y, bf16_t *hn,
    bf16_t *cn, bf16_t *reserve, int64_t every, int64_t snapshots, char *scratch,
    cudaStream_t stream, double zoneout, uint64_t seed, uint64_t offset) {
  if (!rnn_stack_args_ok<bf16_t, Len>(Kind, B, Tn, I, H, L, D, has_bias, x, weights) ||
      !scratch || !y || (B * Tn > 0 && !reserve))
    return cudaErrorInvalidValue;
  RnnScratch a(scratch);
  const RnnBf16Layout c = rnn_bf16_carve(a, RnnStackLaunch::Forward, Kind, B, Tn, I, H, L,
                                         D, has_bias, every, snapshots);
  std::vector<const float *> w32;
  cudaError_t e = rnn_bf16_widen_stack(c, Kind, B, Tn, I, H, L, D, has_bias, x, weights,
                                       h0, c0, w32, stream);
  if (e != cudaSuccess)
    return e;
  float *h0f = h0 ? c.h0 : nullptr, *c0f = c0 ? c.c0 : nullptr;
  float *hnf = hn ? c.hn : nullptr, *cnf = cn ? c.cn : nullptr;
  e = every > 0       ? launch_rnn_forward_train_ckpt<float, Len, Kind>(
                            blas, B, Tn, I, H, L, D, has_bias, c.x, w32.data(), h0f, c0f,
                            lengths, c.y, hnf, cnf, c.reserve, every, c.f32, stream,
                            zoneout, seed, offset)
      : snapshots > 0 ? launch_rnn_forward_train_revolve<float, Len, Kind>(
                            blas, B, Tn, I, H, L, D, has_bias, c.x, w32.data(), h0f, c0f,
                            lengths, c.y, hnf, cnf, c.reserve, c.f32, stream, zoneout,
                            seed, offset)
                      : launch_rnn_forward_train<float, Len, Kind>(
                            blas, B, Tn, I, H, L, D, has_bias, c.x, w32.data(), h0f, c0f,
                            lengths, c.y, hnf, cnf, c.reserve, c.f32, stream, zoneout,
                            seed, offset);
  const int64_t states = L * D * B * H;
  if (e != cudaSuccess ||
      (e = convert_elements(B * Tn * D * H, (const float *)c.y, y, stream)) != cudaSuccess ||
      (e = convert_elements(states, (const float *)hnf, hn, stream)) != cudaSuccess ||
      (e = convert_elements(states, (const float *)cnf, cn, stream)) != cudaSuccess)
    return e;
  return convert_elements(c.reserveElems, (const float *)c.reserve, reserve, stream);
}

/// The bf16 backwards (launch_rnn_backward, _reserved, _ckpt, _revolve as
/// `launch`): the f32 launch on fp32 copies (the reserve widened); dx, dh0,
/// dc0 and the weight gradients rounded once.
template <typename Len, int Kind>
inline cudaError_t rnn_bf16_backward(
    RnnStackLaunch launch, cublasHandle_t blas, int64_t B, int64_t Tn, int64_t I,
    int64_t H, int64_t L, int64_t D, int has_bias, const bf16_t *x,
    const bf16_t *const *weights, const bf16_t *h0, const bf16_t *c0,
    const Len *lengths, const bf16_t *reserve, const bf16_t *dy, const bf16_t *dhn,
    const bf16_t *dcn, bf16_t *dx, bf16_t *dh0, bf16_t *dc0, bf16_t *const *dweights,
    int64_t every, int64_t snapshots, int64_t *recomputed_steps, char *scratch,
    cudaStream_t stream, double zoneout, uint64_t seed, uint64_t offset) {
  if (!rnn_stack_args_ok<bf16_t, Len>(Kind, B, Tn, I, H, L, D, has_bias, x, weights) ||
      !scratch || (launch != RnnStackLaunch::Backward && B * Tn > 0 && !reserve))
    return cudaErrorInvalidValue;
  RnnScratch a(scratch);
  const RnnBf16Layout c =
      rnn_bf16_carve(a, launch, Kind, B, Tn, I, H, L, D, has_bias, every, snapshots);
  std::vector<const float *> w32;
  cudaError_t e = rnn_bf16_widen_stack(c, Kind, B, Tn, I, H, L, D, has_bias, x, weights,
                                       h0, c0, w32, stream);
  const int64_t states = L * D * B * H, BT = B * Tn;
  if (e != cudaSuccess ||
      (e = convert_elements(c.reserveElems, reserve, c.reserve, stream)) != cudaSuccess ||
      (e = convert_elements(BT * D * H, dy, c.dy, stream)) != cudaSuccess ||
      (e = convert_elements(states, dhn, c.dhn, stream)) != cudaSuccess ||
      (e = convert_elements(states, dcn, c.dcn, stream)) != cudaSuccess)
    return e;
  // fp32 gradient outputs where the caller wants the bf16 ones.
  const int per = rnn_weights_per_cell(has_bias != 0);
  const int64_t GH = cell_gates(Kind) * H, DH = D * H;
  std::vector<float *> dw32((size_t)(L * D * per), nullptr);
  float *at = c.dw;
  for (int64_t i = 0; i < L * D * per; ++i) {
    if (dweights && dweights[i])
      dw32[(size_t)i] = at;
    at += rnn_stack_weight_elems(i, D, per, I, DH, H, GH);
  }
  const float *h0f = h0 ? c.h0 : nullptr, *c0f = c0 ? c.c0 : nullptr;
  const float *dyf = dy ? c.dy : nullptr, *dhnf = dhn ? c.dhn : nullptr,
              *dcnf = dcn ? c.dcn : nullptr;
  float *dxf = dx ? c.dx : nullptr, *dh0f = dh0 ? c.dh0 : nullptr,
        *dc0f = dc0 ? c.dc0 : nullptr;
  float *const *dwf = dweights ? dw32.data() : nullptr;
  switch (launch) {
  case RnnStackLaunch::Backward:
    e = launch_rnn_backward<float, Len, Kind>(
        blas, B, Tn, I, H, L, D, has_bias, c.x, w32.data(), h0f, c0f, lengths, dyf, dhnf,
        dcnf, dxf, dh0f, dc0f, dwf, c.f32, stream, zoneout, seed, offset);
    break;
  case RnnStackLaunch::BackwardReserved:
    e = launch_rnn_backward_reserved<float, Len, Kind>(
        blas, B, Tn, I, H, L, D, has_bias, c.x, w32.data(), h0f, c0f, lengths, c.reserve,
        dyf, dhnf, dcnf, dxf, dh0f, dc0f, dwf, c.f32, stream, zoneout, seed, offset);
    break;
  case RnnStackLaunch::BackwardCkpt:
    e = launch_rnn_backward_ckpt<float, Len, Kind>(
        blas, B, Tn, I, H, L, D, has_bias, c.x, w32.data(), h0f, c0f, lengths, c.reserve,
        dyf, dhnf, dcnf, dxf, dh0f, dc0f, dwf, every, c.f32, stream, zoneout, seed, offset);
    break;
  case RnnStackLaunch::BackwardRevolve:
    e = launch_rnn_backward_revolve<float, Len, Kind>(
        blas, B, Tn, I, H, L, D, has_bias, c.x, w32.data(), h0f, c0f, lengths, c.reserve,
        dyf, dhnf, dcnf, dxf, dh0f, dc0f, dwf, snapshots, recomputed_steps, c.f32, stream,
        zoneout, seed, offset);
    break;
  case RnnStackLaunch::Forward:
    e = cudaErrorInvalidValue;
    break;
  }
  if (e != cudaSuccess ||
      (e = convert_elements(BT * I, (const float *)dxf, dx, stream)) != cudaSuccess ||
      (e = convert_elements(states, (const float *)dh0f, dh0, stream)) != cudaSuccess ||
      (e = convert_elements(states, (const float *)dc0f, dc0, stream)) != cudaSuccess)
    return e;
  for (int64_t i = 0; dweights && i < L * D * per; ++i)
    if ((e = convert_elements(rnn_stack_weight_elems(i, D, per, I, DH, H, GH),
                         (const float *)dw32[(size_t)i], dweights[i], stream)) !=
        cudaSuccess)
      return e;
  return cudaSuccess;
}

// The bf16 overloads of the stack launchers (same operands as the f32 /
// f64 templates above; scratch: rnn_stack_forward_scratch_bytes /
// rnn_stack_backward_scratch_bytes at elem = sizeof(bf16_t)).

template <typename T, typename Len, int Kind, std::enable_if_t<is_bf16_v<T>, int> = 0>
inline cudaError_t launch_rnn_forward_train(
    cublasHandle_t blas, int64_t B, int64_t Tn, int64_t I, int64_t H, int64_t L,
    int64_t D, int has_bias, const T *x, const T *const *weights, const T *h0,
    const T *c0, const Len *lengths, T *y, T *hn, T *cn, T *reserve, char *scratch,
    cudaStream_t stream, double zoneout = 0, uint64_t seed = 0, uint64_t offset = 0) {
  return rnn_bf16_forward_train<Len, Kind>(blas, B, Tn, I, H, L, D, has_bias, x, weights,
                                           h0, c0, lengths, y, hn, cn, reserve, 0, 0, scratch,
                                           stream, zoneout, seed, offset);
}

template <typename T, typename Len, int Kind, std::enable_if_t<is_bf16_v<T>, int> = 0>
inline cudaError_t launch_rnn_forward_train_ckpt(
    cublasHandle_t blas, int64_t B, int64_t Tn, int64_t I, int64_t H, int64_t L,
    int64_t D, int has_bias, const T *x, const T *const *weights, const T *h0,
    const T *c0, const Len *lengths, T *y, T *hn, T *cn, T *reserve, int64_t every,
    char *scratch, cudaStream_t stream, double zoneout = 0, uint64_t seed = 0,
    uint64_t offset = 0) {
  if (every < 1)
    return cudaErrorInvalidValue;
  return rnn_bf16_forward_train<Len, Kind>(blas, B, Tn, I, H, L, D, has_bias, x, weights,
                                           h0, c0, lengths, y, hn, cn, reserve, every, 0,
                                           scratch, stream, zoneout, seed, offset);
}

template <typename T, typename Len, int Kind, std::enable_if_t<is_bf16_v<T>, int> = 0>
inline cudaError_t launch_rnn_forward_train_revolve(
    cublasHandle_t blas, int64_t B, int64_t Tn, int64_t I, int64_t H, int64_t L,
    int64_t D, int has_bias, const T *x, const T *const *weights, const T *h0,
    const T *c0, const Len *lengths, T *y, T *hn, T *cn, T *reserve, char *scratch,
    cudaStream_t stream, double zoneout = 0, uint64_t seed = 0, uint64_t offset = 0) {
  return rnn_bf16_forward_train<Len, Kind>(blas, B, Tn, I, H, L, D, has_bias, x, weights,
                                           h0, c0, lengths, y, hn, cn, reserve, 0,
                                           /*snapshots (any >= 1: outputs only)=*/1,
                                           scratch, stream, zoneout, seed, offset);
}

template <typename T, typename Len, int Kind, std::enable_if_t<is_bf16_v<T>, int> = 0>
inline cudaError_t launch_rnn_backward_reserved(
    cublasHandle_t blas, int64_t B, int64_t Tn, int64_t I, int64_t H, int64_t L,
    int64_t D, int has_bias, const T *x, const T *const *weights, const T *h0,
    const T *c0, const Len *lengths, const T *reserve, const T *dy, const T *dhn,
    const T *dcn, T *dx, T *dh0, T *dc0, T *const *dweights, char *scratch,
    cudaStream_t stream, double zoneout = 0, uint64_t seed = 0, uint64_t offset = 0) {
  return rnn_bf16_backward<Len, Kind>(RnnStackLaunch::BackwardReserved, blas, B, Tn, I, H,
                                      L, D, has_bias, x, weights, h0, c0, lengths, reserve,
                                      dy, dhn, dcn, dx, dh0, dc0, dweights, 0, 0, nullptr,
                                      scratch, stream, zoneout, seed, offset);
}

template <typename T, typename Len, int Kind, std::enable_if_t<is_bf16_v<T>, int> = 0>
inline cudaError_t launch_rnn_backward(
    cublasHandle_t blas, int64_t B, int64_t Tn, int64_t I, int64_t H, int64_t L,
    int64_t D, int has_bias, const T *x, const T *const *weights, const T *h0,
    const T *c0, const Len *lengths, const T *dy, const T *dhn, const T *dcn, T *dx,
    T *dh0, T *dc0, T *const *dweights, char *scratch, cudaStream_t stream,
    double zoneout = 0, uint64_t seed = 0, uint64_t offset = 0) {
  return rnn_bf16_backward<Len, Kind>(RnnStackLaunch::Backward, blas, B, Tn, I, H, L, D,
                                      has_bias, x, weights, h0, c0, lengths, nullptr, dy,
                                      dhn, dcn, dx, dh0, dc0, dweights, 0, 0, nullptr,
                                      scratch, stream, zoneout, seed, offset);
}

template <typename T, typename Len, int Kind, std::enable_if_t<is_bf16_v<T>, int> = 0>
inline cudaError_t launch_rnn_backward_ckpt(
    cublasHandle_t blas, int64_t B, int64_t Tn, int64_t I, int64_t H, int64_t L,
    int64_t D, int has_bias, const T *x, const T *const *weights, const T *h0,
    const T *c0, const Len *lengths, const T *reserve, const T *dy, const T *dhn,
    const T *dcn, T *dx, T *dh0, T *dc0, T *const *dweights, int64_t every,
    char *scratch, cudaStream_t stream, double zoneout = 0, uint64_t seed = 0,
    uint64_t offset = 0) {
  if (every < 1)
    return cudaErrorInvalidValue;
  return rnn_bf16_backward<Len, Kind>(RnnStackLaunch::BackwardCkpt, blas, B, Tn, I, H, L,
                                      D, has_bias, x, weights, h0, c0, lengths, reserve, dy,
                                      dhn, dcn, dx, dh0, dc0, dweights, every, 0, nullptr,
                                      scratch, stream, zoneout, seed, offset);
}

template <typename T, typename Len, int Kind, std::enable_if_t<is_bf16_v<T>, int> = 0>
inline cudaError_t launch_rnn_backward_revolve(
    cublasHandle_t blas, int64_t B, int64_t Tn, int64_t I, int64_t H, int64_t L,
    int64_t D, int has_bias, const T *x, const T *const *weights, const T *h0,
    const T *c0, const Len *lengths, const T *reserve, const T *dy, const T *dhn,
    const T *dcn, T *dx, T *dh0, T *dc0, T *const *dweights, int64_t snapshots,
    int64_t *recomputed_steps, char *scratch, cudaStream_t stream, double zoneout = 0,
    uint64_t seed = 0, uint64_t offset = 0) {
  if (recomputed_steps)
    *recomputed_steps = 0;
  if (snapshots < 1)
    return cudaErrorInvalidValue;
  return rnn_bf16_backward<Len, Kind>(RnnStackLaunch::BackwardRevolve, blas, B, Tn, I, H,
                                      L, D, has_bias, x, weights, h0, c0, lengths, reserve,
                                      dy, dhn, dcn, dx, dh0, dc0, dweights, 0, snapshots,
                                      recomputed_steps, scratch, stream, zoneout, seed,
                                      offset);
}

/// bf16 launch_rnn_cell_backward (one step of a cell, the ODE-RNN's): the
/// f32 launcher on fp32 copies in the scratch (rnn_cell_bf16_carve), every
/// output rounded once; dW_hh and db_hh accumulate in fp32 as on f32.
template <typename T, int Kind, std::enable_if_t<is_bf16_v<T>, int> = 0>
inline cudaError_t launch_rnn_cell_backward(
    cublasHandle_t blas, int64_t B, int64_t H, const T *xproj, const T *h,
    const T *c, const T *whh, const T *bhh, const T *dh_out, const T *dc_out,
    T *dxproj, T *dh, T *dc, T *dwhh, T *dbhh, char *scratch,
    cudaStream_t stream) {
  if (B < 0 || H <= 0 || !whh || !scratch)
    return cudaErrorInvalidValue;
  RnnScratch a(scratch);
  char *p[8];
  rnn_cell_backward_carve(a, Kind, B, H, 4, p); // the f32 launcher's own
  const RnnCellBf16Copies f = rnn_cell_bf16_carve(a, Kind, B, H);
  const int64_t GH = cell_gates(Kind) * H, BH = B * H;
  // Widened where given; null stays null.
  auto wide = [](const void *src, float *copy) { return src ? copy : nullptr; };
  cudaError_t e;
  if ((e = convert_elements(B * GH, xproj, f.xproj, stream)) ||
      (e = convert_elements(BH, h, f.h, stream)) || (e = convert_elements(BH, c, f.c, stream)) ||
      (e = convert_elements(GH * H, whh, f.whh, stream)) ||
      (e = convert_elements(GH, bhh, f.bhh, stream)) ||
      (e = convert_elements(BH, dh_out, f.dh_out, stream)) ||
      (e = convert_elements(BH, dc_out, f.dc_out, stream)) ||
      (e = convert_elements(GH * H, (const T *)dwhh, f.dwhh, stream)) ||
      (e = convert_elements(GH, (const T *)dbhh, f.dbhh, stream)))
    return e;
  if ((e = launch_rnn_cell_backward<float, Kind>(
           blas, B, H, wide(xproj, f.xproj), wide(h, f.h), wide(c, f.c), f.whh, wide(bhh, f.bhh),
           wide(dh_out, f.dh_out), wide(dc_out, f.dc_out), wide(dxproj, f.dxproj),
           wide(dh, f.dh), wide(dc, f.dc), wide(dwhh, f.dwhh), wide(dbhh, f.dbhh), scratch,
           stream)))
    return e;
  if ((e = convert_elements(B * GH, (const float *)f.dxproj, dxproj, stream)) ||
      (e = convert_elements(BH, (const float *)f.dh, dh, stream)) ||
      (e = convert_elements(BH, (const float *)f.dc, dc, stream)) ||
      (e = convert_elements(GH * H, (const float *)f.dwhh, dwhh, stream)) ||
      (e = convert_elements(GH, (const float *)f.dbhh, dbhh, stream)))
    return e;
  return cudaSuccess;
}

} // namespace cuda
} // namespace kernels
} // namespace nncc

#endif // NNCC_KERNELS_CUDA_RECURRENTBACKWARD_CUH
