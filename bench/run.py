#!/usr/bin/env python3
"""Time nncc's generated CPU libraries against PyTorch, same machine, same run,
same thread count.

    /usr/bin/python3 bench/run.py [--threads N] [--reps R] [--only lstm,gru,...]
                                  [--quick] [--markdown]

Benchmarks (docs/benchmarks.md):
  lstm      1-layer LSTM forward, B=32 T=128 E=H=256        vs torch.nn.LSTM
  gru       1-layer GRU forward,  B=32 T=128 E=H=256        vs torch.nn.GRU
  encoder   post-LN encoder layer, B=8 T=512 d=256, 4 heads, ff 1024, GELU
                                                            vs nn.TransformerEncoderLayer
  train     training steps (forward + backward + one Adam update; nncc's
            generated train_step vs torch zero_grad/forward/MSE/backward/
            Adam.step, train mode): LSTM and GRU B=32 T=128 E=H=256, one
            post-LN encoder layer B=8 T=512 d=256 4 heads ff 1024 GELU,
            dropout 0 on both sides
  attn      B=1 T=4096 E=256 4 heads: nncc dense, nncc dilated (window 64,
            dilation 2, global [0]) vs torch nn.MultiheadAttention dense (and
            dense with the equivalent Longformer mask, same output as dilated)

Each side runs in its own fresh subprocess (one after the other, never at
once) with OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = torch.set_num_threads = N.
The nncc side loads lib<model>.so (built once by `nncc compile`) through its C
ABI with ctypes and times `forward` only (inputs set once, no process start);
the torch side times the module call under torch.no_grad() (inference, eval).
One warm-up, then R timed repetitions: min / median / max; ratio = torch
median / nncc median (> 1: nncc faster); GFLOP/s from the nominal FLOP count;
memory: the worker process's peak RSS (VmHWM: imports, weights, inputs and
runs) and its growth over the RSS just before the first forward, plus nncc's arena size and high-water mark (memory_stats).
NNCC_BENCH_WORKER_PREFIX (a command and its arguments) runs the nncc worker
under it: `perf record -g -o F` for a profile, `env LD_PRELOAD=...` to time
another build's kernel library against the same generated code.
Installs nothing. Needs Debian's python3-torch and libopenblas0-pthread
(without it Debian's torch falls back to the reference BLAS).
"""
import argparse
import datetime
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "utils"))

SHAPES = {
    "lstm": dict(B=32, T=128, E=256, H=256),
    "gru": dict(B=32, T=128, E=256, H=256),
    "encoder": dict(B=8, T=512, D=256, A=4, FF=1024),
    "attn": dict(B=1, T=4096, D=256, A=4, W=64, DIL=2),
    "lstm_train": dict(B=32, T=128, E=256, H=256),
    "gru_train": dict(B=32, T=128, E=256, H=256),
    "encoder_train": dict(B=8, T=512, D=256, A=4, FF=1024),
}
QUICK = {
    "lstm": dict(B=4, T=16, E=256, H=256),
    "gru": dict(B=4, T=16, E=256, H=256),
    "encoder": dict(B=2, T=64, D=256, A=4, FF=1024),
    "attn": dict(B=1, T=256, D=256, A=4, W=64, DIL=2),
    "lstm_train": dict(B=4, T=16, E=256, H=256),
    "gru_train": dict(B=4, T=16, E=256, H=256),
    "encoder_train": dict(B=2, T=64, D=256, A=4, FF=1024),
}


def rss_now():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def maxrss():
    """Peak resident bytes of this process image (VmHWM; ru_maxrss would
    include the parent's size: Linux carries it over fork + exec)."""
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def timeit(f, reps):
    f()  # warm-up
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return ts


