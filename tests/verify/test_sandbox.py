"""The sandbox process and its policy, for real: spawn, pool, audit hook in a child interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kloop.verify.policy import SandboxPolicy
from kloop.verify.process import SandboxPool, SandboxProcess


def test_policy_allows_roots_denies_task_and_other_processes(tmp_path: Path) -> None:
    allowed, task = tmp_path / "allowed", tmp_path / "allowed" / "task"
    task.mkdir(parents=True)
    policy = SandboxPolicy(allow=[str(allowed)], deny=[str(task)])
    assert policy.permits(str(allowed / "x.py"))
    assert not policy.permits(str(task / "definition.json"))
    assert not policy.permits(str(allowed / "task" / ".." / "task" / "workloads.jsonl"))
    assert not policy.permits("/somewhere/else")
    assert policy.permits(f"/proc/{os.getpid()}/status") and policy.permits("/proc/self/fd")
    assert not policy.permits(f"/proc/{os.getppid()}/cmdline")


def test_audit_hook_refuses_and_records_even_when_the_error_is_swallowed(tmp_path: Path) -> None:
    secret = tmp_path / "task" / "definition.json"
    secret.parent.mkdir()
    secret.write_text("{}")
    script = textwrap.dedent(f"""
        import glob, os
        from kloop.verify.policy import SandboxPolicy, python_roots
        policy = SandboxPolicy(allow=[*python_roots(), {str(tmp_path)!r}], deny=[{str(secret.parent)!r}])
        policy.install()
        for attempt in (lambda: open({str(secret)!r}).read(), lambda: os.listdir({str(secret.parent)!r}),
                        lambda: glob.glob("/etc/../root/**", recursive=True), lambda: open("/proc/1/environ").read()):
            try:
                attempt()
            except PermissionError:
                pass
        open({str(tmp_path / "ok.txt")!r}, "w").write("fine")
        print(len(policy.violations))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout.strip()) >= 3
    assert (tmp_path / "ok.txt").read_text() == "fine"


def test_pool_hands_out_distinct_fresh_processes(tmp_path: Path) -> None:
    pool = SandboxPool()
    try:
        first = pool.take(device="cpu", threads=1, memory_limit_mb=2048, label="candidate")
        second = pool.take(device="cpu", threads=1, memory_limit_mb=2048, label="candidate")
        first.wait_ready(), second.wait_ready()
        pid_a, pid_b = first.sandbox_pid(), second.sandbox_pid()
        assert pid_a is not None and pid_b is not None and pid_a != pid_b
        assert first.proc is not None and second.proc is not None
        first.close()
        assert first.proc.poll() is not None
        second.close()
    finally:
        pool.close()


def test_pool_starts_spares_only_when_refilled(tmp_path: Path) -> None:
    """A spare starting beside a verification competes for its pinned CPU: spares start on `refill`."""
    import time

    pool = SandboxPool()
    try:
        first = pool.take(device="cpu", threads=1, memory_limit_mb=2048, label="candidate")
        first.close()
        before_refill = time.perf_counter_ns()
        pool.refill()
        pool.refill()  # one spare per configuration, however often it is asked
        time.sleep(0.2)
        taken = time.perf_counter_ns()
        spare = pool.take(device="cpu", threads=1, memory_limit_mb=2048, label="candidate")
        assert before_refill <= spare.started_ns < taken
        unrefilled = pool.take(device="cpu", threads=1, memory_limit_mb=2048, label="candidate")
        assert unrefilled.started_ns >= taken  # nothing was started in the background by the last take
        spare.close(), unrefilled.close()
    finally:
        pool.close()


def test_pool_closes_the_spares_of_configurations_no_longer_taken(tmp_path: Path) -> None:
    """One idle sandbox per configuration ever taken piled up in a long process (116, ~10 GB, in a
    full suite run): a configuration not taken for two refills loses its spare, and the spare dies."""
    pool = SandboxPool()
    try:
        first_spare = None
        for name in ("a", "b", "c"):
            (tmp_path / name).mkdir()
            box = pool.take(device="cpu", threads=1, memory_limit_mb=2048, label="candidate", cache_dir=tmp_path / name)
            box.close()
            pool.refill()
            if first_spare is None:
                (first_spare,) = pool.spares().values()
        held = pool.spares()
        assert sorted(Path(key[4]).name for key in held) == ["b", "c"]
        assert first_spare.proc is not None and first_spare.proc.poll() is not None  # closed, not forgotten
        assert all(spare.proc is not None and spare.proc.poll() is None for spare in held.values())
    finally:
        pool.close()


def test_sandbox_gets_a_private_dir_and_minimal_environment(tmp_path: Path) -> None:
    box = SandboxProcess(device="cpu", threads=1, memory_limit_mb=2048, log_path=tmp_path / "log.txt").start()
    try:
        box.wait_ready()
        pid = box.sandbox_pid()
        assert box.proc is not None and pid is not None
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        keys = {e.split(b"=", 1)[0].decode() for e in environ if e}
        assert "KLOOP_SEED_SECRET" not in keys
        assert os.readlink(f"/proc/{pid}/cwd") == str(box.workdir)
        assert os.getpgid(pid) == box.proc.pid  # its own process group, killed as one
    finally:
        box.close()
    assert not box.workdir.exists()


