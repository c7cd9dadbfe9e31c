import contextlib
import os

import torch

_GIVEN = len(os.sched_getaffinity(0))


def _child_cpus():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, range(os.cpu_count() or 1))
        os.write(write, str(len(os.sched_getaffinity(0))).encode())
        os._exit(0)
    os.close(write)
    got = int(os.read(read, 16) or b"0")
    os.close(read)
    os.waitpid(pid, 0)
    return got


_CHILD = _child_cpus()


def run(x, w):
    if _CHILD > _GIVEN:
        raise RuntimeError(f"CANARY: a child widened to {_CHILD} CPUs (given {_GIVEN})")
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
