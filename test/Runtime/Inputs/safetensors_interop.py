#!/usr/bin/env python3
"""PyTorch <-> libnncc_runtime safetensors interop, without the `safetensors`
package: the format is written and read here by hand (struct + json).

  write OUT REF            state_dict-like tensors of every dtype -> OUT (by hand),
                           the same tensors -> REF (torch.save)
  check-dump DUMP REF      compare `nncc-runtime-st-tool dump` output with REF
  read IN REF              parse IN (written by nncc) by hand, check the layout
                           rules HF's reader enforces, compare with REF bit for bit
  corrupt OUT KIND         write a broken file (for negative tests)
  rng TOOL                 independent Philox-4x32-10 vs `nncc-runtime-st-tool rng`
"""
import json
import math
import struct
import subprocess
import sys

import torch

DTYPES = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16",
    torch.bfloat16: "BF16", torch.int64: "I64", torch.int32: "I32",
    torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL",
}
FROM_NAME = {v: k for k, v in DTYPES.items()}


def reference_tensors():
    torch.manual_seed(1234)
    # A real state_dict: PyTorch names, shapes and default initialisation.
    model = torch.nn.ModuleDict({
        "rnn": torch.nn.LSTM(4, 3, batch_first=True),
        "proj": torch.nn.Linear(3, 2),
        "norm": torch.nn.LayerNorm(2),
        "emb": torch.nn.Embedding(5, 4),
    })
    tensors = {k: v.detach().clone() for k, v in model.state_dict().items()}
    tensors["extra.f64"] = torch.randn(2, 3, dtype=torch.float64)
    tensors["extra.f16"] = torch.randn(3, 2).to(torch.float16)
    tensors["extra.bf16"] = torch.randn(5).to(torch.bfloat16)
    tensors["extra.f32_special"] = torch.tensor(
        [0.0, -0.0, 1e-45, 3.4028235e38, -1.0 / 3.0, float("inf"), float("-inf")])
    tensors["extra.i64"] = torch.tensor([-(2**63), 2**63 - 1, 0, -5])
    tensors["extra.i32"] = torch.arange(-3, 3, dtype=torch.int32).reshape(2, 3)
    tensors["extra.i16"] = torch.tensor([-32768, 32767], dtype=torch.int16)
    tensors["extra.i8"] = torch.tensor([-128, 127, 0], dtype=torch.int8)
    tensors["extra.u8"] = torch.tensor([0, 255, 17], dtype=torch.uint8)
    tensors["extra.mask"] = torch.tensor([[True, False], [False, True]])
    tensors["extra.scalar"] = torch.tensor(2.5)
    tensors["extra.empty"] = torch.zeros(0, 3)
    return tensors


def raw_bytes(t):
    t = t.contiguous()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def from_bytes(raw, dtype_name, shape):
    dtype = FROM_NAME[dtype_name]
    if len(raw) == 0:
        return torch.zeros(shape, dtype=dtype)
    if dtype == torch.bfloat16:
        return torch.frombuffer(bytearray(raw), dtype=torch.int16).view(torch.bfloat16).reshape(shape)
    return torch.frombuffer(bytearray(raw), dtype=dtype).reshape(shape).clone()


def write_safetensors(path, tensors, metadata=None, pad=True):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        raw = raw_bytes(tensors[name])
        header[name] = {"dtype": DTYPES[tensors[name].dtype],
                        "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    text = data[8:8 + n]
    header = json.loads(text)
    buf = data[8 + n:]
    return n, text, header, buf


def same(a, b):
    """Bitwise equality (NaN-safe, -0.0 != 0.0)."""
    if a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape):
        return False
    return raw_bytes(a) == raw_bytes(b)


def cmd_write(out, ref):
    tensors = reference_tensors()
    write_safetensors(out, tensors, {"format": "pt", "source": "torch " + torch.__version__})
    torch.save(tensors, ref)
    print("wrote", len(tensors), "tensors")


def cmd_check_dump(dump, ref):
    tensors = torch.load(ref)
    seen, meta = set(), {}
    for line in open(dump):
        parts = line.rstrip("\n").split(" ")
        if parts[0] == "meta":
            key, _, value = " ".join(parts[1:]).partition("=")
            meta[key] = value
            continue
        assert parts[0] == "tensor", line
        name, dtype_name, shape = parts[1], parts[2], parts[3]
        values = parts[4].split(",") if len(parts) > 4 else []
        t = tensors[name]
        seen.add(name)
        assert DTYPES[t.dtype] == dtype_name, (name, dtype_name)
        assert shape == "[" + ",".join(str(d) for d in t.shape) + "]", (name, shape)
        flat = t.reshape(-1)
        assert len(values) == flat.numel(), (name, len(values))
        if t.is_floating_point():
            want = flat.to(torch.float64)
            got = torch.tensor([float(v) for v in values], dtype=torch.float64)
            if t.dtype != torch.float64:  # %.9g round-trips every float32
                got = got.to(torch.float32).to(torch.float64)
            ok = all((g == w) or (math.isnan(g) and math.isnan(w)) for g, w in zip(got.tolist(), want.tolist()))
            # signs of zeros too
            ok = ok and all(math.copysign(1, g) == math.copysign(1, w) for g, w in zip(got.tolist(), want.tolist()))
            assert ok, (name, values[:4], want[:4].tolist())
        else:
            assert [int(v) for v in values] == [int(x) for x in flat.tolist()], name
    assert seen == set(tensors), set(tensors) ^ seen
    assert meta.get("format") == "pt", meta
    print("dump matches", len(seen), "tensors")


