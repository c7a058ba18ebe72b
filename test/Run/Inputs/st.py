"""Safetensors by hand (struct + json; no `safetensors` package) for test/Run.

  st.py finite OUT.safetensors NAME...   every named tensor present, all finite
  st.py weights SIG.json OUT [--missing NAME]   random weights for a signature
  st.py inputs OUT NAME:DTYPE:d0,d1,...[=v0,v1,...] ...   random (or given) inputs
  st.py corrupt IN OUT (truncate|offsets|header)
  st.py same A B                                 two files hold equal tensors
"""
import json
import math
import random
import struct
import sys

FMT = {"F32": ("f", 4), "F64": ("d", 8), "I32": ("i", 4), "I64": ("q", 8),
       "BOOL": ("B", 1), "U8": ("B", 1), "F16": ("e", 2)}


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        code, size = FMT[e["dtype"]]
        b, end = e["data_offsets"]
        count = (end - b) // size
        out[name] = (e["dtype"], e["shape"], list(struct.unpack("<%d%s" % (count, code), body[b:end])))
    return out


def write(path, tensors):
    """tensors: name -> (dtype, shape, flat values)."""
    header, blobs, off = {}, [], 0
    for name, (dtype, shape, vals) in tensors.items():
        code, size = FMT[dtype]
        blob = struct.pack("<%d%s" % (len(vals), code), *vals)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + len(blob)]}
        blobs.append(blob)
        off += len(blob)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def main():
    cmd = sys.argv[1]
    if cmd == "finite":
        t = read(sys.argv[2])
        for name in sys.argv[3:]:
            assert name in t, "missing output %s (have %s)" % (name, sorted(t))
            dtype, shape, vals = t[name]
            bad = [v for v in vals if isinstance(v, float) and not math.isfinite(v)]
            assert not bad, "%s has %d non-finite values" % (name, len(bad))
            assert len(vals) == numel(shape)
            print("%s %s %s finite" % (name, dtype, shape))
    elif cmd == "weights":
        sig = json.load(open(sys.argv[2]))
        missing = sys.argv[5] if len(sys.argv) > 5 and sys.argv[4] == "--missing" else None
        rng = random.Random(0)
        t = {}
        for p in sig["parameters"]:
            if p["name"] == missing:
                continue
            t[p["name"]] = (p["dtype"], p["shape"], [rng.uniform(-0.5, 0.5) for _ in range(numel(p["shape"]))])
        write(sys.argv[3], t)
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
            t[name] = (dtype, shape, vals)
        write(sys.argv[2], t)
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
        a, b = read(sys.argv[2]), read(sys.argv[3])
        assert a == b, "files differ"
        print("same")
    else:
        raise SystemExit("unknown command " + cmd)


if __name__ == "__main__":
    main()
