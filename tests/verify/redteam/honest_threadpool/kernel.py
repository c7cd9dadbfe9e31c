import threading

import torch


def _rows(x, w, y, lo, hi):
    part = x[lo:hi]
    y[lo:hi] = part * torch.rsqrt(part.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def run(x, w, y):
    n = x.shape[0]
    mid = n // 2
    workers = [threading.Thread(target=_rows, args=(x, w, y, 0, mid)),
               threading.Thread(target=_rows, args=(x, w, y, mid, n))]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
