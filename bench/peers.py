"""The PyTorch side of bench/run.py's cases: for each kind a torch module
whose state_dict names are the nncc model's parameter names (so one
safetensors file feeds both), its inputs, its inference output and its
training loss. Runs under Debian's torch 1.13 and under torch 2.x (the venv);
the seed models' twins reuse test/Parity/Inputs/parity_seed_models.py's
BertEmbeddings and nncc_testing.refs's Cho GRU cell and rk4 solver.

Kinds (nncc model, output compared; FLOPs: flops() below):
  lstm, gru            bench/models/{lstm,gru}.nn          y
  encoder              bench/models/encoder.nn             y
  attn_dense           bench/models/attn_dense.nn          y
  attn_dilated         bench/models/attn_dilated.nn        y  (torch: dense + the
                       equivalent Longformer mask, same function)
  bert_small           models/bert_small.nn                logits
  bilstm_tagger        models/bilstm_tagger.nn             logits (packed by lengths)
  gru_forecaster       models/gru_forecaster.nn            pred (Cho 2014 GRU, lengths)
  ode_rnn              models/ode_rnn.nn                   pred (GRU cell + rk4 4 steps)
and the training steps (KIND_train): loss, one optimizer step.
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "utils"))
from nncc_testing import refs  # noqa: E402


def _bert_embeddings():
    """parity_seed_models.py's BertEmbeddings (its `common` import sets
    torch's thread count to 1: restored)."""
    n = torch.get_num_threads()
    sys.path.insert(0, os.path.join(ROOT, "test", "Parity", "Inputs"))
    import parity_seed_models
    torch.set_num_threads(n)
    return parity_seed_models.BertEmbeddings


# nncc model file of each kind (inference; the training kind adds _train for
# bench/models, or --grad on the same seed model)
NN = {
    "lstm": "bench/models/lstm.nn", "gru": "bench/models/gru.nn",
    "encoder": "bench/models/encoder.nn", "attn_dense": "bench/models/attn_dense.nn",
    "attn_dilated": "bench/models/attn_dilated.nn",
    "lstm_train": "bench/models/lstm_train.nn", "gru_train": "bench/models/gru_train.nn",
    "encoder_train": "bench/models/encoder_train.nn",
    "bert_small": "models/bert_small.nn", "bilstm_tagger": "models/bilstm_tagger.nn",
    "gru_forecaster": "models/gru_forecaster.nn", "ode_rnn": "models/ode_rnn.nn",
}
for _k in ("bert_small", "bilstm_tagger", "gru_forecaster", "ode_rnn"):
    NN[_k + "_train"] = NN[_k]
OUTPUT = {"bert_small": "logits", "bilstm_tagger": "logits", "gru_forecaster": "pred",
          "ode_rnn": "pred"}
# kinds whose training step draws dropout masks (nncc's and torch's streams
# differ, so their first-step losses agree only roughly)
DROPOUT_TRAIN = {"bert_small_train", "bilstm_tagger_train"}
# kinds ONNX Runtime's transformer optimiser applies to (model_type bert)
ENCODERS = {"encoder", "bert_small"}


def base(kind):
    return kind[:-len("_train")] if kind.endswith("_train") else kind


class Rnn(torch.nn.Module):
    def __init__(self, cls, E, H):
        super().__init__()
        self.r = cls(E, H, batch_first=True)

    def forward(self, x):
        return self.r(x)[0]


class Encoder(torch.nn.Module):
    def __init__(self, s, dropout):
        super().__init__()
        self.enc = torch.nn.TransformerEncoderLayer(s["D"], s["A"], s["FF"], dropout=dropout,
                                                    activation="gelu", batch_first=True,
                                                    norm_first=False)

    def forward(self, x):
        return self.enc(x)


