"""nncc from Python: compile a .nn model (`nncc.compile`), run its library
(`nncc.Library`, `nncc.Context`), or use it as a PyTorch module
(`nncc.torch.Module`, imported on demand so that torch stays optional)."""
from .errors import Error
from .library import Context, Library, TensorSpec, compile

__all__ = ["Error", "Library", "Context", "TensorSpec", "compile"]
__version__ = "0.1.0"
