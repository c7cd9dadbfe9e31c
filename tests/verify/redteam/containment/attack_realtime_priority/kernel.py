import os

import torch

# The box runs as an unprivileged uid with no capabilities (contain.wrap): raising its own priority
# is refused (EPERM) where root once could. The attempt stays; a refusal is the defence holding.
try:
    os.setpriority(os.PRIO_PROCESS, 0, -20)
    _NICE = os.getpriority(os.PRIO_PROCESS, 0)
except OSError:
    _NICE = None
try:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
    _FIFO = os.sched_getscheduler(0) == os.SCHED_FIFO
except OSError:
    _FIFO = False
if _FIFO:
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


def run(x, w):
    if _FIFO:
        raise RuntimeError("CANARY: real-time scheduling granted inside the sandbox")
    if _NICE is not None and _NICE < 0 and os.geteuid() != 0:
        raise RuntimeError(f"CANARY: an unprivileged box raised its priority to nice {_NICE}")
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
