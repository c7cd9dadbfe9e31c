"""Writer containment: a writer agent's process sees the machine read-only except where it may write.

A writer with a shell (any CLI, or the `openai:` agent's command runner) runs on the same machine
as kloop's verifier. Without containment it could edit kloop's own package, the venv, the wiki in
`$KLOOP_HOME` or the run's `sealed/` task copy, and the next verdict would be its own. So the
writer's command is wrapped by `contain(argv, writable=[...])`, and everything it starts inherits:

1. `mount-namespace` (root, util-linux `unshare`): a private mount and PID namespace in which every
   mount is made read-only recursively (`mount_setattr`), then the writable paths are bind-mounted
   read-write and the protected paths (kloop's install, the venv, `$KLOOP_HOME`, `sealed/`, plus
   what the caller adds) re-bound read-only on top, so protection wins even inside a writable tree.
   Its own PID namespace hides kloop's processes.
2. `landlock` (any user, kernel >= 5.13): write rights only beneath the writable paths, with the
   protected paths carved out; a Landlocked process can also no longer change mounts.
3. `no-capabilities`: the bounding, inheritable and ambient capability sets are emptied before the
   agent starts, so a root writer cannot remount, unmount or ptrace its way back out.
4. `read-allowlist` (Landlock): what the agent may *read* is an allow-list too — the system's
   toolchains and libraries (`SYSTEM_READABLE`), kloop's own installation and interpreter, the
   writable paths and what the caller names in `readable` (the run's `sealed/` task, the CLI's
   install, the wiki file). kloop's home, other runs, the host user's home and /root are not on
   it, so a shell or file tool opening them gets EACCES; host secrets in /etc are carved out.

Each layer that cannot run here is skipped and reported (`mechanisms()` says which ran); the loop's
own checks after a call (workspace fingerprint, sealed hashes, kloop's package digest) stay the gate.

API for adapters: `contain(argv, writable=[workspace, home, tmp], protect=[sealed]) -> argv'`, run
argv' exactly as argv would have been run. This module, run as a script, is the trusted helper
that argv' starts; it applies the layers and then execs the agent.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

__all__ = ["REPORT_PREFIX", "SYSTEM_READABLE", "contain", "default_protected", "default_readable", "mechanisms",
           "package_digest", "parse_report"]

REPORT_PREFIX = "kloop-contain: mechanisms="

_MS_BIND, _MS_REC = 4096, 16384
_MOUNT_SETATTR = 442  # x86_64 and aarch64 (generic syscall table)
_AT_FDCWD, _AT_RECURSIVE = -100, 0x8000
_MOUNT_ATTR_RDONLY = 0x1
_PR_CAPBSET_DROP, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
_CAP_VERSION_3 = 0x20080522
_NET: dict[str, Any] = {}  # the helper's network options (`--own-net`, `--relay PORT SOCKET`)
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/random", "/dev/urandom", "/dev/ptmx", "/dev/pts")


# What every contained agent may read besides its own paths: toolchains, system libraries, kernel views.
SYSTEM_READABLE = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc", "/sys",
                   "/dev")
# Host secrets inside those roots, never readable (carved out of the grant).
SYSTEM_HIDDEN = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d",
                 "/etc/ssh", "/etc/ssl/private", "/etc/security/opasswd")


def default_readable() -> list[Path]:
    """kloop's package and the interpreter it runs on (the agent may run kloop and Python, never edit them)."""
    import kloop

    exe = Path(sys.executable).resolve()
    package = Path(kloop.__file__).resolve().parent
    # An editable install in a src layout: Python lists `src/` to import from it (nothing else is there).
    source = [package.parent] if package.parent.name == "src" else []
    return [package, *source, Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), exe.parent.parent]


def default_protected() -> list[Path]:
    """kloop's installation (package dir and the interpreter's prefix) and `$KLOOP_HOME`."""
    import kloop

    home = Path(os.environ.get("KLOOP_HOME") or Path.home() / ".kloop")
    return [Path(kloop.__file__).resolve().parent, Path(sys.prefix).resolve(), home.resolve()]


