"""What the sandbox process may touch on disk, enforced by a CPython audit hook.

Installed before the candidate is imported and impossible to remove from Python, the hook refuses
(PermissionError) opening or listing paths outside the allowed roots, and paths under the denied
roots (the task, the baseline) even when an allowed root contains them, and other processes'
/proc entries (the supervisor's memory holds the seed), and writes beneath the read-only roots (the
shared build cache: only the supervisor publishes there). Every refusal is also recorded, and the
supervisor turns any record into a REJECTED verdict (`sandbox_policy`), so catching the
PermissionError does not help. A candidate calling libc through ctypes goes around the hook; the
Landlock ruleset of `landlock.py`, applied right after it, closes that where the kernel has it.
"""

from __future__ import annotations

import os
import re
import site
import sys
from collections.abc import Iterable

SYSTEM_ROOTS = ("/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin", "/etc", "/sys", "/dev", "/opt", "/run")
_PROC_PID = re.compile(r"^/proc/(\d+)(/|$)")
_WRITE_EVENTS = {"os.rename", "os.remove", "os.rmdir", "os.mkdir", "os.symlink", "os.link", "os.truncate",
                 "shutil.rmtree", "os.chmod", "os.chown", "os.utime"}  # fmt: skip
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PATH_EVENTS = {"os.chmod", "os.chown", "os.utime", "open", "os.listdir", "os.scandir", "glob.glob", "os.chdir", "os.rename", "os.remove",
                "os.rmdir", "os.mkdir", "os.symlink", "os.link", "os.truncate", "shutil.rmtree"}  # fmt: skip


def python_roots() -> list[str]:
    """Where the interpreter, the standard library and installed packages live (read-only use).

    Task directories are denied explicitly, so an import path that happens to contain one
    (PYTHONPATH=.) still does not expose it.
    """
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    roots.update(site.getsitepackages())
    user_site = site.getusersitepackages()
    if isinstance(user_site, str):
        roots.add(user_site)
    import kloop

    roots.add(os.path.dirname(os.path.abspath(kloop.__file__)))
    # import paths (an editable install's src/, PYTHONPATH): package metadata is read from them
    roots.update(p for p in sys.path if p and os.path.isabs(p) and os.path.isdir(p))
    # never the whole file system: an import path of "/" (a process started with `-m` in /) would grant it all
    return sorted({os.path.realpath(r) for r in roots if r} - {"/"})


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


class SandboxPolicy:
    """Allowed and denied filesystem roots; `install` arms the audit hook for this process."""

    def __init__(self, allow: list[str], deny: list[str], read_only: list[str] | None = None) -> None:
        self.allow = [os.path.realpath(p) for p in allow]
        self.deny = [os.path.realpath(p) for p in deny]
        self.read_only = [os.path.realpath(p) for p in read_only or []]
        self.violations: list[str] = []
        self._pid = str(os.getpid())
        self._busy = False

    def permits(self, path: str) -> bool:
        """Whether the sandbox may touch `path` (an absolute or cwd-relative path)."""
        real = os.path.realpath(path)
        match = _PROC_PID.match(real)
        if match and match.group(1) != self._pid:
            return False
        if real.startswith("/proc"):
            return True
        if _under(real, self.deny):
            return False
        return _under(real, self.allow)

    def permits_write(self, path: str) -> bool:
        """Whether the sandbox may create, change or remove `path`."""
        return self.permits(path) and not _under(os.path.realpath(path), self.read_only)

    def install(self) -> None:
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple) -> None:
        if event not in _PATH_EVENTS or self._busy or not args:
            return
        writes = event in _WRITE_EVENTS or (event == "open" and _opens_for_write(args))
        # rename, symlink and link name a second path (the one created): check both
        for path in args[:2] if event in ("os.rename", "os.symlink", "os.link") else args[:1]:
            self._check(event, path, writes)

    def _check(self, event: str, path: object, writes: bool) -> None:
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str):
            return  # file descriptors and None: nothing new is reached by name
        self._busy = True  # realpath itself may raise audit events
        try:
            allowed = self.permits_write(path) if writes else self.permits(path)
        finally:
            self._busy = False
        if not allowed:
            self.violations.append(f"{event} {path}" + (" (write)" if writes else ""))
            raise PermissionError(f"kloop sandbox: {event} of {path} is not allowed")


def _opens_for_write(args: tuple) -> bool:
    """The `open` audit event carries (path, mode, flags): mode for open(), flags for os.open."""
    mode = args[1] if len(args) > 1 else None
    flags = args[2] if len(args) > 2 else 0
    if isinstance(mode, str) and any(c in mode for c in "wax+"):
        return True
    return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)
