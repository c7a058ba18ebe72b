"""nncc.torch.Module in the training loops people write, against torch autograd.

module_loops.py INPUTS_DIR WORKDIR

- Gradients with and without a loss: an nncc GRU layer without a loss
  (Inputs/gru_layer.nn) between a torch Linear before it and a torch head
  after it, y = layer(pre(x)); loss = head(y).pow(2).mean(); an LSTM model
  with a cross-entropy loss (Inputs/seq_head.nn) with its loss used, its loss
  ignored (only the caller's gradient on the logits drives the backward) and
  both. Against torch.nn.GRU / LSTM + Linear with the module's state_dict:
  f32 within 1e-5 relative, f64 (.double(): the f64 library) within 1e-10.
- Shapes free to change: a DataLoader over 100 samples with batch 16 (a
  partial last batch of 4), 2 epochs of Adam, gradients and parameters equal
  to the reference's at every step; length buckets T = 16, 24, 16 (training
  and eval); a failed call (a wrong feature size, dims that disagree between
  inputs, in training and in eval) followed by good calls.
- Backward details: retain_graph (a second backward reruns the forward with
  the same dropout masks), an output modified in place before the backward is
  refused by torch.
- nncc.compile: the compile cache (NNCC_CACHE_DIR; the second call loads the
  same file, nothing new in the temporary folder), a wrong nncc= or NNCC is an
  error, a library loaded from a path cannot switch precision."""
import copy
import glob
import os
import sys
import tempfile

import torch

import nncc
import nncc.torch

FAILED = []


def check(name, ok, detail=""):
    print("%s %s%s" % ("PASS" if ok else "FAIL", name, (" " + detail) if detail else ""))
    sys.stdout.flush()
    if not ok:
        FAILED.append(name)


def rel(a, b):
    return float((a - b).abs().max() / max(float(b.abs().max()), 1e-30))


def grads_close(name, pairs, tol):
    """pairs: (label, grad, reference grad)."""
    worst, where = 0.0, ""
    for label, g, r in pairs:
        if g is None and r is None:  # a layer neither reaches (post, loss only)
            continue
        if g is None or r is None:
            check(name, False, "%s: gradient missing (%s vs %s)" % (label, g is None, r is None))
            return
        e = rel(g, r)
        if not e <= worst:  # NaN counts as the worst
            worst, where = e, label
    check(name, worst <= tol, "max rel err %.1e (%s)" % (worst, where))


def strip(state, prefix):
    return {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}


# ---------------------------------------------------------------------------
# Models: the nncc module and its torch twin, each with torch layers around it
# ---------------------------------------------------------------------------
class GruNet(torch.nn.Module):
    """pre (torch) -> GRU (nncc layer without a loss, or torch.nn.GRU) -> head (torch)."""

    def __init__(self, layer):
        super().__init__()
        self.pre = torch.nn.Linear(3, 4)
        self.layer = layer
        self.head = torch.nn.Linear(6, 2)

    def forward(self, x):
        y = self.layer(self.pre(x))
        return self.head(y).pow(2).mean()


class TorchGru(torch.nn.Module):
    """Inputs/gru_layer.nn in torch (its parameters are rnn.*)."""

    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.GRU(4, 6, batch_first=True)

    def forward(self, x):
        return self.rnn(x)[0]


class TorchSeqHead(torch.nn.Module):
    """Inputs/seq_head.nn in torch: LSTM(6, 8, 2) + Linear(8, 3), cross-entropy."""

    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.LSTM(6, 8, 2, batch_first=True)
        self.head = torch.nn.Linear(8, 3)

    def forward(self, x, target):
        logits = self.head(self.rnn(x)[0])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 3),
                                                 target.reshape(-1).long())
        return logits, loss


class SeqNet(torch.nn.Module):
    """pre (torch) -> seq_head (nncc or torch) -> a torch term on the logits."""

    def __init__(self, model, use_loss=True, use_logits=True):
        super().__init__()
        self.pre = torch.nn.Linear(5, 6)
        self.model = model
        self.post = torch.nn.Linear(3, 2)
        self.use_loss, self.use_logits = use_loss, use_logits

    def forward(self, x, target):
        logits, loss = self.model(self.pre(x), target)
        total = 0
        if self.use_loss:
            total = total + loss
        if self.use_logits:
            total = total + 0.3 * self.post(logits).pow(2).mean()
        return total


