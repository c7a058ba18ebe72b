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
}
CORE_LIB = "libnncc_bench_attention.so"
PREFIX = {"lstm": "r.", "gru": "r.", "encoder": "enc."}
# The H512 LSTM is bench/models/lstm.nn with E = H = 512.
LSTM_H512 = open(os.path.join(HERE, "models", "lstm.nn")).read().replace("256", "512")


def prepare(d, only):
    import run as cpu_bench  # bench/run.py: torch twins and FLOP counts
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
        if kind == "bert_train":
            flops = bert_train_flops(s)
        else:
            flops = cpu_bench.flops(kind.replace("attn_masked", "attn_dilated")
                                    if kind == "attn_masked" else kind, s)
        with open(os.path.join(cd, "case.json"), "w") as f:
            json.dump(dict(name=name, kind=kind, shape=s, flops=flops), f)
        print("prepared", name, file=sys.stderr)


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
    flops = 4 * s["B"] * s["A"] * s["DH"] * core_pairs(s)
    with open(os.path.join(cd, "case.json"), "w") as f:
        json.dump(dict(name=name, kind="core", shape=s, flops=flops), f)
    print("prepared", name, file=sys.stderr)


def run_core_case(cd, case, reps, nncc_only):
    """The attention core: nncc's tile kernels (fp32 or bf16) on torch's
    tensors and stream against SDPA (dense; dilated with the band as a
    boolean mask) and FlexAttention (dilated), same precision."""
    import ctypes
    import torch
    s = case["shape"]
    B, T, A, DH = s["B"], s["T"], s["A"], s["DH"]
    dtype = getattr(torch, s["dtype"])
    dilated = "W" in s
    lib = ctypes.CDLL(os.path.join(os.path.dirname(cd), CORE_LIB))
    lib.nncc_bench_attention.restype = ctypes.c_int
    lib.nncc_bench_attention.argtypes = (
        [ctypes.c_int] * 6 + [ctypes.c_void_p] * 3 + [ctypes.c_int64, ctypes.c_void_p,
                                                      ctypes.c_int64, ctypes.c_int,
                                                      ctypes.c_float, ctypes.c_int, ctypes.c_int,
                                                      ctypes.c_void_p, ctypes.c_int,
                                                      ctypes.c_void_p, ctypes.c_void_p])
    lib.nncc_bench_attention_scratch.restype = ctypes.c_int64
    dev = torch.device("cuda")
    torch.manual_seed(0)
    q, k, v = (torch.randn(B, T, A, DH, device=dev).to(dtype) for _ in range(3))
    out = torch.empty(B, T, A, DH, device=dev, dtype=dtype)
    scale = DH ** -0.5
    globals_ = (ctypes.c_int32 * 1)(0)
    scratch = torch.empty(lib.nncc_bench_attention_scratch(T, 1), dtype=torch.uint8, device=dev)
    stream = torch.cuda.current_stream().cuda_stream

    def nncc_fwd():
        rc = lib.nncc_bench_attention(
            1 if dtype == torch.bfloat16 else 0, 1 if dilated else 0, B, T, A, DH,
            q.data_ptr(), k.data_ptr(), v.data_ptr(), A * DH, out.data_ptr(), A * DH, 0, scale,
            s.get("W", 0), s.get("DIL", 1), ctypes.cast(globals_, ctypes.c_void_p),
            1 if dilated else 0, scratch.data_ptr(),
            stream)
        if rc != 0:
            raise RuntimeError("nncc_bench_attention: cudaError %d" % rc)
    timed = [("nncc", cuda_time(nncc_fwd, reps), {"y": out.clone()})]
    if nncc_only:
        return []
    torch.backends.cuda.matmul.allow_tf32 = False
    qh, kh, vh = (t.transpose(1, 2) for t in (q, k, v))  # [B, A, T, DH] views
    results = []
    mask = None
    if dilated:
        i = torch.arange(T, device=dev)[:, None]
        j = torch.arange(T, device=dev)[None, :]
        half, dil = (s["W"] // 2) * s["DIL"], s["DIL"]
        mask = (((i - j).abs() <= half) & ((i - j) % dil == 0)) | (i == 0) | (j == 0)

    def sdpa():
        return torch.nn.functional.scaled_dot_product_attention(
            qh, kh, vh, attn_mask=mask).transpose(1, 2)
    with torch.no_grad():
        results.append(("torch SDPA" + (" + mask" if dilated else ""), cuda_time(sdpa, reps),
                        sdpa()))
    if dilated:
        try:
            from torch.nn.attention.flex_attention import create_block_mask, flex_attention
            half, dil = (s["W"] // 2) * s["DIL"], s["DIL"]

            def allowed(b, h, qi, ki):
                dd = qi - ki
                return ((dd <= half) & (dd >= -half) & (dd % dil == 0)) | (qi == 0) | (ki == 0)
            bm = create_block_mask(allowed, None, None, T, T, device=dev)
            flex = torch.compile(flex_attention)

            def fx():
                return flex(qh, kh, vh, block_mask=bm).transpose(1, 2)
            with torch.no_grad():
                results.append(("torch FlexAttention", cuda_time(fx, reps), fx()))
        except ImportError:
            pass
    return result_rows(case, timed, results)


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
        for side, tt, yt in results:
            mn, mt = statistics.median(tn), statistics.median(tt)
            nt, tt_ = case["flops"] / mn / 1e9, case["flops"] / mt / 1e9
            rows.append(dict(case=case["name"], nncc=label, vs=side, nncc_ms=mn, torch_ms=mt,
                             ratio=mt / mn, nncc_tflops=nt, torch_tflops=tt_, peak=peak,
                             nncc_peak_share=nt / peak if peak else None,
                             torch_peak_share=tt_ / peak if peak else None,
                             err=None if yt is None or o is None else rel_err(yt, o["y"])))
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
    import run as cpu_bench
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
    m = cpu_bench.build_torch(kind.replace("attn_masked", "attn_dense"), s)
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
    m = m.to(dev, dtype)
    x = ins["x"]
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
        results.append(("torch (SDPA + mask)" if mask is not None else "torch",
                        cuda_time(fwd, reps), y))
        if kind == "attn_masked":
            flex = flex_dilated(m, x, s)
            if flex is not None:
                yf = flex()
                results.append(("torch FlexAttention", cuda_time(flex, reps), yf))
    return result_rows(case, timed, results)


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
