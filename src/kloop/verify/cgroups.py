"""One sandbox's cgroups (v1): its CPUs, memory, process count, CPU time and freezer, held outside it.

`Containment.create` makes one group per controller (beneath the supervisor's own group, so the
limits the host set still apply), writes the limits, and names the `cgroup.procs` files that the
launcher joins before anything of the sandbox runs. The sandbox cannot widen them: the files live
under /sys, which its Landlock ruleset does not let it write, and the kernel clamps affinity to
the cpuset whatever it asks for (`torch.set_num_threads(64)` gets 64 threads on the same CPUs).

API for the supervisor (the timing side uses the last three):
- `kill()`: freeze, SIGKILL every member, thaw; nothing it started survives (setsid, double fork).
- `oom_killed()`: the memory limit was hit (tmpfs writes to its private /dev/shm are charged too).
- `freeze()` / `thaw()`: stop and resume every process in the box at once (read its shared memory
  while nothing in it can write).
- `cpu_time_ns()`: CPU time of the whole box (all threads and children), read from cpuacct;
  `settled=True` first waits until none of its threads is on a CPU (see there why).

A controller that is missing or not writable is skipped and named in `missing`; `describe()` is the
text for the `sandbox_policy` check.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory", "pids", "freezer")
PREFIX = "kloop-"
FREEZE_WAIT_S = 5.0
SETTLE_CPU_NS = 50_000_000
"""A settled read stops waiting once the box has used this much more CPU time (a box that keeps
computing after its reply: that much of it is counted) ..."""
SETTLE_WALL_S = 2.0
"""... or after this much wall time. The wait is bounded by the box's own CPU time, not by wall time:
under load a box gets a small share of its CPU (30 ms of work after a reply took 60-130 ms of wall
time at load 6 on this 2-core VM, over 250 ms with three more spinning processes), so a 50 ms wall
limit cut its work short (51.6 of 60 ms counted)."""


@dataclass(frozen=True)
class Limits:
    """What a sandbox may use: CPUs (None: all the supervisor has), memory bytes (0: no limit), tasks."""

    cpus: tuple[int, ...] | None = None
    memory_bytes: int = 0
    pids_max: int = 1024


def _own_paths() -> dict[str, str]:
    """controller -> this process's group path, from /proc/self/cgroup (`id:ctrl,ctrl:/path`)."""
    out: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            parts = line.split(":", 2)
            if len(parts) == 3:
                for ctrl in parts[1].split(","):
                    out[ctrl] = parts[2]
    return out


def _base(controller: str, own: dict[str, str]) -> Path | None:
    """The directory new groups go under for `controller`, or None when it is absent or read-only."""
    mount = ROOT / controller
    if not (mount / "cgroup.procs").exists():
        return None
    base = mount / own.get(controller, "/").lstrip("/")
    return base if os.access(base, os.W_OK) else None


class KeptFiles:
    """Files the timing side reads around every batch (cpuacct.usage, /proc/TID/stat, schedstat),
    opened once and re-read with pread: 5 us a read where opening the path again took 20-50 us,
    and a settled CPU-time read of a box of eight threads reads nine files.

    A kept /proc/TID file belongs to that thread: once it exits, reads fail (ESRCH) instead of
    reading whatever later gets its number. `keep_threads` closes the files of threads gone from the
    box, so a box churning threads cannot make the supervisor hold a descriptor per thread it ever had.
    """

    def __init__(self) -> None:
        self._fds: dict[str, int] = {}

    def read(self, path: str) -> str:
        """The file's text now; OSError as reading the path would raise it (then it is reopened next time)."""
        fd = self._fds.get(path)
        if fd is None:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            self._fds[path] = fd
        try:
            chunks = [os.pread(fd, 65536, 0)]
            while len(chunks[-1]) == 65536:
                chunks.append(os.pread(fd, 65536, 65536 * len(chunks)))
        except OSError:
            self.forget(path)
            raise
        return b"".join(chunks).decode()

    def forget(self, path: str) -> None:
        fd = self._fds.pop(path, None)
        if fd is not None:
            os.close(fd)

    def keep_threads(self, tids: list[str]) -> None:
        """Close the kept /proc/TID files of threads not in `tids` (the supervisor's own
        /proc/self/task files stay)."""
        keep = {f"/proc/{t}/{name}" for t in tids for name in ("stat", "schedstat")}
        for path in [p for p in self._fds if p.startswith("/proc/") and not p.startswith("/proc/self/")]:
            if path not in keep:
                self.forget(path)

    def close(self) -> None:
        for path in list(self._fds):
            self.forget(path)


