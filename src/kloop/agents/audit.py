"""kloop's own evidence of what a contained agent tried and was refused: failed syscalls, seen from outside.

Every CLI words a refusal its own way (`Read-only file system`, `write failed: unrecognized filesystem
error`, `unsupported custom tool call`, or nothing at all), so refusals are not read from what a CLI
prints. The contained process tree runs under `strace -f`, which records, from outside the tree, each
file syscall that failed: the kernel's answer to the agent, whatever channel (shell, file tool, patch
tool, a Python one-liner) made it. A write the containment refused (EROFS from the read-only mounts,
EACCES from Landlock, EPERM) or a read of a hidden place (EACCES from Landlock's read allow-list)
is a `Denial`; the loop rejects the round on any denial aimed at what kloop guards, with one reason
whatever the channel.

strace runs with `--seccomp-bpf`, so only the listed syscalls stop the tracee (the cost is small).
The agent cannot reach it: strace is outside its PID namespace and Landlock domain, and its log is
outside the agent's writable paths. Where strace is missing the audit is skipped and says so; the
watched files (workspace fingerprint, sealed hashes, kloop's package digest) still gate the round.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

__all__ = ["AUDITED_SYSCALLS", "Denial", "Intent", "audited", "auditor", "denials_in_log", "forbidden"]

WRITE_CALLS = ("creat", "mkdir", "mkdirat", "unlink", "unlinkat", "rmdir", "rename", "renameat", "renameat2",
               "link", "linkat", "symlink", "symlinkat", "truncate", "chmod", "fchmodat", "chown",
               "lchown", "fchownat", "utimensat", "mknod", "mknodat", "setxattr", "lsetxattr", "removexattr",
               "lremovexattr")
OPEN_CALLS = ("open", "openat", "openat2")
AUDITED_SYSCALLS = (*OPEN_CALLS, "execve", "execveat", *WRITE_CALLS)
REFUSALS = ("EROFS", "EACCES", "EPERM")
_WRITE_FLAGS = re.compile(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND")
_LINE = re.compile(r"^(?:\[pid\s+)?(?P<pid>\d+)\]?\s+(?P<call>\w+)\((?P<args>.*)\)\s+=\s+-1\s+(?P<errno>E[A-Z]+)")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_DIRFD = re.compile(r"^(?:AT_FDCWD|\d+<(?P<dir>[^>]*)>)")


class Intent(StrEnum):
    write = "write"
    read = "read"
    exec = "exec"


@dataclass(frozen=True)
class Denial:
    """One refused syscall: what the agent wanted to do to which path, and the kernel's answer."""

    intent: Intent
    path: str
    call: str
    errno: str

    def line(self) -> str:
        return f"{self.intent.value} {self.path} ({self.call}: {self.errno})"


def auditor() -> str | None:
    """The strace program, or None where the audit cannot run."""
    return shutil.which("strace")


def audited(argv: Sequence[str], log: Path) -> list[str]:
    """`argv` under strace writing failed file syscalls to `log`; argv unchanged where strace is missing."""
    exe = auditor()
    if exe is None:
        return list(argv)
    log.parent.mkdir(parents=True, exist_ok=True)
    return [exe, "-f", "-A", "--seccomp-bpf", "-Z", "-qq", "-y", "-s", "4096", "-e", "signal=none",
            "-e", "trace=" + ",".join(AUDITED_SYSCALLS), "-o", str(log), "--", *argv]


def _unescape(text: str) -> str:
    return text.encode("latin-1", "backslashreplace").decode("unicode_escape", "replace")


def _intent(call: str, args: str) -> Intent:
    if call in ("execve", "execveat"):
        return Intent.exec
    if call in OPEN_CALLS:
        return Intent.write if _WRITE_FLAGS.search(args) else Intent.read
    return Intent.write


def _paths(args: str, cwd: str) -> list[str]:
    """The path arguments of a call, made absolute (dirfd from strace's `-y`, else the agent's cwd)."""
    base = cwd
    found = _DIRFD.match(args)
    if found and found.group("dir"):
        base = found.group("dir")
    out = []
    for quoted in _QUOTED.findall(args)[:2]:
        path = _unescape(quoted)
        out.append(os.path.normpath(path if path.startswith("/") else os.path.join(base, path)))
    return out


def denials_in_log(log: Path, cwd: Path) -> list[Denial]:
    """Every refused file syscall the log holds (EROFS, EACCES, EPERM), in order, without repeats."""
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    seen: dict[tuple[str, str], Denial] = {}
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None or match.group("errno") not in REFUSALS:
            continue
        call, args = match.group("call"), match.group("args")
        paths = _paths(args, str(cwd))
        if not paths:
            continue
        path = paths[-1] if call.startswith(("rename", "link", "symlink")) else paths[0]
        denial = Denial(_intent(call, args), path, call, match.group("errno"))
        seen.setdefault((denial.intent.value, denial.path), denial)
    return list(seen.values())


def inside(path: str, roots: Iterable[str | Path]) -> bool:
    for root in roots:
        r = str(root).rstrip("/")
        if path == r or path.startswith(r + "/"):
            return True
    return False


def forbidden(denials: Iterable[Denial], readable: Iterable[str | Path]) -> list[Denial]:
    """The denials that are attempts at what the agent must not touch: every refused write or exec, and
    every refused read except a directory on the way to a readable path (runtimes list the parents of
    what they load; nothing beyond the allow-list is shown by that refusal) and /proc entries of the
    other processes in its own PID namespace."""
    roots = [str(r).rstrip("/") or "/" for r in readable]
    out = []
    for denial in denials:
        if denial.intent is Intent.read and any(r.startswith(denial.path.rstrip("/") + "/") for r in roots):
            continue
        if denial.intent is Intent.read and denial.path.startswith("/proc/"):
            # Another process's /proc entries inside the agent's own PID namespace (the gateway relay):
            # Landlock refuses them as it refuses ptrace; runtimes scan them (Claude Code reads environ).
            continue
        out.append(denial)
    return out
