"""How a sandbox is launched: its own cgroups and namespaces, a minimal /dev, and no privilege.

The command the supervisor runs is `sh` (joins the box's cgroups, then execs) -> `unshare --pid
--fork --kill-child --mount-proc --net --mount --ipc --uts` -> `sh` (as root, still: a private
/dev with only null, zero, full, random, urandom and the GPU's nodes, a size-limited tmpfs on
/dev/shm, the build cache bound read-only into the box's dir, a hostname of its own) -> `setpriv`
(an unprivileged uid/gid, no groups, every capability set and the bounding set emptied,
`no_new_privs`) -> the sandbox, which loads its seccomp filter (`seccomp.py`) before torch.
So, before any of the sandbox's code runs:
- it holds no privilege, even when kloop runs as root: no capability in any set, so no mount,
  mknod, module, bpf, perf or setns, and nothing from `SIOCGSKNS` on the inherited socket;
- it has its own IPC and UTS namespaces: SysV objects die with it, the host's are out of reach,
  and a hostname it sets (it cannot: no CAP_SYS_ADMIN, seccomp) would be its own;
- its /dev holds no loop or block device, and it cannot make one (no CAP_MKNOD);
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
A user namespace is not used: the bind mount of a build cache below a 0700 directory (/root,
pytest's tmp) needs real root, and dropping every capability after the namespaces are set up
leaves the candidate with no more than a user namespace would. Where `unshare`, namespaces,
`setpriv` or `setarch -R` are not available here, the sandbox starts without them and
`Launch.describe()` says so (it lands in the `sandbox_policy` check's detail).
"""

from __future__ import annotations

import functools
import os
import secrets
import shlex
import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from kloop.verify.cgroups import Containment

SHM_MB = 256
_JOIN = 'for f; do shift; [ "$f" = -- ] && break; echo $$ > "$f" || exit 97; done; exec "$@"'
_MOUNT_SHM = 'mount -t tmpfs -o "size=$1m,nosuid,nodev,mode=1777" kloop-shm /dev/shm || exit 98; shift; exec "$@"'
NAMESPACES = ("--pid", "--fork", "--kill-child", "--mount-proc", "--net", "--mount", "--ipc", "--uts",
              "--propagation", "private")  # fmt: skip
BASIC_NODES = ("null", "zero", "full", "random", "urandom")
GPU_NODE_PATTERNS = ("nvidia*", "nvidia-caps/*", "dri/*", "kfd")
UID_RANGE = (200_000, 260_000)
"""Sandbox uids are drawn from here: no host account owns them, and no two live boxes share one."""


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


@functools.cache
def privilege_drop_available() -> bool:
    """Whether we are root and `setpriv` can drop to an unprivileged uid with no capabilities."""
    setpriv = shutil.which("setpriv")
    if setpriv is None or os.geteuid() != 0:
        return False
    try:
        return subprocess.run([setpriv, *_drop_args(UID_RANGE[0], UID_RANGE[0]), "true"],
                              capture_output=True, timeout=10).returncode == 0  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return False


def _drop_args(uid: int, gid: int) -> list[str]:
    return [f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--inh-caps=-all", "--ambient-caps=-all",
            "--bounding-set=-all", "--no-new-privs", "--"]  # fmt: skip


def draw_uid() -> int:
    return UID_RANGE[0] + secrets.randbelow(UID_RANGE[1] - UID_RANGE[0])


def device_nodes(gpu: bool = True) -> list[tuple[str, str, int, int]]:
    """(name, kind c|b, major, minor) of the nodes a box's /dev gets: the basic ones and the GPU's.

    Block devices are never included, whatever the pattern matched (no loop, no disks).
    """
    names = list(BASIC_NODES)
    if gpu:
        for pattern in GPU_NODE_PATTERNS:
            names.extend(str(p.relative_to("/dev")) for p in sorted(Path("/dev").glob(pattern)))
    nodes = []
    for name in names:
        try:
            st = os.stat(f"/dev/{name}")
        except OSError:
            continue
        if stat.S_ISCHR(st.st_mode):
            nodes.append((name, "c", os.major(st.st_rdev), os.minor(st.st_rdev)))
    return nodes


