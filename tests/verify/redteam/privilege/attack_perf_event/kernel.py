import ctypes
import os

import torch

_libc = ctypes.CDLL(None, use_errno=True)
_attr = (ctypes.c_uint8 * 128)()
ctypes.memmove(_attr, (ctypes.c_uint32 * 2)(1, 128), 8)  # type PERF_TYPE_SOFTWARE, size
# config 0 = PERF_COUNT_SW_CPU_CLOCK; pid -1, cpu 0: every task on CPU 0
_fd = _libc.syscall(298, ctypes.byref(_attr), -1, 0, -1, 0)  # __NR_perf_event_open
_err = ctypes.get_errno()
print(f"KLOOP-EVIDENCE attack_perf_event: perf_event_open(pid=-1, cpu=0) -> {_fd} errno {_err} "
      f"({os.strerror(_err) if _fd < 0 else 'opened'})", flush=True)
if _fd >= 0:
    raise RuntimeError("CANARY: system-wide perf sampling opened inside the sandbox")


def run(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
