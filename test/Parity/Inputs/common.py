"""Shared set-up of the parity scripts: paths, seeds, threads, helpers."""
import os

import numpy as np
import torch

import nncc_testing as nt  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))

torch.set_num_threads(1)
torch.manual_seed(0)
np.random.seed(0)


def model(name):
    """A parity model of Inputs/models (name without .nn) or a seed model path."""
    p = name if name.endswith(".nn") else os.path.join(HERE, "models", name + ".nn")
    return nt.Model(p)


def seed_model(name):
    return nt.Model(os.path.join(ROOT, "models", name + ".nn"))


def sd(module, prefix):
    """state_dict of a torch module under nncc's parameter path `prefix.`."""
    return nt.state_dict(module, prefix + ".")


def rand(*shape, scale=1.0):
    return (torch.randn(*shape) * scale).float()


def np32(t):
    return nt.to_numpy(t).astype(np.float32)


def lengths_mask(lengths, T):
    """[B, T] bool, True at valid steps."""
    return torch.arange(T)[None, :] < torch.as_tensor(lengths)[:, None]
