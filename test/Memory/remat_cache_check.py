#!/usr/bin/env python3
"""The memory-budget search's choice is cached (lib/Driver/RematPlanCache.cpp):
the same model, binding and budget again read it instead of searching,
`nncc run` reads what `nncc inspect` stored, a damaged entry (one whose plan
does not give the peak it records, or overruns its budget) is searched again
and replaced, other budgets and bindings get entries of their own, and
a cache that cannot be written changes nothing but the time.

    remat_cache_check.py MODEL.nn WORKDIR
"""
import json
import os
import subprocess
import sys

FORMAT = "nncc-remat-choice-2"


def nncc(cache, *args):
    env = dict(os.environ, NNCC_CACHE_DIR=cache)
    r = subprocess.run(["nncc", *args], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"FAIL: nncc {' '.join(args)}:\n{r.stderr}")
    return r.stdout


def fail(msg):
    sys.exit("FAIL: " + msg)


def main():
    model, work = sys.argv[1], sys.argv[2]
    cache = os.path.join(work, "cache")
    entries_dir = os.path.join(cache, "remat")

    def entries():
        if not os.path.isdir(entries_dir):
            return []
        return sorted(f for f in os.listdir(entries_dir) if f.endswith(".json"))

    def inspect(budget="min", n="3", where=cache):
        return json.loads(nncc(where, "inspect", model, "--memory", "--grad",
                               "--memory-budget", budget, "--dim", "N=" + n))

    first = inspect()
    names = entries()
    if len(names) != 1:
        fail(f"expected one entry after the first search, found {names}")
    path = os.path.join(entries_dir, names[0])
    stored = json.load(open(path))
    recomputed = sorted(e["id"] for e in first["remat"]["recomputed"])
    if stored.get("format") != FORMAT or sorted(stored["recompute"]) != recomputed \
            or not recomputed:
        fail(f"the entry {stored} is not the plan {recomputed}")
    print(f"stored: {len(recomputed)} recomputed, peak {stored['peak_bytes']}")

    if inspect() != first or entries() != names:
        fail("the second inspect differs or added an entry")
    print("repeat: the same plan, no new entry")

    # The entry is what the second run used: a valid one that keeps
    # everything (another budget's choice: a budget far above the peak) is
    # taken as it is.
    loose = inspect(budget="64GiB")
    loose_name = (set(entries()) - set(names)).pop()
    loose_entry = json.load(open(os.path.join(entries_dir, loose_name)))
    if loose_entry["recompute"] or loose["remat"]["recomputed"]:
        fail(f"a budget of 64 GiB should keep everything: {loose_entry}")
    os.remove(os.path.join(entries_dir, loose_name))
    json.dump(loose_entry, open(path, "w"))
    kept = inspect()
    if kept["remat"]["recomputed"] or kept["peak_bytes"] <= first["peak_bytes"]:
        fail("the edited entry was not read")
    print("read: the entry decides the plan")

    # An entry is planned again before it is used: one whose recorded peak
    # is not its plan's is searched again and replaced.
    for damage in ["", "not json", json.dumps({"format": FORMAT, "recompute": "x"}),
                   json.dumps(dict(stored, format="nncc-remat-choice-0")),
                   json.dumps(dict(loose_entry, peak_bytes=stored["peak_bytes"])),
                   json.dumps(dict(stored, recompute=[10**9]))]:
        open(path, "w").write(damage)
        if inspect() != first:
            fail(f"a damaged entry {damage!r} changed the plan")
        if json.load(open(path)) != stored:
            fail(f"a damaged entry {damage!r} was not replaced")
    print("damaged: searched again and replaced")

    # `nncc run` under the same budget and binding reads the same entry.
    stats = os.path.join(work, "stats.json")
    nncc(cache, "run", model, "--random-inputs", "--quiet", "--grad", "--memory-budget", "min",
         "--dim", "N=3", "--memory-stats", stats)
    if entries() != names or json.load(open(stats))["peak_bytes"] != first["peak_bytes"]:
        fail("nncc run did not share inspect's entry")
    print("run: the same entry, the same peak")

    tight_budget = first["peak_bytes"] + 64
    tight = inspect(budget=str(tight_budget))
    tight_name = (set(entries()) - set(names)).pop()
    inspect(n="4")
    if len(entries()) != 3:
        fail(f"another budget and another binding should add one entry each: {entries()}")
    print("keys: one entry per budget and binding")

    # An entry whose plan overruns its budget (it keeps everything) is
    # searched again: the budget holds.
    tight_path = os.path.join(entries_dir, tight_name)
    tight_entry = json.load(open(tight_path))
    json.dump(loose_entry, open(tight_path, "w"))
    again = inspect(budget=str(tight_budget))
    if again != tight or again["peak_bytes"] > tight_budget:
        fail(f"an entry over the budget was used: peak {again['peak_bytes']} > {tight_budget}")
    if json.load(open(tight_path)) != tight_entry:
        fail("the entry over the budget was not replaced")
    print("over the budget: searched again, the budget holds")

    blocked = os.path.join(work, "not-a-directory")
    open(blocked, "w").write("a file where the cache should be\n")
    if inspect(where=blocked) != first:
        fail("a cache that cannot be written changed the plan")
    print("unwritable cache: the same plan")
    print("OK")


if __name__ == "__main__":
    main()