def _running(files: KeptFiles, tid: str) -> bool:
    """Whether a thread is on a CPU or waiting for one (state R in /proc/TID/stat)."""
    try:
        stat = files.read(f"/proc/{tid}/stat")
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :].startswith("R")


def _schedstat_delay(files: KeptFiles, path: str) -> int:
    """Time the thread spent runnable but waiting for a CPU (/proc/.../schedstat's second field)."""
    try:
        return int(files.read(path).split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def pick_cpus(threads: int, salt: int | None = None) -> tuple[int, ...]:
    """`threads` CPUs of the supervisor's set; one supervisor's boxes share theirs (fair A-B timing).

    Different supervisors start at different CPUs (salted by pid) so parallel verifications spread.
    """
    allowed = sorted(os.sched_getaffinity(0))
    if threads >= len(allowed):
        return tuple(allowed)
    start = (os.getpid() if salt is None else salt) % len(allowed)
    return tuple(sorted(allowed[(start + i) % len(allowed)] for i in range(max(1, threads))))


def _write(path: Path, value: str) -> None:
    with open(path, "w") as handle:
        handle.write(value)


def _cpuset_text(cpus: tuple[int, ...]) -> str:
    return ",".join(str(c) for c in cpus)


class Containment:
    """The groups of one sandbox; see the module docstring for what each call is for."""

    def __init__(self, dirs: dict[str, Path], missing: list[str], limits: Limits) -> None:
        self.dirs = dirs
        self.missing = missing
        self.limits = limits
        self.files = KeptFiles()

    @classmethod
    def create(cls, label: str, limits: Limits) -> Containment:
        """New groups named after the supervisor's pid; controllers that cannot be used are skipped."""
        own = _own_paths()
        # each group sits directly beside the supervisor's tasks: under CFS a group is one entity of
        # weight cpu.shares at its level, so a shared parent would squeeze every sandbox into one share
        name = f"{PREFIX}{os.getpid()}-{label}-{secrets.token_hex(4)}"
        dirs: dict[str, Path] = {}
        missing: list[str] = []
        for controller in CONTROLLERS:
            base = _base(controller, own)
            try:
                if base is None:
                    raise OSError("not mounted or not writable")
                group = base / name
                group.mkdir()
                dirs[controller] = group
                _apply(controller, group, limits, base)
            except OSError:
                missing.append(controller)
                if controller in dirs:
                    with contextlib.suppress(OSError):
                        dirs.pop(controller).rmdir()
        return cls(dirs, missing, limits)

    def procs_files(self) -> list[str]:
        """The `cgroup.procs` files a launcher writes its pid to before exec'ing the sandbox."""
        return [str(d / "cgroup.procs") for d in self.dirs.values()]

    def describe(self) -> str:
        parts = []
        for controller in self.dirs:
            if controller == "cpuset" and self.limits.cpus is not None:
                parts.append(f"cpuset {_cpuset_text(self.limits.cpus)}")
            elif controller == "memory" and self.limits.memory_bytes > 0:
                parts.append(f"memory {self.limits.memory_bytes >> 20} MB")
            elif controller == "pids":
                parts.append(f"pids {self.limits.pids_max}")
            else:
                parts.append(controller)
        text = "cgroups: " + (", ".join(parts) if parts else "none")
        return text + (f" (missing: {', '.join(self.missing)})" if self.missing else "")

    # -- reading -------------------------------------------------------------------------------
    def pids(self) -> list[int]:
        """Every process in the box (any controller's view; they all hold the same members)."""
        for controller in ("freezer", "pids", "cpuacct", "memory", "cpu", "cpuset"):
            if controller in self.dirs:
                with contextlib.suppress(OSError):
                    text = (self.dirs[controller] / "cgroup.procs").read_text()
                    return [int(p) for p in text.split()]
        return []

    def cpu_time_ns(self, settled: bool = False) -> int | None:
        """CPU time used by everything in the box so far (user + system, all threads), or None.

        The kernel charges a running thread's time to cpuacct only at a tick (4 ms at HZ=250) or
        when it leaves the CPU, so a box still finishing its reply reads short by up to a tick and
        the next batch reads long: on 10 ms batches that was most of an A/A pair's spread.
        `settled` waits until every thread of the box is off the CPU, or it has used SETTLE_CPU_NS
        more (or SETTLE_WALL_S passed): an honest box's threads block within microseconds of a reply.
        """
        group = self.dirs.get("cpuacct")
        if group is None:
            return None
        if settled:
            self._settle(group)
        try:
            return int(self.files.read(str(group / "cpuacct.usage")))
        except (OSError, ValueError):
            return None

    def read(self, path: str) -> str:
        """A /proc or cgroup file through the kept descriptors (`measure.Read`), except a `tasks`
        list: cgroup v1 caches the list an open file built for a second after each read, so a kept
        descriptor missed a thread the candidate started in its call (`attack_busy_thread` passed).
        Reading a `tasks` list closes the kept files of threads no longer in it."""
        if not path.endswith("/tasks"):
            return self.files.read(path)
        text = Path(path).read_text()
        self.files.keep_threads(text.split())
        return text

    def _tids(self, group: Path) -> list[str]:
        """The box's threads now."""
        return self.read(str(group / "tasks")).split()

    def run_delay_ns(self, own_tid: int) -> int | None:
        """Time the box's threads and the supervisor's thread `own_tid` spent runnable but waiting
        for a CPU (load, not sleep), from /proc/TID/schedstat; None without a cpuacct group."""
        group = self.dirs.get("cpuacct")
        if group is None:
            return None
        try:
            tids = self._tids(group)
        except OSError:
            return None
        own = _schedstat_delay(self.files, f"/proc/self/task/{own_tid}/schedstat")
        return sum(_schedstat_delay(self.files, f"/proc/{tid}/schedstat") for tid in tids) + own

    def _settle(self, group: Path) -> None:
        deadline = time.perf_counter() + SETTLE_WALL_S
        start: int | None = None
        while time.perf_counter() < deadline:
            try:
                tids = self._tids(group)
                if not any(_running(self.files, tid) for tid in tids):
                    return
                usage = int(self.files.read(str(group / "cpuacct.usage")))
            except (OSError, ValueError):
                return
            if start is None:
                start = usage
            elif usage - start >= SETTLE_CPU_NS:
                return
            time.sleep(0)

    def oom_killed(self) -> bool:
        group = self.dirs.get("memory")
        if group is None:
            return False
        with contextlib.suppress(OSError, ValueError):
            for line in (group / "memory.oom_control").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
        return False

    # -- acting --------------------------------------------------------------------------------
    def freeze(self) -> bool:
        """Stop every process in the box; True once the kernel says FROZEN (False: no freezer)."""
        return self._freezer("FROZEN")

    def thaw(self) -> bool:
        return self._freezer("THAWED")

    def _freezer(self, state: str) -> bool:
        group = self.dirs.get("freezer")
        if group is None:
            return False
        try:
            _write(group / "freezer.state", state)
            deadline = time.monotonic() + FREEZE_WAIT_S
            while (group / "freezer.state").read_text().strip() != state:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.001)
        except OSError:
            return False
        return True

    def kill(self) -> None:
        """SIGKILL every member while frozen (no fork can race the kill), then thaw so they die."""
        for _ in range(20):
            members = self.pids()
            if not members:
                return
            self.freeze()
            for pid in members:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            self.thaw()
            time.sleep(0.005)

    def remove(self) -> None:
        """Kill what is left and delete the groups (an empty group's rmdir can lag its last exit)."""
        self.kill()
        self.files.close()
        for group in self.dirs.values():
            for _ in range(100):
                try:
                    group.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
        self.dirs = {}


