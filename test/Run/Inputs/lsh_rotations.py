"""Writes lsh.nn's inputs with `rot` and `rot_nncc` = the Philox normals the
emitter draws when no rotations are given (seed 0, stream 0x15A, element i
row-major: [heads, dh, hashes, buckets / 2] under Hugging Face's convention,
[hashes, dh, buckets / 2] under nncc's), so that outputs `given` and `drawn`
(and `given_nncc`, `drawn_nncc`) must agree. Usage: LIBDIR IN OUT"""
import ctypes
import sys

import numpy as np

from nncc_testing.safetensors import load_safetensors, save_safetensors

lib = ctypes.CDLL(sys.argv[1] + "/libnncc_runtime.so")
lib.nncc_rng_fill_normal_f32.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64,
                                         ctypes.c_uint64, ctypes.c_uint64, ctypes.c_float,
                                         ctypes.c_float]


def normals(shape):
    n = int(np.prod(shape))
    buf = (ctypes.c_float * n)()
    lib.nncc_rng_fill_normal_f32(buf, n, 0, 0x15A, 0, 0.0, 1.0)
    return np.array(buf, dtype=np.float32).reshape(shape)


t = load_safetensors(sys.argv[2])
t["rot"] = normals((2, 4, 2, 2))
t["rot_nncc"] = normals((2, 4, 2))
save_safetensors(sys.argv[3], t)
