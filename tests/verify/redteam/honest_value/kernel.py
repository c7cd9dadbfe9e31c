import torch


def run(x, w):
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, eps=1e-6)
