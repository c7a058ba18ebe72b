"""nncc import-hf against transformers' own modules.

For each architecture: a small random-weight model made by transformers
(eager attention), saved with save_pretrained; `nncc import-hf`; the imported
model run by `nncc run` in f32 and f64 (--precision f64 widens the f32
weights) on the same inputs, with and without padding; every output and the
loss compared with transformers' in float32 (1e-5 relative) and float64
(1e-10). Then F16 / BF16 checkpoints (widened exactly), a sharded checkpoint,
and a checkpoint with a head the import leaves out (--as).

usage: check_import.py NNCC OUT_DIR
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch
import transformers
from safetensors.numpy import load_file

from hf_common import config, make, rel, run_imported

NNCC, OUT = sys.argv[1], sys.argv[2]
B, T = 3, 12


def inputs(seed, pad):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 61, (B, T), generator=g)
    types = torch.randint(0, 3, (B, T), generator=g)
    mask = torch.ones(B, T, dtype=torch.long)
    if pad:
        mask[1, 7:] = 0
        mask[2, 3:] = 0
    return ids, types, mask


def check(name, cls, cfg, labels=None, seed=0, loss_of=None):
    model = make(cls, cfg, seed)
    folder = os.path.join(OUT, name)
    model.save_pretrained(folder + "-hf", safe_serialization=True)
    subprocess.run([NNCC, "import-hf", folder + "-hf", "-o", folder], check=True,
                   stdout=subprocess.DEVNULL)
    worst = {"f32": 0.0, "f64": 0.0}
    for pad in (False, True):
        ids, types, mask = inputs(seed + 1, pad)
        feeds = dict(input_ids=ids, token_type_ids=types, attention_mask=mask)
        hf_kwargs = dict(feeds)
        if labels is not None:
            feeds["labels"] = hf_kwargs["labels"] = labels(ids)
        for precision, dtype in (("f32", torch.float32), ("f64", torch.float64)):
            ref_model = model.to(dtype)
            typed = {k: v.to(dtype) if v.dtype.is_floating_point else v for k, v in hf_kwargs.items()}
            with torch.no_grad():
                ref = ref_model(**typed)
            got = run_imported(NNCC, folder, feeds, precision)
            fields = [k for k in ("last_hidden_state", "pooler_output", "logits") if k in got]
            assert fields, sorted(got)
            for k in fields:
                worst[precision] = max(worst[precision], rel(got[k], ref[k].numpy()))
            if labels is not None:
                want = ref.loss if loss_of is None else loss_of(ref, typed)
                worst[precision] = max(worst[precision], rel(got["loss"], want.numpy()))
        model.float()
    ok = worst["f32"] < 1e-5 and worst["f64"] < 1e-10
    print("%s: outputs %s, f32 %s f64 %s" % (name, ",".join(sorted(fields)),
                                              "ok" if worst["f32"] < 1e-5 else worst["f32"],
                                              "ok" if worst["f64"] < 1e-10 else worst["f64"]))
    return ok


ok = True
ok &= check("bert", transformers.BertModel, config("bert"))
ok &= check("bert-nopool", lambda c: transformers.BertModel(c, add_pooling_layer=False),
            config("bert", hidden_act="gelu_new"))
ok &= check("bert-cls", transformers.BertForSequenceClassification,
            config("bert", num_labels=3, hidden_act="relu"),
            labels=lambda ids: torch.tensor([0, 2, 1]))
ok &= check("bert-reg", transformers.BertForSequenceClassification, config("bert", num_labels=1),
            labels=lambda ids: torch.tensor([0.5, -1.0, 2.0]))
ok &= check("bert-multilabel", transformers.BertForSequenceClassification,
            config("bert", num_labels=4, problem_type="multi_label_classification"),
            labels=lambda ids: (ids[:, :4] % 2).float())
ok &= check("electra", transformers.ElectraModel, config("electra"))
ok &= check("electra-same-dim", transformers.ElectraModel, config("electra", embedding_size=32))
# ElectraForPreTraining's loss casts the labels to float32 (`.float()`), so
# in float64 it is recomputed from transformers' logits the same way in f64.
def active_bce(ref, kw):
    keep = kw["attention_mask"] == 1
    return torch.nn.functional.binary_cross_entropy_with_logits(
        ref.logits[keep], kw["labels"][keep].to(ref.logits.dtype))


ok &= check("electra-pretraining", transformers.ElectraForPreTraining,
            config("electra", hidden_act="gelu_pytorch_tanh"),
            labels=lambda ids: ids % 2, loss_of=active_bce)
ok &= check("electra-cls", transformers.ElectraForSequenceClassification,
            config("electra", num_labels=3, layer_norm_eps=1e-7),
            labels=lambda ids: torch.tensor([2, 0, 1]))

# F16 / BF16 checkpoints: the imported weights are the stored values widened.
for dtype, tag in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
    model = make(transformers.BertModel, config("bert"), 3).to(dtype)
    folder = os.path.join(OUT, "bert-" + tag)
    model.save_pretrained(folder + "-hf", safe_serialization=True)
    subprocess.run([NNCC, "import-hf", folder + "-hf", "-o", folder], check=True,
                   stdout=subprocess.DEVNULL)
    got = load_file(os.path.join(folder, "model.safetensors"))
    sd = model.state_dict()
    exact = all(got[k].dtype == np.float32 for k in got)
    exact &= np.array_equal(got["embeddings.word_embeddings.weight"],
                            sd["embeddings.word_embeddings.weight"].float().numpy())
    qkv = torch.cat([sd["encoder.layer.1.attention.self.%s.weight" % n] for n in ("query", "key", "value")])
    exact &= np.array_equal(got["encoder.1.self_attn.in_proj_weight"], qkv.float().numpy())
    print("%s checkpoint: widened exactly %s" % (tag, exact))
    ok &= exact

# A sharded checkpoint (model.safetensors.index.json) imports the same tensors.
model = make(transformers.BertModel, config("bert"), 4)
model.save_pretrained(os.path.join(OUT, "sharded-hf"), safe_serialization=True,
                      max_shard_size="20KB")
shards = sorted(f for f in os.listdir(os.path.join(OUT, "sharded-hf")) if f.endswith(".safetensors"))
subprocess.run([NNCC, "import-hf", os.path.join(OUT, "sharded-hf"), "-o", os.path.join(OUT, "sharded")],
               check=True, stdout=subprocess.DEVNULL)
model.save_pretrained(os.path.join(OUT, "whole-hf"), safe_serialization=True)
subprocess.run([NNCC, "import-hf", os.path.join(OUT, "whole-hf"), "-o", os.path.join(OUT, "whole")],
               check=True, stdout=subprocess.DEVNULL)
a = load_file(os.path.join(OUT, "sharded", "model.safetensors"))
b = load_file(os.path.join(OUT, "whole", "model.safetensors"))
same = sorted(a) == sorted(b) and all(np.array_equal(a[k], b[k]) for k in a)
print("sharded: %d shards, same tensors %s" % (len(shards), same))
ok &= same and len(shards) > 1

# A masked-LM checkpoint imported as its encoder: the head is left out (a note).
model = make(transformers.BertForMaskedLM, config("bert"), 5)
model.save_pretrained(os.path.join(OUT, "mlm-hf"), safe_serialization=True)
r = subprocess.run([NNCC, "import-hf", os.path.join(OUT, "mlm-hf"), "-o", os.path.join(OUT, "mlm"),
                    "--as", "BertModel"], capture_output=True, text=True)
print("mlm --as BertModel: rc %d; %s" % (r.returncode, r.stderr.strip()))
ok &= r.returncode == 0
print("OK" if ok else "FAILED")
sys.exit(0 if ok else 1)
