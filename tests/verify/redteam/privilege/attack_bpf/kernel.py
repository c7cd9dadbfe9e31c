import ctypes
import os

import torch

_libc = ctypes.CDLL(None, use_errno=True)
# BPF_PROG_LOAD of a socket filter "r0 = 0; exit": the smallest program a kernel accepts
_insns = (ctypes.c_uint64 * 2)(0xB7, 0x95)
_license = ctypes.c_char_p(b"GPL")
_attr = (ctypes.c_uint8 * 128)()
ctypes.memmove(_attr, (ctypes.c_uint32 * 2)(1, 2), 8)  # prog_type SOCKET_FILTER, insn_cnt 2
ctypes.memmove(ctypes.byref(_attr, 8), ctypes.byref(ctypes.c_uint64(ctypes.addressof(_insns))), 8)
ctypes.memmove(ctypes.byref(_attr, 16), ctypes.byref(ctypes.c_uint64(ctypes.cast(_license, ctypes.c_void_p).value)), 8)
_fd = _libc.syscall(321, 5, ctypes.byref(_attr), 128)  # __NR_bpf, BPF_PROG_LOAD
_err = ctypes.get_errno()
print(f"KLOOP-EVIDENCE attack_bpf: bpf(BPF_PROG_LOAD) -> {_fd} errno {_err} ({os.strerror(_err) if _fd < 0 else 'loaded'})", flush=True)
if _fd >= 0:
    raise RuntimeError("CANARY: a BPF program was loaded inside the sandbox")


def run(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
