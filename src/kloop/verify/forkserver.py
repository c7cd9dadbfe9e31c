"""A fork server for sandboxes: torch is imported once, and every box is forked from that process.

A box started by exec (`contain.wrap`) spends most of its start importing torch: ~1.8 s of CPU on
this project's 2-core machine, paid twice a verification (candidate and baseline) and by every
test that verifies anything. Here one server process per (device, threads) imports torch and the
modules a box's first requests need, then waits. For each box it forks a launcher that does what
the exec chain does, in the same order, with system calls instead of programs:

    launcher (root, outside):  setsid, join the box's cgroups, unshare pid/net/mount/ipc/uts,
                               fork the box, wait for it, exit with its status
    box (pid 1 of its own):    mounts private, its own /proc, the setup script of `contain`
                               (/dev, /dev/shm, the reachable paths, hostname), then every
                               capability dropped from every set, groups cleared, an unprivileged
                               uid and gid, no_new_privs, the parent-death signal, its environment
                               and descriptors, and `sandbox.main` (seccomp first, as ever)

The server is not a sandbox and never runs candidate code: it holds no secret (it is started
with a box's environment), no seccomp filter (each box loads its own after the fork) and no
thread (a fork copies only the calling thread; it reports its thread count when ready). A box
cannot reach it: another pid and network namespace, and every descriptor but its channel, its
log and /dev/null closed. The server ends when the supervisor closes its control socket (or
dies), and every launcher and box dies with it (parent-death signals).

What differs from an exec'd box, and why it does not matter to a verdict: the box's address space
is a copy of the server's, so every box of a server has the same layout (what `setarch -R` gave
each exec'd box, the server is started under it too), and torch's pages already mapped are
charged to the server's memory cgroup until the box writes them. `KLOOP_FORK_SERVER=0` turns it
off; it is used for CPU boxes only (no GPU runtime was tried after a fork here).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# from <linux/sched.h>, <linux/mount.h>, <linux/prctl.h> and <linux/capability.h>
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = 0x20000, 0x4000000, 0x8000000, 0x20000000, 0x40000000  # fmt: skip
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_NAME, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 1, 15, 24, 38, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAP_VERSION_3 = 0x20080522
BOX_FD = 3
"""The channel's descriptor number inside a box."""
MAX_MESSAGE = 1 << 20

NO_HOME = Path("/nonexistent/kloop-fork-server")
"""The server's HOME and TMPDIR: nothing it does may write a file (each box gets its own folder)."""
OWNER_ENV = "KLOOP_FORK_SERVER_OF"
"""In the server's environment: the pid of the supervisor that started it."""
STDERR_TAIL = 4096
BOX_NAME, LAUNCHER_NAME, SERVER_NAME = "kloop-box", "kloop-launcher", "kloop-forksrv"
"""Process names (`comm`, what `ps` and psutil's `name()` show): a forked process keeps the server's command line."""

_libc = ctypes.CDLL(None, use_errno=True)


def _name(name: str) -> None:
    _libc.prctl(PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)


def enabled(device: str) -> bool:
    """Whether boxes for `device` start from a fork server here (CPU boxes, unless switched off)."""
    return device == "cpu" and os.environ.get("KLOOP_FORK_SERVER", "1") != "0"


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _prctl(option: int, arg: int = 0) -> None:
    _check(_libc.prctl(option, ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)),
           f"prctl {option}")  # fmt: skip


def _mount(source: str | None, target: str, fstype: str | None, flags: int) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(_libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), None), f"mount {target}")


# -- inside the server ------------------------------------------------------------------------


