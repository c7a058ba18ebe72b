"""Checks the files bench/memory_table.py --quick wrote (test/Bench/memory-table.test):
    check_memory_table.py OUT_DIR NNCC_SRC"""
import csv
import os
import subprocess
import sys

from check_common import expect, failed, finish, num, png_ok

out, src = sys.argv[1], sys.argv[2]


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
want = [(m, "nncc", v) for m in NNCC_MODELS for v in (("default", "min") if budget else ("default",))]
want += [(m, "torch", v) for m in ("bert_small", "electra_bert") for v in ("plain", "checkpoint")]
expect(sorted(t1) == sorted(want), "table1 rows %s, expected %s" % (sorted(t1), sorted(want)))
for key in want:
    r = t1.get(key)
    if not expect(r is not None, "row %s" % (key,)):
        continue
    expect((r["B"], r["T"], r["reps"]) == ("2", "32", "1"), "%s: B, T, reps" % (key,))
    for k in ("step_ms", "rss_growth_MiB", "train_MiB", "peak_rss_MiB", "time_vs_torch",
              "rss_vs_torch", "loss"):
        expect(num(r, k) is not None and num(r, k) >= 0, "%s: %s = %r" % (key, k, r.get(k)))
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
got = sorted((r["model"], r["side"], r["B"], r["T"], r["fits"]) for r in fit)
expect(got == sorted([("reversible_dilated_bert", "nncc", "1", t, "yes") for t in ("32", "64")] +
                     [("bert_small", "torch", "1", t, "yes") for t in ("32", "64")]),
       "fit rows %s" % got)
if not failed:
    print("fit rows ok: %d" % len(fit))

png_ok(os.path.join(out, "memory_table.png"))
finish()
