"""A composite torch + nncc model under DistributedDataParallel and FSDP2
(fully_shard), 2 gloo processes on the CPU (torch >= 2.4).

distributed_composite.py INPUTS_DIR WORKDIR [--world 2] [--only ddp|fsdp2]

The models of module_loops.py: an nncc GRU layer without a loss between torch
layers (GruNet) and an nncc LSTM model with its loss and a torch term on its
logits (SeqNet). Each of --world processes (torch.multiprocessing.spawn)
takes its own equal share of a batch; the reference is the torch twin of the
model (torch.nn.GRU / LSTM with the same state_dict) run by one process on
the whole batch. The losses are means over the batch, so the all-reduced
(averaged) gradients equal the reference's:

- DDP: after each backward every rank's gradients equal the reference's
  within 1e-5 relative and each other's exactly (all-reduced), while a
  rank's own, not reduced gradients (no_sync) differ from them; 3 SGD steps,
  the parameters equal the reference's after them. The LSTM model also
  under torch.compile(DDP(model), backend="aot_eager").
- FSDP2: fully_shard on the nncc module and on the whole model: the
  parameters are DTensors sharded over the ranks between calls (each rank
  holds its part of dim 0), all-gathered into ordinary tensors for the
  nncc forward; the sharded gradients, gathered, equal the reference's at
  each of 3 SGD steps, and so do the parameters after them.

Rank 0 prints the PASS / FAIL lines; the exit status is 1 on a failure."""
import argparse
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import nncc
import nncc.torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import module_loops as L  # noqa: E402  (the models and their torch twins)

STEPS = 3


def pairs_of(kind, libs):
    if kind == "gru":
        net, ref = L.gru_pair(libs["gru"], 3)
        g = torch.Generator().manual_seed(11)
        batches = [(torch.randn(8, T, 3, generator=g),) for T in (5, 7, 5)]
        return "nncc GRU layer (no loss) between torch layers", net, ref, batches
    net, ref = L.seq_pair(libs["seq"], 4)
    g = torch.Generator().manual_seed(12)
    batches = [(torch.randn(6, T, 5, generator=g), torch.randint(0, 3, (6, T), generator=g))
               for T in (4, 6, 4)]
    return "nncc LSTM model with its loss and a torch term on its logits", net, ref, batches


def gathered(g):
    return g.full_tensor() if hasattr(g, "full_tensor") else g


