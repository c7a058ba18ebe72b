#!/usr/bin/env python3
"""Rewrites the CUDA kernel headers for the host emulation (cuda_runtime.h here).

usage: rewrite_cuda.py RUNTIME_INCLUDE OUT_DIR
       rewrite_cuda.py --file IN.cu OUT.cpp

Copies RUNTIME_INCLUDE/nncc/Kernels/CUDA/*.cuh to OUT_DIR/nncc/Kernels/CUDA/
(put -I OUT_DIR before -I RUNTIME_INCLUDE), rewriting, outside comments and
string literals, and keeping every line where it was; with --file, one
source (a generated model's .cu) the same way:

  kernel<<<grid, block[, smem[, stream]]>>>(args)
      -> ::emu::launch(kernel, grid, block, smem, stream, "kernel",
                       [&](auto... a) { kernel(a...); })(args)
         (the kernel is called by name, so default arguments apply)
  extern __shared__ [__align__(N)] T name[];
      -> T *name = (T *)::emu::dynamic_smem();
  __shared__ [__align__(N)] T a[..][..], b[..];
      -> [alignas(N)] static T a[..][..], b[..]; ::emu::shared_array(&a, sizeof(a)); ...

Anything it cannot parse is an error (exit 1) naming the file and line.
"""
import os
import re
import sys


def mask(src):
    """src with comments and string/char literals blanked (newlines kept)."""
    out = list(src)
    i, n = 0, len(src)

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            blank(i + 1, j)
            i = j + 1
        else:
            i += 1
    return "".join(out)


class RewriteError(Exception):
    pass


def line_of(s, pos):
    return s.count("\n", 0, pos) + 1


def split_top(text, sep=","):
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def kernel_start(m, end):
    """Start of the kernel expression ending at `end` (exclusive) in masked m:
    [ns::]*name[<template args>]."""
    k = end
    while True:
        while k > 0 and m[k - 1].isspace():
            k -= 1
        if k > 0 and m[k - 1] == ">":
            depth, paren = 0, 0
            k -= 1
            while k >= 0:
                c = m[k]
                if c in ")]":
                    paren += 1
                elif c in "([":
                    paren -= 1
                elif paren == 0 and c == ">":
                    depth += 1
                elif paren == 0 and c == "<":
                    depth -= 1
                    if depth == 0:
                        break
                k -= 1
            if k < 0:
                raise RewriteError("unbalanced template arguments before <<<")
            while k > 0 and m[k - 1].isspace():
                k -= 1
        j = k
        while k > 0 and (m[k - 1].isalnum() or m[k - 1] == "_"):
            k -= 1
        if k == j:
            raise RewriteError("no kernel name before <<<")
        q = k
        while q > 0 and m[q - 1].isspace():
            q -= 1
        if q >= 2 and m[q - 2:q] == "::":
            k = q - 2
            continue
        return k


EXTERN_RE = re.compile(
    r"extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s+)?(?P<type>[A-Za-z_][\w:\s]*?)\s*"
    r"\b(?P<name>[A-Za-z_]\w*)\s*\[\s*\]\s*;$")
STATIC_RE = re.compile(
    r"__shared__\s+(?:__align__\s*\(\s*(?P<align>\d+)\s*\)\s+)?(?P<decls>.*);$", re.S)
IDENT_RE = re.compile(r"[A-Za-z_]\w*")


