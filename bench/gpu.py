#!/usr/bin/env python3
"""nncc's generated CUDA libraries against PyTorch on the same GPU, same run.

    # here (LLVM, nncc, nvcc): libraries, weights and inputs into DIR
    /usr/bin/python3 bench/gpu.py --prepare DIR [--only lstm,...]
    # on the GPU machine (PyTorch 2.x with CUDA; no compiler needed):
    python3 bench/gpu.py --run DIR [--reps 20] [--json F] [--markdown]

Cases (issue 10's table): LSTM forward B32 T128 H256, B8 and B1 T256 H512
(vs cuDNN), GRU forward B32 T128 H256, a post-LN encoder layer B8 T512 d256
(vs nn.TransformerEncoderLayer), dense attention B1 T4096 E256 4 heads (vs
SDPA through nn.MultiheadAttention), dilated w64 d2 + global [0] (vs SDPA
with the equivalent mask, and FlexAttention with the band as a block mask
where available), the LSTM / GRU training steps (forward, backward, Adam)
at B32 T128 H256, and the seed's BERT-small training step (models/
bert_small.nn, B64 T128, AdamW, dropout 0.1; against bench/memory_table.py's
torch twin, each side with its own initial weights: time only; also in
bf16: nncc's bf16 library against torch's bf16 autocast). fp32, TF32 off on both sides (nncc's cuBLAS uses
TF32 only with NNCC_CUDA_ALLOW_TF32=1). nncc reads its inputs and writes
its outputs in place in torch CUDA tensors (ABI 6 bind) on torch's current
stream, so both sides are timed the same way: CUDA events around the call,
after warm-up, median of --reps. Outputs are compared (relative error).
Ratio = torch median / nncc median (> 1: nncc faster); TFLOP/s from the
nominal FLOP count (bench/run.py's), with its share of the device's
datasheet peak for the case's precision (DEVICE_PEAKS). The recurrent cases time nncc three
ways: as built ("nncc", NNCC_CUDA_RNN=auto), and with the kernel forced
("nncc grid": the cooperative-grid persistent kernel, "nncc scan": the
per-batch-row scan kernel; docs/cuda.md); a forced kernel that cannot run
for the shape is reported and skipped. The encoder layer and BERT-small
also run as "nncc cublas" (NNCC_CUDA_GEMM=cublas: every GEMM epilogue as a
separate kernel after cuBLAS instead of fused into cuBLASLt). The core_*
cases time the attention kernels alone (bench/kernels/attention_core.cu,
no projections) in fp32 and bf16 against SDPA (and FlexAttention for the
dilated band) in the same precision. The *_bf16 cases run whole libraries
compiled with --precision bf16 against the torch module in bfloat16.

First run on an H100 on 2026-11-26: docs/benchmarks.md, "2026-11-26: H100
(first GPU run)", and docs/cuda.md, "First run on an H100 (2026-11-26)"."""
import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)

