"""`kloop task show` without typer: the command's body, callable from the typer app and from the CLI's fast path.

Nothing heavy loads here at import: the task schema (pydantic) loads with the task, and rich only
for the table, so `kloop task show --json` prints without rich. `echo` is the caller's writer
(typer.echo, or the fast path's byte-identical copy of it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kloop.task.load import Task


def show_task(task: Path | None, *, fib_root: Path | None = None, definition: str | None = None,
              as_json: bool = False, echo: Callable[[str], None]) -> None:
    """Load the task (or the FlashInfer-Trace definition) and print its summary: JSON, or rich tables."""
    from kloop.task.load import load_task_arg

    loaded = load_task_arg(task, fib_root=fib_root, definition=definition)
    summary = task_summary(loaded)
    if as_json:
        echo(json.dumps(summary, indent=2))
        return
    _print_summary(summary)


def task_summary(task: Task) -> dict[str, object]:
    """What `task show` reports, as plain data (also the `--json` output)."""
    from kloop.task.shapes import comparator_for, tolerance_for

    d = task.definition
    var_values = {a: sorted({w.axes[a] for w in task.workloads}) for a in d.var_axes}
    return {
        "name": d.name,
        "op_type": d.op_type,
        "description": d.description,
        "root": str(task.root),
        "axes": {n: {"type": a.type, "value": getattr(a, "value", None), "description": a.description}
                 for n, a in d.axes.items()},
        "constraints": d.constraints,
        "inputs": {n: {"shape": s.shape, "dtype": s.dtype.value, "optional": s.optional} for n, s in d.inputs.items()},
        "outputs": {
            n: {"shape": s.shape, "dtype": s.dtype.value, "comparator": comparator_for(d, n).value,
                "tolerance": tolerance_for(d, n).model_dump()}
            for n, s in d.outputs.items()
        },
        "flops": d.settings.flops,
        "workloads": {"count": len(task.workloads), "var_axis_values": var_values},
        "baseline": None if task.baseline is None else {
            "name": task.baseline.name, "language": task.baseline.spec.language.value,
            "entry_point": task.baseline.spec.entry_point},
        "solutions": [str(p) for p in task.extra_solutions],
    }  # fmt: skip


def _shape_text(shape: list[str] | None) -> str:
    from rich.markup import escape

    return "scalar" if shape is None else escape("[" + ", ".join(shape) + "]")


def _print_summary(s: dict) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    console.print(f"[bold]{escape(s['name'])}[/bold]  ({escape(s['op_type'])})  {escape(s['root'])}")
    if s["description"]:
        console.print(escape(s["description"]))
    axes = Table("axis", "kind", "value", "description", title="axes")
    for name, a in s["axes"].items():
        value = str(a["value"]) if a["type"] == "const" else _values_text(s["workloads"]["var_axis_values"][name])
        axes.add_row(name, a["type"], value, escape(a["description"] or ""))
    console.print(axes)
    if s["constraints"]:
        console.print("constraints: " + escape("; ".join(s["constraints"])))
    tensors = Table("tensor", "role", "shape", "dtype", "compare", title="inputs and outputs")
    for name, t in s["inputs"].items():
        tensors.add_row(name, "input" + (" (optional)" if t["optional"] else ""), _shape_text(t["shape"]), t["dtype"], "")
    for name, t in s["outputs"].items():
        tol = t["tolerance"]
        rule = "exact" if tol["exact"] else f"atol={tol['atol']:g} rtol={tol['rtol']:g}"
        if tol["max_error_cap"] is not None:
            rule += f" cap={tol['max_error_cap']:g}"
        if tol["matched_ratio"] < 1:
            rule += f" matched>={tol['matched_ratio']:g}"
        tensors.add_row(name, "output", _shape_text(t["shape"]), t["dtype"], f"{t['comparator']} {rule}")
    console.print(tensors)
    console.print(f"flops: {escape(s['flops'] or 'not given')}")
    console.print(f"workloads: {s['workloads']['count']}")
    baseline = s["baseline"]
    console.print(
        "baseline: the definition's reference" if baseline is None
        else escape(f"baseline: {baseline['name']} ({baseline['language']}, {baseline['entry_point']})")
    )
    for path in s["solutions"]:
        console.print(f"solution: {escape(path)}", soft_wrap=True)


def _values_text(values: list[int]) -> str:
    shown = ", ".join(str(v) for v in values[:8])
    return shown + (f", ... ({len(values)} values)" if len(values) > 8 else "")