def gru_pair(lib, seed):
    torch.manual_seed(seed)
    net = GruNet(nncc.torch.Module(lib, seed=seed))
    ref = GruNet(TorchGru())
    ref.load_state_dict(net.state_dict())
    return net, ref


def seq_pair(lib, seed, **kw):
    torch.manual_seed(seed)
    net = SeqNet(nncc.torch.Module(lib, seed=seed), **kw)
    ref = SeqNet(TorchSeqHead(), **kw)
    missing = ref.load_state_dict(net.state_dict())
    assert not missing.missing_keys and not missing.unexpected_keys, missing
    return net, ref


def compare_step(net, ref, inputs, tol):
    """One forward + backward of both with fresh gradients; (pairs, losses)."""
    for m in (net, ref):
        m.zero_grad(set_to_none=True)
    xs = [t.clone().requires_grad_(t.is_floating_point()) for t in inputs]
    xr = [t.clone().requires_grad_(t.is_floating_point()) for t in inputs]
    loss = net(*xs)
    loss.backward()
    rloss = ref(*xr)
    rloss.backward()
    rp = dict(ref.named_parameters())
    pairs = [(n, p.grad, rp[n].grad) for n, p in net.named_parameters()]
    pairs += [("input %d" % i, a.grad, b.grad) for i, (a, b) in enumerate(zip(xs, xr))
              if a.is_floating_point()]
    return pairs, float(loss.detach()), float(rloss.detach())


def guarded(name, fn):
    try:
        fn()
    except Exception as e:  # a case that dies fails, and the next still runs
        check(name, False, "%s: %s" % (type(e).__name__, str(e)[:300]))


def test_gradients(gru, seq):
    check("libraries: gru_layer without a loss (outputs %s), seq_head with one (outputs %s)"
          % ([s.name for s in gru.outputs], [s.name for s in seq.outputs]),
          [s.name for s in gru.outputs] == ["h"] and
          [s.name for s in seq.outputs] == ["logits", "loss"])
    torch.manual_seed(1)
    x = torch.randn(5, 7, 3)

    def no_loss(dtype, tol, what):
        net, ref = gru_pair(gru, 3)
        net.to(dtype), ref.to(dtype)
        if dtype == torch.float64:
            check("f64: .double() switches the module to the f64 library",
                  net.layer.library.precision == "f64",
                  "precision %s" % net.layer.library.precision)
        pairs, loss, rloss = compare_step(net, ref, [x.to(dtype)], tol)
        check("%s no loss: the loss equals torch's" % what, abs(loss - rloss) <= tol * abs(rloss),
              "%.9g vs %.9g" % (loss, rloss))
        grads_close("%s no loss: GRU layer between torch layers, every gradient = torch "
                    "autograd's" % what, pairs, tol)

    torch.manual_seed(2)
    xs = torch.randn(4, 6, 5)
    target = torch.randint(0, 3, (4, 6), dtype=torch.int32)

    def with_loss(dtype, tol, what, label, kw):
        net, ref = seq_pair(seq, 4, **kw)
        net.to(dtype), ref.to(dtype)
        pairs, loss, rloss = compare_step(net, ref, [xs.to(dtype), target], tol)
        grads_close("%s model %s: every gradient = torch autograd's" % (what, label), pairs, tol)
        if dtype == torch.float64:
            net.float()  # .float() goes back to the f32 library
            check(".float() switches back to the f32 library",
                  net.model.library.precision == "f32")

    for dtype, tol, what in ((torch.float32, 1e-5, "f32"), (torch.float64, 1e-10, "f64")):
        guarded("%s no loss" % what, lambda: no_loss(dtype, tol, what))
        for label, kw in (("with its loss", dict(use_loss=True, use_logits=False)),
                          ("its loss ignored (only the logits' gradient)",
                           dict(use_loss=False, use_logits=True)),
                          ("loss and logits", dict(use_loss=True, use_logits=True))):
            guarded("%s model %s" % (what, label),
                    lambda: with_loss(dtype, tol, what, label, kw))