def drop_privilege(uid: int) -> None:
    """What `setpriv --reuid --regid --clear-groups --inh-caps=-all --ambient-caps=-all --bounding-set=-all
    --no-new-privs` does: nothing left to regain privilege with, in any capability set."""
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for cap in range(last + 1):
        _prctl(PR_CAPBSET_DROP, cap)
    _check(_libc.prctl(PR_CAP_AMBIENT, ctypes.c_ulong(PR_CAP_AMBIENT_CLEAR_ALL), ctypes.c_ulong(0),
                       ctypes.c_ulong(0), ctypes.c_ulong(0)), "clear ambient capabilities")  # fmt: skip
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)  # permitted and effective capabilities go with root's uids
    header = (ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable, twice (64 capability bits): all zero
    _check(_libc.capset(header, data), "capset")
    _prctl(PR_SET_NO_NEW_PRIVS, 1)


def _box(spec: dict[str, Any], channel_fd: int, log_fd: int) -> int:
    """The box: pid 1 of its namespace. Containment first, then the sandbox as if it had been exec'd."""
    _name(BOX_NAME)
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.dup2(channel_fd, BOX_FD)
    os.closerange(BOX_FD + 1, os.sysconf("SC_OPEN_MAX"))
    os.chdir(spec["workdir"])
    if spec["namespaces"]:
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        _mount("none", "/proc", None, MS_REC | MS_PRIVATE)
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        subprocess.run([spec["sh"], "-c", spec["setup"]], check=True, stdin=subprocess.DEVNULL,
                       env={"PATH": spec["env"].get("PATH", "/usr/bin:/bin")})  # fmt: skip
        os.chdir(spec["workdir"])  # the reachable copy the script moved into place
    if spec["uid"] is not None:
        drop_privilege(int(spec["uid"]))
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # after the uid change, which clears it
    os.environ.clear()
    os.environ.update(spec["env"])
    import tempfile

    tempfile.tempdir = None  # TMPDIR is the box's own dir now
    sys.argv = ["kloop.verify.sandbox", *spec["argv"]]
    sys.path.insert(0, spec["workdir"])  # where `python -m` run in the box's dir puts it
    from kloop.verify import sandbox

    return sandbox.main(spec["argv"])


def _launcher(spec: dict[str, Any], channel_fd: int, log_fd: int) -> int:
    """The box's cgroups and namespaces, then the box as a child; exit as it exits (setsid is done)."""
    _name(LAUNCHER_NAME)
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # with the server
    for procs in spec["procs"]:
        Path(procs).write_text(str(os.getpid()))
    if spec["namespaces"]:
        _check(
            _libc.unshare(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS), "unshare"
        )
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = _box(spec, channel_fd, log_fd)
        except BaseException as exc:  # noqa: BLE001 -- the box must never return into the server's loop
            with contextlib.suppress(Exception):
                os.write(2, f"kloop fork server: box setup failed: {type(exc).__name__}: {exc}\n".encode())
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code if isinstance(code, int) else 1)
    os.close(channel_fd)
    os.close(log_fd)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        os.kill(os.getpid(), os.WTERMSIG(status))  # as `unshare --fork`: die of the box's signal
    return os.waitstatus_to_exitcode(status)


def _spawn(spec: dict[str, Any], fds: list[int]) -> int:
    """Fork a launcher; return its pid once it leads its own session (a kill of its group reaches it)."""
    led_r, led_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setsid()  # its own process group: the supervisor kills launcher and box as one
            signal.set_wakeup_fd(-1)
            _close_all_but([*fds, 0, 1, 2])  # the server's control socket, its wake-up pipe, `led_w`
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            code = _launcher(spec, fds[0], fds[1])
        except BaseException as exc:  # noqa: BLE001
            with contextlib.suppress(Exception):
                os.write(fds[1], f"kloop fork server: launch failed: {type(exc).__name__}: {exc}\n".encode())
        finally:
            os._exit(code if isinstance(code, int) and code >= 0 else 1)
    os.close(led_w)
    while True:
        try:
            os.read(led_r, 1)  # end of file once the launcher has its group (or is dead)
            break
        except InterruptedError:
            continue
    os.close(led_r)
    for fd in fds:
        os.close(fd)
    return pid


def _close_all_but(keep: list[int]) -> None:
    last = 3
    for fd in sorted(set(k for k in keep if k >= 3)):
        os.closerange(last, fd)
        last = fd + 1
    os.closerange(last, os.sysconf("SC_OPEN_MAX"))


