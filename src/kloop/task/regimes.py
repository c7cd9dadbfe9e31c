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
from kloop.task.inputs import make_inputs
from kloop.task.schema import Definition, RandomInput, Workload
from kloop.task.seeds import derive_seed


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
    """`make_inputs` (the declared draw), with float random inputs redrawn as `regime` says."""
    import torch

    inputs = make_inputs(definition, workload, seed=seed, task_root=task_root)
    spec = definition.settings.coverage
    keep = set(spec.declared_only) if spec is not None else set()
    keep |= set(getattr(definition.settings, "structured", {}))  # `kloop.structured`: every draw keeps the structure
    how = COVERAGE_REGIMES[regime]
    for name, tensor_spec in definition.inputs.items():
        value, source = inputs.get(name), workload.inputs.get(name)
        if name in keep or not isinstance(value, torch.Tensor) or not tensor_spec.dtype.is_float:
            continue
        if source is not None and not isinstance(source, RandomInput):
            continue  # real data (safetensors) and scalars stay as given
        parameter = is_parameter(definition, name)
        if parameter and not how.signed_parameters:
            continue
        gen = torch.Generator(device="cpu").manual_seed(derive_seed(seed, f"{regime}:{name}"))
        declared = definition.settings.input_ranges.get(name)
        unit = max(abs(declared.low), abs(declared.high)) if declared is not None else 1.0
        if declared is None:
            drawn = torch.randn(value.shape, generator=gen, dtype=torch.float64)
        else:
            drawn = (torch.rand(value.shape, generator=gen, dtype=torch.float64) * 2 - 1) * unit
        if not parameter:
            drawn = drawn * how.scale + how.shift * unit
        if how.specials:
            drawn = _sprinkle_specials(drawn, gen, torch.finfo(value.dtype).tiny)
        finite = torch.finfo(value.dtype).max
        inputs[name] = drawn.clamp(-finite, finite).to(value.dtype)
    return inputs


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
