#!/usr/bin/env python3
"""Hostile source file names (issue 37): each is copied from a clean model and
run with `nncc run`; nothing in a name may reach the generated code as code.

    hostile_names.py MODEL.nn WORKDIR

Checks, for each name: the run succeeds, writes no file of the name's own
(the injection below would create INJECTED), gives the clean file's outputs
bit for bit, and its generated sources hold only printable ASCII, with no
line splice on a line that shows the name. The cache key covers the
name: the clean file with the same text gets an entry of its own, which has
no trace of the hostile names.
"""
import os
import shutil
import subprocess
import sys

from nncc_testing.safetensors import load_safetensors

HOSTILE = [
    'inj\nsystem("touch INJECTED");\n#define Z ',   # ends the // comment
    "fmt %s%n%x'??=",                                # printf formats, quote, trigraph
    'q"); system("touch INJECTED"); (void)("',       # ends a string
    'trail\\',                                       # a line splice
    'back\\\nsystem("touch INJECTED");',             # splice + newline
    'ctl\x1b[2J\x07\r\t\x7f',                        # terminal controls
    'bytes\xff\xfe\x80',                             # not UTF-8 (surrogateescape)
]


def fail(msg):
    sys.exit("FAIL: " + msg)


def run(cache, work, source, out):
    env = dict(os.environ, NNCC_CACHE_DIR=cache)
    r = subprocess.run(["nncc", "run", source, "--random-inputs", "--dim", "B=3", "--seed", "5",
                        "--quiet", "-o", out], cwd=work, env=env, capture_output=True)
    if r.returncode != 0:
        fail(f"nncc run {source!r}: {r.stderr.decode(errors='replace')}")


def entries(cache):
    return {e for e in os.listdir(cache) if len(e) == 32}


def main():
    model, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cache = os.path.join(work, "cache")
    clean = os.path.join(work, "clean.nn")
    shutil.copy(model, clean)
    run(cache, work, clean, "clean.st")
    reference = load_safetensors(os.path.join(work, "clean.st"))
    clean_entry = entries(cache)
    for i, name in enumerate(HOSTILE):
        path = os.path.join(work, os.fsencode(name).decode("utf-8", "surrogateescape"))
        shutil.copy(model, path)
        before = entries(cache)
        run(cache, work, path, f"out{i}.st")
        new = entries(cache) - before
        if len(new) != 1:
            fail(f"{name!r}: expected its own cache entry (the name reaches the code), got {new}")
        if os.path.exists(os.path.join(work, "INJECTED")):
            fail(f"{name!r}: code from the file name ran")
        got = load_safetensors(os.path.join(work, f"out{i}.st"))
        for k, v in reference.items():
            if k not in got or got[k].tobytes() != v.tobytes():
                fail(f"{name!r}: output {k} differs from the clean file's")
        entry = os.path.join(cache, new.pop())
        for f in os.listdir(entry):
            if not f.endswith((".cpp", ".cu", ".h")):
                continue
            text = open(os.path.join(entry, f), "rb").read()
            bad = [b for b in set(text) if b > 0x7e or (b < 0x20 and b not in b"\n")]
            if bad:
                fail(f"{name!r}: {f} holds bytes {sorted(bad)}")
            stem = os.fsencode(name)[:3]
            for line in text.split(b"\n"):
                if stem in line and line.rstrip().endswith(b"\\"):
                    fail(f"{name!r}: {f} has a line splice: {line!r}")
                if b"INJECTED" in line and not (b"//" in line or b'"' in line):
                    fail(f"{name!r}: {f} has the name outside a comment or string: {line!r}")
        print(f"{name!r}: own entry, clean outputs, nothing injected")
    # A diagnostic names the file with its control characters escaped: the
    # name cannot forge a line of nncc's output.
    forged = os.path.join(work, "bad\nnncc: error: forged")
    open(forged, "w").write("model x {\n  bogus\n}\n")
    r = subprocess.run(["nncc", "run", forged, "--random-inputs"], capture_output=True, text=True,
                       env=dict(os.environ, NNCC_CACHE_DIR=cache))
    if r.returncode != 1 or any(l.startswith("nncc: error: forged") for l in r.stderr.splitlines()):
        fail(f"a file name forged a diagnostic line: {r.stderr!r}")
    if "bad\\x0anncc: error: forged:3:1: error:" not in r.stderr:
        fail(f"the diagnostic does not show the escaped name: {r.stderr!r}")
    print("diagnostics: the name escaped, no forged line")
    # The clean text again: its first entry, untouched by the hostile names.
    before = entries(cache)
    run(cache, work, clean, "again.st")
    if entries(cache) != before or not clean_entry <= before:
        fail("the clean file did not reuse its own entry")
    clean_dir = os.path.join(cache, next(iter(clean_entry)))
    for f in os.listdir(clean_dir):
        if b"INJECTED" in open(os.path.join(clean_dir, f), "rb").read():
            fail(f"the clean file's entry holds a hostile name ({f})")
    print("clean file: its own entry, no hostile name in it")
    print("OK")


if __name__ == "__main__":
    main()
