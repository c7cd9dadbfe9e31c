import gc
import time

import torch


def _slow(x, w):
    # the honest path is deliberately slower than the baseline, so a speedup can only come from the trick
    out = None
    for _ in range(6):
        out = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    return out


def _burn(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _inflate_noop_batches(harness):
    """Make the harness's no-op batches expensive, so a larger 'harness cost' would be credited to us."""
    real = harness._run_batch

    def run_batch(count, noop):
        if noop:
            _burn(0.05)
            print("KLOOP-ATTACK calibration: burned 50 ms in a no-op batch", flush=True)
        return real(count, noop)

    harness._run_batch = run_batch


for obj in gc.get_objects():
    try:
        if type(obj).__name__ == "Harness":
            _inflate_noop_batches(obj)
    except Exception:
        continue


def run(x, w, y):
    y.copy_(_slow(x, w))