def _thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


def identity() -> dict[str, Any]:
    """What makes this server's boxes what a supervisor would have started itself: interpreter,
    environment (less the owner's pid) and address layout. A client that expects another gets none."""
    env = {k: v for k, v in os.environ.items() if k != OWNER_ENV}
    return {"python": sys.executable, "env": env, "fixed_layout": _fixed_layout()}


def _fixed_layout() -> bool:
    """Whether this process runs with ADDR_NO_RANDOMIZE (what `setarch -R` started it with)."""
    return bool(_libc.personality(ctypes.c_ulong(0xFFFFFFFF)) & 0x0040000)


def serve(control: socket.socket, listener: socket.socket | None = None) -> int:
    """Fork a launcher per `spawn`; report each launcher's exit to whoever asked for it; end when the
    starter hangs up.

    With `listener`, other supervisors of the same user may connect too
    (`kloop.verify.process.start_shared_fork_server`). Each
    connection owns the launchers it asked for: when it hangs up (its supervisor ended or died),
    they are killed, as the starter's are when the server ends.
    """
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    clients: dict[int, socket.socket] = {control.fileno(): control}
    owner: dict[int, int] = {}  # launcher pid -> the client's fd

    def send(client: socket.socket, msg: dict[str, Any]) -> None:
        with contextlib.suppress(OSError):  # a client that hung up is dropped when its end of file is read
            client.sendmsg([json.dumps(msg).encode()])

    def hello(client: socket.socket) -> None:
        send(client, {"op": "ready", "pid": os.getpid(), "threads": _thread_count(), "identity": identity()})

    hello(control)
    while True:
        waits = [*clients.values(), wake_r, *([listener] if listener is not None else [])]
        readable, _, _ = select.select(waits, [], [])
        if wake_r in readable:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 4096)
            while True:
                try:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                client = clients.get(owner.pop(pid, -1))
                if client is not None:
                    send(client, {"op": "exit", "pid": pid, "code": os.waitstatus_to_exitcode(status)})
        if listener is not None and listener in readable:
            with contextlib.suppress(OSError):
                conn, _ = listener.accept()
                clients[conn.fileno()] = conn
                hello(conn)
        for client in [c for c in clients.values() if c in readable]:
            data, fds, _flags, _addr = socket.recv_fds(client, MAX_MESSAGE, 2)
            if not data:
                if client is control:
                    return 0
                _hang_up(client, clients, owner)
                continue
            msg = json.loads(data)
            threads = _thread_count()
            if threads != 1:  # a fork would copy only this thread, and any lock another one held
                for fd in fds:
                    os.close(fd)
                send(client, {"op": "error", "id": msg["id"], "error": f"the fork server has {threads} threads"})
                continue
            pid = _spawn(msg["spec"], list(fds))
            owner[pid] = client.fileno()
            send(client, {"op": "spawned", "id": msg["id"], "pid": pid})


def _hang_up(client: socket.socket, clients: dict[int, socket.socket], owner: dict[int, int]) -> None:
    """A client is gone: its launchers (and, by their parent-death signal, its boxes) go with it."""
    fd = client.fileno()
    for pid in [p for p, f in owner.items() if f == fd]:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
        owner[pid] = -1  # reaped by the SIGCHLD loop, reported to nobody
    del clients[fd]
    client.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kloop.verify.forkserver")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--listen", type=Path, help="also accept this user's supervisors on this socket path")
    args = parser.parse_args(argv)
    control = socket.socket(fileno=args.fd)
    listener = _listen(args.listen) if args.listen else None
    _name(SERVER_NAME)
    # `-m` put the server's cwd first; a box puts its own dir there
    if sys.path and sys.path[0] in ("", os.getcwd()):
        sys.path.pop(0)
    import torch  # noqa: F401 -- what every box would import first

    from kloop.verify import sandbox

    sandbox.warm_imports()  # what its first requests import: once here, not in every box
    return serve(control, listener)