def test_shapes(gru, seq):
    # A DataLoader over 100 samples, batch 16: six full batches and one of 4.
    torch.manual_seed(5)
    X = torch.randn(100, 9, 5)
    Y = torch.randint(0, 3, (100, 9), dtype=torch.int64)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y), batch_size=16)
    net, ref = seq_pair(seq, 6, use_loss=True, use_logits=True)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    ropt = torch.optim.Adam(ref.parameters(), lr=1e-2)
    sizes, worst, ok = [], 0.0, True
    for epoch in range(2):
        for xb, yb in loader:
            opt.zero_grad()
            ropt.zero_grad()
            net(xb, yb).backward()
            ref(xb, yb).backward()
            rp = dict(ref.named_parameters())
            for n, p in net.named_parameters():
                e = rel(p.grad, rp[n].grad)
                ok = ok and e <= 1e-5
                worst = max(worst, e)
            opt.step()
            ropt.step()
            sizes.append(xb.shape[0])
    rp = dict(ref.named_parameters())
    pworst = max(rel(p.detach(), rp[n].detach()) for n, p in net.named_parameters())
    check("DataLoader batch 16 over 100 samples (batches %s), 2 epochs of Adam: gradients = "
          "torch's at every step" % sorted(set(sizes)), ok and 4 in sizes,
          "max rel err %.1e over %d steps" % (worst, len(sizes)))
    check("... and the parameters after them", pworst <= 1e-4, "max rel err %.1e" % pworst)

    # Length buckets: T 16, then 24, then 16 again; training then eval.
    net, ref = seq_pair(seq, 7)
    ok, worst = True, 0.0
    for T in (16, 24, 16):
        x = torch.randn(3, T, 5)
        t = torch.randint(0, 3, (3, T))
        pairs, loss, rloss = compare_step(net, ref, [x, t], 1e-5)
        e = max(rel(g, r) for _, g, r in pairs)
        ok, worst = ok and e <= 1e-5, max(worst, e)
    check("length buckets T = 16, 24, 16 (training): gradients = torch's", ok,
          "max rel err %.1e" % worst)
    net.eval(), ref.eval()
    ok = True
    with torch.no_grad():
        for T, B in ((16, 2), (24, 5), (16, 2)):
            x = torch.randn(B, T, 5)
            t = torch.randint(0, 3, (B, T))
            ok = ok and abs(float(net(x, t)) - float(ref(x, t))) <= 1e-5 * abs(float(ref(x, t)))
    check("length and batch buckets in eval mode: outputs = torch's", ok)
    net.train(), ref.train()

    # No-loss layer: batch and length change too.
    gnet, gref = gru_pair(gru, 8)
    ok, worst = True, 0.0
    for B, T in ((16, 5), (4, 5), (16, 11)):
        pairs, _, _ = compare_step(gnet, gref, [torch.randn(B, T, 3)], 1e-5)
        e = max(rel(g, r) for _, g, r in pairs)
        ok, worst = ok and e <= 1e-5, max(worst, e)
    check("no-loss layer with B, T = (16, 5), (4, 5), (16, 11): gradients = torch's", ok,
          "max rel err %.1e" % worst)

    # A failed call, then good ones (training and eval).
    m = net.model
    good_x, good_t = torch.randn(2, 4, 6), torch.randint(0, 3, (2, 4))
    failures = []
    for label, args in (("feature size 7 instead of 6", (torch.randn(2, 4, 7), good_t)),
                        ("B = 3 in x, 2 in target", (torch.randn(3, 4, 6), good_t)),
                        ("T = 5 in x, 4 in target", (torch.randn(2, 5, 6), good_t))):
        try:
            m(*args)
            failures.append("%s: no error" % label)
        except nncc.Error as e:
            print("  %s: nncc.Error %s: %s" % (label, e.status, e))
    check("wrong shapes are nncc.Errors", not failures, "; ".join(failures))
    pairs, _, _ = compare_step(net, ref, [torch.randn(2, 4, 5), good_t], 1e-5)
    e = max(rel(g, r) for _, g, r in pairs)
    check("after the failed calls: a good call's gradients = torch's", e <= 1e-5,
          "max rel err %.1e" % e)
    x8 = torch.randn(8, 3, 5)
    t8 = torch.randint(0, 3, (8, 3))
    pairs, _, _ = compare_step(net, ref, [x8, t8], 1e-5)
    e = max(rel(g, r) for _, g, r in pairs)
    check("... and another at another batch size and length", e <= 1e-5, "max rel err %.1e" % e)
    net.eval(), ref.eval()
    try:
        with torch.no_grad():
            m(torch.randn(2, 4, 7), good_t)
        check("eval: a wrong shape is an nncc.Error", False)
    except nncc.Error:
        pass
    with torch.no_grad():
        a, b = float(net(x8, t8)), float(ref(x8, t8))
    check("eval after a failed eval call: output = torch's", abs(a - b) <= 1e-5 * abs(b),
          "%.9g vs %.9g" % (a, b))
    net.train(), ref.train()