def flops(kind, s):
    if kind.endswith("_train"):  # backward ~ 2x forward
        return 3.0 * flops(kind[:-len("_train")], s)
    if kind in ("lstm", "gru"):
        G = 4 if kind == "lstm" else 3
        return 2.0 * s["B"] * s["T"] * G * s["H"] * (s["E"] + s["H"])
    B, T, D = s["B"], s["T"], s["D"]
    proj = 2.0 * B * T * D * 4 * D  # q, k, v and out projections
    if kind == "encoder":
        return proj + 4.0 * B * T * T * D + 4.0 * B * T * D * s["FF"]
    if kind == "attn_dense" or kind == "attn_masked":
        return proj + 4.0 * B * T * T * D
    if kind == "attn_dilated":  # w+1 band keys per query (+1 global)
        return proj + 4.0 * B * T * (s["W"] + 2) * D
    raise KeyError(kind)


# ---------------------------------------------------------------------------
# workers (run in a subprocess: python bench/run.py --worker SIDE KIND JSON)
# ---------------------------------------------------------------------------
def worker(side, kind, cfg):
    s, reps, threads, d = cfg["shape"], cfg["reps"], cfg["threads"], cfg["dir"]
    import numpy as np
    import nncc_testing as nt
    inputs = nt.load_safetensors(os.path.join(d, "inputs.safetensors"))
    res = {}
    if kind.endswith("_train"):
        return train_worker(side, kind, cfg, inputs)
    if side == "nncc":
        lib = nt.Library(cfg["lib"])
        ctx = lib.context(weights=os.path.join(d, "nncc.safetensors"))
        ctx.set_inputs(inputs)
        base = rss_now()
        ts = timeit(ctx.forward, reps)
        res["arena"], res["arena_peak"] = ctx.memory_stats()
        np.save(os.path.join(d, "out-nncc.npy"), ctx.output("y"))
    else:
        import torch
        torch.set_num_threads(threads)
        m = build_torch(kind, s)
        m.load_state_dict({k: torch.from_numpy(v) for k, v in
                           nt.load_safetensors(os.path.join(d, "torch.safetensors")).items()},
                          strict=True)
        m.eval()
        x = torch.from_numpy(inputs["x"])
        mask = None
        if kind == "attn_masked":
            i = torch.arange(s["T"])[:, None]
            j = torch.arange(s["T"])[None, :]
            band = ((i - j).abs() <= (s["W"] // 2) * s["DIL"]) & ((i - j) % s["DIL"] == 0)
            mask = ~(band | (i == 0) | (j == 0))

        def run():
            with torch.no_grad():
                if kind.startswith("attn"):
                    return m(x, x, x, need_weights=False, attn_mask=mask)[0]
                if kind == "encoder":
                    return m(x)
                return m(x)[0]
        base = rss_now()
        ts = timeit(run, reps)
        np.save(os.path.join(d, "out-torch-%s.npy" % kind), run().numpy())
    res["times"] = ts
    res["maxrss"] = maxrss()
    res["rss_growth"] = max(0, maxrss() - base)
    print(json.dumps(res))


def train_worker(side, kind, cfg, inputs):
    s, reps, threads, d = cfg["shape"], cfg["reps"], cfg["threads"], cfg["dir"]
    import numpy as np
    import nncc_testing as nt
    res = {}
    if side == "nncc":
        import nncc_train as ntr
        lib = ntr.TrainLib(cfg["lib"])
        ctx = lib.context(weights=os.path.join(d, "nncc.safetensors"))
        ctx.set_inputs(inputs)
        base = rss_now()
        ts = timeit(ctx.train_step, reps)
        res["arena"], res["arena_peak"] = ctx.memory_stats()
        np.save(os.path.join(d, "out-nncc.npy"), ctx.output("loss"))
    else:
        import torch
        torch.set_num_threads(threads)
        m = build_torch(kind, s)
        m.load_state_dict({k: torch.from_numpy(v) for k, v in
                           nt.load_safetensors(os.path.join(d, "torch.safetensors")).items()},
                          strict=True)
        m.train()
        x, target = torch.from_numpy(inputs["x"]), torch.from_numpy(inputs["target"])
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)
        last = [None]

        def run():
            opt.zero_grad(set_to_none=True)
            y = m(x) if kind == "encoder_train" else m(x)[0]
            loss = torch.nn.functional.mse_loss(y, target)
            loss.backward()
            opt.step()
            last[0] = loss.detach()
        base = rss_now()
        ts = timeit(run, reps)
        np.save(os.path.join(d, "out-torch-%s.npy" % kind), last[0].numpy())
    res["times"] = ts
    res["maxrss"] = maxrss()
    res["rss_growth"] = max(0, maxrss() - base)
    print(json.dumps(res))


def build_torch(kind, s):
    import torch
    if kind == "encoder_train":
        return torch.nn.TransformerEncoderLayer(s["D"], s["A"], s["FF"], dropout=0.0,
                                                activation="gelu", batch_first=True,
                                                norm_first=False)
    kind = kind.replace("_train", "")
    if kind == "lstm":
        return torch.nn.LSTM(s["E"], s["H"], batch_first=True)
    if kind == "gru":
        return torch.nn.GRU(s["E"], s["H"], batch_first=True)
    if kind == "encoder":
        return torch.nn.TransformerEncoderLayer(s["D"], s["A"], s["FF"], dropout=0.1,
                                                activation="gelu", batch_first=True,
                                                norm_first=False)
    return torch.nn.MultiheadAttention(s["D"], s["A"], batch_first=True)


# ---------------------------------------------------------------------------
# driver
# ---------------------------------------------------------------------------
def run_worker(side, kind, cfg, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), PYTHONPATH=os.path.join(ROOT, "utils"))
    pre = os.environ.get("NNCC_BENCH_WORKER_PREFIX", "").split() if side == "nncc" else []
    p = subprocess.run(pre + [sys.executable, os.path.abspath(__file__), "--worker", side, kind,
                        json.dumps(cfg)], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError("%s %s worker failed:\n%s%s" % (side, kind, p.stdout, p.stderr))
    return json.loads(p.stdout.strip().splitlines()[-1])


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def fmt_ms(ts):
    return "%.2f/%.2f/%.2f" % (min(ts) * 1e3, statistics.median(ts) * 1e3, max(ts) * 1e3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=min(os.cpu_count() or 1, 2),
                    help="threads of both sides (default: min(cores, 2))")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", default="lstm,gru,encoder,attn,lstm_train,gru_train,encoder_train")
    ap.add_argument("--quick", action="store_true", help="small shapes (a smoke test)")
    ap.add_argument("--markdown", action="store_true", help="also print markdown table rows")
    ap.add_argument("--json", help="write all results to this file")
    args = ap.parse_args()

    import numpy as np
    import torch
    import nncc_testing as nt

    shapes = QUICK if args.quick else SHAPES
    print("# nncc bench: %s, %s (%d cores), %d threads, torch %s, reps %d%s, load average %s" % (
        datetime.date.today().isoformat(), cpu_name(), os.cpu_count(), args.threads,
        torch.__version__, args.reps, ", QUICK shapes" if args.quick else "",
        " ".join("%.1f" % v for v in os.getloadavg())))
    try:
        blas = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
        print("# libblas.so.3 -> %s (torch and nncc both call it / OpenBLAS)" % blas)
    except Exception:
        pass
    torch.manual_seed(0)
    rows, results = [], []
    cache = tempfile.mkdtemp(prefix="nncc-bench-")
    for name in args.only.split(","):
        s = shapes[name]
        if name == "attn":
            cases = [("attn_dense", "attn_dense.nn", "attn_dense"),
                     ("attn_dilated", "attn_dilated.nn", "attn_dense"),
                     ("attn_dilated", "attn_dilated.nn", "attn_masked")]
        else:
            cases = [(name, name + ".nn", name)]
        for nn_kind, nn_file, th_kind in cases:
            d = os.path.join(cache, "%s-%s" % (nn_kind, th_kind))
            os.makedirs(d, exist_ok=True)
            m = build_torch(th_kind, s)
            nt.randomize_(m) if th_kind.startswith("attn") else None
            w = {k: nt.to_numpy(v) for k, v in m.state_dict().items()}
            dims = (s["B"], s["T"], s.get("E", s.get("D")))
            x = torch.randn(*dims)
            prefix = {"lstm": "r.", "gru": "r.", "encoder": "enc."}.get(
                name.replace("_train", ""), "a.")
            nt.save_safetensors(os.path.join(d, "torch.safetensors"), w)
            nt.save_safetensors(os.path.join(d, "nncc.safetensors"),
                                {prefix + k: v for k, v in w.items()})
            ins = {"x": x}
            if name.endswith("_train"):
                ins["target"] = torch.randn(*dims[:2], s.get("H", s.get("D")))
            nt.save_safetensors(os.path.join(d, "inputs.safetensors"), ins)
            lib = nt.compile_model(os.path.join(HERE, "models", nn_file),
                                   ["--grad"] if name.endswith("_train") else [])
            cfg = dict(shape=s, reps=args.reps, threads=args.threads, dir=d, lib=lib)
            rn = run_worker("nncc", nn_kind, cfg, args.threads)
            rt = run_worker("torch", th_kind, cfg, args.threads)
            yn = np.load(os.path.join(d, "out-nncc.npy"))
            yt = np.load(os.path.join(d, "out-torch-%s.npy" % th_kind))
            same = not (nn_kind == "attn_dilated" and th_kind == "attn_dense")
            e = nt.err(yn, yt) if same else float("nan")
            tn, tt = statistics.median(rn["times"]), statistics.median(rt["times"])
            label = {"lstm": "LSTM fwd B%(B)d T%(T)d H%(H)d", "gru": "GRU fwd B%(B)d T%(T)d H%(H)d",
                     "lstm_train": "LSTM train step B%(B)d T%(T)d H%(H)d",
                     "gru_train": "GRU train step B%(B)d T%(T)d H%(H)d",
                     "encoder_train": "encoder train step B%(B)d T%(T)d d%(D)d",
                     "encoder": "encoder layer B%(B)d T%(T)d d%(D)d",
                     "attn_dense": "dense attention T%(T)d E%(D)d",
                     "attn_dilated": "dilated w%(W)d d%(DIL)d T%(T)d"}[nn_kind] % s
            vs = {"attn_masked": "torch dense+mask", "attn_dense": "torch dense"}.get(th_kind, "torch")
            fl_n, fl_t = flops(nn_kind, s), flops(th_kind, s)
            r = dict(name=label, vs=vs, nncc_ms=[t * 1e3 for t in rn["times"]],
                     torch_ms=[t * 1e3 for t in rt["times"]], ratio=tt / tn,
                     nncc_gflops=fl_n / tn / 1e9, torch_gflops=fl_t / tt / 1e9,
                     nncc_maxrss=rn["maxrss"], torch_maxrss=rt["maxrss"],
                     nncc_rss_growth=rn["rss_growth"], torch_rss_growth=rt["rss_growth"],
                     arena=rn["arena"], arena_peak=rn["arena_peak"], err=e)
            results.append(r)
            print("%-30s nncc %s ms  %-16s %s ms  ratio %.2fx  GFLOP/s %.1f vs %.1f  "
                  "peak RSS %.0f vs %.0f MiB (growth %.0f vs %.0f)  arena %.1f MiB  err %.1e" % (
                      label, fmt_ms(rn["times"]), vs, fmt_ms(rt["times"]), r["ratio"],
                      r["nncc_gflops"], r["torch_gflops"], rn["maxrss"] / 2**20,
                      rt["maxrss"] / 2**20, rn["rss_growth"] / 2**20, rt["rss_growth"] / 2**20,
                      rn["arena_peak"] / 2**20, e))
            sys.stdout.flush()
            rows.append("| %s | %s | %s | %s | %.2f× | %.1f / %.1f | %.0f / %.0f | %.1f |" % (
                label, fmt_ms(rn["times"]), vs, fmt_ms(rt["times"]), r["ratio"], r["nncc_gflops"],
                r["torch_gflops"], rn["maxrss"] / 2**20, rt["maxrss"] / 2**20,
                rn["arena_peak"] / 2**20))
    if args.markdown:
        print()
        print("| benchmark | nncc min/med/max ms | vs | torch min/med/max ms | torch/nncc | "
              "GFLOP/s nncc / torch | peak RSS MiB nncc / torch | nncc arena MiB |")
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(r)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(date=datetime.date.today().isoformat(), cpu=cpu_name(),
                           threads=args.threads, reps=args.reps, results=results), f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]))
    else:
        main()
