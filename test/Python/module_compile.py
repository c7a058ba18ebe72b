"""nncc.torch.Module under torch.compile(fullgraph=True) (torch >= 2.4).

module_compile.py INPUTS_DIR WORKDIR [--backend aot_eager|inductor|...]

The forward and backward are torch.library custom ops (nncc::forward,
nncc::backward), so torch.compile traces a model with an nncc layer inside
it without a graph break (fullgraph=True fails on one; torch._dynamo.explain
counts the graphs and breaks and finds nncc::forward in the graph, and a
break put in on purpose is seen by both). Checked against the
same model run eagerly by torch with a torch twin of the layer: an nncc GRU
layer without a loss between torch layers, and an LSTM model with its loss,
over batch sizes and lengths that change from call to call (recompiled or
dynamic, either way no break), 3 Adam steps each with the gradients equal to
torch's within 1e-5 relative; and fully_shard (FSDP2) on one gloo rank."""
import argparse
import os
import sys

import torch

import nncc
import nncc.torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import module_loops as L  # noqa: E402  (the models and their torch twins)


def explain(name, net, inputs):
    """torch._dynamo.explain: one graph, no break, the nncc::forward custom op
    in it (fullgraph=True below also fails on a break)."""
    torch._dynamo.reset()
    ex = torch._dynamo.explain(net)(*inputs)
    ops = [str(n.target) for g in ex.graphs for n in g.graph.nodes if n.op == "call_function"]
    nncc_ops = sorted({o for o in ops if o.startswith("nncc.")})
    L.check("%s: torch._dynamo.explain: %d graph, %d graph breaks, nncc ops in it: %s"
            % (name, ex.graph_count, ex.graph_break_count, ", ".join(nncc_ops) or "none"),
            ex.graph_count == 1 and ex.graph_break_count == 0 and nncc_ops == ["nncc.forward.default"],
            "; ".join(str(r.reason)[:100] for r in ex.break_reasons))
    torch._dynamo.reset()


def break_is_seen(gru):
    """The checks see a graph break: the same layer with one put in front."""
    class Broken(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nncc.torch.Module(gru, seed=0)

        def forward(self, x):
            x = x * 2
            torch._dynamo.graph_break()
            return self.layer(x).sum()

    net, x = Broken(), torch.randn(2, 3, 4)
    torch._dynamo.reset()
    count = torch._dynamo.explain(net)(x).graph_break_count
    try:
        torch.compile(net, fullgraph=True, backend="eager")(x)
        refused = False
    except Exception:  # torch._dynamo.exc.Unsupported
        refused = True
    torch._dynamo.reset()
    L.check("a graph break put in front of the layer: explain counts %d, fullgraph=True refuses"
            % count, count == 1 and refused)


def run(name, net, ref, batches, backend):
    explain(name, net, batches[0])
    compiled = torch.compile(net, fullgraph=True, backend=backend)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    ropt = torch.optim.Adam(ref.parameters(), lr=1e-2)
    worst = 0.0
    for inputs in batches:
        opt.zero_grad()
        ropt.zero_grad()
        loss = compiled(*inputs)
        loss.backward()
        rloss = ref(*inputs)
        rloss.backward()
        worst = max(worst, abs(float(loss.detach()) - float(rloss.detach())) /
                    abs(float(rloss.detach())))
        rp = dict(ref.named_parameters())
        for n, p in net.named_parameters():
            if p.grad is None and rp[n].grad is None:
                continue
            if p.grad is None or rp[n].grad is None:
                L.check("%s: gradients" % name, False, "%s missing" % n)
                return
            worst = max(worst, L.rel(p.grad, rp[n].grad))
        opt.step()
        ropt.step()
    shapes = sorted({tuple(inputs[0].shape[:2]) for inputs in batches})
    L.check("%s under torch.compile(fullgraph=True, backend=%s), (B, T) in %s: loss and "
            "gradients = torch's at every step" % (name, backend, shapes), worst <= 1e-5,
            "max rel err %.1e" % worst)


def fsdp2(gru):
    """fully_shard (FSDP2) over the nncc layer and the whole model, one gloo
    rank: the parameters are DTensors between calls, gathered into plain
    tensors for the forward; 2 steps of gradients against torch's."""
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        net, ref = L.gru_pair(gru, 1)
        fully_shard(net.layer)
        fully_shard(net)
        kind = type(net.layer.rnn.weight_ih_l0).__name__
        worst = 0.0
        for B, T in ((4, 5), (2, 6)):
            pairs, _, _ = L.compare_step(net, ref, [torch.randn(B, T, 3)], 1e-5)
            for _, g, r in pairs:
                g = g.full_tensor() if hasattr(g, "full_tensor") else g
                worst = max(worst, L.rel(g, r))
        L.check("fully_shard (FSDP2, 1 gloo rank; parameters are %s): gradients = torch's"
                % kind, worst <= 1e-5, "max rel err %.1e" % worst)
    finally:
        dist.destroy_process_group()


def served(seq, backend):
    """Eval mode without the target under torch.compile(fullgraph=True): the
    logits alone, equal to eager's, in one graph."""
    m = nncc.torch.Module(seq, seed=4)
    m.eval()
    x = torch.randn(3, 6, 6)
    with torch.no_grad():
        eager = m(x)
        explain("served without the target (eval)", m, (x,))
        compiled = torch.compile(m, fullgraph=True, backend=backend)(x)
    L.check("served without the target under torch.compile(fullgraph=True, backend=%s): the "
            "logits = eager's" % backend, isinstance(compiled, torch.Tensor) and
            compiled.shape == (3, 6, 3) and L.rel(compiled, eager) <= 1e-6,
            "shape %s" % (str(tuple(compiled.shape)) if isinstance(compiled, torch.Tensor)
                          else type(compiled).__name__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("inputs")
    ap.add_argument("work")
    ap.add_argument("--backend", default="aot_eager")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    print("torch %s" % torch.__version__)
    L.check("torch.library custom ops registered (torch >= 2.4)",
            nncc.torch._custom_ops() is not None)
    gru = nncc.compile(os.path.join(a.inputs, "gru_layer.nn"))
    seq = nncc.compile(os.path.join(a.inputs, "seq_head.nn"))
    torch.manual_seed(0)
    L.guarded("graph break seen", lambda: break_is_seen(gru))
    batches = [(torch.randn(B, T, 3),) for B, T in ((4, 5), (4, 5), (2, 7))]
    L.guarded("no-loss layer", lambda: run("nncc GRU layer (no loss) between torch layers",
                                           *L.gru_pair(gru, 1), batches, a.backend))
    batches = [(torch.randn(B, T, 5), torch.randint(0, 3, (B, T))) for B, T in
               ((3, 4), (3, 4), (5, 6))]
    L.guarded("with loss", lambda: run("nncc LSTM model with its loss and a torch term on "
                                       "its logits", *L.seq_pair(seq, 2), batches, a.backend))
    L.guarded("served", lambda: served(seq, a.backend))
    L.guarded("fsdp2", lambda: fsdp2(gru))
    print("ALL PASSED" if not L.FAILED else "FAILED: " + ", ".join(L.FAILED))
    sys.exit(1 if L.FAILED else 0)


if __name__ == "__main__":
    main()
