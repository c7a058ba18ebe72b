"""nncc.torch.Module: a compiled nncc model as a torch.nn.Module.

Parameters are torch Parameters under the model's PyTorch names (so
state_dict / load_state_dict / torch.save work unchanged). The forward runs
the generated kernels through a torch.autograd.Function whose backward is the
library's vector-Jacobian product, so the module composes with other torch
layers, any torch optimizer and DistributedDataParallel. Inputs, parameters,
outputs and gradients are handed to the library without copies (ABI 5 bind),
and only for the call that uses them: every binding but the parameters' is
undone before a context goes back to the module's pool, also when the call
fails. The module runs where its parameters are: on the CPU, or after .cuda()
/ .to("cuda") on the GPU, with CUDA tensors bound in place and the work on
PyTorch's current stream (ABI 6; the library must be compiled for CUDA,
target="cuda" or "all", and with a model that trains on CUDA). .double() /
.float() switch to the library of that precision (Library.with_precision).
With torch >= 2.4 the forward and backward are also torch.library custom ops
(nncc::forward, nncc::backward), which torch.compile traces without a graph
break (see _custom_ops)."""
import itertools
import os
import threading
import weakref

import torch

from . import _abi
from .errors import Error
from .library import Library

_TORCH_DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
                 "bfloat16": torch.bfloat16,
                 "int64": torch.int64, "int32": torch.int32, "int16": torch.int16,
                 "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool}
_FLOAT = ("float32", "float64", "float16", "bfloat16")
_PRECISIONS = {torch.float32: "f32", torch.float64: "f64"}


class _Group(torch.nn.Module):
    """A container for the dotted parts of parameter names ("encoder" in
    "encoder.weight_ih_l0")."""

    def forward(self, *args):
        raise Error("UNSUPPORTED", "a parameter group of an nncc module is not callable")


class _Held:
    """A context checked out of a Module's pool for one call (a forward, or a
    forward and its backward); back in the pool, with nothing of the call
    bound, when released or when the autograd graph that holds it is freed.

    bind() records what it binds (inputs, outputs, cotangents, gradients: the
    memory of the call), and release() unbinds exactly that. Parameters are
    bound on the context directly and stay bound in the pool: they are the
    module's own, bound again before each use and never read in between
    (unbinding one would copy its values into the context)."""

    def __init__(self, module, context, key):
        self.module, self.context, self.key = module, context, key
        self.bound = {}

    def bind(self, kind, name, tensor, dtype, shape):
        self.context.bind(kind, name, tensor.data_ptr(), dtype, shape)
        self.bound[(kind, name)] = dtype

    def unbind(self, kind, name):
        dtype = self.bound.pop((kind, name), None)
        if dtype is not None:
            self.context.bind(kind, name, None, dtype, ())

    def release(self):
        c, self.context = self.context, None
        if c is None:
            return
        try:
            for (kind, name), dtype in self.bound.items():
                c.bind(kind, name, None, dtype, ())
        except Exception:  # a context that cannot be cleaned is not reused
            c.close()
            return
        finally:
            self.bound = {}
        self.module._release(c, self.key)

    def __del__(self):
        try:
            self.release()
        except Exception:
            pass


def _convert_inputs(lib, tensors, device):
    """The inputs as contiguous tensors of the library's dtypes on `device`,
    and the symbolic dims they bind."""
    converted, dims, where = [], {}, {}
    for spec, t in zip(lib.inputs, tensors):
        t = t.detach().to(device=device, dtype=_TORCH_DTYPES[spec.dtype]).contiguous()
        converted.append(t)
        for d, s in zip(spec.shape, t.shape):
            if isinstance(d, str):
                if d in dims and dims[d] != s:
                    raise Error("SHAPE_MISMATCH", "%s: dim %s is %d in input '%s' (shape %s) "
                                "but %d in input '%s'" % (lib.name, d, s, spec.name,
                                                           list(t.shape), dims[d], where[d]))
                dims.setdefault(d, s)
                where.setdefault(d, spec.name)
    return converted, dims


