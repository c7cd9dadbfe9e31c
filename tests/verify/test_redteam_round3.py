"""Issue 29's red team (round 3): privilege, forged audits, malformed replies, leftovers, huge output.

Every attack in tests/verify/redteam/{privilege,forged,replies,leftovers}/ does its trick at import
and prints one `KLOOP-EVIDENCE <attack>: ...` line saying what it tried and what the kernel
answered (the exact errno). The tests assert that line, so a hold is never vacuous (round 3 found
8 of 18 earlier holds vacuous: the trick never ran). Where a trick's success would not show in a
verdict the attack raises a `CANARY` error. `probe_status` is not an attack: it reports, from
inside the sandbox, the uid, capabilities, no_new_privs and seccomp mode the candidate runs with.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kloop.task.load import load_task
from kloop.verify import VerifyOptions, VerifyResult, VerifyStatus, verify
from kloop.verify.contain import namespaces_available, privilege_drop_available
from kloop.verify.forkserver import OWNER_ENV
from kloop.verify.process import LOG_CAP_BYTES

HERE = Path(__file__).parent
REDTEAM = HERE / "redteam"
TASK = HERE / "tasks" / "rmsnorm_tiny"
S = VerifyStatus
CONTAINED = pytest.mark.skipif(not (namespaces_available() and privilege_drop_available()),
                               reason="needs root, unshare and setpriv (CI runs as root on this machine kind)")
EPERM, EACCES, ENOENT = 1, 13, 2


def _verify(group: str, name: str, tmp_path: Path) -> VerifyResult:
    options = VerifyOptions(device="cpu", timing=False, speedup=False, timeout_s=30, build_timeout_s=60,
                            memory_limit_mb=2048, workloads=1, heldout=1, log_dir=tmp_path / "logs",
                            cache_dir=tmp_path / "cache", prestart=False)  # fmt: skip
    return verify(load_task(TASK), REDTEAM / group / name, options)


def _evidence(result: VerifyResult, attack: str) -> str:
    """The attack's own evidence line from the candidate's log (kept in --log-dir)."""
    assert result.log_path is not None, "the candidate's log was not kept in --log-dir"
    text = Path(result.log_path).read_text(errors="replace")
    lines = [line for line in text.splitlines() if line.startswith(f"KLOOP-EVIDENCE {attack}:")]
    assert lines, f"the trick of {attack} never ran (no evidence line in {result.log_path})"
    return lines[0]


def _no_canary(result: VerifyResult) -> None:
    assert not any("CANARY" in r for r in result.reasons), result.reasons


# -- privilege -------------------------------------------------------------------------------------
@CONTAINED
def test_candidate_runs_unprivileged_as_seen_from_inside(tmp_path: Path) -> None:
    result = _verify("privilege", "probe_status", tmp_path)
    assert result.passed, result.reasons
    line = _evidence(result, "probe_status")
    fields = dict(re.findall(r"(\w+) (\S+?)(?:,|$)", line.split(": ", 1)[1]))
    assert int(fields["Uid"]) != 0 and int(fields["euid"]) != 0 and int(fields["Gid"]) != 0, line
    assert fields["CapEff"] == fields["CapPrm"] == fields["CapBnd"] == "0000000000000000", line
    assert fields["NoNewPrivs"] == "1" and fields["Seccomp"] == "2", line
    policy = next(c.detail for c in result.checks if c.name == "sandbox_policy")
    assert "kernel says: Uid " in policy and "CapEff 0000000000000000, NoNewPrivs 1, Seccomp 2" in policy, policy
    assert "namespaces: pid, net, mount, ipc, uts" in policy, policy


PRIVILEGE = {
    "attack_bpf": rf"bpf\(BPF_PROG_LOAD\) -> -1 errno {EPERM} ",
    "attack_perf_event": rf"perf_event_open\(pid=-1, cpu=0\) -> -1 errno {EPERM} ",
    # the channel socket is inherited: SIOCGSKNS is refused, and so are setns and unshare
    "attack_setns_socket": rf"fd \d+: SIOCGSKNS errno {EPERM} .*setns\(own netns\) -> -1 errno {EPERM}; "
                           rf"unshare\(CLONE_NEWNET\) -> -1 errno {EPERM}",
    "attack_hostname": rf"sethostname -> -1 errno {EPERM} .*hostname seen: kloop-sandbox",
    "attack_loop_device": rf"open /dev/loop-control: errno {ENOENT} .*open /dev/loop0: errno {ENOENT} .*"
                          rf"mknod block 7:7: errno {EPERM} .*block devices in /dev: \[\]",
}  # fmt: skip


REFUSED = {
    "attack_bpf": ["bpf"], "attack_perf_event": ["perf_event_open"], "attack_hostname": ["sethostname"],
    "attack_setns_socket": [r"ioctl\(fd \d+, SIOCGSKNS\)", "setns", "unshare"], "attack_loop_device": [],
}  # fmt: skip
"""What the seccomp listener reports of each trick: the calls the filter refused, named by the supervisor."""


@CONTAINED
@pytest.mark.parametrize("attack", sorted(PRIVILEGE))
def test_privileged_tricks_are_refused_by_the_kernel(attack: str, tmp_path: Path) -> None:
    """Each trick is refused by the kernel (the evidence line); one the seccomp filter refused also
    REJECTS the candidate, with the call named. Changed expectation: these attacks used to PASS
    (their kernels are honest), because a refused call was silent. The supervisor now receives each
    refusal from the kernel (`seccomp.Listener`), and an attempt on bpf, perf or a namespace is no
    honest kernel's doing. attack_loop_device's calls are refused by missing capabilities and an
    empty /dev, not by the filter: it still PASSES."""
    hostname = os.uname().nodename
    result = _verify("privilege", attack, tmp_path)
    _no_canary(result)
    line = _evidence(result, attack)
    assert re.search(PRIVILEGE[attack], line), line
    assert os.uname().nodename == hostname
    if not REFUSED[attack]:
        assert result.passed, result.reasons
        return
    assert result.status is S.REJECTED and result.failed_checks() == ["sandbox_policy"], result.reasons
    for call in REFUSED[attack]:
        assert any(re.search(rf"sandbox_policy: .*seccomp refused {call}", r) for r in result.reasons), (call, result.reasons)


# -- forged audits ---------------------------------------------------------------------------------
@CONTAINED
def test_forged_input_thread_and_violation_reports_are_measured_by_the_supervisor(tmp_path: Path) -> None:
    result = _verify("forged", "attack_forge_all", tmp_path)
    line = _evidence(result, "attack_forge_all")
    assert "reports forged; background thread started" in line, line
    assert re.search(rf"libc open \S+rmsnorm_tiny/definition.json: -1 errno {EACCES}", line), line  # Landlock
    _no_canary(result)
    assert result.status is S.REJECTED, result.reasons
    failed = set(result.failed_checks())
    assert {"background_threads", "inputs_unmodified"} <= failed, result.reasons
    # counted by the supervisor from the box's cgroup, named from /proc/<tid>/comm: the forged report said none
    assert any(re.search(r"background_threads: .*\(tid \d+\)", r) for r in result.reasons), result.reasons


@CONTAINED
def test_refused_calls_reach_the_verdict_though_the_candidate_erases_every_report(tmp_path: Path) -> None:
    """keyctl at import, mount and ptrace in a call, after the candidate erased its policy's list,
    patched the harness's reporting functions and replies, and stripped `violations` from every frame
    it sends: REJECTED with each call named, because the kernel reported them to the supervisor's
    listener, which the box never holds (the evidence shows it found no listener fd in itself)."""
    result = _verify("forged", "attack_forge_refusals", tmp_path)
    line = _evidence(result, "attack_forge_refusals")
    assert f"seccomp listener fds in this process: []; keyctl -> -1 errno {EPERM}; reports erased" in line, line
    call = _evidence(result, "attack_forge_refusals_call")
    assert re.search(rf"mount -> -1 errno {EPERM}; ptrace -> -1 errno {EPERM}", call), call
    assert result.status is S.REJECTED, result.reasons
    reasons = " ".join(r for r in result.reasons if r.startswith("sandbox_policy: "))
    for name in ("keyctl", "mount", "ptrace"):
        assert f"seccomp refused {name} (pid " in reasons, (name, result.reasons)


# -- coverage on every workload shape class -------------------------------------------------------
def test_a_kernel_exact_only_at_the_smallest_workload_fails_coverage(tmp_path: Path) -> None:
    """Exact at batch 4 (the smallest listed workload), eps dropped at batch 16: the coverage regimes
    run on batch 16 too (the evidence shows its eps-less path saw a small-magnitude draw), and a
    regime on batch 16 fails it. It PASSED when the regimes ran on the smallest workload only."""
    options = VerifyOptions(device="cpu", timing=False, speedup=False, timeout_s=30, build_timeout_s=60,
                            memory_limit_mb=2048, log_dir=tmp_path / "logs", cache_dir=tmp_path / "cache",
                            prestart=False)  # fmt: skip
    result = verify(load_task(HERE / "tasks" / "rmsnorm_unit"), REDTEAM / "shapes" / "attack_exact_on_smallest", options)
    _evidence(result, "attack_exact_on_smallest")
    log = Path(result.log_path or "").read_text(errors="replace")
    small = [float(m) for m in re.findall(r"attack_exact_on_smallest: batch 16: eps dropped; max \|x\| (\S+);", log)]
    assert small and min(small) < 1e-2, log[-3000:]  # a coverage regime reached the eps-less path
    assert result.status is S.INCORRECT_NUMERICAL, result.reasons
    from kloop.task.regimes import COVERAGE_REGIMES

    assert any("rmsnorm_unit-b16" in r and any(f"with {regime} inputs" in r for regime in COVERAGE_REGIMES)
               for r in result.reasons), result.reasons  # fmt: skip


# -- malformed replies and output ------------------------------------------------------------------
@pytest.mark.parametrize("attack", ["attack_deep_nesting", "attack_wrong_type"])
def test_malformed_replies_reject_never_internal_error(attack: str, tmp_path: Path) -> None:
    out = tmp_path / "verdict.json"
    proc = subprocess.run([sys.executable, "-m", "kloop.cli", "verify", TASK, REDTEAM / "replies" / attack,
                           "--device", "cpu", "--no-timing", "--workloads", "1", "--heldout", "0",
                           "--log-dir", tmp_path / "logs", "--json", out],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    import json

    verdict = json.loads(out.read_text())
    assert verdict["status"] == "REJECTED", verdict["reasons"]
    assert any(r.startswith("protocol: ") for r in verdict["reasons"]), verdict["reasons"]
    log = (tmp_path / "logs" / "candidate.log").read_text(errors="replace")
    assert f"KLOOP-EVIDENCE {attack}:" in log


def test_huge_output_is_capped_counted_and_reported(tmp_path: Path) -> None:
    result = _verify("replies", "attack_huge_output", tmp_path)
    _evidence(result, "attack_huge_output")
    size = Path(result.log_path or "").stat().st_size
    assert size < LOG_CAP_BYTES + 4096, size
    runtime = next(c.detail for c in result.checks if c.name == "runtime")
    match = re.search(r"output capped: (\d+) bytes written, (\d+) kept, (\d+) dropped", runtime)
    assert match, runtime
    assert int(match.group(1)) >= 300 << 20 and int(match.group(3)) >= (300 << 20) - LOG_CAP_BYTES, runtime


# -- nothing persists ------------------------------------------------------------------------------
def _host_state() -> dict[str, set[str]]:
    def lines(path: str) -> set[str]:
        try:
            return set(Path(path).read_text().splitlines()[1:])
        except OSError:
            return set()

    import tempfile

    tmp = Path(tempfile.gettempdir())  # the test's own temporary root where it sets one (xdist shares /tmp)
    bound_loops = {str(p) for p in Path("/sys/block").glob("loop*/loop/backing_file")}
    groups = {str(p) for c in ("freezer", "pids", "memory", "cpu") for p in Path(f"/sys/fs/cgroup/{c}").rglob("kloop-*")}
    return {
        "sysv": lines("/proc/sysvipc/shm") | lines("/proc/sysvipc/msg") | lines("/proc/sysvipc/sem"),
        "keys": {k for k in lines("/proc/keys") if "kloop" in k},
        "planted": {p for p in ("/dev/kloop-redteam-planted", "/tmp/kloop-redteam-planted",
                                "/dev/shm/kloop-redteam-planted") if os.path.exists(p)},  # fmt: skip
        "loops": bound_loops,
        "mounts": {m for m in Path("/proc/self/mountinfo").read_text().splitlines() if "kloop" in m},
        "cgroups": {g for g in groups if f"kloop-{os.getpid()}-" in g},
        "tmp": {p.name for p in tmp.glob("kloop-verify-*")} | {p.name for p in tmp.glob("kloop-sandbox-*")},
        "hostname": {os.uname().nodename},
    }


@CONTAINED
def test_nothing_the_candidate_plants_outlives_the_verification(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The verification's folders go to a temporary root of this test's own (below pytest's closed
    tmp, which the boxes must still reach): under xdist another worker's boxes come and go in /tmp
    meanwhile, and counting them failed this test for folders that were never ours."""
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    before = _host_state()
    result = _verify("leftovers", "attack_plant_everything", tmp_path)
    line = _evidence(result, "attack_plant_everything")
    for call in ("shmget", "msgget", "semget", r"add_key\(user keyring\)", r"add_key\(session keyring\)"):
        assert re.search(rf"{call} -> -1 errno {EPERM} ", line), line
    assert re.search(rf"write /dev/kloop-redteam-planted: errno {EACCES}", line), line
    assert re.search(rf"write /tmp/kloop-redteam-planted: errno {EACCES}", line), line
    assert "write /dev/shm/kloop-redteam-planted: written" in line  # its private /dev/shm, gone with it
    after = _host_state()
    for kind, items in after.items():
        assert items <= before[kind], (kind, items - before[kind])
    assert list(scratch.iterdir()) == []


