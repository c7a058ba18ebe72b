"""bench/gpu.py's helpers that need no GPU: the attention-core pair count
(against a brute-force count of the same mask), the datasheet peaks by
device name and the share-of-peak text; for every case, what --prepare
writes (its FLOP count) and, for those against a torch module, that the
module's state_dict under the case's prefix names exactly the nncc model's
parameters (nncc inspect), which is how the weights reach both sides.

    check_gpu_helpers.py BENCH_DIR NNCC"""
import json
import os
import subprocess
import sys

sys.path.insert(0, sys.argv[1])
import gpu  # noqa: E402


def brute_pairs(T, W, dil):
    half = (W // 2) * dil
    return sum(1 for i in range(T) for j in range(T)
               if (abs(i - j) <= half and (i - j) % dil == 0) or i == 0 or j == 0)


for T, W, dil in [(20, 4, 3), (64, 8, 2), (33, 64, 2), (50, 6, 1), (17, 2, 30)]:
    got, want = gpu.core_pairs(dict(T=T, W=W, DIL=dil)), brute_pairs(T, W, dil)
    assert got == want, (T, W, dil, got, want)
assert gpu.core_pairs(dict(T=37)) == 37 * 37
print("core pairs ok")

assert gpu.device_peak("NVIDIA H100 80GB HBM3", "float32") == 67.0
assert gpu.device_peak("NVIDIA H100 PCIe", "bfloat16") == 756.0
assert gpu.device_peak("NVIDIA H200", "bfloat16") == 989.4
assert gpu.device_peak("NVIDIA A100-SXM4-80GB", "float32") is None
row = dict(peak=67.0, nncc_peak_share=0.1234, torch_peak_share=0.5)
assert gpu.peak_shares(row) == "12.3% / 50.0% of 67", gpu.peak_shares(row)
assert gpu.peak_shares(dict(peak=None)) == "-"
print("peaks ok")

for name, (nn_file, kind, shape) in gpu.CASES.items():
    flops = gpu.case_flops(kind, shape)
    assert flops > 0, (name, flops)
    if kind in ("core", "bert_train"):
        continue
    src = os.path.join(gpu.HERE, "models", "lstm.nn" if nn_file == "lstm_h512.nn" else nn_file)
    params = json.loads(subprocess.run([sys.argv[2], "inspect", src], check=True,
                                       capture_output=True, text=True).stdout)["parameters"]
    m = gpu.torch_module(kind.replace("attn_masked", "attn_dense"), shape)
    prefix = gpu.PREFIX.get(kind.replace("_train", ""), "a.")
    want = sorted(p["name"] for p in params)
    got = sorted(prefix + k for k in m.state_dict())
    assert got == want, (name, got, want)
core = gpu.CASES["core_fa3_t4k"][2]
assert gpu.case_flops("core", core) == 4 * 4 * 32 * 64 * 4096 * 4096
assert gpu.case_flops("core", dict(core, BWD=1)) == 10 * 4 * 32 * 64 * 4096 * 4096
print("cases ok")
