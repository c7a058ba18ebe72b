#!/usr/bin/env python3
"""Micro-benchmark of the CPU recurrent time loop (libnncc_kernels'
nncc_rnn_layer_f32: the per-step recurrent product and gate math over a
precomputed input projection), in achieved GFLOP/s of the recurrent product
(2 B T G H^2 per layer and direction).

    python3 bench/recurrent_scan.py build/lib/libnncc_kernels.so \
        [--cells lstm,gru,rnn] [--B 32] [--T 128] [--H 256] [--reps 10]
        [--threads N] [--portable] [--train] [--backward] [--save DIR]

--portable sets NNCC_KERNELS_PORTABLE=1 (the loop without the AVX-512
or AVX2 steps, RecurrentFast.cpp / RecurrentFastAvx2.cpp); --train also writes the saved gates (the
training forward); --backward times nncc_rnn_layer_backward_f32 (the
reverse scan and the dW_hh / db_hh GEMMs, with dxproj) after a --train
forward, GFLOP/s counted as 4 B T G H^2 (the step products and dW_hh); --save writes y of each cell as DIR/<cell>.npy so two
runs can be compared. Times are the median of --reps runs after one
warm-up; OMP_NUM_THREADS is set from --threads before the library loads.
"GFLOP per CPU-second" divides by the process's CPU time instead (every
thread's, waiting included): on a machine other processes load, that is
the loop's rate while it runs, which the wall clock no longer shows.
"""
import argparse
import ctypes as C
import os
import sys
import time

CELLS = {"rnn": (0, 1), "lstm": (2, 4), "gru": (3, 3)}  # code, gates


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("lib")
    ap.add_argument("--cells", default="lstm,gru,rnn")
    ap.add_argument("--B", type=int, default=32)
    ap.add_argument("--T", type=int, default=128)
    ap.add_argument("--H", type=int, default=256)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--portable", action="store_true")
    ap.add_argument("--train", action="store_true")
    ap.add_argument("--backward", action="store_true")
    ap.add_argument("--save")
    a = ap.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(a.threads)
    if a.portable:
        os.environ["NNCC_KERNELS_PORTABLE"] = "1"
    import numpy as np
    lib = C.CDLL(a.lib)
    lib.nncc_rnn_layer_workspace_size.restype = C.c_int64
    lib.nncc_rnn_layer_workspace_size.argtypes = [C.c_int] + [C.c_int64] * 3
    lib.nncc_rnn_saved_size.restype = C.c_int64
    lib.nncc_rnn_saved_size.argtypes = [C.c_int] + [C.c_int64] * 5
    f = lib.nncc_rnn_layer_f32
    f.restype = C.c_int
    f.argtypes = ([C.c_int] + [C.c_int64] * 5 + [C.c_int] + [C.c_void_p] * 12)
    fb = lib.nncc_rnn_layer_backward_f32
    fb.restype = C.c_int
    fb.argtypes = [C.c_int] + [C.c_int64] * 6 + [C.c_int] + [C.c_void_p] * 21
    lib.nncc_rnn_layer_backward_workspace_size.restype = C.c_int64
    lib.nncc_rnn_layer_backward_workspace_size.argtypes = [C.c_int] + [C.c_int64] * 4
    if a.backward:
        a.train = True
    B, T, H = a.B, a.T, a.H
    rng = np.random.RandomState(0)
    for name in a.cells.split(","):
        code, G = CELLS[name]
        k = 1.0 / np.sqrt(H)
        xg = rng.uniform(-1, 1, (B, T, G * H)).astype(np.float32)
        whh = rng.uniform(-k, k, (G * H, H)).astype(np.float32)
        bhh = rng.uniform(-k, k, G * H).astype(np.float32)
        h0 = rng.randn(1, B, H).astype(np.float32)
        c0 = rng.randn(1, B, H).astype(np.float32)
        y = np.zeros((B, T, H), np.float32)
        hn = np.zeros((1, B, H), np.float32)
        cn = np.zeros((1, B, H), np.float32)
        ws = np.zeros(lib.nncc_rnn_layer_workspace_size(code, B, H, 4), np.uint8)
        saved = (np.zeros(lib.nncc_rnn_saved_size(code, B, T, H, 1, 1), np.float32)
                 if a.train else None)
        p = lambda v: None if v is None else v.ctypes.data

        def run():
            rc = f(code, B, T, H, 1, 0, 0, p(xg), p(whh), p(bhh), p(h0),
                   p(c0) if name == "lstm" else None, None, None, p(y), p(hn),
                   p(cn) if name == "lstm" else None, p(ws), p(saved))
            assert rc == 0, rc

        if a.backward:
            run()
            bws = np.zeros(lib.nncc_rnn_layer_backward_workspace_size(code, B, T, H, 4),
                           np.uint8)
            dy = rng.randn(B, T, H).astype(np.float32)
            dxp = np.zeros_like(xg)
            dh0 = np.zeros_like(h0)
            dc0 = np.zeros_like(c0)
            dwhh = np.zeros_like(whh)
            dbhh = np.zeros_like(bhh)
            lstm = name == "lstm"

            def run():
                rc = fb(code, B, T, 0, H, 1, 0, 0, None, None, p(whh), p(saved), p(y),
                        p(h0), p(c0) if lstm else None, None, None, p(dy), None, None,
                        None, p(dh0), p(dc0) if lstm else None, None, p(dwhh), None,
                        p(dbhh), p(dxp), p(bws))
                assert rc == 0, rc

        run()
        ts, cs = [], []
        for _ in range(a.reps):
            q0, t0 = time.process_time(), time.perf_counter()
            run()
            ts.append(time.perf_counter() - t0)
            cs.append(time.process_time() - q0)
        med = sorted(ts)[len(ts) // 2]
        cpu = sorted(cs)[len(cs) // 2]
        flop = (4.0 if a.backward else 2.0) * B * T * G * H * H
        gf = flop / med / 1e9
        print(f"{name:5s} B{B} T{T} H{H} threads {a.threads}"
              f"{' portable' if a.portable else ''}{' backward' if a.backward else ' train' if a.train else ''}: "
              f"{med * 1e3:8.2f} ms  {gf:6.1f} GFLOP/s (min {min(ts) * 1e3:.2f} ms; "
              f"{flop / cpu / 1e9:6.1f} GFLOP per CPU-second)")
        if a.save:
            os.makedirs(a.save, exist_ok=True)
            np.save(os.path.join(a.save, name + ".npy"), y)


if __name__ == "__main__":
    sys.exit(main())