def test_no_folder_of_kloop_remains_without_log_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --log-dir, the verification's scratch folder and every box's folder go (others run beside us:
    the temporary root is this test's own, so only our folders are counted)."""
    import shutil
    import tempfile

    scratch = Path(tempfile.mkdtemp(prefix="h3-scratch-", dir="/tmp"))
    scratch.chmod(0o755)  # the box's unprivileged uid reaches its own folder below it
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    try:
        options = VerifyOptions(device="cpu", timing=False, speedup=False, workloads=1, heldout=0,
                                cache_dir=tmp_path / "cache", prestart=False)  # fmt: skip
        result = verify(load_task(TASK), REDTEAM / "honest_value", options)
        assert result.passed, result.reasons
        assert list(scratch.iterdir()) == []
        assert result.log_path is None  # nothing asked to keep it
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@CONTAINED
@pytest.mark.own_fork_server  # its survivors are found as the CLI's descendants or by their server's owner
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_verification_leaves_nothing(sig: signal.Signals, tmp_path: Path) -> None:
    """`kloop verify` stopped by SIGINT or SIGTERM while the candidate hangs: no process, folder or group stays.

    Its TMPDIR is this test's own: /tmp is shared with the other xdist worker, whose folders came
    and went meanwhile and were counted as this one's leftovers."""
    marker = "kloop-redteam-interrupt"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "kloop.cli", "verify", TASK, REDTEAM / "attack_hang",
                             "--device", "cpu", "--no-timing", "--workloads", "1", "--timeout", "120",
                             "--json", tmp_path / marker],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "TMPDIR": str(scratch)})  # fmt: skip
    deadline = time.monotonic() + 120
    groups = Path("/sys/fs/cgroup/freezer")
    while time.monotonic() < deadline and not list(groups.glob(f"kloop-{proc.pid}-candidate-*")):
        time.sleep(0.2)
    time.sleep(3)  # the candidate is loaded and hanging
    proc.send_signal(sig)
    proc.wait(60)
    time.sleep(0.5)
    assert not list(groups.glob(f"kloop-{proc.pid}-*")), "a cgroup of the interrupted verification remains"
    assert list(scratch.iterdir()) == [], "a folder of the interrupted verification remains"
    # boxes (exec'd: `kloop.verify.sandbox`; forked: the fork server's command line), launchers and the fork server
    survivors = [p for p in os.listdir("/proc") if p.isdigit() and _cmdline_has(p, b"kloop.verify.")
                 and (_ppid_chain_has(int(p), proc.pid) or _environ_has(p, f"{OWNER_ENV}={proc.pid}".encode()))]  # fmt: skip
    assert not survivors


def _cmdline_has(pid: str, needle: bytes) -> bool:
    try:
        return needle in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _environ_has(pid: str, needle: bytes) -> bool:
    """Whether a process started with `needle` in its environment (a fork server reparented to init names its owner)."""
    try:
        return needle in Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False


def _ppid_chain_has(pid: int, ancestor: int) -> bool:
    """Whether `ancestor` started `pid` (an orphan is reparented, so its group name tells instead)."""
    try:
        return f"kloop-{ancestor}-" in Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return False
