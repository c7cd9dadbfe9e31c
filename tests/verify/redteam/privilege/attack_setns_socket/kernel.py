import ctypes
import fcntl
import os
import stat

import torch

SIOCGSKNS, CLONE_NEWNET = 0x894C, 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)
_tried = []
for _name in os.listdir("/proc/self/fd"):
    try:
        _fd = int(_name)
        if not stat.S_ISSOCK(os.fstat(_fd).st_mode):
            continue
        _ns = fcntl.ioctl(_fd, SIOCGSKNS)
    except OSError as exc:
        _tried.append(f"fd {_name}: SIOCGSKNS errno {exc.errno} ({exc.strerror})")
        continue
    _rc = _libc.setns(_ns, CLONE_NEWNET)
    _tried.append(f"fd {_name}: SIOCGSKNS gave fd {_ns}, setns -> {_rc} errno {ctypes.get_errno()}")
    if _rc == 0:
        raise RuntimeError("CANARY: entered the host network namespace through an inherited socket")
_own = os.open("/proc/self/ns/net", os.O_RDONLY)
_rc = _libc.setns(_own, CLONE_NEWNET)
_tried.append(f"setns(own netns) -> {_rc} errno {ctypes.get_errno()}")
_rc = _libc.unshare(CLONE_NEWNET)
_tried.append(f"unshare(CLONE_NEWNET) -> {_rc} errno {ctypes.get_errno()}")
print("KLOOP-EVIDENCE attack_setns_socket: " + "; ".join(_tried), flush=True)


def run(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
