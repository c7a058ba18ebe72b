"""Rewrites one element of a safetensors file: flip_element.py IN OUT NAME INDEX VALUE
(the element's bytes set to VALUE as an integer of the tensor's element size)."""
import json
import struct
import sys

src, dst, name, index, value = sys.argv[1:]
data = bytearray(open(src, "rb").read())
(n,) = struct.unpack("<Q", data[:8])
entry = json.loads(data[8:8 + n])[name]
size = {"BOOL": 1, "U8": 1, "I32": 4, "I64": 8, "F32": 4}[entry["dtype"]]
at = 8 + n + entry["data_offsets"][0] + int(index) * size
data[at:at + size] = int(value).to_bytes(size, "little", signed=True)
open(dst, "wb").write(bytes(data))
