"""The sandbox's seccomp filter: the system calls a kernel never needs fail with EPERM, as seen by the supervisor.

Applied by the sandbox at startup, before torch or any candidate code loads, through libseccomp's
maintained binding (`pyseccomp`), so it holds for every thread and child the candidate starts
(a filter cannot be removed, and `no_new_privs` is set with it). What it refuses, and why:
- bpf, perf_event_open: probes on the supervisor's hashing and system-wide sampling (issue 29);
- setns, unshare, clone with a CLONE_NEW* flag, clone3 (ENOSYS, so libc falls back to clone, whose
  flags a filter can read): no way into another namespace, host ones through an inherited fd included;
- mount and the new mount API, pivot_root, swapon/off: no file system changes;
- keyctl, add_key, request_key: no keys planted in a keyring that outlives the box;
- ptrace, process_vm_readv/writev: no reading another process's memory;
- the SysV IPC calls: no shared memory, queues or semaphores that outlive the box;
- module, kexec and reboot calls, sethostname, setdomainname, clock and time setting, syslog, acct;
- ioctl SIOCGSKNS: an inherited socket cannot hand out its (host) network namespace.

Who sees a refusal: the filter answers these calls with SECCOMP_RET_USER_NOTIF, and the listener
descriptor the kernel returns goes to the supervisor (`hand_over`, before torch is imported) and out
of the sandbox (its fd number is overwritten with /dev/null). The supervisor's `Listener` thread
receives each refused call from the kernel, records its name, and answers EPERM. So a refused call is
a fact the candidate cannot erase: patching the harness's violation list, its reporting functions or
its replies changes nothing the supervisor read (issue 29: "the verdict's facts come from outside the
candidate's process"). Only a notified call blocks for the round trip (~tens of µs); every allowed
call runs through the filter as before. clone3 keeps a plain ENOSYS: glibc calls it for every
thread, and its fallback to clone is what lets the filter read the flags.

Where the kernel or libseccomp cannot notify (API level below 5), the calls still fail with EPERM,
nobody records them, and `sandbox_policy` says so. Where libseccomp or the binding is missing,
`apply` returns no text and `sandbox_policy` says `seccomp: none`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import select
import socket
import struct
import threading
import time
from dataclasses import dataclass

DENIED = (
    "bpf", "perf_event_open", "setns", "unshare", "mount", "umount2", "pivot_root", "move_mount",
    "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "swapon", "swapoff",
    "keyctl", "add_key", "request_key", "ptrace", "process_vm_readv", "process_vm_writev",
    "shmget", "shmat", "shmctl", "shmdt", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop",
    "semtimedop", "semctl", "init_module", "finit_module", "delete_module", "kexec_load",
    "kexec_file_load", "reboot", "sethostname", "setdomainname", "settimeofday", "clock_settime",
    "clock_adjtime", "adjtimex", "syslog", "acct", "quotactl", "open_by_handle_at", "iopl", "ioperm",
    "userfaultfd", "lookup_dcookie",
)  # fmt: skip
CLONE_NEW_FLAGS = {
    "CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000, "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000, "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000, "CLONE_NEWTIME": 0x00000080,
}  # fmt: skip
SIOCGSKNS = 0x894C
NOTIFY_API = 5
"""libseccomp's API level from which SCMP_ACT_NOTIFY loads (kernel 5.0 and libseccomp 2.4 or later)."""
HANDOVER_WITH, HANDOVER_WITHOUT = b"S", b"N"
"""The sandbox's first byte on the channel: the listener fd follows (S), or there is none (N)."""
_RECV = 0xC0502100  # SECCOMP_IOCTL_NOTIF_RECV: _IOWR('!', 0, struct seccomp_notif), 80 bytes
_SEND = 0xC0182101  # SECCOMP_IOCTL_NOTIF_SEND: _IOWR('!', 1, struct seccomp_notif_resp), 24 bytes
_NOTIF = struct.Struct("=QIIiIQ6Q")  # id, pid, flags, data.nr, data.arch, data.instruction_pointer, data.args
_RESP = struct.Struct("=QqiI")  # id, val, error, flags
KEEP = 64
"""How many refused calls a listener keeps by name; beyond that it only counts."""


def available() -> bool:
    """Whether the binding and libseccomp load here."""
    try:
        import pyseccomp  # noqa: F401
    except (ImportError, RuntimeError, OSError):
        return False
    return True


def apply() -> tuple[str | None, int | None]:
    """Load the filter into this process for good: the text for `sandbox_policy` and the listener fd.

    The text is None when seccomp is unavailable; the fd is None when refused calls cannot be
    reported to a listener (they still fail with EPERM). The caller must `hand_over` the fd
    before any refused call can happen, or that call waits for a listener.
    """
    try:
        import pyseccomp as sc
    except (ImportError, RuntimeError, OSError):
        return None, None
    notify = _can_notify(sc)
    deny = sc.NOTIFY if notify else sc.ERRNO(errno.EPERM)
    filt = sc.SyscallFilter(defaction=sc.ALLOW)
    for name in DENIED:
        try:
            filt.add_rule(deny, name)
        except (OSError, ValueError):
            continue  # a call this architecture or libseccomp does not know cannot be made either
    for flag in CLONE_NEW_FLAGS.values():
        filt.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    filt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    filt.add_rule(deny, "ioctl", sc.Arg(1, sc.EQ, SIOCGSKNS))
    filt.load()
    fd = sc._libseccomp.seccomp_notify_fd(filt._filter) if notify else -1  # noqa: SLF001 -- not wrapped by pyseccomp
    seen = "each refused call reported to the supervisor" if fd >= 0 else "refused calls not observed"
    return f"seccomp: {len(DENIED)} calls, namespace clones and SIOCGSKNS denied ({seen})", fd if fd >= 0 else None


