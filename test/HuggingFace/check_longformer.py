"""nncc import-hf / export-hf of LongformerModel against transformers.

A small random-weight LongformerModel (attention_window 4, so a sequence of
11 is padded by transformers to 12 and nncc runs it unpadded; RoBERTa
position ids from input_ids, pad_token_id 1), saved with save_pretrained,
imported and run by `nncc run` in f32 and f64 on the same inputs: with and
without padding, with per-example global tokens (two in one row, one in
another, one on a padded position) and without any. last_hidden_state and
pooler_output against transformers' in float32 (1e-5 relative) and float64
(1e-10). transformers computes Longformer's softmax in float32 even for
float64 inputs, so the float64 reference runs its module with that softmax
in float64 (nncc_testing.hf_softmax); the distance of its own
float64 output is printed as INFO. Then export-hf of the imported model:
transformers.AutoModel.from_pretrained loads a LongformerModel that gives
nncc's outputs, and the exported tensors equal the original checkpoint's.

usage: check_longformer.py NNCC OUT_DIR
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch
import transformers
from safetensors.numpy import load_file

from hf_common import make, rel, run_imported
from nncc_testing.hf_softmax import softmax_f64, torch_softmax

NNCC, OUT = sys.argv[1], sys.argv[2]
B, T, PAD = 3, 11, 1


def inputs(seed, pad, globals_):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, 61, (B, T), generator=g)
    ids[0, 5] = PAD  # a pad token inside a sequence: RoBERTa's positions skip it
    types = torch.zeros(B, T, dtype=torch.long)
    mask = torch.ones(B, T, dtype=torch.long)
    if pad:
        mask[1, 7:] = 0
        ids[1, 7:] = PAD
        mask[2, 3:] = 0
        ids[2, 3:] = PAD
    glob = torch.zeros(B, T, dtype=torch.long)
    if globals_:
        glob[0, 0] = glob[0, 6] = 1
        glob[1, 0] = 1
        glob[2, 9] = 1  # padded in the padded case: not global there
    return dict(input_ids=ids, token_type_ids=types, attention_mask=mask,
                global_attention_mask=glob)


def reference(model, feeds, dtype, patched):
    torch.nn.functional.softmax = softmax_f64 if patched else torch_softmax
    try:
        with torch.no_grad():
            return model.to(dtype)(**feeds)
    finally:
        torch.nn.functional.softmax = torch_softmax


def main():
    cfg = transformers.LongformerConfig(
        vocab_size=61, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=48, max_position_embeddings=40, type_vocab_size=1,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, attention_window=4,
        pad_token_id=PAD, hidden_act="gelu")
    model = make(transformers.LongformerModel, cfg, 3)
    folder = os.path.join(OUT, "longformer")
    model.save_pretrained(folder + "-hf", safe_serialization=True)
    subprocess.run([NNCC, "import-hf", folder + "-hf", "-o", folder], check=True,
                   stdout=subprocess.DEVNULL)
    worst = {"f32": 0.0, "f64": 0.0}
    own = 0.0
    cases = [(False, True), (True, True), (True, False)]
    for seed, (pad, globals_) in enumerate(cases):
        feeds = inputs(seed, pad, globals_)
        for precision, dtype in (("f32", torch.float32), ("f64", torch.float64)):
            ref = reference(model, feeds, dtype, patched=precision == "f64")
            got = run_imported(NNCC, folder, feeds, precision)
            for k in ("last_hidden_state", "pooler_output"):
                worst[precision] = max(worst[precision], rel(got[k], ref[k].numpy()))
            if precision == "f64":
                hf_own = reference(model, feeds, dtype, patched=False)
                own = max(own, rel(hf_own.last_hidden_state.numpy(),
                                   ref.last_hidden_state.numpy()))
    ok = worst["f32"] <= 1e-5 and worst["f64"] <= 1e-10
    print("longformer: outputs last_hidden_state,pooler_output, f32 %s f64 %s (%.1e, %.1e)" % (
        "ok" if worst["f32"] <= 1e-5 else "FAIL", "ok" if worst["f64"] <= 1e-10 else "FAIL",
        worst["f32"], worst["f64"]))
    print("INFO transformers' own float64 (float32 softmax) vs float64: %.1e" % own)
    src = open(os.path.join(folder, "model.nn")).read()
    print("source:", "dilated(window: W, convention: hf)" in src, "cumsum(keep, axis: 1)" in src)

    # export-hf of the imported model: from_pretrained gives nncc's outputs.
    exported = os.path.join(OUT, "longformer-export")
    r = subprocess.run([NNCC, "export-hf", os.path.join(folder, "model.nn"), "--weights",
                        os.path.join(folder, "model.safetensors"), "-o", exported],
                       capture_output=True, text=True)
    print("export rc %d: %s" % (r.returncode, (r.stdout + r.stderr).strip().splitlines()[-1]))
    back = transformers.AutoModel.from_pretrained(exported).eval()
    print("reloaded:", type(back).__name__, json.load(open(os.path.join(exported, "config.json")))
          ["attention_window"])
    feeds = inputs(7, True, True)
    got = run_imported(NNCC, folder, feeds, "f32")
    with torch.no_grad():
        again = back(**feeds)
    e = max(rel(got[k], again[k].numpy()) for k in ("last_hidden_state", "pooler_output"))
    print("export: from_pretrained outputs %s (%.1e)" % ("ok" if e <= 1e-5 else "FAIL", e))
    orig = load_file(os.path.join(folder + "-hf", "model.safetensors"))
    mine = load_file(os.path.join(exported, "model.safetensors"))
    same = set(orig) == set(mine) and all(np.array_equal(orig[k], mine[k]) for k in orig)
    print("export: tensors as the original checkpoint's", same,
          sorted(set(orig) ^ set(mine))[:4])
    ok = ok and e <= 1e-5 and same and r.returncode == 0
    print("OK" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
