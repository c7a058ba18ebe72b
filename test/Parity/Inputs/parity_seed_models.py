"""Every seed model of models/ once, at full size, on tiny inputs, against a
PyTorch reference built from torch modules with the same state_dict names."""
import math

import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from common import nt, rand, sd, seed_model
from nncc_testing.refs import cho_gru, fixed

torch.manual_seed(1)


def lstm_lm():
    V, E, H, B, T = 10000, 128, 256, 2, 5
    embed, rnn, head = torch.nn.Embedding(V, E), torch.nn.LSTM(E, H, 2, batch_first=True), \
        nt.randomize_(torch.nn.Linear(H, V), scale=0.3)  # O(1) logits
    w = dict(sd(embed, "embed"), **sd(rnn, "recurrent"), **sd(head, "head"))
    tokens = torch.randint(0, V, (B, T), dtype=torch.int32)
    nxt = torch.randint(0, V, (B, T), dtype=torch.int32)
    out = seed_model("lstm_lm").run(w, {"tokens": tokens, "next_tokens": nxt})
    with torch.no_grad():
        logits = head(rnn(embed(tokens.long()))[0])
    nt.check("lstm_lm logits", out["logits"], logits)
    nt.check("lstm_lm loss", out["loss"], F.cross_entropy(logits.reshape(-1, V), nxt.reshape(-1).long()))


def elman_lm():
    V, E, H, B, T = 10000, 128, 256, 2, 5
    embed, rnn, head = torch.nn.Embedding(V, E), torch.nn.RNN(E, H, batch_first=True), \
        nt.randomize_(torch.nn.Linear(H, V), scale=0.3)
    w = dict(sd(embed, "embed"), **sd(rnn, "recurrent"), **sd(head, "head"))
    tokens = torch.randint(0, V, (B, T), dtype=torch.int32)
    nxt = torch.randint(0, V, (B, T), dtype=torch.int32)
    out = seed_model("elman_lm").run(w, {"tokens": tokens, "next_tokens": nxt})
    with torch.no_grad():
        logits = head(rnn(embed(tokens.long()))[0])
    nt.check("elman_lm logits", out["logits"], logits)
    nt.check("elman_lm loss", out["loss"], F.cross_entropy(logits.reshape(-1, V), nxt.reshape(-1).long()))


def bilstm_tagger():
    V, E, H, C, B, T = 20000, 100, 128, 9, 3, 6
    lengths = [6, 2, 4]
    embed = torch.nn.Embedding(V, E)
    rnn = torch.nn.LSTM(E, H, 2, batch_first=True, bidirectional=True)
    head = nt.randomize_(torch.nn.Linear(2 * H, C), scale=0.3)
    w = dict(sd(embed, "embed"), **sd(rnn, "encoder"), **sd(head, "head"))
    tokens = torch.randint(0, V, (B, T), dtype=torch.int32)
    tags = torch.randint(0, C, (B, T), dtype=torch.int32)
    for b, L in enumerate(lengths):
        tags[b, L:] = -100
    out = seed_model("bilstm_tagger").run(w, {"tokens": tokens, "tags": tags,
                                              "lengths": torch.tensor(lengths, dtype=torch.int32)})
    with torch.no_grad():
        p = pack_padded_sequence(embed(tokens.long()), torch.tensor(lengths), batch_first=True,
                                 enforce_sorted=False)
        h = pad_packed_sequence(rnn(p)[0], batch_first=True, total_length=T)[0]
        logits = head(h)
    nt.check("bilstm_tagger logits (packed)", out["logits"], logits)
    nt.check("bilstm_tagger loss", out["loss"],
             F.cross_entropy(logits.reshape(-1, C), tags.reshape(-1).long(), ignore_index=-100))


