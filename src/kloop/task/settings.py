"""kloop's own settings under a definition's `"kloop"` key (FlashInfer-Bench ignores it).

Tolerances, comparators, input ranges, the FLOP expression and held-out drawing rules.
Re-exported by `kloop.task.schema`; no torch import.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kloop.task.structured import StructuredInput


class TraceModel(BaseModel):
    """Base of kloop's FlashInfer-Trace models: unknown keys are ignored (as in FlashInfer-Bench).

    Attribute docstrings document the fields in the source only: pydantic's `use_attribute_docstrings`
    re-reads this module's source for every class it builds, ~0.03 s of each `kloop task show` and
    every other task load, and nothing reads the descriptions it would fill (no JSON schema of these
    models is produced)."""

    model_config = ConfigDict(extra="ignore")


class KloopBlockModel(TraceModel):
    """Base of the `"kloop"` block's models: kloop owns these keys, so a misspelt one is an error."""

    model_config = ConfigDict(extra="forbid")


class ToleranceSpec(KloopBlockModel):
    """A definition's tolerance overrides; unset fields take the dtype defaults."""

    atol: float | None = Field(default=None, ge=0)
    """Absolute tolerance."""
    rtol: float | None = Field(default=None, ge=0)
    """Relative tolerance."""
    max_error_cap: float | None = Field(default=None, ge=0)
    """No element may be further than this from the reference, whatever matched_ratio says."""
    matched_ratio: float | None = Field(default=None, gt=0, le=1)
    """Fraction of elements that must satisfy |out - ref| <= atol + rtol*|ref|."""


class Tolerance(TraceModel):
    """A resolved tolerance for one output (see `kloop.task.shapes.tolerance_for`)."""

    atol: float = Field(ge=0)
    """Absolute tolerance."""
    rtol: float = Field(ge=0)
    """Relative tolerance."""
    max_error_cap: float | None = Field(default=None, ge=0)
    """Hard cap on any element's absolute error; None means no cap beyond atol/rtol."""
    matched_ratio: float = Field(default=1.0, gt=0, le=1)
    """Fraction of elements that must be within atol + rtol*|ref|."""
    exact: bool = False
    """Integers and booleans compare exactly."""


class ComparatorName(StrEnum):
    """How an output is compared with the reference (implemented by the verifier)."""

    ALLCLOSE = "allclose"
    """Element-wise |out - ref| <= atol + rtol*|ref|."""
    SORTED_ALLCLOSE = "sorted_allclose"
    """Order-free along the last axis: both sides sorted, then allclose (top-k values)."""
    SET_EQUAL = "set_equal"
    """Order-free along the last axis: the same multiset of values per row (top-k indices)."""


class InputRange(KloopBlockModel):
    """Range of a random input: floats uniform in [low, high), integers in [low, high]."""

    low: float
    """Lower bound."""
    high: float
    """Upper bound."""

    @model_validator(mode="after")
    def _ordered(self) -> InputRange:
        if not (math.isfinite(self.low) and math.isfinite(self.high)) or self.high < self.low:
            raise ValueError(f"input range needs finite low <= high, got [{self.low}, {self.high}]")
        return self


class HeldoutAxis(KloopBlockModel):
    """How to draw held-out values of one var axis; without it, listed values are perturbed."""

    min: int | None = Field(default=None, ge=0)
    """Smallest value to draw."""
    max: int | None = Field(default=None, ge=0)
    """Largest value to draw."""
    choices: list[Annotated[int, Field(ge=0)]] | None = None
    """Draw only from these values."""
    multiple_of: int | None = Field(default=None, ge=1)
    """Drawn values are multiples of this."""


class HeldoutSpec(KloopBlockModel):
    """How the verifier draws held-out workloads beyond the listed ones."""

    count: int | None = Field(default=None, ge=0)
    """How many held-out workloads per verification (None: the verifier's default)."""
    axes: dict[str, HeldoutAxis] = Field(default_factory=dict)
    """Per var axis drawing rules."""


class CoverageSpec(KloopBlockModel):
    """Narrows the verifier's input coverage where an op's domain is genuinely restricted; says why.

    By default every float random input is also drawn signed, wide, tiny, at a second tiny scale
    and with special values (see `kloop.task.inputs.COVERAGE_REGIMES`), wherever the reference
    stays finite and its own precision answers.
    """

    declared_only: list[str] = Field(default_factory=list)
    """Inputs that keep their declared distribution in every regime (e.g. a variance that must be > 0)."""
    regimes: list[str] | None = None
    """Regimes to run (None: all); an empty list turns coverage off."""
    reason: str = Field(min_length=8)
    """Why the domain is narrower than the reals (shown in the verdict)."""


class KloopSettings(KloopBlockModel):
    """kloop's own settings, under the definition's `"kloop"` key (FlashInfer-Bench ignores it)."""

    tolerance: ToleranceSpec | None = None
    """Tolerance for every output (dtype defaults fill the gaps)."""
    output_tolerance: dict[str, ToleranceSpec] = Field(default_factory=dict)
    """Per-output tolerance overrides, by output name."""
    comparator: ComparatorName = ComparatorName.ALLCLOSE
    """Default comparator for every output."""
    comparators: dict[str, ComparatorName] = Field(default_factory=dict)
    """Per-output comparators, by output name."""
    input_ranges: dict[str, InputRange] = Field(default_factory=dict)
    """Value ranges of random inputs, by input name."""
    flops: str | None = None
    """FLOPs of one call as a Python expression over axis names (e.g. `2 * M * N * K`)."""
    heldout: HeldoutSpec | None = None
    """Held-out workload drawing rules."""
    coverage: CoverageSpec | None = None
    """Narrowing of the input coverage, with its reason (None: full coverage)."""
    reference_float64: bool = True
    """On the CPU, the supervisor may run the reference in float64 for a sharper ground truth."""
    structured: dict[str, StructuredInput] = Field(default_factory=dict)
    """Inputs with a structure (indptr, indices, probability rows...), by name: every draw follows it."""
