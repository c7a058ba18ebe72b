#!/usr/bin/env python3
"""Checks that every op family is found by its name (issue 38, item 3).

An op family F (Elementwise, Linear, Norm, Token, Tensor, Loss, Recurrent,
Attention, Reversible, ODE, Control) has its ops in files named for it:

  dialects/NN/IR/NN<F>Ops.td          the nn ops (forward and backward)
  dialects/NN/IR/NN<F>Ops.cpp         their verifiers and type inference
  dialects/NN/Transforms/<F>Gradients.cpp   their gradient rules
  lib/Conversion/NNToNNK/<F>ToNNK.cpp       their lowering to nnk
  dialects/NNK/IR/NNK<F>Ops.td        the nnk ops (forward and backward)
  dialects/NNK/IR/NNK<F>Ops.cpp       their verifiers
  lib/Target/Launch/<F>Launch.cpp     their kernel launches

This script reads the tree and reports every op whose gradient rule,
lowering pattern, verifier or launch sits in another family's file, and
every family file without its counterparts. Exit status 1 when anything is
out of place; the last line counts the ops and families checked.

usage: op_families.py ROOT
"""
import os
import re
import sys


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def ops_of(td_text, prefix):
    """Class names (e.g. LinearOp) of the ops a .td file defines."""
    return re.findall(r"^def %s_(\w+Op)\s*:" % prefix, td_text, re.M)


def families(directory, pattern):
    out = {}
    for name in sorted(os.listdir(directory)):
        m = re.fullmatch(pattern, name)
        if m and m.group(1) not in ("", "Base"):
            out[m.group(1)] = os.path.join(directory, name)
    return out


def where(directory, suffix, regex):
    """op class -> the family whose <F><suffix> file matches `regex` for it."""
    found = {}
    for name in sorted(os.listdir(directory)):
        if not name.endswith(suffix):
            continue
        fam = name[: -len(suffix)]
        for op in re.findall(regex, read(os.path.join(directory, name))):
            found.setdefault(op, set()).add(fam)
    return found


def main(root):
    errors = []
    nn_dir = os.path.join(root, "dialects/NN/IR")
    nnk_dir = os.path.join(root, "dialects/NNK/IR")
    nn_fams = families(nn_dir, r"NN(\w*)Ops\.td")
    nnk_fams = families(nnk_dir, r"NNK(\w*)Ops\.td")
    nn_ops = {f: ops_of(read(p), "NN") for f, p in nn_fams.items()}
    nnk_ops = {f: ops_of(read(p), "NNK") for f, p in nnk_fams.items()}

    def check_cpp(directory, prefix, fams):
        for fam in fams:
            if fam in ("Control",) and prefix == "NN" and not os.path.exists(
                    os.path.join(directory, "NNControlOps.cpp")):
                continue
            if not os.path.exists(os.path.join(directory, "%s%sOps.cpp" % (prefix, fam))):
                errors.append("%s/%s%sOps.td has no %s%sOps.cpp" %
                              (directory, prefix, fam, prefix, fam))

    check_cpp(nn_dir, "NN", nn_fams)
    check_cpp(nnk_dir, "NNK", nnk_fams)

    # Member definitions (verifiers, inference) in the family's .cpp.
    def check_members(directory, prefix, ops):
        defined = where(directory, "Ops.cpp", r"^\w[^\n]*?\b(\w+Op)::\w+\(")
        for fam, names in ops.items():
            for op in names:
                homes = {h[len(prefix):] for h in defined.get(op, set())}
                if homes and homes != {fam}:
                    errors.append("%s%s's verifier or inference is in %s, not %s%sOps.cpp" %
                                  (prefix.lower() + ".", op, ", ".join(
                                      "%s%sOps.cpp" % (prefix, h) for h in sorted(homes)),
                                   prefix, fam))

    check_members(nn_dir, "NN", nn_ops)
    check_members(nnk_dir, "NNK", nnk_ops)

    # Gradient rules: attachGradientRule<Op, ...> in <F>Gradients.cpp.
    rules = where(os.path.join(root, "dialects/NN/Transforms"), "Gradients.cpp",
                  r"attachGradientRule<(\w+Op)\b")
    for fam, names in nn_ops.items():
        for op in names:
            homes = rules.get(op, set())
            if homes and homes != {fam}:
                errors.append("the gradient rule of nn %s is in %sGradients.cpp, not %sGradients.cpp" %
                              (op, "/".join(sorted(homes)), fam))

    # Lowering patterns: the nn ops a <F>ToNNK.cpp names as nn::XOp.
    lowering_dir = os.path.join(root, "lib/Conversion/NNToNNK")
    lowered = where(lowering_dir, "ToNNK.cpp",
                    r"(?:OpConversionPattern<nn::|addSimple<nn::|addLowering<nn::|Lowering<nn::)(\w+Op)\b")
    for fam, names in nn_ops.items():
        for op in names:
            homes = lowered.get(op, set())
            if homes and homes != {fam}:
                errors.append("the lowering of nn %s is in %sToNNK.cpp, not %sToNNK.cpp" %
                              (op, "/".join(sorted(homes)), fam))

    # Launches: attachLaunch<nnk::XOp, ...> in <F>Launch.cpp.
    launches = where(os.path.join(root, "lib/Target/Launch"), "Launch.cpp",
                     r"attachLaunch<nnk::(\w+Op)\b")
    for fam, names in nnk_ops.items():
        for op in names:
            homes = launches.get(op, set())
            if homes and homes != {fam}:
                errors.append("the launch of nnk %s is in %sLaunch.cpp, not %sLaunch.cpp" %
                              (op, "/".join(sorted(homes)), fam))

    for e in errors:
        print(e)
    n_ops = sum(len(v) for v in nn_ops.values()) + sum(len(v) for v in nnk_ops.values())
    print("%d nn and nnk ops in %d families; %d out of place" %
          (n_ops, len(set(nn_fams) | set(nnk_fams)), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
