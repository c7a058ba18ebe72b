"""Safetensors files for test/Run (nncc_testing.safetensors; no `safetensors`
package).

  st.py finite OUT.safetensors NAME...   every named tensor present, all finite
  st.py weights SIG.json OUT [--missing NAME]   random weights for a signature
  st.py inputs OUT NAME:DTYPE:d0,d1,...[=v0,v1,...] ...   random (or given) inputs
  st.py corrupt IN OUT (truncate|offsets|header)
  st.py same A B [--except NAME...]              two files hold equal tensors (B
                                                 without the NAMEs A has)
  st.py drop IN OUT NAME...                      IN without the named tensors
"""
import json
import random
import struct
import sys

import numpy as np

from nncc_testing.safetensors import NP_TO_ST, ST_DTYPES, load_safetensors, save_safetensors


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def tensor(dtype, shape, vals):
    return np.array(vals, dtype=ST_DTYPES[dtype]).reshape(shape)


def main():
    cmd = sys.argv[1]
    if cmd == "finite":
        t = load_safetensors(sys.argv[2])
        for name in sys.argv[3:]:
            assert name in t, "missing output %s (have %s)" % (name, sorted(t))
            a = t[name]
            bad = int(np.sum(~np.isfinite(a))) if a.dtype.kind == "f" else 0
            assert not bad, "%s has %d non-finite values" % (name, bad)
            print("%s %s %s finite" % (name, NP_TO_ST[a.dtype], list(a.shape)))
    elif cmd == "weights":
        sig = json.load(open(sys.argv[2]))
        missing = sys.argv[5] if len(sys.argv) > 5 and sys.argv[4] == "--missing" else None
        rng = random.Random(0)
        t = {}
        for p in sig["parameters"]:
            if p["name"] == missing:
                continue
            t[p["name"]] = tensor(p["dtype"], p["shape"],
                                  [rng.uniform(-0.5, 0.5) for _ in range(numel(p["shape"]))])
        save_safetensors(sys.argv[3], t)
    elif cmd == "inputs":
        rng = random.Random(1)
        t = {}
        for spec in sys.argv[3:]:
            name, dtype, dims = spec.split(":")
            dims, _, given = dims.partition("=")
            shape = [int(d) for d in dims.split(",")] if dims else []
            if given:
                vals = [float(v) if dtype.startswith("F") else int(v) for v in given.split(",")]
            elif dtype in ("F32", "F64", "F16"):
                vals = [rng.gauss(0, 1) for _ in range(numel(shape))]
            else:
                vals = [rng.randrange(0, 2) for _ in range(numel(shape))]
            t[name] = tensor(dtype, shape, vals)
        save_safetensors(sys.argv[2], t)
    elif cmd == "corrupt":
        data = open(sys.argv[2], "rb").read()
        mode = sys.argv[4]
        if mode == "truncate":
            data = data[:len(data) - 5]
        elif mode == "offsets":
            (n,) = struct.unpack("<Q", data[:8])
            header = json.loads(data[8:8 + n])
            name = sorted(k for k in header if k != "__metadata__")[0]
            b, e = header[name]["data_offsets"]
            header[name]["data_offsets"] = [b + 1000000, e + 1000000]
            h = json.dumps(header).encode()
            h += b" " * ((8 - len(h) % 8) % 8)
            data = struct.pack("<Q", len(h)) + h + data[8 + n:]
        elif mode == "header":
            data = data[:8] + b"{not json" + data[17:]
        open(sys.argv[3], "wb").write(data)
    elif cmd == "same":
        a, b = load_safetensors(sys.argv[2]), load_safetensors(sys.argv[3])
        left_out = sys.argv[5:] if sys.argv[4:5] == ["--except"] else []
        for name in left_out:
            assert name in a and name not in b, "%s: in %s, %s" % (name, list(a), list(b))
            del a[name]
        assert list(a) == list(b), "files hold %s and %s" % (list(a), list(b))
        for name in a:
            assert a[name].dtype == b[name].dtype and a[name].shape == b[name].shape and \
                np.array_equal(a[name], b[name]), "%s differs" % name
        print("same")
    elif cmd == "drop":
        t = load_safetensors(sys.argv[2])
        for name in sys.argv[4:]:
            assert name in t, "no tensor %s in %s" % (name, sys.argv[2])
            del t[name]
        save_safetensors(sys.argv[3], t)
    else:
        raise SystemExit("unknown command " + cmd)


if __name__ == "__main__":
    main()
