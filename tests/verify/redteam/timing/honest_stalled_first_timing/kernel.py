import sys
import time

import torch

# An honest kernel on a host that stalls it through one timing: every timed call of the first nine
# batches (the first workload's warm-up and its 8 rounds) loses 3 ms off the CPU, as a box does
# when the machine pages, reclaims or holds it for reasons of its own. Nothing later stalls.
_batches = 0


def run(x, w, y):
    global _batches
    caller = sys._getframe(1)
    if caller.f_code.co_name == "_run_batch":  # a timed call; `i` is its index in the batch
        if caller.f_locals["i"] == 0:
            _batches += 1
        if _batches <= 9:
            if _batches == 1 and caller.f_locals["i"] == 0:
                print("KLOOP-STALL first timing stalled", flush=True)
            time.sleep(0.003)
    y.copy_(x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w)
