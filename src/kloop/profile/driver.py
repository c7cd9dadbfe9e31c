"""The process a profiler wraps: build the candidate, make one workload's inputs, time one call.

Run as `python -m kloop.profile.driver TASK SOLUTION --workload UUID --device cuda`. Warm-up calls
(JIT compilation, autotuning, caches) run first, outside the NVTX range; then exactly the calls
to capture run inside the push/pop range `kloop_candidate`, so `ncu --nvtx --nvtx-include
kloop_candidate/` captures only the candidate's kernels. Heavy imports happen inside `main`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

NVTX_RANGE = "kloop_candidate"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The driver's command line."""
    parser = argparse.ArgumentParser(prog="python -m kloop.profile.driver")
    parser.add_argument("task", type=Path)
    parser.add_argument("solution", type=Path)
    parser.add_argument("--workload", default=None, help="workload uuid (default: the first)")
    parser.add_argument("--device", default="cuda", help="cuda (also ROCm's torch) or cpu")
    parser.add_argument("--warmup", type=int, default=2, help="calls before the profiled range")
    parser.add_argument("--calls", type=int, default=1, help="calls inside the profiled range")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def select_workload(task: Any, uuid: str | None) -> Any:
    from kloop.errors import BadInput

    if uuid is None:
        return task.workloads[0]
    for workload in task.workloads:
        if workload.uuid == uuid:
            return workload
    raise BadInput(task.root, f"no workload with uuid {uuid!r}")


def _outputs(definition: Any, axes: dict[str, int], device: str) -> list[Any]:
    import torch

    from kloop.task.inputs import torch_dtype
    from kloop.task.shapes import tensor_shapes

    shapes = tensor_shapes(definition, axes)
    return [
        torch.empty(shapes[name] or (), dtype=torch_dtype(spec.dtype, name), device=device)
        for name, spec in definition.outputs.items()
    ]


def main(argv: list[str] | None = None) -> int:
    """Build, warm up, then run the profiled calls inside the NVTX range."""
    import torch

    from kloop.builder import build_solution
    from kloop.task.inputs import make_inputs
    from kloop.task.load import load_solution, load_task
    from kloop.task.shapes import resolve_axes

    args = parse_args(argv)
    task = load_task(args.task)
    workload = select_workload(task, args.workload)
    device = "cuda" if args.device in ("cuda", "rocm") else "cpu"
    built = build_solution(load_solution(args.solution), device=args.device)
    inputs = list(make_inputs(task.definition, workload, seed=args.seed, device=device, task_root=task.root).values())
    axes = resolve_axes(task.definition, workload)
    outs = _outputs(task.definition, axes, device) if built.destination_passing else []

    def call() -> None:
        built.fn(*inputs, *outs)

    for _ in range(args.warmup):
        call()
    gpu = device == "cuda" and torch.cuda.is_available()
    if gpu:
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push(NVTX_RANGE)
    for _ in range(args.calls):
        call()
    if gpu:
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
