"""The three ELECTRA models (models/electra_*.nn) at full size on tiny inputs,
Algorithm 2 of the seed thesis rerun in PyTorch against nncc's outputs.

One `nncc run --grad` (inference mode: dropout off; masking and sampling are
part of the model and active) reports the masked sequence, the mask, the
corrupted sequence, the discriminator logits, both losses, the total and the
gradient of every parameter. Checked:
  steps 1-3: each row has exactly max(1, floor(0.15 T)) masked positions; `masked` is
     the input with [MASK] (103) there and nothing else changed;
  step 5: `corrupted` equals the input outside the mask, holds token ids;
  steps 2 and 5 redrawn: the mask is the one an independent numpy Philox
     draws with the module's nn.mask_tokens seed, and the corrupted tokens are
     argmax(torch generator logits + that Philox's Gumbel noise);
  steps 4, 6-9, given that mask and corrupted sequence: the generator and
     discriminator of utils/nncc_testing/electra.py (same state_dict) give
     the same discriminator logits, generator loss (mean cross-entropy over
     the masked positions), discriminator loss (BCE against corrupted !=
     input) and total L_gen + 50 L_disc; and torch.autograd gives the same
     gradient for every parameter, generator and discriminator, the shared
     embeddings included.
Metric: max|nncc - torch| / max(1, max|torch|) <= 1e-4 (fp32, the torch side
in float64 on the same fp32 weights)."""
import json
import math
import os
import subprocess
import sys

import numpy as np
import torch
from common import ROOT, nt

from nncc_testing.electra import Electra
from nncc_testing.refs import gumbel_sample, mask_positions

torch.manual_seed(5)


def expect(ok, what):
    print("%s %s" % ("PASS" if ok else "FAIL", what))
    if not ok:
        nt.FAILED.append(what)


def electra(name, B=2, T=12, budget=None):
    """budget: also compile under --memory-budget (for B, T) and require the
    fused heads (nn.linear_cross_entropy and nn.linear_sample) in the plan."""
    V = 30522
    ref = Electra(name).eval()
    nt.randomize_(ref, seed=11)
    with torch.no_grad():  # O(1) logits from the vocabulary projection and the head
        ref.gen_head.out.weight.mul_(4.0)
        ref.disc.weight.mul_(4.0)
    weights = nt.state_dict(ref)
    tokens = torch.randint(1000, V, (B, T), dtype=torch.int32)
    segments = torch.randint(0, 2, (B, T), dtype=torch.int32)
    path = os.path.join(ROOT, "models", name + ".nn")
    extra = []
    if budget:
        extra = ["--memory-budget", budget, "--dim", "B=%d" % B, "--dim", "T=%d" % T]
        plan = json.loads(subprocess.run([nt.NNCC, "inspect", path, "--memory", "--grad"] + extra,
                                         capture_output=True, text=True, check=True).stdout)
        expect(plan["remat"].get("fused_loss_heads") is True,
               "%s at --memory-budget %s, B %d, T %d: the fused generator head" % (name, budget, B, T))
    out = nt.grad_run(path, weights, {"tokens": nt.to_numpy(tokens), "segments": nt.to_numpy(segments)},
                      extra_args=extra)

    tok = nt.to_numpy(tokens)
    mask, masked, corrupted = out["mask"].astype(bool), out["masked"], out["corrupted"]
    counts = mask.sum(1)
    expect((counts == max(1, math.floor(0.15 * T))).all(),
           "%s steps 1-2: max(1, floor(0.15 T)) = %d masked per row (got %s)"
           % (name, max(1, math.floor(0.15 * T)), counts.tolist()))
    expect(np.array_equal(masked, np.where(mask, 103, tok)),
           "%s step 3: masked = input with [MASK] at the mask only" % name)
    expect(np.array_equal(corrupted[~mask], tok[~mask]) and
           ((corrupted >= 0) & (corrupted < V)).all(),
           "%s step 5: corrupted = input outside the mask, token ids inside" % name)

    # Steps 2 and 5 redrawn from an independent Philox with the module's seeds.
    (mask_seed,), (sample_seed,) = nt.op_seeds(path, "nn.mask_tokens"), nt.op_seeds(path, "nn.sample")
    expect(np.array_equal(mask, mask_positions(B, T, 0.15, mask_seed)),
           "%s step 2: the positions the reference's Philox draws" % name)
    ref.double()
    r = ref.losses(tokens, segments, torch.from_numpy(mask), torch.from_numpy(corrupted))
    drawn = gumbel_sample(r["gen_logits"].detach().reshape(B * T, V).numpy(), sample_seed,
                          0, mask.reshape(-1)).reshape(B, T)
    expect(np.array_equal(corrupted[mask], drawn[mask]),
           "%s step 5: corrupted = argmax(generator logits + the reference's Gumbel noise)"
           % name)
    nt.check("%s discriminator logits (step 6)" % name, out["disc_logits"], r["disc_logits"])
    nt.check("%s generator loss (step 7)" % name, out["gen_loss"], r["gen_loss"])
    nt.check("%s discriminator loss (step 8)" % name, out["disc_loss"], r["disc_loss"])
    nt.check("%s total L_gen + 50 L_disc (step 9)" % name, out["loss"], r["loss"])
    r["loss"].backward()
    worst, grads = 0.0, 0
    for k, p in ref.named_parameters():
        g = out.get("grad." + k)
        if g is None:
            expect(False, "%s: no grad.%s" % (name, k))
            continue
        want = p.grad.detach().numpy()
        err = np.abs(g - want).max() / max(1.0, np.abs(want).max())
        worst = max(worst, err)
        grads += 1
        if err > 1e-4:
            expect(False, "%s grad.%s err=%.3e" % (name, k, err))
    expect(worst <= 1e-4, "%s gradients of all %d parameters vs torch.autograd (worst %.3e)"
           % (name, grads, worst))


if __name__ == "__main__":
    cases = {n: (lambda n=n: electra(n)) for n in
             ("electra_bert", "electra_reversible_dilated_bert", "electra_reformer")}
    # Under a budget the generator head is fused (no [B, T, V] logits): the
    # same samples, losses and gradients.
    cases["electra_bert_fused_heads"] = lambda: electra("electra_bert", B=16, T=32, budget="min")
    nt.run_cases(cases)
