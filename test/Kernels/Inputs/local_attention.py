"""The local attention core (NNCC_ATTN_LOCAL, LocalAttention.cpp) against
transformers' LocalSelfAttention (ReformerModel's "local" layers) on the
same projections: outputs and the gradients of q, k and v (torch.autograd
through HF's module) in float64 and float32, with and without padding,
causal or not, look-back/ahead of 0-2 chunks (wrapping around the
sequence), the standard path T <= chunk, and a T that is not a multiple of
the chunk (against HF on the sequence padded with masked positions, as
ReformerModel pads it). Then the saved-lse backward, a finite-difference
check with attention dropout, and argument checking.

usage: local_attention.py LIBDIR"""
import sys

import numpy as np
import torch
from transformers import ReformerConfig
from transformers.models.reformer.modeling_reformer import LocalSelfAttention

from nncc_testing import ckernels as ck

ck.TOL = {np.float64: 1e-10, np.float32: 1e-5}
torch.set_num_threads(1)
rng = np.random.default_rng(7)
B, A, DH = 2, 2, 8
E = A * DH


def hf_local(wq, wk, wv, chunk, before, after, causal, dtype):
    """HF's LocalSelfAttention with these query, key and value weights."""
    cfg = ReformerConfig(hidden_size=E, num_attention_heads=A, attention_head_size=DH,
                         local_attn_chunk_length=chunk, local_num_chunks_before=before,
                         local_num_chunks_after=after, is_decoder=causal,
                         local_attention_probs_dropout_prob=0.0, attn_layers=["local"])
    m = LocalSelfAttention(cfg).to(dtype).eval()
    with torch.no_grad():
        for lin, w in ((m.query, wq), (m.key, wk), (m.value, wv)):
            lin.weight.copy_(torch.as_tensor(w))
    return m


