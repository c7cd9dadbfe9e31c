"""`kloop bench TASK... --solutions SOL...`: many (task, solution) pairs verified over the pool.

Each solution is paired with the task whose definition it names. Writes FlashInfer-Trace Trace
lines (`--trace-out`), a summary table, and `--json`; a progress bar on stderr while it runs.
Exit 0 when every pair passed, 1 when one did not, 2 for bad input, 3 when kloop could not judge one.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from kloop.errors import BadInput, HarnessFailure


def split_words(words: list[str]) -> tuple[list[str], list[str]]:
    """`T1 T2 --solutions S1 S2` -> ([T1, T2], [S1, S2]) (Click cannot give an option many values)."""
    if "--solutions" not in words:
        raise BadInput("kloop bench", "--solutions SOL... is required")
    at = words.index("--solutions")
    tasks, solutions = words[:at], words[at + 1:]
    for word in tasks + solutions:
        if word.startswith("-"):
            raise BadInput("kloop bench", f"unknown option {word!r}")
    if not tasks or not solutions:
        raise BadInput("kloop bench", "give at least one TASK and one solution after --solutions")
    return tasks, solutions


def _solution_dir(path: Path, tmp: Path) -> Path:
    """A solution directory as is; a FIB Solution JSON file becomes a directory holding it."""
    if path.is_dir():
        return path
    dest = tmp / f"sol-{len(list(tmp.iterdir()))}"
    dest.mkdir()
    (dest / "solution.json").write_bytes(path.read_bytes())
    return dest


def pair_up(tasks: list[str], solutions: list[str], tmp: Path) -> list[tuple[Any, Path, Path, str]]:
    """(task, task_dir, solution_dir, solution name) per solution, by the definition it names."""
    from kloop.task.load import load_solution, load_task

    by_name: dict[str, tuple[Any, Path]] = {}
    for text in tasks:
        task = load_task(Path(text))
        by_name[task.definition.name] = (task, Path(text))
    pairs = []
    for text in solutions:
        path = Path(text)
        if not path.exists():
            raise BadInput(path, "solution not found")
        solution = load_solution(path)
        if solution.definition not in by_name:
            raise BadInput(path, f"solution {solution.name!r} is for definition {solution.definition!r}, "
                                 f"and no TASK given defines it (given: {', '.join(sorted(by_name))})")
        task, task_dir = by_name[solution.definition]
        pairs.append((task, task_dir, _solution_dir(path, tmp), solution.name))
    return pairs


def _row(task: Any, name: str, outcome: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"task": task.definition.name, "solution": name, "attempts": outcome.attempts,
                           "lost": outcome.lost, "worker": outcome.worker.label() if outcome.worker else None}
    if outcome.result is None:
        return {**row, "status": "HARNESS_FAILURE", "speedup_geomean": None, "reasons": [outcome.error or ""]}
    result = outcome.verify_result()
    return {**row, "status": result.status.value, "speedup_geomean": result.summary.speedup_geomean,
            "reasons": result.reasons, "device": result.device}


def _table(rows: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="kloop bench")
    for column in ("task", "solution", "status", "speedup", "worker", "attempts"):
        table.add_column(column)
    for r in rows:
        speed = f"{r['speedup_geomean']:.2f}x" if r["speedup_geomean"] else "-"
        table.add_row(r["task"], r["solution"], r["status"], speed, r["worker"] or "-", str(r["attempts"]))
    Console(width=160).print(table)


def bench_command(
    ctx: typer.Context,
    cluster: Annotated[str, typer.Option("--cluster", help="local, auto (a running Ray cluster) or ray://ADDRESS.")] = "local",
    device: Annotated[str, typer.Option("--device", help="auto, cpu, cuda, rocm or gpu.")] = "auto",
    slots: Annotated[int | None, typer.Option("--slots", min=1, help="Local pool slots (default: one per GPU, else per CPU).")] = None,
    trace_out: Annotated[Path | None, typer.Option("--trace-out", help="Write FlashInfer-Trace Trace lines (JSONL).")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the results as JSON.")] = None,
) -> None:
    """Verify many solutions over the pool: kloop bench TASK... --solutions SOL..."""
    from kloop.device.detect import check_request
    from kloop.pool.base import run_all
    from kloop.pool.bundle import Bundle
    from kloop.pool.job import VerifyJob
    from kloop.pool.open import open_pool
    from kloop.pool.verifier import job_options
    from kloop.verify.result import options_from_env

    check_request(device)
    tasks, solutions = split_words(list(ctx.args))
    with tempfile.TemporaryDirectory(prefix="kloop-bench-") as tmp:
        pairs = pair_up(tasks, solutions, Path(tmp))
        options = job_options(device, options_from_env(), True, 1)
        bundles = {str(d): Bundle.from_dir(d) for _, d, _, _ in pairs}
        jobs = [VerifyJob(id=f"pair-{i}", task=bundles[str(d)], solution=Bundle.from_dir(s), options=options)
                for i, (_, d, s, _) in enumerate(pairs)]
        outcomes, elapsed, pool_name = _run(open_pool(cluster, device, slots), jobs, run_all)
    rows = [_row(task, name, o) for (task, _, _, name), o in zip(pairs, outcomes, strict=True)]
    if trace_out is not None:
        _write_traces(trace_out, pairs, outcomes)
    _table(rows)
    passed = sum(r["status"] == "PASSED" for r in rows)
    report = {"pool": pool_name, "pairs": rows, "passed": passed, "failed": len(rows) - passed,
              "elapsed_s": round(elapsed, 2), "per_minute": round(60.0 * len(rows) / elapsed, 2) if elapsed else None}
    if json_out is not None:
        json_out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    typer.echo(f"{passed}/{len(rows)} passed in {elapsed:.1f}s on the {pool_name} pool")
    if any(r["status"] == "HARNESS_FAILURE" for r in rows):
        raise HarnessFailure("kloop could not judge every pair (see the table)")
    if passed < len(rows):
        raise typer.Exit(1)


def _run(pool: Any, jobs: list[Any], run_all: Any) -> tuple[list[Any], float, str]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    start = time.monotonic()
    try:
        with Progress(TextColumn("verifying"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      transient=True) as progress:
            bar = progress.add_task("verify", total=len(jobs))
            outcomes = run_all(pool, jobs, lambda _o: progress.advance(bar))
    finally:
        pool.close()
    return outcomes, time.monotonic() - start, pool.name


def _write_traces(path: Path, pairs: list[Any], outcomes: list[Any]) -> None:
    from kloop.verify.trace import to_traces

    lines = []
    for (task, _, _, _), outcome in zip(pairs, outcomes, strict=True):
        if outcome.result is not None:
            lines += to_traces(outcome.verify_result(), task)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def register(app: typer.Typer) -> None:
    app.command("bench", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(bench_command)