def test_landlock_ruleset_is_enforced_by_the_kernel_even_for_libc_calls(tmp_path: Path) -> None:
    """A real ruleset in a child: libc open (no audit hook involved) outside the roots gets EACCES."""
    from kloop.verify import landlock

    if landlock.abi_version() == 0:
        pytest.skip("this kernel has no Landlock: the sandbox falls back to the audit hook")
    shared, work = tmp_path / "shared", tmp_path / "work"
    (shared / "task").mkdir(parents=True)
    work.mkdir()
    for path in (tmp_path / "outside.txt", shared / "task" / "definition.json", shared / "ok.txt"):
        path.write_text("secret")
    script = textwrap.dedent(f"""
        import ctypes, os
        from kloop.verify import landlock
        from kloop.verify.policy import SYSTEM_ROOTS, python_roots
        abi = landlock.restrict(read=[*python_roots(), *SYSTEM_ROOTS, {str(shared)!r}], write=[{str(work)!r}, "/dev"],
                                deny=[{str(shared / "task")!r}])
        libc = ctypes.CDLL(None, use_errno=True)
        def libc_open(path, flags):
            fd = libc.open(path.encode(), flags, 0o600)
            return "ok" if fd >= 0 and libc.close(fd) == 0 else os.strerror(ctypes.get_errno())
        print(abi)
        print(libc_open({str(tmp_path / "outside.txt")!r}, os.O_RDONLY))
        print(libc_open({str(shared / "task" / "definition.json")!r}, os.O_RDONLY))
        print(libc_open({str(shared / "ok.txt")!r}, os.O_RDONLY))
        print(libc_open({str(shared / "new.txt")!r}, os.O_WRONLY | os.O_CREAT))
        print(libc_open({str(work / "new.txt")!r}, os.O_WRONLY | os.O_CREAT))
        print(libc_open("/dev/null", os.O_WRONLY))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    abi, outside, task, sibling, shared_write, work_write, dev_null = proc.stdout.split("\n")[:7]
    assert int(abi) == landlock.abi_version(), proc.stdout
    assert [outside, task, shared_write] == [os.strerror(13)] * 3, proc.stdout  # EACCES
    assert sibling == work_write == dev_null == "ok"


def test_verdict_says_which_filesystem_policy_ran(tmp_path: Path) -> None:
    from kloop.task.load import load_task
    from kloop.verify import VerifyOptions, landlock, verify

    here = Path(__file__).parent
    options = VerifyOptions(device="cpu", timing=False, speedup=False, log_dir=tmp_path / "logs",
                            cache_dir=tmp_path / "cache", workloads=1)  # fmt: skip
    result = verify(load_task(here / "tasks" / "rmsnorm_tiny"), here / "redteam" / "honest_dps", options)
    assert result.passed, result.reasons
    detail = next(c.detail for c in result.checks if c.name == "sandbox_policy")
    abi = landlock.abi_version()
    filesystem, namespaces, groups, layout, privilege, refused, *kernel = detail.split("; ")
    from kloop.verify import seccomp

    if seccomp.available():  # the listener: refused calls are the supervisor's facts, not the box's word
        assert refused == "refused calls: reported by the kernel to the supervisor", detail
    assert filesystem == (f"filesystem: landlock abi {abi}" if abi else "filesystem: audit hook only")
    from kloop.verify.contain import fixed_layout_available, namespaces_available, privilege_drop_available

    assert namespaces == ("namespaces: pid, net, mount, ipc, uts (/dev: null zero full random urandom, /dev/shm 256 MB)"
                          if namespaces_available() else "namespaces: none")  # fmt: skip
    if privilege_drop_available():  # root with setpriv: what the supervisor read in /proc/<pid>/status
        assert privilege.startswith("privilege: uid ") and privilege.endswith(", no capabilities, no_new_privs")
        uid = privilege.split()[2].rstrip(",")
        assert kernel == [f"kernel says: Uid {uid}, CapEff 0000000000000000, NoNewPrivs 1, Seccomp 2"], detail
    assert groups.startswith("cgroups: ")
    from kloop.verify import forkserver

    forked = ", forked from a fork server (torch imported once)" if forkserver.enabled("cpu") else ""
    assert layout == ("address layout: fixed (ASLR off)" if fixed_layout_available()
                      else "address layout: randomized per process") + forked


@pytest.mark.parametrize("entry", ["/nonexistent/kloop-test-site", "relative/missing"])
def test_an_import_path_that_does_not_exist_rejects_no_honest_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str
) -> None:
    """A stale PYTHONPATH entry is the user's shell, not the candidate: the import system lists it, and
    that listing once counted as a sandbox violation and rejected every honest candidate."""
    from kloop.task.load import load_task
    from kloop.verify import VerifyOptions, verify

    monkeypatch.setenv("PYTHONPATH", entry + os.pathsep + os.environ.get("PYTHONPATH", ""))
    here = Path(__file__).parent
    options = VerifyOptions(device="cpu", timing=False, speedup=False, log_dir=tmp_path / "logs",
                            cache_dir=tmp_path / "cache", workloads=1)  # fmt: skip
    result = verify(load_task(here / "tasks" / "rmsnorm_tiny"), here / "redteam" / "honest_dps", options)
    assert result.passed, result.reasons


def test_an_import_path_of_root_grants_no_read_of_the_whole_file_system(monkeypatch: pytest.MonkeyPatch) -> None:
    """`python -m` started in / puts "/" on sys.path: taken as a read root, Landlock granted every file
    (the fork server was started there once, and attack_read_task_files PASSED)."""
    from kloop.verify.policy import python_roots

    monkeypatch.setattr("sys.path", ["/", *__import__("sys").path])
    roots = python_roots()
    assert "/" not in roots and roots  # the interpreter's own roots are still there
