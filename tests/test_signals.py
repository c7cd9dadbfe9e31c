"""SIGINT / SIGTERM to a running `kloop verify` leave no process behind and exit 130 / 143 with one line.

Real processes throughout: the CLI as a subprocess, a sandbox it starts, a candidate stuck in its
call; descendants are found by walking /proc (parent links, and each process's cwd under the
private TMPDIR every sandbox works in).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.own_fork_server  # whose process a box is, is what these tests read
ROOT = Path(__file__).resolve().parents[1]
KLOOP = ROOT / ".venv" / "bin" / "kloop"
TASK = ROOT / "tests" / "verify" / "tasks" / "rmsnorm_tiny"
STUCK = "import pathlib, time\n\ndef run(x, w):\n    pathlib.Path('started').write_text('1')\n    time.sleep(300)\n    return x\n"


def _proc_table() -> dict[int, tuple[int, str]]:
    """pid -> (ppid, cwd) for every process we can read."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            state = stat.rsplit(")", 1)[1].split()[0]
            cwd = os.readlink(entry / "cwd") if state != "Z" else ""
        except (OSError, ValueError, IndexError):
            continue
        if state != "Z":
            table[int(entry.name)] = (ppid, cwd)
    return table


def _descendants(root: int) -> set[int]:
    table = _proc_table()
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, (ppid, _) in table.items() if ppid in frontier} - found
        found |= frontier
    return found


def _under(tmp: Path) -> set[int]:
    return {pid for pid, (_, cwd) in _proc_table().items() if cwd.startswith(str(tmp))}


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_to_verify_leaves_no_process_behind(tmp_path: Path, sig: signal.Signals, code: int) -> None:
    solution = tmp_path / "stuck"
    solution.mkdir()
    (solution / "main.py").write_text(STUCK)
    (solution / "solution.json").write_text(json.dumps({
        "name": "stuck", "definition": "rmsnorm_tiny", "author": "test", "sources": [{"path": "main.py"}],
        "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": "main.py::run",
                 "destination_passing_style": False}}))  # fmt: skip
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "KLOOP_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen([str(KLOOP), "verify", str(TASK), str(solution), "--no-timing", "--timeout", "600"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    deadline = time.monotonic() + 120
    seen: set[int] = set()
    while time.monotonic() < deadline and proc.poll() is None:  # wait until the candidate is inside its call
        if list(tmp.glob("kloop-sandbox-candidate-*/started")):
            seen = _descendants(proc.pid)
            break
        time.sleep(0.2)
    assert proc.poll() is None, f"kloop verify ended before it could be signalled: {proc.stderr.read() if proc.stderr else ''}"
    assert seen, "no sandbox process appeared"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines == [lines[-1]] and "interrupted" in lines[-1] and "Traceback" not in err, err
    alive = {pid for pid in seen if Path(f"/proc/{pid}").exists() and pid in _proc_table()}
    assert not alive, f"left behind: {alive}"
    assert not _under(tmp), "a process still works under the command's TMPDIR"


def test_second_signal_to_kloop_run_stops_now_and_leaves_no_process_behind(tmp_path: Path) -> None:
    """`kloop run`: the first SIGTERM means "stop after this round"; a second one stops now, through the
    same handler as every other command (descendants killed, one line, 143), state saved for --resume."""
    campaign = tmp_path / "campaign.jsonl"
    stuck_row = "import pathlib, time\n\ndef run(x, w):\n    pathlib.Path('started').write_text('1')\n    time.sleep(300)\n    return x * w\n"
    campaign.write_text(json.dumps({"claim": "stuck", "files": {"main.py": stuck_row}}) + "\n")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    run = tmp_path / "run"
    env = {**os.environ, "TMPDIR": str(tmp), "KLOOP_HOME": str(tmp_path / "home"), "KLOOP_VERIFY_OPTIONS":
           json.dumps({"iterations": 2, "rounds": 6, "warmup": 1, "heldout": 1, "recheck": 1, "timeout_s": 600})}
    proc = subprocess.Popen([str(KLOOP), "run", str(ROOT / "tests" / "loop" / "tasks" / "rowscale"), "--writer",
                             f"replay:{campaign}", "--reviewer", "rules", "--stages", "iterate", "--rounds", "1",
                             "--device", "cpu", "--out", str(run)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    deadline = time.monotonic() + 240
    seen: set[int] = set()
    while time.monotonic() < deadline and proc.poll() is None:  # the candidate is stuck inside its call
        if list(tmp.glob("kloop-sandbox-candidate-*/started")):
            seen = _descendants(proc.pid)
            break
        time.sleep(0.2)
    assert proc.poll() is None, f"kloop run ended before it could be signalled: {proc.stderr.read() if proc.stderr else ''}"
    assert seen, "no sandbox process appeared"
    proc.send_signal(signal.SIGTERM)
    time.sleep(1.0)
    assert proc.poll() is None, "the first signal must let the round finish"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    lines = [line for line in err.splitlines() if line.strip() and "interrupted" in line]
    assert lines and "Traceback" not in err and "Aborted" not in err, err
    alive = {pid for pid in seen if Path(f"/proc/{pid}").exists() and pid in _proc_table()}
    assert not alive, f"left behind: {alive}"
    assert not _under(tmp), "a process still works under the command's TMPDIR"
    assert (run / "lineage.sqlite").exists()  # the run can be resumed
