"""`kloop task ...`: inspect a task, import a KernelBench problem or a published FlashInfer-Trace definition.

Torch is imported only inside `import-kernelbench` so `kloop --help` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kloop.errors import BadInput
from kloop.task.show import show_task

app = typer.Typer(help="Inspect tasks and import KernelBench problems.", no_args_is_help=True)

TaskArg = Annotated[
    Path | None,
    typer.Argument(help="Task directory (definition.json, workloads.jsonl, optional baseline/)."),
]
FibRoot = Annotated[Path | None, typer.Option("--fib-root", help="FlashInfer-Trace dataset root.")]
DefinitionName = Annotated[str | None, typer.Option("--definition", help="Definition name in --fib-root.")]


@app.command("show")
def show(
    task: TaskArg = None,
    fib_root: FibRoot = None,
    definition: DefinitionName = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary instead.")] = False,
) -> None:
    """Show a task: axes, inputs and outputs with shapes, tolerances, workloads, baseline."""
    show_task(task, fib_root=fib_root, definition=definition, as_json=as_json, echo=typer.echo)


@app.command("import-kernelbench")
def import_kernelbench_command(
    file: Annotated[Path, typer.Argument(help="KernelBench problem: Model, get_inputs, get_init_inputs.")],
    out: Annotated[Path, typer.Option("-o", "--out", help="Task directory to create.")],
    name: Annotated[str | None, typer.Option("--name", help="Definition name (default: the file's stem).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Write into a non-empty directory.")] = False,
    scale: Annotated[float | None, typer.Option("--scale", help="Shrink the module-level sizes get_inputs() reads by this factor, in (0, 1].")] = None,
    max_bytes: Annotated[int | None, typer.Option("--max-bytes", help="Pick the largest scale whose inputs plus outputs fit in N bytes.")] = None,
    memory_mb: Annotated[int, typer.Option("--memory-mb", help="The verifier's sandbox limit to fit (kloop verify --memory-mb).")] = 8192,
    weights_as_inputs: Annotated[bool, typer.Option("--weights-as-inputs", help="Pass the model's parameters and buffers to run() as inputs (stored in weights.safetensors).")] = False,
) -> None:
    """Turn a KernelBench problem file into a kloop task whose reference runs `Model`."""
    from kloop.progress import live
    from kloop.task.kernelbench import import_kernelbench

    if scale is not None and max_bytes is not None:
        raise BadInput("--scale", "give --scale or --max-bytes, not both")
    if out.exists() and any(out.iterdir()) and not force:
        raise BadInput(out, "output directory is not empty (use --force to write into it)")
    with live(f"importing {file.name}"):
        task = import_kernelbench(file, out, name=name, scale=scale, max_bytes=max_bytes, memory_mb=memory_mb,
                                  weights_as_inputs=weights_as_inputs)
    sizes = ", ".join(f"{a}={v}" for a, v in task.definition.const_axes.items())
    typer.echo(f"wrote {out}: {task.definition.name}, {len(task.workloads)} workloads, baseline {task.baseline_path}")
    typer.echo(f"axes: var {task.definition.var_axes or '-'}; const {sizes or '-'}")


@app.command("pack")
def pack_command(
    solution: Annotated[Path, typer.Argument(help="Solution directory (solution.json + sources).")],
    out: Annotated[Path | None, typer.Option("-o", "--out", help="Write the FIB Solution JSON here (default: stdout).")] = None,
) -> None:
    """Pack a solution directory into one FlashInfer-Trace Solution JSON (contents inlined)."""
    from kloop.task.load import pack_solution

    text = pack_solution(solution).model_dump_json(indent=2, exclude_none=True) + "\n"
    if out is None:
        typer.echo(text, nl=False)
    else:
        out.write_text(text, encoding="utf-8")


def _parse_consts(values: list[str]) -> dict[str, int]:
    consts: dict[str, int] = {}
    for text in values:
        axis, sep, value = text.partition("=")
        if not sep or not axis or not value.strip().isdigit():
            raise BadInput("--const", f"expected AXIS=VALUE with a non-negative integer, got {text!r}")
        consts[axis.strip()] = int(value)
    return consts


@app.command("import-fib")
def import_fib_command(
    file: Annotated[Path, typer.Argument(help="FlashInfer-Trace definition JSON, as flashinfer publishes it.")],
    out: Annotated[Path, typer.Option("-o", "--out", help="Task directory to create.")],
    name: Annotated[str | None, typer.Option("--name", help="Definition name (default: the published one).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Write into a non-empty directory.")] = False,
    scale: Annotated[float | None, typer.Option("--scale", help="Multiply the default var-axis values (8 and 32) by F.")] = None,
    max_bytes: Annotated[int | None, typer.Option("--max-bytes", help="Largest scale whose inputs plus outputs fit in N bytes.")] = None,
    memory_mb: Annotated[int, typer.Option("--memory-mb", help="The verifier's sandbox limit to fit (kloop verify --memory-mb).")] = 8192,
    const: Annotated[list[str] | None, typer.Option("--const", help="Override a const axis, AXIS=VALUE (repeatable).")] = None,
    no_check: Annotated[bool, typer.Option("--no-check", help="Do not run the reference once on the smallest workload.")] = False,
    helpers: Annotated[list[Path] | None, typer.Option("--helpers", help="Python file or folder (e.g. flashinfer/trace/templates) defining helpers the reference calls but lacks (repeatable).")] = None,
) -> None:
    """Turn a published FlashInfer-Trace definition (`_<op>_reference`, tracer dtypes) into a kloop task."""
    from kloop.task.fib_import import ImportProblems, import_fib

    if scale is not None and max_bytes is not None:
        raise BadInput("--scale", "give --scale or --max-bytes, not both")
    if out.exists() and any(out.iterdir()) and not force:
        raise BadInput(out, "output directory is not empty (use --force to write into it)")
    try:
        done = import_fib(file, out, name=name, scale=scale, max_bytes=max_bytes, memory_mb=memory_mb,
                          consts=_parse_consts(const or []), check=not no_check, helpers=helpers)
    except ImportProblems as exc:
        for problem in exc.problems:
            typer.echo(f"kloop: error: {exc.where}: {problem}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"wrote {done.path}: {done.name}, {len(done.workloads)} workloads {done.workloads}")
    for note in done.notes:
        typer.echo(f"note: {note}")
