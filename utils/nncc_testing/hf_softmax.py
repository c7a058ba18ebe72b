"""transformers' softmax kept in float64, for references that compare nncc's
float64 results with a Hugging Face module that calls softmax in float32
(LongformerSelfAttention): patch it in with `torch.nn.functional.softmax =
softmax_f64`, put `torch_softmax` back after."""
import torch

torch_softmax = torch.nn.functional.softmax


def softmax_f64(x, dim=None, dtype=None, **kwargs):
    """HF's softmax in float64 (the dtype argument dropped for float64
    inputs); a row of -inf scores gives zeros, not NaN (what HF's forward
    makes of it)."""
    if x.dtype != torch.float64:
        return torch_softmax(x, dim=dim, dtype=dtype, **kwargs)
    m = x.amax(dim=dim, keepdim=True)
    e = torch.exp(x - torch.where(torch.isfinite(m), m, torch.zeros_like(m)))
    s = e.sum(dim=dim, keepdim=True)
    return e / torch.where(s > 0, s, torch.ones_like(s))
