import gc
import os

import torch

# Replace the sandbox's batch loop (the "time handler"): say `done` as soon as `go` arrives and
# do the work afterwards, so on a clock read at `done` the call looks free.


def _rms(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def _slow(x, w):
    out = None
    for _ in range(6):
        out = _rms(x, w)
    return out


def _replace(harness):
    def run_batch(count, noop):
        from kloop.verify.handoff import MSG

        rx = harness.receiver
        for i in range(count):
            os.read(rx.go, 8)
            os.write(rx.done, MSG.pack(i))  # done before the work
            if not noop:
                x, w = rx.ins[i]
                rx.outs[i][0].copy_(_slow(x, w))
        harness.report = {"ok": True, "times_ns": [0] * count, "bad": []}
        print(f"KLOOP-ATTACK handler: replaced batch loop ran {count} calls", flush=True)

    harness._run_batch = run_batch


for obj in gc.get_objects():
    try:
        if type(obj).__name__ == "Harness":
            _replace(obj)
            print("KLOOP-ATTACK handler: installed", flush=True)
    except Exception:
        continue


def run(x, w, y):
    y.copy_(_slow(x, w))
