"""Containment: each sandbox's cgroups and namespaces, and the red team that tries to get out of them.

The attacks in tests/verify/redteam/{containment,network,secrets}/ do the harmful thing for real
(a helper that outlives the box and renices later ones, renicing and pinning the sibling baseline
box, widening CPUs, filling and littering /dev/shm, reaching listening sockets, reading the
supervisor's environ and stack for the seed secret). Where an attack's success would be invisible
in a verdict it raises a "CANARY" error instead, so a failed defence fails these tests outright,
and each test also checks the host afterwards (no survivor, nothing left in /dev/shm, no bytes
arrived on the listener, the secret nowhere in the verdict or the log).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kloop.task.load import load_task
from kloop.verify import VerifyOptions, VerifyResult, VerifyStatus, verify
from kloop.verify.cgroups import Containment, Limits, pick_cpus
from kloop.verify.contain import fixed_layout_available, namespaces_available, wrap
from kloop.verify.process import SandboxProcess

HERE = Path(__file__).parent
REDTEAM = HERE / "redteam"
TASK = HERE / "tasks" / "rmsnorm_tiny"
S = VerifyStatus
NEEDS_NS = pytest.mark.skipif(not namespaces_available(), reason="unshare cannot create PID/net/mount namespaces here")


def _groups_or_skip(label: str, limits: Limits) -> Containment:
    box = Containment.create(label, limits)
    if not box.dirs:
        pytest.skip(f"no writable cgroup v1 controller under /sys/fs/cgroup ({box.missing})")
    return box


def _options(tmp_path: Path, *, timing: bool = False) -> VerifyOptions:
    return VerifyOptions(device="cpu", timing=timing, speedup=timing, timeout_s=20, build_timeout_s=60,
                         memory_limit_mb=2048, iterations=4, rounds=2, warmup=1, recheck=2, workloads=1,
                         log_dir=tmp_path / "logs", cache_dir=tmp_path / "cache", prestart=True)  # fmt: skip


def _verify(group: str, name: str, tmp_path: Path, *, timing: bool = False) -> VerifyResult:
    return verify(load_task(TASK), REDTEAM / group / name, _options(tmp_path, timing=timing))


def _with_marker(marker: bytes) -> list[int]:
    """Host pids whose command line carries `marker` (zombies have none, so they do not count)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


def _no_canary(result: VerifyResult) -> None:
    assert not any("CANARY" in r for r in result.reasons), result.reasons


