"""Small random-weight transformers models for the import-hf / export-hf tests."""
import torch
import transformers


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
