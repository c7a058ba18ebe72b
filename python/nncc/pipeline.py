"""The seed thesis's pipeline in one command (docs/pipeline.md).

    python -m nncc.pipeline run [-o DIR] [--csv FILE [--validation-csv F] [--test-csv F]
                                [--text-column C] [--label-column C] [--pretrain-text F ...]]
                                [--sections K] [--per-class N] [--preset default|tiny] [scale flags]
    python -m nncc.pipeline debian-packages [--lists FILE ...] [--sections K] [--per-class N]
                                            -o packages.csv [--pretrain-text all.txt]
    python -m nncc.pipeline plot DIR/curves.csv -o curves.png

`run` does, with nncc's command line for the training: a corpus (Debian's
package descriptions from the apt lists, labelled by Section, or the user's
CSV) -> a byte-level BPE tokenizer (nncc.data) -> ELECTRA pretraining of
the three encoders (models/electra_bert.nn, electra_reformer.nn,
electra_reversible_dilated_bert.nn, scaled down) with validation (Table 2)
-> fine-tuning of the discriminator with the lowest validation
discriminator loss, with a linear layer over [CLS] (§6), with accuracy and
F1 on the validation set every epoch -> `nncc eval` of the kept weights on
the test set -> DIR/summary.json, DIR/curves.csv and DIR/curves.png (the
loss and accuracy curves, Figures 22-26).

Needs `tokenizers` and `safetensors` (utils/setup.sh's virtual environment)
and matplotlib (in that environment, else Debian's /usr/bin/python3 draws
the PNG). Every error is one line `nncc.pipeline: error: ...`, exit status 1.
"""
import argparse
import collections
import csv
import glob
import gzip
import json
import lzma
import bz2
import math
import os
import random
import re
import shutil
import subprocess
import sys
import time

__all__ = ["PipelineError", "read_packages", "debian_corpus", "scale_electra",
           "classifier_from", "plot", "run", "main"]

SEEDS = ("electra_bert", "electra_reformer", "electra_reversible_dilated_bert")
SHORT = {"bert": "electra_bert", "reformer": "electra_reformer",
         "dilated": "electra_reversible_dilated_bert"}
APT_LISTS = "/var/lib/apt/lists/*_Packages*"

# Scale presets: the default runs in about 5-10 minutes on 2 cores, tiny
# (the lit test) in well under 2.
PRESETS = {
    "default": dict(sections=8, per_class=200, pretrain_samples=1600, pretrain_val=320,
                    pretrain_epochs=3, finetune_epochs=6, vocab_size=2000, max_length=32,
                    dim=64, heads=4, layers=4, batch=32, pretrain_lr=1e-3, finetune_lr=5e-4),
    "tiny": dict(sections=3, per_class=24, pretrain_samples=96, pretrain_val=32,
                 pretrain_epochs=2, finetune_epochs=3, vocab_size=300, max_length=16,
                 dim=16, heads=4, layers=4, batch=16, pretrain_lr=2e-3, finetune_lr=2e-3),
}


class PipelineError(Exception):
    """A bad input, option or file, or a failed stage: one line, exit status 1."""


def _log(msg=""):
    print(msg, flush=True)


# ------------------------------------------------------------- the corpus

def _read_list(path):
    """The text of an apt list or dpkg status file, whatever its compression
    (.lz4 through the lz4 module or the lz4 tool, .gz, .xz, .bz2, plain)."""
    if not os.path.isfile(path):
        raise PipelineError("'%s': no such file" % path)
    try:
        if path.endswith(".lz4"):
            try:
                import lz4.frame
                with lz4.frame.open(path, "rb") as f:
                    raw = f.read()
            except ImportError:
                tool = shutil.which("lz4cat") or shutil.which("lz4")
                if not tool:
                    raise PipelineError("'%s' is lz4-compressed and neither the Python module lz4 "
                                        "nor the lz4 tool is here (apt-get install lz4)" % path)
                r = subprocess.run([tool, "-dc", path] if tool.endswith("lz4") else [tool, path],
                                   capture_output=True)
                if r.returncode != 0:
                    raise PipelineError("'%s': lz4 failed: %s" % (
                        path, (r.stderr.decode(errors="replace").strip().splitlines() or ["?"])[0]))
                raw = r.stdout
        elif path.endswith(".gz"):
            with gzip.open(path, "rb") as f:
                raw = f.read()
        elif path.endswith(".xz"):
            with lzma.open(path, "rb") as f:
                raw = f.read()
        elif path.endswith(".bz2"):
            with bz2.open(path, "rb") as f:
                raw = f.read()
        else:
            with open(path, "rb") as f:
                raw = f.read()
    except (OSError, EOFError, lzma.LZMAError, RuntimeError) as e:
        raise PipelineError("'%s': cannot read it: %s" % (path, e))
    return raw.decode("utf-8", errors="replace")


def read_packages(paths):
    """(package, section, description) of every stanza with a Description
    and a Section in apt Packages lists or a dpkg status file. The section
    loses its component (`contrib/games` -> `games`); the description is
    the short one (the first line; Packages lists hold no long ones, the
    dpkg status does: its first paragraph is appended)."""
    out = []
    for path in paths:
        text = _read_list(path)
        n0 = len(out)
        for stanza in re.split(r"\n\s*\n", text):
            fields, key = {}, None
            for line in stanza.split("\n"):
                if line[:1] in (" ", "\t"):
                    if key:
                        fields[key].append(line.strip())
                    continue
                if ":" not in line:
                    key = None
                    continue
                key, v = line.split(":", 1)
                fields[key] = [v.strip()]
            if "Description" in fields and "Section" in fields and "Package" in fields:
                desc = fields["Description"]
                long_ = []
                for l in desc[1:]:
                    if l == ".":
                        break
                    long_.append(l)
                text_ = " ".join([desc[0]] + long_).strip()
                section = fields["Section"][0].split("/")[-1].strip()
                if text_ and section:
                    out.append((fields["Package"][0], section, text_))
        if len(out) == n0 and "Package:" not in text[:100000]:
            raise PipelineError("'%s' is not an apt Packages list or dpkg status file "
                                "(no stanza with Package, Section and Description)" % path)
    return out


