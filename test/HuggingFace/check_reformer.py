"""nncc import-hf of ReformerModel against transformers.

Small random-weight ReformerModels saved with save_pretrained, imported and
run by `nncc run` in f32 and f64 on the same inputs, with and without
padding: local and LSH layers mixed (reversible blocks on [e, e], the final
LayerNorm over 2 hidden_size), axial and learned positions, a decoder
(causal), local look-back/ahead, and T that are not multiples of the chunks
(transformers pads them with masked positions: nncc's local layers need not,
its LSH layers pad as transformers does, to the chunks' least common
multiple). The LSH layers' rotations
are HF's own: with hash_seed set it draws torch.manual_seed(hash_seed), then
torch.randn([heads, head size, hashes, buckets / 2]), fed to nncc as
lsh_rotations. last_hidden_state against transformers' in float32 (1e-5
relative) and float64 (1e-10). Then training: the imported model with an
MSE loss on last_hidden_state, its gradients (`nncc run --grad`, f64)
against torch.autograd through transformers' ReformerModel (its reversible
backward, in training mode: T 20), padded, for the local/LSH and decoder
cases. Last, export-hf of every imported model: from_pretrained (with the
original hash_seed, which the written config leaves null) gives the
original's outputs, and the written tensors are the checkpoint's.

usage: check_reformer.py NNCC OUT_DIR
"""
import os
import subprocess
import sys

import numpy as np
import torch
import transformers
from safetensors.numpy import load_file

import nncc_testing as nt
from hf_common import make, rel, run_imported

NNCC, OUT = sys.argv[1], sys.argv[2]
B = 2
CASES = [
    # name, T, config overrides
    ("local-lsh", 16, dict(attn_layers=["local", "lsh", "local"], num_buckets=4)),
    ("lsh-2hashes", 16, dict(attn_layers=["lsh", "lsh"], num_hashes=2, num_buckets=4)),
    ("decoder", 16, dict(attn_layers=["local", "lsh"], is_decoder=True, num_buckets=4)),
    ("local-window", 12, dict(attn_layers=["local", "local"], local_num_chunks_before=2,
                              local_num_chunks_after=1, local_attn_chunk_length=3,
                              hidden_act="gelu")),
    ("learned-positions", 10, dict(attn_layers=["local"], axial_pos_embds=False,
                                   max_position_embeddings=20)),
    # T 14 is padded by transformers to 16 (lsh chunk 4) and 15 to 24
    # (lcm of local 6 and lsh 4): the LSH layers pad as it does.
    ("lsh-padded-T", 14, dict(attn_layers=["lsh", "local"], num_buckets=4,
                              num_hashes=2)),
    ("lcm-padded-T", 15, dict(attn_layers=["local", "lsh"], num_buckets=4,
                              local_attn_chunk_length=6, axial_pos_shape=[5, 6],
                              max_position_embeddings=30)),
    # Heads 3 x 4 = 12 wide on a hidden size of 16 (the heads' width is not
    # hidden_size, as in google/reformer-crime-and-punishment's 2 x 64 on 256).
    ("head-size", 16, dict(attn_layers=["local", "lsh"], num_buckets=4, num_attention_heads=3,
                           attention_head_size=4)),
]


def config(**extra):
    base = dict(vocab_size=53, hidden_size=16, num_attention_heads=2, attention_head_size=8,
                feed_forward_size=24, axial_pos_shape=[4, 5], axial_pos_embds_dim=[6, 10],
                max_position_embeddings=20, local_attn_chunk_length=4, lsh_attn_chunk_length=4,
                hidden_dropout_prob=0.0, local_attention_probs_dropout_prob=0.0,
                lsh_attention_probs_dropout_prob=0.0, hash_seed=7, num_hashes=1,
                pad_token_id=0, attn_implementation="eager")
    base.update(extra)
    return transformers.ReformerConfig(**base)


