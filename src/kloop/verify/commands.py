"""`kloop verify TASK SOLUTION`: the hard verifier on the command line.

Exit 0 passed, 1 rejected (incorrect, crashed, timed out, hack, integrity), 2 bad input, 3 harness
failure. torch is imported only inside the command body, so `kloop --help` stays fast.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kloop.errors import BadInput

if TYPE_CHECKING:  # the result schema pulls in pydantic: not needed for `kloop --help`
    from kloop.verify.result import VerifyOptions, VerifyResult

SEED_ENV = "KLOOP_SEED_SECRET"
SEED_FILE_ENV = "KLOOP_SEED_SECRET_FILE"


def secret_seed() -> int:
    """The seed from $KLOOP_SEED_SECRET or the file named by $KLOOP_SEED_SECRET_FILE (never printed)."""
    secret = os.environ.get(SEED_ENV)
    if secret is None and os.environ.get(SEED_FILE_ENV):
        path = Path(os.environ[SEED_FILE_ENV])
        try:
            secret = path.read_text().strip()
        except OSError as exc:
            raise BadInput(path, f"cannot read the seed secret: {exc.strerror}") from None
    if not secret:
        raise BadInput("--seed-secret", f"set {SEED_ENV} or {SEED_FILE_ENV} to the secret to verify with")
    from kloop.task.seeds import derive_seed

    return derive_seed(secret)


def parse_workloads(text: str) -> int | None:
    if text == "all":
        return None
    if text.isdigit() and int(text) > 0:
        return int(text)
    raise BadInput("--workloads", f"expected a positive integer or 'all', got {text!r}")


def load_manifest(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise BadInput(path, f"not a readable JSON manifest: {exc}") from None
    files = data.get("files", data) if isinstance(data, dict) else None
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        raise BadInput(path, "manifest must map relative paths to sha256 hex digests")
    return files


def _load_task(task: str, fib_root: Path | None, definition: str | None) -> Any:
    from kloop.task.load import load_fib_task, load_task

    if fib_root is not None:
        return load_fib_task(fib_root, definition or task)
    return load_task(task)


def render(result: VerifyResult, stream: Any) -> None:
    """A compact rich view: verdict, failing checks, per-workload numbers."""
    from rich.console import Console
    from rich.table import Table

    console = Console(file=stream, highlight=False, width=max(120, Console(file=stream).width))
    colour = "green" if result.passed else "red"
    console.print(f"[bold {colour}]{result.status.value}[/] {result.solution} on {result.task} ({result.device})")
    for reason in result.reasons:
        console.print(f"  [red]x[/] {reason}")
    table = Table(box=None, pad_edge=False)
    for col in ("workload", "axes", "status", "max abs err", "latency ms", "baseline ms", "speedup"):
        table.add_column(col)
    for w in result.workloads:
        table.add_row(w.uuid[:18] + (" (held-out)" if w.heldout else ""), json.dumps(w.axes), w.status.value,
                      _fmt(w.max_abs_error, ".2e"), _fmt(w.latency_ms, ".4g"), _fmt(w.baseline_latency_ms, ".4g"),
                      _fmt(w.speedup, ".2f") + ("" if not w.speedup_ci else f" [{w.speedup_ci[0]:.2f}, {w.speedup_ci[1]:.2f}]"))  # fmt: skip
    if result.workloads:
        console.print(table)
    passed = sum(c.passed for c in result.checks)
    console.print(f"checks: {passed}/{len(result.checks)} passed" +
                  (f"; failed: {', '.join(result.failed_checks())}" if result.failed_checks() else ""))  # fmt: skip
    s = result.summary
    if s.speedup_geomean is not None and s.speedup_ci:
        console.print(f"speedup (geomean): {s.speedup_geomean:.3f}x  95% CI [{s.speedup_ci[0]:.3f}, {s.speedup_ci[1]:.3f}]")
    elif s.timing_note:
        console.print(f"no speedup: {s.timing_note}")


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def register(app: typer.Typer) -> None:
    """Add `kloop verify` to the root app."""

    @app.command("verify")
    def verify_command(
        task: Annotated[str, typer.Argument(help="Task directory (or, with --fib-root, the definition name).")],
        solution: Annotated[Path, typer.Argument(help="Solution directory or FlashInfer-Trace Solution JSON.")],
        device: Annotated[str, typer.Option(help="auto, cpu, cuda, rocm or gpu.")] = "auto",
        json_out: Annotated[Path | None, typer.Option("--json", help="Write the verdict JSON here ('-': stdout).")] = None,
        trace_out: Annotated[Path | None, typer.Option("--trace-out", help="Write FlashInfer-Trace Trace lines (JSONL).")] = None,
        workloads: Annotated[str, typer.Option(help="Verify the first N listed workloads, or 'all'.")] = "all",
        no_timing: Annotated[bool, typer.Option("--no-timing", help="Correctness only: no timing, no speedup.")] = False,
        seed_secret: Annotated[bool, typer.Option("--seed-secret", help=f"Seed from ${SEED_ENV} (or the file in ${SEED_FILE_ENV}) instead of a fresh random one, to reproduce a verification; never printed.")] = False,
        fib_root: Annotated[Path | None, typer.Option(help="FlashInfer-Trace dataset root (TASK is then the definition name).")] = None,
        definition: Annotated[str | None, typer.Option(help="Definition name under --fib-root (default: TASK).")] = None,
        baseline: Annotated[Path | None, typer.Option(help="Baseline solution (default: the task's baseline/, else its reference).")] = None,
        manifest: Annotated[Path | None, typer.Option(help="Sealed manifest JSON {relpath: sha256} the task must match.")] = None,
        timeout: Annotated[float, typer.Option(help="Seconds allowed for any one call or timing batch.")] = 120.0,
        build_timeout: Annotated[float | None, typer.Option(help="Seconds allowed to build and import.")] = None,
        memory_mb: Annotated[int, typer.Option(help="Sandbox memory limit in MB.")] = 8192,
        threads: Annotated[int, typer.Option(help="CPU threads in the sandbox.")] = 1,
        heldout: Annotated[int, typer.Option(help="Held-out workloads to draw.")] = 2,
        iterations: Annotated[int, typer.Option(help="Least timed calls per batch (one where a call alone lasts over 2 ms).")] = 2,
        rounds: Annotated[int, typer.Option(help="Timing rounds per workload (the CI's replicates).")] = 16,
        log_dir: Annotated[Path | None, typer.Option(help="Where the sandbox logs go.")] = None,
    ) -> None:
        """Verify SOLUTION against TASK in a fresh sandbox; exit 0 passed, 1 rejected, 2 bad input, 3 harness failure."""
        from kloop.device.detect import check_request
        from kloop.verify import verify
        from kloop.verify.result import VerifyOptions

        options = VerifyOptions(
            device=check_request(device),
            workloads=parse_workloads(workloads), timing=not no_timing, heldout=heldout, timeout_s=timeout,
            build_timeout_s=build_timeout, memory_limit_mb=memory_mb, threads=threads, iterations=iterations,
            rounds=rounds, seed=secret_seed() if seed_secret else None, baseline_path=baseline,
            expected_manifest=load_manifest(manifest) if manifest else None, log_dir=log_dir,
        )  # fmt: skip
        from kloop.progress import live, wanted

        loaded = _load_task(task, fib_root, definition)
        with live(f"verifying {solution.name} on {loaded.definition.name}", enabled=wanted(json_out is not None)):
            result = verify(loaded, solution, options)
        _emit(result, loaded, options, json_out, trace_out)
        raise typer.Exit(0 if result.passed else 1)


def _emit(result: VerifyResult, task: Any, options: VerifyOptions, json_out: Path | None, trace_out: Path | None) -> None:
    from kloop.verify.trace import write_traces

    text = result.model_dump_json(indent=2)
    if json_out is not None and str(json_out) == "-":
        sys.stdout.write(text + "\n")
        render(result, sys.stderr)
    else:
        if json_out is not None:
            json_out.parent.mkdir(parents=True, exist_ok=True)
            json_out.write_text(text + "\n")
        render(result, sys.stdout)
    if trace_out is not None:
        selected = task.workloads[: options.workloads] if options.workloads else task.workloads
        write_traces(trace_out, result, task, selected)
