"""Text to `nncc train` data (docs/data.md): tokenizers, encoding, decoding.

    python -m nncc.data train-tokenizer --kind bpe|wordpiece --vocab-size N FILES... -o tok.json
    python -m nncc.data encode --tokenizer tok.json --format csv|jsonl|text FILE
                               [--text-column C] [--pair-column C] [--label-column C ...]
                               [--label-map auto|FILE] [--max-length T] [--bucket T1,T2,...]
                               [--model M.nn | --names role=name,...] -o data.safetensors
    python -m nncc.data decode --tokenizer tok.json (IDS... | --data F.safetensors)

Needs Hugging Face's `tokenizers` and `safetensors` (and numpy); utils/setup.sh
puts them in its virtual environment. The safetensors files are written with
`safetensors.numpy.save_file`. Every error is one line `nncc.data: error:
...` with exit status 1 (`DataError` from the functions).
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys

import numpy as np

__all__ = ["DataError", "train_tokenizer", "load_tokenizer", "read_records", "encode",
           "from_hf", "model_inputs", "plan_tensors", "write", "decode", "main"]

# The roles of the tensors `encode` makes, and the model input names each
# one is recognised under (`--names role=name` names others).
ROLES = {
    "tokens": ("tokens", "input_ids", "ids"),
    "segments": ("segments", "token_type_ids", "segment_ids"),
    "lengths": ("lengths", "length", "lens"),
    # nncc's key padding mask (attention(x, mask: pad)): i1, true = padding.
    "pad": ("pad", "padding_mask", "key_padding_mask", "mask"),
    # Hugging Face's: 1 = keep (a real token), 0 = padding.
    "attention_mask": ("attention_mask",),
}


class DataError(Exception):
    """A bad input, option or file: one line, exit status 1 on the command line."""


def _need(module):
    try:
        return __import__(module, fromlist=["_"])
    except ImportError as e:
        raise DataError("this needs the Python package '%s' (%s); utils/setup.sh puts it in "
                        "its virtual environment ($NNCC_VENV, default ~/.cache/nncc-venv)"
                        % (module.split(".")[0], e))


# ---------------------------------------------------------------- tokenizers

def train_tokenizer(kind, files, vocab_size, min_frequency=2, lowercase=None):
    """A tokenizer trained on text files (one or more lines each).

    kind "bpe": byte-level BPE (GPT-2/RoBERTa: no unknown token), special
    tokens <s> <pad> </s> <unk> <mask> (ids 0-4), template `<s> A </s>` and
    `<s> A </s> B </s>` (B's segment 1). kind "wordpiece": BERT's (NFD,
    accents stripped, lowercased unless lowercase=False), special tokens
    [PAD] [UNK] [CLS] [SEP] [MASK] (ids 0-4), template `[CLS] A [SEP]` and
    `[CLS] A [SEP] B [SEP]`."""
    tk = _need("tokenizers")
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    for f in files:
        if not os.path.isfile(f):
            raise DataError("'%s': no such file" % f)
    if vocab_size < 1:
        raise DataError("--vocab-size must be >= 1, not %d" % vocab_size)
    if kind == "bpe":
        special = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
        tok = Tokenizer(models.BPE())
        if lowercase:
            tok.normalizer = normalizers.Lowercase()
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                      special_tokens=special, show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        cls, sep = "<s>", "</s>"
    elif kind == "wordpiece":
        special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase is not False)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece()
        trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                            special_tokens=special, show_progress=False)
        cls, sep = "[CLS]", "[SEP]"
    else:
        raise DataError("--kind is bpe or wordpiece, not '%s'" % kind)
    tok.train(list(files), trainer)
    c, s = tok.token_to_id(cls), tok.token_to_id(sep)
    tok.post_processor = processors.TemplateProcessing(
        single="%s $A %s" % (cls, sep), pair="%s $A %s $B:1 %s:1" % (cls, sep, sep),
        special_tokens=[(cls, c), (sep, s)])
    return tok


def load_tokenizer(path):
    """A `tokenizers.Tokenizer` from a tokenizer.json, or from a directory
    holding one (what transformers' save_pretrained writes)."""
    _need("tokenizers")
    from tokenizers import Tokenizer
    if os.path.isdir(path):
        path = os.path.join(path, "tokenizer.json")
    if not os.path.isfile(path):
        raise DataError("'%s': no such tokenizer file" % path)
    try:
        return Tokenizer.from_file(path)
    except Exception as e:
        raise DataError("'%s' is not a tokenizer.json: %s" % (path, str(e).splitlines()[0]))


def pad_id(tok):
    """The tokenizer's padding id: its padding setting, else the id of
    [PAD], <pad> or <|padding|>."""
    if tok.padding:
        return tok.padding["pad_id"]
    for t in ("[PAD]", "<pad>", "<|padding|>", "<|pad|>"):
        i = tok.token_to_id(t)
        if i is not None:
            return i
    raise DataError("the tokenizer has no padding token ([PAD], <pad>); give --pad-id")


# ------------------------------------------------------------------ records

def read_records(path, fmt):
    """The rows of a file as (line number, dict) pairs: csv (a header row),
    jsonl (one JSON object a line) or text (each non-empty line a row
    {"text": line})."""
    if not os.path.isfile(path):
        raise DataError("'%s': no such file" % path)
    rows = []
    with open(path, newline="", encoding="utf-8") as f:
        if fmt == "csv":
            reader = csv.DictReader(f)
            if reader.fieldnames is None:
                raise DataError("'%s': empty CSV (no header row)" % path)
            for row in reader:
                rows.append((reader.line_num, row))
            return rows, list(reader.fieldnames)
        columns = []
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            if fmt == "text":
                rows.append((n, {"text": line.rstrip("\r\n")}))
                continue
            if fmt != "jsonl":
                raise DataError("--format is csv, jsonl or text, not '%s'" % fmt)
            try:
                obj = json.loads(line)
            except ValueError as e:
                raise DataError("'%s' line %d: not JSON: %s" % (path, n, e))
            if not isinstance(obj, dict):
                raise DataError("'%s' line %d: not a JSON object" % (path, n))
            for k in obj:
                if k not in columns:
                    columns.append(k)
            rows.append((n, obj))
    return rows, (columns if fmt == "jsonl" else ["text"])


def _column(path, rows, columns, name):
    if name not in columns:
        raise DataError("'%s': no column '%s' (columns: %s)" % (path, name, ", ".join(columns)))
    out = []
    for n, r in rows:
        if name not in r or r[name] is None:
            raise DataError("'%s' line %d: no value in column '%s'" % (path, n, name))
        out.append(r[name])
    return out


# ------------------------------------------------------------------- model

def model_inputs(model, nncc=None):
    """`nncc inspect M.nn` as a dict (inputs with dtype, shape, inference;
    dim_ranges; outputs)."""
    exe = nncc or os.environ.get("NNCC") or shutil.which("nncc")
    if not exe:
        here = os.path.dirname(os.path.abspath(__file__))
        cand = os.path.join(here, "..", "..", "build", "bin", "nncc")
        exe = cand if os.path.exists(cand) else None
    if not exe:
        raise DataError("no nncc to inspect '%s' (put it on PATH or set NNCC)" % model)
    r = subprocess.run([exe, "inspect", model], capture_output=True, text=True)
    if r.returncode != 0:
        msg = (r.stderr.strip().splitlines() or ["nncc inspect failed"])[0]
        raise DataError("nncc inspect %s: %s" % (model, msg))
    return json.loads(r.stdout)


def _dtype(name):
    return {"I32": np.int32, "I64": np.int64, "F32": np.float32, "F64": np.float64,
            "BOOL": np.bool_, "BF16": np.float32}[name]


def _classes(info, inp):
    """The classes of a target input: 2 for a float target (binary cross
    entropy, 0/1 per head), for an integer target the last dim of an output
    whose shape is the target's plus one static dim, when just one has it."""
    if inp["dtype"] in ("F32", "F64", "BF16"):
        return 2
    cands = {o["shape"][-1] for o in info.get("outputs", [])
             if o["shape"][:-1] == inp["shape"] and isinstance(o["shape"][-1], int)}
    return cands.pop() if len(cands) == 1 else None


def plan_tensors(info=None, names=None, label_columns=(), need_labels=True):
    """What to write: {role: (name, numpy dtype)} and [(input, columns,
    dtype, classes, shape)] for the labels, from `nncc inspect`'s JSON
    (only what the model takes) or, without a model, every role under its
    first name (`names` renames: {"tokens": "input_ids", ...})."""
    names = dict(names or {})
    for r in names:
        if r not in ROLES and r != "labels":
            raise DataError("--names: unknown role '%s' (roles: %s, labels)" % (r, ", ".join(ROLES)))
    if info is None:
        plan = {r: (names.get(r, ROLES[r][0]),
                    np.bool_ if r == "pad" else np.int32) for r in ROLES}
        labels = []
        if label_columns:
            shape = [] if len(label_columns) == 1 else [len(label_columns)]
            labels.append((names.get("labels", "labels"), list(label_columns), np.int64, None, shape))
        return plan, labels, None
    inputs = {i["name"]: i for i in info["inputs"]}
    plan, used = {}, set()
    for role, known in ROLES.items():
        cands = [names[role]] if role in names else [n for n in known if n in inputs]
        if role in names and names[role] not in inputs:
            raise DataError("--names %s=%s: model %s has no input '%s' (inputs: %s)"
                            % (role, names[role], info["model"], names[role], ", ".join(inputs)))
        if cands:
            i = inputs[cands[0]]
            if role == "pad" and i["dtype"] != "BOOL":
                raise DataError("model input '%s' is %s; nncc's padding mask is i1 (true = padding); "
                                "name an 1 = keep mask attention_mask" % (i["name"], i["dtype"]))
            plan[role] = (i["name"], _dtype(i["dtype"]))
            used.add(i["name"])
    if "tokens" not in plan:
        raise DataError("model %s has no token input (tokens, input_ids; --names tokens=NAME)"
                        % info["model"])
    targets = [i for i in info["inputs"] if i["name"] not in used]
    labels = []
    if names.get("labels"):
        targets = [inputs[n] for n in names["labels"].split("+") if n in inputs] or targets
    if not label_columns:
        if targets and need_labels:
            raise DataError("model %s takes %s; give --label-column" % (
                info["model"], ", ".join("'%s'" % t["name"] for t in targets)))
        return plan, labels, info
    cols = list(label_columns)
    if len(targets) == 1:
        t = targets[0]
        shape = t["shape"][1:]
        want = shape[0] if shape else 1
        if len(shape) > 1 or not isinstance(want, int):
            raise DataError("model input '%s' is %s: label columns fill [B] or [B, K], not "
                            "per-token targets" % (t["name"], _sig(t)))
        if want != len(cols):
            raise DataError("model input '%s' is %s: %d label column%s, not %d" % (
                t["name"], _sig(t), want, "" if want == 1 else "s", len(cols)))
        labels.append((t["name"], cols, _dtype(t["dtype"]), _classes(info, t), shape))
    elif len(targets) == len(cols):
        for t, c in zip(targets, cols):
            if t["shape"][1:]:
                raise DataError("model input '%s' has shape %s; one label column fills only [B]"
                                % (t["name"], t["shape"]))
            labels.append((t["name"], [c], _dtype(t["dtype"]), _classes(info, t), []))
    else:
        raise DataError("model %s has %d target inputs (%s) for %d label columns" % (
            info["model"], len(targets), ", ".join(t["name"] for t in targets), len(cols)))
    return plan, labels, info


def _sig(i):
    return "%s[%s]" % ({"BOOL": "i1"}.get(i["dtype"], i["dtype"].lower()), ", ".join(map(str, i["shape"])))


def _check_length(info, plan, T):
    if info is None:
        return
    tok = next(i for i in info["inputs"] if i["name"] == plan["tokens"][0])
    if len(tok["shape"]) != 2:
        raise DataError("model input '%s' is %s, not [B, T]" % (tok["name"], _sig(tok)))
    d = tok["shape"][1]
    if isinstance(d, int):
        if T != d:
            raise DataError("T = %d, but model input '%s' has %d positions (--max-length %d)"
                            % (T, tok["name"], d, d))
        return
    rng = info.get("dim_ranges", {}).get(d, {})
    if "max" in rng and T > rng["max"]:
        raise DataError("T = %d is beyond the model's %s <= %d (%s)" % (T, d, rng["max"], rng.get("max_why", "")))
    if "min" in rng and T < rng["min"]:
        raise DataError("T = %d is below the model's %s >= %d (%s)" % (T, d, rng["min"], rng.get("min_why", "")))


def _model_T(info, plan):
    if info is None:
        return None
    tok = next(i for i in info["inputs"] if i["name"] == plan["tokens"][0])
    d = tok["shape"][1] if len(tok["shape"]) == 2 else None
    if isinstance(d, int):
        return d
    return info.get("dim_ranges", {}).get(d, {}).get("max")


# ------------------------------------------------------------------ labels

_TRUE = {"1", "true", "yes", "y", "t"}
_FALSE = {"0", "false", "no", "n", "f"}


def label_maps(values_by_column, given=None):
    """{column: {label string: class id}}: `given` where it names a column,
    else auto: a column of non-negative integers keeps them as the ids, one
    of true/false words (1/0, true/false, yes/no, y/n, t/f) maps true to 1,
    any other the column's sorted unique strings to 0, 1, ..."""
    maps = {}
    for col, vals in values_by_column.items():
        if given is not None and col in given:
            maps[col] = {str(k): int(v) for k, v in given[col].items()}
            continue
        if given is not None:
            raise DataError("the label map has no column '%s' (it has: %s)" % (col, ", ".join(given)))
        uniq = sorted({_label_str(v) for v in vals})
        if all(u.isdigit() for u in uniq):  # class ids already: kept
            maps[col] = {u: int(u) for u in uniq}
        elif all(u.lower() in _TRUE | _FALSE for u in uniq):  # a binary label
            maps[col] = {u: int(u.lower() in _TRUE) for u in uniq}
        else:
            maps[col] = {u: i for i, u in enumerate(uniq)}
    return maps


def _label_str(v):
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v).strip()


def _labels(path, rows_n, values, cols, maps, dtype, classes):
    out = np.zeros((len(rows_n), len(cols)), dtype=dtype)
    for k, c in enumerate(cols):
        m = maps[c]
        for j, v in enumerate(values[c]):
            s = _label_str(v)
            if s not in m:
                raise DataError("'%s' line %d: label '%s' in column '%s' is not in the label map (%s)"
                                % (path, rows_n[j], s, c, ", ".join(m)))
            i = m[s]
            if classes is not None and not 0 <= i < classes:
                raise DataError("'%s' line %d: label '%s' in column '%s' is class %d, outside the "
                                "model's %d classes" % (path, rows_n[j], s, c, i, classes))
            out[j, k] = i
    return out


# ------------------------------------------------------------------ encode

def encode(tok, texts, pairs=None, max_length=None, pad=None, pad_to_max=True):
    """Encodes texts (and pairs) with the tokenizer's template, truncated to
    max_length (longest first for pairs) and padded to max_length (or, with
    pad_to_max=False or no max_length, to the longest). Returns numpy arrays: tokens
    [N, T] i32, segments [N, T] i32 (B's 1, padding 0), lengths [N] i32,
    pad [N, T] bool (true = padding, nncc's key padding mask) and
    attention_mask [N, T] i32 (1 = keep, Hugging Face's)."""
    pad = pad_id(tok) if pad is None else pad
    tok = tok.__class__.from_str(tok.to_str())  # leave the caller's settings alone
    tok.no_padding()
    if max_length:
        tok.enable_truncation(max_length=max_length)
    else:
        tok.no_truncation()
    if pairs is None:
        encs = tok.encode_batch([str(t) for t in texts])
    else:
        encs = tok.encode_batch([(str(a), str(b)) for a, b in zip(texts, pairs)])
    lens = np.array([len(e.ids) for e in encs], dtype=np.int32)
    T = max_length if max_length and pad_to_max else (int(lens.max()) if len(lens) else 1)
    n = len(encs)
    ids = np.full((n, T), pad, dtype=np.int32)
    seg = np.zeros((n, T), dtype=np.int32)
    for j, e in enumerate(encs):
        ids[j, :lens[j]] = e.ids
        seg[j, :lens[j]] = e.type_ids
    keep = np.arange(T)[None, :] < lens[:, None]
    return {"tokens": ids, "segments": seg, "lengths": lens, "pad": ~keep,
            "attention_mask": keep.astype(np.int32)}


def from_hf(batch, model=None, names=None, nncc=None):
    """nncc's tensors from a Hugging Face tokenizer's output (a BatchEncoding
    or dict with input_ids, token_type_ids, attention_mask, 1 = keep; lists,
    numpy or torch tensors): {model input name: numpy array}, typed as the
    model's inputs when `model` (a .nn file) is given: attention_mask is
    passed on under that name and polarity where the model takes it, and
    becomes nncc's padding mask (true = padding) and lengths where it takes
    those."""
    def arr(v):
        if hasattr(v, "detach"):
            v = v.detach().cpu().numpy()
        return np.asarray(v)
    ids = arr(batch["input_ids"])
    if ids.ndim == 1:
        ids = ids[None]
    am = arr(batch["attention_mask"]).reshape(ids.shape) if "attention_mask" in batch \
        else np.ones(ids.shape, np.int64)
    seg = arr(batch["token_type_ids"]).reshape(ids.shape) if "token_type_ids" in batch \
        else np.zeros(ids.shape, np.int64)
    keep = am != 0
    t = {"tokens": ids, "segments": seg, "lengths": keep.sum(1), "pad": ~keep,
         "attention_mask": am}
    plan, _, info = plan_tensors(model_inputs(model, nncc) if model else None, names,
                                 need_labels=False)
    if info is not None:
        _check_length(info, plan, ids.shape[1])
    return {name: t[role].astype(dt) for role, (name, dt) in plan.items()}


def write(path, tensors):
    """Writes {name: numpy array} with safetensors.numpy.save_file."""
    st = _need("safetensors.numpy")
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise DataError("'%s': no such directory" % d)
    st.save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()}, path)