def _run_forward(module, lib, held, device, converted, dims, params, training, step,
                 outputs=None, cotangents=None, grads=None):
    """Binds one call's tensors into context `c` and runs it: forward (eval),
    forward_train (training, with step's dropout masks), and with
    `cotangents` / `grads` given also backward. Returns the outputs (new
    tensors unless `outputs` is given)."""
    c = held.context
    if device.type == "cuda":
        c.set_cuda_stream(torch.cuda.current_stream(device).cuda_stream)
    for spec, t in zip(lib.inputs, converted):
        held.bind(_abi.BIND_INPUT, spec.name, t, spec.dtype, tuple(t.shape))
    module._bind_params(c, params, lib)
    if outputs is None:
        outputs = [torch.empty(spec.concrete(dims), dtype=_TORCH_DTYPES[spec.dtype],
                               device=device) for spec in lib.outputs]
    for spec, o in zip(lib.outputs, outputs):
        held.bind(_abi.BIND_OUTPUT, spec.name, o, spec.dtype, tuple(o.shape))
    if cotangents is not None:
        _bind_backward(lib, held, cotangents, grads)
    if training:
        c.set_step(step)  # fresh dropout masks per training forward, the same in a rerun
        c.forward_train()
    else:
        c.forward()
    if cotangents is not None:
        c.backward()
    return outputs


def _bind_backward(lib, held, cotangents, grads):
    for spec, g in zip(lib.cotangents, cotangents):
        held.bind(_abi.BIND_COTANGENT, spec.name, g, spec.dtype, tuple(g.shape))
    param_grads, input_grads = grads
    for spec, g in zip(lib.params, param_grads):
        held.bind(_abi.BIND_GRAD, "grad." + spec.name, g, spec.dtype, spec.shape)
    for spec, g in zip(lib.input_grads, input_grads):
        held.bind(_abi.BIND_GRAD, spec.name, g, spec.dtype, tuple(g.shape))


def _cotangents(lib, grad_outputs, dims, device):
    """The caller's cotangents in the library's order, dtype and layout
    (zeros for an output torch passed none for)."""
    by_name = {spec.name: g for spec, g in zip(lib.outputs, grad_outputs)}
    res = []
    for spec in lib.cotangents:
        g = by_name.get(spec.name[len("cotangent."):])
        shape = spec.concrete(dims)
        dtype = _TORCH_DTYPES[spec.dtype]
        if g is None:
            g = torch.zeros(shape, dtype=dtype, device=device)
        else:
            g = g.detach().to(device=device, dtype=dtype).expand(shape).contiguous()
        res.append(g)
    return res


def _grad_buffers(lib, dims, device):
    params = [torch.empty(spec.shape, dtype=_TORCH_DTYPES[spec.dtype], device=device)
              for spec in lib.params]
    inputs = [torch.empty(spec.concrete(dims), dtype=_TORCH_DTYPES[spec.dtype], device=device)
              for spec in lib.input_grads]
    return params, inputs