CASES = {
    # name: (model file, torch kind, shape)
    "lstm_b32": ("lstm.nn", "lstm", dict(B=32, T=128, E=256, H=256)),
    "lstm_b8_h512": ("lstm_h512.nn", "lstm", dict(B=8, T=256, E=512, H=512)),
    "lstm_b1_h512": ("lstm_h512.nn", "lstm", dict(B=1, T=256, E=512, H=512)),
    "gru_b32": ("gru.nn", "gru", dict(B=32, T=128, E=256, H=256)),
    "encoder": ("encoder.nn", "encoder", dict(B=8, T=512, D=256, A=4, FF=1024)),
    "attn_dense": ("attn_dense.nn", "attn_dense", dict(B=1, T=4096, D=256, A=4, W=64, DIL=2)),
    "attn_dilated": ("attn_dilated.nn", "attn_masked",
                     dict(B=1, T=4096, D=256, A=4, W=64, DIL=2)),
    "lstm_train": ("lstm_train.nn", "lstm_train", dict(B=32, T=128, E=256, H=256)),
    "gru_train": ("gru_train.nn", "gru_train", dict(B=32, T=128, E=256, H=256)),
    "bert_train": ("models/bert_small.nn", "bert_train", dict(B=64, T=128)),
    # Whole libraries in bf16 (nncc compile --precision bf16: bf16 storage,
    # fp32 arithmetic) against the torch module in bfloat16, same weights
    # (f32 rounded to nearest even on both sides) and inputs.
    "encoder_bf16": ("encoder.nn", "encoder", dict(B=8, T=512, D=256, A=4, FF=1024,
                                                   dtype="bfloat16")),
    "attn_dense_bf16": ("attn_dense.nn", "attn_dense", dict(B=1, T=4096, D=256, A=4, W=64,
                                                            DIL=2, dtype="bfloat16")),
    # The seed's BERT-small training step in bf16 (fp32 master weights and
    # Adam state) against torch's fp32 module under bf16 autocast.
    "bert_train_bf16": ("models/bert_small.nn", "bert_train", dict(B=64, T=128,
                                                                   dtype="bfloat16")),
    # The attention core alone (no projections; bench/kernels/attention_core.cu
    # over Attention.cuh) in fp32 and bf16 against SDPA / FlexAttention in the
    # same precision: q, k, v [B, T, heads, dh].
    "core_dense_f32": (None, "core", dict(B=1, T=4096, A=4, DH=64, dtype="float32")),
    "core_dense_bf16": (None, "core", dict(B=1, T=4096, A=4, DH=64, dtype="bfloat16")),
    "core_dense_bf16_b8": (None, "core", dict(B=8, T=512, A=4, DH=64, dtype="bfloat16")),
    "core_dense_bf16_dh128": (None, "core", dict(B=1, T=4096, A=2, DH=128, dtype="bfloat16")),
    "core_dilated_bf16": (None, "core", dict(B=1, T=4096, A=4, DH=64, dtype="bfloat16",
                                            W=64, DIL=2)),
    # The dense core's backward (BWD: dq, dk, dv from dout; nncc recomputes
    # the forward inside, as its training does without a saved one), and
    # FlashAttention-3's benchmark shape (16k tokens, 32 heads of 64,
    # non-causal) forward and backward.
    "core_dense_bf16_bwd": (None, "core", dict(B=1, T=4096, A=4, DH=64, dtype="bfloat16",
                                              BWD=1)),
    "core_fa3_t4k": (None, "core", dict(B=4, T=4096, A=32, DH=64, dtype="bfloat16")),
    "core_fa3_t16k": (None, "core", dict(B=1, T=16384, A=32, DH=64, dtype="bfloat16")),
    "core_fa3_t4k_bwd": (None, "core", dict(B=4, T=4096, A=32, DH=64, dtype="bfloat16",
                                           BWD=1)),
    "core_fa3_t16k_bwd": (None, "core", dict(B=1, T=16384, A=32, DH=64, dtype="bfloat16",
                                            BWD=1)),
    # The LSTM in bf16 against cuDNN in fp16 (PEER_DTYPE), the only precision
    # for which PyTorch lets cuDNN pick its persistent algorithm (one layer,
    # one direction, sizes multiples of 128: these shapes qualify); the
    # kernels torch ran are printed beside its time.
    "lstm_b8_h512_bf16": ("lstm_h512.nn", "lstm", dict(B=8, T=256, E=512, H=512,
                                                       dtype="bfloat16", PEER_DTYPE="float16")),
    "lstm_b1_h512_bf16": ("lstm_h512.nn", "lstm", dict(B=1, T=256, E=512, H=512,
                                                       dtype="bfloat16", PEER_DTYPE="float16")),
}
CORE_LIB = "libnncc_bench_attention.so"
PREFIX = {"lstm": "r.", "gru": "r.", "encoder": "enc."}
# The H512 LSTM is bench/models/lstm.nn with E = H = 512.
LSTM_H512 = open(os.path.join(HERE, "models", "lstm.nn")).read().replace("256", "512")


