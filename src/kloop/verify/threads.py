"""The supervisor's own tensor bookkeeping runs on one torch thread.

Comparisons, packing timed calls into their slots, copying outputs out, hashing-sized equality
tests: O(n) memory work on tensors of 32 k to a few M elements, just above torch's grain size,
so torch hands each op to its OpenMP pool. On a loaded 2-core machine every such parallel region
waits for a pool thread to be scheduled (and the pool spins against the sandboxes): measured at load
6, `compare` on a 200 x 256 output took 45 ms on 2 threads and 4.4 ms on one, packing 32 calls 186 ms
against 0.2 ms. One thread loses little on a quiet many-core machine (the work is memory-bound) and
never waits for another. The reference itself keeps torch's threads (it can be large compute).

Verifications run one per process (`kloop.pool.slot`), so toggling the process-wide setting is safe.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """torch on one intra-op thread inside the block; the previous setting after it (nests)."""
    import torch

    before = torch.get_num_threads()
    if before == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def single_threaded(func: F) -> F:
    """`func` runs under `one_thread()`."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with one_thread():
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
