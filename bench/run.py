#!/usr/bin/env python3
"""Time nncc's generated CPU libraries against the strongest CPU peers in one
run: PyTorch 2.x eager and torch.compile (inductor), ONNX Runtime (the same
torch module exported with torch.onnx.export; for the encoders also ORT's
transformer optimiser, "fused"), beside Debian's PyTorch 1.13 (the old peer).

    /usr/bin/python3 bench/run.py [--threads N] [--reps R] [--only CASES]
                                  [--quick] [--markdown] [--json FILE]
                                  [--torch2-python PY | none] [--bert-batches 8,32,64]

Cases (--only takes these names, comma-separated; docs/benchmarks.md):
  lstm, gru        1-layer LSTM / GRU forward, B32 T128 E=H=256 (bench/models)
  encoder          post-LN encoder layer forward, B8 T512 d256, 4 heads, ff 1024
  attn             B1 T4096 E256 4 heads: dense, and dilated (w64 d2, global [0])
                   against the dense call with the equivalent Longformer mask
  lstm_train, gru_train, encoder_train
                   training steps (forward, MSE, backward, Adam)
  bert, bert_train models/bert_small.nn inference / training step (its AdamW),
                   B of --bert-batches (default 8,32), T128
  bilstm, bilstm_train          models/bilstm_tagger.nn, B32 T64, packed lengths
  gru_forecaster, gru_forecaster_train   models/gru_forecaster.nn, B64 T64
  ode_rnn, ode_rnn_train        models/ode_rnn.nn, B32 T32
  latency          batch-1 serving: BERT-small B1 T128, LSTM B1 T128

Sides: nncc (lib<model>.so through its C ABI, utils/nncc_testing), torch 1.13
(/usr/bin/python3), torch 2.x eager and torch.compile, ORT and ORT fused
(--torch2-python, default the venv utils/setup.sh makes). The torch modules
are bench/peers.py's twins of the nncc models with the same parameter names:
one weights file and one inputs file feed every side. Every side runs in its
own worker process, all started before timing (set-up, export, compilation
and one warm-up call each, one worker at a time), then R interleaved rounds:
each round gives every side one turn, one after the other (the order rotates
from round to round), so drift and the other tenants' load hit all sides.
In its turn a side makes --warm untimed calls (default 1) and then the timed
one, while every other worker's process group is stopped (SIGSTOP): an idle
side's spinning thread pool (OpenMP's and torch's spin for up to 200 ms after
a call) cannot take the cores from the timed one, and the timed call does not
pay for caches, clocks and memory bandwidth that went cold while the others
ran (on the 2-core VM a 16 MB streaming loop takes twice as long after
200 ms asleep).
Medians; the ratio best peer / nncc (> 1: nncc faster) over torch 2.x eager,
torch.compile, ORT and ORT fused. The output of the warm-up call (the first
training step's loss) of every peer is compared with nncc's; a row whose
outputs differ beyond the case's tolerance says MISMATCH. A side that cannot
run a case (an export or a compilation that fails) says why in the row.
GFLOP/s from peers.flops()'s analytic counts; share = GFLOP/s over this
CPU's fp32 FMA peak at the same thread count, measured by bench/fma_peak.c at
the start and the end of the run.
NNCC_BENCH_WORKER_PREFIX (a command and its arguments) runs the nncc worker
under it (`perf record -g -o F`, `env LD_PRELOAD=...`).
Installs nothing.
"""
import argparse
import datetime
import json
import os
import platform
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "utils"))
sys.path.insert(0, HERE)

SIDES = ["nncc", "torch1", "torch2", "compile", "ort", "ort_fused"]
PEERS = ["torch2", "compile", "ort", "ort_fused"]  # the strongest peers; torch1: the old one
TITLE = {"nncc": "nncc", "torch1": "torch 1.13", "torch2": "torch 2.x", "compile": "torch.compile",
         "ort": "ORT", "ort_fused": "ORT fused"}

