"""nncc's Python test helpers, one package (test/lit.cfg.py puts utils/ on
PYTHONPATH):

  nncc_testing.safetensors  safetensors files by hand ({name: ndarray})
  nncc_testing.library      compiled models from Python: nncc run / the C ABI
                            of lib<model>.so, the parity metric and report
  nncc_testing.ckernels     ctypes bindings of libnncc_kernels (kernel tests)
  nncc_testing.refs         PyTorch references: attention kinds (masked dense,
                            dilated, Reformer LSH, dropout masks), Cho's GRU

`import nncc_testing as nt` gives what `library` and `safetensors` define
(nt.Model, nt.check, nt.load_safetensors, ...); `ckernels` and `refs` are
imported by name (they need ctypes libraries and torch).
"""
from .library import *  # noqa: F401,F403
from .safetensors import *  # noqa: F401,F403
