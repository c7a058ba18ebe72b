"""nncc.torch.Module: a compiled nncc model as a torch.nn.Module.

Parameters are torch Parameters under the model's PyTorch names (so
state_dict / load_state_dict / torch.save work unchanged). The forward runs
the generated kernels through a torch.autograd.Function whose backward is the
library's vector-Jacobian product, so the module composes with other torch
layers, any torch optimizer and DistributedDataParallel. Inputs, parameters,
outputs and gradients are handed to the library without copies (ABI 5 bind).
The module runs where its parameters are: on the CPU, or after .cuda() /
.to("cuda") on the GPU, with CUDA tensors bound in place and the work on
PyTorch's current stream (ABI 6; the library must be compiled for CUDA,
target="cuda" or "all", and with a model that trains on CUDA)."""
import os

import torch

from . import _abi
from .errors import Error
from .library import Library

_TORCH_DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
                 "bfloat16": torch.bfloat16,
                 "int64": torch.int64, "int32": torch.int32, "int16": torch.int16,
                 "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool}
_FLOAT = ("float32", "float64", "float16")


class _Group(torch.nn.Module):
    """A container for the dotted parts of parameter names ("encoder" in
    "encoder.weight_ih_l0")."""

    def forward(self, *args):
        raise Error("UNSUPPORTED", "a parameter group of an nncc module is not callable")


class _Held:
    """A context checked out of a Module's pool for one forward/backward; goes
    back when released or when the autograd graph that holds it is freed."""

    def __init__(self, module, context):
        self.module, self.context = module, context

    def release(self):
        if self.context is not None:
            self.module._release(self.context)
            self.context = None

    def __del__(self):
        self.release()


class _Apply(torch.autograd.Function):
    @staticmethod
    def forward(ctx, module, needs_grad, *tensors):
        lib = module._lib
        n = len(lib.inputs)
        device = module._device()
        held = _Held(module, module._context(device))
        c = held.context
        if device.type == "cuda":
            c.set_cuda_stream(torch.cuda.current_stream(device).cuda_stream)
        converted, dims = [], {}
        for spec, t in zip(lib.inputs, tensors[:n]):
            t = t.detach().to(device=device, dtype=_TORCH_DTYPES[spec.dtype]).contiguous()
            converted.append(t)
            c.bind(_abi.BIND_INPUT, spec.name, t.data_ptr(), spec.dtype, tuple(t.shape))
            dims.update({d: s for d, s in zip(spec.shape, t.shape) if isinstance(d, str)})
        module._bind_params(c, tensors[n:])
        outputs = []
        for spec in lib.outputs:
            o = torch.empty(spec.concrete(dims), dtype=_TORCH_DTYPES[spec.dtype], device=device)
            c.bind(_abi.BIND_OUTPUT, spec.name, o.data_ptr(), spec.dtype, tuple(o.shape))
            outputs.append(o)
        training = module.training
        if training:
            module._step += 1
            c.set_step(module._step)  # fresh dropout masks per training forward
            c.forward_train()
        else:
            c.forward()
        if not (training and needs_grad):
            held.release()
        ctx.nncc = (module, held, converted, dims, training,
                    [(t.dtype, t.device) for t in tensors[:n]], device)
        for spec, o in zip(lib.outputs, outputs):
            if spec.dtype not in _FLOAT:
                ctx.mark_non_differentiable(o)
        return tuple(outputs)

    @staticmethod
    def backward(ctx, *grad_outputs):
        module, held, converted, dims, training, in_types, device = ctx.nncc
        lib = module._lib
        if not training:
            raise Error("UNSUPPORTED", "backward through an eval-mode forward of '%s': the "
                        "library differentiates its training-mode function; call "
                        "module.train() before the forward" % lib.name)
        c = held.context
        if c is None:
            raise Error("INVALID_ARGUMENT", "backward of '%s' ran twice through the same "
                        "forward (retain_graph is not supported)" % lib.name)
        try:
            if device.type == "cuda":
                c.set_cuda_stream(torch.cuda.current_stream(device).cuda_stream)
            by_name = {spec.name: g for spec, g in zip(lib.outputs, grad_outputs)}
            keep = []
            for spec in lib.cotangents:
                out = spec.name[len("cotangent."):]
                g = by_name.get(out)
                shape = spec.concrete(dims)
                g = torch.zeros(shape, dtype=_TORCH_DTYPES[spec.dtype], device=device) \
                    if g is None else \
                    g.detach().to(device=device, dtype=_TORCH_DTYPES[spec.dtype]).contiguous()
                keep.append(g)
                c.bind(_abi.BIND_COTANGENT, spec.name, g.data_ptr(), spec.dtype, tuple(g.shape))
            param_grads = []
            for spec in lib.params:
                g = torch.empty(spec.shape, dtype=_TORCH_DTYPES[spec.dtype], device=device)
                c.bind(_abi.BIND_GRAD, "grad." + spec.name, g.data_ptr(), spec.dtype, spec.shape)
                param_grads.append(g)
            input_grads = {}
            for spec in lib.input_grads:
                g = torch.empty(spec.concrete(dims), dtype=_TORCH_DTYPES[spec.dtype],
                                device=device)
                c.bind(_abi.BIND_GRAD, spec.name, g.data_ptr(), spec.dtype, tuple(g.shape))
                input_grads[spec.name[len("grad."):]] = g
            c.backward()
        finally:
            held.release()
        grads = []
        for spec, (dtype, dev), need in zip(lib.inputs, in_types, ctx.needs_input_grad[2:]):
            g = input_grads.get(spec.name)
            grads.append(g.to(device=dev, dtype=dtype) if g is not None and need else None)
        return (None, None, *grads, *param_grads)