class _Apply(torch.autograd.Function):
    @staticmethod
    def forward(ctx, module, needs_grad, serving, *tensors):
        lib = module._library()
        if serving:
            lib = lib.serving()
        n = len(lib.inputs)
        device = module._device()
        training = module.training
        differentiated = training and needs_grad
        converted, dims = _convert_inputs(lib, tensors[:n], device)
        params = tensors[n:]
        step = 0
        if training:
            module._step += 1
            step = module._step
        held = module._checkout(lib, device)
        try:
            outputs = _run_forward(module, lib, held, device, converted, dims, params, training,
                                   step)
        except BaseException:
            held.release()
            raise
        # The residuals stay in the held context's arena until the backward;
        # nothing to keep when there will be none.
        if not differentiated:
            held.release()
            held = None
        # The backward reads the inputs, the parameters and (as residuals) the
        # outputs in place: saved, so that torch keeps them alive and refuses
        # a backward after one of them was modified in place.
        ctx.save_for_backward(*converted, *params, *outputs)
        ctx.nncc_param_ptrs = [p.data_ptr() for p in params]
        ctx.nncc = (module, lib, held, dims, training, step, device,
                    [(t.dtype, t.device) for t in tensors[:n]])
        for spec, o in zip(lib.outputs, outputs):
            if spec.dtype not in _FLOAT:
                ctx.mark_non_differentiable(o)
        return tuple(outputs)

    @staticmethod
    def backward(ctx, *grad_outputs):
        module, lib, held, dims, training, step, device, in_types = ctx.nncc
        if not training:
            raise Error("UNSUPPORTED", "backward through an eval-mode forward of '%s': the "
                        "library differentiates its training-mode function; call "
                        "module.train() before the forward" % lib.name)
        saved = ctx.saved_tensors
        n, m = len(lib.inputs), len(lib.params)
        converted, params, outputs = saved[:n], saved[n:n + m], saved[n + m:]
        cot = _cotangents(lib, grad_outputs, dims, device)
        grads = _grad_buffers(lib, dims, device)
        if held is not None and [p.data_ptr() for p in params] != ctx.nncc_param_ptrs:
            # The parameters moved since the forward (FSDP2 frees the gathered
            # parameters after the forward and gathers them anew, maybe
            # elsewhere, for the backward): the context's pointers are stale,
            # and binding the new ones discards the residuals; run again.
            held.release()
            held = None
        if held is not None and held.context is not None:
            # The forward's residuals are in this context: only the backward.
            try:
                c = held.context
                if device.type == "cuda":
                    c.set_cuda_stream(torch.cuda.current_stream(device).cuda_stream)
                _bind_backward(lib, held, cot, grads)
                c.backward()
            finally:
                held.release()
        else:
            # Forward again (same inputs, parameters and dropout masks) with the
            # cotangents bound, then backward: a second backward
            # (retain_graph=True), or parameters that moved.
            again = module._checkout(lib, device)
            try:
                scratch = [torch.empty_like(o) for o in outputs]
                _run_forward(module, lib, again, device, converted, dims, params,
                             True, step, outputs=scratch, cotangents=cot, grads=grads)
            finally:
                again.release()
        param_grads, input_grad_list = grads
        input_grads = {spec.name[len("grad."):]: g
                       for spec, g in zip(lib.input_grads, input_grad_list)}
        needs = ctx.needs_input_grad[3:]
        res = []
        for spec, (dtype, dev), need in zip(lib.inputs, in_types, needs[:n]):
            g = input_grads.get(spec.name)
            res.append(g.to(device=dev, dtype=dtype) if g is not None and need else None)
        res += [g if need else None for g, need in zip(param_grads, needs[n:])]
        return (None, None, None, *res)