def test_backward_details(inputs_dir, work):
    # retain_graph: the second backward runs the forward again with the same
    # masks (a dropout model: the gradients must be the first backward's).
    path = os.path.join(work, "gru_dropout.nn")
    with open(path, "w") as f:
        f.write("""model gru_dropout {
  dims B, T
  const F = 4, H = 6
  input x: f32[B, T, F]
  rnn = gru(F, H, layers: 2)
  proj = linear(H, 3)
  forward {
    h, h_n = rnn(x)
    output y = proj(dropout(h, p: 0.5))
  }
}
""")
    lib = nncc.compile(path)
    m = nncc.torch.Module(lib, seed=1)
    x = torch.randn(3, 5, 4, requires_grad=True)
    y = m(x)
    w = torch.randn(y.shape)
    (y * w).sum().backward(retain_graph=True)
    first = {n: p.grad.clone() for n, p in m.named_parameters()}
    gx = x.grad.clone()
    m.zero_grad()
    x.grad = None
    (y * w).sum().backward()
    e = max(rel(p.grad, first[n]) for n, p in m.named_parameters())
    e = max(e, rel(x.grad, gx))
    check("retain_graph: a second backward (the forward rerun, the same dropout masks) "
          "= the first", e <= 1e-6, "max rel err %.1e" % e)
    # Dropout is active and the masks change from step to step.
    y2 = m(x)
    check("training forwards draw fresh dropout masks", float((y2 - y).detach().abs().max()) > 0)

    # An output the backward reads, modified in place: torch refuses (the
    # autograd Function keeps the forward's residuals, the outputs among
    # them), or, with the custom ops (NNCC_TORCH_CUSTOM_OPS=1, which rerun
    # the forward in the backward), the gradients are those of a clean run.
    seq = nncc.compile(os.path.join(inputs_dir, "seq_head.nn"))
    sm = nncc.torch.Module(seq, seed=2)
    x = torch.randn(2, 3, 6)
    t = torch.randint(0, 3, (2, 3))
    logits, loss = sm(x, t)
    (loss + logits.sum()).backward()
    clean = {n: p.grad.clone() for n, p in sm.named_parameters()}
    sm.zero_grad()
    logits, loss = sm(x, t)
    with torch.no_grad():
        logits.mul_(2)
    name = "an output modified in place before the backward: refused, or the right gradients"
    try:
        (loss + logits.sum()).backward()
        e = max(rel(p.grad, clean[n]) for n, p in sm.named_parameters())
        check(name, e <= 1e-6, "no error; max rel err %.1e" % e)
    except RuntimeError as e:
        check(name, "inplace" in str(e), str(e).splitlines()[0][:90])


