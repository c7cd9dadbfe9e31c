"""How big a KernelBench problem is, measured on the meta device before anything is allocated.

KernelBench's default sizes are chosen for a large GPU (ReLU on 4096 x 393,216 floats is a 6.4 GB
input). Running `get_inputs()`, `Model(...)` and `forward` under `torch.device("meta")` gives
every input, parameter and output shape without touching memory, so an import can refuse a
problem that cannot fit the verifier's sandbox, and find the largest `--scale` that does.
"""

from __future__ import annotations

import contextlib
import io
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kloop.errors import BadInput
from kloop.task import kb_source

SEARCH_STEPS = 18
MEMORY_SHARE = 0.5
"""The estimate must fit this share of the sandbox limit: the rest holds torch and intermediates."""


def exec_problem(file: Path, source: str) -> dict[str, Any]:
    """The problem module's namespace after running its source (the user's own file)."""
    module = types.ModuleType(f"kloop_kernelbench_{abs(hash(file))}")
    namespace = module.__dict__
    namespace["__file__"] = str(file)
    try:
        exec(compile(source, str(file), "exec"), namespace)
    except Exception as exc:
        raise BadInput(file, f"running the problem file failed: {type(exc).__name__}: {exc}") from None
    for symbol in ("Model", "get_inputs", "get_init_inputs"):
        if not callable(namespace.get(symbol)):
            raise BadInput(file, f"a KernelBench problem must define {symbol}")
    return namespace


@dataclass(frozen=True)
class Footprint:
    """Bytes of one workload: inputs, outputs (None when forward has no meta kernel), parameters."""

    inputs: int
    outputs: int | None
    params: int

    @property
    def data(self) -> int:
        """Inputs plus outputs: what `--max-bytes` bounds."""
        return self.inputs + (self.inputs if self.outputs is None else self.outputs)

    @property
    def sandbox(self) -> int:
        """What the sandbox holds at once: inputs, three output copies (two runs, one kept), weights twice."""
        outputs = self.inputs if self.outputs is None else self.outputs
        return self.inputs + 3 * outputs + 2 * self.params

    def text(self) -> str:
        out = "unknown" if self.outputs is None else human(self.outputs)
        return f"inputs {human(self.inputs)}, outputs {out}, parameters {human(self.params)}"


@dataclass(frozen=True)
class ScalePlan:
    """The source to import, the factor applied and what it changed."""

    source: str
    factor: float
    changes: dict[str, tuple[int, int]]
    footprint: Footprint | None


def human(n: int) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} B"


def _nbytes(values: Any) -> int:
    import torch

    items = values if isinstance(values, list | tuple) else [values]
    return sum(int(v.numel()) * v.element_size() for v in items if isinstance(v, torch.Tensor))


def footprint(file: Path, source: str) -> Footprint | None:
    """The problem's memory per workload, from shapes on the meta device; None if get_inputs fails there."""
    import torch

    namespace = exec_problem(file, source)
    quiet = io.StringIO()
    with torch.device("meta"), torch.no_grad(), contextlib.redirect_stdout(quiet):
        try:
            inputs = list(namespace["get_inputs"]())
        except Exception:
            return None
        try:
            model = namespace["Model"](*namespace["get_init_inputs"]())
            params = sum(_nbytes(p) for p in [*model.parameters(), *model.buffers()])
        except Exception:
            return Footprint(_nbytes(inputs), None, 0)
        try:
            outputs: int | None = _nbytes(model(*inputs))
        except Exception:  # an op without a meta kernel, or data-dependent shapes
            outputs = None
    return Footprint(_nbytes(inputs), outputs, params)


def _at(file: Path, source: str, names: set[str], factor: float) -> tuple[str, dict[str, tuple[int, int]], Footprint | None]:
    scaled, changes = kb_source.scale_source(source, names, factor) if factor < 1 else (source, {})
    return scaled, changes, footprint(file, scaled)


def _largest_fitting(file: Path, source: str, names: set[str], hi: float, fits: Any) -> float | None:
    """The largest factor in (0, hi] (3 significant digits) whose footprint passes `fits`, by bisection."""
    lo_ok: float | None = None
    lo, top = 0.0, hi
    for _ in range(SEARCH_STEPS):
        mid = (lo + top) / 2
        fp = _at(file, source, names, mid)[2]
        if fp is not None and fits(fp):
            lo_ok, lo = mid, mid
        else:
            top = mid
    if lo_ok is None:
        return None
    rounded = float(f"{lo_ok:.2g}")
    while rounded > lo_ok:
        rounded = float(f"{rounded * 0.9:.2g}")
    return rounded


def strategies(source: str) -> list[set[str]]:
    """Which sizes to shrink, widest first: every module size; those get_inputs() reads; its leading dim."""
    sizes = kb_source.module_sizes(source)
    every = set(sizes.ints) | set(sizes.tuples)
    read = kb_source.input_size_names(source, sizes)
    hints = kb_source.input_dim_names(source, sizes) or []
    leading = {hints[0][0]} if hints and hints[0] and hints[0][0] else set()
    found: list[set[str]] = []
    for names in (every, read, leading):
        if names and names not in found:
            found.append(names)
    return found or [set()]


def choose_scale(file: Path, source: str, *, scale: float | None, max_bytes: int | None, memory_mb: int,
                 names: set[str]) -> ScalePlan:  # fmt: skip
    """Apply --scale or find the one --max-bytes asks for; refuse (exit 2) when the sandbox cannot hold it."""
    budget = int(memory_mb * (1 << 20) * MEMORY_SHARE)
    if scale is not None and not 0 < scale <= 1:
        raise BadInput("--scale", f"expected a factor in (0, 1], got {scale:g}")
    if max_bytes is not None and max_bytes <= 0:
        raise BadInput("--max-bytes", f"expected a positive byte count, got {max_bytes}")
    factor = 1.0 if scale is None else scale
    if max_bytes is not None:  # both bounds: the data asked for, and what the sandbox can hold

        def fits(fp: Footprint) -> bool:
            return fp.data <= max_bytes and fp.sandbox <= budget

        full = _at(file, source, names, factor)[2]
        if full is not None and not fits(full):
            found = _largest_fitting(file, source, names, factor, fits)
            if found is None:
                raise BadInput(file, f"no scale brings inputs and outputs under {max_bytes} bytes within the sandbox limit")
            factor = found
    scaled, changes, fp = _at(file, source, names, factor)
    if fp is not None and fp.sandbox > budget:
        _refuse(file, source, names, factor, fp, budget, memory_mb)
    return ScalePlan(scaled, factor, changes, fp)


def _refuse(file: Path, source: str, names: set[str], factor: float, fp: Footprint, budget: int, memory_mb: int) -> None:
    fitting = _largest_fitting(file, source, names, factor, lambda f: f.sandbox <= budget) if names else None
    where = "at full size" if factor == 1 else f"at --scale {factor:g}"
    hint = (f"use --scale {fitting:g}" if fitting is not None else
            "no module-level size in get_inputs() can be shrunk")  # fmt: skip
    raise BadInput(file, f"one workload needs about {human(fp.sandbox)} in the sandbox {where} ({fp.text()}), more "
                         f"than the verifier's {memory_mb} MB limit allows; {hint} (or --max-bytes N)")  # fmt: skip