def _can_notify(sc: object) -> bool:
    try:
        return sc.get_api() >= NOTIFY_API and hasattr(sc._libseccomp, "seccomp_notify_fd")  # type: ignore[attr-defined]
    except (OSError, NotImplementedError, AttributeError):
        return False


def hand_over(sock: socket.socket, fd: int | None) -> None:
    """Send the listener fd to the supervisor (first thing on the channel), then lose it here.

    The fd number is overwritten with /dev/null rather than closed: libseccomp still holds the
    number, and whatever reused a closed number could be closed by it later. After this, nothing
    in this process can receive (and so swallow) a notification.
    """
    socket.send_fds(sock, [HANDOVER_WITH if fd is not None else HANDOVER_WITHOUT], [fd] if fd is not None else [])
    if fd is not None:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, fd)
        os.close(null)


def take_over(sock: socket.socket, timeout_s: float) -> int | None:
    """The supervisor's side of `hand_over`: the listener fd, or None when the sandbox has none.

    Raises EOFError when the sandbox closed the channel first and ValueError on any other first byte.
    """
    sock.settimeout(timeout_s)
    msg, fds, _flags, _addr = socket.recv_fds(sock, 1, 2)
    if not msg:
        raise EOFError("the sandbox closed the channel before handing over its seccomp listener")
    keep = fds[0] if msg == HANDOVER_WITH and len(fds) == 1 else None
    for extra in fds if keep is None else fds[1:]:
        os.close(extra)
    if keep is not None:
        os.set_inheritable(keep, False)  # no later child of the supervisor gets it
    if msg not in (HANDOVER_WITH, HANDOVER_WITHOUT) or (msg == HANDOVER_WITH) != (keep is not None):
        if keep is not None:
            os.close(keep)
        raise ValueError(f"expected the seccomp hand-over, got {msg!r} with {len(fds)} descriptors")
    return keep


@dataclass(frozen=True)
class Refusal:
    """One refused call, as the kernel reported it: when, which task (a host pid), and what."""

    at_ns: int
    pid: int
    call: str


class Listener:
    """The supervisor's end of a sandbox's seccomp filter: records each refused call, answers EPERM.

    `armed()` marks where candidate code may start to run (the build request): refusals before
    it are the harness's own start-up and are kept apart (`before`), never held against a candidate.
    The thread ends when the filter has no task left (the box is dead) or at `close`.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.refused: list[Refusal] = []
        self.before: list[Refusal] = []
        self.count = 0
        """Refusals after arming, kept or not."""
        self._armed = False
        self._names = _syscall_names()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="kloop-seccomp-listener")

    def start(self) -> Listener:
        self._thread.start()
        return self

    def arm(self) -> None:
        with self._lock:
            self._armed = True

    def snapshot(self) -> tuple[int, list[Refusal]]:
        """(count, kept refusals) after arming, as of now."""
        with self._lock:
            return self.count, list(self.refused)

    def _serve(self) -> None:
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        while not self._stop.is_set():
            try:
                events = poller.poll(250)
            except InterruptedError:
                continue
            for _fd, mask in events:
                if mask & select.POLLIN:
                    self._answer_one()
                elif mask & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                    return  # no task uses the filter any more: nothing can be refused again

    def _answer_one(self) -> None:
        buf = bytearray(_NOTIF.size)  # the kernel wants it zeroed
        try:
            fcntl.ioctl(self.fd, _RECV, buf, True)
        except OSError:  # ENOENT: the caller died (or got a signal) before we received it
            return
        nid, pid, _flags, nr, _arch, _ip, *args = _NOTIF.unpack(buf)
        refusal = Refusal(time.monotonic_ns(), pid, self._describe(nr, args))
        with self._lock:  # recorded before the answer: by the time the call returns, it is on file
            bucket = self.refused if self._armed else self.before
            if self._armed:
                self.count += 1
            if len(bucket) < KEEP:
                bucket.append(refusal)
        with contextlib.suppress(OSError):  # ENOENT: the caller is gone; nothing to answer
            fcntl.ioctl(self.fd, _SEND, _RESP.pack(nid, 0, -errno.EPERM, 0))

    def _describe(self, nr: int, args: list[int]) -> str:
        name = self._names.get(nr, f"syscall {nr}")
        if name == "clone":
            flags = [f for f, bit in CLONE_NEW_FLAGS.items() if args[0] & bit]
            return f"clone({'|'.join(flags)})"
        if name == "ioctl":
            return f"ioctl(fd {args[0]}, SIOCGSKNS)" if args[1] == SIOCGSKNS else f"ioctl({args[1]:#x})"
        return name

    def close(self, timeout_s: float = 2.0) -> None:
        """Stop the thread and close the fd (pending and later refused calls then get ENOSYS from the kernel)."""
        self._stop.set()
        self._thread.join(timeout_s)
        with contextlib.suppress(OSError):
            os.close(self.fd)


def _syscall_names() -> dict[int, str]:
    """Native syscall numbers of what the filter notifies, resolved by libseccomp (the supervisor's copy)."""
    import pyseccomp as sc

    names: dict[int, str] = {}
    for name in (*DENIED, "clone", "ioctl"):
        with contextlib.suppress(OSError, ValueError, TypeError):
            names[sc.resolve_syscall(sc.Arch.NATIVE, name)] = name
    return names