R = dict(B=32, T=128, E=256, H=256)
ENC = dict(B=8, T=512, D=256, A=4, FF=1024)
ATT = dict(B=1, T=4096, D=256, A=4, W=64, DIL=2)
# (case group, kind, shape, label)
FULL = [
    ("lstm", "lstm", R, "LSTM fwd B%(B)d T%(T)d H%(H)d"),
    ("gru", "gru", R, "GRU fwd B%(B)d T%(T)d H%(H)d"),
    ("encoder", "encoder", ENC, "encoder layer fwd B%(B)d T%(T)d d%(D)d"),
    ("attn", "attn_dense", ATT, "dense attention B%(B)d T%(T)d E%(D)d"),
    ("attn", "attn_dilated", ATT, "dilated attn w%(W)d d%(DIL)d T%(T)d (torch: mask)"),
    ("lstm_train", "lstm_train", R, "LSTM train step B%(B)d T%(T)d H%(H)d"),
    ("gru_train", "gru_train", R, "GRU train step B%(B)d T%(T)d H%(H)d"),
    ("encoder_train", "encoder_train", ENC, "encoder layer train step B%(B)d T%(T)d"),
    ("bert", "bert_small", None, "BERT-small inference B%(B)d T%(T)d"),
    ("bert_train", "bert_small_train", None, "BERT-small train step B%(B)d T%(T)d"),
    ("bilstm", "bilstm_tagger", dict(B=32, T=64), "bi-LSTM tagger inference B%(B)d T%(T)d"),
    ("bilstm_train", "bilstm_tagger_train", dict(B=32, T=64),
     "bi-LSTM tagger train step B%(B)d T%(T)d"),
    ("gru_forecaster", "gru_forecaster", dict(B=64, T=64),
     "GRU forecaster inference B%(B)d T%(T)d"),
    ("gru_forecaster_train", "gru_forecaster_train", dict(B=64, T=64),
     "GRU forecaster train step B%(B)d T%(T)d"),
    ("ode_rnn", "ode_rnn", dict(B=32, T=32), "ODE-RNN inference B%(B)d T%(T)d"),
    ("ode_rnn_train", "ode_rnn_train", dict(B=32, T=32), "ODE-RNN train step B%(B)d T%(T)d"),
    ("latency", "bert_small", dict(B=1, T=128), "latency: BERT-small B%(B)d T%(T)d"),
    ("latency", "lstm", dict(R, B=1), "latency: LSTM B%(B)d T%(T)d H%(H)d"),
]
QR = dict(B=2, T=8, E=256, H=256)
QENC = dict(B=2, T=16, D=256, A=4, FF=1024)
QUICK = {"lstm": QR, "gru": QR, "encoder": QENC, "attn_dense": dict(ATT, T=128),
         "attn_dilated": dict(ATT, T=128), "lstm_train": QR, "gru_train": QR,
         "encoder_train": QENC, "bert_small": dict(B=2, T=16), "bert_small_train": dict(B=2, T=16),
         "bilstm_tagger": dict(B=3, T=8), "bilstm_tagger_train": dict(B=3, T=8),
         "gru_forecaster": dict(B=3, T=8), "gru_forecaster_train": dict(B=3, T=8),
         "ode_rnn": dict(B=3, T=5), "ode_rnn_train": dict(B=3, T=5)}
QUICK_LATENCY = {"bert_small": dict(B=1, T=16), "lstm": dict(QR, B=1)}


def tolerance(kind):
    """Largest output difference accepted (nncc_testing's err metric:
    max|a - b| / max(1, max|b|)): fp32 sums in another order, through up to
    12 layers. The training steps with dropout (peers.DROPOUT_TRAIN: BERT-small,
    the tagger) draw other masks on every side, so their first-step losses
    agree only roughly (6.7e-2 apart at B2 T16, 32 tokens): a coarse check
    there; the same weights are checked exactly by the inference rows."""
    import peers
    if kind in peers.DROPOUT_TRAIN:
        return 1.5e-1
    return 1e-3 if peers.base(kind) == "bert_small" else 2e-4


