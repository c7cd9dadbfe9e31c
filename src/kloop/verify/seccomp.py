"""The sandbox's seccomp filter: the system calls a kernel never needs fail with EPERM.

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
Where libseccomp or the binding is missing, `apply` returns None and the verdict's `sandbox_policy`
says `seccomp: none`.
"""

from __future__ import annotations

import errno

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


def available() -> bool:
    """Whether the binding and libseccomp load here."""
    try:
        import pyseccomp  # noqa: F401
    except (ImportError, RuntimeError, OSError):
        return False
    return True


def apply() -> str | None:
    """Load the filter into this process for good; the text for `sandbox_policy`, or None when unavailable."""
    try:
        import pyseccomp as sc
    except (ImportError, RuntimeError, OSError):
        return None
    deny = sc.ERRNO(errno.EPERM)
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
    return f"seccomp: {len(DENIED)} calls, namespace clones and SIOCGSKNS denied"