class Attention(torch.nn.Module):
    """nn.MultiheadAttention; dilated: the dense call with the Longformer mask
    of nncc's dilated(window, dilation, global [0]) (True = not allowed)."""

    def __init__(self, s, dilated):
        super().__init__()
        self.a = torch.nn.MultiheadAttention(s["D"], s["A"], batch_first=True)
        mask = None
        if dilated:
            i = torch.arange(s["T"])[:, None]
            j = torch.arange(s["T"])[None, :]
            band = ((i - j).abs() <= (s["W"] // 2) * s["DIL"]) & ((i - j) % s["DIL"] == 0)
            mask = ~(band | (i == 0) | (j == 0))
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x):
        return self.a(x, x, x, need_weights=False, attn_mask=self.mask)[0]


class BertSmall(torch.nn.Module):
    """models/bert_small.nn: BERT embeddings, 12 post-LN encoder layers (d 256,
    4 heads, ff 1024, GELU, dropout 0.1), the discriminator Linear(256, 1)."""
    V, D, A, FF, N, S = 30522, 256, 4, 1024, 12, 128

    def __init__(self):
        super().__init__()
        self.embed = _bert_embeddings()(self.V, self.D, self.S)
        self.encoder = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(self.D, self.A, self.FF, dropout=0.1,
                                             activation="gelu", batch_first=True,
                                             norm_first=False) for _ in range(self.N))
        self.disc = torch.nn.Linear(self.D, 1)

    def forward(self, tokens, segments):
        h = self.embed(tokens, segments)
        for layer in self.encoder:
            h = layer(h)
        return self.disc(h)


class BiLstmTagger(torch.nn.Module):
    """models/bilstm_tagger.nn: embedding 20000 x 100, 2-layer bi-LSTM 128,
    packed by lengths (nn.utils.rnn), dropout 0.5, Linear(256, 9)."""
    V, E, H, C = 20000, 100, 128, 9

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(self.V, self.E)
        self.encoder = torch.nn.LSTM(self.E, self.H, 2, batch_first=True, bidirectional=True)
        self.head = torch.nn.Linear(2 * self.H, self.C)

    def forward(self, tokens, lengths):
        from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
        T = tokens.shape[1]
        p = pack_padded_sequence(self.embed(tokens.long()), lengths.long(), batch_first=True,
                                 enforce_sorted=False)
        h = pad_packed_sequence(self.encoder(p)[0], batch_first=True, total_length=T)[0]
        return self.head(F.dropout(h, 0.5, self.training))


class GruForecaster(torch.nn.Module):
    """models/gru_forecaster.nn: a Cho 2014 GRU (refs.cho_cell's equations;
    torch's nn.GRU is the other variant, so nn.GRU holds the weights only),
    batched over the sequences: the input projection of all steps in one
    GEMM, then per step the recurrent GEMMs and the gates; a row past its
    length keeps its state. pred = head(h at each row's last step)."""
    Fd, H = 6, 64

    def __init__(self):
        super().__init__()
        self.encoder = torch.nn.GRU(self.Fd, self.H, batch_first=True)
        self.head = torch.nn.Linear(self.H, 1)

    def forward(self, x, lengths):
        H, r = self.H, self.encoder
        B, T, _ = x.shape
        wih, whh, bih, bhh = r.weight_ih_l0, r.weight_hh_l0, r.bias_ih_l0, r.bias_hh_l0
        xp = F.linear(x, wih, bih)  # [B, T, 3H]: x_r, x_z, x_n
        h = x.new_zeros(B, H)
        live = torch.arange(T)[None, :] < lengths.long()[:, None]  # [B, T]
        for t in range(T):
            xr, xz, xn = xp[:, t].split(H, -1)
            hr, hz = F.linear(h, whh[:2 * H], bhh[:2 * H]).split(H, -1)
            z = torch.sigmoid(xz + hz)
            rr = torch.sigmoid(xr + hr)
            ht = torch.tanh(xn + F.linear(rr * h, whh[2 * H:], bhh[2 * H:]))
            hn = (1 - z) * h + z * ht
            h = torch.where(live[:, t:t + 1], hn, h)
        return self.head(h)


class Dynamics(torch.nn.Module):
    def __init__(self, h, w):
        super().__init__()
        self.fc1 = torch.nn.Linear(h, w)
        self.fc2 = torch.nn.Linear(w, h)

    def forward(self, t, z):
        return self.fc2(torch.tanh(self.fc1(z)))