def _bucket_path(out, T):
    root, ext = os.path.splitext(out)
    return "%s.t%d%s" % (root, T, ext or ".safetensors")


def encode_file(tokenizer, path, fmt, out, text_column="text", pair_column=None,
                label_columns=(), label_map="auto", max_length=None, buckets=None,
                model=None, names=None, pad=None, nncc=None, log=print):
    """The command line's encode: returns {output path: {name: array}}."""
    tok = load_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer
    info = model_inputs(model, nncc) if model else None
    plan, label_plan, info = plan_tensors(info, names, label_columns)
    if max_length is not None and max_length < 1:
        raise DataError("--max-length must be >= 1, not %d" % max_length)
    if buckets:
        buckets = sorted(set(buckets))
        if buckets[0] < 1:
            raise DataError("--bucket lengths must be >= 1")
        if max_length and buckets[-1] > max_length:
            raise DataError("--bucket %d is beyond --max-length %d" % (buckets[-1], max_length))
        max_length = buckets[-1]
    pad_to_max = max_length is not None
    if max_length is None:  # padded to the longest, truncated at the model's T
        max_length = _model_T(info, plan) if info else None
        tshape = next(i for i in info["inputs"] if i["name"] == plan["tokens"][0])["shape"] if info else []
        pad_to_max = len(tshape) == 2 and isinstance(tshape[1], int)  # a static T: padded to it
    if pad_to_max:
        if buckets:
            for b in buckets:
                _check_length(info, plan, b)
        else:
            _check_length(info, plan, max_length)
    rows, columns = read_records(path, fmt)
    if not rows:
        raise DataError("'%s' holds no rows" % path)
    texts = _column(path, rows, columns, text_column)
    pairs = _column(path, rows, columns, pair_column) if pair_column else None
    if pairs is not None and "segments" not in plan and info is not None:
        log("nncc.data: note: model %s takes no segments; the pair is told apart only by "
            "the separator" % info["model"])
    cols = [c for _, cs, _, _, _ in label_plan for c in cs]
    values = {c: _column(path, rows, columns, c) for c in cols}
    given = None
    if label_map not in (None, "auto"):
        try:
            with open(label_map) as f:
                given = json.load(f)
        except (OSError, ValueError) as e:
            raise DataError("--label-map '%s': %s" % (label_map, e))
    maps = label_maps(values, given)
    rows_n = [n for n, _ in rows]
    labels = {}
    for name, cs, dt, classes, shape in label_plan:
        lab = _labels(path, rows_n, values, cs, maps, dt, classes)
        labels[name] = lab.reshape((len(rows),) + tuple(shape))
    t = encode(tok, texts, pairs, max_length, pad, pad_to_max)
    if not pad_to_max:
        _check_length(info, plan, t["tokens"].shape[1])
    if not buckets:
        groups = {out: np.arange(len(rows))}
        Ts = {out: t["tokens"].shape[1]}
    else:
        which = np.searchsorted(np.array(buckets), t["lengths"])
        groups, Ts = {}, {}
        for k, b in enumerate(buckets):
            sel = np.nonzero(which == k)[0]
            if len(sel):
                groups[_bucket_path(out, b)] = sel
                Ts[_bucket_path(out, b)] = b
    written = {}
    for p, sel in groups.items():
        T = Ts[p]
        tensors = {name: t[role][sel][:, :T].astype(dt) if t[role].ndim == 2
                   else t[role][sel].astype(dt) for role, (name, dt) in plan.items()}
        for name, lab in labels.items():
            tensors[name] = lab[sel]
        write(p, tensors)
        written[p] = tensors
        log("nncc.data: %s: %d samples, T = %d (%s)" % (p, len(sel), T, ", ".join(
            "%s %s%s" % (k, v.dtype, list(v.shape)) for k, v in tensors.items())))
    if maps and label_map in (None, "auto"):
        mp = os.path.splitext(out)[0] + ".labels.json"
        with open(mp, "w") as f:
            json.dump(maps, f, indent=1, sort_keys=True)
            f.write("\n")
        log("nncc.data: %s: the label map" % mp)
    return written