def report(rank, ok, name, worst, detail=""):
    """ok / worst over all ranks; rank 0 prints."""
    t = torch.tensor([0.0 if ok else 1.0, worst], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    if rank == 0:
        L.check(name, t[0] == 0, "max rel err %.1e%s" % (float(t[1]), detail))


def ddp_case(rank, world, kind, libs, compiled=False):
    name, net, ref, batches = pairs_of(kind, libs)
    ddp = torch.nn.parallel.DistributedDataParallel(net)
    # torch.compile over the DDP module (its DDPOptimizer splits the graph
    # at the gradient buckets; the nncc layer is the nncc::forward op).
    run = torch.compile(ddp, backend="aot_eager") if compiled else ddp
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    ropt = torch.optim.SGD(ref.parameters(), lr=0.1)
    worst, ok, same, local_differs = 0.0, True, True, True
    for inputs in batches:
        B = inputs[0].shape[0]
        part = slice(rank * B // world, (rank + 1) * B // world)
        mine = [t[part] for t in inputs]
        # The rank's own gradients, not all-reduced (no_sync).
        net.zero_grad(set_to_none=True)
        with ddp.no_sync():
            ddp(*mine).backward()
        local = {n: p.grad.clone() for n, p in net.named_parameters()}
        opt.zero_grad(set_to_none=True)
        ropt.zero_grad(set_to_none=True)
        run(*mine).backward()
        ref(*inputs).backward()
        rp = dict(ref.named_parameters())
        step_differs = False
        for n, p in net.named_parameters():
            e = L.rel(p.grad, rp[n].grad)
            ok, worst = ok and e <= 1e-5, max(worst, e)
            others = [torch.empty_like(p.grad) for _ in range(world)]
            dist.all_gather(others, p.grad)
            same = same and all(torch.equal(o, others[0]) for o in others)
            step_differs = step_differs or L.rel(local[n], p.grad) > 1e-3
        local_differs = local_differs and step_differs
        opt.step()
        ropt.step()
    rp = dict(ref.named_parameters())
    pworst = max(L.rel(p.detach(), rp[n].detach()) for n, p in net.named_parameters())
    report(rank, ok and same and (local_differs or world == 1) and pworst <= 1e-5,
           "DDP%s, %d gloo ranks: %s: all-reduced gradients (equal on every rank%s) = torch's on "
           "the whole batch at each of %d SGD steps, and the parameters after them"
           % (" under torch.compile" if compiled else "", world, name,
              ", a rank's own differ" if world > 1 else "", STEPS),
           max(worst, pworst),
           "" if same and local_differs else " (same on every rank: %s, local differ: %s)"
           % (same, local_differs))


def fsdp2_case(rank, world, kind, libs):
    from torch.distributed.fsdp import fully_shard
    name, net, ref, batches = pairs_of(kind, libs)
    layer = net.layer if kind == "gru" else net.model
    fully_shard(layer)
    fully_shard(net)
    w = next(layer.parameters())
    kind_name = type(w).__name__
    local = tuple(w.to_local().shape) if hasattr(w, "to_local") else tuple(w.shape)
    sharded = hasattr(w, "placements") and local[0] < w.shape[0] if world > 1 else True
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    ropt = torch.optim.SGD(ref.parameters(), lr=0.1)
    worst, ok = 0.0, True
    for inputs in batches:
        B = inputs[0].shape[0]
        part = slice(rank * B // world, (rank + 1) * B // world)
        opt.zero_grad(set_to_none=True)
        ropt.zero_grad(set_to_none=True)
        net(*[t[part] for t in inputs]).backward()
        ref(*inputs).backward()
        rp = dict(ref.named_parameters())
        for n, p in net.named_parameters():
            e = L.rel(gathered(p.grad), rp[n].grad)
            ok, worst = ok and e <= 1e-5, max(worst, e)
        opt.step()
        ropt.step()
    rp = dict(ref.named_parameters())
    pworst = max(L.rel(gathered(p.detach()), rp[n].detach()) for n, p in net.named_parameters())
    report(rank, ok and sharded and pworst <= 1e-5,
           "FSDP2 (fully_shard), %d gloo ranks: %s: parameters are %s (%s of %s on a rank), "
           "gathered gradients = torch's on the whole batch at each of %d SGD steps, and the "
           "parameters after them" % (world, name, kind_name, list(local), list(w.shape), STEPS),
           max(worst, pworst))


def worker(rank, args, lib_paths, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=args.world)
    libs = lib_paths  # nncc.torch.Module loads a library from its path
    try:
        cases = [("ddp", ddp_case, "gru", {}), ("ddp", ddp_case, "seq", {}),
                 ("ddp", ddp_case, "seq", dict(compiled=True)),
                 ("fsdp2", fsdp2_case, "gru", {}), ("fsdp2", fsdp2_case, "seq", {})]
        for mode, case, kind, kw in cases:
            if args.only and args.only != mode:
                continue
            try:
                case(rank, args.world, kind, libs, **kw)
            except Exception as e:  # a case that dies fails; the group may be broken
                L.check("%s %s" % (mode, kind), False, "rank %d: %s: %s"
                        % (rank, type(e).__name__, str(e)[:300]))
                raise
        dist.barrier()
    finally:
        dist.destroy_process_group()
    sys.exit(1 if L.FAILED else 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("inputs")
    ap.add_argument("work")
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--only", choices=["ddp", "fsdp2"])
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    print("torch %s" % torch.__version__)
    lib_paths = {k: nncc.compile(os.path.join(args.inputs, f)).path
                 for k, f in (("gru", "gru_layer.nn"), ("seq", "seq_head.nn"))}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sys.stdout.flush()
    try:
        mp.spawn(worker, args=(args, lib_paths, port), nprocs=args.world, join=True)
    except Exception as e:  # a rank failed (its FAIL line is above)
        print("FAILED: %s" % str(e).strip().splitlines()[0])
        sys.exit(1)
    print("ALL PASSED")


if __name__ == "__main__":
    main()
