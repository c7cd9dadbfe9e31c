"""import-fib's reference check stays within the verifier's memory limit (`kloop.task.fib_check`).

flashinfer's full-size MoE definitions (unchanged, tests/task/data/fib/README.md) hold 1.4 GB of FP8
weights whose reference dequantizes them to float32: run in the importer's own process the check
reached 10-12 GB resident, and two at once had the kernel's OOM killer end them. The check now runs
in a child capped at `--memory-mb`; past the cap the task is written statically, with one note.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

from kloop.task.fib_import import import_fib
from kloop.task.load import load_task

DATA = Path(__file__).parent / "data" / "fib"
MOE = DATA / "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048.json"
UNCHECKED = "reference check skipped: it cannot run within --memory-mb"
_GUARD = 4 << 30
"""Address space of the whole import command in the test: on code that ran the check in its own process
the full-size reference would need 10+ GB, so there it fails (exit 2) instead of threatening the machine."""


def _guarded() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (_GUARD, _GUARD))


def test_full_size_moe_imports_statically_when_its_reference_exceeds_the_limit(tmp_path: Path) -> None:
    out = tmp_path / "moe"
    proc = subprocess.run([sys.executable, "-m", "kloop.cli", "task", "import-fib", str(MOE), "-o", str(out),
                           "--memory-mb", "2800"], capture_output=True, text=True, timeout=600,
                          preexec_fn=_guarded)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    notes = [ln[6:] for ln in proc.stdout.splitlines() if ln.startswith("note: ")]
    skipped = [n for n in notes if n.startswith(f"{UNCHECKED} 2800 MB: on the smallest workload")]
    assert len(skipped) == 1 and "an allocation of" in skipped[0] and "failed" in skipped[0], notes
    assert skipped[0] in (out / "README.md").read_text()
    task = load_task(out)  # the static conversion loads: definition, workloads, reference wrapper
    assert task.definition.const_axes["hidden_size"] == 7168 and [w.axes for w in task.workloads]


def test_a_reference_within_the_limit_is_checked_and_says_so(tmp_path: Path) -> None:
    done = import_fib(DATA / "rmsnorm_h4096.json", tmp_path / "t", scale=0.25, memory_mb=4096)
    assert any(n.startswith("reference checked in a child process capped at --memory-mb 4096 MB") for n in done.notes)
    assert not any(n.startswith(UNCHECKED) for n in done.notes)


def test_a_limit_too_small_for_torch_itself_is_a_static_import_not_a_crash(tmp_path: Path) -> None:
    """At --memory-mb 500 torch's own libraries cannot load (the verifier's sandbox could not run it either)."""
    done = import_fib(DATA / "rmsnorm_h4096.json", tmp_path / "t", scale=0.25, memory_mb=500)
    skipped = [n for n in done.notes if n.startswith(f"{UNCHECKED} 500 MB: the checking process itself")]
    assert len(skipped) == 1, done.notes
    assert load_task(tmp_path / "t").workloads
