import threading
import time

import torch

_calls = []


def _note(started):
    # a deferred, trivial bookkeeping step (what a library's idle timer or a pool's late shutdown does)
    _calls.append(time.monotonic() - started)


def run(x, w):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    # asleep at the reply, ends ~5 ms later having done nothing of the call's work
    threading.Timer(0.005, _note, args=(time.monotonic(),)).start()
    if len(_calls) == 1:
        print(f"KLOOP-EVIDENCE honest_short_timer: a timer thread ran and ended {_calls[0] * 1e3:.1f} ms after "
              "its call returned", flush=True)
    return y
