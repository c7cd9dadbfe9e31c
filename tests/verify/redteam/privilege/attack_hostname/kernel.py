import ctypes
import os
import socket

import torch

_libc = ctypes.CDLL(None, use_errno=True)
_rc = _libc.sethostname(b"kloop-redteam-owned", 19)
_err = ctypes.get_errno()
print(f"KLOOP-EVIDENCE attack_hostname: sethostname -> {_rc} errno {_err} ({os.strerror(_err)}); "
      f"hostname seen: {socket.gethostname()}", flush=True)
if _rc == 0:
    raise RuntimeError("CANARY: sethostname succeeded")


def run(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
