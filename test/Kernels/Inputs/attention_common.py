"""Shared by the attention kernel tests: ctypes calls of nncc_mha_forward_* /
nncc_mha_backward_*, torch references (masked dense attention, LSH with the
kernel's hashes, sort and chunks) and the attention-dropout mask computed
independently from Philox-4x32-10 (runtime/include/nncc/Kernels/AttentionMath.h)."""
import ctypes as C

import numpy as np
import torch

from nncc_kernels import ATTN, AttnParams, SUFFIX, i64, load, ptr

_lib = None


def load_lib(libdir):
    global _lib
    _lib = load(libdir)
    for name in ("nncc_mha_backward_workspace_size", "nncc_attention_backward_workspace_size"):
        getattr(_lib, name).restype = C.c_int64
        getattr(_lib, name).argtypes = [C.POINTER(AttnParams)] + [C.c_int64] * 5
    return _lib


def params(kind, causal=0, window=0, dilation=1, globals_=None, rot=None,
           n_hashes=0, n_buckets=0, chunk=0, same_bucket=0, dropout=0.0,
           dropout_seed=0, dropout_offset=0, scale=0.0):
    p = AttnParams()
    p.kind, p.causal, p.scale = ATTN[kind], causal, scale
    p.window, p.dilation = window, dilation
    if globals_ is not None:
        p._g = np.ascontiguousarray(globals_, dtype=np.int32)
        p.global_pos = ptr(p._g)
        p.n_global = len(globals_)
    if rot is not None:
        p._rot = rot
        p.rotations = rot.ctypes.data_as(C.c_void_p)
    p.n_hashes, p.n_buckets, p.chunk = n_hashes, n_buckets, chunk
    p.same_bucket_only = same_bucket
    p.dropout, p.dropout_seed, p.dropout_offset = dropout, dropout_seed, dropout_offset
    return p


def _c(a, dtype):
    return None if a is None else np.ascontiguousarray(a, dtype)


def mha_forward(p, dtype, x, in_w, in_b, out_w, out_b, H, kpm):
    B, T, E = x.shape
    ws = np.zeros(_lib.nncc_mha_workspace_size(C.byref(p), B, T, E, H,
                                               np.dtype(dtype).itemsize), np.uint8)
    y = np.zeros((B, T, E), dtype)
    kp = None if kpm is None else np.ascontiguousarray(kpm, np.uint8)
    rc = getattr(_lib, "nncc_mha_forward_" + SUFFIX[dtype])(
        C.byref(p), *i64(B, T, E, H), ptr(_c(x, dtype)), ptr(_c(in_w, dtype)),
        ptr(_c(in_b, dtype)), ptr(_c(out_w, dtype)), ptr(_c(out_b, dtype)), ptr(kp),
        ws.ctypes.data_as(C.c_void_p), ptr(y))
    assert rc == 0, rc
    return y


def mha_backward(p, dtype, x, in_w, in_b, out_w, out_b, H, kpm, dy):
    B, T, E = x.shape
    ws = np.zeros(_lib.nncc_mha_backward_workspace_size(C.byref(p), B, T, E, H,
                                                        np.dtype(dtype).itemsize), np.uint8)
    outs = [np.full(s, 9.0, dtype) for s in
            (x.shape, in_w.shape, in_b.shape, out_w.shape, out_b.shape)]
    kp = None if kpm is None else np.ascontiguousarray(kpm, np.uint8)
    rc = getattr(_lib, "nncc_mha_backward_" + SUFFIX[dtype])(
        C.byref(p), *i64(B, T, E, H), ptr(_c(x, dtype)), ptr(_c(in_w, dtype)),
        ptr(_c(in_b, dtype)), ptr(_c(out_w, dtype)), ptr(_c(out_b, dtype)), ptr(kp),
        ptr(_c(dy, dtype)), *[ptr(o) for o in outs], ws.ctypes.data_as(C.c_void_p))
    assert rc == 0, rc
    return outs


