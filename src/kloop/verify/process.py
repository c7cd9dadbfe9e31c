"""The supervisor's handle on one sandbox process: spawn, ask, wait with a deadline, kill.

The sandbox gets one end of a socketpair as an inherited fd, a private temp dir as cwd and HOME,
a minimal environment, and its own process group; `contain.wrap` puts it in its own cgroups
(`cgroups.Containment`: CPUs, memory, pids, freezer, CPU time) and PID, network and mount namespaces
with a private /dev/shm, so a kill ends everything it started. Its stdout and stderr go to a log file. `request` sends one frame and accepts exactly one reply that
echoes the request's nonce and op; anything else is a `ProtocolViolation`.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kloop.verify import contain, forkserver, measure, replies, seccomp
from kloop.verify.cgroups import Containment, Limits, pick_cpus, sweep_stale
from kloop.verify.channel import Channel, ChannelClosed, ChannelError, ChannelTimeout, ProtocolViolation

ENV_PASSTHROUGH = ("PATH", "LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_HOME",
                   "CUDA_PATH", "ROCM_PATH", "LD_LIBRARY_PATH", "TORCH_CUDA_ARCH_LIST", "CC", "CXX",
                   "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "MAX_JOBS")  # fmt: skip
LOG_CAP_BYTES = 8 << 20
"""What one box's stdout and stderr may put in its log; the rest is counted and dropped."""
STARTUP_TIMEOUT_S = 300.0  # a torch import on a loaded 2-core machine can take minutes
PIDS_MAX = 1024  # torch's threads and a compiler's jobs fit; a fork bomb does not
CGROUP_HEADROOM_MB = 512
IMPORT_SETTLE_S = 3.0
"""After an import, how long the candidate's threads may take to go quiet before they are watched."""


