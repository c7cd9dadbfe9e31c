"""Boxes forked from the fork server hold exactly what boxes started by exec hold, and no more.

Both launch modes run here side by side: the box's credentials, capability sets, seccomp mode and
namespaces are read from the kernel (/proc), not from anything the box or the server says. The
server itself must hold no secret and no second thread, and nothing it forked may outlive it.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from kloop.verify import forkserver
from kloop.verify.contain import namespaces_available, privilege_drop_available
from kloop.verify.process import SandboxFailure, SandboxProcess, _start_fork_server

pytestmark = pytest.mark.own_fork_server  # whose process a box is, is what these tests read
CONTAINED = pytest.mark.skipif(not (namespaces_available() and privilege_drop_available()),
                               reason="needs root, setpriv and namespaces (the containment both modes share)")  # fmt: skip
FIELDS = ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")


def _status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    fields = dict(line.split(":", 1) for line in lines if ":" in line)
    return {k: " ".join(fields[k].split()) for k in FIELDS if k in fields}


def _box_facts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> dict[str, object]:
    monkeypatch.setenv("KLOOP_FORK_SERVER", "1" if mode == "fork" else "0")
    box = SandboxProcess(
        device="cpu", threads=1, memory_limit_mb=1024, log_path=tmp_path / f"{mode}.txt"
    ).start()
    try:
        box.wait_ready()
        pid = box.sandbox_pid()
        assert pid is not None and box.launch is not None and box.launch.forked is (mode == "fork")
        status = _status(pid)
        uid = str(box.launch.uid)
        return {
            "status": {k: v.replace(uid, "UID") for k, v in status.items()},
            "namespaces": {
                ns: os.readlink(f"/proc/{pid}/ns/{ns}") != os.readlink(f"/proc/self/ns/{ns}")
                for ns in ("pid", "net", "mnt", "ipc", "uts")
            },  # fmt: skip
            "in_its_cgroups": box.containment is not None and pid in box.containment.pids(),
            "pid_inside": box.wait_ready()["pid"],
            "cwd": os.readlink(f"/proc/{pid}/cwd") == str(box.workdir),
            "named": Path(f"/proc/{pid}/comm").read_text().strip()
            == (forkserver.BOX_NAME if mode == "fork" else "python"),
            "fds": sorted(_kind(os.readlink(f"/proc/{pid}/fd/{fd}")) for fd in os.listdir(f"/proc/{pid}/fd")),
        }
    finally:
        box.close()


@CONTAINED
def test_a_forked_box_holds_what_an_execd_box_holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    forked, execd = (_box_facts(tmp_path, monkeypatch, mode) for mode in ("fork", "exec"))
    assert forked == execd
    status = forked["status"]
    assert isinstance(status, dict)
    assert status["Uid"] == status["Gid"] == "UID UID UID UID" and status["Groups"] == ""
    assert {status[k] for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")} == {"0000000000000000"}
    assert status["NoNewPrivs"] == "1" and status["Seccomp"] == "2"
    assert forked["namespaces"] == dict.fromkeys(("pid", "net", "mnt", "ipc", "uts"), True)
    assert forked["in_its_cgroups"] and forked["cwd"] and forked["pid_inside"] == 1


@CONTAINED
def test_the_server_holds_no_secret_and_one_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KLOOP_SEED_SECRET", "qzxw-forkserver-secret")
    server = _start_fork_server("cpu", 1)
    try:
        deadline = time.monotonic() + 300
        while server.ready is None and server.alive() and time.monotonic() < deadline:
            server.wait_for_news(0.5)
        assert server.ready is not None and server.ready["threads"] == 1
        environ = Path(f"/proc/{server.proc.pid}/environ").read_bytes()
        assert b"qzxw-forkserver-secret" not in environ and b"KLOOP_SEED_SECRET" not in environ
        assert f"{forkserver.OWNER_ENV}={os.getpid()}".encode() in environ  # an orphan says whose it was
    finally:
        server.close()


@CONTAINED
def test_nothing_forked_outlives_the_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The supervisor dies or hangs up: the server ends, and its launchers and boxes with it."""
    monkeypatch.setenv("KLOOP_FORK_SERVER", "1")
    server = _start_fork_server("cpu", 1)
    box = SandboxProcess(device="cpu", threads=1, memory_limit_mb=1024, log_path=tmp_path / "log.txt")
    monkeypatch.setattr("kloop.verify.process._FORK_SERVERS.get", lambda device, threads: server)
    box.start()
    try:
        box.wait_ready()
        launcher, inside = box.proc.pid if box.proc else None, box.sandbox_pid()
        assert launcher is not None and inside is not None
        server.close()
        deadline = time.monotonic() + 30
        while (
            any(forkserver._alive(p) and not _zombie(p) for p in (launcher, inside))
            and time.monotonic() < deadline
        ):
            time.sleep(0.1)
        assert not any(forkserver._alive(p) and not _zombie(p) for p in (launcher, inside))
    finally:
        box.close()


