"""Data parallel training of an nncc module under torch.distributed.

ddp_gru.py MODEL.nn WORKDIR [--backend gloo|nccl] [--world 2] [--steps 4]
           [--lib LIB.so] [--device cpu|cuda]

models/gru_forecaster.nn (no dropout) wrapped by nncc.torch.Module and
DistributedDataParallel, trained with SGD for --steps steps, each of --world
processes on its own half of the batch (mp.spawn, the gloo backend on the
CPU); then one process trains the same module on the combined batch. The
parameters must agree to fp32 tolerance: DDP averages the ranks' gradients,
and the model's loss is a mean over the batch. --backend nccl --world 1 is
the GPU machine's variant: the module and the data on CUDA (--device,
default cuda for nccl), the library prebuilt there by utils/device_prep.sh
(--lib: that machine has no nncc compiler; --grad --vjp --target all)."""
import argparse
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import nncc
import nncc.torch

B, T, F = 8, 6, 6


def data(device):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(B, T, F, generator=g)
    lengths = torch.randint(1, T + 1, (B,), generator=g, dtype=torch.int32)
    target = torch.randn(B, 1, generator=g)
    return x.to(device), lengths.to(device), target.to(device)


def train(module, x, lengths, target, steps):
    opt = torch.optim.SGD(module.parameters(), lr=0.5)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        _, loss = module(x, lengths, target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def worker(rank, args, lib_path, result_path):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group(args.backend, rank=rank, world_size=args.world)
    module = nncc.torch.Module(lib_path, seed=5).to(args.device)
    ddp = torch.nn.parallel.DistributedDataParallel(module)
    x, lengths, target = data(args.device)
    per = B // args.world
    part = slice(rank * per, (rank + 1) * per)
    losses = train(ddp, x[part], lengths[part], target[part], args.steps)
    if rank == 0:
        torch.save({"state": module.state_dict(), "losses": losses}, result_path)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("work")
    ap.add_argument("--backend", default="gloo")
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--port", type=int, default=0, help="0: a free port")
    ap.add_argument("--lib", help="a prebuilt library of MODEL (no compile)")
    ap.add_argument("--device", choices=["cpu", "cuda"],
                    help="where the module runs (default: cuda for nccl, else cpu)")
    args = ap.parse_args()
    args.device = args.device or ("cuda" if args.backend == "nccl" else "cpu")
    if not args.port:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            args.port = s.getsockname()[1]
    os.makedirs(args.work, exist_ok=True)
    lib = args.lib or nncc.compile(args.model, output_dir=os.path.join(args.work, "lib")).path
    result = os.path.join(args.work, "ddp.pt")
    mp.spawn(worker, args=(args, lib, result), nprocs=args.world, join=True)

    single = nncc.torch.Module(lib, seed=5).to(args.device)
    losses = train(single, *data(args.device), args.steps)
    ddp = torch.load(result, map_location=args.device)
    start = nncc.torch.Module(lib, seed=5).to(args.device).state_dict()
    worst = max(float((ddp["state"][k] - v).abs().max()) for k, v in single.state_dict().items())
    moved = max(float((v - start[k]).abs().max()) for k, v in single.state_dict().items())
    print("rank 0 losses (its half):", " ".join("%.5f" % l for l in ddp["losses"]))
    print("one process (whole batch):", " ".join("%.5f" % l for l in losses))
    ok = worst <= 1e-5 and moved > 1e-3
    print("%s %d ranks (%s) vs one process on the combined batch after %d SGD steps: "
          "max |param diff| %.1e (parameters moved %.2e)" % (
              "PASS" if ok else "FAIL", args.world, args.backend, args.steps, worst, moved))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
