"""Tasks: the FlashInfer-Trace schema (Definition, Workload, Solution, Trace), loaders, inputs.

Importing this package (schema and loaders) does not import torch; `kloop.task.inputs`,
`kloop.task.reference` and `kloop.task.kernelbench` do, when their functions run.
"""

from __future__ import annotations

from kloop.lazy import lazy_exports

# Names load on first use (PEP 562): importing `kloop.task.commands` need not load every schema.
_EXPORTS = {
    **dict.fromkeys(
        ["Task", "load_fib_task", "load_solution", "load_task", "load_task_arg", "pack_solution", "write_solution_dir"],
        "kloop.task.load",
    ),
    **dict.fromkeys(["Definition", "Solution", "Trace", "Workload"], "kloop.task.schema"),
}


__getattr__ = lazy_exports(__name__, _EXPORTS)


__all__ = [
    "Definition",
    "Solution",
    "Task",
    "Trace",
    "Workload",
    "load_fib_task",
    "load_solution",
    "load_task",
    "load_task_arg",
    "pack_solution",
    "write_solution_dir",
]