class Module(torch.nn.Module):
    """A compiled model (an nncc.Library from nncc.compile(..., grad=True,
    vjp=True), or the path of its lib<model>.so) as a torch.nn.Module.

    forward(*inputs, **inputs) takes the model's inputs in order or by name
    (torch tensors on the CPU, converted to the library's dtypes) and returns
    its outputs in order (the loss last if the model declares one), or the
    only output. In training mode it runs the library's training function
    (dropout active, fresh masks each call) and is differentiable w.r.t. the
    parameters and float inputs; in eval mode it runs the inference function.
    Parameters start from PyTorch's default initialisation drawn with `seed`,
    or from a safetensors file `weights`."""

    def __init__(self, lib, seed=0, weights=None):
        super().__init__()
        if not isinstance(lib, Library):
            lib = Library(os.fspath(lib))
        if not (lib.has_grad and lib.has_vjp):
            raise Error("UNSUPPORTED", "%s was compiled without the vector-Jacobian product: "
                        "nncc.compile(path, grad=True, vjp=True) (nncc compile --grad --vjp)"
                        % lib.name)
        self._lib = lib
        self._free = {}  # device type -> contexts
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
        held = _Held(self, self._context(torch.device("cpu")))
        with torch.no_grad():
            self._bind_params(held.context, self._parameter_list())
            if weights is not None:
                held.context.load_weights(weights)
            else:
                held.context.init_weights(seed)
        held.release()

    @property
    def library(self):
        return self._lib

    def _parameter_list(self):
        return [self.get_parameter(spec.name) for spec in self._lib.params]

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

    def _context(self, device):
        pool = self._free.setdefault(device.type, [])
        return pool.pop() if pool else self._lib.context(device.type)

    def _release(self, context):
        self._free.setdefault(context.target, []).append(context)

    def _bind_params(self, context, params):
        for spec, p in zip(self._lib.params, params):
            if p.device.type != context.target or p.dtype != _TORCH_DTYPES[spec.dtype] or \
                    not p.is_contiguous():
                raise Error("UNSUPPORTED", "parameter '%s' must stay a contiguous %s tensor "
                            "on the module's device (%s), got %s on %s"
                            % (spec.name, spec.dtype, context.target, p.dtype, p.device))
            context.bind(_abi.BIND_PARAM, spec.name, p.data_ptr(), spec.dtype, spec.shape)

    def forward(self, *args, **kwargs):
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
        if missing:
            raise Error("INVALID_ARGUMENT", "%s: missing inputs %s" % (
                self._lib.name, ", ".join(missing)))
        tensors = [torch.as_tensor(values[n]) for n in names]
        device = self._device()
        for n, t in zip(names, tensors):
            if t.device.type not in ("cpu", device.type):
                raise Error("UNSUPPORTED", "input '%s' is on %s, the module on %s"
                            % (n, t.device, device))
        params = self._parameter_list()
        needs_grad = torch.is_grad_enabled() and any(
            t.requires_grad for t in tensors + params)
        outputs = _Apply.apply(self, needs_grad, *tensors, *params)
        return outputs[0] if len(outputs) == 1 else outputs

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_lib"] = self._lib.path
        state["_free"] = {}
        return state

    def __setstate__(self, state):
        state["_lib"] = Library(state["_lib"])
        self.__dict__.update(state)

    def extra_repr(self):
        return "%s (%s)" % (self._lib.name, self._lib.path)