def rewrite(src, fname):
    m = mask(src)
    edits = []  # (start, end, text)

    # Launches.
    for mt in re.finditer(r"<<<", m):
        i = mt.start()
        j = m.find(">>>", i + 3)
        if j < 0:
            raise RewriteError("%s:%d: <<< without >>>" % (fname, line_of(src, i)))
        try:
            k = kernel_start(m, i)
        except RewriteError as e:
            raise RewriteError("%s:%d: %s" % (fname, line_of(src, i), e))
        kernel = src[k:i].rstrip()
        dropped_nl = src[k + len(kernel):i].count("\n")
        cfg = src[i + 3:j]
        nargs = len(split_top(m[i + 3:j]))
        if nargs < 2 or nargs > 4:
            raise RewriteError("%s:%d: launch configuration with %d arguments" %
                               (fname, line_of(src, i), nargs))
        cfg += ", 0" * (nargs < 3) + ", nullptr" * (nargs < 4)
        flat = " ".join(kernel.split())
        name = flat.replace("\\", "\\\\").replace('"', '\\"')
        # The kernel is called by name inside a generic lambda (one line, so
        # the lines stay where they were): a launch may leave out parameters
        # that have default arguments.
        text = "::emu::launch(%s, %s, \"%s\", [&](auto... emu_a) { %s(emu_a...); })%s" % (
            kernel, cfg, name, flat, "\n" * dropped_nl)
        edits.append((k, j + 3, text))

    # __shared__ declarations.
    for mt in re.finditer(r"\b(extern\s+)?__shared__\b", m):
        s = mt.start()
        e = m.find(";", s)
        if e < 0:
            raise RewriteError("%s:%d: __shared__ without ;" % (fname, line_of(src, s)))
        stmt_m = m[s:e + 1]
        stmt = src[s:e + 1]
        nl = "\n" * stmt.count("\n")
        if mt.group(1):
            x = EXTERN_RE.match(" ".join(stmt_m.split()))
            if not x:
                raise RewriteError("%s:%d: unrecognised extern __shared__ declaration: %s" %
                                   (fname, line_of(src, s), stmt.strip()))
            t = x.group("type").strip()
            edits.append((s, e + 1, "%s *%s = (%s *)::emu::dynamic_smem();%s" %
                          (t, x.group("name"), t, nl)))
            continue
        x = STATIC_RE.match(" ".join(stmt_m.split()))
        if not x:
            raise RewriteError("%s:%d: unrecognised __shared__ declaration: %s" %
                               (fname, line_of(src, s), stmt.strip()))
        decls = x.group("decls")
        parts = split_top(decls)
        names = []
        for idx, p in enumerate(parts):
            p = p.split("=")[0]
            head = p.split("[")[0]
            ids = IDENT_RE.findall(head)
            if not ids:
                raise RewriteError("%s:%d: no name in __shared__ declaration" %
                                   (fname, line_of(src, s)))
            names.append(ids[-1] if idx == 0 else ids[0])
        if "=" in decls:
            raise RewriteError("%s:%d: __shared__ with an initialiser" % (fname, line_of(src, s)))
        align = "alignas(%s) " % x.group("align") if x.group("align") else ""
        fills = " ".join("::emu::shared_array(&%s, sizeof(%s));" % (n, n) for n in names)
        edits.append((s, e + 1, "%sstatic %s; %s%s" % (align, decls.strip(), fills, nl)))

    edits.sort()
    for a, b in zip(edits, edits[1:]):
        if a[1] > b[0]:
            raise RewriteError("%s:%d: overlapping rewrites" % (fname, line_of(src, b[0])))
    out, pos = [], 0
    for a, b, t in edits:
        out.append(src[pos:a])
        out.append(t)
        pos = b
    out.append(src[pos:])
    return "".join(out)


def rewrite_file(src_path, dst_path):
    with open(src_path) as fh:
        src = fh.read()
    try:
        out = rewrite(src, os.path.basename(src_path))
    except RewriteError as e:
        sys.stderr.write("rewrite_cuda.py: error: %s\n" % e)
        return 1
    with open(dst_path, "w") as fh:
        fh.write('#include <cuda_runtime.h> // emulation (rewrite_cuda.py)\n#line 1 "%s"\n' %
                 src_path)
        fh.write(out)
    return 0


def main(argv):
    if len(argv) == 4 and argv[1] == "--file":
        return rewrite_file(argv[2], argv[3])
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    src_dir = os.path.join(argv[1], "nncc", "Kernels", "CUDA")
    dst_dir = os.path.join(argv[2], "nncc", "Kernels", "CUDA")
    os.makedirs(dst_dir, exist_ok=True)
    n = 0
    for f in sorted(os.listdir(src_dir)):
        if not f.endswith(".cuh"):
            continue
        with open(os.path.join(src_dir, f)) as fh:
            src = fh.read()
        try:
            out = rewrite(src, f)
        except RewriteError as e:
            sys.stderr.write("rewrite_cuda.py: error: %s\n" % e)
            return 1
        with open(os.path.join(dst_dir, f), "w") as fh:
            fh.write('#include <cuda_runtime.h> // emulation (rewrite_cuda.py)\n#line 1 "%s"\n' %
                     os.path.join(src_dir, f))
            fh.write(out)
        n += 1
    print("rewrote %d headers" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
