/*
 * GradKernels.h - straightforward CPU backward kernels of the generated
 * training code (nnk.*_grad ops, docs/autodiff.md "Execution"). Header-only
 * templates over the float type, included by generated C++ that has
 * gradients. Correct first; the fused backward kernels of libnncc_kernels
 * replace them as they land.
 */
#ifndef NNCC_RUNTIME_GRADKERNELS_H
#define NNCC_RUNTIME_GRADKERNELS_H

#include "nncc/Kernels/AttentionMath.h"
#include "nncc/Kernels/RecurrentMath.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace nncc {
namespace grad {

/* out[i] = dy[i with the masked dims dropped] (/ count when mean). */
template <typename T>
void broadcast_axes(int rank, const int64_t *shape, uint32_t mask, int mean, const T *dy,
                    T *out) {
  int64_t n = 1, m = 1;
  for (int d = 0; d < rank; ++d) {
    n *= shape[d];
    if (!(mask >> d & 1))
      m *= shape[d];
  }
  double scale = mean && m ? (double)m / (double)n : 1.0;
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t j = 0;
    for (int d = 0; d < rank; ++d)
      if (!(mask >> d & 1))
        j = j * shape[d] + idx[d];
    out[i] = (T)(dy[j] * scale);
    for (int d = rank - 1; d >= 0; --d) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
}

template <typename T, typename I>
int embedding_grad(int64_t n, int64_t V, int64_t E, const I *idx, const T *dy, T *out) {
  std::memset(out, 0, sizeof(T) * V * E);
  for (int64_t p = 0; p < n; ++p) {
    int64_t r = (int64_t)idx[p];
    if (r < 0 || r >= V)
      return 3; /* NNCC_K_ERANGE */
    for (int64_t e = 0; e < E; ++e)
      out[r * E + e] += dy[p * E + e];
  }
  return 0;
}

template <typename T>
void layer_norm_grad(int64_t rows, int64_t N, const T *x, const T *dy, const T *g,
                     double eps, T *dx, T *dg) {
  if (dg)
    std::memset(dg, 0, sizeof(T) * N);
  for (int64_t r = 0; r < rows; ++r) {
    const T *xr = x + r * N, *dyr = dy + r * N;
    double mean = 0, var = 0;
    for (int64_t k = 0; k < N; ++k)
      mean += xr[k];
    mean /= N;
    for (int64_t k = 0; k < N; ++k)
      var += (xr[k] - mean) * (xr[k] - mean);
    var /= N;
    double rstd = 1.0 / std::sqrt(var + eps);
    double s1 = 0, s2 = 0;
    for (int64_t k = 0; k < N; ++k) {
      double xh = (xr[k] - mean) * rstd;
      double gh = dyr[k] * (g ? (double)g[k] : 1.0);
      s1 += gh;
      s2 += gh * xh;
      if (dg)
        dg[k] += (T)(dyr[k] * xh);
    }
    s1 /= N;
    s2 /= N;
    for (int64_t k = 0; k < N; ++k) {
      double xh = (xr[k] - mean) * rstd;
      double gh = dyr[k] * (g ? (double)g[k] : 1.0);
      dx[r * N + k] = (T)(rstd * (gh - s1 - xh * s2));
    }
  }
}

template <typename T> void mse_grad(int64_t n, const T *p, const T *t, const T *dl, T *out) {
  double s = 2.0 * (double)dl[0] / (double)(n ? n : 1);
  for (int64_t i = 0; i < n; ++i)
    out[i] = (T)(s * ((double)p[i] - (double)t[i]));
}

template <typename T, typename I>
void cross_entropy_grad(int64_t n, int64_t C, const T *z, const I *t, int64_t ignore,
                        const T *dl, T *out) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i)
    count += (int64_t)t[i] != ignore;
  double s = count ? (double)dl[0] / (double)count : 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const T *zi = z + i * C;
    T *oi = out + i * C;
    if ((int64_t)t[i] == ignore) {
      for (int64_t c = 0; c < C; ++c)
        oi[c] = 0;
      continue;
    }
    double mx = zi[0], sum = 0;
    for (int64_t c = 1; c < C; ++c)
      mx = zi[c] > mx ? zi[c] : mx;
    for (int64_t c = 0; c < C; ++c)
      sum += std::exp((double)zi[c] - mx);
    for (int64_t c = 0; c < C; ++c)
      oi[c] = (T)(s * (std::exp((double)zi[c] - mx) / sum - (c == (int64_t)t[i] ? 1.0 : 0.0)));
  }
}

