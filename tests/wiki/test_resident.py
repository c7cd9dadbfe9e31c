"""`kloop wiki serve`: a resident search answers `kloop wiki search` with the bytes the search itself prints.

Real processes throughout: the server is the `kloop` console script, the searches are `kloop wiki search`
as a user types them, and an ingest runs in a third process while the server holds the wiki open.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kloop.wiki.resident import socket_path
from tests.wiki.conftest import GitRepo

KLOOP = Path(sys.executable).with_name("kloop")


def _kloop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(KLOOP), *args], capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def wiki(tmp_path: Path) -> Path:
    db = tmp_path / "wiki.sqlite"
    assert _kloop("wiki", "ingest", "cards", "--db", str(db)).returncode == 0  # a wiki of kloop's shipped cards
    return db


@pytest.fixture
def server(wiki: Path) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen([str(KLOOP), "wiki", "serve", "--db", str(wiki)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not socket_path(wiki).exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    yield proc
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)
    assert not socket_path(wiki).exists()  # it cleans up after itself


def _stop(server: subprocess.Popen[str]) -> str:
    """Stop a server as Ctrl-C does; what it printed."""
    server.send_signal(signal.SIGINT)
    return server.communicate(timeout=30)[0]


SEARCHES = [
    ("bank conflicts in shared memory", "-k", "3"),
    ("tensor core gemm on mi300", "--vendor", "amd", "--json"),
    ("warp specialization", "--no-aliases", "-k", "2"),
]


def test_the_server_prints_what_the_search_prints(wiki: Path) -> None:
    alone = [_kloop("wiki", "search", *s, "--db", str(wiki)) for s in SEARCHES]
    proc = subprocess.Popen([str(KLOOP), "wiki", "serve", "--db", str(wiki)], stdout=subprocess.PIPE, text=True)
    try:
        while not socket_path(wiki).exists():
            assert proc.poll() is None
            time.sleep(0.05)
        served = [_kloop("wiki", "search", *s, "--db", str(wiki)) for s in SEARCHES]
    finally:
        proc.send_signal(signal.SIGINT)
        log, _ = proc.communicate(timeout=30)
    assert f"served {len(SEARCHES)} searches" in log  # the server answered them, not a search in-process
    assert all(a.returncode == 0 and a.stdout.strip() for a in alone)
    assert [(s.returncode, s.stdout, s.stderr) for s in served] == [(a.returncode, a.stdout, a.stderr) for a in alone]


def test_a_bad_search_is_the_same_one_line_through_the_server(wiki: Path, server: subprocess.Popen[str]) -> None:
    for bad in (("x", "-k", "0"), ("x", "--vendor", "intel"), ("x", "--kind", "tweet")):
        served = _kloop("wiki", "search", *bad, "--db", str(wiki))
        assert served.returncode == 2 and served.stdout == ""
        assert served.stderr.startswith("kloop: error: ") and served.stderr.count("\n") == 1, served.stderr
    assert server.poll() is None  # and it keeps serving
    assert "served 3 searches" in _stop(server)  # the server raised them, not a search in-process


def test_an_ingest_by_another_process_is_searched_at_once(wiki: Path, server: subprocess.Popen[str], repo: GitRepo) -> None:
    question = "zigzag ring dequantization"
    assert "zigzag" not in _kloop("wiki", "search", question, "--db", str(wiki)).stdout
    repo.commit("zigzag ring dequantization for the decode kernel",
                {"csrc/decode.cu": "__global__ void zigzag_ring_dequant(float* o) { o[0] = 1.f; }\n"})
    assert _kloop("wiki", "ingest", "git", str(repo.path), "--repo", "kernels", "--db", str(wiki)).returncode == 0
    assert "zigzag ring dequantization for the decode kernel" in _kloop("wiki", "search", question, "--db", str(wiki)).stdout
    assert "served 2 searches" in _stop(server)  # both answered by the server that held the wiki open


def test_a_second_server_is_refused_and_a_stale_socket_is_no_server(wiki: Path, server: subprocess.Popen[str]) -> None:
    second = _kloop("wiki", "serve", "--db", str(wiki))
    assert second.returncode == 2 and "a wiki server already answers here" in second.stderr
    assert server.poll() is None and _kloop("wiki", "search", "bank conflicts", "--db", str(wiki)).stdout  # unharmed
    server.send_signal(signal.SIGKILL)  # dies without cleaning up: its socket file stays, nobody listens
    server.wait(timeout=30)
    assert socket_path(wiki).exists()
    found = _kloop("wiki", "search", "bank conflicts", "--db", str(wiki), "-k", "1")
    assert found.returncode == 0 and found.stdout.strip()  # searched in-process
    socket_path(wiki).unlink()  # what a killed server leaves is the user's to remove (the fixture checks cleanup)


def test_a_wiki_too_deep_for_a_socket_beside_it_is_served_all_the_same(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60) / "wiki.sqlite"  # beside it, the socket's path would pass 108 bytes
    deep.parent.mkdir(parents=True)
    assert _kloop("wiki", "ingest", "cards", "--db", str(deep)).returncode == 0
    alone = _kloop("wiki", "search", "bank conflicts", "--db", str(deep), "-k", "2")
    proc = subprocess.Popen([str(KLOOP), "wiki", "serve", "--db", str(deep)], stdout=subprocess.PIPE, text=True)
    try:
        while not socket_path(deep).exists():
            assert proc.poll() is None
            time.sleep(0.05)
        assert socket_path(deep).parent != deep.parent
        served = _kloop("wiki", "search", "bank conflicts", "--db", str(deep), "-k", "2")
    finally:
        proc.send_signal(signal.SIGINT)
        log, _ = proc.communicate(timeout=30)
    assert "served 1 searches" in log
    assert served.stdout == alone.stdout and served.returncode == 0 and served.stdout