def _core_ptrs(p, dtype, qkv, E):
    """q, k, v pointers into a packed [B, T, P*E] projection (LSH: k NULL)."""
    PT = C.POINTER(C.c_float if dtype == np.float32 else C.c_double)
    at = lambda j: C.cast(qkv.ctypes.data + j * E * np.dtype(dtype).itemsize, PT)
    if p.kind == ATTN["lsh"]:
        return at(0), None, at(1)
    return at(0), at(1), at(2)


def core_forward(p, dtype, qkv, E, H, kpm):
    """nncc_attention_S on a packed projection: (out [B,T,E], lse [B,H,T])."""
    B, T, PE = qkv.shape
    ws = np.zeros(_lib.nncc_attention_workspace_size(C.byref(p), B, T, H, E // H,
                                                     np.dtype(dtype).itemsize), np.uint8)
    out = np.zeros((B, T, E), dtype)
    lse = np.zeros((B, H, T), dtype)
    kp = None if kpm is None else np.ascontiguousarray(kpm, np.uint8)
    rc = getattr(_lib, "nncc_attention_" + SUFFIX[dtype])(
        C.byref(p), *i64(B, T, H, E // H), *_core_ptrs(p, dtype, qkv, E), C.c_int64(PE),
        ptr(out), C.c_int64(E), ptr(kp), ws.ctypes.data_as(C.c_void_p), None, ptr(lse))
    assert rc == 0, rc
    return out, lse


def core_backward(p, dtype, qkv, dout, E, H, kpm, saved=None):
    """nncc_attention_backward_S: d(packed projection); with saved = (out,
    lse) the forward's, else recomputed."""
    B, T, PE = qkv.shape
    ws = np.zeros(_lib.nncc_attention_backward_workspace_size(
        C.byref(p), B, T, H, E // H, np.dtype(dtype).itemsize), np.uint8)
    dqkv = np.full((B, T, PE), 9.0, dtype)
    dq, dk, dv = _core_ptrs(p, dtype, dqkv, E)
    kp = None if kpm is None else np.ascontiguousarray(kpm, np.uint8)
    out, lse = saved if saved is not None else (None, None)
    rc = getattr(_lib, "nncc_attention_backward_" + SUFFIX[dtype])(
        C.byref(p), *i64(B, T, H, E // H), *_core_ptrs(p, dtype, qkv, E), C.c_int64(PE),
        ptr(np.ascontiguousarray(dout, dtype)), C.c_int64(E), dq, dk, dv, C.c_int64(PE),
        ptr(kp), ws.ctypes.data_as(C.c_void_p), ptr(out), ptr(lse))
    assert rc == 0, rc
    return dqkv


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
    counters = np.asarray(counters, dtype=np.uint64)
    words = _philox_words(np.uint64(offset) + (counters >> np.uint64(2)), seed ^ _SALT)
    w = np.take_along_axis(words, (counters & np.uint64(3)).astype(np.int64)[None], 0)[0]
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
    a = torch.ones(B, 1, T, T, dtype=torch.bool)
    if causal:
        a &= ~torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    if kpm is not None:
        a &= ~torch.from_numpy(kpm.astype(bool))[:, None, None, :]
    return a


def dilated_allowed(T, w, dl, glob):
    """[T, T] band of width w, dilation dl, plus global rows/columns."""
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    diff = (i - j).abs()
    band = (diff <= (w // 2) * dl) & (diff % dl == 0)
    g = torch.zeros(T, dtype=torch.bool)
    for gp in glob:
        if gp < T:
            g[gp] = True
    return band | g[:, None] | g[None, :]


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


def lsh_reference(qk, v, R, chunk, causal, kpm, same_bucket, scale, mults=None,
                  buckets=None):
    """Reformer LSH attention (Kitaev et al. 2020, sec. 2; HuggingFace
    LSHSelfAttention) as ONE softmax over the concatenation of the rounds'
    candidate keys (duplicates counted), the query's own score replaced by
    SELF_MASK: a query attends to itself only when no round offers it another
    key, and then equally through every round. A row without any candidate
    (padded self, nothing else) gives 0. `mults` [rounds, B, H, T, T]
    multiplies each round's weights (dropout); `buckets` (a list) receives
    each round's [B, H, T] buckets."""
    B, H, T, dh = qk.shape
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