class Module(torch.nn.Module):
    """A compiled model (an nncc.Library from nncc.compile(..., grad=True,
    vjp=True), or the path of its lib<model>.so) as a torch.nn.Module.

    forward(*inputs, **inputs) takes the model's inputs in order or by name
    (torch tensors, converted to the library's dtypes) and returns its
    outputs in order (the loss last if the model declares one), or the only
    output. Every symbolic dim (batch, sequence length, ...) may change from
    call to call. In training mode it runs the library's training function
    (dropout active, fresh masks each call) and is differentiable w.r.t. the
    parameters and float inputs, with or without a loss, the caller's
    gradients on every output (the loss included) driving the backward; in
    eval mode it runs the inference function. Parameters start from
    PyTorch's default initialisation drawn with `seed`, or from a
    safetensors file `weights`."""

    def __init__(self, lib, seed=0, weights=None):
        super().__init__()
        if not isinstance(lib, Library):
            lib = Library(os.fspath(lib))
        if not (lib.has_grad and lib.has_vjp):
            raise Error("UNSUPPORTED", "%s was compiled without the vector-Jacobian product: "
                        "nncc.compile(path, grad=True, vjp=True) (nncc compile --grad --vjp)"
                        % lib.name)
        self._lib = lib
        self._free = {}  # (library path, device) -> contexts with nothing of a call bound
        self._step = 0
        for spec in lib.params:
            *path, leaf = spec.name.split(".")
            owner = self
            for part in path:
                if part not in owner._modules:
                    owner.add_module(part, _Group())
                owner = owner._modules[part]
            owner.register_parameter(leaf, torch.nn.Parameter(
                torch.empty(spec.shape, dtype=_TORCH_DTYPES[spec.dtype])))
        held = self._checkout(lib, torch.device("cpu"))
        try:
            with torch.no_grad():
                self._bind_params(held.context, self._parameter_list(), lib)
                if weights is not None:
                    held.context.load_weights(weights)
                else:
                    held.context.init_weights(seed)
        finally:
            held.release()
        _register(self)

    @property
    def library(self):
        return self._lib

    def _parameter_list(self):
        return [self.get_parameter(spec.name) for spec in self._lib.params]

    def _float_dtype(self):
        dtypes = {p.dtype for p in self._parameter_list() if p.is_floating_point()}
        if len(dtypes) > 1:
            raise Error("INVALID_ARGUMENT", "the parameters of %s have several dtypes (%s)"
                        % (self._lib.name, ", ".join(sorted(map(str, dtypes)))))
        return dtypes.pop() if dtypes else None

    def _library(self):
        """The library for the parameters' dtype: float32 and float64 have
        one each (.float() / .double() switch between them)."""
        dtype = self._float_dtype()
        lib = self._lib
        if dtype is None or _PRECISIONS.get(dtype) == lib.precision or \
                (dtype == torch.bfloat16 and lib.precision == "bf16"):
            return lib
        if dtype not in _PRECISIONS:
            raise Error("UNSUPPORTED", "%s: nncc libraries are float32 or float64, the "
                        "parameters are %s (.float() or .double())" % (lib.name, dtype))
        lib = lib.with_precision(_PRECISIONS[dtype])
        self._lib = lib
        # Pooled contexts of the other library are dropped (they would only
        # be reused after a switch back, and hold that library's arenas).
        self._free = {k: v for k, v in self._free.items() if k[0] == lib.path}
        return lib

    def _apply(self, fn, *args, **kwargs):
        # .double() / .float() / .to(dtype): the library follows the
        # parameters' dtype (built on the first switch, cached after).
        result = super()._apply(fn, *args, **kwargs)
        dtype = self._float_dtype()
        if dtype in _PRECISIONS:
            self._library()
        return result

    def _device(self):
        """Where the module runs: its parameters' device (all on one)."""
        devices = {p.device for p in self._parameter_list()}
        if len(devices) > 1:
            raise Error("INVALID_ARGUMENT", "the parameters of %s are on several devices (%s)"
                        % (self._lib.name, ", ".join(sorted(map(str, devices)))))
        device = devices.pop() if devices else torch.device("cpu")
        if device.type not in ("cpu", "cuda"):
            raise Error("UNSUPPORTED", "nncc.torch runs on the CPU or CUDA, not on %s" % device)
        return device

    def _checkout(self, lib, device):
        key = (lib.path, str(device))
        pool = self._free.get(key)
        return _Held(self, pool.pop() if pool else lib.context(device.type), key)

    def _release(self, context, key):
        if context.lib is not self._lib:  # the module switched libraries
            context.close()
            return
        self._free.setdefault(key, []).append(context)

    def _bind_params(self, context, params, lib=None):
        lib = lib or self._lib
        for spec, p in zip(lib.params, params):
            if p.device.type != context.target or p.dtype != _TORCH_DTYPES[spec.dtype] or \
                    not p.is_contiguous():
                raise Error("UNSUPPORTED", "parameter '%s' must stay a contiguous %s tensor "
                            "on the module's device (%s), got %s on %s"
                            % (spec.name, spec.dtype, context.target, p.dtype, p.device))
            context.bind(_abi.BIND_PARAM, spec.name, p.data_ptr(), spec.dtype, spec.shape)

    def _inputs(self, args, kwargs):
        specs = self._lib.inputs
        names = [s.name for s in specs]
        if len(args) > len(specs):
            raise Error("INVALID_ARGUMENT", "%s takes %d inputs (%s), got %d" % (
                self._lib.name, len(specs), ", ".join(names), len(args)))
        values = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names:
                raise Error("NOT_FOUND", "%s has no input '%s' (inputs: %s)" % (
                    self._lib.name, k, ", ".join(names)))
            if k in values:
                raise Error("INVALID_ARGUMENT", "input '%s' given twice" % k)
            values[k] = v
        missing = [n for n in names if n not in values]
        # Eval mode serves without the inputs only the loss reads (ABI 9):
        # the outputs are then those of lib.serving(), the loss left out.
        targets = [s.name for s, needed in zip(specs, self._lib.inference_inputs) if not needed]
        serving = bool(missing) and not self.training and all(n in targets for n in missing)
        if serving:
            names = [n for n in names if n not in missing]
        elif missing:
            why = ""
            if not self.training and any(n not in targets for n in missing):
                why = " (in eval mode only %s may be left out)" % (
                    ", ".join(targets) if targets else "no input")
            elif self.training and all(n in targets for n in missing):
                why = " (training needs the loss's inputs; eval mode serves without them)"
            raise Error("INVALID_ARGUMENT", "%s: missing inputs %s%s" % (
                self._lib.name, ", ".join(missing), why))
        tensors = [torch.as_tensor(values[n]) for n in names]
        device = self._device()
        for n, t in zip(names, tensors):
            if t.device.type not in ("cpu", device.type):
                raise Error("UNSUPPORTED", "input '%s' is on %s, the module on %s"
                            % (n, t.device, device))
        return tensors, serving

    def forward(self, *args, **kwargs):
        tensors, serving = self._inputs(args, kwargs)
        params = self._parameter_list()
        ops = _custom_ops()
        if ops is not None and _use_custom_ops(tensors + params):
            outputs = ops.apply(self, tensors, params)
        else:
            needs_grad = torch.is_grad_enabled() and any(
                t.requires_grad for t in tensors + params)
            outputs = _Apply.apply(self, needs_grad, serving, *tensors, *params)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_lib"] = self._lib.__getstate__()
        state["_free"] = {}
        state.pop("_handle", None)
        return state

    def __setstate__(self, state):
        lib = state["_lib"]
        if isinstance(lib, str):  # saved by an earlier version: the path only
            lib = {"path": lib, "source": None, "compile_options": None}
        library = Library.__new__(Library)
        library.__setstate__(lib)
        state["_lib"] = library
        self.__dict__.update(state)
        _register(self)

    def extra_repr(self):
        return "%s (%s)" % (self._lib.name, self._lib.path)


