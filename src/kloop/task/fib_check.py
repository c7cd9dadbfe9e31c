"""The reference check of `import-fib`, run in a child process under the verifier's memory limit.

A published definition's const axes are a GPU's: a DeepSeek MoE holds 1.4 GB of FP8 weights,
and its reference dequantizes them to float32 (5.6 GB more). The size estimate of `fib_sizes`
counts inputs and outputs only, so it cannot see those intermediates. Run in the importer's own
process, two such checks at once reached 10-12 GB resident each and the kernel's OOM killer
ended them (and threatened whatever ran beside them).

So the check (`checked`: the trial run and, if it fails, the size oracle) runs in a
child process whose address space is capped with RLIMIT_AS at `--memory-mb`, the limit the
verifier's sandbox puts on the same reference in an A/A. An allocation past it fails at once
inside the child (`can't allocate memory`), the importer's own memory never grows, and every
byte the reference touched goes back to the system when the child exits. A reference that cannot
run within the limit is not a problem of the definition: the task is written as `--no-check`
would write it (static conversion) with one note saying so, unless the definition has consts only
the check could settle.
"""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kloop.task import fib_hints, fib_oracle
from kloop.task.fib_sizes import ImportProblems, OverBudget, UnwrittenOutputs, trial_run, write_task

__all__ = ["Checked", "checked_in_child"]

_MEMORY = re.compile(r"MemoryError|Cannot allocate memory|can't allocate memory|Memory allocation|failed to map segment")
"""How a child that died of the cap before it could answer (torch's libraries loading, OpenBLAS's buffers) says so."""


@dataclass
class Checked:
    """What the check settled; `skipped` is the one-line reason when it could not run within the limit."""

    definition: dict[str, Any]
    workloads: list[dict[str, int]]
    notes: list[str]
    skipped: str | None = None


def checked_in_child(staging: Path, file: Path, definition: dict[str, Any], workloads: list[dict[str, int]],
                     scalars: dict[str, Any], unknown: dict[str, list[int]], memory_mb: int,
                     notes: list[str]) -> Checked:  # fmt: skip
    """`checked` in a child limited to `memory_mb` MB of address space; its problems are raised here."""
    request = {"staging": str(staging), "file": str(file), "definition": definition, "workloads": workloads,
               "scalars": scalars, "unknown": unknown, "memory_mb": memory_mb, "notes": notes}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="kloop-fib-check-") as tmp:
        ask, answer = Path(tmp) / "request.json", Path(tmp) / "result.json"
        ask.write_text(json.dumps(request), encoding="utf-8")
        proc = subprocess.run([sys.executable, "-m", "kloop.task.fib_check", str(ask), str(answer)],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True)  # fmt: skip
        result = json.loads(answer.read_text(encoding="utf-8")) if answer.is_file() else None
    if result is None and proc.returncode == -signal.SIGKILL:
        return Checked(definition, workloads, notes, f"killed by SIGKILL (the kernel's OOM killer, most likely) while "
                                                     f"running on the smallest workload {workloads[0]}")  # fmt: skip
    tail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1][:300]
    if result is None and _MEMORY.search(proc.stderr):
        return Checked(definition, workloads, notes, f"the checking process itself (Python and torch) could not load "
                                                     f"within the limit: {tail}")  # fmt: skip
    if result is None:
        raise ImportProblems(file, [f"the reference check's child process ended without a result "
                                    f"(exit {proc.returncode}): {tail}"])  # fmt: skip
    if "over_budget" in result:
        return Checked(definition, workloads, notes, result["over_budget"])
    if "problems" in result:
        if result.get("unwritten"):
            raise UnwrittenOutputs(file, result["problems"], result["unwritten"])
        raise ImportProblems(file, result["problems"])
    return Checked(result["definition"], result["workloads"], result["notes"])


def checked(staging: Path, file: Path, converted: dict[str, Any], workloads: list[dict[str, int]],
             scalars: dict[str, Any], unknown: dict[str, list[int]], memory_mb: int,
             hints: fib_hints.Hints) -> tuple[dict[str, Any], list[dict[str, int]]]:  # fmt: skip
    """Run the reference on every workload; if it fails, let `fib_oracle` find the sizes the definition leaves unstated."""
    try:
        _trial_first(staging, file, unknown)
        return converted, workloads
    except (UnwrittenOutputs, OverBudget):
        raise
    except ImportProblems as failed:
        found = fib_oracle.search(converted, workloads, scalars, unknown, int(memory_mb * (1 << 20) * 0.5))
        if found is None:
            raise failed from None
    hints.notes.extend(found.notes)
    for item in staging.iterdir():
        item.unlink()
    write_task(staging, found.definition, found.workloads, scalars, file, hints.notes)
    trial_run(staging, file)
    return found.definition, found.workloads


def _trial_first(staging: Path, file: Path, unknown: dict[str, list[int]]) -> None:
    """The reference on the written task; a const the tracer left unresolved always counts as a failure."""
    try:
        trial_run(staging, file)
    except ImportProblems as failed:
        if unknown and not isinstance(failed, UnwrittenOutputs | OverBudget):
            raise ImportProblems(file, [_unknown_line(unknown, failed.problems[0])]) from None
        raise
    if unknown:
        raise ImportProblems(file, [_unknown_line(unknown, None)])


def _unknown_line(unknown: dict[str, list[int]], first: str | None) -> str:
    """One line: which consts have no value, what was tried, and how the reference failed with the first values."""
    names = ", ".join(f"{a!r}" for a in unknown)
    tried = "; ".join(f"{a} in {c}" for a, c in unknown.items())
    failure = f"; with the first values it {first.removeprefix('reference ')}" if first else ""
    return (f"const axis {names} has no value (the tracer could not resolve it) and no value tried ({tried}) lets "
            f"the reference run with its declared shapes{failure}; give one with "
            + " ".join(f"--const {a}=N" for a in unknown))


def _child(ask: Path, answer: Path) -> int:
    """Cap the address space, then run the check; the result (or the problems) goes to `answer` as JSON."""
    request = json.loads(ask.read_text(encoding="utf-8"))
    limit = int(request["memory_mb"]) << 20
    if limit > 0:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    hints = fib_hints.Hints(notes=list(request["notes"]))
    result: dict[str, Any]
    try:
        definition, workloads = checked(Path(request["staging"]), Path(request["file"]), request["definition"],
                                         request["workloads"], request["scalars"], request["unknown"],
                                         int(request["memory_mb"]), hints)  # fmt: skip
        result = {"definition": definition, "workloads": workloads, "notes": hints.notes}
    except OverBudget as over:
        result = {"over_budget": over.problems[0]}
    except UnwrittenOutputs as skipped:
        result = {"problems": skipped.problems, "unwritten": skipped.unwritten}
    except ImportProblems as failed:
        result = {"problems": failed.problems}
    except MemoryError:
        result = {"over_budget": f"MemoryError outside the reference call (limit {request['memory_mb']} MB)"}
    answer.write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("KLOOP_NO_PROGRESS", "1")
    sys.exit(_child(Path(sys.argv[1]), Path(sys.argv[2])))
