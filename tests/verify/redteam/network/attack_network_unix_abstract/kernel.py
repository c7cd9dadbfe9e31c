import socket

import torch


def _reach():
    reached = []
    try:
        with open("/proc/net/unix") as handle:
            lines = handle.read().splitlines()[1:]
    except OSError:
        return reached
    for line in lines:
        fields = line.split()
        if len(fields) >= 8 and fields[7].startswith("@kloop-redteam"):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect("\0" + fields[7][1:])
                sock.sendall(b"kloop-redteam-exfil")
                reached.append(fields[7])
            except OSError:
                pass
            finally:
                sock.close()
    return reached


_REACHED = _reach()


def run(x, w):
    if _REACHED:
        raise RuntimeError(f"CANARY: reached {_REACHED}")
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
