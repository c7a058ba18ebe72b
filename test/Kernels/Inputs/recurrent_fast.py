"""The AVX-512 and AVX2 recurrent time loops (RecurrentFast.cpp,
RecurrentFastAvx2.cpp) against the portable ones (NNCC_KERNELS_PORTABLE=1): nncc_rnn_layer_f32 (y, h_n, c_n, the saved
gates) and nncc_rnn_layer_backward_f32 (dxproj, dh0, dc0, dw_hh, db_hh) for
the Elman RNN (tanh, relu), the LSTM and PyTorch's GRU, at sizes that take
every path: H not a multiple of 16 or 64 (masked unit tails), batch rows
not a multiple of the row tile, variable lengths with a zero-length row,
the reverse direction of a bidirectional layer, 1 and 2 threads, above and
below the size from which two threads split a step. Each mode runs in its own process (the mode is
read once per process); the driver compares them. Without AVX-512 the
forward runs the AVX2 step and the backward the portable loop on both
sides (exact there); without AVX2 the whole comparison is trivially exact.
`fast path:` says which.

    python recurrent_fast.py LIBDIR
"""
import ctypes as C
import json
import os
import subprocess
import sys

import numpy as np

CELLS = {"rnn_tanh": (0, 1), "rnn_relu": (1, 1), "lstm": (2, 4), "gru": (3, 3)}
CASES = [
    # cell, B, T, H, D (2: the reverse direction), lengths, threads. With 2
    # threads the fast loops split the units only from 2^20 multiply-adds
    # per step (B G H^2, kRecurrentThreadMacs) or when W_hh is over 512 KiB
    # (kRecurrentThreadWeightBytes); the cases marked "split" are above one of
    # them, the others run one thread.
    ("lstm", 32, 12, 256, 1, None, 2),                                   # split
    ("lstm", 13, 9, 168, 2, [9, 0, 3, 9, 1, 7, 9, 2, 5, 9, 8, 4, 6], 2),  # split
    ("lstm", 13, 9, 40, 2, [9, 0, 3, 9, 1, 7, 9, 2, 5, 9, 8, 4, 6], 2),
    ("lstm", 7, 5, 100, 1, [5, 3, 5, 1, 2, 4, 5], 1),
    ("lstm", 3, 4, 8, 1, None, 2),
    ("lstm", 1, 6, 256, 2, None, 2),                                     # split (W_hh)
    ("gru", 32, 10, 256, 1, None, 2),                                    # split
    ("gru", 11, 9, 200, 2, [9, 2, 0, 9, 5, 6, 1, 9, 3, 8, 7], 2),         # split
    ("gru", 11, 9, 72, 2, [9, 2, 0, 9, 5, 6, 1, 9, 3, 8, 7], 2),
    ("gru", 9, 6, 130, 1, None, 1),
    ("gru", 2, 5, 224, 1, [5, 3], 2),                                    # split (W_hh)
    ("rnn_tanh", 20, 8, 260, 1,
     [8, 8, 3, 1, 8, 0, 5, 6, 7, 2, 8, 8, 4, 4, 6, 1, 8, 2, 3, 5], 2),   # split
    ("rnn_relu", 6, 7, 420, 2, None, 2),                                 # split
    ("rnn_relu", 6, 7, 65, 2, None, 2),
    ("rnn_tanh", 16, 6, 256, 1, None, 1),
]


