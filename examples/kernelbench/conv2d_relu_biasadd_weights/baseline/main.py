# kloop import-kernelbench --scale 0.23: batch_size 128 -> 24, in_channels 64 -> 8, out_channels 128 -> 24, height 128 -> 24, width 128 -> 24
import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a convolution, applies ReLU, and adds a bias term.
    """
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape)) 

    def forward(self, x):
        x = self.conv(x)
        x = torch.relu(x)
        x = x + self.bias
        return x

batch_size = 24
in_channels  = 8  
out_channels = 24  
height = width = 24
kernel_size = 3
bias_shape = (out_channels, 1, 1)

def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size, bias_shape]


# ---- added by `kloop task import-kernelbench --weights-as-inputs`: the FlashInfer-Trace entry point ----
import torch as _kloop_torch

_KLOOP_WEIGHTS = ['bias', 'conv.weight', 'conv.bias']
_kloop_modules = {}


def _kloop_module():
    """Model's structure; its tensors are replaced by the inputs on every call."""
    if "m" not in _kloop_modules:
        try:
            with _kloop_torch.device("meta"):
                model = Model(*get_init_inputs())
        except Exception:
            model = Model(*get_init_inputs())
        _kloop_modules["m"] = model.eval()
    return _kloop_modules["m"]


@_kloop_torch.no_grad()
def run(x, bias, conv_weight, conv_bias):
    state = dict(zip(_KLOOP_WEIGHTS, (bias, conv_weight, conv_bias,), strict=True))
    return _kloop_torch.func.functional_call(_kloop_module(), state, (x,), strict=True)