# -- the mechanisms themselves ----------------------------------------------------------------
def test_containment_freezes_counts_cpu_and_kills_what_left_the_process_group(tmp_path: Path) -> None:
    box = _groups_or_skip("test", Limits(cpus=pick_cpus(1), memory_bytes=256 << 20, pids_max=64))
    script = "import os, subprocess, sys\n" \
             "subprocess.Popen([sys.executable, '-c', 'while True: pass', 'kloop-test-busy-helper'], start_new_session=True)\n" \
             "while True: pass\n"  # fmt: skip
    launch = wrap([sys.executable, "-c", script], box, use_namespaces=False)
    proc = subprocess.Popen(launch.argv, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while len(box.pids()) < 2 or not _with_marker(b"kloop-test-busy-helper"):
            assert time.monotonic() < deadline and proc.poll() is None, "the helper never started"
            time.sleep(0.05)
        if "freezer" in box.dirs and "cpuacct" in box.dirs:
            assert box.freeze()
            frozen = box.cpu_time_ns()
            time.sleep(0.2)
            assert box.cpu_time_ns() == frozen  # nothing in the box ran while frozen
            assert box.thaw()
            while box.cpu_time_ns() == frozen:
                assert time.monotonic() < deadline
                time.sleep(0.02)
        os.killpg(proc.pid, 9)  # the process-group kill the supervisor used to rely on
        proc.wait()
        assert _with_marker(b"kloop-test-busy-helper"), "the setsid helper should have survived the killpg"
        box.kill()
        while _with_marker(b"kloop-test-busy-helper"):
            assert time.monotonic() < deadline, "Containment.kill left the helper alive"
            time.sleep(0.02)
    finally:
        box.remove()
        if proc.poll() is None:
            proc.kill()
    assert not box.dirs


def test_settled_cpu_time_counts_the_work_done_after_the_reply() -> None:
    """cpuacct charges a running thread only at a tick or when it leaves the CPU: a settled read waits."""
    box = _groups_or_skip("settle", Limits(cpus=pick_cpus(1), pids_max=64))
    if "cpuacct" not in box.dirs:
        pytest.skip("no cpuacct controller")
    script = "import os, sys, time\n" \
             "def burn(s):\n    t = time.thread_time()\n    while time.thread_time() - t < s: pass\n" \
             "for _ in range(5):\n    os.read(0, 1)\n    burn(0.03)\n    os.write(1, b'.')\n    burn(0.03)\n"  # fmt: skip
    launch = wrap([sys.executable, "-c", script], box, use_namespaces=False)
    proc = subprocess.Popen(launch.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        time.sleep(0.5)  # interpreter start-up, then blocked on its first read
        for _ in range(5):
            before = box.cpu_time_ns(settled=True)
            assert before is not None
            proc.stdin.write(b"x")
            proc.stdin.flush()
            assert proc.stdout.read(1) == b"."  # the "reply": half the work is still to come
            after = box.cpu_time_ns(settled=True)
            assert after is not None
            assert after - before >= 55_000_000, (after - before) / 1e6  # both 30 ms bursts, not one
    finally:
        proc.kill()
        proc.wait()
        box.remove()


@NEEDS_NS
def test_sandbox_has_its_own_namespaces_cpus_and_private_shm(tmp_path: Path) -> None:
    box = SandboxProcess(device="cpu", threads=1, memory_limit_mb=1024, log_path=tmp_path / "log.txt").start()
    try:
        box.wait_ready()
        pid = box.sandbox_pid()
        assert pid is not None
        for ns in ("pid", "net", "mnt"):
            assert os.readlink(f"/proc/{pid}/ns/{ns}") != os.readlink(f"/proc/self/ns/{ns}"), ns
        mounts = Path(f"/proc/{pid}/mountinfo").read_text()
        shm = [line for line in mounts.splitlines() if " /dev/shm " in line]
        assert shm and "kloop-shm" in shm[-1] and "size=262144k" in shm[-1], shm  # 256 MB
        status = Path(f"/proc/{pid}/status").read_text()
        allowed = next(line.split(":", 1)[1].strip() for line in status.splitlines() if line.startswith("Cpus_allowed_list"))
        want = pick_cpus(1)
        assert allowed == ",".join(str(c) for c in want) or (len(want) == 1 and allowed == str(want[0]))
        assert box.containment is not None and pid in box.containment.pids()
    finally:
        box.close()
    assert box.containment is not None and not box.containment.dirs


def _maps(pid: int) -> dict[str, int]:
    """Lowest address each mapped file (and the heap and stack) starts at in process `pid`."""
    starts: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 6:
            name, start = parts[5], int(parts[0].split("-")[0], 16)
            starts[name] = min(start, starts.get(name, start))
    return starts


@pytest.mark.skipif(not fixed_layout_available(), reason="setarch -R cannot turn ASLR off here")
def test_boxes_have_one_address_layout(tmp_path: Path) -> None:
    """With ASLR every box drew its own layout, and identical code in two boxes ran up to 30 % apart
    for a whole verification; fixed, the boxes map libraries, heap and stack at the same addresses."""
    boxes = [SandboxProcess(device="cpu", threads=1, memory_limit_mb=1024, log_path=tmp_path / f"{label}.txt",
                            label=label).start() for label in ("candidate", "baseline")]  # fmt: skip
    try:
        maps = []
        for box in boxes:
            box.wait_ready()
            pid = box.sandbox_pid()
            assert pid is not None
            assert int(Path(f"/proc/{pid}/personality").read_text(), 16) & 0x0040000  # ADDR_NO_RANDOMIZE
            maps.append(_maps(pid))
        shared = [name for name in maps[0] if name in maps[1] and ("libpython" in name or "libtorch_cpu" in name
                                                                   or name in ("[heap]", "[stack]"))]  # fmt: skip
        assert len(shared) >= 3, sorted(maps[0])
        assert {n: maps[0][n] for n in shared} == {n: maps[1][n] for n in shared}
        assert "address layout: fixed (ASLR off)" in boxes[0].policy()
    finally:
        for box in boxes:
            box.close()


# -- the red team ----------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "marker"), [("attack_setsid_helper", b"kloop-redteam-helper-setsid"),
                                              ("attack_double_fork", b"kloop-redteam-helper-doublefork")])
def test_helpers_do_not_outlive_their_sandbox(name: str, marker: bytes, tmp_path: Path) -> None:
    result = _verify("containment", name, tmp_path)
    _no_canary(result)
    assert result.status is S.PASSED, result.reasons  # harmless once contained: nothing of it survives
    deadline = time.monotonic() + 10
    while _with_marker(marker):
        assert time.monotonic() < deadline, f"{name}: helper {_with_marker(marker)} outlived the verification"
        time.sleep(0.05)


@pytest.mark.parametrize(("name", "marker"), [("attack_busy_thread", None),
                                              ("attack_busy_helper", b"kloop-redteam-helper-busy")])
def test_threads_and_helpers_that_work_after_the_reply_are_rejected(name: str, marker: bytes | None,
                                                                    tmp_path: Path) -> None:  # fmt: skip
    """A thread or a helper process that keeps computing after the reply is work outside the timed call;
    the supervisor sees it from outside (its CPU time in /proc/<tid>/schedstat), whatever the box says."""
    result = _verify("containment", name, tmp_path)
    assert result.status is S.REJECTED, result.reasons
    assert "background_threads" in result.failed_checks(), result.reasons
    assert any(re.search(r"background_threads: .*\(tid \d+\): [\d.]+ ms of CPU|runnable throughout", r)
               for r in result.reasons), result.reasons  # fmt: skip
    deadline = time.monotonic() + 10
    while marker is not None and _with_marker(marker):
        assert time.monotonic() < deadline, f"{name}: helper {_with_marker(marker)} outlived the verification"
        time.sleep(0.05)


