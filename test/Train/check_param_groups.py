"""The compiler's parameter groups (#nn.param_group, `nncc inspect`) against
the groups the runtime's name heuristics gave every seed model before
(Inputs/param_groups_before.txt): the weight-decay flag of every parameter
and its lr multiplier under the model's own train clause must be identical.
The exponent of layer_decay must also agree, except where the names had put
a parameter in the embedding group that is not an embedding table (the
LayerNorm of a bert_embeddings layer the user named `embed`): those are
listed and must be exactly the expected ones.

usage: check_param_groups.py NNCC MODELS_DIR GOLDEN
"""
import json
import os
import subprocess
import sys

nncc, models_dir, golden = sys.argv[1:4]
before, order = {}, []
model = None
for line in open(golden):
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    parts = line.split()
    if parts[0] == "model":
        model = parts[1]
        order.append(model)
        before[model] = {"fd": float(parts[2]), "params": []}
    else:
        before[model]["params"].append((parts[0], int(parts[1]), float(parts[2]),
                                        int(parts[3])))

fails, depth_changes = [], []
for model in order:
    ref = before[model]
    sig = json.loads(subprocess.check_output(
        [nncc, "inspect", os.path.join(models_dir, model + ".nn")]))
    got = sig["parameters"]
    if [p["name"] for p in got] != [p[0] for p in ref["params"]]:
        fails.append("%s: parameter list differs" % model)
        continue
    for p, (name, decay, scale, depth) in zip(got, ref["params"]):
        fd = ref["fd"]
        got_scale = 1.0 if p["lr_depth"] == 0 else fd ** p["lr_depth"]
        if int(p["decay"]) != decay:
            fails.append("%s %s: decay %d, before %d" % (model, name, p["decay"], decay))
        if got_scale != scale:
            fails.append("%s %s: lr multiplier %.17g, before %.17g" % (model, name,
                                                                       got_scale, scale))
        if p["lr_depth"] != depth:
            depth_changes.append("%s %s %d->%d" % (model, name, depth, p["lr_depth"]))
    print("%s: %d parameters checked" % (model, len(got)))

expected_changes = ["%s embed.LayerNorm.%s 13->0" % (m, w)
                    for m in ("bert_small", "reformer_lsh", "reversible_dilated_bert")
                    for w in ("weight", "bias")]
if sorted(depth_changes) != sorted(expected_changes):
    fails.append("layer_decay exponents that differ from the names' groups: %s"
                 % depth_changes)
for f in fails:
    print("FAIL " + f)
print("FAILED" if fails else "ALL PASSED")
sys.exit(1 if fails else 0)
