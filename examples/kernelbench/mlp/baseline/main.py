# kloop import-kernelbench --scale 0.28: batch_size 128 -> 32, input_size 16384 -> 4584, layer_sizes[0] 16384 -> 4584, layer_sizes[1] 16384 -> 4584, output_size 8192 -> 2288
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self, input_size, layer_sizes, output_size):
        """
        :param input_size: The number of input features
        :param layer_sizes: A list of ints containing the sizes of each hidden layer
        :param output_size: The number of output features
        """
        super(Model, self).__init__()
        
        layers = []
        current_input_size = input_size
        
        for layer_size in layer_sizes:
            layers.append(nn.Linear(current_input_size, layer_size))
            layers.append(nn.ReLU())
            current_input_size = layer_size
        
        layers.append(nn.Linear(current_input_size, output_size))
        
        self.network = nn.Sequential(*layers)
    
    def forward(self, x):
        """
        :param x: The input tensor, shape (batch_size, input_size)
        :return: The output tensor, shape (batch_size, output_size)
        """
        return self.network(x)

# Test code
batch_size = 32
input_size = 4584
layer_sizes = [4584, 4584]
output_size = 2288

def get_inputs():
    return [torch.rand(batch_size, input_size)]

def get_init_inputs():
    return [input_size, layer_sizes, output_size]


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
