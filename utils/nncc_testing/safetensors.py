"""Safetensors files by hand (struct + json; the `safetensors` package is
not needed): {name: ndarray} in, {name: ndarray} out."""
import json
import os
import struct

import numpy as np

ST_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16,
             "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8,
             "U8": np.uint8, "BOOL": np.bool_}
NP_TO_ST = {np.dtype(v): k for k, v in ST_DTYPES.items()}


def to_numpy(v):
    """numpy view of a numpy array, torch tensor, or number."""
    if hasattr(v, "detach"):  # torch.Tensor
        v = v.detach().cpu().contiguous().numpy()
    a = np.asarray(v)  # (np.ascontiguousarray would make a 0-d array 1-d)
    return a if a.flags["C_CONTIGUOUS"] else a.copy(order="C")


def save_safetensors(path, tensors, metadata=None):
    """Write {name: array} as a safetensors file (keys kept in order)."""
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, v in tensors.items():
        a = to_numpy(v)
        if a.dtype not in NP_TO_ST:
            raise TypeError("tensor %r: dtype %s has no safetensors code" % (name, a.dtype))
        b = a.tobytes()
        header[name] = {"dtype": NP_TO_ST[a.dtype], "shape": list(a.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def load_safetensors(path):
    """Read a safetensors file into {name: ndarray} (copies)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode())
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        lo, hi = e["data_offsets"]
        dt = np.dtype(ST_DTYPES[e["dtype"]])
        out[name] = np.frombuffer(data[base + lo:base + hi], dtype=dt).reshape(e["shape"]).copy()
    return out