def test_idle_threads_are_not_work(tmp_path: Path) -> None:
    """torch's intra-op pool (torch.set_num_threads(8)) and a helper thread asleep for good exist after
    every reply but do nothing there: counting threads that merely exist rejected honest kernels."""
    result = _verify("containment", "honest_idle_threads", tmp_path)
    assert result.status is S.PASSED, result.reasons


@pytest.mark.parametrize("timing", [False, True])
def test_a_thread_asleep_at_the_reply_that_ends_soon_is_not_work(timing: bool, tmp_path: Path) -> None:
    """Every call leaves a threading.Timer asleep at the reply that ends ~5 ms later having done
    nothing (a library's idle timer, a pool shut down without waiting): no work after the reply,
    so no background_threads. The evidence line shows a timer ran and ended after its call."""
    result = _verify("containment", "honest_short_timer", tmp_path, timing=timing)
    assert result.log_path is not None
    log = Path(result.log_path).read_text(errors="replace")
    assert re.search(r"KLOOP-EVIDENCE honest_short_timer: a timer thread ran and ended [\d.]+ ms after", log), log[-2000:]
    assert result.status is S.PASSED, result.reasons


@pytest.mark.parametrize(("name", "timing"), [("attack_renice_sibling", True), ("attack_realtime_priority", False),
                                              ("attack_affinity_widen", False), ("attack_threads_children", False)])
def test_box_cannot_touch_its_sibling_or_widen_its_cpus(name: str, timing: bool, tmp_path: Path) -> None:
    if len(os.sched_getaffinity(0)) < 2 and name in ("attack_affinity_widen", "attack_threads_children"):
        pytest.skip("one CPU here: there is nothing to widen to")
    result = _verify("containment", name, tmp_path, timing=timing)
    _no_canary(result)
    assert result.status is S.PASSED, result.reasons


@pytest.mark.parametrize("name", ["attack_shm_fill", "attack_shm_persist"])
def test_dev_shm_is_private_bounded_and_gone_afterwards(name: str, tmp_path: Path) -> None:
    before = set(os.listdir("/dev/shm"))
    result = _verify("containment", name, tmp_path)
    _no_canary(result)
    assert result.status in (S.PASSED, S.RUNTIME_ERROR, S.COMPILE_ERROR), result.reasons
    left = {n for n in set(os.listdir("/dev/shm")) - before if n.startswith("kloop-redteam")}
    assert not left, f"{name} left {left} in the host's /dev/shm"


@NEEDS_NS
def test_no_network_reaches_out_of_the_sandbox(tmp_path: Path) -> None:
    token = secrets.token_hex(4)
    with socket.socket() as tcp, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix:
        tcp.bind(("127.0.0.1", 0))
        tcp.listen(8)
        unix.bind(f"\0kloop-redteam-{token}")
        unix.listen(8)
        for name in ("attack_network_tcp", "attack_network_unix_abstract", "attack_network_udp"):
            result = _verify("network", name, tmp_path / name)
            _no_canary(result)
            assert result.status is S.PASSED, (name, result.reasons)
        for listener in (tcp, unix):
            listener.setblocking(False)
            with pytest.raises(BlockingIOError):
                listener.accept()  # nobody connected


@pytest.mark.parametrize("name", ["attack_environ_python", "attack_environ_ctypes"])
def test_seed_secret_is_not_readable_from_the_sandbox(name: str, tmp_path: Path) -> None:
    """A real `kloop verify --seed-secret` process holds the secret in its own environ block."""
    secret = f"kloop-redteam-secret-{secrets.token_hex(8)}"
    out = tmp_path / "verdict.json"
    kloop = Path(sys.executable).with_name("kloop")
    cmd = [str(kloop), "verify", str(TASK), str(REDTEAM / "secrets" / name), "--seed-secret", "--no-timing",
           "--workloads", "1", "--json", str(out), "--log-dir", str(tmp_path / "logs")]  # fmt: skip
    env = {**os.environ, "KLOOP_SEED_SECRET": secret, "KLOOP_HOME": str(tmp_path / "home")}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    verdict = json.loads(out.read_text())
    assert "CANARY" not in json.dumps(verdict), verdict["reasons"]
    for text in (proc.stdout, proc.stderr, out.read_text(),
                 *(p.read_text(errors="replace") for p in (tmp_path / "logs").rglob("*") if p.is_file())):
        assert secret not in text
    if verdict["status"] == "REJECTED":  # the audit hook refused a foreign /proc entry
        assert any(r.startswith("sandbox_policy") for r in verdict["reasons"]), verdict["reasons"]
    else:
        assert verdict["status"] == "PASSED", verdict["reasons"]