# --------------------------------------------------------------------------
# torch.library custom ops (torch >= 2.4): nncc::forward and nncc::backward,
# so that torch.compile(fullgraph=True) traces a module without a graph
# break. The ops are functional: the module is named by an integer handle;
# nncc::forward draws the training step (dropout masks) itself and returns
# it as a last int64 output, which the autograd formula saves for
# nncc::backward; the backward runs the forward again with the cotangents
# bound, since no context can be held between two ops that AOTAutograd may
# schedule apart. Used while torch.compile traces; in eager mode the autograd
# Function above, which keeps the residuals instead
# (NNCC_TORCH_CUSTOM_OPS=1: the ops always, =0: never).
# --------------------------------------------------------------------------
_MODULES = weakref.WeakValueDictionary()
_NEXT_HANDLE = itertools.count(1)
_HANDLE_LOCK = threading.Lock()
_CUSTOM_OPS_ENV = os.environ.get("NNCC_TORCH_CUSTOM_OPS", "")


def _register(module):
    with _HANDLE_LOCK:
        handle = next(_NEXT_HANDLE)
    module.__dict__["_handle"] = handle
    _MODULES[handle] = module


def _module(handle):
    m = _MODULES.get(int(handle))
    if m is None:
        raise Error("NOT_FOUND", "nncc module handle %d is not alive" % int(handle))
    return m


def _torch_version():
    parts = []
    for p in torch.__version__.split("+")[0].split(".")[:2]:
        digits = "".join(itertools.takewhile(str.isdigit, p))
        parts.append(int(digits or 0))
    return tuple(parts)


def _use_custom_ops(tensors):
    if _OPS is None or _CUSTOM_OPS_ENV == "0":
        return False
    return _CUSTOM_OPS_ENV == "1" or torch.compiler.is_compiling()


def _custom_ops():
    return _OPS


def _served_if_short(lib, inputs):
    """The library, or its serving view when the call left out the inputs
    only the loss reads (Module._inputs decided so)."""
    return lib.serving() if len(inputs) != len(lib.inputs) else lib