def run_case(lib, case):
    cell, B, T, H, D, lengths, _ = case
    code, G = CELLS[cell]
    rng = np.random.RandomState(B * 1000 + H)
    k = 1.0 / np.sqrt(H)
    f32 = np.float32
    xg = rng.uniform(-1, 1, (B, T, G * H)).astype(f32)
    whh = rng.uniform(-k, k, (G * H, H)).astype(f32)
    bhh = rng.uniform(-k, k, G * H).astype(f32)
    h0 = rng.randn(D, B, H).astype(f32)
    c0 = rng.randn(D, B, H).astype(f32)
    dy = rng.randn(B, T, D * H).astype(f32)
    dhn = rng.randn(D, B, H).astype(f32)
    dcn = rng.randn(D, B, H).astype(f32)
    lens = None if lengths is None else np.array(lengths, np.int32)
    isc = cell == "lstm"
    sd, rev = (1, 1) if D == 2 else (0, 0)
    p = lambda v: None if v is None else v.ctypes.data
    y = np.zeros((B, T, D * H), f32)
    hn = np.zeros((D, B, H), f32)
    cn = np.zeros((D, B, H), f32)
    saved = np.zeros(lib.nncc_rnn_saved_size(code, B, T, H, 1, D), f32)
    ws = np.zeros(lib.nncc_rnn_layer_workspace_size(code, B, H, 4), np.uint8)
    rc = lib.nncc_rnn_layer_f32(code, B, T, H, D, sd, rev, p(xg), p(whh), p(bhh), p(h0),
                                p(c0) if isc else None, p(lens), None, p(y), p(hn),
                                p(cn) if isc else None, p(ws), p(saved))
    assert rc == 0, rc
    bws = np.zeros(lib.nncc_rnn_layer_backward_workspace_size(code, B, T, H, 4), np.uint8)
    dxproj = np.zeros((B, T, G * H), f32)
    dh0 = np.zeros((D, B, H), f32)
    dc0 = np.zeros((D, B, H), f32)
    dwhh = np.zeros_like(whh)
    dbhh = np.zeros_like(bhh)
    rc = lib.nncc_rnn_layer_backward_f32(
        code, B, T, 0, H, D, sd, rev, None, None, p(whh), p(saved), p(y), p(h0),
        p(c0) if isc else None, p(lens), None, p(dy), p(dhn), p(dcn) if isc else None,
        None, p(dh0), p(dc0) if isc else None, None, p(dwhh), None, p(dbhh), p(dxproj),
        p(bws))
    assert rc == 0, rc
    out = {"y": y, "hn": hn[sd], "saved": saved, "dxproj": dxproj, "dh0": dh0[sd],
           "dwhh": dwhh, "dbhh": dbhh}
    if isc:
        out["cn"], out["dc0"] = cn[sd], dc0[sd]
    return out


def child(libdir, outdir):
    lib = C.CDLL(os.path.join(libdir, "libnncc_kernels.so"))
    for name in ("nncc_rnn_layer_workspace_size", "nncc_rnn_saved_size",
                 "nncc_rnn_layer_backward_workspace_size"):
        getattr(lib, name).restype = C.c_int64
    lib.nncc_rnn_layer_workspace_size.argtypes = [C.c_int] + [C.c_int64] * 3
    lib.nncc_rnn_saved_size.argtypes = [C.c_int] + [C.c_int64] * 5
    lib.nncc_rnn_layer_backward_workspace_size.argtypes = [C.c_int] + [C.c_int64] * 4
    lib.nncc_rnn_layer_f32.argtypes = [C.c_int] + [C.c_int64] * 5 + [C.c_int] + [C.c_void_p] * 12
    lib.nncc_rnn_layer_backward_f32.argtypes = ([C.c_int] + [C.c_int64] * 6 + [C.c_int] +
                                                [C.c_void_p] * 21)
    threads = int(os.environ["OMP_NUM_THREADS"])
    for i, case in enumerate(CASES):
        if case[-1] != threads:
            continue
        np.savez(os.path.join(outdir, "case%d.npz" % i), **run_case(lib, case))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        return child(sys.argv[2], sys.argv[3])
    libdir = sys.argv[1]
    base = os.environ.get("TMPDIR", "/tmp")
    import tempfile
    tmp = tempfile.mkdtemp(dir=base)
    dirs = {}
    for mode in ("fast", "portable"):
        d = os.path.join(tmp, mode)
        os.makedirs(d)
        dirs[mode] = d
        for threads in (1, 2):
            env = dict(os.environ, OMP_NUM_THREADS=str(threads))
            env.pop("NNCC_KERNELS_PORTABLE", None)
            if mode == "portable":
                env["NNCC_KERNELS_PORTABLE"] = "1"
            subprocess.check_call([sys.executable, __file__, "--child", libdir, d], env=env)
    flags = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    fast = (" avx512f " in flags and " avx512dq " in flags) or (" avx2 " in flags and
                                                              " fma " in flags)
    print("fast path:", "avx512" if " avx512f " in flags and " avx512dq " in flags
          else "avx2 (forward; the backward is portable)" if fast
          else "portable (no AVX2 here)")
    bad = 0
    moved = 0  # cases where the fast side summed in another order
    for i, case in enumerate(CASES):
        a = np.load(os.path.join(dirs["fast"], "case%d.npz" % i))
        b = np.load(os.path.join(dirs["portable"], "case%d.npz" % i))
        tag = "%s B%d T%d H%d D%d lengths %s threads %d" % (
            case[0], case[1], case[2], case[3], case[4],
            "var" if case[5] else "full", case[6])
        worst = 0.0
        for name in b.files:
            x, r = a[name], b[name]
            # f32 sums in another order: relative to the row's scale.
            err = float(np.abs(x - r).max() / max(1.0, float(np.abs(r).max())))
            worst = max(worst, err)
            if not np.isfinite(x).all() or err > 2e-5:
                print("FAIL %s %s: err %.3g" % (tag, name, err))
                bad += 1
        moved += worst > 0
        if lengths_ok(case, a):
            print("PASS %s (max rel err %.1e)" % (tag, worst))
        else:
            print("FAIL %s: outputs past a length not zero" % tag)
            bad += 1
    if fast and moved == 0:
        # Every case bit-identical: the fast loops did not run at all.
        print("FAIL fast path: no case differs from the portable loop")
        bad += 1
    bad += check_sizes(libdir)
    print("ALL PASSED" if bad == 0 else "%d FAILED" % bad)
    return 1 if bad else 0


