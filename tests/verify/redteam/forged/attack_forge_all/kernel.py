import ctypes
import gc
import os
import threading
import time
from pathlib import Path

import torch

# the harness runs as __main__ (python -m kloop.verify.sandbox): find its objects by class name
_harness = next(o for o in gc.get_objects() if type(o).__name__ == "Harness" and hasattr(o, "run"))
_policy = next(o for o in gc.get_objects() if type(o).__name__ == "SandboxPolicy")
_tried = []
_libc = ctypes.CDLL(None, use_errno=True)
for _path in _policy.deny:  # the sealed task's paths, straight from the harness's own policy
    try:  # through Python (the audit hook records it) ...
        _tried.append(f"read {_path}: {len(os.listdir(_path)) if os.path.isdir(_path) else len(Path(_path).read_text())}")
    except OSError as exc:
        _tried.append(f"python open {_path}: {type(exc).__name__}")
    _fd = _libc.open(_path.encode(), os.O_RDONLY)  # ... and through libc, around the hook: the kernel answers
    _tried.append(f"libc open {_path}: {_fd} errno {ctypes.get_errno()}")
    if _fd >= 0 and not os.path.isdir(_path):
        raise RuntimeError(f"CANARY: read the sealed task file {_path}")
_run = _harness.run


def _forged_run(req, tensors):
    reply, out = _run(req, tensors)
    if reply.get("ok"):  # the supervisor's own field for changed inputs, claimed empty
        reply.update(inputs_changed=[], new_threads=[], violations=[])
    return reply, out


_harness.run = _forged_run
_harness._new_threads = lambda: []
_harness._violations = lambda: []
_policy.violations.clear()


def _spin():
    # work after every reply (an idle thread is no longer counted): computes 20 ms in every 25
    while True:
        t = time.thread_time()
        while time.thread_time() - t < 0.02:
            pass
        time.sleep(0.005)


threading.Thread(target=_spin, daemon=True, name="kloop-forge-bg").start()
print("KLOOP-EVIDENCE attack_forge_all: " + "; ".join(_tried) + "; reports forged; background thread started; "
      "policy violations cleared", flush=True)


def run(x, w):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    x.zero_()  # clobbers its input
    return y
