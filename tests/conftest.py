"""Suite-wide test settings: shared fixture paths, the gpu marker, the slowest files first and one
fork server per worker for every verifier the suite starts."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
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


@pytest.fixture(scope="session", autouse=True)
def _one_fork_server_per_worker() -> Iterator[None]:
    """Every verifier this worker starts, in process or as a `kloop` subprocess, forks its CPU boxes
    from one server ($KLOOP_FORK_SERVERS) instead of importing torch into a server of its own.

    The suite starts about a hundred verifiers (each `kloop verify`, `kloop run` and pool slot is
    one); each server's imports cost 1.5-4 s of CPU on this machine. A verifier whose boxes would
    differ (another environment, interpreter or thread count) still starts its own: the server
    answers only for boxes identical to what the verifier would have forked. Tests about whose
    process a box is (leftovers after a signal, Ray node loss, the server itself) are marked
    `own_fork_server` and never see it.
    """
    from kloop.verify import forkserver
    from kloop.verify.contain import namespaces_available, privilege_drop_available
    from kloop.verify.process import SHARED_SERVERS_ENV, start_shared_fork_server

    if not forkserver.enabled("cpu") or not (namespaces_available() and privilege_drop_available()):
        yield
        return
    folder = Path(tempfile.mkdtemp(prefix="kloop-forksrv-"))
    server = start_shared_fork_server(folder)
    os.environ[SHARED_SERVERS_ENV] = str(folder)
    try:
        yield
    finally:
        os.environ.pop(SHARED_SERVERS_ENV, None)
        server.close()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(autouse=True)
def _own_fork_server_where_marked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test marked `own_fork_server` starts its verifiers' servers as a user's `kloop` would."""
    if request.node.get_closest_marker("own_fork_server") is not None:
        from kloop.verify.process import SHARED_SERVERS_ENV

        monkeypatch.delenv(SHARED_SERVERS_ENV, raising=False)