def gru_forecaster():
    Fd, H, B, T = 6, 64, 3, 7
    lengths = [7, 4, 1]
    rnn, head = torch.nn.GRU(Fd, H, batch_first=True), nt.randomize_(torch.nn.Linear(H, 1), scale=0.5)
    nt.randomize_(rnn)
    w = dict(sd(rnn, "encoder"), **sd(head, "head"))
    x, nr = rand(B, T, Fd), rand(B, 1)
    out = seed_model("gru_forecaster").run(w, {"x": x, "next_return": nr,
                                               "lengths": torch.tensor(lengths, dtype=torch.int32)})
    with torch.no_grad():
        _, hn = cho_gru({k: v for k, v in rnn.state_dict().items()}, x, lengths, None, 1, 1)
        pred = head(hn[-1])
    nt.check("gru_forecaster pred (Cho 2014)", out["pred"], pred)
    nt.check("gru_forecaster loss", out["loss"], F.mse_loss(pred, nr))


def mlp_family(name, residual):
    D, W, L, N = 10, 50, 15, 8
    layers = [torch.nn.Linear(D, W)] + [torch.nn.Linear(W, W) for _ in range(L - 1)]
    head = torch.nn.Linear(W, D)
    w = dict(sd(layers[0], "stem.fc"), **sd(head, "head"))
    for k, l in enumerate(layers[1:]):
        w.update(sd(l, "hidden.%d.fc" % k))
    x, y = rand(N, D), rand(N, D)
    out = seed_model(name).run(w, {"x": x, "y": y})
    with torch.no_grad():
        h = F.leaky_relu(layers[0](x), 0.3)
        for l in layers[1:]:
            h = (h if residual else 0) + F.leaky_relu(l(h), 0.3)
        pred = head(h)
    nt.check("%s pred" % name, out["pred"], pred)
    nt.check("%s loss" % name, out["loss"], F.mse_loss(pred, y))


def neural_ode():
    Fd, H, W, B = 16, 32, 64, 4
    enc, f1, f2, dec = (torch.nn.Linear(Fd, H), torch.nn.Linear(H, W), torch.nn.Linear(W, H),
                        torch.nn.Linear(H, 1))
    w = dict(sd(enc, "encode"), **sd(f1, "f.fc1"), **sd(f2, "f.fc2"), **sd(dec, "decode"))
    x, nr = rand(B, Fd), rand(B, 1)
    out = seed_model("neural_ode").run(w, {"x": x, "next_return": nr})
    with torch.no_grad():
        h1 = fixed(lambda t, z: f2(torch.tanh(f1(z))), torch.tanh(enc(x)), 0.0, 1.0, 20, "rk4")
        pred = dec(h1)
    nt.check("neural_ode pred (rk4 20 steps)", out["pred"], pred)
    nt.check("neural_ode loss", out["loss"], F.mse_loss(pred, nr))


def ode_rnn():
    Fd, H, W, B, T = 4, 32, 64, 3, 5
    cell, f1, f2, head = (torch.nn.GRUCell(Fd, H), torch.nn.Linear(H, W), torch.nn.Linear(W, H),
                          torch.nn.Linear(H, 1))
    w = dict(sd(cell, "cell"), **sd(f1, "dynamics.fc1"), **sd(f2, "dynamics.fc2"), **sd(head, "head"))
    x, nr = rand(B, T, Fd), rand(B, 1)
    times = torch.cumsum(torch.rand(B, T) + 0.1, 1)
    out = seed_model("ode_rnn").run(w, {"x": x, "times": times, "next_return": nr})
    with torch.no_grad():
        h = torch.zeros(B, H)
        for i in range(T):
            if i:
                h = fixed(lambda t, z: f2(torch.tanh(f1(z))), h, times[:, i - 1:i], times[:, i:i + 1],
                          4, "rk4")
            h = cell(x[:, i], h)
        pred = head(h)
    nt.check("ode_rnn pred", out["pred"], pred)
    nt.check("ode_rnn loss", out["loss"], F.mse_loss(pred, nr))


class BertEmbeddings(torch.nn.Module):
    def __init__(self, V, D, S):
        super().__init__()
        self.word_embeddings = torch.nn.Embedding(V, D)
        self.position_embeddings = torch.nn.Embedding(S, D)
        self.token_type_embeddings = torch.nn.Embedding(2, D)
        self.LayerNorm = torch.nn.LayerNorm(D, eps=1e-12)
        for e in (self.word_embeddings, self.position_embeddings, self.token_type_embeddings):
            torch.nn.init.normal_(e.weight, 0, 0.02)
        nt.randomize_(self.LayerNorm)

    def forward(self, tok, seg):
        T = tok.shape[1]
        return self.LayerNorm(self.word_embeddings(tok.long()) +
                              self.position_embeddings(torch.arange(T))[None] +
                              self.token_type_embeddings(seg.long()))


