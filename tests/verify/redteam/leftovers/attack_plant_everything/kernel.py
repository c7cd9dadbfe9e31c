import ctypes
import os

import torch

_libc = ctypes.CDLL(None, use_errno=True)
IPC_CREAT, KEY = 0o1000, 0x6B6C6F6F  # "kloo"
_tried = []


def _call(what, rc):
    err = ctypes.get_errno()
    _tried.append(f"{what} -> {rc} errno {err} ({os.strerror(err) if rc < 0 else 'made'})")
    return rc


_call("shmget", _libc.shmget(KEY, 4096, IPC_CREAT | 0o666))
_call("msgget", _libc.msgget(KEY, IPC_CREAT | 0o666))
_call("semget", _libc.semget(KEY, 1, IPC_CREAT | 0o666))
# add_key("user", "kloop-redteam-key", ..., KEY_SPEC_USER_KEYRING = -4)
_call("add_key(user keyring)", _libc.syscall(248, b"user", b"kloop-redteam-key", b"planted", 7, -4))
_call("add_key(session keyring)", _libc.syscall(248, b"user", b"kloop-redteam-key", b"planted", 7, -3))
for _path in ("/dev/kloop-redteam-planted", "/tmp/kloop-redteam-planted", "/dev/shm/kloop-redteam-planted"):
    _fd = _libc.open(_path.encode(), os.O_WRONLY | os.O_CREAT, 0o666)  # libc: around the audit hook, the kernel answers
    if _fd >= 0:
        os.write(_fd, b"planted")
        os.close(_fd)
        _tried.append(f"write {_path}: written")
    else:
        _err = ctypes.get_errno()
        _tried.append(f"write {_path}: errno {_err} ({os.strerror(_err)})")
print("KLOOP-EVIDENCE attack_plant_everything: " + "; ".join(_tried), flush=True)


def run(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