def cases(args):
    out = []
    only = args.only.split(",")
    for group, kind, s, label in FULL:
        if group not in only:
            continue
        if args.quick:
            shapes = [QUICK_LATENCY[kind] if group == "latency" else QUICK[kind]]
        elif s is None:
            shapes = [dict(B=b, T=128) for b in args.bert_batches]
        else:
            shapes = [s]
        for sh in shapes:
            out.append(dict(group=group, kind=kind, shape=sh, label=label % sh))
    unknown = set(only) - {g for g, _, _, _ in FULL}
    if unknown:
        sys.exit("bench/run.py: unknown case(s) %s (known: %s)" % (
            ", ".join(sorted(unknown)), ", ".join(dict.fromkeys(g for g, _, _, _ in FULL))))
    return out


def sides_of(kind, torch2):
    import peers
    s = ["nncc", "torch1"]
    if torch2:
        s += ["torch2", "compile"]
        if not kind.endswith("_train"):
            s.append("ort")
            if peers.base(kind) in peers.ENCODERS:
                s.append("ort_fused")
    return s


# ---------------------------------------------------------------------------
# the FMA peak
# ---------------------------------------------------------------------------
def fma_peak(threads, cache):
    """(GFLOP/s, ISA): the best of 5 runs at `threads` threads and of
    threads x the best of 5 one-thread runs (another tenant's load lowers a
    run; the hardware's peak is the best seen)."""
    exe = os.path.join(cache, "fma_peak")
    if not os.path.exists(exe):
        p = subprocess.run(["cc", "-O2", "-march=native", "-pthread", "-o", exe,
                            os.path.join(HERE, "fma_peak.c"), "-lm"], capture_output=True, text=True)
        if p.returncode != 0:
            return None, "cc failed: " + (p.stderr.strip().splitlines() or ["?"])[-1]
    best_n = best_1 = 0.0
    isa = "?"
    for _ in range(5):
        for n in (threads, 1):
            out = subprocess.run([exe, str(n), "0.2"], capture_output=True, text=True).stdout.split()
            g, isa = float(out[0]), out[1]
            if n == threads:
                best_n = max(best_n, g)
            if n == 1:
                best_1 = max(best_1, g)
    return max(best_n, threads * best_1), "%s; %d threads %.0f, 1 thread %.0f" % (
        isa, threads, best_n, best_1)


# ---------------------------------------------------------------------------
# workers: python bench/run.py --worker SIDE CFG-JSON; a line protocol on
# stdin / stdout: READY {info} | FAIL reason, then `run` -> T seconds, `stop`
# -> DONE {info}. Everything else the libraries print goes to stderr (a log).
# ---------------------------------------------------------------------------
def one_line(e):
    lines = [l.strip() for l in str(e).strip().splitlines() if l.strip()]
    text = "%s: %s" % (type(e).__name__, lines[0] if lines else "")
    return text[:240]


def rss_now():
    """Resident bytes of this process now (bench/memory_table.py uses it too)."""
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
    return 0


def torch_twin(cfg):
    """bench/peers.py's torch module of cfg's case with nncc's weights, on
    cfg's thread count."""
    import torch
    import nncc_testing as nt
    import peers
    torch.set_num_threads(cfg["threads"])
    m = peers.build(cfg["kind"], cfg["shape"])
    m.load_state_dict({k: torch.from_numpy(v) for k, v in
                       nt.load_safetensors(os.path.join(cfg["dir"], "weights.safetensors")).items()},
                      strict=True)
    return m


def torch_side(side, cfg, ins):
    """(call, output getter, info) of a torch side (1.13, 2.x eager, compile)."""
    import numpy as np
    import torch
    import peers
    kind = cfg["kind"]
    m = torch_twin(cfg)
    a = peers.args(kind, ins)
    f = torch.compile(m) if side == "compile" else m
    info = {"version": torch.__version__}
    last = [None]
    if kind.endswith("_train"):
        m.train()
        opt, clip = peers.optimizer(kind, m)

        def call():
            opt.zero_grad(set_to_none=True)
            loss = peers.loss(kind, f(*a), ins)
            loss.backward()
            if clip:
                torch.nn.utils.clip_grad_norm_(m.parameters(), clip)
            opt.step()
            last[0] = loss.detach()
    else:
        m.eval()

        def call():
            with torch.no_grad():
                last[0] = f(*a)
    return call, lambda: np.asarray(last[0].numpy(), dtype=np.float32), info


