"""nncc.data's checks (data.test): tokenizers trained on a generated text,
CSV (pairs, two label columns) and JSONL encoded, shapes, dtypes, the
template's ids, padding and truncation, the masks' polarity, the decode
round trip, length buckets, models' names and types, from_hf.

usage: check_data.py INPUTS OUTDIR"""
import csv
import json
import os
import random
import subprocess
import sys

import numpy as np
from safetensors.numpy import load_file

from nncc import data

inputs, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
P = lambda *n: os.path.join(out, *n)


def cli(*args):
    r = subprocess.run([sys.executable, "-m", "nncc.data"] + list(args), capture_output=True, text=True)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


# A deterministic corpus of a few hundred lines.
rng = random.Random(7)
words = ("the market rose fell sharply bank shares bond yields rate cut hike inflation report "
         "profit loss quarter growth stock price outlook guidance merger dividend").split()
sent = lambda lo, hi: " ".join(rng.choice(words) for _ in range(rng.randint(lo, hi)))
with open(P("corpus.txt"), "w") as f:
    for _ in range(300):
        f.write(sent(3, 14) + "\n")

# Tokenizers.
cli("train-tokenizer", "--kind", "bpe", "--vocab-size", "300", P("corpus.txt"), "-o", P("bpe.json"))
cli("train-tokenizer", "--kind", "wordpiece", "--vocab-size", "200", P("corpus.txt"), "-o", P("wp.json"))
bpe, wp = data.load_tokenizer(P("bpe.json")), data.load_tokenizer(P("wp.json"))
assert [bpe.token_to_id(t) for t in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")] == [0, 1, 2, 3, 4]
assert [wp.token_to_id(t) for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")] == [0, 1, 2, 3, 4]
assert bpe.get_vocab_size() == 300
print("tokenizers: bpe", bpe.get_vocab_size(), "wordpiece", wp.get_vocab_size())

# A CSV: text, a pair, two label columns (yes/no and strings).
rows = [(sent(2, 20), sent(1, 4), rng.choice(["yes", "no"]), rng.choice(["equity", "rates", "fx"]))
        for _ in range(40)]
rows[0] = ("the market rose", "bank shares", "yes", "fx")
with open(P("msgs.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["text", "context", "urgent", "topic"])
    w.writerows(rows)
cli("encode", "--tokenizer", P("wp.json"), P("msgs.csv"), "--pair-column", "context",
    "--label-column", "urgent", "--label-column", "topic", "--max-length", "12", "-o", P("wp.safetensors"))
d = load_file(P("wp.safetensors"))
assert sorted(d) == ["attention_mask", "labels", "lengths", "pad", "segments", "tokens"], sorted(d)
assert d["tokens"].shape == (40, 12) and d["tokens"].dtype == np.int32
assert d["segments"].dtype == np.int32 and d["lengths"].dtype == np.int32
assert d["pad"].dtype == np.bool_ and d["attention_mask"].dtype == np.int32
assert d["labels"].shape == (40, 2) and d["labels"].dtype == np.int64
maps = json.load(open(P("wp.labels.json")))
assert maps == {"urgent": {"no": 0, "yes": 1}, "topic": {"equity": 0, "fx": 1, "rates": 2}}, maps
assert list(d["labels"][0]) == [1, 1]
for j, (a, b, u, t) in enumerate(rows):
    assert d["labels"][j, 0] == maps["urgent"][u] and d["labels"][j, 1] == maps["topic"][t]
# Row 0: [CLS] the market rose [SEP] bank shares [SEP], then [PAD].
e = wp.encode("the market rose", "bank shares")
n = len(e.ids)
assert d["lengths"][0] == n and list(d["tokens"][0, :n]) == e.ids
assert d["tokens"][0, 0] == 2 and d["tokens"][0, n - 1] == 3 and list(d["tokens"][0, n:]) == [0] * (12 - n)
sep1 = e.ids.index(3)
assert list(d["segments"][0, :n]) == [0] * (sep1 + 1) + [1] * (n - sep1 - 1)
assert not d["segments"][0, n:].any()
# The masks: pad true on padding, attention_mask 1 on real tokens.
keep = np.arange(12)[None] < d["lengths"][:, None]
assert (d["pad"] == ~keep).all() and (d["attention_mask"] == keep).all()
# Truncation: every row within 12 and ending in [SEP]; some were cut.
assert d["lengths"].max() == 12 and (d["tokens"][np.arange(40), d["lengths"] - 1] == 3).all()
full = [len(wp.encode(a, b).ids) for a, b, _, _ in rows]
assert max(full) > 12 and all(min(f, 12) == l for f, l in zip(full, d["lengths"]))
# Decode round trip.
dec = cli("decode", "--tokenizer", P("wp.json"), "--data", P("wp.safetensors")).splitlines()
assert dec[0] == "the market rose bank shares", dec[0]
ids = " ".join(str(i) for i in wp.encode("profit outlook").ids)
assert cli("decode", "--tokenizer", P("wp.json"), *ids.split()).strip() == "profit outlook"
assert "[CLS]" in cli("decode", "--tokenizer", P("wp.json"), "--keep-special", *ids.split())
print("csv wordpiece: tokens", d["tokens"].shape, "labels", d["labels"].shape, "lengths max",
      d["lengths"].max())

# A JSONL with byte-level BPE, no --max-length: padded to the longest.
with open(P("msgs.jsonl"), "w") as f:
    for a, b, u, t in rows[:10]:
        f.write(json.dumps({"body": a, "flag": u == "yes"}) + "\n")
cli("encode", "--tokenizer", P("bpe.json"), P("msgs.jsonl"), "--text-column", "body",
    "--label-column", "flag", "-o", P("bpe.safetensors"))
d = load_file(P("bpe.safetensors"))
T = d["tokens"].shape[1]
assert T == d["lengths"].max() and d["labels"].shape == (10,)
assert (d["tokens"][:, 0] == 0).all() and (d["tokens"][np.arange(10), d["lengths"] - 1] == 2).all()
assert (d["tokens"][~d["attention_mask"].astype(bool)] == 1).all()  # <pad> = 1
assert list(d["labels"]) == [int(u == "yes") for _, _, u, _ in rows[:10]]
dec = cli("decode", "--tokenizer", P("bpe.json"), "--data", P("bpe.safetensors")).splitlines()
assert dec == [a for a, _, _, _ in rows[:10]], dec[:2]
print("jsonl bpe: T", T, "decode round trip", len(dec), "rows")

# Length buckets: each sample in the smallest bucket that holds it.
cli("encode", "--tokenizer", P("wp.json"), P("msgs.csv"), "--bucket", "8,16,64", "-o", P("b.safetensors"))
total = 0
for b, lo in ((8, 0), (16, 8), (64, 16)):
    p = P("b.t%d.safetensors" % b)
    if os.path.exists(p):
        d = load_file(p)
        assert d["tokens"].shape[1] == b and (d["lengths"] > lo).all() and (d["lengths"] <= b).all()
        total += len(d["lengths"])
assert total == 40
print("buckets: 40 samples in", sorted(f for f in os.listdir(out) if f.startswith("b.t")))

# Model names and types: tiny_classifier (tokens, segments, pad i1, labels
# f32[B, 2]) and hf_tagger (input_ids, token_type_ids, attention_mask i32, label i32).
cli("encode", "--tokenizer", P("bpe.json"), P("msgs.csv"), "--pair-column", "context",
    "--label-column", "urgent", "--label-column", "topic", "--label-map", os.path.join(inputs, "binary_map.json"),
    "--model", os.path.join(inputs, "tiny_classifier.nn"), "--max-length", "24", "-o", P("tc.safetensors"))
d = load_file(P("tc.safetensors"))
assert sorted(d) == ["labels", "pad", "segments", "tokens"], sorted(d)
assert d["labels"].dtype == np.float32 and d["pad"].dtype == np.bool_ and d["tokens"].shape == (40, 24)
with open(P("three.csv"), "w") as f:
    f.write("text,label\nthe market rose,0\nbank shares fell sharply,2\n")
cli("encode", "--tokenizer", P("wp.json"), P("three.csv"), "--label-column", "label",
    "--model", os.path.join(inputs, "hf_tagger.nn"), "-o", P("hf.safetensors"))
d = load_file(P("hf.safetensors"))
assert sorted(d) == ["attention_mask", "input_ids", "label", "token_type_ids"], sorted(d)
assert d["label"].dtype == np.int32 and list(d["label"]) == [0, 2]
n0, n1 = len(wp.encode("the market rose").ids), len(wp.encode("bank shares fell sharply").ids)
assert d["input_ids"].shape == (2, max(n0, n1)) and list(d["attention_mask"].sum(1)) == [n0, n1]
assert n0 != n1
print("models: hf_tagger", sorted(d), "T", d["input_ids"].shape[1])

# from_hf: a transformers tokenizer's output (attention_mask 1 = keep) into
# the model's inputs, nncc's padding mask true = padding.
from transformers import PreTrainedTokenizerFast
hf = PreTrainedTokenizerFast(tokenizer_file=P("wp.json"), pad_token="[PAD]")
batch = hf(["the market rose", "bank"], padding="max_length", max_length=8, return_tensors="np")
t = data.from_hf(batch, model=os.path.join(inputs, "tiny_classifier.nn"))
assert sorted(t) == ["pad", "segments", "tokens"] and t["pad"].dtype == np.bool_
assert (t["pad"] == (batch["attention_mask"] == 0)).all() and t["tokens"].dtype == np.int32
t = data.from_hf(batch, model=os.path.join(inputs, "hf_tagger.nn"))
assert (t["attention_mask"] == batch["attention_mask"]).all() and t["attention_mask"].dtype == np.int32
print("from_hf: pad", t["attention_mask"].sum(1).tolist())

# The masks' polarity in a model: hf_tagger (attention_mask, 1 = keep, made
# nncc's mask by `== 0`) and tiny_classifier (pad, true = padding) give the
# same logits for a sequence whatever padding follows it.
import nncc
for model, key in (("hf_tagger", "input_ids"), ("tiny_classifier", "tokens")):
    lib = nncc.compile(os.path.join(inputs, model + ".nn"), grad=False, vjp=False)
    outs = []
    for T in (8, 12):
        enc = data.encode(wp, ["the market rose sharply"], pairs=None, max_length=T)
        t = data.from_hf({"input_ids": enc["tokens"], "token_type_ids": enc["segments"],
                          "attention_mask": enc["attention_mask"]},
                         model=os.path.join(inputs, model + ".nn"))
        ctx = lib.context()
        ctx.init_weights(0)
        for k, v in t.items():
            ctx.set_input(k, v)
        ctx.forward()
        outs.append(np.array(ctx.output("logits")))
    assert np.allclose(outs[0], outs[1], atol=1e-6), (model, outs)
    print("polarity:", model, "logits independent of padding")
print("OK")
