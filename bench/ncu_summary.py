#!/usr/bin/env python3
"""Per-kernel DRAM and SM throughput from an Nsight Compute CSV.

Reads the output of

    ncu --csv --print-kernel-base function --metrics \
        gpu__time_duration.sum,dram__bytes.sum,\
dram__throughput.avg.pct_of_peak_sustained_elapsed,\
sm__throughput.avg.pct_of_peak_sustained_elapsed  <program>

(one row per launch and metric; what utils/device_prep.sh's run.sh runs
over bench/gpu.py's nncc cases) and prints, per kernel, the launches, the
summed device time, the achieved DRAM bandwidth and both throughputs as
shares of the device's peak (time-weighted over the launches). A kernel is
memory-bound when its DRAM share exceeds its SM share (Nsight Compute's
speed-of-light reading); those under --target percent of DRAM peak (the
issue's goal: 70) are marked, slowest first, so the GPU session knows
which to fix. Exit status 0 when the CSV parsed (the goal is reported, not
enforced: one launch's shape can make any kernel miss it), 1 when it held
no launches.
"""
import argparse
import csv
import io
import sys
from collections import OrderedDict

TIME = "gpu__time_duration.sum"
BYTES = "dram__bytes.sum"
DRAM_PCT = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
SM_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"

_SCALE = {
    # time to microseconds
    "nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
    "second": 1e6, "s": 1e6,
    # bytes to bytes
    "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12,
    "KB": 1e3, "MB": 1e6, "GB": 1e9,
    "%": 1.0, "": 1.0,
}


def kernel_base(name):
    """`void ns::k<float, 64>(int, float *)` -> `k<float, 64>`."""
    name = name.strip()
    if name.startswith("void "):
        name = name[5:]
    depth, cut = 0, len(name)
    for i, ch in enumerate(name):  # the argument list: the first '(' outside <>
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            cut = i
            break
    name = name[:cut]
    depth, start = 0, 0
    for i, ch in enumerate(name):  # drop namespaces outside template arguments
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == ":" and depth == 0:
            start = i + 1
    return name[start:]


def parse(text):
    """{launch id: {"kernel": name, metric: value in us / bytes / %}}."""
    lines = text.splitlines()
    # ncu prints its own progress lines (==PROF== ...) and the program's
    # output before the CSV: start at the header.
    for at, line in enumerate(lines):
        if line.startswith('"ID"') and '"Metric Name"' in line:
            break
    else:
        return {}
    launches = OrderedDict()
    for row in csv.DictReader(io.StringIO("\n".join(lines[at:]))):
        if not row.get("ID") or row.get("Metric Name") is None:
            continue
        unit = (row.get("Metric Unit") or "").strip()
        raw = (row.get("Metric Value") or "").replace(",", "").strip()
        try:
            value = float(raw) * _SCALE.get(unit, 1.0)
        except ValueError:
            continue  # "n/a" and the like
        launch = launches.setdefault(row["ID"], {"kernel": kernel_base(row["Kernel Name"])})
        launch[row["Metric Name"]] = value
    return launches


def summarise(launches):
    """Per kernel: launches, us, bytes, time-weighted DRAM % and SM %."""
    kernels = OrderedDict()
    for m in launches.values():
        t = m.get(TIME)
        if t is None:
            continue
        k = kernels.setdefault(m["kernel"], {"n": 0, "us": 0.0, "bytes": 0.0,
                                             "dram_w": 0.0, "sm_w": 0.0})
        k["n"] += 1
        k["us"] += t
        k["bytes"] += m.get(BYTES, 0.0)
        k["dram_w"] += t * m.get(DRAM_PCT, 0.0)
        k["sm_w"] += t * m.get(SM_PCT, 0.0)
    for k in kernels.values():
        k["dram_pct"] = k["dram_w"] / k["us"] if k["us"] > 0 else 0.0
        k["sm_pct"] = k["sm_w"] / k["us"] if k["us"] > 0 else 0.0
        k["gbps"] = k["bytes"] / (k["us"] * 1e3) if k["us"] > 0 else 0.0
        k["memory_bound"] = k["dram_pct"] > k["sm_pct"]
    return kernels


def report(kernels, target, out):
    total = sum(k["us"] for k in kernels.values())
    out.write("| kernel | launches | total us | share | DRAM GB/s | DRAM % peak | SM % peak "
              "| bound |\n|---|---|---|---|---|---|---|---|\n")
    for name, k in sorted(kernels.items(), key=lambda kv: -kv[1]["us"]):
        bound = "memory" if k["memory_bound"] else "compute/latency"
        if k["memory_bound"] and k["dram_pct"] < target:
            bound += " (< %g%%)" % target
        out.write("| `%s` | %d | %.1f | %.1f%% | %.0f | %.1f | %.1f | %s |\n" % (
            name, k["n"], k["us"], 100.0 * k["us"] / total if total else 0.0, k["gbps"],
            k["dram_pct"], k["sm_pct"], bound))
    mem = [k for k in kernels.values() if k["memory_bound"]]
    low = [k for k in mem if k["dram_pct"] < target]
    out.write("\n%d kernels, %.1f us; %d memory-bound, %d of them under %g%% of DRAM peak "
              "(%.1f us, %.1f%% of the time)\n" % (
                  len(kernels), total, len(mem), len(low), target,
                  sum(k["us"] for k in low),
                  100.0 * sum(k["us"] for k in low) / total if total else 0.0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", help="ncu --csv output (ncu's own lines before the header are skipped)")
    ap.add_argument("--target", type=float, default=70.0,
                    help="DRAM share of peak a memory-bound kernel should reach (default 70)")
    args = ap.parse_args()
    try:
        with open(args.csv, errors="replace") as f:
            launches = parse(f.read())
    except OSError as e:
        sys.exit("ncu_summary: %s" % e)
    kernels = summarise(launches)
    if not kernels:
        sys.exit("ncu_summary: %s: no profiled launches (no ncu CSV header, or no %s rows)"
                 % (args.csv, TIME))
    report(kernels, args.target, sys.stdout)


if __name__ == "__main__":
    main()
