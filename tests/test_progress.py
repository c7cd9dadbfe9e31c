"""The live status shows on a terminal (a real pty) and stays silent on pipes and under --json."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KLOOP = ROOT / ".venv" / "bin" / "kloop"
PROBLEM = ROOT / "tests" / "task" / "data" / "kb_cross_entropy.py"


def _on_pty(cmd: list[str]) -> tuple[int, str]:
    """Run with stdout and stderr on a pseudo-terminal; return the exit code and everything drawn."""
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "KLOOP_NO_PROGRESS"}
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env={**env, "TERM": "xterm"})
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 300)
        if not ready:
            proc.kill()
            break
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=60), b"".join(chunks).decode(errors="replace")


def test_import_shows_its_steps_on_a_terminal(tmp_path: Path) -> None:
    code, drawn = _on_pty([str(KLOOP), "task", "import-kernelbench", str(PROBLEM), "-o", str(tmp_path / "t")])
    assert code == 0, drawn
    # rich repaints at its own pace; the step shown last (on stop) is always drawn
    assert re.search(r"importing kb_cross_entropy\.py: (estimating|running|probing|writing)", drawn), drawn[-2000:]
    assert "wrote " in drawn


def test_no_status_on_a_pipe(tmp_path: Path) -> None:
    proc = subprocess.run([str(KLOOP), "task", "import-kernelbench", str(PROBLEM), "-o", str(tmp_path / "t")],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "" and "importing" not in proc.stdout and "\x1b[" not in proc.stdout


def test_verify_under_json_stays_quiet_on_a_terminal(tmp_path: Path) -> None:
    task = ROOT / "tests" / "verify" / "tasks" / "rmsnorm_tiny"
    sol = tmp_path / "rmsnorm"
    sol.mkdir()
    (sol / "main.py").write_text("import torch\n\ndef run(x, w):\n    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w\n")
    (sol / "solution.json").write_text(json.dumps({
        "name": "rmsnorm", "definition": "rmsnorm_tiny", "author": "test", "sources": [{"path": "main.py"}],
        "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": "main.py::run",
                 "destination_passing_style": False}}))  # fmt: skip
    code, drawn = _on_pty([str(KLOOP), "verify", str(task), str(sol), "--no-timing", "--workloads", "1",
                           "--heldout", "0", "--json", str(tmp_path / "v.json")])  # fmt: skip
    assert code == 0 and json.loads((tmp_path / "v.json").read_text())["status"] == "PASSED", drawn[-2000:]
    assert "verifying" not in drawn and "poisoned runs" not in drawn, drawn