def package_digest(root: Path | None = None) -> str:
    """sha256 over kloop's own package files (paths and contents; bytecode caches left out).

    The loop takes it before a campaign and refuses any round after which it differs: an agent
    that got past containment and edited the verifier still cannot have that round counted.
    """
    import hashlib

    import kloop

    base = (root or Path(kloop.__file__).parent).resolve()
    digest = hashlib.sha256()
    for path in sorted(p for p in base.rglob("*") if "__pycache__" not in p.parts):
        if path.is_symlink() or path.is_file():
            digest.update(str(path.relative_to(base)).encode() + b"\0")
            digest.update(os.readlink(path).encode() if path.is_symlink() else path.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()


def _unshare_prefix(net: bool = False) -> list[str]:
    """The `unshare` command for a private mount + PID (+ network) namespace, or [] where none can be made."""
    exe = shutil.which("unshare")
    if exe is None:
        return []
    user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    return [exe, *user, "--mount", "--propagation", "private", "--pid", "--fork", "--kill-child", "--mount-proc",
            *(["--net"] if net else [])]


def contain(
    argv: Sequence[str],
    *,
    writable: Iterable[Path],
    protect: Iterable[Path] = (),
    report: bool = False,
    namespace: bool | None = None,
    readable: Iterable[Path] | None = (),
    network: Literal["host", "none", "gateway"] = "host",
    gateway: tuple[int, Path] | None = None,
) -> list[str]:
    """The command line that runs `argv` contained: writes only beneath `writable`, reads only an allow-list.

    `readable` adds read-only paths to the allow-list (system roots, kloop's install and the
    writable paths are on it already); `readable=None` leaves reads unconfined (the whole machine).
    `network="none"` gives the agent its own empty network namespace; `"gateway"` the same plus a
    relay from its 127.0.0.1:PORT to the gateway's unix socket (`gateway=(PORT, SOCKET)`): the
    model gateway is then its only route. Both need the namespace layer (`net-namespace` reported).

    `protect` (plus `default_protected()`) stays read-only even inside a writable path. With
    `report`, the helper's first stderr line names the layers that ran (`parse_report` reads it).
    `namespace=None` (the default) uses the mount/PID namespace where the probe (`mechanisms()`)
    found it working; `False` skips it (Landlock and the capability drop still apply), e.g. for
    an agent that must build its own namespaces.
    """
    paths = [str(Path(p).resolve()) for p in writable]
    if not paths:
        raise ValueError("contain: at least one writable path is needed (the workspace)")
    guarded = sorted({str(Path(p).resolve()) for p in [*protect, *default_protected()]})
    # This file run as a script: only the standard library loads before the agent starts (fast, and
    # independent of the rest of kloop). -P: never import from the (writer-controlled) cwd; -s: nor
    # from the agent home's user site.
    helper = [sys.executable, "-P", "-s", str(Path(__file__).resolve())]
    for path in paths:
        helper += ["--rw", path]
    for path in guarded:
        helper += ["--ro", path]
    if readable is not None:
        allowed = {*SYSTEM_READABLE, *(str(Path(p).resolve()) for p in [*readable, *default_readable()])}
        for path in sorted(allowed):
            helper += ["--read", path]
    if report:
        helper.append("--report")
    if namespace is None:
        namespace = "mount-namespace" in mechanisms()
    own_net = network != "host"
    prefix = _unshare_prefix(net=own_net) if namespace else []
    if prefix:
        helper.append("--in-namespace")
        if own_net:
            helper.append("--own-net")
        if network == "gateway" and gateway is not None:
            helper += ["--relay", str(gateway[0]), str(gateway[1])]
    return [*prefix, *helper, "--", *argv]


def parse_report(stderr: str) -> list[str]:
    """The layers a contained run reported (`contain(..., report=True)`), [] when none ran or none said."""
    for line in stderr.splitlines():
        if line.startswith(REPORT_PREFIX):
            return [m for m in line[len(REPORT_PREFIX) :].split(",") if m and m != "none"]
    return []


@functools.lru_cache(maxsize=2)
def mechanisms(namespace: bool = True) -> tuple[str, ...]:
    """Which layers actually run on this machine (probed once by containing `true`).

    When the namespace layer cannot be built (no `unshare`, no privilege) the probe falls back to
    the layers that need none, which is also what `contain` callers should then ask for.
    """
    with tempfile.TemporaryDirectory(prefix="kloop-contain-") as tmp:
        for ns in ((True, False) if namespace else (False,)):
            argv = contain(["true"], writable=[Path(tmp)], report=True, namespace=ns)
            try:
                done = subprocess.run(argv, check=False, timeout=60, capture_output=True, text=True)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if done.returncode == 0:
                return tuple(parse_report(done.stderr))
    return ()


# ---- the trusted helper: runs inside the new namespaces, before the agent's code ----


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]  # fmt: skip


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _set_readonly(libc: ctypes.CDLL, path: str, readonly: bool) -> None:
    """Make the mount tree at `path` read-only (or writable) recursively."""
    attr = _MountAttr(attr_set=_MOUNT_ATTR_RDONLY if readonly else 0, attr_clr=0 if readonly else _MOUNT_ATTR_RDONLY)
    rc = libc.syscall(ctypes.c_long(_MOUNT_SETATTR), ctypes.c_int(_AT_FDCWD), path.encode(),
                      ctypes.c_uint(_AT_RECURSIVE), ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)))  # fmt: skip
    if rc != 0:
        raise OSError(ctypes.get_errno(), f"mount_setattr {path}")


def _bind(libc: ctypes.CDLL, path: str) -> None:
    if libc.mount(path.encode(), path.encode(), None, ctypes.c_ulong(_MS_BIND | _MS_REC), None) != 0:
        raise OSError(ctypes.get_errno(), f"bind mount {path}")