def _build_custom_ops():
    from typing import List

    Tensor = torch.Tensor

    def symbolic_dims(lib, inputs):
        dims = {}
        for spec, t in zip(lib.inputs, inputs):
            for d, s in zip(spec.shape, t.shape):
                if isinstance(d, str):
                    dims.setdefault(d, s)
        return dims

    @torch.library.custom_op("nncc::forward", mutates_args=())
    def forward_op(handle: int, training: bool, inputs: List[Tensor],
                   params: List[Tensor]) -> List[Tensor]:
        module = _module(handle)
        lib = _served_if_short(module._library(), inputs)
        device = module._device()
        converted, dims = _convert_inputs(lib, inputs, device)
        step = 0
        if training:
            module._step += 1
            step = module._step
        held = module._checkout(lib, device)
        try:
            outputs = _run_forward(module, lib, held, device, converted, dims,
                                   [p.detach() for p in params], training, step)
        finally:
            held.release()
        return outputs + [torch.tensor(step, dtype=torch.int64)]

    @forward_op.register_fake
    def _(handle, training, inputs, params):
        lib = _served_if_short(_module(handle)._library(), inputs)
        dims = symbolic_dims(lib, inputs)
        like = params[0] if params else inputs[0]
        outs = [like.new_empty(spec.concrete(dims), dtype=_TORCH_DTYPES[spec.dtype])
                for spec in lib.outputs]
        return outs + [torch.empty((), dtype=torch.int64)]

    @torch.library.custom_op("nncc::backward", mutates_args=())
    def backward_op(handle: int, step: Tensor, inputs: List[Tensor], params: List[Tensor],
                    grad_outputs: List[Tensor]) -> List[Tensor]:
        module = _module(handle)
        lib = module._library()
        device = module._device()
        converted, dims = _convert_inputs(lib, inputs, device)
        cot = _cotangents(lib, grad_outputs, dims, device)
        grads = _grad_buffers(lib, dims, device)
        held = module._checkout(lib, device)
        try:
            scratch = [torch.empty(spec.concrete(dims), dtype=_TORCH_DTYPES[spec.dtype],
                                   device=device) for spec in lib.outputs]
            _run_forward(module, lib, held, device, converted, dims,
                         [p.detach() for p in params], True, int(step), outputs=scratch,
                         cotangents=cot, grads=grads)
        finally:
            held.release()
        param_grads, input_grad_list = grads
        by_name = {spec.name[len("grad."):]: g
                   for spec, g in zip(lib.input_grads, input_grad_list)}
        res = []
        for spec, t in zip(lib.inputs, inputs):
            g = by_name.get(spec.name)
            # Integer inputs: an empty placeholder (a custom op returns
            # tensors only); the autograd formula turns it into None.
            res.append(g.to(device=t.device, dtype=t.dtype) if g is not None
                       else t.new_empty((0,)))
        return res + param_grads

    @backward_op.register_fake
    def _(handle, step, inputs, params, grad_outputs):
        lib = _module(handle)._library()
        floats = {spec.name[len("grad."):] for spec in lib.input_grads}
        res = [torch.empty_like(t) if spec.name in floats else t.new_empty((0,))
               for spec, t in zip(lib.inputs, inputs)]
        return res + [torch.empty_like(p) for p in params]

    def setup_context(ctx, inputs, output):
        handle, training, ins, params = inputs
        ctx.handle, ctx.training, ctx.n_inputs = handle, training, len(ins)
        ctx.float_inputs = [t.is_floating_point() for t in ins]
        ctx.save_for_backward(output[-1], *ins, *params)

    def backward(ctx, grad_outputs):
        if not ctx.training:
            raise Error("UNSUPPORTED", "backward through an eval-mode forward of an nncc "
                        "module: call module.train() before the forward")
        step, *rest = ctx.saved_tensors
        ins, params = rest[:ctx.n_inputs], rest[ctx.n_inputs:]
        # No gradient for an output (or the step): zeros (expanded to the
        # output's shape when the cotangents are made).
        cots = [g if g is not None else torch.zeros((), dtype=torch.float32)
                for g in grad_outputs[:-1]]
        grads = backward_op(ctx.handle, step, list(ins), list(params), cots)
        in_grads = [g if f else None for g, f in zip(grads[:ctx.n_inputs], ctx.float_inputs)]
        return None, None, in_grads, list(grads[ctx.n_inputs:])

    forward_op.register_autograd(backward, setup_context=setup_context)

    class Ops:
        @staticmethod
        def apply(module, tensors, params):
            return forward_op(module._handle, bool(module.training), list(tensors),
                              list(params))[:-1]

    Ops.forward_op, Ops.backward_op = forward_op, backward_op
    return Ops


_OPS = None
if _torch_version() >= (2, 4) and hasattr(getattr(torch, "library", None), "custom_op"):
    try:
        _OPS = _build_custom_ops()
    except RuntimeError as e:  # e.g. a second copy of this package registered them first
        import warnings
        warnings.warn("nncc.torch: the torch.library custom ops are not registered (%s); "
                      "torch.compile will break the graph at nncc modules" % e)