def _hidden_ancestor(path: str) -> str | None:
    """The topmost directory above `path` that others may not traverse (/root, pytest's tmp), if any."""
    parts = Path(path).parts
    for i in range(2, len(parts)):
        ancestor = str(Path(*parts[:i]))
        try:
            if not os.stat(ancestor).st_mode & stat.S_IXOTH:
                return ancestor
        except OSError:
            return None
    return None


def _reach(paths: list[str], read_only: list[str], stage: str) -> list[str]:
    """Shell lines that make `paths` reachable to an unprivileged uid at their own path.

    A path below a directory closed to others (the interpreter under /root/.pyenv, a build cache
    under /root/.kloop, the box's own dir under pytest's 0700 tmp) is bound aside, a tmpfs (mode
    755) covers that directory, and the path is moved back onto it: the box sees only what it
    needs of /root, and nothing else there. The aside is a private tmpfs on `stage` (/dev, which
    the box's own /dev covers afterwards): a stage below a covered directory (the box's dir, when
    TMPDIR and the build cache share a closed ancestor) vanished under the cover, and every
    sandbox died at `mount --move` (status 32). `read_only` paths are bound read-only (the build
    cache), wherever they are. The shell then re-enters its working directory by path, so the
    box's cwd is the reachable copy.
    """
    q = shlex.quote
    lines: list[str] = []
    hidden: dict[str, list[str]] = {}
    for path in dict.fromkeys(paths):
        ancestor = _hidden_ancestor(path)
        if ancestor is not None and os.path.isdir(path):
            hidden.setdefault(ancestor, []).append(path)
        elif path in read_only:
            lines.append(f"mount --bind {q(path)} {q(path)}")
    if hidden:
        lines.append(f"mount -t tmpfs -o size=1m,mode=700 kloop-stage {q(stage)}")
    n = 0
    staged = []
    for inside in hidden.values():
        for path in inside:
            n += 1
            lines += [f"mkdir -p {q(stage)}/{n}", f"mount --bind {q(path)} {q(stage)}/{n}"]
            staged.append((f"{stage}/{n}", path))
    for ancestor in hidden:  # every path is aside before any cover goes on
        lines.append(f"mount -t tmpfs -o size=1m,nosuid,nodev,mode=755 kloop-hide {q(ancestor)}")
    lines += [f"mkdir -p {q(path)} && mount --move {q(src)} {q(path)}" for src, path in staged]
    if hidden:
        lines += [f"umount {q(stage)}", 'cd "$(pwd)"']
    lines += [f"mount -o remount,bind,ro,nosuid,nodev {q(p)}" for p in read_only if p in paths]
    return lines


def _setup_script(shm_mb: int, reach: list[str], nodes: list[tuple[str, str, int, int]]) -> str:
    """What the namespace's first shell does as root, before privilege is dropped (`exec "$@"` follows)."""
    q = shlex.quote
    lines = ["set -e", *reach, "mount -t tmpfs -o size=1m,nosuid,noexec,mode=755 kloop-dev /dev"]
    for name, kind, major, minor in nodes:
        parent = os.path.dirname(name)
        if parent:
            lines.append(f"mkdir -p /dev/{q(parent)}")
        lines.append(f"mknod -m 666 /dev/{q(name)} {kind} {major} {minor}")
    lines += ["mkdir /dev/shm /dev/pts", f"mount -t tmpfs -o size={int(shm_mb)}m,nosuid,nodev,mode=1777 kloop-shm /dev/shm",
              "ln -s /proc/self/fd /dev/fd", "ln -s /proc/self/fd/0 /dev/stdin", "ln -s /proc/self/fd/1 /dev/stdout",
              "ln -s /proc/self/fd/2 /dev/stderr", "hostname kloop-sandbox"]  # fmt: skip
    return "\n".join(lines)


