#!/usr/bin/env python3
"""The seed thesis's Table 1 (peak training memory and step time of BERT-sized
encoders), reproduced and extended: nncc's bert_small, reformer_lsh and
reversible_dilated_bert vs PyTorch's plain BERT-small and the same with
per-layer torch.utils.checkpoint, same machine, same run, same thread count;
and the thesis's own rows, the three encoders pretrained inside ELECTRA
(models/electra_*.nn: generator + discriminator, Algorithm 2) vs PyTorch's
ELECTRA BERT-small (utils/nncc_testing/electra.py), plain and checkpointed.

    /usr/bin/python3 bench/memory_table.py [-o DIR] [--threads N] [--reps R]
        [--seqs 128,512,2048,4096] [--tokens 8192] [--only a,b,...] [--quick]
        [--fit-gib 8] [--fit-from 128] [--fit-max-seq 262144] [--mem-limit-gib 16]
        [--fit-sides nncc,torch,torch2,torch2-sdpa] [--torch2-python PY | none]

Writes DIR/memory_table.csv and DIR/memory_table.png (DIR defaults to
build/memory_table). docs/benchmarks.md explains every column.

The same table on a GPU, in two steps (utils/device_prep.sh and the
memtable.sh it writes do both; run on an H100 on 2026-11-26 at T 128 only,
docs/benchmarks.md, "2026-11-26: H100, the seed configuration"):

    # here (nncc, nvcc): each nncc model x T x budget compiled --target cuda
    /usr/bin/python3 bench/memory_table.py --prepare-gpu DIR [--seqs ..] [--only ..]
    # on the GPU machine (torch with CUDA): each configuration in a fresh process
    python3 bench/memory_table.py --run-gpu DIR [-o OUT] [--reps 10] [--budget-s S]

--run-gpu writes OUT/memory_table_gpu.csv (device memory: the driver's and
torch's allocator's figures, the arena's; docs/benchmarks.md) and .png;
--device cpu runs it on the CPU (test/Bench/memory-table-gpu.test).

Rows ("table1"): every model at each sequence length T of --seqs with batch
B = tokens / T (seed configuration: B 64, T 128; then 512, 2048, 4096 at 8192
tokens per batch). nncc: one training step is the generated train_step (forward,
backward, the model's own AdamW update) at the default memory budget and, when
`nncc compile` has --memory-budget, at `--memory-budget min` for that B, T.
torch: BERT-small as models/bert_small.nn (BERT embeddings with dropout 0.1,
12 post-LN nn.TransformerEncoderLayer d 256, 4 heads, FFN 1024, GELU, dropout
0.1, a linear discriminator, BCE-with-logits, AdamW(5e-4, 0.01)), train mode,
plain and with each encoder layer under torch.utils.checkpoint. The models'
learned position table has S = 128 rows; for T > 128 the bench compiles a
copy with S = T (torch likewise; the Reformer's axial grid becomes T/16 x 16)
and says so in the note column. ELECTRA rows (model electra_*) are compared
with torch's ELECTRA BERT-small (model electra_bert, side torch): its
generator samples only at the masked positions, as ELECTRA implementations
do; the ratio columns of an ELECTRA row are against that torch row.

Rows ("fit"): the goal line of issue #9: doubling T from 128 at batch 1, the
longest sequence whose training step (two steps: the optimizer state exists
from the first) fits in --fit-gib GiB of training memory (peak RSS over the
RSS before the model was created: weights, gradients, optimizer state,
activations, workspaces), for nncc's reversible_dilated_bert (min budget when
available) and torch's plain BERT-small. Measured, not planned.

Each configuration runs in its own fresh subprocess, one after the other, with
OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = torch.set_num_threads = N and an
address-space limit (RLIMIT_AS, --mem-limit-gib over the worker's size after
its imports) so that a configuration that does not fit fails with "out of
memory" in the note column instead of exhausting the machine.

torch 2.x rows (side torch2, run by --torch2-python, default the venv
utils/setup.sh makes; none: skipped), the same module under PyTorch 2.x:
plain and checkpoint as above, and for BERT-small `sdpa`: attention dropout 0
(the other dropouts 0.1), so that scaled_dot_product_attention takes its CPU
flash kernel and never forms T x T (with dropout > 0 PyTorch 2.x on the CPU
falls back to the math kernel, which does). Their ratio columns
*_vs_torch2 are against torch 2.x's plain row. The fit search also runs
torch 2.x's plain and sdpa BERT-small.
"""
import argparse
import csv
import datetime
import importlib.util
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "utils"))

# bench/run.py's process-memory and machine helpers (loaded by path: "run" is
# no package name).
_spec = importlib.util.spec_from_file_location("nncc_bench_run", os.path.join(HERE, "run.py"))
benchrun = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(benchrun)

NNCC_MODELS = ["bert_small", "reformer_lsh", "reversible_dilated_bert",
               "electra_bert", "electra_reformer", "electra_reversible_dilated_bert"]
TORCH_MODELS = ["bert_small", "electra_bert"]
TORCH_VARIANTS = ["plain", "checkpoint"]
# torch 2.x (side torch2): also `sdpa`, BERT-small with attention dropout 0
TORCH2_VARIANTS = {"bert_small": ["plain", "checkpoint", "sdpa"],
                   "electra_bert": ["plain", "checkpoint"]}
SEED_S = 128            # the models' position-table rows (const S = 128)
V, D, A, FF, N = 30522, 256, 4, 1024, 12  # BERT-small (models/bert_small.nn)
COLUMNS = ["table", "model", "side", "variant", "B", "T", "reps", "step_ms", "step_ms_min",
           "step_ms_max", "arena_MiB", "arena_peak_MiB", "rss_growth_MiB", "train_MiB",
           "peak_rss_MiB", "time_vs_torch", "rss_vs_torch", "arena_vs_torch",
           "time_vs_bert_small", "time_vs_torch2", "rss_vs_torch2", "arena_vs_torch2",
           "loss", "fits", "note"]