def compile_note():
    """torch.compile's graph breaks (dynamo's counters): the eager fallbacks."""
    try:
        from torch._dynamo.utils import counters
        gb = counters.get("graph_break", {})
        n = sum(gb.values())
        if n:
            why = sorted(gb.items(), key=lambda kv: -kv[1])[0][0].strip().splitlines()[0][:120]
            return "%d graph break(s), e.g. %s" % (n, why)
    except Exception:
        pass
    return None


def onnx_export(cfg, ins):
    """The eval torch module exported to DIR/model.onnx (torch 2.x's dynamo
    exporter, then the TorchScript one if it fails); returns the exporter."""
    import torch
    import peers
    path = os.path.join(cfg["dir"], "model.onnx")
    stamp = path + ".exporter"
    if os.path.exists(stamp):
        return open(stamp).read()
    kind = cfg["kind"]
    m = torch_twin(cfg)
    m.eval()
    a = peers.args(kind, ins)
    names = ["in%d" % i for i in range(len(a))]
    errors = []
    # Exported in grad mode: eval nn.TransformerEncoderLayer under no_grad
    # takes its fused fast path, an op the TorchScript exporter cannot export.
    for dynamo in (True, False):
        try:
            torch.onnx.export(m, a, path, input_names=names, output_names=["out"],
                              dynamo=dynamo, external_data=False)
            used = "dynamo export" if dynamo else "torchscript export (%s)" % errors[0]
            with open(stamp, "w") as f:
                f.write(used)
            return used
        except Exception as e:
            errors.append("%s exporter: %s" % ("dynamo" if dynamo else "torchscript", one_line(e)))
    raise RuntimeError("torch.onnx.export failed: " + "; ".join(errors))


def ort_side(side, cfg, ins):
    import numpy as np
    import onnxruntime as ort
    import peers
    kind, s = cfg["kind"], cfg["shape"]
    exporter = onnx_export(cfg, ins)
    path = os.path.join(cfg["dir"], "model.onnx")
    info = {"version": ort.__version__, "note": exporter}
    if side == "ort_fused":
        from onnxruntime.transformers import optimizer
        D = s.get("D", 256)
        A = s.get("A", 4)
        om = optimizer.optimize_model(path, model_type="bert", num_heads=A, hidden_size=D)
        stats = {k: v for k, v in om.get_fused_operator_statistics().items() if v}
        fused = os.path.join(cfg["dir"], "model-fused.onnx")
        om.save_model_to_file(fused)
        path = fused
        info["note"] += ", fused: " + (", ".join("%s %d" % kv for kv in sorted(stats.items()))
                                       or "nothing fused")
    so = ort.SessionOptions()
    so.intra_op_num_threads = cfg["threads"]
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    a = [x.numpy() for x in peers.args(kind, ins)]
    names = [i.name for i in sess.get_inputs()]
    if len(names) > len(a):
        raise RuntimeError("the ONNX model takes %d inputs, the module %d" % (len(names), len(a)))
    # the exporter drops inputs the graph does not read (by name inN)
    feed = {n: a[int(n[2:])] if n.startswith("in") and n[2:].isdigit() else a[k]
            for k, n in enumerate(names)}
    last = [None]

    def call():
        last[0] = sess.run(None, feed)[0]
    return call, lambda: np.asarray(last[0], dtype=np.float32), info


def nncc_side(cfg, ins):
    import numpy as np
    import nncc_testing as nt
    import peers
    kind = cfg["kind"]
    w = os.path.join(cfg["dir"], "weights.safetensors")
    if kind.endswith("_train"):
        import nncc_train as ntr
        ctx = ntr.TrainLib(cfg["lib"]).context(weights=w)
        call = ctx.train_step
    else:
        ctx = nt.Library(cfg["lib"]).context(weights=w)
        call = ctx.forward
    ctx.set_inputs(ins)
    name = peers.output_name(kind)
    info = {}

    def out():
        info["arena"], info["arena_peak"] = ctx.memory_stats()
        return np.asarray(ctx.output(name), dtype=np.float32)
    return call, out, info


