import os

import torch

_tried = []
for _path in ("/dev/loop-control", "/dev/loop0"):
    try:
        os.close(os.open(_path, os.O_RDWR))
        _tried.append(f"open {_path}: opened")
        raise RuntimeError(f"CANARY: {_path} is reachable in the sandbox")
    except OSError as exc:
        _tried.append(f"open {_path}: errno {exc.errno} ({exc.strerror})")
try:
    os.mknod(os.path.join(os.getcwd(), "loop7"), 0o600 | 0o060000, os.makedev(7, 7))  # S_IFBLK
    raise RuntimeError("CANARY: made a block device node")
except OSError as exc:
    _tried.append(f"mknod block 7:7: errno {exc.errno} ({exc.strerror})")
_tried.append("block devices in /dev: " + str(sorted(n for n in os.listdir("/dev") if os.path.exists(f"/dev/{n}")
                                                   and __import__("stat").S_ISBLK(os.stat(f"/dev/{n}").st_mode))))
print("KLOOP-EVIDENCE attack_loop_device: " + "; ".join(_tried), flush=True)


def run(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