def case(T, chunk, before, after, causal, padded, dtype, pad_to=None):
    tdt = torch.float64 if dtype == np.float64 else torch.float32
    x = rng.standard_normal((B, T, E))
    w = [rng.standard_normal((E, E)) / np.sqrt(E) for _ in range(3)]
    g = rng.standard_normal((B, T, E))
    kpm = np.zeros((B, T), np.uint8)
    if padded == "tail":  # row 1's second half: windows of nothing but padding
        kpm[1, T // 2:] = 1
    elif padded:
        kpm[1, T - 3:] = 1
        kpm[1, 1] = 1
    # HF on x, nncc on its projections q = x wq^T etc. (packed [B, T, 3E]);
    # with pad_to, HF's input carries masked zero rows up to that length.
    Tp = pad_to or T
    xt = torch.zeros(B, Tp, E, dtype=tdt)
    xt[:, :T] = torch.as_tensor(x, dtype=tdt)
    xt.requires_grad_()
    keep = torch.ones(B, Tp, dtype=torch.long)
    keep[:, :T] = torch.as_tensor(1 - kpm)
    keep[:, T:] = 0
    m = hf_local(*w, chunk, before, after, causal, tdt)
    am = keep if (padded or pad_to) else None
    out = m(xt, attention_mask=am).hidden_states
    (out[:, :T] * torch.as_tensor(g, dtype=tdt)).sum().backward()
    q = xt.detach()[:, :T] @ torch.as_tensor(w[0], dtype=tdt).t()
    k = xt.detach()[:, :T] @ torch.as_tensor(w[1], dtype=tdt).t()
    v = xt.detach()[:, :T] @ torch.as_tensor(w[2], dtype=tdt).t()
    qkv = np.ascontiguousarray(torch.cat([q, k, v], -1).numpy(), dtype)
    p = ck.params("local", causal=int(causal), chunk=chunk, chunks_before=before,
                  chunks_after=after)
    got, lse = ck.core_forward(p, dtype, qkv, E, A, kpm if padded else None)
    name = "local T%d chunk%d before%d after%d%s%s%s" % (
        T, chunk, before, after, " causal" if causal else "",
        {True: " padded", False: "", "tail": " padded-tail"}[padded],
        " (HF padded to %d)" % pad_to if pad_to else "")
    ck.check("fwd " + name, got, out.detach()[:, :T].numpy(), dtype)
    dqkv = ck.core_backward(p, dtype, qkv, g, E, A, kpm if padded else None)
    # nncc's d(q, k, v) as HF's weight gradients: dW = d(proj)^T x.
    xs = x.astype(dtype)
    for j, lin in enumerate((m.query, m.key, m.value)):
        dw = dqkv[:, :, j * E:(j + 1) * E].reshape(-1, E).T @ xs.reshape(-1, E)
        ck.check("grad %s %s" % ("qkv"[j], name), dw, lin.weight.grad.numpy(), dtype)
    saved = ck.core_backward(p, dtype, qkv, g, E, A, kpm if padded else None, saved=(got, lse))
    ck.check("saved-lse backward " + name, saved, dqkv, dtype)


def central_differences(f, x, h=1e-6):
    """df/dx of a scalar function f by central differences, element by element."""
    num = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        a = x.copy()
        a[idx] += h
        fp = f(a)
        a[idx] -= 2 * h
        num[idx] = (fp - f(a)) / (2 * h)
    return num


def finite_difference():
    """f64: the gradient with attention dropout (the same mask in the
    forward and the backward) against central differences of sum(out g)."""
    T, chunk = 12, 4
    dtype = np.float64
    qkv = rng.standard_normal((B, T, 3 * E))
    g = rng.standard_normal((B, T, E))
    kpm = np.zeros((B, T), np.uint8)
    kpm[0, 5] = 1
    p = ck.params("local", causal=0, chunk=chunk, dropout=0.25, dropout_seed=3,
                  dropout_offset=11)
    f = lambda a: float(np.sum(ck.core_forward(p, dtype, a, E, A, kpm)[0] * g))
    d = ck.core_backward(p, dtype, qkv, g, E, A, kpm)
    num = central_differences(f, qkv)
    e = ck.err(d, num)
    ck.expect("finite-difference local dropout f64 err=%.1e" % e, e < 1e-7)


def padded_finite_differences():
    """f64: ReformerModel's padding (pad_to_multiple, pad_above) of the local
    core and of the LSH core in Hugging Face's convention: the backward
    against central differences of sum(out g), at a T the padding changes
    (local: 10 -> 12 with chunk 4, so chunk 0 looks back at a padded chunk;
    LSH: 10 -> 16, chunk 4, two rounds), with a padded key."""
    T, dtype = 10, np.float64
    g = rng.standard_normal((B, T, E))
    kpm = np.zeros((B, T), np.uint8)
    kpm[1, 3] = 1
    rot = np.ascontiguousarray(rng.standard_normal((A, DH, 2, 2)))
    for what, p, width in (
            ("local", ck.params("local", chunk=4, pad_to_multiple=12, pad_above=4), 3),
            ("lsh", ck.params("lsh", rot=rot, n_hashes=2, n_buckets=4, chunk=4, lsh_convention=1,
                              pad_to_multiple=8, pad_above=4), 2)):
        qkv = rng.standard_normal((B, T, width * E))
        f = lambda a: float(np.sum(ck.core_forward(p, dtype, a, E, A, kpm)[0] * g))
        d = ck.core_backward(p, dtype, qkv, g, E, A, kpm)
        num = central_differences(f, qkv)
        e = ck.err(d, num)
        ck.expect("finite-difference %s padded as ReformerModel f64 err=%.1e" % (what, e), e < 1e-7)
        out, lse = ck.core_forward(p, dtype, qkv, E, A, kpm)
        saved = ck.core_backward(p, dtype, qkv, g, E, A, kpm, saved=(out, lse))
        ck.check("saved-lse backward %s padded as ReformerModel" % what, saved, d, dtype)


def bad_arguments():
    qkv = np.zeros((1, 8, 3 * E))
    import ctypes as C
    for what, kw in (("chunk 0", dict(chunk=0)), ("before -1", dict(chunk=4, chunks_before=-1)),
                     ("after -1", dict(chunk=4, chunks_after=-1))):
        p = ck.params("local", **kw)
        out = np.zeros((1, 8, E))
        ws = np.zeros(1024, np.uint8)
        rc = ck._lib.nncc_attention_f64(C.byref(p), *ck.i64(1, 8, A, DH),
                                        *ck._core_ptrs(p, np.float64, qkv, E), C.c_int64(3 * E),
                                        ck.ptr(out), C.c_int64(E), None,
                                        ws.ctypes.data_as(C.c_void_p), None, None)
        ck.expect("rejects %s (rc %d)" % (what, rc), rc == -1)


def main():
    ck.load(sys.argv[1])
    for dtype in (np.float64, np.float32):
        for T, chunk, before, after, causal, padded in (
                (16, 4, 1, 0, False, False), (16, 4, 1, 0, False, True),
                (16, 4, 1, 0, True, True), (16, 4, 1, 0, False, "tail"),
                (12, 4, 1, 1, False, True),
                (12, 3, 2, 0, True, False), (8, 4, 0, 1, False, True),
                (8, 4, 1, 1, False, False),  # two chunks: the same chunk twice
                (6, 8, 1, 0, False, True), (6, 8, 1, 0, True, False)):  # T <= chunk
            case(T, chunk, before, after, causal, padded, dtype)
        case(14, 4, 1, 0, False, True, dtype, pad_to=16)
        case(10, 4, 1, 0, True, False, dtype, pad_to=12)
    finite_difference()
    padded_finite_differences()
    bad_arguments()
    ck.finish()


if __name__ == "__main__":
    main()