def threads_seen(side):
    """The threads this worker's parallel regions get: torch's intra-op
    threads, or OpenMP's (nncc: libgomp, shared with an imported torch, whose
    own default may differ from the cores). None where unknown (ORT is given
    its count in the session options)."""
    if side in ("torch1", "torch2", "compile"):
        import torch
        return torch.get_num_threads()
    if side == "nncc":
        import ctypes
        try:
            return int(ctypes.CDLL(None).omp_get_max_threads())
        except (AttributeError, OSError):
            return None
    return None


def worker(side, cfg):
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # what the libraries print goes to the log, not the protocol
    sys.stdout = sys.stderr
    try:
        import numpy as np
        import nncc_testing as nt
        ins = nt.load_safetensors(os.path.join(cfg["dir"], "inputs.safetensors"))
        t0 = time.perf_counter()
        if side == "nncc":
            call, out, info = nncc_side(cfg, ins)
        elif side in ("ort", "ort_fused"):
            call, out, info = ort_side(side, cfg, ins)
        else:
            call, out, info = torch_side(side, cfg, ins)
        t1 = time.perf_counter()
        call()  # the warm-up (torch.compile compiles here)
        t2 = time.perf_counter()
        np.save(os.path.join(cfg["dir"], "out-%s.npy" % side), out())
        info["setup_s"], info["warmup_s"] = t1 - t0, t2 - t1
        info["threads_seen"] = threads_seen(side)
        if side == "compile":
            n = compile_note()
            if n:
                info["note"] = n
    except Exception as e:
        proto.write("FAIL %s\n" % one_line(e))
        return
    proto.write("READY %s\n" % json.dumps(info))
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] != "run":
            break
        for _ in range(int(words[1]) if len(words) > 1 else 0):
            call()  # untimed: caches, clocks and thread pools are hot for the timed call
        t0 = time.perf_counter()
        call()
        proto.write("T %r\n" % (time.perf_counter() - t0))
    info["maxrss"] = maxrss()
    proto.write("DONE %s\n" % json.dumps(info))


# ---------------------------------------------------------------------------
# driver
# ---------------------------------------------------------------------------
class Worker:
    def __init__(self, side, cfg, python, threads, log):
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
                   MKL_NUM_THREADS=str(threads),
                   PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "utils"), HERE]))
        pre = os.environ.get("NNCC_BENCH_WORKER_PREFIX", "").split() if side == "nncc" else []
        self.side, self.buf, self.log = side, b"", log
        self.p = subprocess.Popen(pre + [python, os.path.abspath(__file__), "--worker", side,
                                         json.dumps(cfg)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=open(log, "w"), bufsize=0,
                                  env=env, start_new_session=True)

    def pause(self, on):
        """Stops (on) or continues the worker's whole process group, so that
        its idle thread pools cannot spin while another side is timed."""
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, signal.SIGSTOP if on else signal.SIGCONT)
            except ProcessLookupError:
                pass

    def line(self, timeout):
        end = time.time() + timeout
        while b"\n" not in self.buf:
            left = end - time.time()
            if left <= 0:
                self.kill()
                raise RuntimeError("timed out after %.0f s" % timeout)
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if r:
                chunk = os.read(self.p.stdout.fileno(), 65536)
                if not chunk:
                    self.p.wait()
                    tail = [l for l in open(self.log, errors="replace").read().splitlines()
                            if l.strip()][-1:]
                    raise RuntimeError("worker exited (%s)%s" % (
                        self.p.returncode, ": " + tail[0][:200] if tail else ""))
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()

    def send(self, text):
        self.p.stdin.write((text + "\n").encode())
        self.p.stdin.flush()

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def default_torch2():
    venv = os.environ.get("NNCC_VENV") or os.path.join(os.path.expanduser("~"), ".cache",
                                                         "nncc-venv")
    return os.path.join(venv, "bin", "python")


