"""Writes the data files of train-errors.test into DIR."""
import os
import sys

import numpy as np

import nncc_testing as T

d = sys.argv[1]
r = np.random.default_rng(0)
T.save_safetensors(os.path.join(d, "missing.safetensors"), {"x": r.random((8, 6), np.float32)})
T.save_safetensors(os.path.join(d, "count.safetensors"), {"x": r.random((8, 6), np.float32),
                                                          "y": r.random((7, 3), np.float32)})
T.save_safetensors(os.path.join(d, "shape.safetensors"), {"x": r.random((8, 5), np.float32),
                                                          "y": r.random((8, 3), np.float32)})
T.save_safetensors(os.path.join(d, "rank.safetensors"), {"x": r.random((8, 6, 1), np.float32),
                                                         "y": r.random((8, 3), np.float32)})
T.save_safetensors(os.path.join(d, "dtype.safetensors"), {"x": np.zeros((8, 6), np.int32),
                                                          "y": r.random((8, 3), np.float32)})
T.save_safetensors(os.path.join(d, "good.safetensors"), {"x": r.random((8, 6), np.float64),
                                                         "y": r.random((8, 3), np.float32)})
