"""The trust boundary: supervisor, sandbox process, comparators, timing, audits, result JSON.

`verify(task, solution_path, options)` is the one entry point; the loop and the CLI call it.
Importing this package does not import torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kloop.lazy import lazy_exports

if TYPE_CHECKING:
    from kloop.verify.result import VerifyOptions, VerifyResult

# Names load on first use (PEP 562): the result schema pulls in pydantic, `kloop --help` need not.
_EXPORTS = dict.fromkeys(["Check", "Summary", "VerifyOptions", "VerifyResult", "VerifyStatus", "WorkloadResult"],
                         "kloop.verify.result")
__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "Check",
    "Summary",
    "VerifyOptions",
    "VerifyResult",
    "VerifyStatus",
    "WorkloadResult",
    "verify",
]


def verify(task: object, solution_path: str | Path, options: VerifyOptions | None = None) -> VerifyResult:
    """Verify the solution at `solution_path` against `task` (a `kloop.task.load.Task`).

    Raises `BadInput` for a malformed solution or task and `HarnessFailure` when kloop itself
    cannot judge; a wrong, crashing or cheating candidate is a verdict, never an exception.
    """
    from kloop.device.detect import torch_device
    from kloop.task.load import Task, load_solution
    from kloop.verify.result import VerifyOptions
    from kloop.verify.supervisor import Verification

    if not isinstance(task, Task):
        raise TypeError("verify() needs a kloop.task.load.Task")
    options = options or VerifyOptions()
    solution = load_solution(Path(solution_path))
    if options.baseline_path is not None:
        baseline = load_solution(options.baseline_path)
    else:
        baseline = task.baseline_or_reference()
    device = torch_device(options.device)
    return Verification(task, solution, options, device, baseline).run()
