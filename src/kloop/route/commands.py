"""`kloop tune TASK SOLUTION` and `kloop route RUN_DIR`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kloop.errors import BadInput


def tune_command(
    task: Annotated[Path, typer.Argument(help="Task directory.")],
    solution: Annotated[Path, typer.Argument(help="Solution directory declaring kloop.tunables.")],
    budget: Annotated[int, typer.Option("--budget", min=1, help="Most configurations to verify.")] = 16,
    regime: Annotated[str | None, typer.Option("--regime", help="Tune on one regime's workloads (e.g. tokens:16-63).")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the result as JSON here.")] = None,
    device: Annotated[str, typer.Option("--device", help="auto, cpu or cuda.")] = "auto",
) -> None:
    """Search a solution's declared tunables; every configuration goes through the verifier."""
    from kloop.route.run import dump
    from kloop.route.tune import real_judge, tune
    from kloop.task.load import load_task

    if not (solution / "solution.json").is_file():
        raise BadInput(solution, "not a solution directory (no solution.json)")
    loaded = load_task(task)

    def show(e) -> None:  # noqa: ANN001 - an Evaluation
        speed = f"{e.speedup_geomean:.2f}x" if e.speedup_geomean else "-"
        typer.echo(f"  {e.status:<20} {speed:>8}  {e.config}")

    result = tune(loaded, solution, budget=budget, regime=regime, judge=real_judge({"device": device}), progress=show)
    dump(result, json_out)
    typer.echo(f"{result.strategy} search: {len(result.evaluations)} of {result.space_size} configurations"
               + (f" on regime {result.regime}" if result.regime else ""))
    if result.best is None:
        typer.echo("no configuration passed the verifier")
        raise typer.Exit(1)
    verdict = "clears" if result.significant else "does not significantly beat"
    typer.echo(f"best: {result.best.config} at {result.best.speedup_geomean:.2f}x; {verdict} the default "
               f"({result.evidence})")


def route_command(
    run_dir: Annotated[Path, typer.Argument(help="Run directory with accepted candidates.")],
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the route report as JSON here.")] = None,
) -> None:
    """Build the shape-routed solution of a run and verify it as one solution."""
    from kloop.route.run import dump, median_overhead_ms, route_run

    if not run_dir.is_dir():
        raise BadInput(run_dir, "run directory not found")
    report = route_run(run_dir)
    dump(report, json_out)
    if not report.admitted:
        typer.echo(f"no route: {report.reason}")
        raise typer.Exit(1)
    speed = f"{report.speedup_geomean:.2f}x" if report.speedup_geomean else "-"
    best = f"{report.best_speedup_geomean:.2f}x" if report.best_speedup_geomean else "-"
    overhead = median_overhead_ms(report)
    typer.echo(f"routed: {report.reason}")
    typer.echo(f"verified {report.status}: {speed} (CI {report.speedup_ci}) vs best alone {best}; "
               f"median dispatch overhead {overhead if overhead is None else f'{overhead * 1000:.1f} us'}")
    typer.echo(f"solution: {report.solution_dir}")
    if report.status != "PASSED":
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("tune")(tune_command)
    app.command("route")(route_command)
