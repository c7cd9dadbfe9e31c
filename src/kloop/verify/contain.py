"""How a sandbox is launched: its own cgroups, PID, network and mount namespaces, a private /dev/shm.

The command the supervisor runs is `sh` (joins the box's cgroups, then execs) -> `unshare --pid
--fork --kill-child --mount-proc --net --mount` -> `sh` (mounts a size-limited tmpfs on /dev/shm)
-> the sandbox. So, before any of the sandbox's code runs:
- it sees only its own processes in /proc: not the supervisor (whose environ holds the seed
  secret), not the sibling baseline box, so it cannot renice, pin or signal them;
- it is PID 1 of its namespace: when it dies, or `unshare` dies (PDEATHSIG), the kernel kills
  everything it started, setsid and double-forked helpers included;
- it has a network namespace with only a loopback that is down (no sockets to anywhere, and
  abstract unix sockets of the host are in another namespace);
- its /dev/shm is a private tmpfs of `shm_mb`, charged to its memory cgroup, gone with it;
- its address space is laid out without randomisation (`setarch -R`), so every box of a
  verification maps its libraries, heap and stack at the same addresses. With ASLR each process
  drew its own layout, and identical code in two boxes ran up to 30 % apart for a whole
  verification (an offset no number of timing rounds averages away). ASLR protects nothing
  inside a box: the candidate already runs arbitrary code there.
Where `unshare`, namespaces or `setarch -R` are not available here, the sandbox starts without
them and `Launch.describe()` says so (it lands in the `sandbox_policy` check's detail).
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from dataclasses import dataclass

from kloop.verify.cgroups import Containment

SHM_MB = 256
_JOIN = 'for f; do shift; [ "$f" = -- ] && break; echo $$ > "$f" || exit 97; done; exec "$@"'
_MOUNT_SHM = 'mount -t tmpfs -o "size=$1m,nosuid,nodev,mode=1777" kloop-shm /dev/shm || exit 98; shift; exec "$@"'
NAMESPACES = ("--pid", "--fork", "--kill-child", "--mount-proc", "--net", "--mount", "--propagation", "private")


def _sh() -> str:
    return shutil.which("sh") or "/bin/sh"


@functools.cache
def namespaces_available() -> bool:
    """Whether this host lets us create PID, network and mount namespaces and mount a tmpfs in them."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return False
    probe = [unshare, *NAMESPACES, "--", _sh(), "-c", _MOUNT_SHM, "kloop-probe", "1", "true"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@functools.cache
def fixed_layout_available() -> bool:
    """Whether `setarch -R` may turn address-space randomisation off here (a seccomp profile can refuse it)."""
    setarch = shutil.which("setarch")
    if setarch is None:
        return False
    try:
        return subprocess.run([setarch, "-R", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@dataclass
class Launch:
    """The wrapped command and the containment that ran (for the verdict's `sandbox_policy`)."""

    argv: list[str]
    namespaces: bool
    shm_mb: int
    containment: Containment | None
    fixed_layout: bool = False

    def describe(self) -> str:
        ns = f"namespaces: pid, net, mount (/dev/shm {self.shm_mb} MB)" if self.namespaces else "namespaces: none"
        groups = self.containment.describe() if self.containment is not None else "cgroups: none"
        layout = "address layout: fixed (ASLR off)" if self.fixed_layout else "address layout: randomized per process"
        return f"{ns}; {groups}; {layout}"


def wrap(cmd: list[str], containment: Containment | None, *, shm_mb: int = SHM_MB,
         use_namespaces: bool = True, fixed_layout: bool = True) -> Launch:  # fmt: skip
    """The argv that starts `cmd` inside its cgroups and namespaces (each only where available)."""
    argv = list(cmd)
    fixed_layout = fixed_layout and fixed_layout_available()
    if fixed_layout:
        argv = [shutil.which("setarch") or "setarch", "-R", *argv]
    namespaces = use_namespaces and namespaces_available()
    if namespaces:
        unshare = shutil.which("unshare") or "unshare"
        argv = [unshare, *NAMESPACES, "--", _sh(), "-c", _MOUNT_SHM, "kloop-shm", str(shm_mb), *argv]
    procs = containment.procs_files() if containment is not None else []
    if procs:
        argv = [_sh(), "-c", _JOIN, "kloop-join", *procs, "--", *argv]
    return Launch(argv=argv, namespaces=namespaces, shm_mb=shm_mb, containment=containment, fixed_layout=fixed_layout)