def bert_small():
    V, D, A, FF, N, S, B, T = 30522, 256, 4, 1024, 12, 128, 1, 8
    emb = BertEmbeddings(V, D, S)
    layers = [torch.nn.TransformerEncoderLayer(D, A, FF, dropout=0.1, activation="gelu",
                                               batch_first=True, norm_first=False).eval()
              for _ in range(N)]
    for l in layers:
        nt.randomize_(l.norm1)
        nt.randomize_(l.norm2)
    disc = nt.randomize_(torch.nn.Linear(D, 1), scale=0.2)  # O(1) logits
    w = dict(sd(emb, "embed"), **sd(disc, "disc"))
    for k, l in enumerate(layers):
        w.update(sd(l, "encoder.%d" % k))
    tokens = torch.randint(0, V, (B, T), dtype=torch.int32)
    segments = torch.randint(0, 2, (B, T), dtype=torch.int32)
    replaced = (torch.rand(B, T, 1) < 0.3).float()
    out = seed_model("bert_small").run(w, {"tokens": tokens, "segments": segments,
                                           "replaced": replaced})
    h = emb(tokens, segments)
    for l in layers:
        h = l(h)  # grad mode: not torch's fast path
    h = h.detach()
    with torch.no_grad():
        logits = disc(h)
    nt.check("bert_small h", out["h"], h)
    nt.check("bert_small logits", out["logits"], logits)
    nt.check("bert_small loss", out["loss"], F.binary_cross_entropy_with_logits(logits, replaced))


def reversible_bert(name, lsh):
    D = 512 if lsh else 256
    V, A, FF, N, S, B, T = 30522, 4, 4 * D, 12, 128, 2, 10
    emb = BertEmbeddings(V, D, S)
    w = sd(emb, "embed")
    blocks = []
    for k in range(N):
        fn, gn = nt.randomize_(torch.nn.LayerNorm(D)), nt.randomize_(torch.nn.LayerNorm(D))
        up, down = torch.nn.Linear(D, FF), torch.nn.Linear(FF, D)
        inw = torch.empty(2 * D if lsh else 3 * D, D)
        torch.nn.init.xavier_uniform_(inw)
        inb = torch.randn(inw.shape[0]) * 0.1
        ow, ob = torch.nn.Linear(D, D), None
        blocks.append((fn, inw, inb, ow, gn, up, down))
        p = "blocks.%d." % k
        w.update(sd(fn, p + "f.norm"))
        w.update({p + "f.attn.in_proj_weight": inw, p + "f.attn.in_proj_bias": inb,
                  p + "f.attn.out_proj.weight": ow.weight, p + "f.attn.out_proj.bias": ow.bias})
        w.update(sd(gn, p + "g.norm"))
        w.update(sd(up, p + "g.up"))
        w.update(sd(down, p + "g.down"))
    norm, disc = nt.randomize_(torch.nn.LayerNorm(D)), nt.randomize_(torch.nn.Linear(D, 1), scale=0.2)
    w.update(sd(norm, "norm"))
    w.update(sd(disc, "disc"))
    tokens = torch.randint(0, V, (B, T), dtype=torch.int32)
    segments = torch.randint(0, 2, (B, T), dtype=torch.int32)
    replaced = (torch.rand(B, T, 1) < 0.3).float()
    out = seed_model(name).run(w, {"tokens": tokens, "segments": segments, "replaced": replaced})
    dh = D // A
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    if lsh:  # T <= chunk (64): one chunk, every key but the query itself, in every round
        allowed = i != j
    else:    # window 64, dilation 2, global [0]
        allowed = ((i - j).abs() <= 64) & ((i - j) % 2 == 0) | (i == 0) | (j == 0)
    with torch.no_grad():
        e = emb(tokens, segments)
        x1, x2 = e, e
        for fn, inw, inb, ow, gn, up, down in blocks:
            h = fn(x2)
            proj = h @ inw.T + inb
            if lsh:
                qk, v = proj.split(D, -1)
                k_ = qk / qk.view(B, T, A, dh).norm(dim=-1).repeat_interleave(dh, -1)
                q = qk
            else:
                q, k_, v = proj.split(D, -1)
            hd = lambda t: t.view(B, T, A, dh).transpose(1, 2)
            s = (hd(q) @ hd(k_).transpose(-1, -2) / math.sqrt(dh)).masked_fill(~allowed, float("-inf"))
            ctx = (torch.softmax(s, -1) @ hd(v)).transpose(1, 2).reshape(B, T, D)
            y1 = x1 + ow(ctx)
            y2 = x2 + down(F.gelu(up(gn(y1))))
            x1, x2 = y1, y2
        hfin = norm(0.5 * (x1 + x2))
        logits = disc(hfin)
    nt.check("%s h" % name, out["h"], hfin)
    nt.check("%s logits" % name, out["logits"], logits)
    nt.check("%s loss" % name, out["loss"], F.binary_cross_entropy_with_logits(logits, replaced))


