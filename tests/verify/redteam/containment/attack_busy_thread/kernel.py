import threading
import time

import torch

_STARTED = []


def _work():
    # computes for ever: everything it does happens after the call that started it has returned
    acc = torch.zeros(64)
    while True:
        t = time.thread_time()
        while time.thread_time() - t < 0.05:
            acc += 1.0


def run(x, w):
    if not _STARTED:
        _STARTED.append(threading.Thread(target=_work, daemon=True, name="kloop-redteam-busy"))
        _STARTED[0].start()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
