"""nncc_max_axis_* and nncc_max_axis_backward_* against PyTorch 1.13:
torch.max(x, dim) (values, indices: the first of equal maxima) and its
backward (dy to the selected element only, not torch.amax's even split),
on rows with ties, a NaN (counted as the largest, the first NaN), values or
indices alone (the other NULL), every axis of a rank-3 tensor, and the
argument checks (NNCC_K_EINVAL = nonzero)."""
import sys

import numpy as np
import torch

from nncc_testing.ckernels import SUFFIX, check, expect, finish, i64, load, ptr

lib = load(sys.argv[1])
torch.manual_seed(4)


def fn(name, dtype):
    return getattr(lib, "nncc_%s_%s" % (name, SUFFIX[dtype]))


for dtype in (np.float32, np.float64):
    tdt = torch.float32 if dtype == np.float32 else torch.float64
    shape = (3, 6, 4)
    # small integers: many ties along every axis
    x = torch.randint(0, 3, shape).to(tdt)
    x[1, 2, 3] = float("nan")
    x[2, 4, 0] = float("nan")
    x[2, 5, 0] = float("nan")
    for axis in range(3):
        outer = int(np.prod(shape[:axis])); n = shape[axis]; inner = int(np.prod(shape[axis + 1:]))
        xs = np.ascontiguousarray(x.numpy())
        ref = torch.max(x, axis)
        vals = np.zeros(ref.values.shape, dtype)
        idx = np.zeros(ref.values.shape, np.int32)
        assert fn("max_axis", dtype)(*i64(outer, n, inner), ptr(xs), ptr(vals), ptr(idx)) == 0
        expect("max_axis %s axis=%d indices == torch.max(dim).indices" % (SUFFIX[dtype], axis),
               np.array_equal(idx, ref.indices.numpy().astype(np.int32)))
        expect("max_axis %s axis=%d values == torch.max(dim).values (NaN included)" % (SUFFIX[dtype], axis),
               np.array_equal(vals, ref.values.numpy(), equal_nan=True))
        expect("max_axis %s axis=%d indices == torch.argmax" % (SUFFIX[dtype], axis),
               np.array_equal(idx, torch.argmax(x, axis).numpy().astype(np.int32)))
        only_idx = np.full(ref.values.shape, -1, np.int32)
        only_val = np.zeros(ref.values.shape, dtype)
        assert fn("max_axis", dtype)(*i64(outer, n, inner), ptr(xs), None, ptr(only_idx)) == 0
        assert fn("max_axis", dtype)(*i64(outer, n, inner), ptr(xs), ptr(only_val), None) == 0
        expect("max_axis %s axis=%d NULL values / NULL indices" % (SUFFIX[dtype], axis),
               np.array_equal(only_idx, idx) and np.array_equal(only_val, vals, equal_nan=True))
        # backward on the tie rows (no NaN: a finite x of small integers)
        xf = torch.randint(0, 3, shape).to(tdt).requires_grad_(True)
        dy = torch.randn(torch.max(xf, axis).values.shape, dtype=tdt)
        torch.max(xf, axis).values.backward(dy)
        dx = np.full(shape, 7.0, dtype)  # overwritten everywhere
        assert fn("max_axis_backward", dtype)(*i64(outer, n, inner), ptr(np.ascontiguousarray(xf.detach().numpy())),
                                              ptr(np.ascontiguousarray(dy.numpy())), ptr(dx)) == 0
        check("max_axis_backward axis=%d (ties: the first index)" % axis, dx, xf.grad.numpy(), dtype)
        amax = xf.detach().clone().requires_grad_(True)
        torch.amax(amax, axis).backward(dy)
        if not torch.equal(amax.grad, xf.grad):  # the rows with ties differ from amax's split
            expect("max_axis_backward %s axis=%d differs from torch.amax's even split on ties"
                   % (SUFFIX[dtype], axis), not np.allclose(dx, amax.grad.numpy()))
    one = np.zeros(1, dtype); oi = np.zeros(1, np.int32); xs1 = np.ones(1, dtype)
    expect("max_axis %s rejects N = 0 and both outputs NULL" % SUFFIX[dtype],
           fn("max_axis", dtype)(*i64(1, 0, 1), ptr(xs1), ptr(one), ptr(oi)) != 0 and
           fn("max_axis", dtype)(*i64(1, 1, 1), ptr(xs1), None, None) != 0)
finish()