def prepare(c, cache, torch_mod, nt, peers):
    """Weights (torch's init, drawn once, seed 0), inputs and the nncc library
    of a case in its own folder."""
    kind, s = c["kind"], c["shape"]
    d = os.path.join(cache, "%s-%s" % (kind, "-".join("%s%s" % kv for kv in sorted(s.items()))))
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.remove(os.path.join(d, f))
    torch_mod.manual_seed(0)
    m = peers.init(kind, peers.build(kind, s))
    nt.save_safetensors(os.path.join(d, "weights.safetensors"),
                        {k: nt.to_numpy(v) for k, v in m.state_dict().items()})
    ins = peers.inputs(kind, s)
    nt.save_safetensors(os.path.join(d, "inputs.safetensors"), ins)
    lib = nt.compile_model(os.path.join(ROOT, peers.NN[kind]),
                           ["--grad"] if kind.endswith("_train") else [])
    return d, lib, ins


def run_case(c, args, cache, peak, nt, peers, versions):
    import numpy as np
    import torch
    kind, s = c["kind"], c["shape"]
    d, lib, ins = prepare(c, cache, torch, nt, peers)
    fl, formula = peers.flops(kind, s, ins)
    cfg = dict(kind=kind, shape=s, threads=args.threads, dir=d, lib=lib)
    row = dict(name=c["label"], group=c["group"], kind=kind, shape=s, flops=fl, threads=args.threads,
               flop_formula=formula, tolerance=tolerance(kind), sides={})
    live = []
    for side in sides_of(kind, args.torch2_python):
        if args.sides and side not in args.sides and side != "nncc":
            continue
        r = row["sides"][side] = {}
        py = args.python1 if side in ("nncc", "torch1") else args.torch2_python
        w = Worker(side, cfg, py, args.threads, os.path.join(d, "log-%s.txt" % side))
        try:
            msg = w.line(args.setup_timeout)
        except RuntimeError as e:
            r["failed"] = str(e)
            continue
        if msg.startswith("READY "):
            r.update(json.loads(msg[6:]))
            if "version" in r:
                versions[side] = r["version"]
            live.append(w)
        else:
            r["failed"] = msg[5:] if msg.startswith("FAIL ") else msg
            w.kill()
    if not any(w.side == "nncc" for w in live):
        for w in live:
            w.kill()
        raise RuntimeError("%s: the nncc side failed: %s" % (c["label"], row["sides"]["nncc"]))
    times = {w.side: [] for w in live}
    for rnd in range(args.reps):
        k = rnd % len(live)
        for w in live[k:] + live[:k]:
            if w.p.poll() is not None or "failed" in row["sides"][w.side]:
                continue
            others = [o for o in live if o is not w]
            for o in others:
                o.pause(True)
            try:
                w.send("run %d" % args.warm)
                msg = w.line(args.call_timeout)
                times[w.side].append(float(msg.split()[1]))
            except (RuntimeError, OSError, ValueError, IndexError) as e:
                row["sides"][w.side]["failed"] = "during the rounds: %s" % e
                w.kill()
            finally:
                for o in others:
                    o.pause(False)
            time.sleep(args.gap)
    for w in live:
        if "failed" not in row["sides"][w.side]:
            try:
                w.send("stop")
                msg = w.line(60)
                row["sides"][w.side].update(json.loads(msg[5:]))
            except (RuntimeError, OSError, ValueError):
                pass
        w.kill()
    yn = np.load(os.path.join(d, "out-nncc.npy"))
    for side, r in row["sides"].items():
        if "failed" in r or not times.get(side):
            continue
        r["times_ms"] = [t * 1e3 for t in times[side]]
        r["median_ms"] = statistics.median(r["times_ms"])
        r["min_ms"] = min(r["times_ms"])
        r["gflops"] = fl / (r["median_ms"] * 1e-3) / 1e9
        r["share"] = r["gflops"] / peak if peak else None
        if side != "nncc":
            try:
                r["err"] = float(nt.err(yn, np.load(os.path.join(d, "out-%s.npy" % side))))
            except AssertionError as e:  # shapes differ
                r["err"] = float("inf")
                r["err_note"] = str(e)
            r["mismatch"] = not (r["err"] <= row["tolerance"])
    n = row["sides"]["nncc"]
    ok = [p for p in PEERS if p in row["sides"] and "median_ms" in row["sides"][p]]
    if ok and "median_ms" in n:
        best = min(ok, key=lambda p: row["sides"][p]["median_ms"])
        row["best_peer"] = best
        row["best_over_nncc"] = row["sides"][best]["median_ms"] / n["median_ms"]
    t1 = row["sides"].get("torch1", {})
    if "median_ms" in t1 and "median_ms" in n:
        row["torch1_over_nncc"] = t1["median_ms"] / n["median_ms"]
    row["mismatch"] = [p for p, r in row["sides"].items() if r.get("mismatch")]
    row["load_average"] = os.getloadavg()[0]
    return row


