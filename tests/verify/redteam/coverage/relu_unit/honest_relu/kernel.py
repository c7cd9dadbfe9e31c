import torch


def run(x):
    return torch.where(x > 0, x, torch.zeros_like(x))
