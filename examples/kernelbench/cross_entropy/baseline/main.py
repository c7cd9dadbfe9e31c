# kloop import-kernelbench --scale 0.039: batch_size 32768 -> 1272, num_classes 4096 -> 160
import torch
import torch.nn as nn

class Model(nn.Module):
    """
    A model that computes Cross Entropy Loss for multi-class classification tasks.

    Parameters:
        None
    """
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, predictions, targets):
        return torch.nn.functional.cross_entropy(predictions, targets)

batch_size = 1272
num_classes = 160
input_shape = (num_classes,)
dim = 1

def get_inputs():
    return [torch.rand(batch_size, *input_shape), torch.randint(0, num_classes, (batch_size,))]

def get_init_inputs():
    return []


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
def run(predictions, targets):
    args = (predictions, targets,)
    tensors = [a for a in args if isinstance(a, _kloop_torch.Tensor)]
    float_dtypes = {a.dtype for a in tensors if a.is_floating_point()}
    dtype = float_dtypes.pop() if len(float_dtypes) == 1 else None
    device = tensors[0].device if tensors else "cpu"
    return _kloop_model(device, dtype)(*args)