class SandboxFailure(Exception):
    """The sandbox stopped answering: `kind` is died, timeout, memory or protocol."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _sandbox_env(workdir: Path, threads: int) -> dict[str, str]:
    import kloop

    env = {k: os.environ[k] for k in ENV_PASSTHROUGH if k in os.environ}
    src_root = str(Path(kloop.__file__).resolve().parents[1])
    env.update(
        HOME=str(workdir), TMPDIR=str(workdir), PYTHONPATH=os.pathsep.join([src_root, *_import_paths()]),
        # One hash seed for every box, as one address layout (contain.wrap): two boxes that run the
        # same code should differ in nothing else.
        PYTHONNOUSERSITE="1", PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0",
        OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), TRITON_CACHE_DIR=str(workdir / "triton"),
        TORCH_EXTENSIONS_DIR=str(workdir / "torch_extensions"), KLOOP_SANDBOX="1",
        # A fixed glibc malloc policy in every box: with the default, the mmap threshold moves up
        # after frees, so a box that already ran correctness reuses heap pages while a fresh box
        # page-faults on every new tensor (an A/A bias of ~6 % on examples/rmsnorm).
        MALLOC_MMAP_THRESHOLD_=str(32 << 20), MALLOC_TRIM_THRESHOLD_=str(1 << 30),
    )
    if "PATH" not in env:
        env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    return env


class SandboxProcess:
    """One fresh sandbox. `start()` returns at once, so the next one can warm up in parallel."""

    def __init__(self, *, device: str, threads: int, memory_limit_mb: int, log_path: Path,
                 label: str = "candidate", cache_dir: Path | None = None) -> None:  # fmt: skip
        self.device = device
        self.cache_dir = cache_dir
        """The build cache, bound read-only into the box at `workdir/build-cache` (it runs unprivileged)."""
        self.uid = contain.draw_uid()
        self.log = LogSink(log_path, LOG_CAP_BYTES)
        self.threads = threads
        self.memory_limit_mb = memory_limit_mb
        self.log_path = log_path
        self.label = label
        self.workdir = Path(tempfile.mkdtemp(prefix=f"kloop-sandbox-{label}-"))
        self.proc: subprocess.Popen[bytes] | forkserver.ForkedBox | None = None
        self.channel: Channel | None = None
        self.started_ns = 0
        self.ready_ns = 0
        self.waited_ns = 0
        """How long the supervisor blocked waiting for this sandbox to start."""
        self._hello: dict[str, Any] | None = None
        self._over_memory = False
        self.containment: Containment | None = None
        """The box's cgroups (freeze/thaw/cpu_time_ns for the timing side); None when not contained."""
        self.launch: contain.Launch | None = None
        self._stop = threading.Event()
        self.shared: measure.SharedInputs | None = None
        """The staged workload's inputs, in memory the supervisor maps and hashes itself."""
        self.threads_before: set[int] = set()
        """The box's threads before any candidate code ran (read at its hello)."""
        self.listener: seccomp.Listener | None = None
        """The box's seccomp listener: the calls its filter refused, as the kernel reported them."""
        self.refusals_reported = 0
        """How many of the listener's refusals a reply's `violations` already carried."""
        self._box_pid: tuple[int, int] | None = None
        """(launcher pid, sandbox pid): the sandbox's pid once found (scanning /proc per reply cost 1.3 s of 11 s)."""

    def start(self) -> SandboxProcess:
        parent, child = socket.socketpair()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        forked = forkserver.enabled(self.device)
        args = ["--fd", str(forkserver.BOX_FD if forked else child.fileno()), "--device", self.device,
                "--threads", str(self.threads), "--memory-mb", str(self.memory_limit_mb)]  # fmt: skip
        self.started_ns = time.perf_counter_ns()
        self.launch = self._contain([sys.executable, "-m", "kloop.verify.sandbox", *args])
        env = _sandbox_env(self.workdir, self.threads)
        if forked:
            self.launch.forked = True
            read_end, write_end = os.pipe()
            spec = {"workdir": str(self.workdir), "env": env, "uid": self.launch.uid, "namespaces": self.launch.namespaces,
                    "setup": self.launch.setup, "procs": self.launch.procs, "sh": shutil.which("sh") or "/bin/sh",
                    "argv": args}  # fmt: skip
            server = _FORK_SERVERS.get(self.device, self.threads)
            self.proc = server.spawn(spec, child.fileno(), write_end, os.fdopen(read_end, "rb", buffering=0))  # type: ignore[assignment]
            os.close(write_end)
        else:
            self.proc = subprocess.Popen(
                self.launch.argv, cwd=self.workdir, env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, pass_fds=[child.fileno()], start_new_session=True,
            )
        child.close()
        assert self.proc is not None and self.proc.stdout is not None
        self.log.drain(self.proc.stdout)
        self.channel = Channel(parent)
        threading.Thread(target=self._watch_memory, daemon=True, name="kloop-memory-watch").start()
        return self

    def _contain(self, cmd: list[str]) -> contain.Launch:
        """Own cgroups (CPUs, memory, pids, freezer) and namespaces, each where this host has it."""
        _sweep_once()
        shm_mb = min(contain.SHM_MB, max(self.memory_limit_mb // 4, 16))
        # the backstop above the RSS watchdog and RLIMIT_AS (they act first, with a clear reason):
        # it bounds what they cannot see, the private /dev/shm and children's page cache
        memory_mb = self.memory_limit_mb + shm_mb + CGROUP_HEADROOM_MB if self.memory_limit_mb > 0 else 0
        limits = Limits(cpus=pick_cpus(self.threads), memory_bytes=memory_mb << 20, pids_max=PIDS_MAX)
        self.containment = Containment.create(self.label, limits)
        cache = [str(self.cache_dir)] if self.cache_dir is not None and self.cache_dir.is_dir() else []
        # its own dir too: TMPDIR may lie below a closed directory (pytest's tmp, a 0700 home)
        launch = contain.wrap(cmd, self.containment, shm_mb=shm_mb, uid=self.uid,
                              need=[*_interpreter_roots(), str(self.workdir)], read_only=cache,
                              gpu_nodes=self.device != "cpu")  # fmt: skip
        if launch.uid is not None:  # its private dir is the one place it may write
            os.chown(self.workdir, launch.uid, launch.uid)
        return launch

    def sandbox_pid(self) -> int | None:
        """The sandbox's pid as the supervisor sees it (inside its namespace it is 1)."""
        if self.proc is None:
            return None
        if self.launch is None or not self.launch.namespaces:
            return self.proc.pid
        if self.proc.poll() is not None:  # the launcher ends with the box: a remembered pid may be reused
            return None
        if self._box_pid is None or self._box_pid[0] != self.proc.pid:
            child = _only_child(self.proc.pid)
            if child is None:
                return None
            self._box_pid = (self.proc.pid, child)  # fixed for the box's life: read once, not per reply
        return self._box_pid[1]

    def policy(self) -> str:
        """Which containment ran, for the `sandbox_policy` check's detail (with what the kernel says of it)."""
        if self.launch is None:
            return "not started"
        seen = self.kernel_status()
        watched = ("; refused calls: reported by the kernel to the supervisor" if self.listener is not None
                   else "; refused calls: not observed (no seccomp listener)")  # fmt: skip
        return self.launch.describe() + watched + (f"; kernel says: {seen}" if seen else "")

    def kernel_status(self) -> str:
        """The sandbox's uid, effective capabilities, no_new_privs and seccomp mode, read by the supervisor."""
        pid = self.sandbox_pid()
        try:
            lines = Path(f"/proc/{pid}/status").read_text().splitlines() if pid else []
        except OSError:
            return ""
        fields = dict(line.split(":", 1) for line in lines if ":" in line)
        keep = ("Uid", "CapEff", "NoNewPrivs", "Seccomp")
        return ", ".join(f"{k} {fields[k].split()[0]}" for k in keep if k in fields)

    def wait_ready(self) -> dict[str, Any]:
        """Block until the sandbox's hello (torch imported, timer captured)."""
        if self._hello is None:
            assert self.channel is not None
            start = time.perf_counter_ns()
            self._take_listener()
            self._hello, _ = self._receive(STARTUP_TIMEOUT_S, expect=None)
            self.waited_ns = time.perf_counter_ns() - start
            if self._hello.get("op") != "hello":
                self._fail("protocol", f"expected hello, got {str(self._hello)[:200]}")
            limit = self.memory_limit_mb << 20
            if limit > 0 and (self._over_memory or self._resident_at_hello() > limit):
                # before any candidate code: the box alone (torch, and a forked box's pages shared with
                # its server) is over the limit, whether or not the watchdog's last look saw it yet
                self._over_memory = True
                self._fail("memory", "")
            self.threads_before = measure.box_threads(self._tasks_file(), self.sandbox_pid())
            self.ready_ns = time.perf_counter_ns()
        return self._hello

    def _take_listener(self) -> None:
        """Receive the box's seccomp listener (its first message, sent before torch loads) and serve it."""
        assert self.channel is not None
        try:
            fd = seccomp.take_over(self.channel.sock, STARTUP_TIMEOUT_S)
        except TimeoutError:
            self._fail("timeout", f"no seccomp hand-over within {STARTUP_TIMEOUT_S:g} s")
        except (EOFError, OSError):
            self._fail("died", self._death_detail())
        except ValueError as exc:
            self._fail("protocol", str(exc))
        if fd is not None:
            self.listener = seccomp.Listener(fd).start()

    def refusals(self) -> list[str]:
        """The calls the box's filter refused since candidate code could run, kernel-reported; new ones only.

        Each is returned once: a reply's `violations` carries those new since the last reply, and
        the supervisor asks once more after the box is dead (`Supervisor._clean_up`).
        """
        if self.listener is None:
            return []
        count, kept = self.listener.snapshot()
        new = [f"seccomp refused {r.call} (pid {r.pid})" for r in kept[self.refusals_reported:]]
        if count > len(kept) and count > self.refusals_reported:
            new.append(f"... {count - max(len(kept), self.refusals_reported)} more refused calls")
        self.refusals_reported = count
        return new

    def request(self, op: str, header: dict[str, Any] | None = None, tensors: dict[str, Any] | None = None,
                *, timeout_s: float, fds: list[int] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
        """Send one request and return the one reply that answers it.

        `fds` (the timing hand-off's memfd and pipe ends) follow the frame as one SCM_RIGHTS message.
        """
        self.wait_ready()
        assert self.channel is not None
        nonce = secrets.token_hex(8)
        header = {**(header or {}), "op": op, "nonce": nonce}
        if op in ("build", "load") and self.listener is not None:
            self.listener.arm()  # candidate code may run from here on (a build runs its compiler)
        if op == "stage" and tensors:  # inputs go into memory the supervisor keeps mapped, and only there
            if self.shared is not None:
                self.shared.close()
            self.shared = measure.SharedInputs(tensors)
            header["shared"] = self.shared.layout
            fds, tensors = [*(fds or []), self.shared.fd], None
        try:
            self.channel.send(header, tensors)
            if fds:
                socket.send_fds(self.channel.sock, [b"F"], fds)
        except (OSError, ChannelError) as exc:
            self._fail("died", f"could not send {op}: {exc}")
        reply, out = self._receive(timeout_s, expect=(op, nonce))
        if reply.get("ok") and op in ("load", "run", "batch_report"):
            self._measure(op, reply)
        return reply, out

    def _measure(self, op: str, reply: dict[str, Any]) -> None:
        """Replace what the sandbox says of its threads and inputs with what the supervisor reads itself.

        The verdict's threads are those the supervisor saw working after the reply
        (`measure.busy_threads`); the box's own list of live Python threads is kept as
        `reported_threads` only: an idle thread is no work outside the call, and the box's word
        decides nothing.
        """
        reply["reported_threads"] = list(reply.get("new_threads") or [])
        # the box's own list (audit hook refusals) can only add to what the kernel reported
        reply["violations"] = [*self.refusals(), *(reply.get("violations") or [])]
        read = self.containment.read if self.containment is not None else measure.plain_read
        reply["new_threads"] = measure.busy_threads(self._tasks_file(), self.sandbox_pid(), self.threads_before,
                                                    settle_s=IMPORT_SETTLE_S if op == "load" else 0.0, read=read)  # fmt: skip
        if op == "run":  # measured here: whatever the box says of its inputs decides nothing
            reply["inputs_changed"] = self.shared.changed() if self.shared is not None else []

    def _tasks_file(self) -> Path | None:
        """The box's cgroup `tasks` file: every thread of every process in it."""
        dirs = self.containment.dirs if self.containment is not None else {}
        for controller in ("freezer", "pids", "cpuacct", "memory"):
            if controller in dirs:
                return dirs[controller] / "tasks"
        return None

    def _receive(self, timeout_s: float, expect: tuple[str, str] | None) -> tuple[dict[str, Any], dict[str, Any]]:
        assert self.channel is not None
        try:
            header, tensors = self.channel.recv(timeout_s)
        except ChannelTimeout:
            self._fail("timeout", f"no answer within {timeout_s:g} s")
        except ChannelClosed:
            self._fail("memory" if self._over_memory else "died", self._death_detail())
        except ProtocolViolation as exc:
            self._fail("protocol", str(exc))
        if expect is not None and (header.get("op"), header.get("nonce")) != expect:
            self._fail("protocol", f"reply does not answer {expect[0]}: {str(header)[:200]}")
        try:  # untrusted data: every field the supervisor reads has the type it expects, or the candidate goes
            replies.validate(expect[0] if expect else "hello", header)
        except ProtocolViolation as exc:
            self._fail("protocol", str(exc))
        return header, tensors

    def _leader(self) -> int | None:
        """The launcher's pid, which leads the box's process group (None: nothing was started)."""
        if isinstance(self.proc, forkserver.ForkedBox):
            return self.proc.leader()
        return self.proc.pid if self.proc is not None else None

    def _death_detail(self) -> str:
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "closed the channel but did not exit"
        if isinstance(self.proc, forkserver.ForkedBox) and self.proc.error:
            return f"was never started: {self.proc.error}"
        if code < 0:
            return f"killed by {_signal_name(code)}"
        return f"exited with status {code}"

    def _fail(self, kind: str, detail: str) -> None:
        if self.containment is not None and kind == "died" and self.containment.oom_killed():
            self._over_memory = True
        if self._over_memory:
            kind, detail = "memory", f"resident memory above {self.memory_limit_mb} MB"
        self.kill()
        raise SandboxFailure(kind, detail)

    def _resident_at_hello(self) -> int:
        """Resident memory of the launcher and the box (nothing else runs in it yet): two reads, no scan."""
        import psutil

        total = 0
        for pid in {self.proc.pid if self.proc is not None else None, self.sandbox_pid()} - {None}:
            with contextlib.suppress(psutil.Error):
                total += psutil.Process(pid).memory_info().rss
        return total

    def _resident_bytes(self) -> int | None:
        """Resident memory of the launcher and everything under it, or None when it cannot be read."""
        import psutil

        if self.proc is None:
            return None
        try:
            root = psutil.Process(self.proc.pid)
            return sum(p.memory_info().rss for p in [root, *root.children(recursive=True)])
        except psutil.Error:
            return None

    def _watch_memory(self) -> None:
        """Kill the process group when its resident set passes the limit (CUDA runs have no RLIMIT_AS)."""
        limit = self.memory_limit_mb << 20
        while not self._stop.wait(0.2):
            if self.proc is None or self.proc.poll() is not None or limit <= 0:
                return
            rss = self._resident_bytes()
            if rss is not None and rss > limit:
                self._over_memory = True
                self.kill()
                return

    def kill(self) -> None:
        """Kill the whole process group; safe to call twice."""
        leader = self._leader()
        if leader is not None and self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(leader, signal.SIGKILL)
            self.proc.wait()
        if leader is not None:
            # children that outlived the leader still carry its process group id
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(leader, signal.SIGKILL)
        if self.containment is not None:  # and those that left the group (setsid) are still in the box
            self.containment.kill()

    def close(self, after_kill: Callable[[SandboxProcess], None] | None = None) -> None:
        """Say bye when it still listens, make sure it is gone, then remove its temp dir.

        `after_kill(self)` runs once nothing of the box is alive and before its dir is removed
        (the supervisor publishes a staged build from there).
        """
        self._stop.set()
        if self.proc is not None and self.proc.poll() is None and self._hello is not None:
            with contextlib.suppress(SandboxFailure):
                self.request("bye", timeout_s=5)
        self.kill()
        if self.containment is not None:
            self.containment.remove()
        if self.listener is not None:  # nothing of the box is alive: what it got refused is all on file
            self.listener.close()
        self.log.close()
        if after_kill is not None:
            after_kill(self)
        if self.channel is not None:
            self.channel.close()
        if self.shared is not None:
            self.shared.close()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> SandboxProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _import_paths() -> list[str]:
    """The user's PYTHONPATH entries a box can use: absolute, and there.

    The import system lists every entry (`os.listdir`); a stale one outside the allowed roots was
    refused as the candidate's access and rejected every honest kernel. A relative entry would name
    a folder under the box's own working directory, not the user's.
    """
    entries = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    return [p for p in entries if os.path.isabs(p) and os.path.exists(p)]


def _interpreter_roots() -> list[str]:
    """Where the interpreter and what it imports live (to be reachable by the box's unprivileged uid)."""
    import kloop

    roots = {sys.base_prefix, sys.base_exec_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable)),
             str(Path(kloop.__file__).resolve().parents[1])}  # fmt: skip
    roots.update(_import_paths())
    return sorted(os.path.realpath(r) for r in roots if r and os.path.isdir(r))


class LogSink:
    """A box's stdout and stderr, read by the supervisor: at most `cap` bytes reach the log file.

    The box writes into a pipe; a thread here drains it to its end (so a box never blocks on a
    full pipe) and counts what it dropped. `describe()` says so when anything was.
    """

    def __init__(self, path: Path, cap: int) -> None:
        self.path = path
        self.cap = cap
        self.written = 0
        self.dropped = 0
        self._thread: threading.Thread | None = None

    def drain(self, pipe: Any) -> None:
        self._thread = threading.Thread(target=self._pump, args=(pipe,), daemon=True, name="kloop-log-drain")
        self._thread.start()

    def _pump(self, pipe: Any) -> None:
        fd = pipe.fileno()
        with open(self.path, "ab") as out:
            while True:
                try:
                    chunk = os.read(fd, 1 << 16)
                except OSError:
                    break
                if not chunk:
                    break
                keep = chunk[: max(0, self.cap - self.written)]
                if keep:
                    out.write(keep)
                    out.flush()
                self.written += len(keep)
                self.dropped += len(chunk) - len(keep)
            if self.dropped:
                out.write(f"\n[kloop: log capped at {self.cap} bytes; {self.dropped} more bytes dropped]\n".encode())
        with contextlib.suppress(OSError):
            pipe.close()

    def close(self, timeout_s: float = 5.0) -> None:
        """Wait for the drain to reach the pipe's end (every writer is dead once the box is killed)."""
        if self._thread is not None:
            self._thread.join(timeout_s)

    def describe(self) -> str | None:
        if not self.dropped:
            return None
        return f"output capped: {self.written + self.dropped} bytes written, {self.cap} kept, {self.dropped} dropped"


SHARED_SERVERS_ENV = "KLOOP_FORK_SERVERS"
"""A folder (this user's, mode 0700) where `start_shared_fork_server` left a listening fork server
per thread count: a supervisor that finds one forking what it would fork uses it instead of
importing torch into a server of its own."""


def _server_env(threads: int) -> dict[str, str]:
    return _sandbox_env(forkserver.NO_HOME, threads)


def _server_prefix() -> list[str]:
    return [shutil.which("setarch") or "setarch", "-R"] if contain.fixed_layout_available() else []


def _start_fork_server(device: str, threads: int) -> forkserver.ForkServer:
    """A fork server with a box's environment (no secret of the supervisor's), under `setarch -R` as boxes are.

    It has no folder: it writes nothing, and a folder would outlive a supervisor killed with SIGKILL.
    Its environment names the supervisor, so an orphan can be traced to who started it. Where
    $KLOOP_FORK_SERVERS holds a shared server that forks exactly these boxes, that one is used.
    """
    shared = _shared_fork_server(device, threads)
    if shared is not None:
        return shared
    env = {**_server_env(threads), forkserver.OWNER_ENV: str(os.getpid())}
    return forkserver.ForkServer(argv_prefix=_server_prefix(), env=env)


def _shared_socket(folder: Path, device: str, threads: int) -> Path:
    return folder / f"{device}-{threads}.sock"


def _shared_fork_server(device: str, threads: int) -> forkserver.ForkServer | None:
    folder = os.environ.get(SHARED_SERVERS_ENV)
    if not folder:
        return None
    path = _shared_socket(Path(folder), device, threads)
    expect = {"python": sys.executable, "env": _server_env(threads), "fixed_layout": bool(_server_prefix())}
    return forkserver.ForkServer.connect(path, expect) if path.exists() else None


def start_shared_fork_server(folder: Path, threads: int = 1) -> forkserver.ForkServer:
    """Start a fork server other supervisors of this user reach through `folder` ($KLOOP_FORK_SERVERS).

    It lives as long as the returned handle (close it, or end this process); each supervisor that
    connects owns the boxes it asks for, and they die when it hangs up. For a process that runs many
    short-lived verifiers (a test suite, a script calling `kloop verify` in a loop): each then skips
    importing torch into a server of its own. Only the starter's folder, mode 0700, is reachable.
    """
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    env = {**_server_env(threads), forkserver.OWNER_ENV: str(os.getpid())}
    return forkserver.ForkServer(argv_prefix=_server_prefix(), env=env, listen=_shared_socket(folder, "cpu", threads))


_FORK_SERVERS = forkserver.ForkServers(_start_fork_server)
atexit.register(_FORK_SERVERS.close)


@functools.cache
def _sweep_once() -> None:
    sweep_stale()


PoolKey = tuple[str, int, int, str, str]
"""device, threads, memory limit (MB), label, build cache folder: what makes two sandboxes interchangeable."""


class SandboxPool:
    """Keeps a pre-started sandbox per configuration in use, so the next candidate skips the start cost.

    A spare has imported torch and captured its timer, and has never seen candidate code: taking
    it is as fresh as starting one. `take` hands the spare over (or starts one); `refill`, called
    once a verification has closed its boxes, starts spares for the configurations taken recently.
    Started at `take`, a spare's torch import (~1.4 s of CPU) ran on the very CPU the verification's
    boxes were pinned to, and made a prestarted verification slower than one with fresh boxes.

    Only the configurations taken since the last two refills keep spares; older ones are closed.
    A campaign takes the same few every time, but a process that verifies under many (the test
    suite: one build cache per test) kept one idle sandbox per configuration it had ever seen:
    116 of them, ~10 GB resident, late in a full suite run.
    """

    KEEP_REFILLS = 2

    def __init__(self) -> None:
        self._spares: dict[PoolKey, SandboxProcess] = {}
        self._taken: dict[PoolKey, int] = {}  # key -> the refill count when it was last taken
        self._refills = 0
        self._lock = threading.Lock()
        self._dir = Path(tempfile.mkdtemp(prefix="kloop-sandbox-pool-"))
        import atexit

        atexit.register(self.close)

    def take(self, *, device: str, threads: int, memory_limit_mb: int, label: str,
             cache_dir: Path | None = None) -> SandboxProcess:  # fmt: skip
        key = (device, threads, memory_limit_mb, label, str(cache_dir or ""))
        with self._lock:
            self._taken[key] = self._refills
            spare = self._spares.pop(key, None)
            if spare is None or spare.proc is None or spare.proc.poll() is not None:
                spare = self._new(key).start()
        return spare

    def refill(self) -> None:
        """Start a spare for every configuration taken in the last two refills that has none; close the rest."""
        with self._lock:
            stale = [key for key, when in self._taken.items() if when <= self._refills - self.KEEP_REFILLS]
            for key in stale:
                del self._taken[key]
                spare = self._spares.pop(key, None)
                if spare is not None:
                    spare.close()
            for key in sorted(self._taken):  # the recent ones (two verifications in threads refill in any order)
                spare = self._spares.get(key)
                if spare is None or spare.proc is None or spare.proc.poll() is not None:
                    self._spares[key] = self._new(key).start()
            self._refills += 1

    def spares(self) -> dict[PoolKey, SandboxProcess]:
        """The spares held now (a copy)."""
        with self._lock:
            return dict(self._spares)

    def _new(self, key: PoolKey) -> SandboxProcess:
        device, threads, memory, label, cache = key
        log = self._dir / f"{label}-{secrets.token_hex(4)}.log"
        return SandboxProcess(device=device, threads=threads, memory_limit_mb=memory, log_path=log, label=label,
                              cache_dir=Path(cache) if cache else None)  # fmt: skip

    def close(self) -> None:
        """Close every spare and remove the pool's folder (a spare's log holds nothing of a candidate)."""
        with self._lock:
            for spare in self._spares.values():
                spare.close()
            self._spares.clear()
            self._taken.clear()
            shutil.rmtree(self._dir, ignore_errors=True)


_POOL: SandboxPool | None = None


def shared_pool() -> SandboxPool:
    """The process-wide pool (created on first use)."""
    global _POOL
    if _POOL is None:
        _POOL = SandboxPool()
    return _POOL


def _only_child(pid: int) -> int | None:
    """The launcher's child (it exec'd into unshare, whose one child exec'd into the sandbox).

    Read from the kernel's own children list of the launcher's main thread, not by scanning every
    process; psutil's scan where the kernel lacks that file.
    """
    try:
        words = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return int(words[0]) if words else None
    except FileNotFoundError:
        pass
    except OSError:
        return None
    import psutil

    try:
        children = psutil.Process(pid).children()
    except psutil.Error:
        return None
    return children[0].pid if children else None
