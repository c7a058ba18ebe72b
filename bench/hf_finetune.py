"""Fine-tuning step of an imported BERT classifier: nncc train against
transformers + torch on the same CPU, in the same run (issue 39's goal: a
step at B 32, T 128 at least 1.5x faster than transformers').

A BertForSequenceClassification of BERT-small's size (12 layers, hidden 256,
4 heads, feed-forward 1024, vocabulary 30522; 3 classes; random weights,
dropout 0 on both sides) is saved by transformers, imported with
`nncc import-hf` and trained on the same random batches with the same
recipe (AdamW, weight decay 0.01 on all but biases and LayerNorms, linear
schedule, clipping at 1.0):

- transformers: the model's forward with labels, backward,
  clip_grad_norm_, AdamW step, scheduler step; SDPA attention (transformers'
  default) or eager with --attn eager.
- nncc: `nncc train --max-steps K` for two K; the difference of the wall
  times over the difference of the steps is the time of a step alone
  (compiling, loading and data reading cancel out).

Rounds alternate the two so that drift on a shared machine hits both;
medians are reported with the ratio transformers / nncc.

usage: bench/hf_finetune.py [--nncc build/bin/nncc] [--batch 32] [--len 128]
         [--layers 12] [--rounds 3] [--steps 4] [--threads 2] [--attn sdpa|eager]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import transformers
from safetensors.numpy import save_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nncc", default=os.path.join(ROOT, "build", "bin", "nncc"))
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--len", type=int, default=128)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=4, help="steps timed per round and side")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--attn", choices=["sdpa", "eager"], default="sdpa")
    args = ap.parse_args()
    if not os.access(args.nncc, os.X_OK):
        sys.exit("hf_finetune.py: error: no nncc at %s (build it, or pass --nncc)" % args.nncc)
    torch.set_num_threads(args.threads)
    B, T, C = args.batch, args.len, 3
    work = tempfile.mkdtemp(prefix="nncc-hf-finetune-")

    config = transformers.BertConfig(
        vocab_size=30522, hidden_size=256, num_hidden_layers=args.layers, num_attention_heads=4,
        intermediate_size=1024, max_position_embeddings=512, num_labels=C,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(config)
    src = os.path.join(work, "hf")
    model.save_pretrained(src, safe_serialization=True)
    subprocess.run([args.nncc, "import-hf", src, "-o", os.path.join(work, "nncc")], check=True,
                   stdout=subprocess.DEVNULL)

    steps_long = 1 + 2 * args.steps  # enough batches for the longer nncc run
    n = B * steps_long
    g = torch.Generator().manual_seed(1)
    data = dict(input_ids=torch.randint(0, 30522, (n, T), generator=g),
                token_type_ids=torch.zeros(n, T, dtype=torch.long),
                attention_mask=torch.ones(n, T, dtype=torch.long),
                labels=torch.randint(0, C, (n,), generator=g))
    save_file({k: v.numpy().astype(np.int32) for k, v in data.items()},
              os.path.join(work, "train.safetensors"))
    path = os.path.join(work, "nncc", "model.nn")
    clause = ("  train {\n    optimizer adamw(lr: 5e-5, betas: [0.9, 0.999], eps: 1e-8, "
              "weight_decay: 0.01)\n    schedule linear(warmup: 0)\n    clip 1.0\n"
              "    epochs 1\n    batch %d\n  }\n" % B)
    source, count = re.subn(r"  train \{.*?\n  \}\n", clause, open(path).read(), flags=re.S)
    assert count == 1, "no train clause in the imported model"
    with open(path, "w") as f:
        f.write(source)

    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))

    def nncc_run(k):
        t0 = time.perf_counter()
        subprocess.run([args.nncc, "train", path, "--weights", os.path.join(work, "nncc", "model.safetensors"),
                        "--data", os.path.join(work, "train.safetensors"), "--no-shuffle",
                        "--max-steps", str(k), "--quiet",
                        "-o", os.path.join(work, "tuned.safetensors")], check=True, env=env)
        return time.perf_counter() - t0

    nncc_run(1)  # compiles into the cache

    ref = transformers.BertForSequenceClassification.from_pretrained(
        src, attn_implementation=args.attn)
    ref.train()
    decay = [p for name, p in ref.named_parameters() if not (name.endswith("bias") or "LayerNorm" in name)]
    rest = [p for name, p in ref.named_parameters() if name.endswith("bias") or "LayerNorm" in name]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": rest, "weight_decay": 0.0}], lr=5e-5, eps=1e-8)
    sched = transformers.get_linear_schedule_with_warmup(opt, 0, 10 ** 6)

    def torch_step(i):
        batch = {k: v[i * B:(i + 1) * B] for k, v in data.items()}
        t0 = time.perf_counter()
        loss = ref(**batch).loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(ref.parameters(), 1.0)
        opt.step()
        sched.step()
        return time.perf_counter() - t0

    torch_step(0)  # warm-up
    ours, theirs = [], []
    for r in range(args.rounds):
        theirs += [torch_step(1 + i) for i in range(args.steps)]
        short, long_ = nncc_run(1), nncc_run(1 + args.steps)
        ours.append((long_ - short) / args.steps)
        print("round %d: transformers %.0f ms/step, nncc %.0f ms/step" % (
            r + 1, 1e3 * statistics.median(theirs[-args.steps:]), 1e3 * ours[-1]), flush=True)
    t, o = statistics.median(theirs), statistics.median(ours)
    print("fine-tuning step, BertForSequenceClassification %d layers d256, B %d T %d, %d threads: "
          "transformers %s (torch %s, %s) %.0f ms, nncc %.0f ms: nncc %.2fx" % (
              args.layers, B, T, args.threads, transformers.__version__, torch.__version__,
              args.attn, 1e3 * t, 1e3 * o, t / o))


if __name__ == "__main__":
    main()