def cell(r):
    if "failed" in r:
        return "failed"
    if "median_ms" not in r:
        return "—"
    return "%.2f%s" % (r["median_ms"], " MISMATCH" if r.get("mismatch") else "")


def print_row(row):
    parts = []
    for side in SIDES:
        r = row["sides"].get(side)
        if r is not None:
            parts.append("%s %s" % (TITLE[side], cell(r)))
    n = row["sides"]["nncc"]
    best = row.get("best_peer")
    line = "%-44s %s ms  (load %.1f)" % (row["name"], " | ".join(parts), row["load_average"])
    if best:
        b = row["sides"][best]
        line += "\n    best peer %s: %.2fx nncc" % (TITLE[best], row["best_over_nncc"])
        line += "  GFLOP/s nncc %.1f (%s) / %s %.1f (%s)" % (
            n["gflops"], pct(n.get("share")), TITLE[best], b["gflops"], pct(b.get("share")))
    if "torch1_over_nncc" in row:
        line += "  torch 1.13 / nncc %.2fx" % row["torch1_over_nncc"]
    errs = ["%s %.1e" % (TITLE[p], r["err"]) for p, r in row["sides"].items() if "err" in r]
    line += "\n    outputs vs nncc (tol %.0e): %s" % (row["tolerance"], ", ".join(errs))
    if row["mismatch"]:
        line += "  MISMATCH: " + ", ".join(TITLE[p] for p in row["mismatch"])
    for p, r in row["sides"].items():
        seen = r.get("threads_seen")
        if seen is not None and seen != row["threads"]:
            line += "\n    %s ran on %d threads, not %d" % (TITLE[p], seen, row["threads"])
        if "failed" in r:
            line += "\n    %s failed: %s" % (TITLE[p], r["failed"])
        elif r.get("note"):
            line += "\n    %s: %s" % (TITLE[p], r["note"])
    print(line)
    sys.stdout.flush()


def pct(x):
    return "%.0f%%" % (100 * x) if x is not None else "?"


