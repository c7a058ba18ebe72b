"""Token masking, Gumbel-max sampling, stop_gradient and axial positions
(Inputs/models/token_ops.nn) against PyTorch, given the same mask positions
and Gumbel noise: both recomputed here from an independent numpy Philox
(nncc_testing.refs) with the seeds the compiled module gives its
nn.mask_tokens and nn.sample (step offset 0 in `nncc run`). Exact integer and
boolean outputs; the float outputs, the loss and every grad.<param> of
`nncc run --grad` against torch.autograd (float64 reference on the same fp32
weights). Metric: max|nncc - torch| / max(1, max|torch|) <= 1e-4."""
import numpy as np
import torch
import torch.nn.functional as F
from common import model, nt

from nncc_testing.refs import gumbel_sample, mask_positions

B, T, V, D = 3, 10, 13, 8


def reference(p, tokens, segments, mask, mask_seed, sample_seeds):
    masked = torch.where(mask, torch.ones_like(tokens), tokens)
    n1, n2 = 4, 4
    grid = torch.cat([p["embed.position_embeddings.weights.0"].expand(n1, n2, 3),
                      p["embed.position_embeddings.weights.1"].expand(n1, n2, 5)], -1)
    e = (p["embed.word_embeddings.weight"][masked.long()]
         + p["embed.token_type_embeddings.weight"][segments.long()]
         + grid.reshape(n1 * n2, D)[:T][None])
    h = F.layer_norm(e, (D,), p["embed.LayerNorm.weight"], p["embed.LayerNorm.bias"], 1e-12)
    logits = h @ p["head.weight"].t() + p["head.bias"]
    flat = logits.detach().reshape(-1, V).numpy()
    drawn = torch.from_numpy(gumbel_sample(flat, sample_seeds[0]).reshape(B, T))
    picked = torch.from_numpy(gumbel_sample(flat, sample_seeds[1], 0,
                                            mask.reshape(-1).numpy()).reshape(B, T))
    corrupted = torch.where(mask, picked, tokens)
    frozen = h.detach()
    score = ((h + frozen * frozen) @ p["fc.weight"].t() + p["fc.bias"])[:, :, 0]
    gen_loss = F.cross_entropy(logits.reshape(-1, V),
                               torch.where(mask, tokens, torch.full_like(tokens, -100))
                               .reshape(-1).long(), ignore_index=-100)
    disc_loss = F.binary_cross_entropy_with_logits(score, (corrupted != tokens).to(score.dtype))
    return dict(masked=masked, mask=mask, drawn=drawn, picked=picked, corrupted=corrupted,
                score=score, gen_loss=gen_loss, disc_loss=disc_loss,
                loss=gen_loss + 2 * disc_loss)


def token_ops():
    torch.manual_seed(6)
    m = model("token_ops")
    mask_seeds, sample_seeds = nt.op_seeds(m.nn, "nn.mask_tokens"), nt.op_seeds(m.nn, "nn.sample")
    assert len(mask_seeds) == 1 and len(sample_seeds) == 2, (mask_seeds, sample_seeds)
    shapes = {"embed.word_embeddings.weight": (V, D), "embed.token_type_embeddings.weight": (2, D),
              "embed.position_embeddings.weights.0": (4, 1, 3),
              "embed.position_embeddings.weights.1": (1, 4, 5),
              "embed.LayerNorm.weight": (D,), "embed.LayerNorm.bias": (D,),
              "head.weight": (V, D), "head.bias": (V,), "fc.weight": (1, D), "fc.bias": (1,)}
    weights = {k: (torch.randn(s) * (2.0 if k.startswith("head") else 0.5)).numpy()
               for k, s in shapes.items()}
    tokens = torch.randint(2, V, (B, T), dtype=torch.int32)
    segments = torch.randint(0, 2, (B, T), dtype=torch.int32)
    inputs = {"tokens": tokens, "segments": segments}
    out = m.run(weights, inputs)
    mask = torch.from_numpy(mask_positions(B, T, 0.25, mask_seeds[0]))
    params = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in weights.items()}
    ref = reference(params, tokens, segments, mask, mask_seeds[0], sample_seeds)
    for k in ("masked", "mask", "drawn", "picked", "corrupted", "score", "gen_loss",
              "disc_loss", "loss"):
        nt.check_exact_or_close("token_ops %s" % k, out[k], ref[k].detach())
    replaced = int((ref["corrupted"] != tokens).sum())
    nt.expect("some masked positions replaced (%d of %d)" % (replaced, int(mask.sum())),
              replaced > 0)
    nt.check_grads("token_ops", m.nn, weights, inputs, ref["loss"], params)


if __name__ == "__main__":
    nt.run_cases({"token_ops": token_ops})