def message_classifier():
    """BERT-base (12 x 768, 12 heads, ff 3072, GELU) + bi-LSTM (zoneout off in
    inference) + 13 label heads on the [CLS] position, BCE-with-logits."""
    V, H, A, FF, N, LAB, B, T = 30522, 768, 12, 3072, 12, 13, 2, 6
    emb = BertEmbeddings(V, H, 512)
    layers = [torch.nn.TransformerEncoderLayer(H, A, FF, dropout=0.1, activation="gelu",
                                               batch_first=True, norm_first=False).eval()
              for _ in range(N)]
    for l in layers:
        nt.randomize_(l.norm1)
        nt.randomize_(l.norm2)
    bilstm = torch.nn.LSTM(H, H // 2, batch_first=True, bidirectional=True)
    # heads large enough that the logits are O(1) and depend on the input
    heads = [(nt.randomize_(torch.nn.Linear(H, H), scale=0.15),
              nt.randomize_(torch.nn.Linear(H, 1), scale=0.2)) for _ in range(LAB)]
    w = dict(sd(emb, "bert"), **sd(bilstm, "bilstm"))
    for k, l in enumerate(layers):
        w.update(sd(l, "encoder.%d" % k))
    for k, (hid, o) in enumerate(heads):
        w.update(sd(hid, "heads.%d.hidden" % k))
        w.update(sd(o, "heads.%d.out" % k))
    tokens = torch.randint(0, V, (B, T), dtype=torch.int32)
    segments = torch.randint(0, 2, (B, T), dtype=torch.int32)
    labels = (torch.rand(B, LAB) < 0.3).float()
    out = seed_model("message_classifier").run(w, {"tokens": tokens, "segments": segments,
                                                   "labels": labels})
    h = emb(tokens, segments)
    for l in layers:
        h = l(h)
    with torch.no_grad():
        s_, _ = bilstm(h.detach())
        cls = s_[:, 0]
        logits = torch.cat([o(torch.tanh(hid(cls))) for hid, o in heads], -1)
    nt.check("message_classifier logits", out["logits"], logits)
    nt.check("message_classifier loss", out["loss"], F.binary_cross_entropy_with_logits(logits, labels))


if __name__ == "__main__":
    nt.run_cases({
        "lstm_lm": lstm_lm, "elman_lm": elman_lm, "bilstm_tagger": bilstm_tagger,
        "gru_forecaster": gru_forecaster,
        "deep_mlp": lambda: mlp_family("deep_mlp", False),
        "residual_mlp": lambda: mlp_family("residual_mlp", True),
        "neural_ode": neural_ode, "ode_rnn": ode_rnn, "bert_small": bert_small,
        "reversible_dilated_bert": lambda: reversible_bert("reversible_dilated_bert", False),
        "reformer_lsh": lambda: reversible_bert("reformer_lsh", True),
        "message_classifier": message_classifier,
    })
