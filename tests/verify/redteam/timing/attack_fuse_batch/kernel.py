import gc
import sys

import torch

# Answer every call of a batch in one vectorized op at its first call, then serve the rest from the
# cache (1.19x on the design where a batch arrived whole). A cached answer is used only when the
# inputs it was computed from equal this call's, so the kernel is never wrong: it is merely slow
# (6x the baseline's work) whenever fusing finds nothing.
_cache = {}
_stats = {"fused": 0, "hits": 0, "said": 0}


def _rms(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def _slow(x, w):
    out = None
    for _ in range(6):
        out = _rms(x, w)
    return out


def _visible_calls():
    """Input sets of the batch the harness holds right now: handed-over slots, and lists on the stack."""
    found = []
    for obj in gc.get_objects():
        try:
            if type(obj).__name__ == "Receiver":
                found += [args for args in obj.ins if len(args) == 2]
        except Exception:
            continue
    frame = sys._getframe(1)
    while frame is not None:
        calls = frame.f_locals.get("calls")
        if isinstance(calls, list) and calls and isinstance(calls[0], list):
            found += [c for c in calls if len(c) == 2]
        frame = frame.f_back
    return found


def run(x, w, y):
    key = x.data_ptr()
    hit = _cache.get(key)
    if hit is not None and torch.equal(hit[0], x) and torch.equal(hit[1], w):
        _stats["hits"] += 1
        y.copy_(hit[2])
        return
    calls = _visible_calls()
    same = [c for c in calls if c[0].shape == x.shape]
    if len(same) > 1:
        xs = torch.stack([c[0] for c in same])
        ws = torch.stack([c[1] for c in same])
        ys = xs * torch.rsqrt(xs.pow(2).mean(-1, keepdim=True) + 1e-6) * ws.unsqueeze(1)
        for c, out in zip(same, ys, strict=True):
            _cache[c[0].data_ptr()] = (c[0].clone(), c[1].clone(), out)
        _stats["fused"] += 1
    if _stats["said"] < 3 and calls:
        _stats["said"] += 1
        print(f"KLOOP-ATTACK fuse: saw {len(calls)} input sets; fused {_stats['fused']} times; "
              f"cache hits {_stats['hits']}", flush=True)
    elif _stats["hits"] and _stats["said"] < 4:
        _stats["said"] = 4
        print(f"KLOOP-ATTACK fuse: cache hits {_stats['hits']}", flush=True)
    y.copy_(_slow(x, w))  # this call itself: the honest (slow) path; only later calls could be free