def prepare(d, only):
    os.makedirs(d, exist_ok=True)
    nncc = os.path.join(ROOT, "build", "bin", "nncc")
    for name in only:
        nn_file, kind, s = CASES[name]
        cd = os.path.join(d, name)
        os.makedirs(cd, exist_ok=True)
        if kind == "core":
            prepare_core(d, cd, name, s)
            continue
        src = os.path.join(ROOT, nn_file) if "/" in nn_file else os.path.join(HERE, "models", nn_file)
        if nn_file == "lstm_h512.nn":
            src = os.path.join(cd, "lstm_h512.nn")
            with open(src, "w") as f:
                f.write(LSTM_H512)
        train = kind.endswith("_train")
        precision = (["--target", "cuda", "--precision", "bf16"]
                     if s.get("dtype") == "bfloat16" else ["--target", "all"])
        subprocess.run([nncc, "compile", src, "-o", os.path.join(cd, "lib")] + precision
                       + (["--grad"] if train else []), check=True, stdout=subprocess.DEVNULL)
        # Weights and inputs are drawn on the GPU machine (run_case): the
        # folder stays small enough to carry.
        with open(os.path.join(cd, "case.json"), "w") as f:
            json.dump(dict(name=name, kind=kind, shape=s, flops=case_flops(kind, s)), f)
        print("prepared", name, file=sys.stderr)


def case_flops(kind, s):
    """Nominal FLOPs of one call of a case: bench/peers.py's counts (the CPU
    benchmark's), the BERT-small training step's, or the attention core's
    (4·B·heads·dh per computed (query, key) pair; a backward 2.5 forwards)."""
    if kind == "bert_train":
        return bert_train_flops(s)
    if kind == "core":
        flops = 4 * s["B"] * s["A"] * s["DH"] * core_pairs(s)
        return flops * 5 // 2 if s.get("BWD") else flops
    import peers
    return peers.flops(kind.replace("attn_masked", "attn_dilated"), s)[0]