def _private_folder(folder: Path) -> bool:
    """Whether `folder` is this user's and closed to everyone else (mode 0700 or tighter)."""
    try:
        st = folder.stat()
    except OSError:
        return False
    return st.st_uid == os.getuid() and not st.st_mode & 0o077


def _listen(path: Path) -> socket.socket:
    """A listening socket only this user can reach: its folder must be this user's and closed to others."""
    if not _private_folder(path.parent):
        raise SystemExit(f"kloop fork server: {path.parent} must be owned by uid {os.getuid()} with mode 0700")
    if path.is_socket() and not _answers(path):  # left by a server that died: nobody listens on it
        path.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(str(path))
    listener.listen(16)
    return listener


def _answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as probe:
        try:
            probe.connect(str(path))
        except ConnectionRefusedError:
            return False
        except OSError:
            return True  # not ours to remove
    return True


# -- in the supervisor ------------------------------------------------------------------------


class ForkedBox:
    """A launcher forked by the server, with what the supervisor uses of a `Popen`."""

    def __init__(self, server: ForkServer, request_id: int, stdout: Any) -> None:
        self._server = server
        self._id = request_id
        self.stdout = stdout
        self.returncode: int | None = None
        self.error: str | None = None
        """Why no launcher was forked (the server died or refused), if so."""

    @property
    def pid(self) -> int:
        """The launcher's pid (its process group's id); waits for the server's fork the first time."""
        return self._server.pid_of(self._id)

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                self.returncode = self._server.exit_code(self.pid)
            except OSError as exc:  # never forked: nothing runs, nothing to kill
                self.error, self.returncode = str(exc), 1
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired("kloop fork server box", timeout or 0)
            self._server.wait_for_news(
                0.05 if deadline is None else max(0.0, min(0.05, deadline - time.monotonic()))
            )
        assert self.returncode is not None
        return self.returncode

    def leader(self) -> int | None:
        """The launcher's pid, or None where none was forked."""
        self.poll()
        return None if self.error else self.pid


