"""Writes the weights of tiny_bert_config.json's BertModel (hidden 8) to
argv[1]: the safetensors layout written out directly, so that this needs no
package (the checkpoint for import-hf-errors.test)."""
import json
import struct
import sys

V, D, F, P, TV = 11, 8, 16, 6, 2
shapes = {"embeddings.word_embeddings.weight": [V, D],
          "embeddings.position_embeddings.weight": [P, D],
          "embeddings.token_type_embeddings.weight": [TV, D],
          "embeddings.LayerNorm.weight": [D], "embeddings.LayerNorm.bias": [D]}
layer = "encoder.layer.0."
for n in ("attention.self.query", "attention.self.key", "attention.self.value",
          "attention.output.dense"):
    shapes[layer + n + ".weight"], shapes[layer + n + ".bias"] = [D, D], [D]
shapes[layer + "intermediate.dense.weight"], shapes[layer + "intermediate.dense.bias"] = [F, D], [F]
shapes[layer + "output.dense.weight"], shapes[layer + "output.dense.bias"] = [D, F], [D]
for n in ("attention.output.LayerNorm", "output.LayerNorm"):
    shapes[layer + n + ".weight"], shapes[layer + n + ".bias"] = [D], [D]
shapes["pooler.dense.weight"], shapes["pooler.dense.bias"] = [D, D], [D]

header, data = {}, b""
for name, shape in shapes.items():
    n = 1
    for s in shape:
        n *= s
    header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + 4 * n]}
    data += struct.pack("<%df" % n, *[0.01 * (i % 7) for i in range(n)])
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + data)