def core_pairs(s):
    """(query, key) pairs the attention core computes per batch row and head:
    all of them (dense) or the dilated band plus global token 0."""
    T = s["T"]
    if "W" not in s:
        return T * T
    half, dil = (s["W"] // 2) * s["DIL"], s["DIL"]
    pairs = 0
    for i in range(1, T):  # query 0 is global: all T keys
        band = sum(1 for j in range(max(0, i - half), min(T, i + half + 1))
                   if (i - j) % dil == 0)
        pairs += band + (0 if (i % dil == 0 and i <= half) else 1)  # + key 0 unless in band
    return pairs + T


def prepare_core(d, cd, name, s):
    """The attention-core library, built once for every core case."""
    lib = os.path.join(d, CORE_LIB)
    if not os.path.exists(lib):
        subprocess.run(["nvcc", "-std=c++17", "-O3", "-arch=sm_90", "-shared", "-Xcompiler",
                        "-fPIC", "-I" + os.path.join(ROOT, "runtime", "include"),
                        os.path.join(HERE, "kernels", "attention_core.cu"), "-o", lib],
                       check=True)
    with open(os.path.join(cd, "case.json"), "w") as f:
        json.dump(dict(name=name, kind="core", shape=s, flops=case_flops("core", s)), f)
    print("prepared", name, file=sys.stderr)


def run_core_case(cd, case, reps, nncc_only):
    """The attention core: nncc's tile kernels (fp32 or bf16) on torch's
    tensors and stream against SDPA (dense; dilated with the band as a
    boolean mask) and FlexAttention (dilated), same precision. bf16: SDPA as
    dispatched and with each backend forced, FlexAttention's FA4 backend
    where this PyTorch has it. BWD: the backward (dq, dk, dv) alone on both
    sides (torch's forward is taken outside the timing; nncc's launcher
    recomputes it inside)."""
    import ctypes
    import torch
    s = case["shape"]
    B, T, A, DH = s["B"], s["T"], s["A"], s["DH"]
    dtype = getattr(torch, s["dtype"])
    dilated, bwd = "W" in s, bool(s.get("BWD"))
    lib = ctypes.CDLL(os.path.join(os.path.dirname(cd), CORE_LIB))
    lib.nncc_bench_attention.restype = ctypes.c_int
    lib.nncc_bench_attention.argtypes = (
        [ctypes.c_int] * 6 + [ctypes.c_void_p] * 3 + [ctypes.c_int64, ctypes.c_void_p,
                                                      ctypes.c_int64, ctypes.c_int,
                                                      ctypes.c_float, ctypes.c_int, ctypes.c_int,
                                                      ctypes.c_void_p, ctypes.c_int,
                                                      ctypes.c_void_p, ctypes.c_void_p])
    lib.nncc_bench_attention_scratch.restype = ctypes.c_int64
    lib.nncc_bench_attention_backward.restype = ctypes.c_int
    lib.nncc_bench_attention_backward.argtypes = (
        [ctypes.c_int] * 5 + [ctypes.c_void_p] * 7 + [ctypes.c_int64, ctypes.c_float,
                                                      ctypes.c_void_p, ctypes.c_void_p])
    lib.nncc_bench_attention_backward_scratch.restype = ctypes.c_int64
    dev = torch.device("cuda")
    torch.manual_seed(0)
    q, k, v = (torch.randn(B, T, A, DH, device=dev).to(dtype) for _ in range(3))
    out = torch.empty(B, T, A, DH, device=dev, dtype=dtype)
    scale = DH ** -0.5
    globals_ = (ctypes.c_int32 * 1)(0)
    stream = torch.cuda.current_stream().cuda_stream
    code = 1 if dtype == torch.bfloat16 else 0
    if bwd:
        dout = torch.randn(B, T, A, DH, device=dev).to(dtype)
        grads = [torch.empty_like(q) for _ in range(3)]
        scratch = torch.empty(lib.nncc_bench_attention_backward_scratch(code, B, T, A, DH),
                              dtype=torch.uint8, device=dev)

        def nncc_call():
            rc = lib.nncc_bench_attention_backward(
                code, B, T, A, DH, q.data_ptr(), k.data_ptr(), v.data_ptr(), dout.data_ptr(),
                *(g.data_ptr() for g in grads), A * DH, scale, scratch.data_ptr(), stream)
            if rc != 0:
                raise RuntimeError("nncc_bench_attention_backward: cudaError %d" % rc)
        timed = [("nncc", cuda_time(nncc_call, reps), {"y": grads[0].clone()})]
    else:
        scratch = torch.empty(lib.nncc_bench_attention_scratch(T, 1), dtype=torch.uint8,
                              device=dev)

        def nncc_call():
            rc = lib.nncc_bench_attention(
                code, 1 if dilated else 0, B, T, A, DH,
                q.data_ptr(), k.data_ptr(), v.data_ptr(), A * DH, out.data_ptr(), A * DH, 0,
                scale, s.get("W", 0), s.get("DIL", 1), ctypes.cast(globals_, ctypes.c_void_p),
                1 if dilated else 0, scratch.data_ptr(), stream)
            if rc != 0:
                raise RuntimeError("nncc_bench_attention: cudaError %d" % rc)
        timed = [("nncc", cuda_time(nncc_call, reps), {"y": out.clone()})]
    if nncc_only:
        return []
    torch.backends.cuda.matmul.allow_tf32 = False
    results = []
    mask = None
    if dilated:
        i = torch.arange(T, device=dev)[:, None]
        j = torch.arange(T, device=dev)[None, :]
        half, dil = (s["W"] // 2) * s["DIL"], s["DIL"]
        mask = (((i - j).abs() <= half) & ((i - j) % dil == 0)) | (i == 0) | (j == 0)

    def timed_side(label, attend):
        """attend(qh, kh, vh) -> [B, heads, T, dh]: its forward (or, for
        BWD, its backward after a forward outside the timing) as a row."""
        if not bwd:
            with torch.no_grad():
                def fwd():
                    return attend(*(t.transpose(1, 2) for t in (q, k, v))).transpose(1, 2)
                y = fwd()
                results.append((label, cuda_time(fwd, reps), y, main_kernels(fwd)))
            return
        leaves = [t.detach().requires_grad_() for t in (q, k, v)]
        o = attend(*(t.transpose(1, 2) for t in leaves)).transpose(1, 2)

        def back():
            return torch.autograd.grad(o, leaves, dout, retain_graph=True)
        dq = back()[0]
        results.append((label, cuda_time(back, reps), dq, main_kernels(back)))

    def sdpa(qh, kh, vh):
        return torch.nn.functional.scaled_dot_product_attention(qh, kh, vh, attn_mask=mask)
    timed_side("torch SDPA" + (" + mask" if dilated else ""), sdpa)
    if dtype == torch.bfloat16 and not dilated:
        try:
            from torch.nn.attention import SDPBackend, sdpa_kernel
            for name in ("CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION"):
                backend = getattr(SDPBackend, name, None)
                if backend is None:
                    continue

                def forced(qh, kh, vh, backend=backend):
                    with sdpa_kernel([backend]):
                        return sdpa(qh, kh, vh)
                try:
                    timed_side("torch SDPA [%s]" % name.split("_")[0].lower(), forced)
                except RuntimeError as e:  # the backend refuses the shape
                    print("%s, SDPA %s: %s" % (case["name"], name, str(e).splitlines()[0]),
                          file=sys.stderr)
        except ImportError:
            pass
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    except ImportError:
        return result_rows(case, timed, results)
    bm = None
    if dilated:
        half, dil = (s["W"] // 2) * s["DIL"], s["DIL"]

        def allowed(b, h, qi, ki):
            dd = qi - ki
            return ((dd <= half) & (dd >= -half) & (dd % dil == 0)) | (qi == 0) | (ki == 0)
        bm = create_block_mask(allowed, None, None, T, T, device=dev)
    flex = torch.compile(flex_attention)
    # Triton's FlexAttention for the band; FA4's (PyTorch >= 2.10 with the
    # flash-attention CuTe DSL) for the band and, in bf16, the dense core.
    options = [("torch FlexAttention", None)] if dilated else []
    if dtype == torch.bfloat16:
        options.append(("torch FlexAttention [FA4]", {"BACKEND": "FLASH"}))
    for label, opts in options:
        try:
            timed_side(label, lambda qh, kh, vh, opts=opts: flex(qh, kh, vh, block_mask=bm,
                                                                 kernel_options=opts))
        except Exception as e:  # no such backend in this PyTorch, or it refuses the case
            print("%s, %s: %s" % (case["name"], label, str(e).splitlines()[0][:200]),
                  file=sys.stderr)
    return result_rows(case, timed, results)


def main_kernels(fn, n=2):
    """Names of the n device kernels that took the most time in one call of
    fn (torch.profiler), shortened: which backend a torch call dispatched."""
    import torch
    try:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            fn()
            torch.cuda.synchronize()
        events = [e for e in p.key_averages()
                  if getattr(e, "device_time_total", getattr(e, "cuda_time_total", 0)) > 0]
        events.sort(key=lambda e: -getattr(e, "device_time_total",
                                           getattr(e, "cuda_time_total", 0)))
        return [e.key[:70] for e in events[:n]]
    except Exception as e:  # profiling is a label here, never a failure
        return ["(no profile: %s)" % type(e).__name__]


def bert_train_flops(s):
    """Nominal FLOPs of a BERT-small training step: 3x the forward's GEMMs
    and attention products (12 layers of d 256, FFN 1024; embeddings and the
    head left out)."""
    import memory_table as mt
    tokens, d, ff, T = s["B"] * s["T"], mt.D, mt.FF, s["T"]
    per_token = mt.N * (8 * d * d + 4 * d * ff + 4 * T * d)
    return 3 * tokens * per_token


def cuda_time(fn, reps):
    import torch
    fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    return ts


def rel_err(a, b):
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    return ((a - b).abs().max() / max(a.abs().max().item(), 1e-3)).item()


@contextlib.contextmanager
def env_set(var, value):
    """The environment variable `var` = value inside (var None: nothing set)."""
    if var is None:
        yield
        return
    old = os.environ.get(var)
    os.environ[var] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = old


def open_cuda_context(cd):
    import torch
    import nncc.library as nl
    lib_dir = os.path.join(cd, "lib")
    lib = nl.Library(os.path.join(lib_dir, [f for f in os.listdir(lib_dir)
                                            if f.startswith("lib") and f.endswith(".so")][0]))
    ctx = lib.context("cuda")
    ctx.set_cuda_stream(torch.cuda.current_stream().cuda_stream)
    return lib, ctx


# Dense peak TFLOP/s from NVIDIA's datasheets, by a substring of the device
# name (most specific first): fp32 (FMA pipes, what a case with TF32 off can
# use) and bf16 tensor cores (dense, without sparsity).
DEVICE_PEAKS = [
    ("H100 PCIe", dict(float32=51.2, bfloat16=756.0)),
    ("H100 NVL", dict(float32=60.0, bfloat16=835.0)),
    ("H100", dict(float32=67.0, bfloat16=989.4)),  # SXM5
    ("H200", dict(float32=67.0, bfloat16=989.4)),
]


def device_peak(device_name, dtype):
    """The datasheet peak (TFLOP/s) of `dtype` on the device, or None."""
    for key, peaks in DEVICE_PEAKS:
        if key in device_name:
            return peaks.get(dtype)
    return None


def result_rows(case, timed, results):
    """timed: nncc's (label, times, outputs or None); results: torch's
    (side, times, output y or None). One row per pair; `peak` is the
    device's peak TFLOP/s for the case's precision (None: unknown device),
    the *_peak_share columns the achieved rates as shares of it."""
    import torch
    peak = device_peak(torch.cuda.get_device_name(), case["shape"].get("dtype", "float32"))
    rows = []
    for label, tn, o in timed:
        for side, tt, yt, *kernels in results:
            mn, mt = statistics.median(tn), statistics.median(tt)
            nt, tt_ = case["flops"] / mn / 1e9, case["flops"] / mt / 1e9
            rows.append(dict(case=case["name"], nncc=label, vs=side, nncc_ms=mn, torch_ms=mt,
                             ratio=mt / mn, nncc_tflops=nt, torch_tflops=tt_, peak=peak,
                             nncc_peak_share=nt / peak if peak else None,
                             torch_peak_share=tt_ / peak if peak else None,
                             err=None if yt is None or o is None else rel_err(yt, o["y"]),
                             torch_kernels=kernels[0] if kernels else None))
    return rows


def peak_shares(r):
    """ "a% / b% of P" for a row, or "-" without a known peak."""
    if not r["peak"]:
        return "-"
    return "%.1f%% / %.1f%% of %g" % (100 * r["nncc_peak_share"], 100 * r["torch_peak_share"],
                                     r["peak"])


def run_bert_train(cd, case, reps, nncc_only):
    """The seed's BERT-small training step on both sides (own weights)."""
    import torch
    import memory_table as mt
    from nncc import _abi
    s, dev = case["shape"], torch.device("cuda")
    ins = {k: torch.from_numpy(v).to(dev)
           for k, v in mt.make_inputs("bert_small", s["B"], s["T"]).items()}
    lib, ctx = open_cuda_context(cd)
    ctx.init_weights(1)
    for spec in lib.inputs:
        t = ins[spec.name].contiguous()
        ctx.bind(_abi.BIND_INPUT, spec.name, t.data_ptr(), spec.dtype, tuple(t.shape))
    tn = cuda_time(ctx.train_step, reps)
    if nncc_only:
        return []
    with env_set("NNCC_CUDA_GEMM", "cublas"):
        timed = [("nncc", tn, None), ("nncc cublas", cuda_time(ctx.train_step, reps), None)]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(1)
    m = mt.build_torch(mt.SEED_S, False).to(dev)
    m.train()
    opt = torch.optim.AdamW(m.parameters(), lr=5e-4, weight_decay=0.01)

    bf16 = s.get("dtype") == "bfloat16"

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            loss = m(ins["tokens"], ins["segments"], ins["replaced"])
        loss.backward()
        opt.step()
    return result_rows(case, timed, [("torch", cuda_time(step, reps), None)])


def run_case(cd, reps, nncc_only=False):
    import torch
    import nncc_testing as nt
    from nncc import _abi
    case = json.load(open(os.path.join(cd, "case.json")))
    kind, s = case["kind"], case["shape"]
    if kind == "bert_train":
        return run_bert_train(cd, case, reps, nncc_only)
    if kind == "core":
        return run_core_case(cd, case, reps, nncc_only)
    train = kind.endswith("_train")
    dev = torch.device("cuda")
    # The same weights on both sides (torch's default init, seed 0; the
    # attention modules randomized as bench/run.py does) and inputs.
    torch.manual_seed(0)
    m = torch_module(kind.replace("attn_masked", "attn_dense"), s)
    if kind.startswith("attn"):
        nt.randomize_(m)
    prefix = PREFIX.get(kind.replace("_train", ""), "a.")
    weights = os.path.join(cd, "nncc.safetensors")
    nt.save_safetensors(weights, {prefix + k: nt.to_numpy(v) for k, v in m.state_dict().items()})
    dims = (s["B"], s["T"], s.get("E", s.get("D")))
    ins = {"x": torch.randn(*dims)}
    if train:
        ins["target"] = torch.randn(*dims[:2], s.get("H", s.get("D")))
    # A bf16 library takes bf16 inputs (its weights file stays f32: the
    # runtime rounds it on load, as .to(torch.bfloat16) does below).
    dtype = getattr(torch, s.get("dtype", "float32"))
    ins = {k: v.to(dev, dtype) for k, v in ins.items()}
    lib, ctx = open_cuda_context(cd)
    ctx.load_weights(weights)
    for spec in lib.inputs:
        t = ins[spec.name].contiguous()
        ctx.bind(_abi.BIND_INPUT, spec.name, t.data_ptr(), spec.dtype, tuple(t.shape))
    dims = {d: v for spec in lib.inputs for d, v in zip(spec.shape, ins[spec.name].shape)
            if isinstance(d, str)}
    outs = {}
    for spec in lib.outputs:
        o = torch.empty(spec.concrete(dims), dtype=getattr(torch, spec.dtype), device=dev)
        ctx.bind(_abi.BIND_OUTPUT, spec.name, o.data_ptr(), spec.dtype, tuple(o.shape))
        outs[spec.name] = o
    # nncc, for the recurrent cases each recurrent kernel forced (NNCC_CUDA_RNN
    # is read at every launch), for the encoder the GEMM epilogues unfused
    # (NNCC_CUDA_GEMM, read at every forward); each variant's outputs kept.
    variants = [("nncc", None, None)]
    if kind.replace("_train", "") in ("lstm", "gru") and not nncc_only:
        variants += [("nncc grid", "NNCC_CUDA_RNN", "grid"),
                     ("nncc scan", "NNCC_CUDA_RNN", "scan")]
    if kind == "encoder" and not nncc_only:
        variants += [("nncc cublas", "NNCC_CUDA_GEMM", "cublas")]
    timed = []
    for label, var, choice in variants:
        try:
            with env_set(var, choice):
                t = cuda_time(ctx.train_step if train else ctx.forward, reps)
            timed.append((label, t, {k: v.clone() for k, v in outs.items()}))
        except Exception as e:  # e.g. the grid kernel does not fit this shape
            print("%s, %s: %s" % (case["name"], label, e), file=sys.stderr)
    if nncc_only:
        return []

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    peer_dtype = getattr(torch, s.get("PEER_DTYPE", s.get("dtype", "float32")))
    m = m.to(dev, peer_dtype)
    x = ins["x"].to(peer_dtype)
    peer = "torch" + (" " + s["PEER_DTYPE"] if "PEER_DTYPE" in s else "")
    results = []
    if train:
        m.train()
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)

        def step():
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.mse_loss(m(x)[0], ins["target"])
            loss.backward()
            opt.step()
        results.append(("torch", cuda_time(step, reps), None))
    else:
        m.eval()
        mask = None
        if kind == "attn_masked":
            i = torch.arange(s["T"], device=dev)[:, None]
            j = torch.arange(s["T"], device=dev)[None, :]
            band = ((i - j).abs() <= (s["W"] // 2) * s["DIL"]) & ((i - j) % s["DIL"] == 0)
            mask = ~(band | (i == 0) | (j == 0))

        def fwd():
            with torch.no_grad():
                if kind.startswith("attn"):
                    return m(x, x, x, need_weights=False, attn_mask=mask)[0]
                return m(x) if kind == "encoder" else m(x)[0]
        y = fwd()
        results.append(("torch (SDPA + mask)" if mask is not None else peer,
                        cuda_time(fwd, reps), y, main_kernels(fwd)))
        if kind == "attn_masked":
            flex = flex_dilated(m, x, s)
            if flex is not None:
                yf = flex()
                results.append(("torch FlexAttention", cuda_time(flex, reps), yf))
    return result_rows(case, timed, results)


def torch_module(kind, s):
    """The torch module of a case, its state_dict named as the nncc model's
    parameters after PREFIX: nn.LSTM / nn.GRU, a post-LN
    nn.TransformerEncoderLayer (dropout 0 for the training step), or
    nn.MultiheadAttention."""
    import torch
    b = kind.replace("_train", "")
    if b == "lstm":
        return torch.nn.LSTM(s["E"], s["H"], batch_first=True)
    if b == "gru":
        return torch.nn.GRU(s["E"], s["H"], batch_first=True)
    if b == "encoder":
        return torch.nn.TransformerEncoderLayer(
            s["D"], s["A"], s["FF"], dropout=0.0 if kind == "encoder_train" else 0.1,
            activation="gelu", batch_first=True, norm_first=False)
    return torch.nn.MultiheadAttention(s["D"], s["A"], batch_first=True)


def flex_dilated(mha, x, s):
    """The dilated band + global [0] through FlexAttention with a block
    mask (PyTorch >= 2.5), on the module's own projections; None if absent."""
    import torch
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    except ImportError:
        return None
    T, A, D = s["T"], s["A"], s["D"]
    half, dil = (s["W"] // 2) * s["DIL"], s["DIL"]

    def allowed(b, h, q, k):
        d = q - k
        return (((d <= half) & (d >= -half) & (d % dil == 0)) | (q == 0) | (k == 0))
    bm = create_block_mask(allowed, None, None, T, T, device=x.device)
    flex = torch.compile(flex_attention)
    w, bias = mha.in_proj_weight, mha.in_proj_bias

    def run():
        with torch.no_grad():
            qkv = torch.nn.functional.linear(x, w, bias)
            q, k, v = (t.view(1, T, A, D // A).transpose(1, 2) for t in qkv.chunk(3, dim=-1))
            o = flex(q, k, v, block_mask=bm).transpose(1, 2).reshape(1, T, D)
            return mha.out_proj(o)
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--prepare", metavar="DIR")
    g.add_argument("--run", metavar="DIR")
    ap.add_argument("--only", default=",".join(CASES))
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--json")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--nncc-only", action="store_true",
                    help="time nncc alone (with NNCC_PROFILE set: the per-launch table)")
    a = ap.parse_args()
    only = a.only.split(",")
    if a.prepare:
        prepare(a.prepare, only)
        return 0
    import torch
    if not torch.cuda.is_available():
        print("bench/gpu.py --run: no CUDA device for torch", file=sys.stderr)
        return 1
    print("# %s, torch %s" % (torch.cuda.get_device_name(), torch.__version__))
    rows = []
    for name in only:
        cd = os.path.join(a.run, name)
        if not os.path.isdir(cd):
            continue
        for r in run_case(cd, a.reps, a.nncc_only):
            rows.append(r)
            print("%-14s %-9s vs %-20s nncc %8.3f ms  torch %8.3f ms  ratio %5.2fx  "
                  "TFLOP/s %.2f / %.2f (%s)  err %s" % (
                      r["case"], r["nncc"], r["vs"], r["nncc_ms"], r["torch_ms"], r["ratio"],
                      r["nncc_tflops"], r["torch_tflops"], peak_shares(r),
                      "-" if r["err"] is None else "%.2g" % r["err"]), flush=True)
            if r.get("torch_kernels"):
                print("    torch ran: %s" % "; ".join(r["torch_kernels"]), flush=True)
    if a.markdown:
        print("| case | nncc | vs | nncc ms | torch ms | torch/nncc | TFLOP/s nncc / torch "
              "| share of peak nncc / torch | err |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print("| %s | %s | %s | %.3f | %.3f | %.2f× | %.2f / %.2f | %s | %s |" % (
                r["case"], r["nncc"], r["vs"], r["nncc_ms"], r["torch_ms"], r["ratio"],
                r["nncc_tflops"], r["torch_tflops"], peak_shares(r),
                "-" if r["err"] is None else "%.2g" % r["err"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