template <typename T>
void bce_grad(int64_t rows, int64_t C, const T *z, const T *t, const T *pw, const T *dl,
              T *out) {
  int64_t n = rows * C;
  double s = (double)dl[0] / (double)(n ? n : 1);
  for (int64_t i = 0; i < n; ++i) {
    double w = pw ? (double)pw[i % C] : 1.0, ti = t[i];
    double sig = 1.0 / (1.0 + std::exp(-(double)z[i]));
    out[i] = (T)(s * ((1.0 + (w - 1.0) * ti) * sig - w * ti));
  }
}

/* ---- recurrent stacks (BPTT) ---- */
template <typename T, typename L>
void recurrent_grad(int cell, int64_t B, int64_t Tn, int64_t I0, int64_t H, int64_t Lyr,
                    int64_t D, int has_bias, const T *x, const T *h0, const T *c0,
                    const L *lengths, const T *const *w, const T *dy, const T *dhn,
                    const T *dcn, T *dx, T *dh0, T *dc0, T *const *dw) {
  using namespace nncc::kernels;
  const int G = cell_gates(cell);
  const int64_t GH = G * H, per = has_bias ? 4 : 2;
  const bool lstm = cell == CellLstm;
  auto len = [&](int64_t b) { return lengths ? (int64_t)lengths[b] : Tn; };
  // Forward recompute: layer inputs, states and gate activations.
  std::vector<std::vector<T>> X(Lyr + 1);
  X[0].assign(x, x + B * Tn * I0);
  std::vector<std::vector<T>> Hs(Lyr * D), Cs(Lyr * D), Ac(Lyr * D), Hn(Lyr * D);
  for (int64_t l = 0; l < Lyr; ++l) {
    int64_t In = l == 0 ? I0 : D * H;
    X[l + 1].assign(B * Tn * D * H, T(0));
    for (int64_t d = 0; d < D; ++d) {
      int64_t k = l * D + d;
      const T *wih = w[k * per], *whh = w[k * per + 1];
      const T *bih = has_bias ? w[k * per + 2] : nullptr;
      const T *bhh = has_bias ? w[k * per + 3] : nullptr;
      Hs[k].assign(B * Tn * H, T(0));
      Cs[k].assign(B * Tn * H, T(0));
      Ac[k].assign(B * Tn * GH, T(0));
      Hn[k].assign(B * Tn * H, T(0));
      std::vector<T> h(H), c(H), xg(GH), hg(GH), rh(H);
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t j = 0; j < H; ++j) {
          h[j] = h0 ? h0[(k * B + b) * H + j] : T(0);
          c[j] = (lstm && c0) ? c0[(k * B + b) * H + j] : T(0);
        }
        int64_t lb = len(b);
        for (int64_t s = 0; s < lb; ++s) {
          int64_t t = d ? lb - 1 - s : s;
          const T *xt = X[l].data() + (b * Tn + t) * In;
          for (int64_t gi = 0; gi < GH; ++gi) {
            double a = bih ? bih[gi] : 0, e = 0;
            for (int64_t q = 0; q < In; ++q)
              a += (double)wih[gi * In + q] * xt[q];
            xg[gi] = (T)a;
            if (!(cell == CellGruCho && gi >= 2 * H))
              for (int64_t q = 0; q < H; ++q)
                e += (double)whh[gi * H + q] * h[q];
            hg[gi] = (T)e;
          }
          T *act = Ac[k].data() + (b * Tn + t) * GH;
          T *hnp = Hn[k].data() + (b * Tn + t) * H;
          std::vector<T> hnew(H), cnew(H);
          if (cell == CellGruCho) {
            std::vector<T> r(H), z(H);
            for (int64_t j = 0; j < H; ++j)
              rh[j] = gru_cho_gates(xg.data(), hg.data(), bhh, (int)H, (int)j, h[j], r[j], z[j]);
            for (int64_t j = 0; j < H; ++j) {
              double e = 0;
              for (int64_t q = 0; q < H; ++q)
                e += (double)whh[(2 * H + j) * H + q] * rh[q];
              hnew[j] = gru_cho_update(xg.data(), (T)e, bhh, (int)H, (int)j, h[j], r[j], z[j], act);
            }
          } else {
            for (int64_t j = 0; j < H; ++j) {
              if (cell == CellLstm) {
                lstm_unit(xg.data(), hg.data(), bhh, (int)H, (int)j, c[j], cnew[j], hnew[j], (T *)nullptr);
                T i_ = sigmoid(xg[j] + hg[j] + bias_at(bhh, (int)j));
                T f_ = sigmoid(xg[H + j] + hg[H + j] + bias_at(bhh, (int)(H + j)));
                T g_ = ntanh(xg[2 * H + j] + hg[2 * H + j] + bias_at(bhh, (int)(2 * H + j)));
                T o_ = sigmoid(xg[3 * H + j] + hg[3 * H + j] + bias_at(bhh, (int)(3 * H + j)));
                act[j] = i_; act[H + j] = f_; act[2 * H + j] = g_; act[3 * H + j] = o_;
              } else if (cell == CellGru) {
                T sv[4 * 1];
                (void)sv;
                std::vector<T> tmp(4 * H);
                hnew[j] = gru_unit(xg.data(), hg.data(), bhh, (int)H, (int)j, h[j], tmp.data());
                act[j] = tmp[j]; act[H + j] = tmp[H + j]; act[2 * H + j] = tmp[2 * H + j];
                hnp[j] = tmp[3 * H + j];
              } else {
                hnew[j] = rnn_unit(xg.data(), hg.data(), bhh, (int)j, cell == CellRnnRelu, (T *)nullptr, (int)H);
                act[j] = hnew[j];
              }
            }
          }
          for (int64_t j = 0; j < H; ++j) {
            h[j] = hnew[j];
            if (lstm)
              c[j] = cnew[j];
            Hs[k][(b * Tn + t) * H + j] = h[j];
            Cs[k][(b * Tn + t) * H + j] = c[j];
            X[l + 1][(b * Tn + t) * D * H + d * H + j] = h[j];
          }
        }
      }
    }
  }
  // Backward.
  for (int64_t k = 0; k < Lyr * D * per; ++k) {
    int64_t l = k / per / D, p = k % per;
    int64_t In = l == 0 ? I0 : D * H;
    int64_t sz = p == 0 ? GH * In : p == 1 ? GH * H : GH;
    std::memset(dw[k], 0, sizeof(T) * sz);
  }
  std::vector<T> dY(dy ? std::vector<T>(dy, dy + B * Tn * D * H)
                       : std::vector<T>(B * Tn * D * H, T(0)));
  for (int64_t l = Lyr - 1; l >= 0; --l) {
    int64_t In = l == 0 ? I0 : D * H;
    std::vector<T> dX(B * Tn * In, T(0));
    for (int64_t d = 0; d < D; ++d) {
      int64_t k = l * D + d;
      const T *wih = w[k * per], *whh = w[k * per + 1];
      T *dwih = dw[k * per], *dwhh = dw[k * per + 1];
      T *dbih = has_bias ? dw[k * per + 2] : nullptr, *dbhh = has_bias ? dw[k * per + 3] : nullptr;
      std::vector<double> dh(H), dc(H), dprev(H), dcprev(H), dgx(GH), dgh(GH), drh(H);
      std::vector<T> hprev(H), cprev(H), hin(H);
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t j = 0; j < H; ++j) {
          dh[j] = dhn ? (double)dhn[(k * B + b) * H + j] : 0.0;
          dc[j] = (lstm && dcn) ? (double)dcn[(k * B + b) * H + j] : 0.0;
        }
        int64_t lb = len(b);
        for (int64_t s = lb - 1; s >= 0; --s) {
          int64_t t = d ? lb - 1 - s : s;
          int64_t tp = s == 0 ? -1 : (d ? t + 1 : t - 1);
          for (int64_t j = 0; j < H; ++j) {
            hprev[j] = tp < 0 ? (h0 ? h0[(k * B + b) * H + j] : T(0)) : Hs[k][(b * Tn + tp) * H + j];
            cprev[j] = tp < 0 ? ((lstm && c0) ? c0[(k * B + b) * H + j] : T(0)) : Cs[k][(b * Tn + tp) * H + j];
            dh[j] += dY[(b * Tn + t) * D * H + d * H + j];
          }
          const T *act = Ac[k].data() + (b * Tn + t) * GH;
          const T *hnp = Hn[k].data() + (b * Tn + t) * H;
          std::fill(dprev.begin(), dprev.end(), 0.0);
          for (int64_t j = 0; j < H; ++j) {
            double hj = Hs[k][(b * Tn + t) * H + j];
            if (cell == CellRnnTanh) {
              dgx[j] = dgh[j] = dh[j] * (1 - hj * hj);
            } else if (cell == CellRnnRelu) {
              dgx[j] = dgh[j] = hj > 0 ? dh[j] : 0.0;
            } else if (cell == CellLstm) {
              double i_ = act[j], f_ = act[H + j], g_ = act[2 * H + j], o_ = act[3 * H + j];
              double cj = Cs[k][(b * Tn + t) * H + j], tc = std::tanh(cj);
              double dct = dc[j] + dh[j] * o_ * (1 - tc * tc);
              dgx[j] = dct * g_ * i_ * (1 - i_);
              dgx[H + j] = dct * cprev[j] * f_ * (1 - f_);
              dgx[2 * H + j] = dct * i_ * (1 - g_ * g_);
              dgx[3 * H + j] = dh[j] * tc * o_ * (1 - o_);
              for (int q = 0; q < 4; ++q)
                dgh[q * H + j] = dgx[q * H + j];
              dcprev[j] = dct * f_;
            } else if (cell == CellGru) {
              double r = act[j], z = act[H + j], n = act[2 * H + j], hn = hnp[j];
              double dn = dh[j] * (1 - z), dz = dh[j] * ((double)hprev[j] - n);
              dprev[j] += dh[j] * z;
              double dan = dn * (1 - n * n);
              double dr = dan * hn;
              dgx[j] = dgh[j] = dr * r * (1 - r);
              dgx[H + j] = dgh[H + j] = dz * z * (1 - z);
              dgx[2 * H + j] = dan;
              dgh[2 * H + j] = dan * r;
            } else { /* cho */
              double r = act[j], z = act[H + j], ht = act[2 * H + j];
              double dht = dh[j] * z, dz = dh[j] * (ht - (double)hprev[j]);
              dprev[j] += dh[j] * (1 - z);
              dgx[2 * H + j] = dgh[2 * H + j] = dht * (1 - ht * ht);
              dgx[H + j] = dgh[H + j] = dz * z * (1 - z);
              (void)r;
            }
          }
          if (cell == CellGruCho) {
            for (int64_t q = 0; q < H; ++q) {
              double e = 0;
              for (int64_t j = 0; j < H; ++j)
                e += (double)whh[(2 * H + j) * H + q] * dgh[2 * H + j];
              drh[q] = e;
            }
            for (int64_t j = 0; j < H; ++j) {
              double r = act[j];
              dgx[j] = dgh[j] = drh[j] * hprev[j] * r * (1 - r);
              dprev[j] += drh[j] * r;
            }
          }
          // Input side.
          const T *xt = X[l].data() + (b * Tn + t) * In;
          T *dxt = dX.data() + (b * Tn + t) * In;
          for (int64_t gi = 0; gi < GH; ++gi) {
            double g = dgx[gi];
            if (g == 0)
              continue;
            if (dbih)
              dbih[gi] += (T)g;
            for (int64_t q = 0; q < In; ++q) {
              dwih[gi * In + q] += (T)(g * xt[q]);
              dxt[q] += (T)(g * wih[gi * In + q]);
            }
          }
          // Recurrent side.
          for (int64_t j = 0; j < H; ++j)
            hin[j] = hprev[j];
          for (int64_t gi = 0; gi < GH; ++gi) {
            double g = dgh[gi];
            if (dbhh)
              dbhh[gi] += (T)g;
            bool choN = cell == CellGruCho && gi >= 2 * H;
            for (int64_t q = 0; q < H; ++q) {
              double in = choN ? (double)act[q] * hprev[q] : (double)hin[q];
              dwhh[gi * H + q] += (T)(g * in);
              if (!choN)
                dprev[q] += g * whh[gi * H + q];
            }
          }
          for (int64_t j = 0; j < H; ++j) {
            dh[j] = dprev[j];
            if (lstm)
              dc[j] = dcprev[j];
          }
        }
        for (int64_t j = 0; j < H; ++j) {
          dh0[(k * B + b) * H + j] = (T)dh[j];
          if (dc0)
            dc0[(k * B + b) * H + j] = (T)dc[j];
        }
      }
    }
    dY.assign(dX.begin(), dX.end());
  }
  std::memcpy(dx, dY.data(), sizeof(T) * B * Tn * I0);
}