def markdown(rows, peak):
    print()
    print("| case | nncc ms | torch 1.13 | torch 2.x | torch.compile | ORT | ORT fused | "
          "best peer / nncc | GFLOP/s nncc / best peer | share of FMA peak nncc / best peer |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    notes = []
    for row in rows:
        cells = []
        for side in SIDES:
            r = row["sides"].get(side)
            cells.append("—" if r is None else cell(r))
            if r is not None and ("failed" in r or r.get("note")):
                notes.append("%s, %s: %s" % (row["name"], TITLE[side], r.get("failed") or r["note"]))
        n = row["sides"]["nncc"]
        best = row.get("best_peer")
        if best:
            b = row["sides"][best]
            ratio = "%.2f× (%s)" % (row["best_over_nncc"], TITLE[best])
            gf = "%.1f / %.1f" % (n["gflops"], b["gflops"])
            sh = "%s / %s" % (pct(n.get("share")), pct(b.get("share")))
        else:
            ratio = gf = sh = "—"
        print("| %s | %s | %s | %s | %s |" % (row["name"], " | ".join(cells), ratio, gf, sh))
    if notes:
        print()
        for n in notes:
            print("- " + n)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=min(os.cpu_count() or 1, 2),
                    help="threads of every side (default: min(cores, 2))")
    ap.add_argument("--reps", type=int, default=None, help="timed rounds (default 5, --quick 2)")
    ap.add_argument("--only", default=",".join(dict.fromkeys(g for g, _, _, _ in FULL)))
    ap.add_argument("--quick", action="store_true", help="tiny shapes (a smoke test)")
    ap.add_argument("--sides", type=lambda v: v.split(","), default=None,
                    help="only these peers beside nncc (default: all of %s)" % ",".join(SIDES[1:]))
    ap.add_argument("--bert-batches", default="8,32",
                    type=lambda v: [int(x) for x in v.split(",")])
    ap.add_argument("--python1", default="/usr/bin/python3",
                    help="the interpreter of the nncc and torch 1.13 sides")
    ap.add_argument("--torch2-python", default=default_torch2(),
                    help="the torch 2.x / ONNX Runtime interpreter (none: those sides skipped)")
    ap.add_argument("--setup-timeout", type=float, default=1800,
                    help="seconds a side may take to set up, export, compile and warm up")
    ap.add_argument("--call-timeout", type=float, default=600)
    ap.add_argument("--warm", type=int, default=1,
                    help="untimed calls of a side right before each of its timed calls")
    ap.add_argument("--gap", type=float, default=0.0,
                    help="seconds between two sides' turns")
    ap.add_argument("--workdir", help="the cases' weights, inputs, outputs, ONNX files and "
                    "worker logs (default: a temporary folder, removed at the end)")
    ap.add_argument("--markdown", action="store_true", help="also print a markdown table")
    ap.add_argument("--json", help="write all results to this file")
    args = ap.parse_args()
    if args.reps is None:
        args.reps = 2 if args.quick else 5
    if args.torch2_python == "none" or not os.path.exists(args.torch2_python):
        if args.torch2_python != "none":
            print("# no %s: torch 2.x, torch.compile and ORT skipped (utils/setup.sh makes it)"
                  % args.torch2_python)
        args.torch2_python = None

    import nncc_testing as nt
    import peers

    todo = cases(args)
    if args.workdir:
        os.makedirs(args.workdir, exist_ok=True)
        cache = args.workdir
    else:
        cache = tempfile.mkdtemp(prefix="nncc-bench-")
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(nt.cache_dir(), "torchinductor"))
    peak, peak_how = fma_peak(args.threads, cache)
    print("# nncc bench: %s, %s (%d cores), %d threads, reps %d%s, load average %s" % (
        datetime.date.today().isoformat(), cpu_name(), os.cpu_count(), args.threads, args.reps,
        ", QUICK shapes" if args.quick else "", " ".join("%.1f" % v for v in os.getloadavg())))
    print("# fp32 FMA peak (bench/fma_peak.c): %s GFLOP/s (%s)" % (
        "%.0f" % peak if peak else "?", peak_how))
    sys.stdout.flush()
    rows, versions = [], {}
    for c in todo:
        row = run_case(c, args, cache, peak, nt, peers, versions)
        rows.append(row)
        print_row(row)
    peak2, how2 = fma_peak(args.threads, cache)
    print("# fp32 FMA peak at the end: %s GFLOP/s (%s); shares above use the start's" % (
        "%.0f" % peak2 if peak2 else "?", how2))
    print("# versions: %s; load average %s" % (
        ", ".join("%s %s" % (TITLE[k], v) for k, v in versions.items()),
        " ".join("%.1f" % v for v in os.getloadavg())))
    if args.markdown:
        markdown(rows, peak)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(date=datetime.date.today().isoformat(), cpu=cpu_name(),
                           threads=args.threads, reps=args.reps, quick=args.quick,
                           fma_peak_gflops=peak, fma_peak_how=peak_how,
                           fma_peak_end_gflops=peak2, versions=versions, rows=rows), f, indent=1)
    if not args.workdir:
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], json.loads(sys.argv[3]))
    else:
        main()
