"""Data files for safe-io.test in DIR: huge.safetensors claims 2^62 token
rows of length 0 for tiny_lstm_lm (a 200-byte file), good.safetensors is
tiny_mlp's data, oov.safetensors has a token id past tiny_lstm_lm's vocabulary."""
import json
import os
import struct
import sys

import numpy as np

import nncc_testing as T

d = sys.argv[1]
header = json.dumps({"tokens": {"dtype": "I32", "shape": [2**62, 0], "data_offsets": [0, 0]},
                     "next_tokens": {"dtype": "I32", "shape": [2**62, 0],
                                     "data_offsets": [0, 0]}}).encode()
open(os.path.join(d, "huge.safetensors"), "wb").write(struct.pack("<Q", len(header)) + header)
r = np.random.default_rng(0)
T.save_safetensors(os.path.join(d, "good.safetensors"), {"x": r.random((8, 6), np.float32),
                                                         "y": r.random((8, 3), np.float32)})
tokens = r.integers(0, 20, (6, 5)).astype(np.int32)
tokens[4, 2] = 20
T.save_safetensors(os.path.join(d, "oov.safetensors"), {"tokens": tokens, "next_tokens": tokens})
