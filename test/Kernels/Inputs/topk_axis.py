"""nncc_topk_axis_* and nncc_topk_axis_backward_* against PyTorch 1.13:
the values of torch.topk(x, k, dim) (sorted, descending; NaN the largest)
exactly, and the indices of torch.sort(x, dim, descending=True,
stable=True)[:k] exactly: equal elements, NaNs among them, come by
ascending index. torch.topk's own CPU indices need not (it orders tied
elements otherwise), so on ties only the values and gather(x, indices) are
compared with it, and on rows without ties its indices too. Every axis of
a rank-3 tensor (negative axes are normalised before the kernel), k from 1
to N, the backward (dy scattered to the indices, as torch.topk's backward),
and the argument checks (NNCC_K_EINVAL = nonzero)."""
import sys

import numpy as np
import torch

from nncc_testing.ckernels import SUFFIX, check, expect, finish, i64, load, ptr

lib = load(sys.argv[1])
torch.manual_seed(4)


def fn(name, dtype):
    return getattr(lib, "nncc_%s_%s" % (name, SUFFIX[dtype]))


def run(x, k, axis, dtype):
    shape = tuple(x.shape)
    outer = int(np.prod(shape[:axis])); n = shape[axis]; inner = int(np.prod(shape[axis + 1:]))
    oshape = shape[:axis] + (k,) + shape[axis + 1:]
    vals = np.full(oshape, 7.0, dtype)
    idx = np.full(oshape, -1, np.int32)
    rc = fn("topk_axis", dtype)(*i64(outer, n, inner, k), ptr(np.ascontiguousarray(x.numpy())), ptr(vals), ptr(idx))
    assert rc == 0, rc
    return vals, idx, (outer, n, inner)


seen_torch_tie_order_differs = False
for dtype in (np.float32, np.float64):
    tdt = torch.float32 if dtype == np.float32 else torch.float64
    shape = (3, 7, 4)
    x = torch.randint(0, 3, shape).to(tdt)  # small integers: many ties
    x[1, 2, 3] = float("nan")
    x[2, 4, 0] = float("nan")
    x[2, 6, 0] = float("nan")
    x[0, 1, 1] = float("-inf")
    for axis in range(3):
        for k in sorted({1, 2, shape[axis] - 1, shape[axis]}):
            if k < 1:
                continue
            name = "topk_axis %s axis=%d k=%d" % (SUFFIX[dtype], axis, k)
            vals, idx, _ = run(x, k, axis, dtype)
            ref = torch.topk(x, k, dim=axis)
            stable = torch.sort(x, dim=axis, descending=True, stable=True).indices.narrow(axis, 0, k)
            expect(name + " values == torch.topk values (NaN first)",
                   np.array_equal(vals, ref.values.numpy(), equal_nan=True))
            expect(name + " indices == torch.sort(descending, stable)[:k]",
                   np.array_equal(idx, stable.numpy().astype(np.int32)))
            expect(name + " x.gather(indices) == values",
                   np.array_equal(torch.gather(x, axis, torch.from_numpy(idx).long()).numpy(), vals,
                                  equal_nan=True))
            if not np.array_equal(idx, ref.indices.numpy().astype(np.int32)):
                seen_torch_tie_order_differs = True
        # rows without ties: the indices of torch.topk itself
        xr = torch.randn(shape, dtype=tdt)
        for k in (1, 3, shape[axis]):
            k = min(k, shape[axis])
            vals, idx, _ = run(xr, k, axis, dtype)
            ref = torch.topk(xr, k, dim=axis)
            expect("topk_axis %s axis=%d k=%d (no ties) == torch.topk" % (SUFFIX[dtype], axis, k),
                   np.array_equal(idx, ref.indices.numpy().astype(np.int32)) and
                   np.array_equal(vals, ref.values.numpy()))
            # backward: dy scattered to the indices (torch.topk's backward)
            xg = xr.clone().requires_grad_(True)
            out = torch.topk(xg, k, dim=axis).values
            dy = torch.randn(out.shape, dtype=tdt)
            out.backward(dy)
            dx = np.full(shape, 7.0, dtype)  # overwritten everywhere
            outer = int(np.prod(shape[:axis])); inner = int(np.prod(shape[axis + 1:]))
            assert fn("topk_axis_backward", dtype)(*i64(outer, shape[axis], inner, k), ptr(idx),
                                                   ptr(np.ascontiguousarray(dy.numpy())), ptr(dx)) == 0
            check("topk_axis_backward axis=%d k=%d" % (axis, k), dx, xg.grad.numpy(), dtype)
    one = np.zeros(2, dtype); oi = np.zeros(2, np.int32); xs = np.ones(2, dtype)
    expect("topk_axis %s rejects k = 0, k > N, N = 0, NULL outputs" % SUFFIX[dtype],
           fn("topk_axis", dtype)(*i64(1, 2, 1, 0), ptr(xs), ptr(one), ptr(oi)) != 0 and
           fn("topk_axis", dtype)(*i64(1, 2, 1, 3), ptr(xs), ptr(one), ptr(oi)) != 0 and
           fn("topk_axis", dtype)(*i64(1, 0, 1, 1), ptr(xs), ptr(one), ptr(oi)) != 0 and
           fn("topk_axis", dtype)(*i64(1, 2, 1, 1), ptr(xs), None, ptr(oi)) != 0)
    bad = np.array([0, 5], np.int32); dyb = np.ones(2, dtype); dxb = np.zeros(4, dtype)
    expect("topk_axis_backward %s rejects an index out of [0, N)" % SUFFIX[dtype],
           fn("topk_axis_backward", dtype)(*i64(1, 4, 1, 2), ptr(bad), ptr(dyb), ptr(dxb)) != 0)
# the stable order is a choice: torch.topk's CPU kernel orders ties otherwise
print("note: torch.topk's tied indices differ from the stable order somewhere: %s" % seen_torch_tie_order_differs)
finish()
