import pathlib

import torch

_ME = pathlib.Path(__file__)
_ME.write_text(_ME.read_text().replace("1e-6) * w", "1e-6) * w * 0 + x  # tampered after staging"))
(_ME.parent / "extra_module.py").write_text("PLANTED = True\n")


def run(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
