import torch

# Exact at the smallest listed workload (batch 4), where coverage regimes once ran alone; at every
# other batch size eps is dropped: right on the declared [0, 1) draw, wrong on small rows and NaN on a
# zero row (issue 29: this PASSED when coverage ran on the smallest workload only).
_said = set()


def run(x):
    batch = x.shape[0]
    mean = x.pow(2).mean(-1, keepdim=True)
    y = x * torch.rsqrt(mean + 1e-5) if batch == 4 else x / mean.sqrt()
    magnitude = float(x.abs().max()) if x.numel() else 0.0
    key = (batch, f"{magnitude:.0e}")
    if key not in _said and len(_said) < 40:
        _said.add(key)
        path = "exact" if batch == 4 else "eps dropped"
        print(f"KLOOP-EVIDENCE attack_exact_on_smallest: batch {batch}: {path}; max |x| {magnitude:.3g}; "
              f"zero rows {int((x.abs().sum(-1) == 0).sum())}", flush=True)
    return y
