"""PyTorch references shared by the kernel, parity and gradient tests, each
written once: attention (masked dense, dilated/Longformer, Reformer LSH
with the kernel's hashes, sort and chunks, a whole LSH attention layer),
the attention-dropout mask, token-masking positions and Gumbel noise
computed independently from Philox-4x32-10 (nncc/Kernels/AttentionMath.h,
TokenMath.h), Cho et al.'s GRU, nncc's
mlp layer and fixed-step ODE solvers."""
import numpy as np
import torch

# --- attention dropout mask (independent Philox-4x32-10 in numpy) ---------
_MASK = np.uint64(0xFFFFFFFF)
_SALT = 0xA77E4D1D0B0E5A17


def _philox_words(blocks, key):
    k0, k1 = np.uint64(key & 0xFFFFFFFF), np.uint64(key >> 32)
    c0, c1 = blocks & _MASK, blocks >> np.uint64(32)
    c2 = np.zeros_like(blocks)
    c3 = np.zeros_like(blocks)
    for r in range(10):
        if r:
            k0 = (k0 + np.uint64(0x9E3779B9)) & _MASK
            k1 = (k1 + np.uint64(0xBB67AE85)) & _MASK
        p0 = np.uint64(0xD2511F53) * c0
        p1 = np.uint64(0xCD9E8D57) * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & _MASK,
                          (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & _MASK)
    return np.stack([c0, c1, c2, c3])


def dropout_multipliers(seed, offset, counters, p):
    """1/(1-p) where weight `counter` is kept, else 0 (float64)."""
    g = np.uint64(offset) + np.asarray(counters, dtype=np.uint64)  # draw g (offset counts draws)
    words = _philox_words(g >> np.uint64(2), seed ^ _SALT)
    w = np.take_along_axis(words, (g & np.uint64(3)).astype(np.int64)[None], 0)[0]
    u = (w >> np.uint64(8)).astype(np.float32) * np.float32(2.0 ** -24)
    return np.where(u >= np.float32(p), 1.0 / (1.0 - p), 0.0)


def dense_dropout(seed, offset, p, B, H, T):
    """Multipliers [B, H, T, T] of dense / dilated attention."""
    return torch.from_numpy(dropout_multipliers(seed, offset, np.arange(B * H * T * T), p)
                            .reshape(B, H, T, T))


def lsh_dropout(seed, offset, p, B, H, R, T):
    """Multipliers [R, B, H, T, T] of LSH attention (round r of counter
    ((((b*H + h)*R + r)*T + t)*T + u))."""
    m = dropout_multipliers(seed, offset, np.arange(B * H * R * T * T), p)
    return torch.from_numpy(m.reshape(B, H, R, T, T).transpose(2, 0, 1, 3, 4).copy())


# --- token masking and Gumbel-max sampling (independent numpy Philox) --------
def mask_stream_bits(seed, offset, count):
    """Elements [0, count) of the kernels' mask stream (seed, offset): draw
    g = offset + i, word g % 4 of Philox block g / 4, stream 0, key = seed
    (runtime/include/nncc/Kernels/RandomMasks.h: `offset` counts draws)."""
    g = np.uint64(offset) + np.arange(count, dtype=np.uint64)
    words = _philox_words(g >> np.uint64(2), seed)
    return np.take_along_axis(words, (g & np.uint64(3)).astype(np.int64)[None], 0)[0]


def mask_positions(rows, n, p, seed, offset=0):
    """nn.mask_tokens' choice: per row of n, the max(1, floor(p n)) positions
    (none at p = 0) with the smallest (key, position), key = bits(seed,
    offset, row*n + t)."""
    k = int(np.floor(p * n + 1e-9))
    if p > 0 and n > 0:
        k = max(1, k)
    keys = mask_stream_bits(seed, offset, rows * n).reshape(rows, n)
    mask = np.zeros((rows, n), bool)
    for r in range(rows):
        mask[r, np.lexsort((np.arange(n), keys[r]))[:k]] = True
    return mask


