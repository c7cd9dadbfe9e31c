import torch


def run(x, w, y):
    w64 = w.double()
    for i in range(x.shape[0]):
        row = x[i].double()
        y[i] = (row * torch.rsqrt(row.square().mean() + 1e-6) * w64).float()
