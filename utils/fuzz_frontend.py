#!/usr/bin/env python3
"""Mutation fuzzer for the nncc front end.

Takes the seed models, makes malformed variants of them (truncated, a token
deleted, two tokens swapped, a token duplicated, a token replaced by another
from the same file, a byte flipped) and runs `nncc compile --emit nn` on each.
Every run must end within the time limit with exit status 0 or 1 — never a
signal, an abort or another status — and every failure must name a location as
`file:line:col: error:`.

Deterministic for a given --seed. Prints one line per failing variant (and the
variant is saved under --keep for reproduction), then a summary line
`N passed, M failed`. Exit status 1 if any variant failed.
"""
import argparse
import concurrent.futures
import os
import random
import re
import subprocess
import sys
import tempfile

TOKEN_RE = re.compile(
    r"//[^\n]*|/\*.*?\*/|[A-Za-z_][A-Za-z_0-9]*|\d+\.\d*(?:[eE][-+]?\d+)?|\d+(?:[eE][-+]?\d+)?"
    r"|\S", re.S)
LOCATED_ERROR_RE = re.compile(r"^[^\s:][^:]*:\d+:\d+: error: ", re.M)


def tokens(text):
    """(start, end) spans of the tokens of `text`, comments excluded."""
    return [m.span() for m in TOKEN_RE.finditer(text) if not m.group().startswith(("//", "/*"))]


def mutate(text, rng):
    """Returns (description, mutated text)."""
    spans = tokens(text)
    kind = rng.choice(["truncate", "delete", "swap", "duplicate", "replace", "byte"])
    if kind == "truncate" or len(spans) < 3:
        cut = rng.randrange(len(text))
        return f"truncate@{cut}", text[:cut]
    i = rng.randrange(len(spans) - 1)
    (a, b), (c, d) = spans[i], spans[i + 1]
    if kind == "delete":
        return f"delete-token@{a}", text[:a] + text[b:]
    if kind == "swap":
        return f"swap-tokens@{a}", text[:a] + text[c:d] + text[b:c] + text[a:b] + text[d:]
    if kind == "duplicate":
        return f"duplicate-token@{a}", text[:b] + " " + text[a:b] + text[b:]
    if kind == "replace":
        s, e = rng.choice(spans)
        return f"replace-token@{a}", text[:a] + text[s:e] + text[b:]
    pos = rng.randrange(len(text))
    return f"byte@{pos}", text[:pos] + chr(rng.randrange(1, 256)) + text[pos + 1:]


def run_one(nncc, path, timeout):
    try:
        proc = subprocess.run([nncc, "compile", path, "--emit", "nn", "-o", os.devnull],
                              capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout}s"
    err = proc.stderr.decode("utf-8", "replace")
    if proc.returncode < 0:
        return f"killed by signal {-proc.returncode}"
    if proc.returncode not in (0, 1):
        return f"exit status {proc.returncode}"
    if proc.returncode == 1 and not LOCATED_ERROR_RE.search(err):
        first = err.strip().splitlines()[0] if err.strip() else "(no message)"
        return f"error without file:line:col: {first}"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nncc", required=True, help="path to the nncc binary")
    ap.add_argument("--per-model", type=int, default=40, help="variants per model")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds allowed per run")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--keep", default=None, help="directory to save failing variants in")
    ap.add_argument("models", nargs="+", help=".nn files to mutate")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="nncc-fuzz-")
    cases = []
    for model in args.models:
        text = open(model, encoding="utf-8").read()
        base = os.path.splitext(os.path.basename(model))[0]
        for k in range(args.per_model):
            what, variant = mutate(text, rng)
            path = os.path.join(work, f"{base}-{k}.nn")
            with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(variant)
            cases.append((path, f"{base}: {what}"))

    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = pool.map(lambda c: run_one(args.nncc, c[0], args.timeout), cases)
        for (path, what), problem in zip(cases, results):
            if problem is None:
                continue
            failed += 1
            print(f"FAIL {what}: {problem}")
            if args.keep:
                os.makedirs(args.keep, exist_ok=True)
                kept = os.path.join(args.keep, os.path.basename(path))
                with open(path, "rb") as src, open(kept, "wb") as dst:
                    dst.write(src.read())
                print(f"     saved as {kept}")
    print(f"fuzz: {len(cases) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