class OdeRnn(torch.nn.Module):
    """models/ode_rnn.nn: between observations the state follows dh/dt =
    dynamics(h) by rk4 in 4 steps from each row's previous time to its next
    (refs.fixed), then the GRU cell reads the observation; pred = head(h)."""
    Fd, H, W = 4, 32, 64

    def __init__(self):
        super().__init__()
        self.cell = torch.nn.GRUCell(self.Fd, self.H)
        self.dynamics = Dynamics(self.H, self.W)
        self.head = torch.nn.Linear(self.H, 1)

    def forward(self, x, times):
        B, T, _ = x.shape
        h = x.new_zeros(B, self.H)
        for i in range(T):
            if i:
                h = refs.fixed(self.dynamics, h, times[:, i - 1:i], times[:, i:i + 1], 4, "rk4")
            h = self.cell(x[:, i], h)
        return self.head(h)


def build(kind, s):
    """The torch module of a kind at shape s (weights: torch's init)."""
    b = base(kind)
    if b in ("lstm", "gru"):
        return Rnn(torch.nn.LSTM if b == "lstm" else torch.nn.GRU, s["E"], s["H"])
    if b == "encoder":
        return Encoder(s, 0.0 if kind == "encoder_train" else 0.1)
    if b in ("attn_dense", "attn_dilated"):
        return Attention(s, b == "attn_dilated")
    return {"bert_small": BertSmall, "bilstm_tagger": BiLstmTagger,
            "gru_forecaster": GruForecaster, "ode_rnn": OdeRnn}[b]()


def init(kind, m):
    """Weights drawn as the parity tests draw them (non-trivial layer norms,
    O(1) outputs)."""
    import nncc_testing as nt
    b = base(kind)
    if b.startswith("attn"):
        nt.randomize_(m)
    elif b == "bert_small":
        for l in m.encoder:
            nt.randomize_(l.norm1)
            nt.randomize_(l.norm2)
        nt.randomize_(m.disc, scale=0.2)
    elif b == "bilstm_tagger":
        nt.randomize_(m.head, scale=0.3)
    elif b == "gru_forecaster":
        nt.randomize_(m.encoder)
        nt.randomize_(m.head, scale=0.5)
    return m


def inputs(kind, s, seed=0):
    """The nncc model's inputs (numpy), the same for every side."""
    g = np.random.default_rng(seed)
    b, B, T = base(kind), s["B"], s["T"]
    f32 = lambda *sh: g.standard_normal(sh).astype(np.float32)
    if b in ("lstm", "gru"):
        d = {"x": f32(B, T, s["E"])}
        if kind.endswith("_train"):
            d["target"] = f32(B, T, s["H"])
        return d
    if b in ("encoder", "attn_dense", "attn_dilated"):
        d = {"x": f32(B, T, s["D"])}
        if kind.endswith("_train"):
            d["target"] = f32(B, T, s["D"])
        return d
    if b == "bert_small":
        return {"tokens": g.integers(0, BertSmall.V, (B, T)).astype(np.int32),
                "segments": g.integers(0, 2, (B, T)).astype(np.int32),
                "replaced": (g.random((B, T, 1)) < 0.15).astype(np.float32)}
    lengths = lengths_of(s, g)
    if b == "bilstm_tagger":
        tags = g.integers(0, BiLstmTagger.C, (B, T)).astype(np.int32)
        for i, n in enumerate(lengths):
            tags[i, n:] = -100
        return {"tokens": g.integers(0, BiLstmTagger.V, (B, T)).astype(np.int32),
                "lengths": lengths, "tags": tags}
    if b == "gru_forecaster":
        return {"x": f32(B, T, GruForecaster.Fd), "lengths": lengths,
                "next_return": f32(B, 1)}
    if b == "ode_rnn":
        return {"x": f32(B, T, OdeRnn.Fd),
                "times": np.cumsum(g.random((B, T)) + 0.1, 1).astype(np.float32),
                "next_return": f32(B, 1)}
    raise KeyError(kind)


