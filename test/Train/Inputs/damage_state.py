#!/usr/bin/env python3
"""Damaged copies of a training state (nncc train --save-state) for
resume.test: OUT/no-moments.safetensors lacks one parameter's
optimizer.exp_avg_sq, OUT/bad-step.safetensors has nncc_step "-3",
OUT/far-step.safetensors has nncc_step 2^63 - 1 (past any run),
OUT/truncated.safetensors is cut short.

    damage_state.py STATE.safetensors OUT
"""
import json
import os
import struct
import sys

from nncc_testing.safetensors import load_safetensors, save_safetensors

state, out = sys.argv[1], sys.argv[2]
raw = open(state, "rb").read()
meta = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])["__metadata__"]
tensors = load_safetensors(state)
drop = sorted(k for k in tensors if k.startswith("optimizer.exp_avg_sq."))[0]
save_safetensors(os.path.join(out, "no-moments.safetensors"),
                 {k: v for k, v in tensors.items() if k != drop}, meta)
save_safetensors(os.path.join(out, "bad-step.safetensors"), tensors, dict(meta, nncc_step="-3"))
save_safetensors(os.path.join(out, "far-step.safetensors"), tensors,
                 dict(meta, nncc_step=str(2**63 - 1)))
open(os.path.join(out, "truncated.safetensors"), "wb").write(raw[:len(raw) // 2])