def _inside_any(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _apply_namespace(writable: list[str], protected: list[str]) -> None:
    """Inside the private mount namespace: all read-only, writable re-opened, protected re-closed."""
    libc = _libc()
    _set_readonly(libc, "/", True)
    for path in writable:
        _bind(libc, path)
        _set_readonly(libc, path, False)
    for path in protected:
        if os.path.exists(path) and _inside_any(path, writable):
            _bind(libc, path)
            _set_readonly(libc, path, True)


def _landlock() -> ModuleType:
    """kloop.verify.landlock loaded from its file alone: the helper runs before every agent command
    and must neither pay for nor depend on the verifier package's imports (pydantic, schemas)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "verify" / "landlock.py"
    spec = importlib.util.spec_from_file_location("kloop_contain_landlock", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _drop_capabilities() -> bool:
    """Empty the bounding, ambient and inheritable sets: the exec'd agent starts with no capabilities."""
    libc = _libc()
    for cap in range(64):
        if libc.prctl(ctypes.c_int(_PR_CAPBSET_DROP), ctypes.c_ulong(cap), 0, 0, 0) != 0:
            if ctypes.get_errno() == 22:  # EINVAL: past the last capability this kernel knows
                break
            return False
    libc.prctl(ctypes.c_int(_PR_CAP_AMBIENT), ctypes.c_ulong(_PR_CAP_AMBIENT_CLEAR_ALL), 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    if libc.capget(ctypes.byref(header), ctypes.byref(data)) != 0:
        return False
    data[2] = data[5] = 0  # inheritable, both words
    return libc.capset(ctypes.byref(header), ctypes.byref(data)) == 0


def _loopback_up() -> None:
    """Bring `lo` up in the new network namespace (it starts down)."""
    import fcntl
    import struct

    siocsifflags, iff_up, iff_loopback, iff_running = 0x8914, 0x1, 0x8, 0x40
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sH14x", b"lo", iff_up | iff_loopback | iff_running))


def _pump(src: socket.socket, dst: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while chunk := src.recv(65536):
            dst.sendall(chunk)
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


def _serve_relay(listener: socket.socket, target: str) -> None:
    """The relay's loop (a forked child, never Landlocked): each connection to the namespace's
    127.0.0.1:PORT becomes a connection to the gateway's unix socket, bytes copied both ways."""
    import threading

    while True:
        conn, _ = listener.accept()
        up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            up.connect(target)
        except OSError:
            conn.close()
            continue
        for a, b in ((conn, up), (up, conn)):
            threading.Thread(target=_pump, args=(a, b), daemon=True).start()


def _start_relay(port: int, target: str) -> None:
    """Listen on the namespace's 127.0.0.1:PORT now (before the agent starts: no race), serve in a child."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    if os.fork() == 0:
        try:
            _serve_relay(listener, target)
        finally:
            os._exit(0)
    listener.close()


def _parse(args: list[str]) -> tuple[list[str], list[str], list[str], bool, bool, list[str]]:
    split = args.index("--")
    opts, argv = args[:split], args[split + 1 :]
    writable, protected, readable, report, in_ns = [], [], [], False, False
    it = iter(opts)
    for opt in it:
        if opt == "--rw":
            writable.append(next(it))
        elif opt == "--ro":
            protected.append(next(it))
        elif opt == "--read":
            readable.append(next(it))
        elif opt == "--report":
            report = True
        elif opt == "--in-namespace":
            in_ns = True
        elif opt == "--own-net":
            _NET["own"] = True
        elif opt == "--relay":
            _NET["relay"] = (int(next(it)), next(it))
    return writable, protected, readable, report, in_ns, argv


def _main(args: list[str]) -> int:
    """Apply every layer that can run, say which did, then become the agent."""
    writable, protected, readable, report, in_ns, argv = _parse(args)
    ran: list[str] = []
    if in_ns:
        _apply_namespace(writable, protected)  # a failure here is fatal: never run half-contained
        ran.append("mount-namespace")
        with contextlib.suppress(OSError):  # the inherited cwd still points below the new mounts
            os.chdir(os.getcwd())
        if _NET.get("own"):
            _loopback_up()  # a failure here is fatal too
            relay = _NET.get("relay")
            if relay:
                _start_relay(*relay)
            ran.append("net-namespace")
    landlock = _landlock()
    devices = [d for d in _DEVICES if os.path.exists(d)]
    # Reads: the allow-list (or everything when none was given); writes only beneath the writable
    # roots, so a protected path outside them is already read-only. Landlock has no deny rule: a
    # protected path inside a writable root is carved out of the write grant by granting the root's
    # other entries one by one. Where the namespace already re-bound it read-only, no carving.
    deny_write = [p for p in protected if _inside_any(p, writable) and not in_ns]
    hidden = [p for p in SYSTEM_HIDDEN if os.path.lexists(p)] if readable else []
    if landlock.restrict(read=readable or ["/"], write=[*writable, *devices], deny=hidden, deny_write=deny_write) > 0:
        ran.append("landlock")
        if readable:
            ran.append("read-allowlist")
    if _drop_capabilities():
        ran.append("no-capabilities")
    if report:  # one line on stderr: an open report file would keep `/` from turning read-only
        print(f"{REPORT_PREFIX}{','.join(ran) or 'none'}", file=sys.stderr, flush=True)
    if not argv:
        return 0
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        print(f"kloop-contain: cannot start {argv[0]}: {exc.strerror}", file=sys.stderr)
        return 127
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
