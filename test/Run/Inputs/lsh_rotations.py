"""Writes lsh.nn's inputs with `rot` = the Philox normals the emitter draws
when no rotations are given (seed 0, stream 0x15A, element i row-major), so
that outputs `given` and `drawn` must agree. Usage: LIBDIR IN OUT"""
import ctypes
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
import st  # noqa: E402

lib = ctypes.CDLL(sys.argv[1] + "/libnncc_runtime.so")
n = 2 * 4 * 2
buf = (ctypes.c_float * n)()
lib.nncc_rng_fill_normal_f32.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64,
                                         ctypes.c_uint64, ctypes.c_uint64, ctypes.c_float,
                                         ctypes.c_float]
lib.nncc_rng_fill_normal_f32(buf, n, 0, 0x15A, 0, 0.0, 1.0)
t = st.read(sys.argv[2])
t["rot"] = ("F32", [2, 4, 2], list(buf))
st.write(sys.argv[3], t)
