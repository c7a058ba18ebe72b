"""Every seed model of models/ against outputs recorded before a change.

    fingerprints.py check  RECORD.json   # exit 1 when a model moved
    fingerprints.py record RECORD.json   # rewrite the record (a change of
                                         # behaviour that is meant)

For each seed model, `nncc run` in f64 with `--grad`: weights from
init_weights(seed 0), inputs from --random-inputs (seed 0) at small dims,
inference mode (no dropout). Every output, the loss and every parameter's
gradient is reduced to a fingerprint: its shape, sum, sum of |x|, and its
dot product with a fixed pseudo-random vector (uniform in [-1, 1), seeded
by the tensor's name), plus the SHA-256 of its bytes.

`check` fails when a statistic moves by more than TOL times the tensor's
recorded sum of |x| (or a shape, a name or a non-finite value changes). It
does not ask for equal bits: the kernels' summation order depends on the
CPU's OpenBLAS code path and the thread count, which move f64 results by
about 1e-15 of their scale; any change of what a model computes moves them
by far more than TOL. It reports how many tensors are bit-identical to the
record as well (all of them for a pure restructuring on the machine that
recorded it).
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "utils"))
from nncc_testing.safetensors import load_safetensors  # noqa: E402

TOL = 1e-8
DIMS = {"B": 2, "T": 32, "N": 4}
MODELS = sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "models")) if f.endswith(".nn"))


def nncc():
    return os.environ.get("NNCC", "nncc")


def model_dims(path):
    sig = json.loads(subprocess.check_output([nncc(), "inspect", path]))
    return {d: DIMS[d] for d in sig["dims"]}


def probe(name):
    """The vector the dot product uses: a function of the tensor's name only."""
    seed = int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "little")
    return np.random.RandomState(seed)


def fingerprint(name, a):
    x = np.ascontiguousarray(a, dtype=np.float64).ravel()
    v = probe(name).uniform(-1.0, 1.0, x.size)
    return {"shape": list(a.shape), "sum": float(x.sum()), "abs_sum": float(np.abs(x).sum()),
            "dot": float(x @ v), "finite": bool(np.isfinite(x).all()),
            "sha256": hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()}


def run_model(model, work):
    path = os.path.join(ROOT, "models", model + ".nn")
    out = os.path.join(work, model + ".safetensors")
    cmd = [nncc(), "run", path, "--random-inputs", "--seed", "0", "--grad", "--precision", "f64",
           "--quiet", "-o", out]
    for d, size in model_dims(path).items():
        cmd += ["--dim", "%s=%d" % (d, size)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("%s: nncc run failed (%d):\n%s%s" % (model, r.returncode, r.stdout, r.stderr))
    tensors = load_safetensors(out)
    os.remove(out)
    return {n: fingerprint(model + "/" + n, a) for n, a in sorted(tensors.items())}


def compare(model, got, ref):
    problems, same = [], 0
    for n in sorted(set(got) | set(ref)):
        if n not in got or n not in ref:
            problems.append("%s: tensor %r is %s" % (model, n, "new" if n in got else "missing"))
            continue
        g, r = got[n], ref[n]
        if g["shape"] != r["shape"]:
            problems.append("%s %s: shape %s, recorded %s" % (model, n, g["shape"], r["shape"]))
            continue
        if not g["finite"] or not r["finite"]:
            if g["sha256"] != r["sha256"]:
                problems.append("%s %s: not finite, and not the recorded bytes" % (model, n))
            continue
        scale = max(r["abs_sum"], 1e-300)
        for k in ("sum", "abs_sum", "dot"):
            if abs(g[k] - r[k]) > TOL * scale:
                problems.append("%s %s: %s %.17g, recorded %.17g (%.2e of its scale)"
                                % (model, n, k, g[k], r[k], abs(g[k] - r[k]) / scale))
        same += g["sha256"] == r["sha256"]
    return problems, same


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("check", "record"):
        raise SystemExit(__doc__.split("\n\n")[1])
    mode, record = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as work:
        got = {m: run_model(m, work) for m in MODELS}
    if mode == "record":
        with open(record, "w") as f:
            json.dump({"tolerance": TOL, "dims": DIMS, "models": got}, f, indent=1, sort_keys=True)
            f.write("\n")
        print("recorded %d models" % len(got))
        return 0
    with open(record) as f:
        ref = json.load(f)["models"]
    failed, tensors, same = 0, 0, 0
    for m in sorted(set(got) | set(ref)):
        if m not in ref:
            print("FAIL %s: not in the record (a new seed model: record it)" % m)
            failed += 1
            continue
        if m not in got:
            print("FAIL %s: recorded, but models/%s.nn is gone" % (m, m))
            failed += 1
            continue
        problems, s = compare(m, got[m], ref[m])
        tensors += len(ref[m])
        same += s
        for p in problems:
            print("FAIL " + p)
        print("%s %s: %d tensors, %d bit-identical" % ("FAIL" if problems else "ok", m, len(ref[m]), s))
        failed += bool(problems)
    print("%d of %d models as recorded; %d of %d tensors bit-identical"
          % (len(ref) - failed, len(ref), same, tensors))
    if failed:
        return 1
    print("ALL PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