@dataclass
class Launch:
    """The wrapped command and the containment that ran (for the verdict's `sandbox_policy`)."""

    argv: list[str]
    namespaces: bool
    shm_mb: int
    containment: Containment | None
    fixed_layout: bool = False
    uid: int | None = None
    """The unprivileged uid the sandbox runs as (None: privilege not dropped)."""
    dev_nodes: list[str] = field(default_factory=list)
    setup: str = ""
    """The namespace's setup script as root (what the exec chain's inner `sh` runs before `exec "$@"`)."""
    procs: list[str] = field(default_factory=list)
    """The cgroup files the launcher writes its pid to."""
    forked: bool = False
    """Started from a fork server (`kloop.verify.forkserver`): the same steps by system calls, torch imported once."""

    def describe(self) -> str:
        ns = (f"namespaces: pid, net, mount, ipc, uts (/dev: {' '.join(self.dev_nodes)}, /dev/shm {self.shm_mb} MB)"
              if self.namespaces else "namespaces: none")  # fmt: skip
        groups = self.containment.describe() if self.containment is not None else "cgroups: none"
        layout = "address layout: fixed (ASLR off)" if self.fixed_layout else "address layout: randomized per process"
        priv = (f"privilege: uid {self.uid}, no capabilities, no_new_privs" if self.uid is not None
                else "privilege: not dropped (not root or no setpriv)")  # fmt: skip
        if self.forked:  # every box of a server is a copy of its address space: one layout for all of them
            layout += ", forked from a fork server (torch imported once)"
        return f"{ns}; {groups}; {layout}; {priv}"


def wrap(cmd: list[str], containment: Containment | None, *, shm_mb: int = SHM_MB,
         use_namespaces: bool = True, fixed_layout: bool = True, uid: int | None = None,
         need: list[str] | None = None, read_only: list[str] | None = None, stage: str = "/dev",
         gpu_nodes: bool = True) -> Launch:  # fmt: skip
    """The argv that starts `cmd` inside its cgroups and namespaces (each only where available).

    `uid`: drop to this uid (and gid) with no capabilities. `need`: directories the box must reach
    although they lie below one closed to others; `read_only` of them are bound read-only; `stage`:
    where a private tmpfs holds them aside meanwhile (inside the box's mount namespace only).
    """
    argv = list(cmd)
    fixed_layout = fixed_layout and fixed_layout_available()
    if fixed_layout:
        argv = [shutil.which("setarch") or "setarch", "-R", *argv]
    uid = uid if uid is not None and privilege_drop_available() else None
    if uid is not None:
        argv = [shutil.which("setpriv") or "setpriv", *_drop_args(uid, uid), *argv]
    namespaces = use_namespaces and namespaces_available()
    nodes: list[tuple[str, str, int, int]] = []
    script = ""
    if namespaces:
        unshare = shutil.which("unshare") or "unshare"
        nodes = device_nodes(gpu_nodes)
        ro = [os.path.realpath(p) for p in read_only or []]
        reach = _reach([os.path.realpath(p) for p in [*(need or []), *ro]], ro, stage) if uid is not None else []
        script = _setup_script(shm_mb, reach, nodes)
        argv = [unshare, *NAMESPACES, "--", _sh(), "-c", script + '\nexec "$@"', "kloop-box", *argv]
    procs = containment.procs_files() if containment is not None else []
    if procs:
        argv = [_sh(), "-c", _JOIN, "kloop-join", *procs, "--", *argv]
    return Launch(argv=argv, namespaces=namespaces, shm_mb=shm_mb, containment=containment, fixed_layout=fixed_layout,
                  uid=uid, dev_nodes=[n[0] for n in nodes], setup=script, procs=procs)  # fmt: skip
