"""Small random-weight transformers models for the import-hf / export-hf tests,
and running an imported model with `nncc run`."""
import os
import subprocess

import numpy as np
import torch
import transformers
from safetensors.numpy import load_file, save_file


def config(kind, **extra):
    embedding_size = extra.pop("embedding_size", 16)
    common = dict(vocab_size=61, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=48, max_position_embeddings=20, type_vocab_size=3,
                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                  attn_implementation="eager")
    common.update(extra)
    if kind == "bert":
        return transformers.BertConfig(**common)
    return transformers.ElectraConfig(embedding_size=embedding_size, **common)


def make(cls, cfg, seed):
    torch.manual_seed(seed)
    model = cls(cfg).eval()
    # transformers initialises biases and LayerNorms to 0 / 1: random values
    # make the comparison see every parameter.
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.randn_like(p) * 0.2 + (1.0 if name.endswith("LayerNorm.weight") else 0.0))
    return model


def run_imported(nncc, folder, feeds, precision):
    """Outputs of `folder`/model.nn with its weights on `feeds` (torch tensors:
    floats as f32, integers as i32) at `precision`."""
    feed_path = os.path.join(folder, "inputs.safetensors")
    save_file({k: v.numpy().astype(np.float32 if v.dtype.is_floating_point else np.int32)
               for k, v in feeds.items()}, feed_path)
    out_path = os.path.join(folder, "out-%s.safetensors" % precision)
    subprocess.run([nncc, "run", os.path.join(folder, "model.nn"), "--weights",
                    os.path.join(folder, "model.safetensors"), "--inputs", feed_path,
                    "--precision", precision, "--quiet", "-o", out_path], check=True)
    return load_file(out_path)


def rel(a, b):
    """max |a - b| / max |b|."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))