def _apply(controller: str, group: Path, limits: Limits, parent: Path) -> None:
    if controller == "cpuset":
        cpus = limits.cpus
        _write(group / "cpuset.cpus", _cpuset_text(cpus) if cpus else (parent / "cpuset.cpus").read_text().strip())
        _write(group / "cpuset.mems", (parent / "cpuset.mems").read_text().strip())
    elif controller == "memory" and limits.memory_bytes > 0:
        _write(group / "memory.limit_in_bytes", str(limits.memory_bytes))
        swap = group / "memory.memsw.limit_in_bytes"
        if swap.exists():  # memory + swap: swapping out does not escape the limit
            _write(swap, str(limits.memory_bytes))
    elif controller == "pids":
        _write(group / "pids.max", str(limits.pids_max))
    elif controller == "cpu":  # one task's weight per thread it may use, as unconfined threads would get
        cpus = len(limits.cpus) if limits.cpus else 1
        _write(group / "cpu.shares", str(1024 * cpus))


def sweep_stale() -> None:
    """Remove empty groups left by supervisors that died (their pid no longer exists)."""
    own = _own_paths()
    for controller in CONTROLLERS:
        base = _base(controller, own)
        if base is None:
            continue
        legacy = base / "kloop"  # where an earlier version nested its groups
        for group in [*base.glob(f"{PREFIX}*"), *(legacy.iterdir() if legacy.is_dir() else [])]:
            pid = group.name.removeprefix(PREFIX).split("-", 1)[0]
            if group.is_dir() and pid.isdigit() and not Path(f"/proc/{pid}").exists():
                with contextlib.suppress(OSError):
                    group.rmdir()
        with contextlib.suppress(OSError):
            legacy.rmdir()
