import os
import sys

import torch

# Correct in every call the supervisor checks one by one, then the process ends in its first timed
# call (called from the sandbox's batch loop): the supervisor must say so at once, not wait out the
# call's time limit, and must not read the batch as a measurement.


def run(x, w, y):
    if sys._getframe(1).f_code.co_name == "_run_batch":
        print("KLOOP-ATTACK exit: leaving in a timed call", flush=True)
        os._exit(0)
    y.copy_(x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w)
