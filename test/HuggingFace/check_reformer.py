"""nncc import-hf of ReformerModel against transformers.

Small random-weight ReformerModels saved with save_pretrained, imported and
run by `nncc run` in f32 and f64 on the same inputs, with and without
padding: local and LSH layers mixed (reversible blocks on [e, e], the final
LayerNorm over 2 hidden_size), axial and learned positions, a decoder
(causal), local look-back/ahead, and a T that is not a multiple of the
local chunk (transformers pads it; nncc needs not). The LSH layers' rotations
are HF's own: with hash_seed set it draws torch.manual_seed(hash_seed), then
torch.randn([heads, head size, hashes, buckets / 2]), fed to nncc as
lsh_rotations. last_hidden_state against transformers' in float32 (1e-5
relative) and float64 (1e-10).

usage: check_reformer.py NNCC OUT_DIR
"""
import os
import subprocess
import sys

import torch
import transformers

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


def main():
    ok = True
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
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