def gumbel_noise(rows, V, seed, offset=0):
    """nn.sample's noise [rows, V]: -log(-log(u)), u = ((bits >> 8) + 1/2) 2^-24."""
    b = mask_stream_bits(seed, offset, rows * V).reshape(rows, V)
    u = ((b >> np.uint64(8)).astype(np.float64) + 0.5) / 2.0 ** 24
    return -np.log(-np.log(u))


def gumbel_sample(logits, seed, offset=0, rows_mask=None):
    """nn.sample: argmax (first maximum) of logits [rows, V] + gumbel_noise;
    0 where rows_mask is False."""
    rows, V = logits.shape
    out = (np.asarray(logits, np.float64) + gumbel_noise(rows, V, seed, offset)).argmax(1)
    out = out.astype(np.int32)
    if rows_mask is not None:
        out[~np.asarray(rows_mask, bool)] = 0
    return out


# --- torch references -------------------------------------------------------
def heads(t, H):
    B, T, E = t.shape
    return t.reshape(B, T, H, E // H).transpose(1, 2)


def safe_attend(scores, allowed, v, mult=None):
    """softmax over allowed keys (empty rows -> 0), differentiable; also lse.
    `mult` multiplies the weights after the softmax (dropout)."""
    s = scores.masked_fill(~allowed, -1e30)
    p = torch.softmax(s, -1) * allowed
    if mult is not None:
        p = p * mult
    lse = torch.logsumexp(s, -1)
    return p @ v, lse


def admissible(B, T, causal, kpm):
    """[B, 1, T, T]: keys a query may attend (not future if causal, not
    padded; kpm [B, T] numpy or torch, nonzero = padded, or None)."""
    a = torch.ones(B, 1, T, T, dtype=torch.bool)
    if causal:
        a &= ~torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    if kpm is not None:
        a &= ~torch.as_tensor(np.asarray(kpm).astype(bool))[:, None, None, :]
    return a


def dilated_allowed(T, w, dl, glob, causal=False):
    """[T, T] Longformer mask (docs/kernels.md): half = w // 2; i attends j
    iff |i-j| <= half*dl and (i-j) % dl == 0, or i or j is global (positions
    >= T ignored); then not j > i if causal."""
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    diff = (i - j).abs()
    band = (diff <= (w // 2) * dl) & (diff % dl == 0)
    g = torch.zeros(T, dtype=torch.bool)
    for gp in glob:
        if gp < T:
            g[gp] = True
    allowed = band | g[:, None] | g[None, :]
    if causal:
        allowed = allowed & (j <= i)
    return allowed


# Reformer's self mask: HuggingFace LSHSelfAttention's self_mask_value (fp32).
SELF_MASK = -1e5


def lsh_allowed(qk, Rr, chunk, adm, same_bucket):
    """Candidate keys of one hash round with rotations Rr [dh, nb/2]: the
    own and previous chunk of the (bucket, position) order, intersected with
    `adm` (and the query's bucket if same_bucket). The query itself is a
    candidate (if admissible); lsh_reference masks its score. Returns
    (allowed [B,H,T,T], bucket [B,H,T])."""
    T = qk.shape[-2]
    xr = qk @ Rr
    bucket = torch.argmax(torch.cat([xr, -xr], -1), -1)
    key = bucket * T + torch.arange(T)
    pos = torch.argsort(torch.argsort(key, -1), -1)  # sorted position
    ch = pos // chunk
    same_or_prev = (ch[..., None, :] == ch[..., :, None]) | \
                   (ch[..., None, :] == ch[..., :, None] - 1)
    allowed = same_or_prev & adm
    if same_bucket:
        allowed &= bucket[..., None, :] == bucket[..., :, None]
    return allowed, bucket


def lsh_reference(qk, v, R, chunk, causal, kpm, same_bucket, scale=None, mults=None,
                  buckets=None):
    """Reformer LSH attention (Kitaev et al. 2020, sec. 2; HuggingFace
    LSHSelfAttention) as ONE softmax over the concatenation of the rounds'
    candidate keys (duplicates counted), the query's own score replaced by
    SELF_MASK: a query attends to itself only when no round offers it another
    key, and then equally through every round. A row without any candidate
    (padded self, nothing else) gives 0. `mults` [rounds, B, H, T, T]
    multiplies each round's weights (dropout); `buckets` (a list) receives
    each round's [B, H, T] buckets. qk, v [B, H, T, dh]; R [rounds, dh,
    buckets/2]; scale defaults to 1/sqrt(dh)."""
    B, H, T, dh = qk.shape
    if scale is None:
        scale = dh ** -0.5
    adm = admissible(B, T, causal, kpm)
    kn = qk / qk.norm(dim=-1, keepdim=True)
    scores = (scale * qk @ kn.transpose(-1, -2)).masked_fill(
        torch.eye(T, dtype=torch.bool), SELF_MASK)
    allowed = []
    for r in range(R.shape[0]):
        with torch.no_grad():
            a, bk = lsh_allowed(qk, R[r], chunk, adm, same_bucket)
        allowed.append(a.expand(B, H, T, T))
        if buckets is not None:
            buckets.append(bk)
    n = R.shape[0]
    o, _ = safe_attend(torch.cat([scores] * n, -1), torch.cat(allowed, -1),
                       torch.cat([v] * n, -2),
                       None if mults is None else torch.cat(list(mults), -1))
    return o


def lsh_self_rounds(qk, R, chunk, causal, kpm, same_bucket):
    """[B, H, T]: how many hash rounds offer each query no key but itself.
    Queries with 0 < count < rounds are where Reformer's self mask across
    rounds matters (issue 8)."""
    B, H, T, dh = qk.shape
    adm = admissible(B, T, causal, kpm)
    eye = torch.eye(T, dtype=torch.bool)
    n = torch.zeros(B, H, T, dtype=torch.long)
    with torch.no_grad():
        for r in range(R.shape[0]):
            a, _ = lsh_allowed(qk, R[r], chunk, adm, same_bucket)
            n += (~(a & ~eye).any(-1)).long()
    return n


def lsh_mixed(qk, R, chunk, causal, kpm, same_bucket):
    """Number of queries that some but not every round offers another key."""
    n = lsh_self_rounds(qk, R, chunk, causal, kpm, same_bucket)
    return int(((n > 0) & (n < R.shape[0])).sum())


def lsh_kpm(B, T, mode, seed=7):
    """Key padding of the LSH tests: None (0), a padded tail in batch 0 (1),
    or ~60% of the keys padded at random (2, leaves queries whose rounds
    offer nothing but themselves)."""
    if not mode:
        return None
    kpm = np.zeros((B, T), np.uint8)
    if mode == 1:
        kpm[0, T - 4:] = 1
    else:
        kpm[:] = np.random.RandomState(seed).rand(B, T) < 0.6
    return kpm


def lsh_attention_layer(x, in_w, in_b, out_w, out_b, heads_, R, chunk, pad=None,
                        causal=False, same_bucket=0):
    """A whole Reformer LSH attention layer (shared QK projection, keys
    normalised, scores qk_i . k^_j / sqrt(dh), docs/kernels.md): x [B, T, E],
    in_w [2E, E], R [rounds, dh, buckets/2], pad [B, T] (True = padded) or
    None. Core as lsh_reference."""
    B, T, E = x.shape
    qk, v = [heads(t, heads_) for t in (x @ in_w.T + in_b).split(E, -1)]
    o = lsh_reference(qk, v, R, chunk, causal, pad, same_bucket)
    return o.transpose(1, 2).reshape(B, T, E) @ out_w.T + out_b


# --- Cho et al. 2014 GRU ------------------------------------------------------
def cho_cell(x, h, wih, whh, bih, bhh):
    """One step of Cho et al. 2014 (seed notes eqs. 21-24); rows of the
    [3H, .] weights are r, z, n (PyTorch's layout): r and z from x and h,
    the candidate from x and r * h."""
    H = h.shape[-1]
    xr, xz, xn = (x @ wih.T + bih).split(H, -1)
    hr, hz = (h @ whh[:2 * H].T + bhh[:2 * H]).split(H, -1)
    z = torch.sigmoid(xz + hz)                                # eq. 21
    r = torch.sigmoid(xr + hr)                                # eq. 22
    ht = torch.tanh(xn + (r * h) @ whh[2 * H:].T + bhh[2 * H:])  # eq. 23
    return (1 - z) * h + z * ht                               # eq. 24


def cho_gru_flat(x, flat, h0, lengths, H, L, D, has_bias):
    """Stack of Cho GRU layers, sequence by sequence (differentiable): x
    [B, T, I]; flat per layer and direction [W_ih, W_hh(, b_ih, b_hh)]
    (nn.GRU's _flat_weights order); h0 [L*D, B, H] or None; lengths [B] or
    None. Returns (y [B, T, D*H], zero past each length; h_n [L*D, B, H])."""
    B, T, _ = x.shape
    per = 4 if has_bias else 2
    zeros = lambda n: torch.zeros(n, dtype=x.dtype)
    inp, hns = x, []
    for l in range(L):
        cols = []
        for d in range(D):
            w = flat[(l * D + d) * per:(l * D + d + 1) * per]
            bih = w[2] if has_bias else zeros(3 * H)
            bhh = w[3] if has_bias else zeros(3 * H)
            rows, hrow = [], []
            for b in range(B):
                n = int(lengths[b]) if lengths is not None else T
                h = h0[l * D + d, b] if h0 is not None else zeros(H)
                outs = [zeros(H)] * T
                for t in (range(n) if d == 0 else range(n - 1, -1, -1)):
                    h = cho_cell(inp[b, t], h, w[0], w[1], bih, bhh)
                    outs[t] = h
                rows.append(torch.stack(outs))
                hrow.append(h)
            cols.append(torch.stack(rows))
            hns.append(torch.stack(hrow))
        inp = torch.cat(cols, -1)
    return inp, torch.stack(hns)


def cho_gru(params, x, lengths, h0, L, D):
    """cho_gru_flat with nn.GRU's parameter names (weight_ih_l0, ...,
    bias_hh_l1_reverse; biases present)."""
    H = params["weight_hh_l0"].shape[1]
    flat = []
    for l in range(L):
        for d in range(D):
            sfx = "_l%d%s" % (l, "_reverse" if d else "")
            flat += [params[k + sfx] for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    return cho_gru_flat(x, flat, h0, lengths, H, L, D, True)


# --- mlp layer and ODE solvers ----------------------------------------------
class MLP(torch.nn.Module):
    """nncc's mlp(in, hidden, out, layers, activation): Linear layers named
    0 .. layers-1 with the activation between them."""

    def __init__(self, i, h, o, layers, act):
        super().__init__()
        dims = [i] + [h] * (layers - 1) + [o]
        self.layers = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(dims, dims[1:]))
        self.act = act

    def forward(self, x):
        for k, l in enumerate(self.layers):
            x = l(x)
            if k + 1 < len(self.layers):
                x = self.act(x)
        return x

    def named(self, prefix):
        return {"%s.%s" % (prefix, k[len("layers."):]): v.detach().numpy()
                for k, v in self.state_dict().items()}


def fixed(f, h, t0, t1, steps, method):
    """Fixed-step euler / classic rk4 from t0 to t1 (t0, t1 scalars or [B, 1])."""
    dt = (t1 - t0) / steps
    t = t0
    for _ in range(steps):
        if method == "euler":
            h = h + dt * f(t, h)
        else:
            k1 = f(t, h)
            k2 = f(t + dt / 2, h + dt / 2 * k1)
            k3 = f(t + dt / 2, h + dt / 2 * k2)
            k4 = f(t + dt, h + dt * k3)
            h = h + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        t = t + dt
    return h
