"""Kernel-enforced filesystem policy for the sandbox: a Landlock ruleset applied through ctypes.

The audit hook in `policy.py` only sees Python-level opens; a candidate calling libc through ctypes
goes around it. Landlock is enforced by the kernel on every open, exec, mkdir, rename, ...: once
`restrict` returns, this process and everything it starts may read (and execute) only beneath the
read roots and write, create or remove only beneath the write roots. Landlock has no deny rules,
so a denied path inside an allowed root is carved out: the root's other entries are allowed one by
one instead. With ABI >= 6 the sandbox may not signal processes outside its domain either, and
Landlock always keeps it from ptracing (or reading /proc/<pid>/mem, cwd, environ of) the supervisor.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterable

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # x86_64 and aarch64 (generic table)
_PR_SET_NO_NEW_PRIVS = 38
_CREATE_RULESET_VERSION = 1 << 0
_RULE_PATH_BENEATH = 1
_SCOPE_SIGNAL = 1 << 1  # ABI 6

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REFER, TRUNCATE = 1 << 13, 1 << 14  # ABI 2, ABI 3
_ABI1_ALL = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE  # the only rights a rule on a file may carry
READ_RIGHTS = EXECUTE | READ_FILE | READ_DIR


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]  # fmt: skip


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The running kernel's Landlock ABI, or 0 when Landlock is missing, disabled or filtered."""
    try:
        libc = _libc()
        abi = int(libc.syscall(ctypes.c_long(_CREATE_RULESET), None, ctypes.c_size_t(0),
                               ctypes.c_uint32(_CREATE_RULESET_VERSION)))  # fmt: skip
    except (OSError, AttributeError):
        return 0
    return max(abi, 0)


def handled_rights(abi: int) -> int:
    """Every filesystem right the ABI knows (IOCTL_DEV left unhandled: device ioctls stay open)."""
    rights = _ABI1_ALL
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    return rights


def _carve(root: str, deny: list[str]) -> list[str]:
    """`root` itself, or (when a denied path lies inside it) its entries minus the denied branches."""
    inside = [d for d in deny if d.startswith(root.rstrip("/") + "/")]
    if any(root == d or root.startswith(d.rstrip("/") + "/") for d in deny):
        return []
    if not inside or not os.path.isdir(root):
        return [root]
    out: list[str] = []
    for name in sorted(os.listdir(root)):
        out.extend(_carve(os.path.join(root, name), inside))
    return out


def _add_rule(libc: ctypes.CDLL, ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # missing roots (no /lib32 here) simply grant nothing
    try:
        if not os.path.isdir(path):
            access &= _FILE_RIGHTS
        attr = _PathBeneathAttr(allowed_access=access, parent_fd=fd)
        if libc.syscall(ctypes.c_long(_ADD_RULE), ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                        ctypes.byref(attr), ctypes.c_uint32(0)) != 0:  # fmt: skip
            raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
    finally:
        os.close(fd)


def restrict(read: Iterable[str], write: Iterable[str], deny: Iterable[str] = (), deny_write: Iterable[str] = ()) -> int:
    """Apply the ruleset to this process for good; returns the ABI used, 0 when Landlock is unavailable.

    `deny` paths are carved out of every grant (no access at all); `deny_write` paths only out of
    the write grants, so they stay readable and executable (an agent runs kloop, never edits it).

    Raises OSError only when the kernel has Landlock but refuses a rule (a bug, not a missing
    feature): the caller must not go on with a half-built sandbox.
    """
    abi = abi_version()
    if abi <= 0:
        return 0
    libc = _libc()
    handled = handled_rights(abi)
    denied = sorted({os.path.realpath(d) for d in deny})
    write_denied = sorted({*denied, *(os.path.realpath(d) for d in deny_write)})
    attr = _RulesetAttr(handled_access_fs=handled, handled_access_net=0, scoped=_SCOPE_SIGNAL if abi >= 6 else 0)
    ruleset = int(libc.syscall(ctypes.c_long(_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)),
                               ctypes.c_uint32(0)))  # fmt: skip
    if ruleset < 0:
        return 0  # e.g. EOPNOTSUPP (built in but disabled at boot)
    try:
        for roots, access, carved in ((read, READ_RIGHTS, denied), (write, handled, write_denied)):
            for root in sorted({os.path.realpath(r) for r in roots if r}):
                for path in _carve(root, carved):
                    _add_rule(libc, ruleset, path, access)
        if libc.prctl(ctypes.c_int(_PR_SET_NO_NEW_PRIVS), ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0),
                      ctypes.c_ulong(0)) != 0:  # fmt: skip
            return 0
        if libc.syscall(ctypes.c_long(_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            return 0  # refused (a filtered container): nothing was applied
    finally:
        os.close(ruleset)
    return abi
