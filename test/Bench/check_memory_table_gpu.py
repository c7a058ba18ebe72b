"""Checks bench/memory_table.py's GPU path without a GPU (test/Bench/memory-table-gpu.test):
    check_memory_table_gpu.py PREP_DIR OUT_DIR NNCC_SRC
PREP_DIR: --prepare-gpu --quick --target cpu --only bert_small,reformer_lsh,torch;
OUT_DIR: --run-gpu PREP_DIR --device cpu. Also add_ratios on made-up rows
(the 1.5x column of issue 9 does not depend on timing there)."""
import csv
import lzma
import os
import subprocess
import sys
import tempfile

prep, out, src = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, os.path.join(src, "bench"))
sys.path.insert(0, os.path.join(src, "python"))
import memory_table as mt  # noqa: E402
import nncc.library as nl  # noqa: E402

from check_common import expect, failed, finish, num, png_ok  # noqa: E402


nncc = os.environ.get("NNCC", "nncc")
h = subprocess.run([nncc, "compile", "--help"], capture_output=True, text=True)
budget = "--memory-budget" in h.stdout + h.stderr
variants = ("default", "min") if budget else ("default",)
models = ("bert_small", "reformer_lsh")

# The manifest: the configurations in order, each library loads and trains.
man = mt.load_manifest(prep)
want = [("nncc", m, v) for m in models for v in variants] + \
       [("torch", "bert_small", v) for v in ("plain", "checkpoint")]
got = [(c["side"], c["model"], c["variant"]) for c in man["configs"]]
expect(got == want, "manifest configurations %s, expected %s" % (got, want))
for c in man["configs"]:
    expect((c["B"], c["T"]) == (2, 32), "%s: B, T" % c)
    if c["side"] != "nncc":
        continue
    expect(not c.get("error") and c["cuda_train"] == "compiled without CUDA code",
           "%s: error %r, cuda_train %r" % (c["name"], c.get("error"), c["cuda_train"]))
    with tempfile.TemporaryDirectory() as d:
        so = os.path.join(d, "lib%s.so" % c["model"])
        with lzma.open(os.path.join(prep, c["lib"])) as f, open(so, "wb") as g:
            g.write(f.read())
        lib = nl.Library(so)
        expect(lib.name == c["model"] and lib.has_grad, "%s: name %s, gradients %s" % (
            c["name"], lib.name, lib.has_grad))
        expect(sorted(s.name for s in lib.inputs) == ["replaced", "segments", "tokens"],
               "%s: inputs %s" % (c["name"], [s.name for s in lib.inputs]))
if not failed:
    print("manifest ok: %d configurations" % len(got))

# The table --run-gpu --device cpu wrote.
with open(os.path.join(out, "memory_table_gpu.csv"), newline="") as f:
    reader = csv.DictReader(f)
    expect(reader.fieldnames == mt.GPU_COLUMNS, "columns %s" % reader.fieldnames)
    rows = list(reader)
t1 = {(r["side"], r["model"], r["variant"]): r for r in rows}
expect([(r["side"], r["model"], r["variant"]) for r in rows] == want,
       "rows %s" % [(r["side"], r["model"], r["variant"]) for r in rows])
for key, r in t1.items():
    expect(r["device"] == "cpu" and r["table"] == "table1" and r["note"] == "",
           "%s: device %s, note %r" % (key, r["device"], r["note"]))
    for k in ("step_ms", "dev_used_MiB", "time_vs_torch", "dev_vs_torch", "loss"):
        expect(num(r, k) is not None and num(r, k) > 0, "%s: %s = %r" % (key, k, r.get(k)))
    if key[0] == "nncc":
        expect(num(r, "arena_peak_MiB") and num(r, "arena_vs_torch") is not None,
               "%s: arena" % (key,))
        bert = t1.get(("nncc", "bert_small", key[2]))
        if bert:
            ratio = num(r, "step_ms") / num(bert, "step_ms")
            expect(abs(num(r, "time_vs_bert_small") - ratio) <= 0.002 * ratio + 0.002,
                   "%s: time_vs_bert_small %s, step ratio %.3f" % (
                       key, r["time_vs_bert_small"], ratio))
    else:
        expect(r["arena_peak_MiB"] == "" and r["time_vs_bert_small"] == "",
               "%s: torch has no arena or bert ratio" % (key,))
plain = t1.get(("torch", "bert_small", "plain"))
if plain:
    expect(num(plain, "time_vs_torch") == 1.0 and num(plain, "dev_vs_torch") == 1.0,
           "torch plain ratios are 1")
if not failed:
    print("gpu csv rows ok: %d" % len(rows))

# add_ratios alone: time_vs_bert_small pairs the same variant, B and T,
# ELECTRA rows with electra_bert; dev_vs_torch against torch plain.
def fake(model, side, variant, T, ms, mib):
    return mt.row("table1", model, side, variant, 2, T, 1,
                  dict(times=[ms / 1e3], loss=1.0, dev_used=mib * 2**20), "", device="cuda")


rs = [fake("bert_small", "nncc", "default", 128, 100, 50),
      fake("reformer_lsh", "nncc", "default", 128, 150, 40),
      fake("reformer_lsh", "nncc", "min", 128, 170, 30),
      fake("reformer_lsh", "nncc", "default", 512, 160, 40),
      fake("electra_bert", "nncc", "default", 128, 200, 90),
      fake("electra_reformer", "nncc", "default", 128, 260, 80),
      fake("bert_small", "torch", "plain", 128, 80, 100)]
mt.add_ratios(rs, mem="dev_used", mem_col="dev_vs_torch", arena_ref="dev_alloc_peak")
got = [(r.get("time_vs_bert_small"), r.get("time_vs_torch"), r.get("dev_vs_torch")) for r in rs]
expect(got == [("1.000", "1.250", "0.500"), ("1.500", "1.875", "0.400"), (None, "2.125", "0.300"),
               (None, None, None), ("1.000", None, None), ("1.300", None, None),
               (None, "1.000", "1.000")], "add_ratios: %s" % got)
if not failed:
    print("ratios ok")

png_ok(os.path.join(out, "memory_table_gpu.png"))
finish()