def decode(tok, ids, skip_special_tokens=True):
    """The text of a sequence of ids (a row of tokens; padding is special
    and dropped unless skip_special_tokens=False)."""
    return tok.decode([int(i) for i in ids], skip_special_tokens=skip_special_tokens)


# -------------------------------------------------------------- command line

class _Parser(argparse.ArgumentParser):
    def __init__(self, *a, **k):
        k.setdefault("allow_abbrev", False)  # --max-len is not --max-length
        super().__init__(*a, **k)

    def error(self, message):
        raise DataError("%s (see python -m nncc.data %s--help)" % (
            message, "" if self.prog.endswith("nncc.data") else self.prog.split()[-1] + " "))


def _ints(s):
    try:
        return [int(x) for x in s.replace(",", " ").split()]
    except ValueError:
        raise DataError("not a list of integers: '%s'" % s)


def _names(s):
    out = {}
    for part in s.split(","):
        if "=" not in part:
            raise DataError("--names takes role=name,...; not '%s'" % part)
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def main(argv=None):
    p = _Parser(prog="python -m nncc.data", description="Text to nncc train data (docs/data.md).")
    sub = p.add_subparsers(dest="cmd", parser_class=_Parser)
    t = sub.add_parser("train-tokenizer", help="train a byte-level BPE or WordPiece tokenizer")
    t.add_argument("files", nargs="+")
    t.add_argument("--kind", choices=["bpe", "wordpiece"], required=True)
    t.add_argument("--vocab-size", type=int, required=True)
    t.add_argument("--min-frequency", type=int, default=2)
    t.add_argument("--lowercase", choices=["yes", "no"], default=None,
                   help="default: yes for wordpiece, no for bpe")
    t.add_argument("-o", "--output", required=True)
    e = sub.add_parser("encode", help="encode text, CSV or JSONL into safetensors for nncc train")
    e.add_argument("input")
    e.add_argument("--tokenizer", required=True)
    e.add_argument("--format", choices=["csv", "jsonl", "text"], default=None,
                   help="default: from the input's extension")
    e.add_argument("--text-column", default="text")
    e.add_argument("--pair-column")
    e.add_argument("--label-column", action="append", default=[])
    e.add_argument("--label-map", default="auto")
    e.add_argument("--max-length", type=int)
    e.add_argument("--bucket", type=_ints)
    e.add_argument("--model")
    e.add_argument("--names", type=_names)
    e.add_argument("--pad-id", type=int)
    e.add_argument("--nncc")
    e.add_argument("-o", "--output", required=True)
    d = sub.add_parser("decode", help="ids (or a data file's token rows) back to text")
    d.add_argument("ids", nargs="*")
    d.add_argument("--tokenizer", required=True)
    d.add_argument("--data")
    d.add_argument("--name", default=None, help="the token tensor in --data (default: tokens or input_ids)")
    d.add_argument("--keep-special", action="store_true")
    try:
        a = p.parse_args(argv)
        if a.cmd == "train-tokenizer":
            tok = train_tokenizer(a.kind, a.files, a.vocab_size, a.min_frequency,
                                  None if a.lowercase is None else a.lowercase == "yes")
            tok.save(a.output)
            print("nncc.data: %s: %s tokenizer, %d tokens" % (a.output, a.kind, tok.get_vocab_size()))
        elif a.cmd == "encode":
            fmt = a.format or {".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl"}.get(
                os.path.splitext(a.input)[1].lower(), "text")
            encode_file(a.tokenizer, a.input, fmt, a.output, a.text_column, a.pair_column,
                        a.label_column, a.label_map, a.max_length, a.bucket, a.model, a.names,
                        a.pad_id, a.nncc)
        elif a.cmd == "decode":
            tok = load_tokenizer(a.tokenizer)
            if a.data:
                st = _need("safetensors.numpy")
                if not os.path.isfile(a.data):
                    raise DataError("'%s': no such file" % a.data)
                data = st.load_file(a.data)
                name = a.name or next((n for n in ROLES["tokens"] if n in data), None)
                if name not in data:
                    raise DataError("'%s' has no tensor '%s' (tensors: %s)" % (
                        a.data, name or "tokens", ", ".join(sorted(data))))
                rows = data[name].reshape(-1, data[name].shape[-1])
                for r in rows:
                    print(decode(tok, r, not a.keep_special))
            else:
                if not a.ids:
                    raise DataError("decode takes ids or --data")
                print(decode(tok, _ints(" ".join(a.ids)), not a.keep_special))
        else:
            p.print_help()
            return 1
    except DataError as err:
        print("nncc.data: error: %s" % err, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
