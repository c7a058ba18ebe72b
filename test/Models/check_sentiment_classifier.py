"""models/sentiment_classifier.nn (seed thesis §6.1) fine-tuned from the
weights of models/electra_bert.nn: --partial-weights loads the
discriminator's embeddings and encoder, reports the generator's tensors as
unexpected and the classifier's as missing; with the encoder frozen
(--freeze) two AdamW steps leave every loaded tensor bit for bit as the
ELECTRA file holds it and move the classifier; --metrics gives a
confusion matrix over the whole validation set.

usage: check_sentiment_classifier.py NNCC MODELS_DIR WORKDIR
"""
import json
import os
import subprocess
import sys

import numpy as np

from nncc_testing.safetensors import load_safetensors, save_safetensors
from nncc_testing.train_runs import nncc_checked

nncc, models, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
electra = os.path.join(models, "electra_bert.nn")
model = os.path.join(models, "sentiment_classifier.nn")

# "Pretrained" ELECTRA weights: random, under electra_bert.nn's names.
params = json.loads(nncc_checked(nncc, ["inspect", electra]))["parameters"]
rng = np.random.default_rng(0)
ew = {p["name"]: (rng.standard_normal(p["shape"]) * 0.05).astype(np.float32) for p in params}
ewp = os.path.join(work, "electra.safetensors")
save_safetensors(ewp, ew)

B, T = 4, 8
for name, n, seed in (("train", 8, 1), ("val", 6, 2)):
    r = np.random.default_rng(seed)
    save_safetensors(os.path.join(work, name + ".safetensors"), {
        "tokens": r.integers(0, 30522, (n, T)).astype(np.int32),
        "segments": np.zeros((n, T), np.int32),
        "labels": r.integers(0, 3, n).astype(np.int32)})



def tune(tag, extra):
    out = os.path.join(work, tag + ".safetensors")
    r = subprocess.run([nncc, "train", model, "--weights", ewp, "--partial-weights",
                        "--freeze", "embed.*", "--freeze", "encoder.*",
                        "--data", os.path.join(work, "train.safetensors"),
                        "--validation", os.path.join(work, "val.safetensors"), "--batch", str(B),
                        "--epochs", "1", "--metrics", "accuracy,macro_f1", "--metrics-json",
                        os.path.join(work, tag + ".json"), "-o", out, "--quiet"] + extra,
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit("FAIL: nncc train: " + r.stderr)
    return r.stderr.strip(), load_safetensors(out)


notes, tuned = tune("tuned", [])
print(notes)
_, start = tune("slower", ["--lr", "1e-6"])  # the same start: equal only if nothing moved
js = os.path.join(work, "tuned.json")
loaded = [k for k in tuned if k in ew]
same = all(np.array_equal(np.asarray(tuned[k]), ew[k]) for k in loaded)
moved = all(not np.array_equal(np.asarray(tuned[k]), np.asarray(start[k]))
            for k in ("classifier.weight", "classifier.bias"))
unexpected = sorted(set(ew) - set(tuned))
last = json.load(open(js))["epochs"][-1]
cm = np.asarray(last["confusion"])
print("loaded %d tensors of electra_bert, bit for bit after 2 frozen steps: %s; classifier trained: "
      "%s; left out %d (first %s); validation confusion %s over %d samples" % (
          len(loaded), same, moved, len(unexpected), unexpected[0], cm.shape, cm.sum()))
ok = same and moved and len(loaded) == len(tuned) - 2 and cm.sum() == 6 and cm.shape == (3, 3)
print("OK" if ok else "FAIL")
sys.exit(0 if ok else 1)
