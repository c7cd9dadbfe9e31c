# kloop import-kernelbench --scale 0.072: N 4096 -> 288
import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a single square matrix multiplication (C = A * B)
    """
    def __init__(self):
        super(Model, self).__init__()
    
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """
        Performs the matrix multiplication.

        Args:
            A (torch.Tensor): Input matrix A of shape (N, N).
            B (torch.Tensor): Input matrix B of shape (N, N).

        Returns:
            torch.Tensor: Output matrix C of shape (N, N).
        """
        return torch.matmul(A, B)

N = 288

def get_inputs():
    A = torch.rand(N, N)
    B = torch.rand(N, N)
    return [A, B]

def get_init_inputs():
    return []  # No special initialization inputs needed


# ---- added by `kloop task import-kernelbench`: the FlashInfer-Trace entry point ----
import torch as _kloop_torch

_KLOOP_SEED = 0
_kloop_models = {}


def _kloop_model(device, dtype):
    """Model(*get_init_inputs()) built under a fixed seed, so every caller gets the same weights."""
    key = (str(device), dtype)
    if key not in _kloop_models:
        with _kloop_torch.random.fork_rng(devices=[]):
            _kloop_torch.manual_seed(_KLOOP_SEED)
            model = Model(*get_init_inputs())
        model = model.to(device=device, dtype=dtype) if dtype is not None else model.to(device)
        _kloop_models[key] = model.eval()
    return _kloop_models[key]


@_kloop_torch.no_grad()
def run(A, B):
    args = (A, B,)
    tensors = [a for a in args if isinstance(a, _kloop_torch.Tensor)]
    float_dtypes = {a.dtype for a in tensors if a.is_floating_point()}
    dtype = float_dtypes.pop() if len(float_dtypes) == 1 else None
    device = tensors[0].device if tensors else "cpu"
    return _kloop_model(device, dtype)(*args)