def test_compile(inputs_dir, work):
    cache = os.environ.get("NNCC_CACHE_DIR")
    before = set(glob.glob(os.path.join(tempfile.gettempdir(), "nncc-*")))
    path = os.path.join(inputs_dir, "gru_layer.nn")
    a = nncc.compile(path)
    b = nncc.compile(path)
    c = nncc.compile(path, f64=True)
    after = set(glob.glob(os.path.join(tempfile.gettempdir(), "nncc-*")))
    check("nncc.compile: the second call loads the same cached library", a.path == b.path,
          os.path.relpath(a.path, cache) if cache else a.path)
    check("nncc.compile: the library is in nncc's cache folder (NNCC_CACHE_DIR)",
          bool(cache) and os.path.realpath(a.path).startswith(os.path.realpath(cache) + os.sep))
    check("nncc.compile: f64 is another entry", c.path != a.path and c.precision == "f64")
    check("nncc.compile leaves nothing in %s" % tempfile.gettempdir(), after == before,
          " ".join(sorted(after - before)))
    for label, kw, env in (("nncc='/nonexistent/nncc'", dict(nncc="/nonexistent/nncc"), None),
                           ("nncc=<a directory>", dict(nncc=work), None),
                           ("NNCC=/nonexistent/nncc", {}, "/nonexistent/nncc")):
        old = os.environ.get("NNCC")
        if env:
            os.environ["NNCC"] = env
        try:
            nncc.compile(path, **kw)
            check("a wrong compiler (%s) is an error" % label, False, "compiled")
        except nncc.Error as e:
            check("a wrong compiler (%s) is an error" % label, e.status == "NOT_FOUND", str(e))
        finally:
            if env:
                if old is None:
                    del os.environ["NNCC"]
                else:
                    os.environ["NNCC"] = old
    loaded = nncc.torch.Module(a.path, seed=0)
    try:
        loaded.double()
        loaded(torch.randn(1, 2, 4, dtype=torch.float64))
        check("a library loaded from a path: .double() is an error that says why", False)
    except nncc.Error as e:
        check("a library loaded from a path: .double() is an error that says why",
              e.status == "UNSUPPORTED" and "nncc.compile" in str(e), str(e)[:100])
    # torch.save / torch.load keep what .double() needs.
    m = nncc.torch.Module(a, seed=0)
    p = os.path.join(work, "m.pt")
    torch.save(m, p)
    try:
        m2 = torch.load(p, weights_only=False)  # a whole module (torch >= 2.6: not the default)
    except TypeError:
        m2 = torch.load(p)
    m2 = m2.double()
    check("torch.load of a module, then .double(): the f64 library",
          m2.library.precision == "f64")


def test_serving(seq):
    """Eval mode serves without the target (ABI 9): the logits alone, bit for
    bit those of a call with it and torch's within 1e-5; batch and length
    change; training still needs the target; leaving out another input is
    an error naming it."""
    torch.manual_seed(5)
    m = nncc.torch.Module(seq, seed=3)
    ref = TorchSeqHead()
    ref.load_state_dict(m.state_dict())
    m.eval()
    ok, worst = True, 0.0
    for b, t in ((4, 7), (3, 11), (4, 7)):
        x = torch.randn(b, t, 6)
        target = torch.randint(0, 3, (b, t), dtype=torch.int32)
        with torch.no_grad():
            logits_full, loss = m(x, target)
            logits = m(x)
            by_name = m(x=x)
            ref_logits, _ = ref(x, target)
        ok = ok and isinstance(logits, torch.Tensor) and logits.shape == (b, t, 3) and \
            torch.equal(logits, logits_full) and torch.equal(by_name, logits_full)
        worst = max(worst, rel(logits, ref_logits))
    check("eval mode serves without the target: the logits alone (B, T changing), equal to a "
          "call with it", ok)
    check("served logits = torch's", worst <= 1e-5, "max rel err %.1e" % worst)
    m.train()
    try:
        m(torch.randn(2, 5, 6))
        check("training without the target is an error", False)
    except nncc.Error as e:
        check("training without the target is an error", "target" in str(e) and
              "eval mode serves without them" in str(e), str(e)[:120])
    m.eval()
    try:
        m(target=torch.zeros(2, 5, dtype=torch.int32))
        check("eval mode without an inference input is an error", False)
    except nncc.Error as e:
        check("eval mode without an inference input is an error", "missing inputs x" in str(e)
              and "only target may be left out" in str(e), str(e)[:120])
    with torch.no_grad():
        after = m(torch.randn(2, 5, 6))
    check("served after the failed calls", after.shape == (2, 5, 3))


def main():
    inputs_dir, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    torch.set_num_threads(1)
    gru = nncc.compile(os.path.join(inputs_dir, "gru_layer.nn"))
    seq = nncc.compile(os.path.join(inputs_dir, "seq_head.nn"))
    for section in (lambda: test_gradients(gru, seq), lambda: test_shapes(gru, seq),
                    lambda: test_backward_details(inputs_dir, work),
                    lambda: test_compile(inputs_dir, work), lambda: test_serving(seq)):
        try:
            section()
        except Exception as e:  # a section that dies fails, and the next still runs
            check("no exception", False, "%s: %s" % (type(e).__name__, str(e)[:300]))
    print("ALL PASSED" if not FAILED else "FAILED: " + ", ".join(FAILED))
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
