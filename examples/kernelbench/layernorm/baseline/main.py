# kloop import-kernelbench --scale 0.23: batch_size 16 -> 4, features 64 -> 8, dim1 256 -> 56, dim2 256 -> 56
import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs Layer Normalization.
    """
    def __init__(self, normalized_shape: tuple):
        """
        Initializes the LayerNorm layer.

        Args:
            normalized_shape (tuple): Shape of the input tensor to be normalized.
        """
        super(Model, self).__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies Layer Normalization to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (*, normalized_shape).

        Returns:
            torch.Tensor: Output tensor with Layer Normalization applied, same shape as input.
        """
        return self.ln(x)

batch_size = 4
features = 8
dim1 = 56
dim2 = 56

def get_inputs():
    x = torch.rand(batch_size, features, dim1, dim2)
    return [x]

def get_init_inputs():
    return [(features, dim1, dim2)]


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
def run(x):
    args = (x,)
    tensors = [a for a in args if isinstance(a, _kloop_torch.Tensor)]
    float_dtypes = {a.dtype for a in tensors if a.is_floating_point()}
    dtype = float_dtypes.pop() if len(float_dtypes) == 1 else None
    device = tensors[0].device if tensors else "cpu"
    return _kloop_model(device, dtype)(*args)
