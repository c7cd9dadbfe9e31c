"""Conv2d + ReLU + bias on the weights the task passes in (imported with --weights-as-inputs).

No seed, no module: the task's weights arrive as inputs after `x`, in the order the definition
lists them (`bias`, `conv_weight`, `conv_bias`), so the solution only has to compute.
"""

import torch
import torch.nn.functional as F


def run(x, bias, conv_weight, conv_bias):
    with torch.no_grad():
        return F.conv2d(x, conv_weight, conv_bias).relu_().add_(bias)