# --run-gpu's CSV (memory_table_gpu.csv): device memory instead of RSS.
GPU_COLUMNS = ["table", "model", "side", "variant", "device", "B", "T", "reps", "step_ms",
               "step_ms_min", "step_ms_max", "arena_MiB", "arena_peak_MiB", "dev_used_MiB",
               "dev_alloc_peak_MiB", "time_vs_torch", "dev_vs_torch", "arena_vs_torch",
               "time_vs_bert_small", "loss", "note"]
# A worker's byte counts and the CSV columns (MiB) they fill, where present.
MEM_FIELDS = [("arena_MiB", "arena"), ("arena_peak_MiB", "arena_peak"),
              ("rss_growth_MiB", "rss_growth"), ("train_MiB", "train"),
              ("peak_rss_MiB", "maxrss"), ("dev_used_MiB", "dev_used"),
              ("dev_alloc_peak_MiB", "dev_alloc_peak")]


# ---------------------------------------------------------------------------
# workers (a fresh process each: memory_table.py --worker JSON)
# ---------------------------------------------------------------------------
def vm_size():
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def is_electra(model):
    return model.startswith("electra_")


def make_inputs(model, B, T, seed=0):
    """ELECTRA models corrupt their input themselves: no `replaced` labels."""
    import numpy as np
    r = np.random.default_rng(seed)
    inputs = {"tokens": r.integers(0, V, (B, T), dtype=np.int32),
              "segments": r.integers(0, 2, (B, T), dtype=np.int32)}
    if not is_electra(model):
        inputs["replaced"] = (r.random((B, T, 1)) < 0.15).astype(np.float32)
    return inputs


def timed_steps(step, reps):
    """One warm-up step (the optimizer state is allocated there), then reps
    timed steps; reps 0 times the warm-up itself."""
    t0 = time.perf_counter()
    step()
    ts = [time.perf_counter() - t0]
    if reps > 0:
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            step()
            ts.append(time.perf_counter() - t0)
    return ts


def worker(cfg):
    B, T, reps, threads = cfg["B"], cfg["T"], cfg["reps"], cfg["threads"]
    import numpy as np
    inputs = make_inputs(cfg["model"], B, T)
    if cfg["side"] in ("torch", "torch2"):
        import torch
        torch.set_num_threads(threads)
    else:
        import nncc_train as ntr
        lib = ntr.TrainLib(cfg["lib"])
    limit = cfg.get("mem_limit")
    if limit:
        lim = vm_size() + int(limit)
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    res = {}
    rss_start = benchrun.rss_now()
    if cfg["side"] == "nncc":
        ctx = lib.context(seed=1)
        ctx.set_inputs(inputs)
        base = benchrun.rss_now()
        ts = timed_steps(ctx.train_step, reps)
        res["arena"], res["arena_peak"] = ctx.memory_stats()
        res["loss"] = float(np.asarray(ctx.output("loss")).reshape(-1)[0])
    else:
        x = {k: torch.from_numpy(v) for k, v in inputs.items()}
        step, last = torch_train_step(cfg, T, x)
        base = benchrun.rss_now()
        ts = timed_steps(step, reps)
        res["loss"] = float(last[0])
    res["times"] = ts
    res["maxrss"] = benchrun.maxrss()
    res["rss_growth"] = max(0, res["maxrss"] - base)
    res["train"] = max(0, res["maxrss"] - rss_start)
    print(json.dumps(res))


def torch_train_step(cfg, T, x, device=None):
    """The torch side's training step on the inputs x (seed 1): BERT-small as
    build_torch, or torch's ELECTRA for the electra_* rows, plain or with
    per-layer checkpointing (cfg["variant"]; `sdpa`: BERT-small's attention
    dropout 0), train mode, AdamW(5e-4, 0.01).
    Returns step() and a one-item list that holds the last step's loss."""
    import torch
    torch.manual_seed(1)
    if is_electra(cfg["model"]):
        from nncc_testing.electra import Electra
        m = Electra(cfg["model"], S=max(SEED_S, T))
        m.checkpoint = cfg["variant"] == "checkpoint"
    else:
        m = build_torch(max(SEED_S, T), cfg["variant"] == "checkpoint",
                        attn_dropout=0.0 if cfg["variant"] == "sdpa" else 0.1)
    if device is not None:
        m = m.to(device)
    m.train()
    opt = torch.optim.AdamW(m.parameters(), lr=5e-4, weight_decay=0.01)
    last = [None]

    def step():
        opt.zero_grad(set_to_none=True)
        loss = m(*(x[k] for k in ("tokens", "segments", "replaced") if k in x))
        loss.backward()
        opt.step()
        last[0] = loss.detach()
    return step, last


