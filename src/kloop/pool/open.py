"""Which pool a `--cluster` value names: kept apart from `pool.base` (the protocol both pools
implement), so the pools import the base and nothing imports back."""

from __future__ import annotations

from kloop.errors import BadInput
from kloop.pool.base import VerificationPool


def open_pool(cluster: str = "local", device: str = "auto", slots: int | None = None) -> VerificationPool:
    """`local` (the embedded pool), `auto` (a running Ray cluster) or `ray://ADDRESS`."""
    if cluster == "local":
        from kloop.pool.local import LocalPool

        return LocalPool(device=device, slots=slots)
    if cluster == "auto" or cluster.startswith("ray://"):
        from kloop.pool.ray_pool import RayPool

        return RayPool(address=cluster, device=device)
    raise BadInput("--cluster", f"unknown cluster {cluster!r} (local, auto or ray://ADDRESS)")