def feeds(cfg, T, pad, seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, cfg.vocab_size, (B, T), generator=g)
    mask = torch.ones(B, T, dtype=torch.long)
    if pad:
        mask[1, T - 5:] = 0
        ids[1, T - 5:] = cfg.pad_token_id
    return dict(input_ids=ids, attention_mask=mask)


def rotations(cfg, dtype):
    nb = cfg.num_buckets
    torch.manual_seed(cfg.hash_seed)
    return torch.randn((cfg.num_attention_heads, cfg.attention_head_size, cfg.num_hashes,
                        nb // 2), dtype=dtype)


# nncc parameter <- transformers parameter(s), for the gradient check.
GRAD_LINKS = [("embeddings.word_embeddings.weight", ["embeddings.word_embeddings.weight"]),
              ("embeddings.position_embeddings.weights.0",
               ["embeddings.position_embeddings.weights.0"]),
              ("layer_0.f.self_attention.in_proj_weight",
               ["encoder.layers.0.attention.self_attention.%s.weight" % n
                for n in ("query", "key", "value")]),
              ("layer_1.f.self_attention.in_proj_weight",
               ["encoder.layers.1.attention.self_attention.%s.weight" % n
                for n in ("query_key", "value")]),
              ("layer_1.f.self_attention.out_proj.weight",
               ["encoder.layers.1.attention.output.dense.weight"]),
              ("layer_0.f.norm.weight", ["encoder.layers.0.attention.layer_norm.weight"]),
              ("layer_1.g.ff.0.weight", ["encoder.layers.1.feed_forward.dense.dense.weight"]),
              ("layer_0.g.ff.1.bias", ["encoder.layers.0.feed_forward.output.dense.bias"]),
              ("final_norm.bias", ["encoder.layer_norm.bias"])]


def check_grads(name, model, cfg, folder):
    """f64 gradients of mse(last_hidden_state, target) vs transformers' (in
    training mode, which asks T = the axial shape's product: 20)."""
    T = 20
    with open(os.path.join(folder, "model.nn")) as f:
        src = f.read()
    src = src.replace("  input attention_mask: i32[B, T]\n",
                      "  input attention_mask: i32[B, T]\n  input target: f32[B, T, 2 * D]\n")
    src = src.replace("    output last_hidden_state\n",
                      "    output last_hidden_state\n    loss mse(last_hidden_state, target)\n")
    train_nn = os.path.join(folder, "train.nn")
    with open(train_nn, "w") as f:
        f.write(src)
    feed = feeds(cfg, T, True, 11)
    target = torch.randn(B, T, 2 * cfg.hidden_size, generator=torch.Generator().manual_seed(5),
                         dtype=torch.float64)
    model = model.to(torch.float64).train()  # dropout 0; HF's backward wants train()
    model.zero_grad()
    out = model(**feed).last_hidden_state
    torch.nn.functional.mse_loss(out, target).backward()
    hf = dict(model.named_parameters())
    inputs = dict(feed, target=target)
    inputs["lsh_rotations"] = rotations(cfg, torch.float64)
    got = nt.grad_run(train_nn, load_file(os.path.join(folder, "model.safetensors")),
                      inputs, precision="f64")
    worst = 0.0
    for ours, theirs in GRAD_LINKS:
        ref = torch.cat([hf[t].grad for t in theirs])
        worst = max(worst, rel(got["grad." + ours], ref))
    ok = worst <= 1e-10
    print("%s gradients f64: %s (%.1e over %d tensors)" % (name, "ok" if ok else "FAIL", worst,
                                                         len(GRAD_LINKS)))
    return ok


def check_export(name, model, cfg, folder, T):
    """export-hf -> AutoModel.from_pretrained -> the original's outputs."""
    out = os.path.join(folder, "exported")
    subprocess.run([NNCC, "export-hf", os.path.join(folder, "model.nn"), "--weights",
                    os.path.join(folder, "model.safetensors"), "-o", out], check=True,
                   capture_output=True)
    back = transformers.AutoModel.from_pretrained(out, hash_seed=cfg.hash_seed).eval()
    same = type(back).__name__ == "ReformerModel"
    original = load_file(os.path.join(folder, "hf", "model.safetensors"))
    written = load_file(os.path.join(out, "model.safetensors"))
    same = same and set(written) == set(original) and all(
        np.array_equal(written[k], original[k]) for k in original)
    f = feeds(cfg, T, True, 21)
    with torch.no_grad():
        e = rel(back.double()(**f).last_hidden_state, model.double().eval()(**f).last_hidden_state)
    ok = same and e <= 1e-12
    print("%s export: %s (%s, tensors %s, %.1e)" % (name, "ok" if ok else "FAIL",
                                                   type(back).__name__,
                                                   "equal" if same else "DIFFER", e))
    return ok


def check_lm_head_encoder():
    """ReformerModelWithLMHead imported --as ReformerModel: its encoder
    (`reformer.` before the names), the head's tensors named in a note."""
    cfg = config(attn_layers=["local", "lsh"], num_buckets=4, is_decoder=True)
    model = make(transformers.ReformerModelWithLMHead, cfg, 60)
    folder = os.path.join(OUT, "lm-head-as-encoder")
    model.save_pretrained(os.path.join(folder, "hf"))
    r = subprocess.run([NNCC, "import-hf", os.path.join(folder, "hf"), "--as", "ReformerModel",
                        "-o", folder], capture_output=True, text=True)
    said = " ".join((r.stdout + r.stderr).split())
    print("lm-head --as ReformerModel: rc %d; %s" % (r.returncode, said))
    # Reformer's attention dropouts are its own: no note about BERT's.
    dropout_note = "attention_probs_dropout_prob" in said
    print("lm-head dropout note: %s" % ("FAIL (printed)" if dropout_note else "none"))
    if r.returncode != 0 or dropout_note:
        return False
    f = feeds(cfg, 16, True, 8)
    with torch.no_grad():
        ref = model.double().reformer(**f).last_hidden_state
    got = run_imported(NNCC, folder, dict(f, lsh_rotations=rotations(cfg, torch.float64).float()),
                       "f64")["last_hidden_state"]
    e = rel(got, ref)
    print("lm-head encoder f64: %s (%.1e)" % ("ok" if e <= 1e-10 else "FAIL", e))
    return e <= 1e-10


def main():
    ok = check_lm_head_encoder()
    for i, (name, T, extra) in enumerate(CASES):
        cfg = config(**extra)
        model = make(transformers.ReformerModel, cfg, 40 + i)
        folder = os.path.join(OUT, name)
        model.save_pretrained(os.path.join(folder, "hf"))
        r = subprocess.run([NNCC, "import-hf", os.path.join(folder, "hf"), "-o", folder],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print("%s: import failed: %s" % (name, r.stderr.strip()))
            ok = False
            continue
        lsh = "lsh" in cfg.attn_layers
        for pad in (False, True):
            f = feeds(cfg, T, pad, 3 + i)
            results = []
            for prec, dtype, tol in (("f32", torch.float32, 1e-5), ("f64", torch.float64, 1e-10)):
                with torch.no_grad():
                    ref = model.to(dtype)(**f).last_hidden_state
                given = dict(f)
                if lsh:
                    given["lsh_rotations"] = rotations(cfg, dtype).float()
                got = run_imported(NNCC, folder, given, prec)["last_hidden_state"]
                e = rel(got, ref)
                results.append("%s %s (%.1e)" % (prec, "ok" if e <= tol else "FAIL", e))
                ok = ok and e <= tol
            print("%s %s: %s" % (name, "padded" if pad else "unpadded", ", ".join(results)))
        if name in ("local-lsh", "decoder", "head-size"):
            ok = check_grads(name, model, cfg, folder) and ok
        ok = check_export(name, model, cfg, folder, T) and ok
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
