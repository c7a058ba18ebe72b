"""PyTorch twins of the ELECTRA models (models/electra_*.nn), for the parity
test (test/Parity/electra.test) and the memory table (bench/memory_table.py).

`Electra(kind)` has the nncc models' parameter names as its state_dict keys:
the shared `embed` (BERT embeddings with learned, sinusoidal or axial
positions), the generator (`gen_in`, `generator`, `gen_head`) at G_size of
the discriminator (`encoder`, `disc`). `forward(tokens, segments)` runs
Algorithm 2 of the seed thesis (§4.4.4) with torch's own randomness;
`losses(tokens, segments, mask, corrupted)` recomputes steps 4 and 6-9 for a
given mask and corrupted sequence (what an nncc run reports), so nncc's
outputs and gradients can be checked against it.
"""
import math

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint as _checkpoint

MASK_ID, IGNORE, P_MASK, LAMBDA = 103, -100, 0.15, 50.0
CONFIGS = {
    # name: d_model, position encoding, encoder kind
    "electra_bert": (256, "learned", "post_ln"),
    "electra_reversible_dilated_bert": (256, "sinusoidal", "dilated"),
    "electra_reformer": (512, "axial", "lsh"),
}


def sinusoidal(T, D, dtype):
    t = torch.arange(T, dtype=torch.float64)[:, None]
    i = torch.arange(0, D, 2, dtype=torch.float64)[None, :]
    pe = torch.zeros(T, D, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(t / 10000 ** (i / D))
    pe[:, 1::2] = torch.cos(t / 10000 ** (i / D))
    return pe.to(dtype)


class Axial(torch.nn.Module):
    """Hugging Face's ReformerAxialPositionEmbeddings (training-mode form)."""

    def __init__(self, shape, dims):
        super().__init__()
        self.shape = shape
        self.weights = torch.nn.ParameterList([
            torch.nn.Parameter(torch.randn(shape[0], 1, dims[0])),
            torch.nn.Parameter(torch.randn(1, shape[1], dims[1]))])

    def forward(self, T):
        n1, n2 = self.shape
        grid = torch.cat([w.expand(n1, n2, w.shape[-1]) for w in self.weights], -1)
        return grid.reshape(n1 * n2, -1)[:T]


class Embeddings(torch.nn.Module):
    def __init__(self, V, D, S, position):
        super().__init__()
        self.position = position
        self.word_embeddings = torch.nn.Embedding(V, D)
        self.token_type_embeddings = torch.nn.Embedding(2, D)
        if position == "learned":
            self.position_embeddings = torch.nn.Embedding(S, D)
        elif position == "axial":
            n2 = 16
            self.position_embeddings = Axial((-(-S // n2), n2), (D // 4, 3 * D // 4))
        self.LayerNorm = torch.nn.LayerNorm(D, eps=1e-12)
        self.dropout = torch.nn.Dropout(0.1)
        for e in (self.word_embeddings, self.token_type_embeddings):
            torch.nn.init.normal_(e.weight, 0, 0.02)

    def forward(self, tok, seg):
        T, D = tok.shape[1], self.word_embeddings.weight.shape[1]
        h = self.word_embeddings(tok.long()) + self.token_type_embeddings(seg.long())
        if self.position == "learned":
            h = h + self.position_embeddings(torch.arange(T))[None]
        elif self.position == "axial":
            h = h + self.position_embeddings(T)[None]
        else:
            h = h + sinusoidal(T, D, h.dtype)[None]
        return self.dropout(self.LayerNorm(h))


class Attention(torch.nn.Module):
    """The nncc attention layer's parameters; dilated (window 64, dilation 2,
    global [0]) or LSH attention over sequences of at most one chunk (every
    key but the query itself, shared normalised keys), as the seed-model
    parity test (parity_seed_models.py) uses them."""

    def __init__(self, D, A, kind):
        super().__init__()
        self.A, self.kind = A, kind
        rows = 2 * D if kind == "lsh" else 3 * D
        self.in_proj_weight = torch.nn.Parameter(torch.empty(rows, D))
        torch.nn.init.xavier_uniform_(self.in_proj_weight)
        self.in_proj_bias = torch.nn.Parameter(torch.zeros(rows))
        self.out_proj = torch.nn.Linear(D, D)

    def forward(self, x):
        B, T, D = x.shape
        dh = D // self.A
        proj = x @ self.in_proj_weight.T + self.in_proj_bias
        i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
        if self.kind == "lsh":
            if T > 64:
                raise ValueError("the LSH reference covers one chunk (T <= 64)")
            qk, v = proj.split(D, -1)
            q, k = qk, qk / qk.view(B, T, self.A, dh).norm(dim=-1).repeat_interleave(dh, -1)
            allowed = i != j
        else:
            q, k, v = proj.split(D, -1)
            allowed = ((i - j).abs() <= 64) & ((i - j) % 2 == 0) | (i == 0) | (j == 0)
        hd = lambda t: t.view(B, T, self.A, dh).transpose(1, 2)
        s = (hd(q) @ hd(k).transpose(-1, -2) / math.sqrt(dh)).masked_fill(~allowed, float("-inf"))
        ctx = (torch.softmax(s, -1) @ hd(v)).transpose(1, 2).reshape(B, T, D)
        return self.out_proj(ctx)


class Branch(torch.nn.Module):
    def __init__(self, **layers):
        super().__init__()
        for k, v in layers.items():
            setattr(self, k, v)


class ReversibleEncoder(torch.nn.Module):
    """models/electra_*'s reversible_encoder block: n reversible blocks on
    x1 = x2 = x (y1 = x1 + F(x2), y2 = x2 + G(y1)), LayerNorm of the mean."""

    def __init__(self, D, A, FF, n, kind):
        super().__init__()
        self.ffn_dropout = kind == "dilated"
        self.blocks = torch.nn.ModuleList(torch.nn.ModuleDict(dict(
            f=Branch(norm=torch.nn.LayerNorm(D), attn=Attention(D, A, kind)),
            g=Branch(norm=torch.nn.LayerNorm(D), up=torch.nn.Linear(D, FF),
                     down=torch.nn.Linear(FF, D)))) for _ in range(n))
        self.norm = torch.nn.LayerNorm(D)
        self.drop = torch.nn.Dropout(0.1)

    def forward(self, x, checkpoint=False):
        x1 = x2 = x
        for blk in self.blocks:
            f, g = blk["f"], blk["g"]
            y1 = x1 + f.attn(f.norm(x2))
            h = F.gelu(g.up(g.norm(y1)))
            y2 = x2 + g.down(self.drop(h) if self.ffn_dropout else h)
            x1, x2 = y1, y2
        return self.norm(0.5 * (x1 + x2))


class PostLN(torch.nn.ModuleList):
    def __init__(self, D, A, FF, n):
        super().__init__(torch.nn.TransformerEncoderLayer(
            D, A, FF, dropout=0.1, activation="gelu", batch_first=True, norm_first=False)
            for _ in range(n))

    def forward(self, h, checkpoint=False):
        for layer in self:
            h = _checkpoint(layer, h) if checkpoint else layer(h)
        return h


class Electra(torch.nn.Module):
    def __init__(self, name, S=128, V=30522, A=4, N=12, g_size=0.25):
        super().__init__()
        D, position, kind = CONFIGS[name]
        Dg, Ag, Ng = int(D * g_size), int(A * g_size), int(N * g_size)
        self.embed = Embeddings(V, D, S, position)
        self.gen_in = torch.nn.Linear(D, Dg)
        if kind == "post_ln":
            self.generator, self.encoder = PostLN(Dg, Ag, 4 * Dg, Ng), PostLN(D, A, 4 * D, N)
        else:
            self.generator = ReversibleEncoder(Dg, Ag, 4 * Dg, Ng, kind)
            self.encoder = ReversibleEncoder(D, A, 4 * D, N, kind)
        self.gen_head = Branch(dense=torch.nn.Linear(Dg, D),
                               norm=torch.nn.LayerNorm(D, eps=1e-12),
                               out=torch.nn.Linear(D, V))
        self.disc = torch.nn.Linear(D, 1)
        self.checkpoint = False

    def gen_logits(self, masked, segments):
        h = self.generator(self.gen_in(self.embed(masked, segments)), self.checkpoint)
        hd = self.gen_head
        return hd.out(hd.norm(F.gelu(hd.dense(h))))

    def losses(self, tokens, segments, mask, corrupted):
        """Steps 4 and 6-9 for a given mask and corrupted sequence: generator
        logits, discriminator logits, the two losses and their total."""
        tokens = tokens.long()
        masked = torch.where(mask, torch.full_like(tokens, MASK_ID), tokens)
        gl = self.gen_logits(masked, segments)
        gen_loss = F.cross_entropy(gl.reshape(-1, gl.shape[-1]),
                                   torch.where(mask, tokens, torch.full_like(tokens, IGNORE))
                                   .reshape(-1), ignore_index=IGNORE)
        dl = self.disc(self.encoder(self.embed(corrupted, segments), self.checkpoint))[..., 0]
        disc_loss = F.binary_cross_entropy_with_logits(dl, (corrupted.long() != tokens).to(dl.dtype))
        return dict(gen_logits=gl, disc_logits=dl, gen_loss=gen_loss, disc_loss=disc_loss,
                    loss=gen_loss + LAMBDA * disc_loss)

    def forward(self, tokens, segments):
        """Algorithm 2 with torch's randomness: max(1, floor(p T)) masked
        positions per sequence (Clark et al.'s max), samples from the
        generator's softmax at those positions."""
        B, T = tokens.shape
        l = max(1, int(math.floor(P_MASK * T)))
        mask = torch.zeros(B, T, dtype=torch.bool)
        if l:
            mask.scatter_(1, torch.rand(B, T).topk(l, dim=1).indices, True)
        tokens = tokens.long()
        masked = torch.where(mask, torch.full_like(tokens, MASK_ID), tokens)
        gl = self.gen_logits(masked, segments)
        with torch.no_grad():
            sampled = torch.multinomial(torch.softmax(gl[mask], -1), 1)[:, 0]
        corrupted = tokens.clone()
        corrupted[mask] = sampled
        gen_loss = F.cross_entropy(gl[mask], tokens[mask])
        dl = self.disc(self.encoder(self.embed(corrupted, segments), self.checkpoint))[..., 0]
        disc_loss = F.binary_cross_entropy_with_logits(dl, (corrupted != tokens).to(dl.dtype))
        return gen_loss + LAMBDA * disc_loss