/* ---- attention cores (dense / dilated): d(packed projection) ---- */
template <typename T>
void attention_grad(int kind, int64_t B, int64_t Tn, int64_t heads, int64_t E, int64_t ld,
                    int64_t kOff, int64_t vOff, const T *qkv, const uint8_t *mask,
                    const T *dout, T *dqkv, int causal, double scale, int window,
                    int dilation, const int64_t *global, int nGlobal) {
  int64_t dh = E / heads;
  if (scale == 0)
    scale = 1.0 / std::sqrt((double)dh);
  std::memset(dqkv, 0, sizeof(T) * B * Tn * ld);
  std::vector<char> isGlobal(Tn, 0);
  for (int g = 0; g < nGlobal; ++g)
    if (global[g] >= 0 && global[g] < Tn)
      isGlobal[global[g]] = 1;
  std::vector<double> p(Tn), dp(Tn);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < Tn; ++i) {
        const T *q = qkv + (b * Tn + i) * ld + h * dh;
        double mx = -INFINITY;
        for (int64_t j = 0; j < Tn; ++j) {
          bool ok = !(mask && mask[b * Tn + j]) && !(causal && j > i);
          if (ok && kind == 1)
            ok = nncc::kernels::dilated_allowed((int)i, (int)j, window, dilation,
                                                isGlobal[i], isGlobal[j]);
          if (!ok) {
            p[j] = -INFINITY;
            continue;
          }
          const T *kk = qkv + (b * Tn + j) * ld + kOff + h * dh;
          double s = 0;
          for (int64_t e = 0; e < dh; ++e)
            s += (double)q[e] * kk[e];
          p[j] = s * scale;
          mx = p[j] > mx ? p[j] : mx;
        }
        if (mx == -INFINITY)
          continue;
        double sum = 0;
        for (int64_t j = 0; j < Tn; ++j) {
          p[j] = p[j] == -INFINITY ? 0.0 : std::exp(p[j] - mx);
          sum += p[j];
        }
        const T *go = dout + (b * Tn + i) * E + h * dh;
        double dot = 0;
        for (int64_t j = 0; j < Tn; ++j) {
          p[j] /= sum;
          if (p[j] == 0) {
            dp[j] = 0;
            continue;
          }
          const T *v = qkv + (b * Tn + j) * ld + vOff + h * dh;
          T *dv = dqkv + (b * Tn + j) * ld + vOff + h * dh;
          double s = 0;
          for (int64_t e = 0; e < dh; ++e) {
            s += (double)go[e] * v[e];
            dv[e] += (T)(p[j] * go[e]);
          }
          dp[j] = s;
          dot += p[j] * s;
        }
        T *dq = dqkv + (b * Tn + i) * ld + h * dh;
        for (int64_t j = 0; j < Tn; ++j) {
          if (p[j] == 0)
            continue;
          double ds = p[j] * (dp[j] - dot) * scale;
          const T *kk = qkv + (b * Tn + j) * ld + kOff + h * dh;
          T *dk = dqkv + (b * Tn + j) * ld + kOff + h * dh;
          for (int64_t e = 0; e < dh; ++e) {
            dq[e] += (T)(ds * kk[e]);
            dk[e] += (T)(ds * q[e]);
          }
        }
      }
}

} // namespace grad
} // namespace nncc

#endif