def check_sizes(libdir):
    """The CPU-only workspace (packed W_hh, second h buffer, row offsets) in
    the sizes: counted for f32, never for bf16 (elem 2) or f64, and left out
    while nncc_rnn_sizes_count_cpu_workspace(0) holds (the compiler's CUDA
    plans)."""
    lib = C.CDLL(os.path.join(libdir, "libnncc_kernels.so"))
    i64 = C.c_int64
    fns = {  # name: arguments after cell (elem last)
        "nncc_rnn_workspace_size": (32, 16, 64, 256, 2, 2),
        "nncc_rnn_layer_workspace_size": (32, 256),
        "nncc_rnn_layer_backward_workspace_size": (32, 16, 256),
        "nncc_rnn_forward_train_workspace_size": (32, 16, 256),
        "nncc_rnn_backward_workspace_size": (32, 16, 64, 256, 2, 2),
        "nncc_rnn_backward_reserved_workspace_size": (32, 16, 256, 2, 2),
        "nncc_rnn_backward_ckpt_workspace_size": (32, 16, 64, 256, 2, 2, 4),
        "nncc_rnn_backward_revolve_workspace_size": (32, 16, 64, 256, 2, 2, 3),
    }
    toggle = lib.nncc_rnn_sizes_count_cpu_workspace
    toggle.restype = C.c_int
    toggle.argtypes = [C.c_int]
    bad = 0
    for name, args in fns.items():
        f = getattr(lib, name)
        f.restype = i64
        f.argtypes = [C.c_int] + [i64] * (len(args) + 1)
        for cell in ("lstm", "gru", "rnn_tanh"):
            code, G = CELLS[cell]
            size = lambda elem: f(code, *args, elem)
            on32, on64 = size(4), size(8)
            on16 = size(2) if name != "nncc_rnn_layer_backward_workspace_size" else None
            prev = toggle(0)
            off32, off64 = size(4), size(8)
            off16 = size(2) if on16 is not None else None
            back = toggle(prev)
            ok = (prev == 1 and back == 0 and off32 > 0 and
                  on32 - off32 >= G * 256 * 256 * 4 and on64 == off64 and
                  (on16 is None or (on16 == off16 == off32)))
            if not ok:
                print("FAIL sizes %s %s: f32 %d/%d f64 %d/%d bf16 %s/%s toggle %d %d"
                      % (name, cell, on32, off32, on64, off64, on16, off16, prev, back))
                bad += 1
    if bad == 0:
        print("PASS sizes: the CPU-only workspace in f32 sizes only, left out when asked")
    return bad


def lengths_ok(case, a):
    """Steps past a row's length stay zero in y and get no adjoint."""
    _, B, T, H, D, lengths, _ = case
    if lengths is None:
        return True
    col = slice(H, 2 * H) if D == 2 else slice(0, H)
    return all(not a["y"][b, L:, col].any() and not a["dxproj"][b, L:].any()
               for b, L in enumerate(lengths))


if __name__ == "__main__":
    sys.exit(main())