class ForkServer:
    """The supervisor's handle on one server process (one per device and thread count)."""

    def __init__(self, *, argv_prefix: list[str], env: dict[str, str], listen: Path | None = None) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        extra = ["--listen", str(listen)] if listen is not None else []
        self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(
            [*argv_prefix, sys.executable, "-m", "kloop.verify.forkserver", "--fd", str(child.fileno()), *extra],
            cwd="/", env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            pass_fds=[child.fileno()], start_new_session=True,
        )  # fmt: skip
        child.close()
        self.stderr_tail = b""
        """The end of what the server wrote to stderr (why it died, when it did)."""
        threading.Thread(target=self._drain_stderr, daemon=True, name="kloop-fork-server-stderr").start()
        self._attach(parent)

    @classmethod
    def connect(cls, path: Path, expect: dict[str, Any], timeout_s: float = 300.0) -> ForkServer | None:
        """A server another process started (`--listen`), if it answers and forks what `expect`
        (`identity()`) describes: the same interpreter, box environment and address layout. Else None.

        Only a server of this user, in a folder of this user's that nobody else can enter: a server
        another user planted in a shared folder would fork "boxes" running its own code and decide
        this user's verdicts. The folder's owner and mode are checked, and the listening process's
        uid as the kernel reports it (SO_PEERCRED)."""
        if not _private_folder(path.parent):
            return None
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
        try:
            sock.connect(str(path))
            _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        except OSError:
            sock.close()
            return None
        if uid != os.getuid():
            sock.close()
            return None
        server = cls.__new__(cls)
        server.proc, server.stderr_tail = None, b""
        server._attach(sock)
        deadline = time.monotonic() + timeout_s
        with server._news:
            while server.ready is None and not server.closed and time.monotonic() < deadline:
                server._news.wait(0.5)
        if server.ready is None or server.ready.get("identity") != expect:
            server.close()
            return None
        return server

    def _attach(self, control: socket.socket) -> None:
        self.control = control
        self.ready: dict[str, Any] | None = None
        self._next = 0
        self._pids: dict[int, int] = {}
        self._errors: dict[int, str] = {}
        self._exits: dict[int, int] = {}
        self._news = threading.Condition()
        self._send = threading.Lock()
        self.closed = False
        threading.Thread(target=self._read, daemon=True, name="kloop-fork-server").start()

    def _drain_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for chunk in iter(lambda: self.proc.stderr.read1(1 << 16), b""):  # type: ignore[union-attr]
            self.stderr_tail = (self.stderr_tail + chunk)[-STDERR_TAIL:]

    def _read(self) -> None:
        while True:
            try:
                data = self.control.recv(MAX_MESSAGE)
            except OSError:
                data = b""
            with self._news:
                if not data:
                    self.closed = True
                    self._news.notify_all()
                    return
                msg = json.loads(data)
                if msg["op"] == "ready":
                    self.ready = msg
                elif msg["op"] == "spawned":
                    self._pids[msg["id"]] = msg["pid"]
                elif msg["op"] == "error":
                    self._errors[msg["id"]] = msg["error"]
                elif msg["op"] == "exit":
                    self._exits[msg["pid"]] = msg["code"]
                self._news.notify_all()

    def spawn(self, spec: dict[str, Any], channel_fd: int, log_fd: int, stdout: Any) -> ForkedBox:
        """Ask for a box; returns at once (the first box waits for the server's imports on `pid`)."""
        with self._send:
            self._next += 1
            request_id = self._next
            try:
                socket.send_fds(self.control, [json.dumps({"op": "spawn", "id": request_id, "spec": spec}).encode()],
                                [channel_fd, log_fd])  # fmt: skip
            except OSError as exc:
                with self._news:
                    self._errors[request_id] = f"the fork server is gone: {exc}"
        return ForkedBox(self, request_id, stdout)

    def pid_of(self, request_id: int, timeout_s: float = 300.0) -> int:
        deadline = time.monotonic() + timeout_s
        with self._news:
            while request_id not in self._pids:
                if request_id in self._errors or self.closed or time.monotonic() > deadline:
                    why = self._errors.get(request_id) or (self._gone() if self.closed else "no fork")
                    raise OSError(f"kloop fork server: {why}")
                self._news.wait(0.5)
            return self._pids[request_id]

    def _gone(self) -> str:
        tail = self.stderr_tail.decode(errors="replace").strip().splitlines()[-3:]
        status = self.proc.poll() if self.proc is not None else "shared"
        return f"the fork server is gone (status {status})" + (
            f": {' | '.join(tail)}" if tail else ""
        )

    def exit_code(self, pid: int) -> int | None:
        with self._news:
            if pid in self._exits:
                return self._exits[pid]
            if self.closed:  # the server died: its launchers died with it (parent-death signal)
                return None if _alive(pid) else -signal.SIGKILL
            return None

    def wait_for_news(self, timeout_s: float) -> None:
        with self._news:
            self._news.wait(timeout_s)

    def alive(self) -> bool:
        return not self.closed and (self.proc is None or self.proc.poll() is None)

    def close(self) -> None:
        """Hang up: a server this process started ends (and everything it forked); a shared one kills
        only the launchers this connection asked for."""
        with contextlib.suppress(OSError):
            self.control.shutdown(socket.SHUT_RDWR)
        self.control.close()
        if self.proc is None:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, under another uid
        pass
    return True


class ForkServers:
    """One server per (device, threads) in this process, started on first use, replaced when it died."""

    def __init__(self, make: Callable[[str, int], ForkServer]) -> None:
        self._make = make
        self._servers: dict[tuple[str, int], ForkServer] = {}
        self._lock = threading.Lock()

    def get(self, device: str, threads: int) -> ForkServer:
        with self._lock:
            server = self._servers.get((device, threads))
            if server is None or not server.alive():
                server = self._servers[(device, threads)] = self._make(device, threads)
            return server

    def close(self) -> None:
        with self._lock:
            for server in self._servers.values():
                server.close()
            self._servers.clear()


if __name__ == "__main__":
    sys.exit(main())
