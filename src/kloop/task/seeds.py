"""Seed derivation, written once: every seed kloop uses is a child of one secret seed.

The supervisor's secret seed derives one seed per workload, per held-out draw, per timed call;
each input derives its own from those. sha256 keeps children independent of one another, and
63 bits keep them valid for `torch.Generator.manual_seed` and `random.Random`.
"""

from __future__ import annotations

import hashlib

__all__ = ["derive_seed"]


def derive_seed(seed: int | str, label: str | None = None) -> int:
    """A 63-bit seed for one purpose (`label`) from a parent seed, or from a secret string alone."""
    text = str(seed) if label is None else f"{seed}:{label}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") >> 1
