"""BERT embeddings and positions, embedding + cross-entropy, BCE-with-logits
(multi-label, pos_weight), slicing / concat / split / transpose / reductions."""
import math

import torch
import torch.nn.functional as F
from common import model, nt, rand, sd

B, T = 3, 9


def bert_emb():
    V, D, S = 50, 12, 16
    word = torch.nn.Embedding(V, D)
    pos = torch.nn.Embedding(S, D)
    typ = torch.nn.Embedding(2, D)
    ln = nt.randomize_(torch.nn.LayerNorm(D, eps=1e-12))
    lp = torch.nn.Embedding(S, D)
    w = dict(sd(word, "e.word_embeddings"), **sd(pos, "e.position_embeddings"),
             **sd(typ, "e.token_type_embeddings"), **sd(ln, "e.LayerNorm"), **sd(lp, "p"))
    tokens = torch.randint(0, V, (B, T), dtype=torch.int32)
    segments = torch.randint(0, 2, (B, T), dtype=torch.int32)
    out = model("bert_emb").run(w, {"tokens": tokens, "segments": segments})
    with torch.no_grad():
        h = ln(word(tokens.long()) + pos(torch.arange(T))[None] + typ(segments.long()))
        t = torch.arange(T, dtype=torch.float64)[:, None]
        i = torch.arange(0, D, 2, dtype=torch.float64)[None, :]
        pe = torch.zeros(T, D, dtype=torch.float64)
        pe[:, 0::2] = torch.sin(t / 10000 ** (i / D))
        pe[:, 1::2] = torch.cos(t / 10000 ** (i / D))
    nt.check("bert_embeddings (word + position + type, LayerNorm 1e-12)", out["h"], h)
    nt.check("sinusoidal_position (Vaswani)", out["s"], h + pe.float())
    nt.check("learned_position", out["q"], h + lp.weight[:T].detach())


def ce_loss():
    V, E = 20, 8
    emb = torch.nn.Embedding(V, E)
    head = nt.randomize_(torch.nn.Linear(E, V), scale=1.0)
    tokens = torch.randint(0, V, (B, T), dtype=torch.int32)
    target = torch.randint(0, V, (B, T), dtype=torch.int32)
    target[0, 2:5] = -100
    target[2, -1] = -100
    out = model("ce_loss").run(dict(sd(emb, "embed"), **sd(head, "head")),
                               {"tokens": tokens, "target": target})
    with torch.no_grad():
        logits = head(torch.tanh(emb(tokens.long())))
        loss = F.cross_entropy(logits.reshape(-1, V), target.reshape(-1).long(), ignore_index=-100)
    nt.check("embedding + linear logits", out["logits"], logits)
    nt.check("cross_entropy ignore_index -100 vs F.cross_entropy", out["loss"], loss)


def bce():
    D, C = 6, 5
    head = nt.randomize_(torch.nn.Linear(D, C), scale=1.5)
    x = rand(B + 4, D, scale=2.0)
    labels = (torch.rand(B + 4, C) < 0.4).float()  # multi-label targets
    labels[0, 0] = 0.3                             # and a soft one
    out = model("bce_loss").run(sd(head, "head"), {"x": x, "labels": labels})
    with torch.no_grad():
        logits = head(x)
    nt.check("bce_with_logits logits", out["logits"], logits)
    nt.check("bce_with_logits multi-label vs F.binary_cross_entropy_with_logits", out["loss"],
             F.binary_cross_entropy_with_logits(logits, labels))
    pw = torch.rand(C) * 3 + 0.2
    out = model("bce_posw").run(sd(head, "head"), {"x": x, "labels": labels, "pw": pw})
    nt.check("bce_with_logits pos_weight vs F.binary_cross_entropy_with_logits", out["loss"],
             F.binary_cross_entropy_with_logits(logits, labels, pos_weight=pw))


def shape_ops():
    Tn, D = 6, 8
    lin = nt.randomize_(torch.nn.Linear(D, D))
    x, wm = rand(B, Tn, D), rand(D, 4)
    out = model("shape_ops").run(sd(lin, "lin"), {"x": x, "w": wm})
    with torch.no_grad():
        h = lin(x)
        a, b = h.split(D // 2, -1)
        p, q, r = h.split([2, 3, 3], -1)
        ref = {
            "c": torch.cat([b, a], -1), "s1": h[:, 1:5:2], "s2": h[:, -1], "s3": h[0],
            "s4": h[:, :, ::3], "t": h.transpose(-1, -2), "t2": h.permute(1, 0, 2),
            "m1": h.mean(1), "m2": h.sum((0, 2), keepdim=True), "m3": h.sum(),
            "mm": h @ wm, "bm": h @ h.transpose(-1, -2), "sm": torch.softmax(h, 1),
            "ew": torch.exp(a) / (1.0 + torch.sigmoid(b)) - torch.log(1.0 + a * a) - q[:, :, 0:1],
            "r": r, "p": p}
    for k, v in ref.items():
        nt.check("shape_ops %s" % k, out[k], v)


def embedding_padding():
    """padding_idx: the row's gradient is zero (nn.Embedding(padding_idx=)),
    its lookup is any row's."""
    V, E, S = 20, 8, 16
    emb = torch.nn.Embedding(V, E, padding_idx=3)
    torch.nn.init.normal_(emb.weight)  # a non-zero padding row, as HF's checkpoints may hold
    word = torch.nn.Embedding(V, E, padding_idx=0)
    torch.nn.init.normal_(word.weight)
    pos, typ = torch.nn.Embedding(S, E), torch.nn.Embedding(2, E)
    ln = nt.randomize_(torch.nn.LayerNorm(E, eps=1e-12))
    head = nt.randomize_(torch.nn.Linear(E, V), scale=1.0)
    tokens = torch.randint(0, V, (B, T), dtype=torch.int32)
    tokens[:, -3:] = 0
    tokens[0, :2] = 3
    segments = torch.randint(0, 2, (B, T), dtype=torch.int32)
    target = torch.randint(0, V, (B, T), dtype=torch.int32)
    w = dict(sd(emb, "embed"), **sd(word, "bert.word_embeddings"), **sd(pos, "bert.position_embeddings"),
             **sd(typ, "bert.token_type_embeddings"), **sd(ln, "bert.LayerNorm"), **sd(head, "head"))
    h = ln(word(tokens.long()) + pos(torch.arange(T))[None] + typ(segments.long()))
    logits = head(torch.tanh(emb(tokens.long())) + h)
    loss = F.cross_entropy(logits.reshape(-1, V), target.reshape(-1).long())
    params = {"embed.weight": emb.weight, "bert.word_embeddings.weight": word.weight,
              "bert.position_embeddings.weight": pos.weight, "head.weight": head.weight}
    nt.check_grads("embedding padding_idx", model("embedding_padding").nn, w,
                   {"tokens": tokens, "segments": segments, "target": target}, loss, params)
    # torch's own rule, which the checks above compared against
    assert emb.weight.grad[3].abs().max() == 0 and word.weight.grad[0].abs().max() == 0


if __name__ == "__main__":
    nt.run_cases({"bert_emb": bert_emb, "ce_loss": ce_loss, "bce": bce, "shape_ops": shape_ops,
                  "embedding_padding": embedding_padding})
