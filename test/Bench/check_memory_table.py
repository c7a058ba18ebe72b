"""Checks the files bench/memory_table.py --quick wrote (test/Bench/memory-table.test,
memory-table-torch2.test):
    check_memory_table.py OUT_DIR NNCC_SRC [--models M,.. | --models none] [--torch2]
--models: the nncc models run (default all six); --torch2: the torch 2.x rows
(side torch2: plain, checkpoint, BERT-small's sdpa; their *_vs_torch2 ratios)
and fit searches are there too."""
import csv
import os
import subprocess
import sys

from check_common import expect, failed, finish, num, png_ok

out, src = sys.argv[1], sys.argv[2]
torch2 = "--torch2" in sys.argv
models = None
if "--models" in sys.argv:
    v = sys.argv[sys.argv.index("--models") + 1]
    models = [] if v == "none" else v.split(",")


nncc = os.environ.get("NNCC", "nncc")
h = subprocess.run([nncc, "compile", "--help"], capture_output=True, text=True)
budget = "--memory-budget" in h.stdout + h.stderr

with open(os.path.join(out, "memory_table.csv"), newline="") as f:
    reader = csv.DictReader(f)
    cols = reader.fieldnames
    rows = list(reader)
need = ["table", "model", "side", "variant", "B", "T", "reps", "step_ms", "arena_peak_MiB",
        "rss_growth_MiB", "train_MiB", "peak_rss_MiB", "time_vs_torch", "rss_vs_torch",
        "arena_vs_torch", "fits", "note"]
if expect(all(c in cols for c in need), "columns: missing %s" % [c for c in need if c not in cols]):
    print("columns ok")

t1 = {(r["model"], r["side"], r["variant"]): r for r in rows if r["table"] == "table1"}
NNCC_MODELS = ("bert_small", "reformer_lsh", "reversible_dilated_bert", "electra_bert",
               "electra_reformer", "electra_reversible_dilated_bert")
run_models = NNCC_MODELS if models is None else models
want = [(m, "nncc", v) for m in run_models for v in (("default", "min") if budget else ("default",))]
want += [(m, "torch", v) for m in ("bert_small", "electra_bert") for v in ("plain", "checkpoint")]
if torch2:
    want += [("bert_small", "torch2", v) for v in ("plain", "checkpoint", "sdpa")]
    want += [("electra_bert", "torch2", v) for v in ("plain", "checkpoint")]
expect(sorted(t1) == sorted(want), "table1 rows %s, expected %s" % (sorted(t1), sorted(want)))
for key in want:
    r = t1.get(key)
    if not expect(r is not None, "row %s" % (key,)):
        continue
    expect((r["B"], r["T"], r["reps"]) == ("2", "32", "1"), "%s: B, T, reps" % (key,))
    for k in ("step_ms", "rss_growth_MiB", "train_MiB", "peak_rss_MiB", "time_vs_torch",
              "rss_vs_torch", "loss"):
        expect(num(r, k) is not None and num(r, k) >= 0, "%s: %s = %r" % (key, k, r.get(k)))
    if torch2 and key[1] != "torch2" and key[0] in ("bert_small", "electra_bert"):
        expect(num(r, "time_vs_torch2") is not None and num(r, "rss_vs_torch2") is not None,
               "%s: the ratios to torch 2.x" % (key,))
    if key[1] == "nncc":
        expect(num(r, "arena_peak_MiB") is not None and num(r, "arena_peak_MiB") > 0,
               "%s: arena_peak_MiB" % (key,))
        expect(num(r, "arena_vs_torch") is not None, "%s: arena_vs_torch" % (key,))
        if key[2] == "default" and not budget:
            expect("no --memory-budget" in r["note"], "%s: note says min rows not run" % (key,))
    else:
        expect(r["arena_peak_MiB"] == "", "%s: torch has no arena" % (key,))
for family in ("bert_small", "electra_bert"):
    plain = t1.get((family, "torch", "plain"))
    if plain:
        expect(num(plain, "time_vs_torch") == 1.0 and num(plain, "rss_vs_torch") == 1.0,
               "torch plain ratios of %s are 1" % family)
    plain2 = t1.get((family, "torch2", "plain"))
    if torch2 and expect(plain2 is not None, "torch 2.x plain row of %s" % family):
        expect(num(plain2, "time_vs_torch2") == 1.0 and num(plain2, "rss_vs_torch2") == 1.0,
               "torch 2.x plain ratios of %s are 1" % family)
if budget:
    for m in NNCC_MODELS:
        d, mn = t1.get((m, "nncc", "default")), t1.get((m, "nncc", "min"))
        if d and mn:
            expect(num(mn, "arena_peak_MiB") <= num(d, "arena_peak_MiB"),
                   "%s: min-budget arena %s > default %s" % (m, mn["arena_peak_MiB"],
                                                            d["arena_peak_MiB"]))
if not failed:
    print("table1 rows ok: %d" % len(t1))

fit = [r for r in rows if r["table"] == "fit"]
got = sorted((r["model"], r["side"], r["variant"], r["B"], r["T"], r["fits"]) for r in fit)
searches = [("reversible_dilated_bert", "nncc", "min" if budget else "default"),
            ("bert_small", "torch", "plain")]
if torch2:
    searches += [("bert_small", "torch2", "plain"), ("bert_small", "torch2", "sdpa")]
expect(got == sorted(s + ("1", t, "yes") for s in searches for t in ("32", "64")),
       "fit rows %s" % got)
if not failed:
    print("fit rows ok: %d" % len(fit))

png_ok(os.path.join(out, "memory_table.png"))
finish()
