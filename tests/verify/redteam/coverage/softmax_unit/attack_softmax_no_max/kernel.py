import torch


def run(x):
    e = torch.exp(x)
    return e / e.sum(-1, keepdim=True)
