#!/usr/bin/env python3
"""Writes the seed corpus of the safetensors fuzzer (test/Fuzz/SafetensorsFuzzer.cpp)
into DIR: small valid files covering every dtype, rank 0 and empty tensors,
metadata, unpadded headers and a state_dict-like file, plus a few broken ones
(overlapping ranges, truncation, a bad length field). Plain struct + json;
deterministic. Usage: safetensors_seeds.py DIR"""
import json
import os
import struct
import sys

SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2,
         "I8": 1, "U8": 1, "BOOL": 1}


def image(tensors, metadata=None, pad=True, order=None):
    """tensors: [(name, dtype, shape)]; data bytes are a counting pattern."""
    header, blobs, off = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape in tensors:
        n = SIZES[dtype]
        for d in shape:
            n *= d
        blob = bytes((off + i) * 7 & 0xff for i in range(n))
        if dtype == "BOOL":
            blob = bytes(b & 1 for b in blob)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + n]}
        blobs.append(blob)
        off += n
    if order:
        header = {k: header[k] for k in order(list(header))}
    h = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def seeds():
    yield "empty", image([])
    yield "every-dtype", image([(d.lower(), d, (2, 3)) for d in SIZES])
    yield "rank0-and-empty", image([("scalar", "F32", ()), ("none", "I8", (0,)),
                                    ("zero", "F64", (3, 0, 2))])
    yield "metadata", image([("w", "F32", (4,))], metadata={"format": "pt", "step": "12",
                                                            "note": "caf\u00e9 \u2603"})
    yield "metadata-only", image([], metadata={"format": "pt"})
    yield "unpadded", image([("a", "F16", (3,)), ("b", "U8", (5,))], pad=False)
    yield "reversed-order", image([("a", "F32", (2,)), ("b", "F32", (2,)), ("c", "I64", (1,))],
                                  order=lambda ks: ks[::-1])
    yield "state-dict", image([
        ("embed.weight", "F32", (16, 8)),
        ("recurrent.weight_ih_l0", "F32", (32, 8)),
        ("recurrent.weight_hh_l0", "F32", (32, 8)),
        ("recurrent.bias_ih_l0", "F32", (32,)),
        ("recurrent.bias_hh_l0", "F32", (32,)),
        ("head.weight", "BF16", (16, 8)),
        ("head.bias", "BF16", (16,)),
        ("step", "I64", ()),
    ], metadata={"nncc.model": "lstm_lm"})
    yield "unicode-names", image([("\u00e9t\u00e9", "I32", (2,)), ("\u2603", "BOOL", (3,))])
    good = image([("x", "F32", (2, 2)), ("y", "I16", (3,))])
    yield "truncated", good[:-3]
    yield "length-too-big", struct.pack("<Q", len(good)) + good[8:]
    overlap = json.dumps({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                          "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}).encode()
    yield "overlap", struct.pack("<Q", len(overlap)) + overlap + bytes(12)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, data in seeds():
        with open(os.path.join(out, name + ".safetensors"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