def default_lists():
    """The apt lists (/var/lib/apt/lists/*_Packages*), else dpkg's status."""
    paths = sorted(p for p in glob.glob(APT_LISTS) if not p.endswith((".diff_Index", ".IndexDiff")))
    if not paths and os.path.isfile("/var/lib/dpkg/status"):
        paths = ["/var/lib/dpkg/status"]
    if not paths:
        raise PipelineError("no apt lists in /var/lib/apt/lists (run apt-get update, give "
                            "--lists FILE, or give your own --csv)")
    return paths


def debian_corpus(records, sections=8, per_class=200, seed=0):
    """(rows, unlabelled): `rows` the (text, section) pairs of the `sections`
    most frequent sections, at most `per_class` each, drawn with `seed`;
    `unlabelled` every other distinct description (for pretraining). A
    description that occurs more than once keeps its first section."""
    first = collections.OrderedDict()
    for _, section, text in records:
        first.setdefault(text, section)
    counts = collections.Counter(first.values())
    if len(counts) < 2:
        raise PipelineError("the package lists hold %d section(s); a classifier needs 2 or more"
                            % len(counts))
    top = [s for s, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:sections]]
    rng = random.Random(seed)
    by = collections.defaultdict(list)
    for text, s in first.items():
        by[s].append(text)
    rows, chosen = [], set()
    for s in top:
        texts = list(by[s])
        rng.shuffle(texts)
        for t in texts[:per_class]:
            rows.append((t, s))
            chosen.add(t)
    rng.shuffle(rows)
    unlabelled = [t for t in first if t not in chosen]
    rng.shuffle(unlabelled)
    return rows, unlabelled


def write_csv(path, rows, header=("text", "label")):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def write_lines(path, texts):
    with open(path, "w", encoding="utf-8") as f:
        for t in texts:
            f.write(" ".join(t.split()) + "\n")


def read_labelled_csv(path, text_column, label_column):
    """(text, label) rows of a CSV with a header; one-line errors."""
    if not os.path.isfile(path):
        raise PipelineError("'%s': no such file" % path)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames is None:
                raise PipelineError("'%s': empty CSV (no header row)" % path)
            cols = list(reader.fieldnames)
            for c in (text_column, label_column):
                if c not in cols:
                    raise PipelineError("'%s': no column '%s' (columns: %s)" % (path, c, ", ".join(cols)))
            rows = []
            for row in reader:
                t, l = row.get(text_column), row.get(label_column)
                if t is None or l is None:
                    raise PipelineError("'%s' line %d: %d fields, the header has %d"
                                        % (path, reader.line_num, len([v for v in row.values() if v is not None]),
                                           len(cols)))
                t, l = " ".join(t.split()), l.strip()
                if not t:
                    continue
                if not l:
                    raise PipelineError("'%s' line %d: empty label in column '%s'"
                                        % (path, reader.line_num, label_column))
                rows.append((t, l))
    except UnicodeDecodeError as e:
        raise PipelineError("'%s' is not UTF-8 text: %s" % (path, e))
    except csv.Error as e:
        raise PipelineError("'%s': malformed CSV: %s" % (path, e))
    if not rows:
        raise PipelineError("'%s' holds no rows" % path)
    return rows


def read_text_lines(path):
    if not os.path.isfile(path):
        raise PipelineError("'%s': no such file" % path)
    try:
        with open(path, encoding="utf-8") as f:
            return [" ".join(l.split()) for l in f if l.strip()]
    except UnicodeDecodeError as e:
        raise PipelineError("'%s' is not UTF-8 text: %s" % (path, e))


def stratified_split(rows, fractions, seed):
    """rows split into len(fractions) + 1 parts, each class in proportion
    (at least one sample of a class in the first part)."""
    rng = random.Random(seed)
    by = collections.defaultdict(list)
    for r in rows:
        by[r[1]].append(r)
    parts = [[] for _ in range(len(fractions) + 1)]
    for label in sorted(by):
        rs = by[label]
        rng.shuffle(rs)
        n = len(rs)
        start = 0
        cuts = []
        for fr in fractions:
            cuts.append(int(round(fr * n)))
        rest = n - sum(cuts)
        if rest < 1:
            raise PipelineError("class '%s' has %d sample(s): too few to split into training, "
                                "validation and test sets (give --validation-csv / --test-csv, or "
                                "more samples)" % (label, n))
        sizes = [rest] + cuts
        for k, s in enumerate(sizes):
            parts[k].extend(rs[start:start + s])
            start += s
    for p in parts:
        rng.shuffle(p)
    return parts


# ----------------------------------------------------------------- models

def _sub_const(src, name, value):
    new, n = re.subn(r"\b%s = [0-9.]+\b" % name, "%s = %s" % (name, value), src, count=1)
    if n != 1:
        raise PipelineError("the seed model has no 'const %s = ...'" % name)
    return new


def _train_clause(lr, epochs, batch, warmup=0.1):
    return ("  train {\n    optimizer adamw(lr: %g, weight_decay: 0.01)\n"
            "    schedule warmup_cosine(warmup_fraction: %g)\n    epochs %d\n    batch %d\n  }"
            % (lr, warmup, epochs, batch))


