import subprocess
import sys

import torch

# a helper in its own session that computes without pause: its CPU is not the call's, and it must
# neither pass unnoticed nor outlive the box
HELPER = "while True:\n    pass\n"
subprocess.Popen([sys.executable, "-c", HELPER, "kloop-redteam-helper-busy"], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
