"""Train models/lstm_lm.nn from PyTorch: nncc.torch.Module + torch.optim.

    pip install ./python
    python docs/examples/train_lstm_lm.py [--steps 200] [--batch 16] [--seq 64]

The data is a synthetic corpus with learnable structure: sequences over the
first 64 token ids where each token is the previous one plus a fixed stride
(modulo 64), with 10% of the tokens replaced by random ones, so the loss
falls from log(V) = 9.2 towards the noise floor. Everything except the model is ordinary
PyTorch: the optimizer, gradient clipping, the schedule, the checkpoint."""
import argparse
import math
import os

import torch

import nncc
import nncc.torch


def batches(batch, seq, active=64, stride=7, noise=0.1, seed=0):
    g = torch.Generator().manual_seed(seed)
    while True:
        start = torch.randint(0, active, (batch, 1), generator=g)
        tokens = (start + stride * torch.arange(seq + 1)) % active
        flip = torch.rand(tokens.shape, generator=g) < noise
        tokens[flip] = torch.randint(0, active, (int(flip.sum()),), generator=g)
        tokens = tokens.to(torch.int32)
        yield tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(here, "..", "..", "models", "lstm_lm.nn"))
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--checkpoint", default="lstm_lm.pt")
    args = ap.parse_args()

    lib = nncc.compile(args.model)          # nncc compile --grad --vjp
    model = nncc.torch.Module(lib, seed=0)  # parameters: embed.weight, recurrent.weight_ih_l0, ...
    vocab = model.embed.weight.shape[0]
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, args.steps)
    model.train()
    data = batches(args.batch, args.seq)
    for step in range(1, args.steps + 1):
        tokens, next_tokens = next(data)
        opt.zero_grad()
        logits, loss = model(tokens, next_tokens)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step == 1 or step % 20 == 0 or step == args.steps:
            print("step %4d  loss %.4f  (log V = %.2f)" % (step, loss.item(), math.log(vocab)))
    torch.save(model.state_dict(), args.checkpoint)
    print("saved %s" % args.checkpoint)


if __name__ == "__main__":
    main()
