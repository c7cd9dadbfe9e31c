"""Input-coverage regimes: inputs beyond a task's declared distribution, drawn from the secret seed.

A KernelBench import declares its inputs uniform in [0, 1); on those, ReLU written as the identity,
softmax without max-subtraction and RMSNorm with eps outside the square root all pass. Each regime
transforms the declared distribution of every *activation* (a float random input whose shape has a
var axis) and keeps the task's own scale as its unit: with a declared range [low, high) the unit is
m = max(|low|, |high|) and the base draw is uniform in [-m, m); without one the base is N(0, 1).

| regime | activation | catches |
| --- | --- | --- |
| signed | base | a kernel right only on the declared sign (ReLU as identity) |
| wide | base x 2^7 | exp without max-subtraction, overflow in intermediate sums |
| small | base x 2^-9 | mean(x^2) near a typical eps (eps outside the root) |
| tiny | base x 2^-16 | mean(x^2) far below eps (eps dropped or squared) |
| shifted | base + 8 m | a mean far from zero (variance computed as E[x^2]) |
| special | base with 0, -0.0, smallest normal and +-1 sprinkled in | sign and zero handling |

*Parameters* (float inputs whose shape has no var axis: weights, biases, per-head constants such as
`A_log`) keep their declared distribution in every regime except `signed`, where they are drawn
signed at their declared magnitude: rescaling a weight shrinks the output with it, which made
wrong answers pass under an absolute tolerance. Scalars and safetensors inputs stay as given, and
inputs named in `kloop.coverage.declared_only` or `kloop.structured` keep their declared draw everywhere.
Powers of two keep every scaled value exact in every float format.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kloop.errors import BadInput
from kloop.task.inputs import make_inputs, torch_dtype
from kloop.task.schema import Definition, RandomInput, Workload
from kloop.task.seeds import derive_seed
from kloop.task.shapes import resolve_axes


@dataclass(frozen=True)
class Regime:
    """How a regime draws activations (parameters: see the module docstring)."""

    scale: float = 1.0
    """Multiplies the base draw."""
    shift: float = 0.0
    """Added after scaling, in units of the declared magnitude."""
    specials: bool = False
    """Sprinkle 0, -0.0, the smallest normal and +-1 into the draw."""
    signed_parameters: bool = False
    """Parameters drawn signed at their declared magnitude (else kept as declared)."""


COVERAGE_REGIMES: dict[str, Regime] = {
    "signed": Regime(signed_parameters=True),
    "wide": Regime(scale=2.0**7),
    "small": Regime(scale=2.0**-9),
    "tiny": Regime(scale=2.0**-16),
    "shifted": Regime(shift=8.0),
    "special": Regime(specials=True),
}


def coverage_regimes(definition: Definition) -> list[str]:
    """The regimes this task runs: all, unless its `kloop.coverage` narrows them (with a reason)."""
    spec = definition.settings.coverage
    if spec is None or spec.regimes is None:
        return list(COVERAGE_REGIMES)
    unknown = [r for r in spec.regimes if r not in COVERAGE_REGIMES]
    if unknown:
        raise BadInput(f"definition {definition.name}", f"kloop.coverage.regimes: unknown {unknown}; "
                       f"known: {sorted(COVERAGE_REGIMES)}")
    return [r for r in COVERAGE_REGIMES if r in spec.regimes]


def is_parameter(definition: Definition, name: str) -> bool:
    """A tensor input whose shape names no var axis: a weight or constant, not an activation."""
    shape = definition.inputs[name].shape
    return shape is not None and not set(shape) & set(definition.var_axes)


def coverage_inputs(definition: Definition, workload: Workload, regime: str, *, seed: int,
                    task_root: Path | str = ".") -> dict[str, Any]:  # fmt: skip
    """`make_inputs` (the declared draw), with float random inputs redrawn as `regime` says.

    The redrawn inputs are drawn in float32 (float64 for a float64 input): every scale is a power
    of two, so nothing a regime does needs more, and torch draws float64 normals six times slower.
    """
    import torch

    how = COVERAGE_REGIMES[regime]
    redrawn = [name for name in definition.inputs if _redrawn(definition, workload, name, how)]
    inputs = make_inputs(definition, workload, seed=seed, task_root=task_root, skip=frozenset(redrawn))
    axes = resolve_axes(definition, workload)
    for name in redrawn:
        tensor_spec = definition.inputs[name]
        shape = tuple(axes[a] for a in tensor_spec.shape or ())
        target = torch_dtype(tensor_spec.dtype, name)
        draw = torch.float64 if target == torch.float64 else torch.float32
        gen = torch.Generator(device="cpu").manual_seed(derive_seed(seed, f"{regime}:{name}"))
        declared = definition.settings.input_ranges.get(name)
        unit = max(abs(declared.low), abs(declared.high)) if declared is not None else 1.0
        if declared is None:
            drawn = torch.randn(shape, generator=gen, dtype=draw)
        else:
            drawn = (torch.rand(shape, generator=gen, dtype=draw) * 2 - 1) * unit
        if not is_parameter(definition, name):
            drawn = drawn * how.scale + how.shift * unit
        if how.specials:
            drawn = _sprinkle_specials(drawn, gen, torch.finfo(target).tiny)
        finite = torch.finfo(target).max
        inputs[name] = drawn.clamp(-finite, finite).to(target)
    return {name: inputs[name] for name in definition.inputs}


def _redrawn(definition: Definition, workload: Workload, name: str, how: Regime) -> bool:
    """Whether `how` redraws this input: a float random tensor, not kept as declared, and not a
    parameter unless the regime draws parameters signed."""
    spec, source = definition.inputs[name], workload.inputs.get(name)
    coverage = definition.settings.coverage
    if coverage is not None and name in coverage.declared_only:
        return False
    if name in getattr(definition.settings, "structured", {}) or spec.shape is None or not spec.dtype.is_float:
        return False  # `kloop.structured`: every draw keeps the structure; scalars stay as given
    if source is None and spec.optional:
        return False
    if source is not None and not isinstance(source, RandomInput):
        return False  # real data (safetensors) and scalars stay as given
    return how.signed_parameters or not is_parameter(definition, name)


def _sprinkle_specials(drawn: Any, gen: Any, tiny: float) -> Any:
    """About one element in eight becomes 0, -0.0, +-tiny (smallest normal) or +-1."""
    import torch

    flat = drawn.reshape(-1).clone()
    if flat.numel() == 0:
        return drawn
    picks = torch.randint(0, 8 * 7, (flat.numel(),), generator=gen)
    values = torch.tensor([0.0, -0.0, tiny, -tiny, 1.0, -1.0, 0.0], dtype=flat.dtype)
    hit = picks < 7
    flat[hit] = values[picks[hit]]
    return flat.reshape(drawn.shape)
