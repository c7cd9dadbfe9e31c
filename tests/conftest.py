"""Suite-wide test settings: shared fixture paths, the gpu marker and the slowest files first."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = REPO.parent / "shared" / "fixtures"
EXAMPLES = REPO / "examples"
SLOW_FIRST = Path(__file__).resolve().parent / "slow_first.txt"


def _share_the_cores() -> None:
    """Each xdist worker's OpenMP pools (torch's, the references', every kloop it starts) get its share
    of the cores, not all of them.

    With two workers on two cores each worker's torch ran two threads: four busy threads on two
    cores, where every parallel region waits for its slowest thread. (A GDN prefill verification
    was seen at 25-29 s in the suite and 8-14 s alone; the share's own effect is not measured side
    by side.) kloop's own pool does the same by pinning each slot to its CPU set. An explicit
    OMP_NUM_THREADS wins; sandboxes set their own (`--threads`).
    """
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if workers > 1 and "OMP_NUM_THREADS" not in os.environ:
        os.environ["OMP_NUM_THREADS"] = str(max(1, len(os.sched_getaffinity(0)) // workers))


_share_the_cores()


def _has_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def _slow_first(items: list[pytest.Item]) -> None:
    """The files of tests/slow_first.txt first, slowest first; the rest after, in collection order.

    xdist hands tests out in collection order, so a 5-minute file collected last kept one worker
    busy for minutes after the other had finished. Whole files move (a file's tests stay together
    and in order, so module fixtures are set up once per worker as before); every worker sorts the
    same collection the same way, as xdist requires.
    """
    if not SLOW_FIRST.is_file():
        return
    lines = [line.strip() for line in SLOW_FIRST.read_text().splitlines()]
    rank = {path: i for i, path in enumerate(line for line in lines if line and not line.startswith("#"))}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order the slowest files first; skip `gpu`-marked tests where no device is present
    (bench/device_check.sh runs them)."""
    _slow_first(items)
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a GPU (run by bench/device_check.sh on the device machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    if not SHARED_FIXTURES.is_dir():
        pytest.skip("../shared/fixtures is not beside this checkout")
    return SHARED_FIXTURES


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    return EXAMPLES