def lengths_of(s, g):
    """Valid steps per sequence: uniform in [T/4, T], the longest = T."""
    B, T = s["B"], s["T"]
    n = g.integers(max(1, T // 4), T + 1, B).astype(np.int32)
    n[0] = T
    return n


def args(kind, ins):
    """The torch module's positional inputs (tensors) from the nncc inputs."""
    t = lambda k: torch.from_numpy(ins[k])
    b = base(kind)
    if b == "bert_small":
        return (t("tokens"), t("segments"))
    if b == "bilstm_tagger":
        return (t("tokens"), t("lengths"))
    if b == "gru_forecaster":
        return (t("x"), t("lengths"))
    if b == "ode_rnn":
        return (t("x"), t("times"))
    return (t("x"),)


def output_name(kind):
    return "loss" if kind.endswith("_train") else OUTPUT.get(base(kind), "y")


def loss(kind, y, ins):
    """The training loss of the nncc model's `loss` line from the output y."""
    t = lambda k: torch.from_numpy(ins[k])
    b = base(kind)
    if b == "bert_small":
        return F.binary_cross_entropy_with_logits(y, t("replaced"))
    if b == "bilstm_tagger":
        C = y.shape[-1]
        return F.cross_entropy(y.reshape(-1, C), t("tags").reshape(-1).long(), ignore_index=-100)
    if b in ("gru_forecaster", "ode_rnn"):
        return F.mse_loss(y, t("next_return"))
    return F.mse_loss(y, t("target"))


def optimizer(kind, m):
    """The nncc model's optimizer and gradient clipping (max norm or None)."""
    b = base(kind)
    if b == "bert_small":
        return torch.optim.AdamW(m.parameters(), lr=5e-4, weight_decay=0.01), None
    clip = {"bilstm_tagger": 5.0, "gru_forecaster": 1.0, "ode_rnn": 1.0}.get(b)
    return torch.optim.Adam(m.parameters(), lr=1e-3), clip


def flops(kind, s, ins=None):
    """Nominal FLOPs of one call (2 per multiply-add of the matrix products;
    element-wise work, embeddings and losses not counted), and the formula.
    A training step counts 3x its forward (the backward's two products per
    forward product)."""
    if kind.endswith("_train"):
        f, text = flops(base(kind), s, ins)
        return 3.0 * f, "3 x (%s)" % text
    B, T = s["B"], s["T"]
    if kind in ("lstm", "gru"):
        G = 4 if kind == "lstm" else 3
        return (2.0 * B * T * G * s["H"] * (s["E"] + s["H"]),
                "2·B·T·%d·H·(E+H)" % G)
    if kind in ("encoder", "attn_dense", "attn_dilated"):
        D = s["D"]
        proj = 8.0 * B * T * D * D
        if kind == "encoder":
            return (proj + 4.0 * B * T * T * D + 4.0 * B * T * D * s["FF"],
                    "8·B·T·D² + 4·B·T²·D + 4·B·T·D·FF")
        if kind == "attn_dense":
            return proj + 4.0 * B * T * T * D, "8·B·T·D² + 4·B·T²·D"
        return (proj + 4.0 * B * T * (s["W"] + 2) * D,
                "8·B·T·D² + 4·B·T·(w+2)·D (the band's w+1 keys + the global one)")
    if kind == "bert_small":
        D, FF, N = BertSmall.D, BertSmall.FF, BertSmall.N
        return (N * (8.0 * B * T * D * D + 4.0 * B * T * T * D + 4.0 * B * T * D * FF)
                + 2.0 * B * T * D, "12·(8·B·T·D² + 4·B·T²·D + 4·B·T·D·FF) + 2·B·T·D")
    S = float(np.sum(ins["lengths"])) if ins is not None and "lengths" in ins else B * T
    if kind == "bilstm_tagger":
        E, H, C = BiLstmTagger.E, BiLstmTagger.H, BiLstmTagger.C
        return (2 * 2.0 * S * 4 * H * (E + H) + 2 * 2.0 * S * 4 * H * (2 * H + H)
                + 2.0 * B * T * 2 * H * C,
                "2·2·S·4H·(E+H) + 2·2·S·4H·(2H+H) + 2·B·T·2H·C, S = Σ lengths")
    if kind == "gru_forecaster":
        Fd, H = GruForecaster.Fd, GruForecaster.H
        return 2.0 * S * 3 * H * (Fd + H) + 2.0 * B * H, "2·S·3H·(F+H) + 2·B·H, S = Σ lengths"
    if kind == "ode_rnn":
        Fd, H, W = OdeRnn.Fd, OdeRnn.H, OdeRnn.W
        return (2.0 * B * T * 3 * H * (Fd + H) + (T - 1) * 16 * 4.0 * B * H * W + 2.0 * B * H,
                "2·B·T·3H·(F+H) + (T-1)·4 steps·4 evals·4·B·H·W + 2·B·H")
    raise KeyError(kind)
