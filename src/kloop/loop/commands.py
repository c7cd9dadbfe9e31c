"""`kloop run`, `kloop run --resume`, `kloop approve`, `kloop status`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kloop.errors import BadInput

if TYPE_CHECKING:
    from kloop.loop.campaign import Campaign
    from kloop.loop.config import RunConfig
    from kloop.loop.summary import Summary

def _new_config(task: str | None, writer: str | None, reviewer: str | None, stages: str, rounds: int | None,
                budget: str | None, target_speedup: float | None, device: str, gate: str | None,
                stall_after: int = 3, team: int = 1) -> RunConfig:  # fmt: skip
    from kloop.loop.config import Budgets, RunConfig, parse_budgets, parse_stages

    for flag, value in (("TASK", task), ("--writer", writer), ("--reviewer", reviewer)):
        if not value:
            raise BadInput("kloop run", f"{flag} is required (or continue a run with --resume RUN_DIR)")
    if gate not in (None, "plan"):
        raise BadInput("--gate", f"unknown gate {gate!r} (known: plan)")
    from kloop.device.detect import check_request

    check_request(device)
    limits = parse_budgets(budget) if budget else Budgets(None, None, None)
    from kloop.agents import get_agent
    from kloop.verify.result import options_from_env

    config = RunConfig(task=str(task), writer=str(writer), reviewer=str(reviewer), stages=parse_stages(stages),
                       rounds=rounds, budget_s=limits.seconds, cost_limit_usd=limits.cost,
                       token_limit=limits.tokens, target_speedup=target_speedup,
                       device=device, gate_plan=gate == "plan", stall_after=stall_after, verify=options_from_env(),
                       team=team)
    from kloop.loop.branches import branch_names

    for branch in branch_names(team) if team > 1 else [None]:  # validate specs before anything is created
        get_agent(config.writer_for(branch), where="--writer")
    get_agent(reviewer or "", where="--reviewer")
    return config


def _print_end(run_dir: Path, summary: Summary) -> None:
    best = summary.best
    speed = f"{best.speedup_geomean:.2f}x" if best.speedup_geomean else "-"
    typer.echo(f"kloop: {summary.status.value} ({summary.outcome.value}): {summary.reason}")
    typer.echo(f"best: {best.candidate} (round {best.round}) at {speed} over the baseline")
    typer.echo(f"summary: {run_dir / 'summary.json'}")
    typer.echo(f"report:  {run_dir / 'report.html'}")


def run_command(
    task: Annotated[str | None, typer.Argument(help="Task directory (definition.json, workloads.jsonl, baseline/).")] = None,
    writer: Annotated[str | None, typer.Option("--writer", help="Writer agent: replay:FILE, tuner, claude, ...")] = None,
    reviewer: Annotated[str | None, typer.Option("--reviewer", help="Reviewer agent: rules, claude, ...")] = None,
    stages: Annotated[str, typer.Option("--stages", help="Comma-separated stages.")] = "research,iterate,tune",
    rounds: Annotated[int | None, typer.Option("--rounds", min=1, help="Most writer rounds.")] = 20,
    budget: Annotated[str | None, typer.Option("--budget", help="Wall time (30m, 1h30m, 90s), cost ($5) and/or "
                                                         "tokens (200k tokens), comma-separated.")] = None,
    target_speedup: Annotated[float | None, typer.Option("--target-speedup", help="Stop at this speedup.")] = None,
    device: Annotated[str, typer.Option("--device", help="auto, cpu, cuda, rocm or gpu.")] = "auto",
    gate: Annotated[str | None, typer.Option("--gate", help="`plan`: pause after research for `kloop approve`.")] = None,
    stall_after: Annotated[int, typer.Option("--stall-after", min=0, help="Rounds without an acceptance, after the "
                                             "replan prompt, before the run stops as stalled.")] = 3,
    out: Annotated[Path | None, typer.Option("--out", help="Run directory to create.")] = None,
    resume: Annotated[Path | None, typer.Option("--resume", help="Continue the run in this directory.")] = None,
    cluster: Annotated[str, typer.Option("--cluster", help="Verification pool: local, auto (a running Ray "
                                         "cluster) or ray://ADDRESS.")] = "local",
    team: Annotated[int, typer.Option("--team", min=1, help="Writers on their own branches (git worktrees), "
                                      "sharing the lineage, the global best and the reviewer; `{branch}` in "
                                      "--writer names each branch's own.")] = 1,
) -> None:
    """Run the gated plan -> execute -> verify loop on a task (or continue one with --resume)."""
    from kloop.loop.config import load_config
    from kloop.loop.defaults import default_services
    from kloop.loop.state import RunPaths

    if resume is not None:
        if task or out:
            raise BadInput("kloop run", "--resume takes the run directory only (no TASK, no --out)")
        config = load_config(RunPaths(resume).config)
        campaign = _campaign_class(config.team).open(resume, default_services(config))
        run_dir = resume
    else:
        config = _new_config(task, writer, reviewer, stages, rounds, budget, target_speedup, device, gate, stall_after,
                             team)
        from kloop.pool.base import check_cluster

        config = config.model_copy(update={"cluster": check_cluster(cluster)})
        if out is None:
            raise BadInput("kloop run", "--out RUN_DIR is required")
        if not Path(str(task)).is_dir():
            raise BadInput(str(task), "task directory not found")
        from kloop.task.load import load_task

        load_task(Path(str(task)))  # a malformed task is one clear line now, not a blocked run later
        campaign = _campaign_class(team).create(Path(str(task)), out, config, default_services(config))
        run_dir = out
    _print_end(run_dir, campaign.run())


def _campaign_class(team: int) -> type[Campaign]:
    """A single run, or a team of branches (`--team N`, N > 1; kept in the run's config for --resume)."""
    from kloop.loop.campaign import Campaign
    from kloop.loop.team import TeamCampaign

    return TeamCampaign if team > 1 else Campaign


def approve_command(
    run_dir: Annotated[Path, typer.Argument(help="Run directory paused by --gate plan.")],
) -> None:
    """Approve notes/plan.md of a run paused after research; then continue it with --resume."""
    from kloop.loop.approval import approve

    typer.echo(approve(run_dir))


def status_command(
    run_dir: Annotated[Path, typer.Argument(help="Run directory, in progress or finished.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Show where a run stands: stage, round in flight, best speedup, every round's verdict."""
    from kloop.loop.approval import show_status

    show_status(run_dir, as_json, echo=typer.echo)


def register(app: typer.Typer) -> None:
    app.command("run")(run_command)
    app.command("approve")(approve_command)
    app.command("status")(status_command)
