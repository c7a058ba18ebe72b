"""nncc export-hf: nncc's weights back into transformers.

1. Round trip: a transformers checkpoint imported and exported again gives
   the same tensors, bit for bit, and a config transformers reads as the same.
2. Fine-tuned by nncc: an imported model trained for a few steps by
   `nncc train`, exported, loaded with from_pretrained (AutoModel and the
   task class): transformers' outputs equal nncc's with the trained weights.
3. A model in nncc's own layout (a generator and a discriminator, as
   models/electra_bert.nn) exported with --embeddings / --encoder as the
   ElectraModel of its discriminator.
4. --dtype bf16 / f16: the tensors are torch's rounding of the f32 weights.

usage: check_export.py NNCC MODEL_DIR OUT_DIR
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch
import transformers
from safetensors.numpy import load_file, save_file

from hf_common import config, make, rel  # the same small models as check_import.py

NNCC, INPUTS, OUT = sys.argv[1:4]
B, T = 4, 10


def nncc(*args, **kw):
    return subprocess.run([NNCC] + [str(a) for a in args], check=True, stdout=subprocess.DEVNULL, **kw)


def feeds(seed, labels=None):
    g = torch.Generator().manual_seed(seed)
    f = dict(input_ids=torch.randint(0, 61, (B, T), generator=g),
             token_type_ids=torch.randint(0, 3, (B, T), generator=g),
             attention_mask=torch.ones(B, T, dtype=torch.long))
    f["attention_mask"][1, 6:] = 0
    if labels is not None:
        f["labels"] = labels
    return f


def save_feeds(f, path, n=1):
    save_file({k: np.concatenate([v.numpy()] * n).astype(np.float32 if v.dtype.is_floating_point else np.int32)
               for k, v in f.items()}, path)


ok = True

# 1. Round trip.
for name, cls, cfg in (("bert", transformers.BertForSequenceClassification, config("bert", num_labels=3)),
                       ("electra", transformers.ElectraForPreTraining, config("electra"))):
    model = make(cls, cfg, 7)
    src = os.path.join(OUT, name + "-hf")
    model.save_pretrained(src, safe_serialization=True)
    nncc("import-hf", src, "-o", os.path.join(OUT, name))
    back = os.path.join(OUT, name + "-back")
    nncc("export-hf", os.path.join(OUT, name, "model.nn"), "--weights",
         os.path.join(OUT, name, "model.safetensors"), "-o", back)
    a, b = load_file(os.path.join(src, "model.safetensors")), load_file(os.path.join(back, "model.safetensors"))
    same = sorted(a) == sorted(b) and all(np.array_equal(a[k], b[k]) for k in a)
    c1, c2 = transformers.AutoConfig.from_pretrained(src), transformers.AutoConfig.from_pretrained(back)
    keys = ["model_type", "architectures", "vocab_size", "hidden_size", "num_hidden_layers",
            "num_attention_heads", "intermediate_size", "hidden_act", "max_position_embeddings",
            "type_vocab_size", "layer_norm_eps", "num_labels"] + (["embedding_size"] if name == "electra" else [])
    diff = [k for k in keys if getattr(c1, k) != getattr(c2, k)]
    print("round trip %s: tensors identical %s, config differs in %s" % (name, same, diff or "nothing"))
    ok &= same and not diff

# 2. Fine-tuned by nncc, loaded by transformers.
for name, cls, labels in (("bert", transformers.BertForSequenceClassification, torch.tensor([0, 2, 1, 2])),
                          ("electra", transformers.ElectraForPreTraining, None)):
    folder = os.path.join(OUT, name)
    if labels is None:
        labels = feeds(1)["input_ids"] % 2
    data = os.path.join(OUT, name + "-data.safetensors")
    save_feeds(feeds(1, labels), data, n=2)
    trained = os.path.join(OUT, name + "-trained.safetensors")
    nncc("train", os.path.join(folder, "model.nn"), "--weights", os.path.join(folder, "model.safetensors"),
         "--data", data, "--batch", 4, "--max-steps", 3, "--lr", "1e-2", "-o", trained)
    exported = os.path.join(OUT, name + "-trained-hf")
    nncc("export-hf", os.path.join(folder, "model.nn"), "--weights", trained, "-o", exported)
    f = feeds(2, labels)
    save_feeds(f, os.path.join(OUT, "in.safetensors"))
    out = os.path.join(OUT, name + "-out.safetensors")
    nncc("run", os.path.join(folder, "model.nn"), "--weights", trained, "--inputs",
         os.path.join(OUT, "in.safetensors"), "--quiet", "-o", out)
    got = load_file(out)
    hf = cls.from_pretrained(exported, attn_implementation="eager").eval()
    base = transformers.AutoModel.from_pretrained(exported, attn_implementation="eager").eval()
    with torch.no_grad():
        ref = hf(**f)
        hidden = base(**{k: v for k, v in f.items() if k != "labels"}).last_hidden_state
        orig = cls.from_pretrained(os.path.join(OUT, name + "-hf"), attn_implementation="eager").eval()(**f)
    moved = rel(ref.logits.numpy(), orig.logits.numpy())
    err = max(rel(got["logits"], ref.logits.numpy()), rel(got["loss"], ref.loss.numpy()))
    print("trained %s: %s loads, logits and loss %s, AutoModel %s, weights moved %s" % (
        name, type(hf).__name__, "ok" if err < 1e-5 else err, type(base).__name__,
        moved > 1e-3))
    ok &= err < 1e-5 and moved > 1e-3 and hidden.shape == (B, T, 32)

# 3. nncc's own layout: the discriminator of a generator + discriminator model.
seed_model = os.path.join(INPUTS, "two_encoders.nn")
w = os.path.join(OUT, "two-w.safetensors")
params = json.loads(subprocess.run([NNCC, "inspect", seed_model], check=True, capture_output=True,
                                   text=True).stdout)["parameters"]
g = torch.Generator().manual_seed(5)
save_file({p["name"]: (torch.randn(p["shape"], generator=g) * 0.2
                       + (1.0 if p["name"].endswith("norm1.weight") or p["name"].endswith("norm2.weight")
                          or p["name"].endswith("LayerNorm.weight") else 0.0)).numpy()
           for p in params}, w)
save_feeds({k: v for k, v in feeds(3).items() if k != "attention_mask"}, os.path.join(OUT, "two-in.safetensors"))
nncc("run", seed_model, "--weights", w, "--inputs", os.path.join(OUT, "two-in.safetensors"), "--quiet",
     "-o", os.path.join(OUT, "two-out.safetensors"))
r = subprocess.run([NNCC, "export-hf", seed_model, "--weights", w, "-o", os.path.join(OUT, "two-hf")],
                   capture_output=True, text=True)
print("two encoders: " + r.stderr.strip())
nncc("export-hf", seed_model, "--weights", w, "--embeddings", "embed", "--encoder", "encoder",
     "-o", os.path.join(OUT, "two-hf"), stderr=subprocess.DEVNULL)
hf = transformers.AutoModel.from_pretrained(os.path.join(OUT, "two-hf"), attn_implementation="eager").eval()
f = feeds(3)
with torch.no_grad():
    ref = hf(input_ids=f["input_ids"], token_type_ids=f["token_type_ids"]).last_hidden_state
err = rel(load_file(os.path.join(OUT, "two-out.safetensors"))["h"], ref.numpy())
print("two encoders --encoder encoder: %s, last_hidden_state %s" % (type(hf).__name__, "ok" if err < 1e-5 else err))
ok &= err < 1e-5

# 4. Half-precision exports are torch's rounding of the f32 weights.
for tag, dtype in (("bf16", torch.bfloat16), ("f16", torch.float16)):
    d = os.path.join(OUT, "bert-" + tag)
    nncc("export-hf", os.path.join(OUT, "bert", "model.nn"), "--weights",
         os.path.join(OUT, "bert", "model.safetensors"), "--dtype", tag, "-o", d)
    from safetensors.torch import load_file as load_torch
    got = load_torch(os.path.join(d, "model.safetensors"))
    want = load_torch(os.path.join(OUT, "bert-hf", "model.safetensors"))
    same = all(got[k].dtype == dtype and torch.equal(got[k], want[k].to(dtype)) for k in want)
    loaded = transformers.AutoModelForSequenceClassification.from_pretrained(d)
    print("%s export: rounded as torch %s, loads as %s" % (tag, same, next(loaded.parameters()).dtype))
    ok &= same

print("OK" if ok else "FAILED")
sys.exit(0 if ok else 1)