def _kind(target: str) -> str:
    """What an open descriptor is, without its inode number (`socket:[123]` -> `socket`)."""
    return target.split(":[", 1)[0]


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


@pytest.mark.parametrize("mode", ["fork", "exec"])
def test_a_box_closed_before_its_hello_is_gone_at_once(
    mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A spare closed right after its start: the kill must reach a launcher that has only just been forked."""
    monkeypatch.setenv("KLOOP_FORK_SERVER", "1" if mode == "fork" else "0")
    for n in range(3):
        box = SandboxProcess(
            device="cpu", threads=1, memory_limit_mb=1024, log_path=tmp_path / f"{n}.txt"
        ).start()
        closing = threading.Thread(target=box.close, daemon=True)
        closing.start()
        closing.join(60)  # a kill that missed the launcher waits for an exit that never comes
        assert not closing.is_alive()
        assert box.proc is not None and box.proc.poll() is not None


@CONTAINED
def test_a_dead_server_fails_the_box_it_never_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No fork, no verdict from thin air: the box reads as never started, and closing it neither hangs nor raises."""
    monkeypatch.setenv("KLOOP_FORK_SERVER", "1")
    server = _start_fork_server("cpu", 1)
    server.proc.kill()
    server.proc.wait()
    monkeypatch.setattr("kloop.verify.process._FORK_SERVERS.get", lambda device, threads: server)
    box = SandboxProcess(device="cpu", threads=1, memory_limit_mb=1024, log_path=tmp_path / "log.txt").start()
    try:
        with pytest.raises(SandboxFailure) as failure:
            box.wait_ready()
        assert failure.value.kind == "died" and "never started" in failure.value.detail
    finally:
        box.close()
        server.close()


def _ready(server: forkserver.ForkServer) -> dict[str, object]:
    deadline = time.monotonic() + 300
    while server.ready is None and server.alive() and time.monotonic() < deadline:
        server.wait_for_news(0.5)
    assert server.ready is not None, server.stderr_tail
    return server.ready


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


@CONTAINED
def test_a_shared_server_forks_for_another_supervisor_and_kills_only_what_it_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$KLOOP_FORK_SERVERS: a supervisor that finds a server forking its boxes uses it; hanging up kills
    its own launchers and boxes, not the server; a supervisor that would fork other boxes gets none."""
    from kloop.verify.process import SHARED_SERVERS_ENV, start_shared_fork_server

    monkeypatch.setenv("KLOOP_FORK_SERVER", "1")
    folder = tmp_path / "servers"
    shared = start_shared_fork_server(folder)
    try:
        assert shared.proc is not None and (folder.stat().st_mode & 0o777) == 0o700
        _ready(shared)
        monkeypatch.setenv(SHARED_SERVERS_ENV, str(folder))
        client = _start_fork_server("cpu", 1)
        assert client.proc is None and _ready(client)["pid"] == shared.proc.pid  # connected, nothing started
        monkeypatch.setattr("kloop.verify.process._FORK_SERVERS.get", lambda device, threads: client)
        box = SandboxProcess(device="cpu", threads=1, memory_limit_mb=1024, log_path=tmp_path / "log.txt").start()
        try:
            assert box.wait_ready()["pid"] == 1
            launcher, inside = box.proc.pid if box.proc else None, box.sandbox_pid()
            assert launcher is not None and inside is not None and _parent(launcher) == shared.proc.pid
            client.close()  # the supervisor hangs up (or dies)
            deadline = time.monotonic() + 30
            while any(forkserver._alive(p) and not _zombie(p) for p in (launcher, inside)) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert not any(forkserver._alive(p) and not _zombie(p) for p in (launcher, inside))
            assert shared.alive()
        finally:
            box.close()
        # a box environment that differs in one passed-through variable: not this server's boxes
        monkeypatch.setenv("LANG", "xx_XX.kloop-test")
        other = _start_fork_server("cpu", 1)
        try:
            assert other.proc is not None  # started its own
        finally:
            other.close()
    finally:
        shared.close()


@CONTAINED
def test_a_server_of_another_user_or_in_an_open_folder_is_never_used(tmp_path: Path) -> None:
    """A listener another uid planted (it would fork "boxes" running its own code and decide this user's
    verdicts) or one in a folder others can enter is refused before a word is exchanged."""
    import socket

    expect = {"python": "x", "env": {}, "fixed_layout": True}
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    path = mine / "cpu-1.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(str(path))  # bound by this user, in this user's closed folder ...
    pid = os.fork()
    if pid == 0:  # ... but listening (and answering) as another uid: SO_PEERCRED names the listener
        try:
            os.setgid(65534)
            os.setuid(65534)
            listener.listen(4)
            conn, _ = listener.accept()
            conn.sendmsg([b'{"op": "ready", "pid": 1, "threads": 1, "identity": {"python": "x", "env": {}, "fixed_layout": true}}'])
            time.sleep(5)
        finally:
            os._exit(0)
    try:
        time.sleep(0.5)
        assert forkserver.ForkServer.connect(path, expect, timeout_s=5) is None
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        listener.close()
    # the same impostor answered by this uid is believed (the check above is the uid, not the message)
    path.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(str(path))
    listener.listen(4)
    try:
        accepted: list[socket.socket] = []

        def answer() -> None:
            try:
                conn, _ = listener.accept()
            except OSError:  # the listener closed: the client never connected (the refused case below)
                return
            accepted.append(conn)
            conn.sendmsg([b'{"op": "ready", "pid": 1, "threads": 1, "identity": {"python": "x", "env": {}, "fixed_layout": true}}'])

        threading.Thread(target=answer, daemon=True).start()
        server = forkserver.ForkServer.connect(path, expect, timeout_s=5)
        assert server is not None
        server.close()
        os.chmod(mine, 0o755)  # a folder others can enter: refused before connecting
        threading.Thread(target=answer, daemon=True).start()
        assert forkserver.ForkServer.connect(path, expect, timeout_s=5) is None
    finally:
        listener.close()
        for conn in accepted:
            conn.close()


@CONTAINED
def test_a_shared_server_takes_over_the_socket_a_dead_one_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server killed with SIGKILL leaves its socket file; the next one in that folder still starts."""
    from kloop.verify.process import start_shared_fork_server

    folder = tmp_path / "servers"
    first = start_shared_fork_server(folder)
    _ready(first)
    assert first.proc is not None
    first.proc.kill()
    first.proc.wait()
    first.close()
    assert (folder / "cpu-1.sock").is_socket()
    second = start_shared_fork_server(folder)
    try:
        assert _ready(second)["threads"] == 1
    finally:
        second.close()