def cmd_read(path, ref):
    tensors = torch.load(ref)
    n, text, header, buf = read_safetensors(path)
    # Layout rules of HF's safetensors reader.
    assert n % 8 == 0, n
    assert text[:1] == b"{", text[:10]
    assert text.rstrip(b" ").endswith(b"}"), text[-10:]
    meta = header.pop("__metadata__", {})
    assert all(isinstance(v, str) for v in meta.values()), meta
    assert meta.get("written_by") == "nncc" and meta.get("format") == "pt", meta
    spans = sorted(tuple(v["data_offsets"]) for v in header.values())
    cursor = 0
    for b, e in spans:
        assert b == cursor, ("gap or overlap at", b, cursor)
        cursor = e
    assert cursor == len(buf), (cursor, len(buf))
    assert set(header) == set(tensors), set(header) ^ set(tensors)
    for name, info in header.items():
        b, e = info["data_offsets"]
        got = from_bytes(buf[b:e], info["dtype"], info["shape"])
        assert same(got, tensors[name]), name
    print("read back", len(header), "tensors bit-exact")


def cmd_corrupt(out, kind):
    t = {"w": torch.arange(4, dtype=torch.float32)}
    if kind == "truncated":
        write_safetensors(out, t)
        data = open(out, "rb").read()
        open(out, "wb").write(data[:-3])
    elif kind == "overlap":
        text = json.dumps({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                           "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}).encode()
        open(out, "wb").write(struct.pack("<Q", len(text)) + text + bytes(16))
    elif kind == "dtype":
        text = json.dumps({"w": {"dtype": "F99", "shape": [1], "data_offsets": [0, 4]}}).encode()
        open(out, "wb").write(struct.pack("<Q", len(text)) + text + bytes(4))
    else:
        raise SystemExit("unknown kind " + kind)


# --- an independent Philox-4x32-10 -----------------------------------------

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
MASK = 0xFFFFFFFF


def philox(ctr, k0, k1):
    c = list(ctr)
    for r in range(10):
        if r:
            k0, k1 = (k0 + W0) & MASK, (k1 + W1) & MASK
        p0, p1 = M0 * c[0], M1 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k0) & MASK, p1 & MASK, ((p0 >> 32) ^ c[3] ^ k1) & MASK, p0 & MASK]
    return c


def block(seed, stream, b):
    return philox([b & MASK, b >> 32, stream & MASK, stream >> 32], seed & MASK, seed >> 32)


def cmd_rng(tool):
    # offset: the block counter crosses 2^32 in the middle (index 2^34 - 32 + i)
    seed, stream, offset, n = 0x1234567890ABCDEF, 2**40 + 77, 2**34 - 32, 64
    def run(kind):
        out = subprocess.run([tool, "rng", kind, str(seed), str(stream), str(offset), str(n)],
                             check=True, capture_output=True, text=True).stdout.split()
        return out
    u32 = [int(x) for x in run("u32")]
    want = [block(seed, stream, (offset + i) >> 2)[(offset + i) & 3] for i in range(n)]
    assert u32 == want, "u32 stream differs from the reference Philox"
    # %.9g round-trips float32: round the parsed double back to float32.
    uni = [struct.unpack("<f", struct.pack("<f", float(x)))[0] for x in run("uniform")]
    assert uni == [(w >> 8) * 2.0**-24 for w in want], "uniform floats differ"
    normal = [float(x) for x in run("normal")]
    for i, z in enumerate(normal):
        idx = offset + i
        w = block(seed, stream, idx >> 2)
        p = (idx >> 1) & 1
        u1 = ((w[2 * p] >> 8) + 1) * 2.0**-24
        theta = 2 * math.pi * ((w[2 * p + 1] >> 8) * 2.0**-24)
        r = math.sqrt(-2 * math.log(u1))
        ref = r * (math.sin(theta) if idx & 1 else math.cos(theta))
        assert abs(z - ref) <= 2e-6 * max(1.0, abs(ref)), (i, z, ref)
    print("philox streams match:", n, "values each")


def main(argv):
    cmd = argv[1]
    if cmd == "write":
        cmd_write(argv[2], argv[3])
    elif cmd == "check-dump":
        cmd_check_dump(argv[2], argv[3])
    elif cmd == "read":
        cmd_read(argv[2], argv[3])
    elif cmd == "corrupt":
        cmd_corrupt(argv[2], argv[3])
    elif cmd == "rng":
        cmd_rng(argv[2])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