def _axial(T):
    n2 = 1
    while n2 * n2 < T:
        n2 *= 2
    return (T + n2 - 1) // n2, n2


def scale_electra(src, vocab, dim, heads, layers, T, mask_id, lr, epochs, batch):
    """A seed ELECTRA model's text at another scale: V, D, A, N (and S,
    BERT's position table) replaced, MASK the tokenizer's mask id, the
    Reformer's axial grid covering T, LSH chunks and the dilated window T/4,
    and a train clause of its own (AdamW, 10% warm-up then cosine)."""
    src = _sub_const(src, "V", vocab)
    src = _sub_const(src, "D", dim)
    src = _sub_const(src, "A", heads)
    src = _sub_const(src, "N", layers)
    src = _sub_const(src, "MASK", mask_id)
    if re.search(r"\bS = [0-9]+", src):
        src = _sub_const(src, "S", T)
    n1, n2 = _axial(T)
    src = re.sub(r"axial_shape: \[\d+, \d+\]", "axial_shape: [%d, %d]" % (n1, n2), src)
    w = max(2, T // 4)
    src = re.sub(r"chunk: \d+", "chunk: %d" % w, src)
    src = re.sub(r"window: \d+", "window: %d" % w, src)
    src, n = re.subn(r"\n  train \{.*?\n  \}", "\n" + _train_clause(lr, epochs, batch), src, flags=re.S)
    if n != 1:
        raise PipelineError("the seed model has no train clause")
    return src


def _statement(body, name):
    """The text of `name = ...` in a model body, across lines until its
    parentheses close."""
    m = re.search(r"^\s*%s\s*=" % name, body, flags=re.M)
    if not m:
        raise PipelineError("the ELECTRA model declares no '%s'" % name)
    i, depth = m.end(), 0
    while i < len(body):
        c = body[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "\n" and depth == 0:
            break
        i += 1
    return body[m.start():i].strip()


def classifier_from(electra_src, classes, lr, epochs, batch, name):
    """The fine-tuning model of §6 for an ELECTRA model's text: its blocks,
    constants, `embed` and discriminator `encoder` (the same parameter
    names, so the ELECTRA run's weights load with --partial-weights), and a
    linear layer over [CLS] into `classes` logits, trained with
    cross-entropy."""
    m = re.search(r"^model\s+\w+\s*\{", electra_src, flags=re.M)
    if not m:
        raise PipelineError("no model in the ELECTRA source")
    blocks, body = electra_src[:m.start()], electra_src[m.end():]
    consts = "\n".join("  " + l.strip() for l in body.split("\n") if l.strip().startswith("const "))
    embed = _statement(body, "embed")
    encoder = _statement(body, "encoder")
    return ("%s\nmodel %s {\n  dims B, T\n%s\n  const C = %d\n\n"
            "  input tokens: i32[B, T]\n  input segments: i32[B, T]\n  input labels: i32[B]\n\n"
            "  %s\n  %s\n  head = linear(D, C)\n\n"
            "  forward {\n    h = encoder(embed(tokens, segments))\n    logits = head(h[:, 0])\n"
            "    output logits\n    loss cross_entropy(logits, labels)\n  }\n\n%s\n}\n"
            % (blocks.rstrip() + "\n", name, consts, classes, embed, encoder,
               _train_clause(lr, epochs, batch)))


# ------------------------------------------------------------------ nncc

def find_nncc(given=None):
    exe = given or os.environ.get("NNCC") or shutil.which("nncc")
    if not exe:
        here = os.path.dirname(os.path.abspath(__file__))
        cand = os.path.normpath(os.path.join(here, "..", "..", "build", "bin", "nncc"))
        exe = cand if os.path.exists(cand) else None
    if not exe or not os.path.exists(exe) and not shutil.which(exe):
        raise PipelineError("no nncc (put build/bin on PATH, set NNCC or give --nncc)")
    return exe


def nncc_run(exe, args, what, quiet=False):
    """Run `nncc ARGS`, echoing its stdout indented; a failure is one line
    (nncc's own error line)."""
    cmd = [exe] + [str(a) for a in args]
    if not quiet:
        _log("  $ nncc " + " ".join(cmd[1:]))
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = []
    for line in p.stdout:
        out.append(line)
        if not quiet:
            _log("    " + line.rstrip())
    err = p.stderr.read()
    p.wait()
    if p.returncode != 0:
        lines = [l for l in err.strip().splitlines() if "error" in l] or err.strip().splitlines() or ["?"]
        raise PipelineError("%s: nncc %s failed (exit %d): %s" % (what, args[0], p.returncode, lines[0]))
    return "".join(out), err


def read_log(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _f(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def epoch_table(rows):
    """Per epoch of an nncc train --log: the mean training loss (and gen /
    disc losses) and the validation columns of its last row."""
    by = collections.OrderedDict()
    for r in rows:
        by.setdefault(int(r["epoch"]), []).append(r)
    out = []
    for e, rs in by.items():
        d = {"epoch": e, "steps": int(rs[-1]["step"])}
        for k in ("loss", "gen_loss", "disc_loss"):
            vals = [_f(r.get(k)) for r in rs if _f(r.get(k)) is not None]
            if vals:
                d["train_" + k] = sum(vals) / len(vals)
        for k, v in rs[-1].items():
            if k.startswith("val_") and _f(v) is not None:
                d[k] = _f(v)
        out.append(d)
    return out


# ------------------------------------------------------------------ plot

CURVE_COLUMNS = ["stage", "model", "epoch", "step", "lr", "loss", "gen_loss", "disc_loss",
                 "val_loss", "val_gen_loss", "val_disc_loss", "val_accuracy", "val_macro_f1",
                 "val_micro_f1"]


def plot(curves_csv, png):
    """The loss and accuracy curves (Figures 22-26) of a curves.csv: ELECTRA
    training loss per step and validation loss per epoch of each encoder,
    the validation discriminator loss, and the fine-tuning loss, accuracy
    and macro-F1."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = read_log(curves_csv)
    pre = collections.OrderedDict()
    fine = collections.OrderedDict()
    for r in rows:
        (pre if r["stage"] == "pretrain" else fine).setdefault(r["model"], []).append(r)

    def smooth(v, k):
        out, acc = [], []
        for x in v:
            acc.append(x)
            if len(acc) > k:
                acc.pop(0)
            out.append(sum(acc) / len(acc))
        return out

    fig, ax = plt.subplots(2, 2, figsize=(11, 8))
    for m, rs in pre.items():
        s = [int(r["step"]) for r in rs]
        l = [float(r["loss"]) for r in rs]
        line, = ax[0][0].plot(s, smooth(l, max(1, len(l) // 20)), label=m + " train")
        ve = [(int(r["step"]), float(r["val_loss"])) for r in rs if _f(r.get("val_loss")) is not None]
        if ve:
            ax[0][0].plot(*zip(*ve), "o--", color=line.get_color(), label=m + " val")
        vd = [(int(r["step"]), float(r["val_disc_loss"])) for r in rs if _f(r.get("val_disc_loss")) is not None]
        td = [float(r["disc_loss"]) for r in rs if _f(r.get("disc_loss")) is not None]
        if td:
            ax[0][1].plot(s[:len(td)], smooth(td, max(1, len(td) // 20)), color=line.get_color(),
                          label=m + " train")
        if vd:
            ax[0][1].plot(*zip(*vd), "o--", color=line.get_color(), label=m + " val")
    ax[0][0].set_title("ELECTRA pretraining: L_gen + 50 L_disc")
    ax[0][1].set_title("ELECTRA pretraining: discriminator loss")
    for m, rs in fine.items():
        s = [int(r["step"]) for r in rs]
        l = [float(r["loss"]) for r in rs]
        line, = ax[1][0].plot(s, smooth(l, max(1, len(l) // 20)), label=m + " train")
        ve = [(int(r["step"]), float(r["val_loss"])) for r in rs if _f(r.get("val_loss")) is not None]
        if ve:
            ax[1][0].plot(*zip(*ve), "o--", color=line.get_color(), label=m + " val")
        for k, st in (("val_accuracy", "o-"), ("val_macro_f1", "s--")):
            pts = [(int(r["epoch"]), float(r[k])) for r in rs if _f(r.get(k)) is not None]
            if pts:
                ax[1][1].plot(*zip(*pts), st, label="%s %s" % (m, k[4:]))
    ax[1][0].set_title("fine-tuning: cross-entropy")
    ax[1][1].set_title("fine-tuning: validation accuracy and macro-F1")
    ax[1][1].set_ylim(0, 1)
    from matplotlib.ticker import MaxNLocator
    ax[1][1].xaxis.set_major_locator(MaxNLocator(integer=True))
    for a, xl in ((ax[0][0], "step"), (ax[0][1], "step"), (ax[1][0], "step"), (ax[1][1], "epoch")):
        a.set_xlabel(xl)
        a.grid(alpha=0.3)
        if a.lines:
            a.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)


def _plot_anywhere(curves_csv, png):
    """plot() here if matplotlib imports, else under Debian's /usr/bin/python3
    (python3-matplotlib, utils/setup.sh)."""
    try:
        import matplotlib  # noqa: F401
        plot(curves_csv, png)
        return sys.executable
    except ImportError:
        pass
    py = "/usr/bin/python3"
    if os.path.exists(py):
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        r = subprocess.run([py, "-m", "nncc.pipeline", "plot", curves_csv, "-o", png],
                           capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=here))
        if r.returncode == 0:
            return py
        raise PipelineError("plotting under %s failed: %s" % (
            py, (r.stderr.strip().splitlines() or ["?"])[-1]))
    raise PipelineError("no matplotlib to draw %s (utils/setup.sh installs it)" % png)


def _have_matplotlib():
    try:
        import matplotlib  # noqa: F401
        return True
    except ImportError:
        pass
    py = "/usr/bin/python3"
    return os.path.exists(py) and subprocess.run(
        [py, "-c", "import matplotlib"], capture_output=True).returncode == 0


# ------------------------------------------------------------------- run

def _fmt(v, p=4):
    return "-" if v is None else ("%.*f" % (p, v))


def run(a):
    t_start = time.time()
    scale = dict(PRESETS[a.preset])
    for k in scale:
        v = getattr(a, k, None)
        if v is not None:
            scale[k] = v
    for k in ("sections", "per_class", "pretrain_samples", "pretrain_val", "pretrain_epochs",
              "finetune_epochs", "vocab_size", "max_length", "dim", "heads", "layers", "batch"):
        if scale[k] < 1:
            raise PipelineError("--%s must be >= 1, not %d" % (k.replace("_", "-"), scale[k]))
    if scale["layers"] % 4 or scale["heads"] % 4 or scale["dim"] % (4 * scale["heads"]):
        raise PipelineError("the ELECTRA generators are 1/4 of the discriminator: --layers and "
                            "--heads must be multiples of 4 and --dim of 4 x --heads (got %d, %d, %d)"
                            % (scale["layers"], scale["heads"], scale["dim"]))
    models = []
    for m in (a.models.split(",") if a.models else ["bert", "reformer", "dilated"]):
        m = m.strip()
        if m not in SHORT:
            raise PipelineError("--models takes bert, reformer, dilated, not '%s'" % m)
        models.append(SHORT[m])
    exe = find_nncc(a.nncc)
    from . import data  # tokenizers, safetensors, numpy
    try:
        data._need("tokenizers")
        data._need("safetensors")
    except data.DataError as e:
        raise PipelineError(str(e))
    if not a.no_plot and not _have_matplotlib():
        raise PipelineError("no matplotlib here or in /usr/bin/python3 for the PNG (utils/setup.sh "
                            "installs it; --no-plot skips the PNG)")
    out = a.output
    os.makedirs(os.path.join(out, "models"), exist_ok=True)
    seed = a.seed
    summary = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "scale": scale,
               "preset": a.preset, "seed": seed}

    # 1. The corpus.
    _log("== 1. corpus")
    if a.csv:
        rows = read_labelled_csv(a.csv, a.text_column, a.label_column)
        summary["corpus"] = {"source": a.csv}
        if a.validation_csv:
            train_rows = rows
            val_rows = read_labelled_csv(a.validation_csv, a.text_column, a.label_column)
            test_rows = (read_labelled_csv(a.test_csv, a.text_column, a.label_column)
                         if a.test_csv else [])
        else:
            fr = [a.val_fraction] + ([a.test_fraction] if not a.test_csv else [])
            parts = stratified_split(rows, fr, seed)
            train_rows, val_rows = parts[0], parts[1]
            test_rows = (parts[2] if not a.test_csv else
                         read_labelled_csv(a.test_csv, a.text_column, a.label_column))
        unlabelled = []
        if a.pretrain_text:
            for p in a.pretrain_text:
                unlabelled.extend(read_text_lines(p))
        held = set(t for t, _ in val_rows + test_rows)
        pre_texts = [t for t in unlabelled if t not in held] + [t for t, _ in train_rows]
    else:
        lists = a.lists or default_lists()
        recs = read_packages(lists)
        rows, unlabelled = debian_corpus(recs, scale["sections"], scale["per_class"], seed)
        parts = stratified_split(rows, [a.val_fraction, a.test_fraction], seed)
        train_rows, val_rows, test_rows = parts
        pre_texts = unlabelled + [t for t, _ in train_rows]
        summary["corpus"] = {"source": "debian-packages", "lists": lists, "stanzas": len(recs),
                             "descriptions": len(set(t for _, _, t in recs))}
        _log("  %d package stanzas in %d list(s), %d distinct descriptions"
             % (len(recs), len(lists), summary["corpus"]["descriptions"]))
    labels = set(l for _, l in train_rows)
    labels = sorted(labels, key=(lambda l: (int(l), l)) if all(l.isdigit() for l in labels) else None)
    for name, rs in (("validation", val_rows), ("test", test_rows)):
        extra = sorted(set(l for _, l in rs) - set(labels))
        if extra:
            raise PipelineError("the %s set has label(s) the training set lacks: %s"
                                % (name, ", ".join(extra[:5])))
    if len(labels) < 2:
        raise PipelineError("the training set has %d class(es); a classifier needs 2 or more" % len(labels))
    rng = random.Random(seed + 1)
    rng.shuffle(pre_texts)
    n_pv = min(scale["pretrain_val"], max(1, len(pre_texts) // 5))
    pre_val = pre_texts[:n_pv]
    pre_train = pre_texts[n_pv:n_pv + scale["pretrain_samples"]]
    if len(pre_train) < scale["batch"]:
        raise PipelineError("%d pretraining texts: fewer than a batch (%d); give --pretrain-text"
                            % (len(pre_train), scale["batch"]))
    write_csv(os.path.join(out, "train.csv"), train_rows)
    write_csv(os.path.join(out, "validation.csv"), val_rows)
    if test_rows:
        write_csv(os.path.join(out, "test.csv"), test_rows)
    write_lines(os.path.join(out, "pretrain.txt"), pre_train)
    write_lines(os.path.join(out, "pretrain_val.txt"), pre_val)
    counts = collections.Counter(l for _, l in train_rows + val_rows + test_rows)
    summary["corpus"].update({"classes": labels, "class_counts": dict(counts),
                              "train": len(train_rows), "validation": len(val_rows),
                              "test": len(test_rows), "pretrain_train": len(pre_train),
                              "pretrain_validation": len(pre_val)})
    _log("  classification: %d classes (%s); train %d, validation %d, test %d"
         % (len(labels), ", ".join("%s %d" % (l, counts[l]) for l in labels),
            len(train_rows), len(val_rows), len(test_rows)))
    _log("  pretraining: %d texts, %d held out" % (len(pre_train), len(pre_val)))

    # 2. The tokenizer.
    _log("== 2. tokenizer")
    tok_path = os.path.join(out, "tokenizer.json")
    try:
        if a.tokenizer:
            tok = data.load_tokenizer(a.tokenizer)
        else:
            tok = data.train_tokenizer("bpe", [os.path.join(out, "pretrain.txt")], scale["vocab_size"])
        tok.save(tok_path)
    except data.DataError as e:
        raise PipelineError(str(e))
    vocab = tok.get_vocab_size()
    mask_id = next((tok.token_to_id(t) for t in ("<mask>", "[MASK]") if tok.token_to_id(t) is not None), None)
    if mask_id is None:
        raise PipelineError("the tokenizer has no mask token (<mask> or [MASK]) for ELECTRA")
    T = scale["max_length"]
    lens = sorted(len(e.ids) for e in tok.encode_batch([t for t, _ in train_rows]))
    cut = sum(1 for n in lens if n > T)
    _log("  %s: byte-level BPE, %d tokens, mask id %d; T %d (%d of %d training texts cut, "
         "median %d tokens)" % (tok_path, vocab, mask_id, T, cut, len(lens), lens[len(lens) // 2]))
    summary["tokenizer"] = {"path": tok_path, "vocab": vocab, "mask_id": mask_id, "T": T,
                            "cut": cut, "median_tokens": lens[len(lens) // 2]}

    # 3. The models and the data.
    _log("== 3. models and data")
    srcdir = a.seed_models or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models")
    paths = {}
    for m in models:
        sp = os.path.join(srcdir, m + ".nn")
        if not os.path.isfile(sp):
            raise PipelineError("'%s': no such seed model (give --seed-models DIR)" % sp)
        with open(sp) as f:
            src = f.read()
        src = scale_electra(src, vocab, scale["dim"], scale["heads"], scale["layers"], T, mask_id,
                            scale["pretrain_lr"], scale["pretrain_epochs"], scale["batch"])
        p = os.path.join(out, "models", m + ".nn")
        with open(p, "w") as f:
            f.write("// %s scaled by python -m nncc.pipeline (docs/pipeline.md)\n" % m + src)
        paths[m] = p
    log = lambda msg: _log("  " + msg)  # noqa: E731
    try:
        data.encode_file(tok, os.path.join(out, "pretrain.txt"), "text",
                         os.path.join(out, "pretrain.safetensors"), max_length=T,
                         model=paths[models[0]], nncc=exe, log=log)
        data.encode_file(tok, os.path.join(out, "pretrain_val.txt"), "text",
                         os.path.join(out, "pretrain_val.safetensors"), max_length=T,
                         model=paths[models[0]], nncc=exe, log=log)
    except data.DataError as e:
        raise PipelineError(str(e))

    # 4. ELECTRA pretraining (Table 2).
    _log("== 4. ELECTRA pretraining (%d epochs of %d texts, batch %d)"
         % (scale["pretrain_epochs"], len(pre_train), scale["batch"]))
    table2 = []
    curves = []
    for m in models:
        t0 = time.time()
        logp = os.path.join(out, "pretrain_%s.csv" % m)
        w = os.path.join(out, "%s.safetensors" % m)
        stdout, _ = nncc_run(exe, ["train", paths[m], "--data", os.path.join(out, "pretrain.safetensors"),
                                   "--validation", os.path.join(out, "pretrain_val.safetensors"),
                                   "--seed", seed, "--log", logp, "-o", w, "--quiet"], "pretraining " + m)
        rows_ = read_log(logp)
        ep = epoch_table(rows_)
        last = ep[-1]
        params = _params(exe, paths[m], "encoder.", "embed.")
        table2.append({"model": m, "epochs": len(ep), "steps": last["steps"],
                       "train_loss": last.get("train_loss"), "train_gen_loss": last.get("train_gen_loss"),
                       "train_disc_loss": last.get("train_disc_loss"), "val_loss": last.get("val_loss"),
                       "val_gen_loss": last.get("val_gen_loss"), "val_disc_loss": last.get("val_disc_loss"),
                       "discriminator_parameters": params, "seconds": round(time.time() - t0, 1),
                       "weights": w, "epochs_detail": ep})
        _log("  %s: train loss %s, val loss %s (gen %s, disc %s), %d steps, %.0f s"
             % (m, _fmt(last.get("train_loss")), _fmt(last.get("val_loss")),
                _fmt(last.get("val_gen_loss")), _fmt(last.get("val_disc_loss")),
                last["steps"], time.time() - t0))
        for r in rows_:
            curves.append(dict({k: r.get(k, "") for k in CURVE_COLUMNS}, stage="pretrain", model=m))
    best = min(table2, key=lambda r: (r["val_disc_loss"] if r["val_disc_loss"] is not None else math.inf))
    if a.finetune:
        best = next((r for r in table2 if r["model"] == SHORT.get(a.finetune, a.finetune)), None)
        if best is None:
            raise PipelineError("--finetune %s: not among the pretrained models" % a.finetune)
    summary["table2"] = table2
    summary["best"] = best["model"]

    # 5. Fine-tuning (§6).
    m = best["model"]
    _log("== 5. fine-tuning %s's discriminator (%s), %d classes, %d epochs"
         % (m, "lowest validation discriminator loss" if not a.finetune else "--finetune",
            len(labels), scale["finetune_epochs"]))
    with open(paths[m]) as f:
        esrc = f.read()
    cname = "classifier_" + m.replace("electra_", "")
    cpath = os.path.join(out, "models", cname + ".nn")
    with open(cpath, "w") as f:
        f.write("// The classifier of %s's discriminator, by python -m nncc.pipeline (docs/pipeline.md)\n" % m
                + classifier_from(esrc, len(labels), scale["finetune_lr"], scale["finetune_epochs"],
                                  scale["batch"], cname))
    # The classes in sorted order (numerically for integer labels) as ids 0..C-1.
    lm = os.path.join(out, "labels.json")
    with open(lm, "w") as f:
        json.dump({"label": {l: i for i, l in enumerate(labels)}}, f, indent=1)
        f.write("\n")
    try:
        data.encode_file(tok, os.path.join(out, "train.csv"), "csv",
                         os.path.join(out, "finetune_train.safetensors"), label_columns=["label"],
                         label_map=lm, max_length=T, model=cpath, nncc=exe, log=log)
        data.encode_file(tok, os.path.join(out, "validation.csv"), "csv",
                         os.path.join(out, "finetune_validation.safetensors"), label_columns=["label"],
                         label_map=lm, max_length=T, model=cpath, nncc=exe, log=log)
        if test_rows:
            data.encode_file(tok, os.path.join(out, "test.csv"), "csv",
                             os.path.join(out, "finetune_test.safetensors"), label_columns=["label"],
                             label_map=lm, max_length=T, model=cpath, nncc=exe, log=log)
    except data.DataError as e:
        raise PipelineError(str(e))
    runs = [("pretrained", ["--weights", best["weights"], "--partial-weights"])]
    if a.baseline:
        runs.append(("from_scratch", []))
    finetune = {}
    for tag, extra in runs:
        t0 = time.time()
        logp = os.path.join(out, "finetune_%s.csv" % tag)
        mj = os.path.join(out, "finetune_%s.metrics.json" % tag)
        w = os.path.join(out, "classifier_%s.safetensors" % tag)
        _, err = nncc_run(exe, ["train", cpath, "--data", os.path.join(out, "finetune_train.safetensors"),
                       "--validation", os.path.join(out, "finetune_validation.safetensors")] + extra +
                 ["--metrics", "classification", "--metrics-json", mj, "--best-by", "val_macro_f1",
                  "--keep-best", "--seed", seed, "--log", logp, "-o", w], "fine-tuning (%s)" % tag)
        for l in err.splitlines():  # what --partial-weights loaded
            if l.startswith("nncc: note: --partial-weights") or l.startswith("nncc: note: missing"):
                _log("    " + l)
        ep = epoch_table(read_log(logp))
        with open(mj) as f:
            mjs = json.load(f)
        bi = max(range(len(ep)), key=lambda i: (ep[i].get("val_macro_f1") or 0, -i))
        res = {"model": cname, "init": tag, "epochs": ep, "best_epoch": ep[bi]["epoch"],
               "best": {k: ep[bi].get(k) for k in ("val_loss", "val_accuracy", "val_macro_f1", "val_micro_f1")},
               "weights": w, "seconds": round(time.time() - t0, 1)}
        if test_rows:
            tj = os.path.join(out, "test_%s.metrics.json" % tag)
            nncc_run(exe, ["eval", cpath, "--weights", w, "--data",
                           os.path.join(out, "finetune_test.safetensors"), "--metrics", "classification",
                           "--metrics-json", tj], "evaluating (%s)" % tag)
            with open(tj) as f:
                tm = json.load(f)["metrics"]
            res["test"] = {k: tm.get(k) for k in ("loss", "accuracy", "macro_f1", "micro_f1",
                                                  "macro_precision", "macro_recall")}
            res["test"]["classes"] = labels
            for k in ("precision", "recall", "f1", "support"):
                res["test"][k] = tm.get(k)
            res["test"]["confusion"] = tm.get("confusion")
        finetune[tag] = res
        rows_ = read_log(logp)
        for r in rows_:
            curves.append(dict({k: r.get(k, "") for k in CURVE_COLUMNS}, stage="finetune",
                               model="%s (%s)" % (cname, tag)))
    summary["finetune"] = finetune

    # 6. The curves and the summaries.
    cp = os.path.join(out, "curves.csv")
    with open(cp, "w", newline="") as f:
        w_ = csv.DictWriter(f, fieldnames=CURVE_COLUMNS)
        w_.writeheader()
        for r in curves:
            w_.writerow({k: r.get(k, "") for k in CURVE_COLUMNS})
    if not a.no_plot:
        png = os.path.join(out, "curves.png")
        _plot_anywhere(cp, png)
        summary["png"] = png
    summary["curves"] = cp
    summary["seconds"] = round(time.time() - t_start, 1)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")

    _log("")
    _log("Table 2 (ELECTRA pretraining; losses L_gen + 50 L_disc, last epoch; val = %d held-out texts)"
         % len(pre_val))
    _log("| model | disc. params | steps | train loss | val loss | val gen loss | val disc loss | s |")
    _log("|---|---|---|---|---|---|---|---|")
    for r in table2:
        _log("| %s%s | %d | %d | %s | %s | %s | %s | %.0f |"
             % (r["model"], " (best)" if r["model"] == best["model"] else "", r["discriminator_parameters"],
                r["steps"], _fmt(r["train_loss"]), _fmt(r["val_loss"]), _fmt(r["val_gen_loss"]),
                _fmt(r["val_disc_loss"]), r["seconds"]))
    _log("")
    _log("Fine-tuning (§6): %s, %d classes, validation %d, test %d"
         % (cname, len(labels), len(val_rows), len(test_rows)))
    _log("| init | epoch | train loss | val loss | val accuracy | val macro-F1 |")
    _log("|---|---|---|---|---|---|")
    for tag, res in finetune.items():
        for e in res["epochs"]:
            _log("| %s | %d%s | %s | %s | %s | %s |"
                 % (tag, e["epoch"], " *" if e["epoch"] == res["best_epoch"] else "", _fmt(e.get("train_loss")),
                    _fmt(e.get("val_loss")), _fmt(e.get("val_accuracy")), _fmt(e.get("val_macro_f1"))))
    for tag, res in finetune.items():
        b = res["best"]
        line = ("%s: best epoch %d (* above, by validation macro-F1): validation accuracy %s, macro-F1 %s"
                % (tag, res["best_epoch"], _fmt(b["val_accuracy"]), _fmt(b["val_macro_f1"])))
        if "test" in res:
            line += "; test accuracy %s, macro-F1 %s" % (_fmt(res["test"]["accuracy"]),
                                                          _fmt(res["test"]["macro_f1"]))
        _log(line)
        if "test" in res and res["test"].get("f1"):
            _log("  test F1 per class: " + ", ".join(
                "%s %.3f" % (l, f) for l, f in zip(labels, res["test"]["f1"])))
    _log("")
    _log("wrote %s, %s%s, in %.0f s" % (os.path.join(out, "summary.json"), cp,
                                       "" if a.no_plot else ", " + summary["png"], summary["seconds"]))
    return summary


def _params(exe, model, *prefixes):
    """The number of parameter elements under the prefixes (nncc inspect)."""
    r = subprocess.run([exe, "inspect", model], capture_output=True, text=True)
    if r.returncode != 0:
        return 0
    info = json.loads(r.stdout)
    n = 0
    for p in info.get("parameters", []):
        if p.get("name", "").startswith(prefixes):
            k = 1
            for d in p.get("shape", []):
                k *= d
            n += k
    return n


# -------------------------------------------------------------- the CLI

class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise PipelineError("%s (see %s --help)" % (message, self.prog))


def main(argv=None):
    p = _Parser(prog="python -m nncc.pipeline",
                description="The seed thesis's pipeline in one command (docs/pipeline.md).")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    r = sub.add_parser("run", help="corpus -> tokenizer -> ELECTRA pretraining -> fine-tuning -> metrics, curves")
    r.add_argument("-o", "--output", default="pipeline-run", help="the output folder (default pipeline-run)")
    r.add_argument("--preset", choices=sorted(PRESETS), default="default",
                   help="the scale: default (5-10 min on 2 cores) or tiny (the test's)")
    r.add_argument("--csv", help="a labelled CSV (header row) instead of Debian's package descriptions")
    r.add_argument("--validation-csv", help="with --csv: the validation set (else split off --csv)")
    r.add_argument("--test-csv", help="with --csv: the test set (else split off --csv)")
    r.add_argument("--text-column", default="text")
    r.add_argument("--label-column", default="label")
    r.add_argument("--pretrain-text", action="append", help="text files (a text a line) to pretrain on, "
                   "besides the training set's texts (repeatable)")
    r.add_argument("--lists", nargs="+", help="apt Packages lists or a dpkg status file "
                   "(default /var/lib/apt/lists/*_Packages*)")
    r.add_argument("--tokenizer", help="a tokenizer.json to use instead of training a byte-level BPE")
    r.add_argument("--val-fraction", type=float, default=0.15)
    r.add_argument("--test-fraction", type=float, default=0.15)
    r.add_argument("--models", help="the encoders to pretrain, of bert,reformer,dilated (default all)")
    r.add_argument("--finetune", help="fine-tune this one (bert, reformer, dilated) instead of the best")
    r.add_argument("--baseline", action="store_true", help="also fine-tune from a random initialisation")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--seed-models", help="where the seed ELECTRA models are (default the clone's models/)")
    r.add_argument("--nncc", help="the nncc binary (default $NNCC, PATH, the clone's build/bin)")
    r.add_argument("--no-plot", action="store_true", help="no PNG")
    for k in PRESETS["default"]:
        typ = float if k.endswith("_lr") else int
        r.add_argument("--" + k.replace("_", "-"), type=typ, dest=k,
                       help="(default %s; tiny %s)" % (PRESETS["default"][k], PRESETS["tiny"][k]))
    d = sub.add_parser("debian-packages", help="a text,label CSV of package descriptions by Section")
    d.add_argument("--lists", nargs="+")
    d.add_argument("--sections", type=int, default=8, help="the K most frequent sections (default 8)")
    d.add_argument("--per-class", type=int, default=200, help="descriptions per section (default 200)")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--pretrain-text", help="also write every other description here, a line each")
    d.add_argument("-o", "--output", required=True)
    pl = sub.add_parser("plot", help="the PNG of a run's curves.csv")
    pl.add_argument("curves")
    pl.add_argument("-o", "--output", required=True)
    try:
        a = p.parse_args(argv)
        if a.command == "run":
            if a.csv is None and (a.validation_csv or a.test_csv):
                raise PipelineError("--validation-csv and --test-csv need --csv")
            for fr in (a.val_fraction, a.test_fraction):
                if not 0 < fr < 0.5:
                    raise PipelineError("--val-fraction and --test-fraction are in (0, 0.5), not %g" % fr)
            run(a)
        elif a.command == "debian-packages":
            if a.sections < 2 or a.per_class < 1:
                raise PipelineError("--sections must be >= 2 and --per-class >= 1")
            recs = read_packages(a.lists or default_lists())
            rows, rest = debian_corpus(recs, a.sections, a.per_class, a.seed)
            write_csv(a.output, rows)
            c = collections.Counter(l for _, l in rows)
            print("nncc.pipeline: %s: %d descriptions in %d sections (%s)" % (
                a.output, len(rows), len(c), ", ".join("%s %d" % kv for kv in sorted(c.items()))))
            if a.pretrain_text:
                write_lines(a.pretrain_text, rest)
                print("nncc.pipeline: %s: %d other descriptions" % (a.pretrain_text, len(rest)))
        elif a.command == "plot":
            if not os.path.isfile(a.curves):
                raise PipelineError("'%s': no such file" % a.curves)
            try:
                plot(a.curves, a.output)
            except ImportError as e:
                raise PipelineError("no matplotlib here (%s)" % e)
            except (KeyError, ValueError) as e:
                raise PipelineError("'%s' is not a pipeline curves.csv: %s" % (a.curves, e))
        else:
            p.print_help()
            return 2
    except PipelineError as e:
        print("nncc.pipeline: error: %s" % e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("nncc.pipeline: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
