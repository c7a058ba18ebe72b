#!/usr/bin/env python3
"""A synthetic pretraining corpus with learnable structure, for ELECTRA.

    python3 utils/electra_corpus.py -o corpus.safetensors [--samples 2048]
        [--seq 128] [--vocab 30522] [--words 512] [--seed 0]

Writes `tokens` and `segments` (int32 [samples, seq]), the inputs of the
ELECTRA models (models/electra_*.nn), for `nncc train --data`.

Each sequence is two "sentences" of a first-order Markov chain: position 0
is [CLS] (id 101), the second sentence starts after a [SEP] (id 102) in the
middle and has segment id 1, the first segment id 0. The chain runs over
`--words` ids drawn once from [1000, vocab): every word has four successors,
taken with probabilities 0.55, 0.25, 0.15 and 0.05. So a masked token is
predictable from its left neighbour (the generator's loss can fall from
ln(vocab) towards the chain's conditional entropy, about 1.1 nats), and a
token the generator got wrong usually breaks the chain (the discriminator
can learn to spot it).
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from nncc_testing.safetensors import save_safetensors  # noqa: E402

CLS, SEP = 101, 102
SUCCESSOR_P = np.array([0.55, 0.25, 0.15, 0.05])


def make_corpus(samples, seq, vocab, words, seed):
    if seq < 4:
        raise ValueError("--seq must be at least 4 ([CLS], two words, [SEP])")
    if vocab < 1000 + words:
        raise ValueError("--vocab must be at least 1000 + --words (%d)" % (1000 + words))
    rng = np.random.default_rng(seed)
    ids = rng.choice(np.arange(1000, vocab), size=words, replace=False)
    successors = rng.integers(0, words, size=(words, len(SUCCESSOR_P)))
    tokens = np.empty((samples, seq), dtype=np.int32)
    segments = np.zeros((samples, seq), dtype=np.int32)
    half = seq // 2
    for n in range(samples):
        state = rng.integers(0, words)
        row = tokens[n]
        row[0] = CLS
        for t in range(1, seq):
            if t == half:
                row[t] = SEP
                state = rng.integers(0, words)  # the second sentence starts afresh
                continue
            row[t] = ids[state]
            state = successors[state, rng.choice(len(SUCCESSOR_P), p=SUCCESSOR_P)]
        segments[n, half + 1:] = 1
    return tokens, segments


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", required=True, help="output .safetensors")
    ap.add_argument("--samples", type=int, default=2048)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=30522)
    ap.add_argument("--words", type=int, default=512, help="distinct word ids in the chain")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.samples < 1 or a.words < 1:
        ap.error("--samples and --words must be positive")
    try:
        tokens, segments = make_corpus(a.samples, a.seq, a.vocab, a.words, a.seed)
    except ValueError as e:
        ap.error(str(e))
    save_safetensors(a.out, {"tokens": tokens, "segments": segments})
    print("wrote %s: tokens, segments int32 [%d, %d], %d words over vocab %d"
          % (a.out, a.samples, a.seq, a.words, a.vocab))


if __name__ == "__main__":
    main()