def build_torch(S, checkpoint, attn_dropout=0.1):
    """BERT-small as models/bert_small.nn: the parity test's BertEmbeddings
    (test/Parity/Inputs/parity_seed_models.py) plus its dropout, 12 post-LN
    encoder layers, a linear discriminator, BCE-with-logits. attn_dropout:
    the attention probabilities' dropout (0: torch 2.x's CPU SDPA can take
    its flash kernel)."""
    import torch
    import torch.nn.functional as F
    from torch.utils.checkpoint import checkpoint as ckpt

    class BertSmall(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.word_embeddings = torch.nn.Embedding(V, D)
            self.position_embeddings = torch.nn.Embedding(S, D)
            self.token_type_embeddings = torch.nn.Embedding(2, D)
            self.LayerNorm = torch.nn.LayerNorm(D, eps=1e-12)
            self.dropout = torch.nn.Dropout(0.1)
            self.encoder = torch.nn.ModuleList(
                torch.nn.TransformerEncoderLayer(D, A, FF, dropout=0.1, activation="gelu",
                                                 batch_first=True, norm_first=False)
                for _ in range(N))
            for layer in self.encoder:
                layer.self_attn.dropout = attn_dropout
            self.disc = torch.nn.Linear(D, 1)

        def forward(self, tok, seg, replaced):
            T = tok.shape[1]
            h = self.dropout(self.LayerNorm(self.word_embeddings(tok.long()) +
                                            self.position_embeddings(torch.arange(T, device=tok.device))[None] +
                                            self.token_type_embeddings(seg.long())))
            for layer in self.encoder:
                h = ckpt(layer, h) if checkpoint else layer(h)
            return F.binary_cross_entropy_with_logits(self.disc(h), replaced)
    return BertSmall()


def gpu_worker(cfg):
    """One --run-gpu configuration (memory_table.py --gpu-worker JSON): the
    training step on cfg["device"] (cuda; cpu: the same libraries and torch
    on the CPU, for testing without a GPU). Inputs are on the device before
    the baseline, as the CPU worker makes them before its RSS baseline."""
    import numpy as np
    import torch
    sys.path.insert(0, os.path.join(ROOT, "python"))
    sys.path.insert(0, HERE)
    from gpu import cuda_time
    B, T, reps, device = cfg["B"], cfg["T"], cfg["reps"], cfg["device"]
    cuda = device == "cuda"
    dev = torch.device(device)
    torch.set_num_threads(cfg["threads"])
    if cuda:  # TF32 off on both sides (bench/gpu.py)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    x = {k: torch.from_numpy(v).to(dev) for k, v in make_inputs(cfg["model"], B, T).items()}

    def used():  # device bytes in use: the driver's (CUDA), the RSS (CPU)
        if cuda:
            torch.cuda.synchronize()
            free, total = torch.cuda.mem_get_info()
            return total - free
        return benchrun.rss_now()
    base = used()  # torch's CUDA context exists (the inputs): not counted
    res = {}
    if cuda:
        torch.cuda.reset_peak_memory_stats()
        alloc0 = torch.cuda.memory_allocated()
    if cfg["side"] == "nncc":
        import nncc.library as nl
        from nncc import _abi
        lib = nl.Library(cfg["lib"])
        ctx = lib.context(device)
        if cuda:  # nncc on torch's stream, reading torch's tensors (ABI 6 bind)
            ctx.set_cuda_stream(torch.cuda.current_stream().cuda_stream)
        ctx.init_weights(1)
        for spec in lib.inputs:
            t = x[spec.name].contiguous()
            ctx.bind(_abi.BIND_INPUT, spec.name, t.data_ptr(), spec.dtype, tuple(t.shape))
        step = ctx.train_step
    else:
        step, last = torch_train_step(cfg, T, x, dev)
    if cuda:  # CUDA events around each step on torch's stream, after a warm-up
        res["times"] = [ms / 1e3 for ms in cuda_time(step, max(1, reps))]
    else:
        res["times"] = timed_steps(step, reps)
    # The driver's figure after the steps: nncc's allocations (arena,
    # parameters, gradients, AdamW moments, cuBLAS workspace) persist, as
    # do torch's cached blocks; on the CPU, the peak RSS.
    res["dev_used"] = max(0, (used() if cuda else benchrun.maxrss()) - base)
    if cuda and cfg["side"] == "torch":
        res["dev_alloc_peak"] = torch.cuda.max_memory_allocated() - alloc0
    if cfg["side"] == "nncc":
        st = ctx.memory_stats()
        res["arena"], res["arena_peak"] = st["arena_bytes"], st["peak_bytes"]
        res["loss"] = float(np.asarray(ctx.output("loss")).reshape(-1)[0])
    else:
        res["loss"] = float(last[0])
    print(json.dumps(res))


# ---------------------------------------------------------------------------
# driver
# ---------------------------------------------------------------------------
def run_worker(cfg, threads, flag="--worker", timeout=None, python=None):
    """`memory_table.py FLAG CFG` in a fresh process (of `python`, default
    this one): (its result, "") or (None, "failed: why")."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), PYTHONPATH=os.path.join(ROOT, "utils"))
    try:
        p = subprocess.run([python or sys.executable, os.path.abspath(__file__), flag,
                            json.dumps(cfg)],
                           capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "failed: timed out after %.0f s" % timeout
    if p.returncode == 0:
        return json.loads(p.stdout.strip().splitlines()[-1]), ""
    text = p.stdout + p.stderr
    if re.search(r"MemoryError|bad_alloc|can't allocate|out of memory|Cannot allocate|"
                 r"failed to allocate", text, re.I) or p.returncode == -9:
        why = "out of memory" + (" (limit %.0f GiB)" % (cfg["mem_limit"] / 2**30)
                                 if cfg.get("mem_limit") else "")
    else:
        tail = [l for l in text.strip().splitlines() if l.strip()][-1:] or [""]
        why = "exit %d: %s" % (p.returncode, tail[0][:160])
    return None, "failed: " + why


def budget_supported():
    import nncc_testing as nt
    p = subprocess.run([nt.NNCC, "compile", "--help"], capture_output=True, text=True)
    return "--memory-budget" in p.stdout + p.stderr


def model_source(name, T, cache):
    """models/<name>.nn, or for T > 128 a copy whose learned position table
    (S = 128) has T rows or whose axial grid (axial_shape: [8, 16]) has
    T / 16 x 16 positions; sinusoidal encodings need no change."""
    src = os.path.join(ROOT, "models", name + ".nn")
    if T <= SEED_S:
        return src, ""
    text = open(src).read()
    new, n = re.subn(r"\bS = %d\b" % SEED_S, "S = %d" % T, text)
    new, m = re.subn(r"axial_shape: \[8, 16\]", "axial_shape: [%d, 16]" % -(-T // 16), new)
    if n + m == 0:
        if "position: sinusoidal" in text:
            return src, ""
        raise RuntimeError("%s: no 'S = %d' or axial grid to widen" % (src, SEED_S))
    if n + m != 1:
        raise RuntimeError("%s: more than one position table to widen" % src)
    d = os.path.join(cache, "S%d" % T)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, name + ".nn")
    if not os.path.exists(path) or open(path).read() != new:
        with open(path, "w") as f:
            f.write(new)
    what = "position table S=%d" % T if n else "axial grid %d x 16" % -(-T // 16)
    return path, "%s (models/%s.nn: %s)" % (what, name, "S=128" if n else "8 x 16")


def compile_lib(name, T, B, budget, cache, target=None):
    """lib<name>.so (cached by nncc_testing) and the widening note; target
    None: nncc's default (cpu)."""
    import nncc_testing as nt
    src, note = model_source(name, T, cache)
    args = ["--grad"] + (["--target", target] if target else [])
    if budget is not None:
        args += ["--memory-budget", budget, "--dim", "B=%d" % B, "--dim", "T=%d" % T]
    return nt.compile_model(src, args), note


def mib(x):
    return "" if x is None else "%.1f" % (x / 2**20)


def row(table, model, side, variant, B, T, reps, res, note, fits="", device=""):
    r = dict(table=table, model=model, side=side, variant=variant, B=B, T=T, reps=reps,
             fits=fits, note=note, device=device)
    if res:
        ts = res["times"]
        r.update(step_ms="%.1f" % (statistics.median(ts) * 1e3),
                 step_ms_min="%.1f" % (min(ts) * 1e3), step_ms_max="%.1f" % (max(ts) * 1e3),
                 loss="%.5f" % res["loss"])
        r.update({col: mib(res.get(key)) for col, key in MEM_FIELDS})
        r["_res"] = res
    return r


def add_ratios(rows, mem="rss_growth", mem_col="rss_vs_torch", arena_ref="rss_growth"):
    """Against torch's plain row of the same family (ELECTRA or not), B and
    T: step time, memory `mem` (column mem_col) and nncc's arena peak over
    torch's `arena_ref`; the *_vs_torch2 columns likewise against torch 2.x's
    plain row. time_vs_bert_small: an nncc row's step time over
    nncc's bert_small (electra_bert for ELECTRA rows) of the same variant,
    B and T (issue 9: reformer_lsh within 1.5x)."""
    ref = {(is_electra(r["model"]), r["B"], r["T"]): r.get("_res") for r in rows
           if r["table"] == "table1" and r["side"] == "torch" and r["variant"] == "plain"}
    ref2 = {(is_electra(r["model"]), r["B"], r["T"]): r.get("_res") for r in rows
            if r["table"] == "table1" and r["side"] == "torch2" and r["variant"] == "plain"}
    bert = {(r["model"], r["variant"], r["B"], r["T"]): r.get("_res") for r in rows
            if r["table"] == "table1" and r["side"] == "nncc"
            and r["model"] in ("bert_small", "electra_bert")}
    for r in rows:
        res = r.get("_res")
        if r["table"] != "table1" or not res:
            continue
        b = bert.get(("electra_bert" if is_electra(r["model"]) else "bert_small", r["variant"],
                      r["B"], r["T"]))
        if r["side"] == "nncc" and b:
            r["time_vs_bert_small"] = "%.3f" % (statistics.median(res["times"]) /
                                                statistics.median(b["times"]))
        t2 = ref2.get((is_electra(r["model"]), r["B"], r["T"]))
        if t2:
            r["time_vs_torch2"] = "%.3f" % (statistics.median(res["times"]) /
                                            statistics.median(t2["times"]))
            if res.get(mem) is not None and t2.get(mem) is not None:
                r["rss_vs_torch2"] = "%.3f" % (res[mem] / max(1, t2[mem]))
            if res.get("arena_peak") is not None and t2.get(arena_ref) is not None:
                r["arena_vs_torch2"] = "%.3f" % (res["arena_peak"] / max(1, t2[arena_ref]))
        t = ref.get((is_electra(r["model"]), r["B"], r["T"]))
        if not t:
            continue
        r["time_vs_torch"] = "%.3f" % (statistics.median(res["times"]) /
                                       statistics.median(t["times"]))
        if res.get(mem) is not None and t.get(mem) is not None:
            r[mem_col] = "%.3f" % (res[mem] / max(1, t[mem]))
        if res.get("arena_peak") is not None and t.get(arena_ref) is not None:
            r["arena_vs_torch"] = "%.3f" % (res["arena_peak"] / max(1, t[arena_ref]))


def write_csv(rows, path, columns=COLUMNS, **ratios):
    """Every row so far (rewritten whole: a cut-short run keeps its rows);
    `ratios`: add_ratios' keywords."""
    add_ratios(rows, **ratios)
    with open(path + ".tmp", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)
    os.replace(path + ".tmp", path)


def plot(rows, path, title, mem="rss_growth", mem_label="RSS growth"):
    """Left: memory `mem` (a worker's byte count) against T; right: step
    time against that memory."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    series = {}
    for r in rows:
        if r.get("_res"):
            series.setdefault("%s %s (%s)%s" % (r["side"], r["model"], r["variant"],
                                                 ", B=1 fit search" if r["table"] == "fit"
                                                 else ""), []).append(r)
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 5.2))
    for label, rs in sorted(series.items()):
        rs.sort(key=lambda r: r["T"])
        rs = [r for r in rs if r["_res"].get(mem) is not None]
        if not rs:
            continue
        T = [r["T"] for r in rs]
        mb = [r["_res"][mem] / 2**20 for r in rs]
        sec = [statistics.median(r["_res"]["times"]) for r in rs]
        style = ":" if rs[0]["table"] == "fit" else \
            "--" if rs[0]["side"] in ("torch", "torch2") else "-"
        a.plot(T, mb, style, marker="o", label=label)
        b.plot(mb, sec, style, marker="o", label=label)
        for m, s, t in zip(mb, sec, T):
            b.annotate("T%d" % t, (m, s), fontsize=7, xytext=(3, 3), textcoords="offset points")
    a.set_xscale("log", base=2)
    a.set_yscale("log")
    a.set_xlabel("sequence length T (table: batch = tokens / T; fit search: batch 1)")
    a.set_ylabel("peak training memory: %s (MiB)" % mem_label)
    a.set_title("peak training memory vs sequence length")
    b.set_xscale("log")
    b.set_yscale("log")
    b.set_xlabel("peak training memory: %s (MiB)" % mem_label)
    b.set_ylabel("step time (s, median)")
    b.set_title("step time vs memory")
    for ax in (a, b):
        ax.grid(True, which="both", alpha=0.3)
    if series:
        a.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_gpu_csvs(ap, args):
    """--plot-gpu-csv PNG CSV...: the rows of several --run-gpu CSVs (the
    GPU table is often gathered over device calls of its own) in one plot,
    the same as --run-gpu draws; a row whose step did not run is left out."""
    if len(args) < 2:
        ap.error("--plot-gpu-csv: a PNG path and at least one CSV")
    png, rows, devices = args[0], [], set()
    for path in args[1:]:
        try:
            with open(path, newline="") as f:
                got = list(csv.DictReader(f))
        except OSError as e:
            ap.error("--plot-gpu-csv: %s" % e)
        if got and not {"step_ms", "dev_used_MiB", "T"} <= set(got[0]):
            ap.error("--plot-gpu-csv: %s is not a --run-gpu CSV" % path)
        for r in got:
            if not r["step_ms"] or not r["dev_used_MiB"]:
                continue
            r["T"] = int(r["T"])
            r["_res"] = dict(times=[float(r["step_ms"]) / 1e3],
                             dev_used=float(r["dev_used_MiB"]) * 2**20)
            devices.add(r["device"])
            rows.append(r)
    plot(rows, png, "nncc vs PyTorch BERT-small training step on %s: %d rows of %d CSVs "
         "(device calls of their own; the CSVs name them)" % (
             ", ".join(sorted(devices)) or "-", len(rows), len(args) - 1),
         mem="dev_used", mem_label="device memory used")
    print("# wrote %s (%d rows)" % (png, len(rows)))
    return 0


# ---------------------------------------------------------------------------
# the GPU table: --prepare-gpu here (nncc, nvcc), --run-gpu on the GPU machine
# ---------------------------------------------------------------------------
GPU_MODELS = ["bert_small", "reformer_lsh", "reversible_dilated_bert"]
MANIFEST = "manifest.json"


def cuda_train_reason(lib_dir, name):
    """None when lib<name>.so trains on CUDA, else why not (the generated
    <name>.cu's cuda_train_unsupported, as utils/device_prep.sh reads it)."""
    cu = os.path.join(lib_dir, name + ".cu")
    if not os.path.exists(cu):
        return "compiled without CUDA code"
    m = re.search(r"_cuda_train_unsupported\(void\) \{\s*return (.*?);", open(cu).read())
    if not m:
        return "no cuda_train_unsupported in %s.cu" % name
    return None if m.group(1) == "NULL" else m.group(1)


def gpu_configs(seqs, tokens, only, have_budget):
    """The --run-gpu rows in order (every T's nncc rows, then its torch rows;
    T in the order given: the seed configuration first)."""
    out = []
    for T in seqs:
        B = max(1, tokens // T)
        for name in [m for m in NNCC_MODELS if m in only]:
            for variant in ["default"] + (["min"] if have_budget else []):
                out.append(dict(side="nncc", model=name, variant=variant, B=B, T=T,
                                name="%s-T%d-%s" % (name, T, variant)))
        if "torch" in only:
            for model in TORCH_MODELS:
                if not any(is_electra(m) == is_electra(model) for m in only & set(NNCC_MODELS)) \
                        and not only <= {"torch"}:
                    continue  # no nncc row of this family to compare with
                for variant in TORCH_VARIANTS:
                    out.append(dict(side="torch", model=model, variant=variant, B=B, T=T,
                                    note="position table S=%d" % T if T > SEED_S else ""))
    return out


def prepare_gpu(args, only):
    """Compiles every nncc configuration (--target, default cuda: CPU and
    CUDA code) into DIR/<name>/lib<model>.so.xz and writes DIR/manifest.json.
    Inputs are drawn on the GPU machine (make_inputs, seed 0), as bench/gpu.py
    does: the folder stays small."""
    import concurrent.futures
    import lzma
    import shutil
    import tempfile
    d = args.prepare_gpu
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    have_budget = budget_supported()
    configs = gpu_configs([int(t) for t in args.seqs.split(",")], args.tokens, only, have_budget)
    cache = tempfile.mkdtemp(prefix="nncc-memtable-")  # the widened .nn copies

    def build(c):
        try:
            so, note = compile_lib(c["model"], c["T"], c["B"],
                                   "min" if c["variant"] == "min" else None, cache,
                                   None if args.target == "cpu" else args.target)
            c["note"] = note
            c["cuda_train"] = cuda_train_reason(os.path.dirname(so), c["model"])
            os.makedirs(os.path.join(d, c["name"]))
            c["lib"] = os.path.join(c["name"], os.path.basename(so) + ".xz")
            with open(so, "rb") as f, lzma.open(os.path.join(d, c["lib"]), "wb") as g:
                shutil.copyfileobj(f, g)
        except Exception as e:  # a compile error is a row at run time
            c["error"] = str(e).strip().splitlines()[-1][:160]
        print("prepared %s%s" % (c["name"], ": " + c["error"] if c.get("error") else ""),
              file=sys.stderr, flush=True)
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as ex:
        list(ex.map(build, [c for c in configs if c["side"] == "nncc"]))
    shutil.rmtree(cache, ignore_errors=True)
    rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()
    man = dict(created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               nncc_commit=rev, target=args.target, tokens=args.tokens, input_seed=0,
               budget_flag=have_budget, configs=configs)
    with open(os.path.join(d, MANIFEST), "w") as f:
        json.dump(man, f, indent=1)
    print("# prepared %d configurations in %s" % (len(configs), d), file=sys.stderr)
    return 0 if not any(c.get("error") for c in configs) else 1


def load_manifest(d):
    """DIR/manifest.json, checked: every configuration names its side,
    model, variant, B and T; an nncc one its library (or its compile error)."""
    man = json.load(open(os.path.join(d, MANIFEST)))
    for c in man["configs"]:
        missing = [k for k in ("side", "model", "variant", "B", "T") if k not in c]
        if c.get("side") == "nncc" and not c.get("error"):
            missing += [k for k in ("lib", "cuda_train") if k not in c]
        if missing:
            raise ValueError("%s: configuration %s lacks %s" % (MANIFEST, c, missing))
    return man


def unpack_lib(d, c, work):
    """DIR/<lib>.xz decompressed under `work`; the path."""
    import lzma
    import shutil
    path = os.path.join(work, c["name"], os.path.basename(c["lib"])[:-len(".xz")])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with lzma.open(os.path.join(d, c["lib"])) as f, open(path, "wb") as g:
        shutil.copyfileobj(f, g)
    return path


def run_gpu(args):
    import shutil
    import tempfile
    import torch
    d = args.run_gpu
    man = load_manifest(d)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("memory_table.py --run-gpu: no CUDA device for torch (--device cpu runs the "
              "same libraries on the CPU)", file=sys.stderr)
        return 1
    out = args.out
    os.makedirs(out, exist_ok=True)
    where = benchrun.cpu_name()
    if args.device == "cuda":  # nvidia-smi: no CUDA context in this process
        p = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                           capture_output=True, text=True)
        where = p.stdout.strip().splitlines()[0] if p.returncode == 0 and p.stdout.strip() \
            else "a CUDA device"
    head = "%s, %s, torch %s, nncc %s (%s), %d reps%s" % (
        datetime.date.today().isoformat(), where, torch.__version__, man.get("nncc_commit"),
        man.get("target"), args.reps, ", %d threads" % args.threads
        if args.device == "cpu" else "")
    print("# nncc memory table on %s: %s" % (args.device, head), flush=True)
    csv_path = os.path.join(out, "memory_table_gpu.csv")
    ratios = dict(mem="dev_used", mem_col="dev_vs_torch",
                  arena_ref="dev_alloc_peak" if args.device == "cuda" else "dev_used")
    work = tempfile.mkdtemp(prefix="nncc-memtable-gpu-")
    rows, longest, t0 = [], 0.0, time.monotonic()
    configs = man["configs"]
    for i, c in enumerate(configs):
        left = args.budget_s - (time.monotonic() - t0) if args.budget_s else None
        # Stop starting configurations when the slowest so far would not fit.
        if left is not None and left < max(20.0, 1.5 * longest):
            print("# stopping: %.0f s of --budget-s %.0f left, the slowest configuration took "
                  "%.0f s; %d of %d configurations not run (from %s)" % (
                      left, args.budget_s, longest, len(configs) - i, len(configs),
                      c.get("name") or "torch %s %s T%d" % (c["model"], c["variant"], c["T"])),
                  flush=True)
            break
        res, err, note = None, "", c.get("note", "")
        if c.get("error"):
            err = "failed: compile: " + c["error"]
        elif c["side"] == "nncc" and args.device == "cuda" and c["cuda_train"]:
            err = "trains on the CPU only: " + c["cuda_train"]
        else:
            cfg = dict(side=c["side"], model=c["model"], variant=c["variant"], B=c["B"],
                       T=c["T"], reps=args.reps, threads=args.threads, device=args.device)
            t1 = time.monotonic()
            try:
                if c["side"] == "nncc":
                    cfg["lib"] = unpack_lib(d, c, work)
                res, err = run_worker(cfg, args.threads, "--gpu-worker",
                                      timeout=max(1.0, left) if left is not None else None)
            except Exception as e:
                err = "failed: %s" % str(e).strip().splitlines()[-1][:160]
            longest = max(longest, time.monotonic() - t1)
        r = row("table1", c["model"], c["side"], c["variant"], c["B"], c["T"], args.reps, res,
                "; ".join(x for x in (note, err) if x), device=args.device)
        rows.append(r)
        write_csv(rows, csv_path, GPU_COLUMNS, **ratios)  # after every row
        print("%-24s %-5s %-8s B%-4d T%-5d %9s ms  dev %8s MiB  arena %8s MiB  vs bert %6s  %s" % (
            r["model"], r["side"], r["variant"], r["B"], r["T"], r.get("step_ms") or "-",
            r.get("dev_used_MiB") or "-", r.get("arena_peak_MiB") or "-",
            r.get("time_vs_bert_small") or "-", r["note"]), flush=True)
    shutil.rmtree(work, ignore_errors=True)
    write_csv(rows, csv_path, GPU_COLUMNS, **ratios)
    png_path = os.path.join(out, "memory_table_gpu.png")
    plot(rows, png_path, "nncc vs PyTorch BERT-small training step on %s: %s" % (
        args.device, head), mem="dev_used",
        mem_label="device memory used" if args.device == "cuda" else "RSS over the start")
    print("# wrote %s and %s" % (csv_path, png_path))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", help="output directory (default build/memory_table, "
                    "with --run-gpu build/memory_table_gpu)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=None,
                    help="timed steps after one warm-up (default 3; --run-gpu 10)")
    ap.add_argument("--seqs", default=None,
                    help="sequence lengths T (default 128,512,2048,4096)")
    ap.add_argument("--tokens", type=int, default=8192, help="B x T of every table row")
    ap.add_argument("--only", default=None,
                    help="subset of: %s, torch, fit (torch: the torch rows of the "
                         "families named; default all, --prepare-gpu: %s,torch)" % (
                             ", ".join(NNCC_MODELS), ",".join(GPU_MODELS)))
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: B 2, T 32, 1 timed step, fit search up to T 64")
    ap.add_argument("--fit-gib", type=float, default=8.0)
    ap.add_argument("--fit-from", type=int, default=SEED_S, help="the fit search's first T")
    ap.add_argument("--fit-max-seq", type=int, default=262144)
    ap.add_argument("--fit-sides", default="nncc,torch,torch2,torch2-sdpa",
                    help="the fit searches run (subset of nncc, torch, torch2, torch2-sdpa: "
                         "reversible_dilated_bert, torch 1.13's, torch 2.x's plain and sdpa "
                         "BERT-small)")
    ap.add_argument("--mem-limit-gib", type=float, default=16.0,
                    help="address-space limit of a table worker beyond its imports")
    ap.add_argument("--torch2-python", default=benchrun.default_torch2(),
                    help="the interpreter of the torch 2.x rows (default: utils/setup.sh's "
                         "venv; none: no torch 2.x rows)")
    g = ap.add_argument_group("the GPU table (docs/benchmarks.md)")
    g.add_argument("--prepare-gpu", metavar="DIR",
                   help="here: compile every configuration for the GPU run into DIR")
    g.add_argument("--target", default="cuda", choices=["cuda", "all", "cpu"],
                   help="--prepare-gpu: nncc compile --target (default cuda; cpu: the "
                        "CPU code alone, for --device cpu)")
    g.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="--prepare-gpu: compiles at once")
    g.add_argument("--run-gpu", metavar="DIR",
                   help="on the GPU machine: run DIR's configurations, write "
                        "OUT/memory_table_gpu.csv and .png")
    g.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                   help="--run-gpu: where the steps run (cpu: a test without a GPU)")
    g.add_argument("--plot-gpu-csv", nargs="+", metavar=("PNG", "CSV"),
                   help="join --run-gpu CSVs (device calls of their own, e.g. one per T) "
                        "into one plot PNG")
    g.add_argument("--budget-s", type=float, default=0,
                   help="--run-gpu: start no configuration once the time left is under "
                        "1.5x the slowest so far (0: no limit)")
    args = ap.parse_args()
    if args.plot_gpu_csv:
        return plot_gpu_csvs(ap, args.plot_gpu_csv)
    gpu = bool(args.prepare_gpu or args.run_gpu)
    if args.prepare_gpu and args.run_gpu:
        ap.error("--prepare-gpu and --run-gpu are separate steps")
    if args.out is None:
        args.out = os.path.join(ROOT, "build", "memory_table_gpu" if gpu else "memory_table")
    if args.reps is None:
        args.reps = 10 if args.run_gpu else 3
    if args.seqs is None:
        args.seqs = "128,512,2048,4096"
    if args.only is None:
        args.only = ",".join(GPU_MODELS + ["torch"] if gpu else NNCC_MODELS + ["torch", "fit"])
    if args.quick:
        args.seqs, args.tokens, args.reps, args.fit_from, args.fit_max_seq = "32", 64, 1, 32, 64
    only = set(args.only.split(","))
    unknown = only - set(NNCC_MODELS + ["torch", "fit"])
    if unknown:
        ap.error("--only: unknown %s" % ", ".join(sorted(unknown)))
    if args.prepare_gpu:
        return prepare_gpu(args, only)
    if args.run_gpu:
        return run_gpu(args)

    import torch
    torch2 = args.torch2_python
    if torch2 == "none" or not os.path.exists(torch2):
        if torch2 != "none":
            print("# no %s: no torch 2.x rows (utils/setup.sh makes it)" % torch2)
        torch2 = None
    torch2_version = None
    if torch2:
        p = subprocess.run([torch2, "-c", "import torch; print(torch.__version__)"],
                           capture_output=True, text=True)
        torch2_version = p.stdout.strip() if p.returncode == 0 else None
        if not torch2_version:
            print("# %s cannot import torch: no torch 2.x rows" % torch2)
            torch2 = None
    os.makedirs(args.out, exist_ok=True)
    cache = os.path.join(args.out, "models")
    have_budget = budget_supported()
    no_budget = "" if have_budget else \
        "nncc compile has no --memory-budget: min-budget rows not run"
    head = "%s, %s (%d cores), %d threads, torch %s, %d reps, load average %s%s" % (
        datetime.date.today().isoformat(), benchrun.cpu_name(), os.cpu_count(), args.threads,
        torch.__version__, args.reps, " ".join("%.1f" % v for v in os.getloadavg()),
        ", QUICK" if args.quick else "")
    print("# nncc memory table: " + head, flush=True)
    print("# torch 2.x rows: %s" % ("torch %s (%s)" % (torch2_version, torch2) if torch2
                                     else "none"), flush=True)
    limit = int(args.mem_limit_gib * 2**30)

    rows = []
    csv_path = os.path.join(args.out, "memory_table.csv")

    def report(r):
        rows.append(r)
        write_csv(rows, csv_path)  # after every row: a long run's partial table survives
        print("%-6s %-24s %-5s %-10s B%-4d T%-6d %9s ms  rss +%8s MiB  arena %8s MiB  %s" % (
            r["table"], r["model"], r["side"], r["variant"], r["B"], r["T"],
            r.get("step_ms", "-"), r.get("rss_growth_MiB", "-"), r.get("arena_peak_MiB", "-"),
            r["note"]), flush=True)

    for T in [int(t) for t in args.seqs.split(",")]:
        B = max(1, args.tokens // T)
        for name in NNCC_MODELS:
            if name not in only:
                continue
            for variant, budget in [("default", None)] + ([("min", "min")] if have_budget else []):
                cfg = dict(side="nncc", model=name, B=B, T=T, reps=args.reps,
                           threads=args.threads, mem_limit=limit)
                try:
                    cfg["lib"], note = compile_lib(name, T, B, budget, cache)
                    res, err = run_worker(cfg, args.threads)
                except Exception as e:  # a compile error is a row, not the end of the table
                    note, res, err = "", None, "failed: %s" % str(e).strip().splitlines()[-1][:160]
                notes = "; ".join(x for x in (note, err, no_budget if variant == "default" else "")
                                  if x)
                report(row("table1", name, "nncc", variant, B, T, args.reps, res, notes))
        if "torch" in only:
            for model in TORCH_MODELS:
                if not any(is_electra(m) == is_electra(model) for m in only & set(NNCC_MODELS)) \
                        and not (only <= {"torch", "fit"}):
                    continue  # no nncc row of this family to compare with
                for variant in TORCH_VARIANTS:
                    cfg = dict(side="torch", model=model, variant=variant, B=B, T=T,
                               reps=args.reps, threads=args.threads, mem_limit=limit)
                    res, err = run_worker(cfg, args.threads)
                    note = "position table S=%d" % T if T > SEED_S else ""
                    report(row("table1", model, "torch", variant, B, T, args.reps, res,
                               "; ".join(x for x in (note, err) if x)))
                for variant in TORCH2_VARIANTS[model] if torch2 else []:
                    cfg = dict(side="torch2", model=model, variant=variant, B=B, T=T,
                               reps=args.reps, threads=args.threads, mem_limit=limit)
                    res, err = run_worker(cfg, args.threads, python=torch2)
                    note = "position table S=%d" % T if T > SEED_S else ""
                    report(row("table1", model, "torch2", variant, B, T, args.reps, res,
                               "; ".join(x for x in (note, err) if x)))

    longest, capped = {}, {}
    if "fit" in only:
        fit_limit = int((args.fit_gib + 1) * 2**30)  # room to measure a step just over
        budget = "min" if have_budget else None
        searches = [("nncc", "reversible_dilated_bert", "min" if have_budget else "default"),
                    ("torch", "bert_small", "plain")]
        if torch2:
            searches += [("torch2", "bert_small", "plain"), ("torch2", "bert_small", "sdpa")]
        names = {"nncc": "nncc", "torch": "torch", "torch2 plain": "torch2",
                 "torch2 sdpa": "torch2-sdpa"}
        keep = args.fit_sides.split(",")
        unknown = set(keep) - set(names.values())
        if unknown:
            sys.exit("bench/memory_table.py: unknown --fit-sides %s (known: %s)" % (
                ",".join(sorted(unknown)), ",".join(names.values())))
        searches = [s for s in searches
                    if names[s[0] if s[0] != "torch2" else "torch2 " + s[2]] in keep]
        for side, model, variant in searches:
            key = side if side != "torch2" else "torch2 " + variant
            T = args.fit_from
            while T <= args.fit_max_seq:
                cfg = dict(side=side, model=model, variant=variant, B=1, T=T, reps=1,
                           threads=args.threads, mem_limit=fit_limit)
                note = ""
                try:
                    if side == "nncc":
                        cfg["lib"], note = compile_lib(model, T, 1, budget, cache)
                    res, err = run_worker(cfg, args.threads,
                                          python=torch2 if side == "torch2" else None)
                except Exception as e:
                    res, err = None, "failed: %s" % str(e).strip().splitlines()[-1][:160]
                ok = res is not None and res["train"] <= args.fit_gib * 2**30
                report(row("fit", model, side, variant, 1, T, 1, res,
                           "; ".join(x for x in (note, err, "training memory %s %.0f GiB" % (
                               "<=" if ok else ">", args.fit_gib)) if x),
                           fits="yes" if ok else "no"))
                if not ok:
                    break
                longest[key] = T
                T *= 2
            else:
                capped[key] = True

        def said(side):  # a search that ran into --fit-max-seq found a lower bound
            t = longest.get(side)
            return "none" if t is None else (">= %d (capped)" % t if capped.get(side) else str(t))
        msg = "longest sequence at batch 1 within %g GiB (doubling from %d, up to %d): " \
              % (args.fit_gib, args.fit_from, args.fit_max_seq)
        searched = [s[0] if s[0] != "torch2" else "torch2 " + s[2] for s in searches]
        parts = []
        for key, what in [("nncc", "nncc reversible_dilated_bert"),
                          ("torch", "torch %s bert_small" % torch.__version__),
                          ("torch2 plain", "torch %s bert_small" % torch2_version),
                          ("torch2 sdpa", "torch %s bert_small sdpa" % torch2_version)]:
            if key not in searched:
                continue
            part = "%s %s" % (what, said(key))
            if key != "nncc" and longest.get("nncc") and longest.get(key):
                part += " (nncc %s%.0fx)" % (">= " if capped.get("nncc") else "",
                                             longest["nncc"] / longest[key])
            parts.append(part)
        msg += ", ".join(parts)
        print("# " + msg)

    write_csv(rows, csv_path)
    png_path = os.path.join(args.out, "memory_table.png")
    plot(rows, png_path, "nncc vs PyTorch BERT-small training step: " + head)
    print("# wrote %s and %s" % (csv_path, png_path))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(json.loads(sys.argv[2]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--gpu-worker":
        gpu_worker(json.loads(sys.argv[2]))
    else:
        sys.exit(main())
