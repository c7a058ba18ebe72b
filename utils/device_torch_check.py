"""nncc.torch on the GPU (run by the device folder's run.sh, utils/device_prep.sh).

    python3 device_torch_check.py LIB

LIB: a library compiled with --grad --vjp --target all of a model with
inputs (x [B, T, F] float, lengths [B] int, target [B, 1] float), e.g.
models/gru_forecaster.nn. The same weights run as a CPU module and as a CUDA
module (module.cuda(): CUDA tensors bound in place, PyTorch's current
stream): outputs, the loss's parameter and input gradients, and three
torch.optim.AdamW steps must agree to fp32 tolerance; then one-rank
DistributedDataParallel on NCCL trains the CUDA module and must match the
plain CUDA module. Prints PASS/FAIL lines and "ALL PASSED"; exit status 1 on
a failure."""
import copy
import os
import socket
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import nncc.torch  # noqa: E402

B, T, F = 8, 6, 6
failures = []


def check(name, ok, detail=""):
    print("%s %s%s" % ("PASS" if ok else "FAIL", name, (": " + detail) if detail else ""))
    if not ok:
        failures.append(name)


def close(a, b, tol=1e-4):
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    scale = max(a.abs().max().item(), 1e-3)
    err = (a - b).abs().max().item() / scale
    return err <= tol, "relative %.3g" % err


def data(device):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(B, T, F, generator=g)
    lengths = torch.randint(1, T + 1, (B,), generator=g, dtype=torch.int32)
    target = torch.randn(B, 1, generator=g)
    return x.to(device), lengths.to(device), target.to(device)


def run(module, device, steps):
    x, lengths, target = data(device)
    x.requires_grad_(True)
    opt = torch.optim.AdamW(module.parameters(), lr=1e-2)
    outs = []
    for _ in range(steps):
        opt.zero_grad()
        _, loss = module(x, lengths, target)
        loss.backward()
        outs.append((loss.detach(), x.grad.detach().clone(),
                     [p.grad.detach().clone() for p in module.parameters()]))
        x.grad = None
        opt.step()
    return outs


def main():
    lib = sys.argv[1]
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device for torch")
        return 0
    cpu = nncc.torch.Module(lib, seed=3)
    gpu = copy.deepcopy(cpu).cuda()
    cpu.train()
    gpu.train()
    x, lengths, target = data("cpu")
    with torch.no_grad():
        out_c, loss_c = cpu(x, lengths, target)
        out_g, loss_g = gpu(x.cuda(), lengths.cuda(), target.cuda())
    check("forward on CUDA", *close(out_c, out_g))
    check("outputs stay CUDA tensors", out_g.is_cuda and loss_g.is_cuda)
    rc, rg = run(cpu, "cpu", 3), run(gpu, "cuda", 3)
    for step, ((lc, xc, pc), (lg, xg, pg)) in enumerate(zip(rc, rg)):
        check("step %d loss" % step, *close(lc, lg))
        check("step %d input gradient" % step, *close(xc, xg))
        worst = max((close(a, b)[1] for a, b in zip(pc, pg)), key=lambda s: float(s.split()[1]))
        check("step %d parameter gradients" % step, all(close(a, b)[0] for a, b in zip(pc, pg)),
              worst)
    check("parameters after 3 AdamW steps",
          all(close(a, b)[0] for a, b in zip(cpu.parameters(), gpu.parameters())))

    # One-rank DDP on NCCL: the same training as the plain CUDA module.
    import torch.distributed as dist
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("nccl", rank=0, world_size=1)
    base = nncc.torch.Module(lib, seed=5).cuda()
    plain = copy.deepcopy(base)
    ddp = torch.nn.parallel.DistributedDataParallel(copy.deepcopy(base))
    for m in (plain, ddp):
        m.train()
        run(m, "cuda", 2)
    check("DistributedDataParallel (nccl, 1 rank) = plain CUDA module",
          all(close(a, b, 1e-6)[0] for a, b in zip(plain.parameters(), ddp.module.parameters())))
    dist.destroy_process_group()
    print("ALL PASSED" if not failures else "FAILED: " + ", ".join(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
