"""Tasks: the FlashInfer-Trace schema (Definition, Workload, Solution, Trace), loaders, inputs.

Importing this package (schema and loaders) does not import torch; `kloop.task.inputs`,
`kloop.task.reference` and `kloop.task.kernelbench` do, when their functions run.
"""

from __future__ import annotations

from kloop.task.load import (
    Task,
    load_fib_task,
    load_solution,
    load_task,
    load_task_arg,
    pack_solution,
    write_solution_dir,
)
from kloop.task.schema import Definition, Solution, Trace, Workload

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
