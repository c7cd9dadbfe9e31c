"""FlashInfer-Trace as pydantic models, with FlashInfer-Bench's exact field names.

Field names, defaults and validation rules follow `flashinfer_bench.data` (definition,
workload, solution, trace) so files round-trip between the two tools; unknown keys are
ignored as FlashInfer-Bench ignores them. kloop's own settings live under a `"kloop"` key
(`KloopSettings` on a Definition, `SolutionKloopSettings` on a Solution). Importing this
module must not import torch.
"""

from __future__ import annotations

import ast
import hashlib
import math
from enum import StrEnum
from pathlib import PurePosixPath, PureWindowsPath
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from kloop.task.expr import ExpressionError, names_in
from kloop.task.settings import (
    ComparatorName,
    HeldoutAxis,
    HeldoutSpec,
    InputRange,
    KloopSettings,
    Tolerance,
    ToleranceSpec,
    TraceModel,
)

__all__ = [
    "COMPILED_LANGUAGES", "AxisConst", "AxisSpec", "AxisVar", "Binding", "BuildSpec", "ComparatorName",
    "Correctness", "DType", "Definition", "Environment", "Evaluation", "HeldoutAxis",
    "HeldoutSpec", "InputRange", "InputSpec", "KloopSettings", "Language", "Performance", "RandomInput",
    "SafetensorsInput", "ScalarInput", "Solution", "SolutionKloopSettings", "SourceFile", "SupportedBindings",
    "SupportedLanguages", "Tolerance", "ToleranceSpec", "Trace", "TunableValue", "VerifyStatus", "Workload",
    "check_relative_source_path",
]  # fmt: skip

NonEmptyString = Annotated[str, Field(min_length=1)]
NonNegativeInt = Annotated[int, Field(ge=0)]


# ----------------------------------------------------------------------------- definition


class AxisConst(TraceModel):
    """An axis whose value is fixed by the definition (e.g. a hidden size)."""

    type: Literal["const"] = "const"
    """Type tag of constant axes."""
    value: NonNegativeInt
    """The axis length."""
    description: str | None = None
    """What the axis means."""


class AxisVar(TraceModel):
    """An axis whose value each workload gives (e.g. the number of tokens)."""

    type: Literal["var"] = "var"
    """Type tag of variable axes."""
    description: str | None = None
    """What the axis means."""


AxisSpec = Annotated[AxisConst | AxisVar, Field(discriminator="type")]


class DType(StrEnum):
    """Tensor element types FlashInfer-Trace knows."""

    FLOAT32 = "float32"
    FLOAT16 = "float16"
    BFLOAT16 = "bfloat16"
    FLOAT8_E4M3FN = "float8_e4m3fn"
    FLOAT8_E5M2 = "float8_e5m2"
    FLOAT4_E2M1 = "float4_e2m1"
    INT64 = "int64"
    INT32 = "int32"
    INT16 = "int16"
    INT8 = "int8"
    BOOL = "bool"

    @property
    def is_float(self) -> bool:
        return self.value.startswith(("float", "bfloat"))

    @property
    def itemsize(self) -> float:
        """Bytes per element (0.5 for fp4)."""
        return _ITEMSIZE[self.value]


_ITEMSIZE: dict[str, float] = {
    "float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1,
    "float4_e2m1": 0.5, "int64": 8, "int32": 4, "int16": 2, "int8": 1, "bool": 1,
}  # fmt: skip


class TensorSpec(TraceModel):
    """One input or output: symbolic shape over the definition's axes, and dtype."""

    shape: list[NonEmptyString] | None
    """Axis names, outermost first; null for a scalar."""
    dtype: DType
    """Element type."""
    description: str | None = None
    """What the tensor holds."""
    optional: bool = False
    """The input may be absent (passed as None); used by FlashInfer-Trace contest definitions."""


class Definition(TraceModel):
    """A kernel's interface and semantics: axes, inputs, outputs, reference `run`."""

    name: NonEmptyString
    """Unique name of the definition."""
    op_type: NonEmptyString
    """Compute category (gemm, rmsnorm, gdn, ...)."""
    axes: dict[NonEmptyString, AxisSpec]
    """Symbolic dimensions used in shapes."""
    inputs: dict[NonEmptyString, TensorSpec]
    """Inputs in call order."""
    outputs: dict[NonEmptyString, TensorSpec]
    """Outputs in return order; names must not overlap the inputs."""
    reference: NonEmptyString
    """Python source defining a top-level `run(*inputs)` that returns the outputs."""
    tags: list[NonEmptyString] = Field(default_factory=list)
    """Free-form tags."""
    description: str | None = None
    """What the kernel computes."""
    constraints: list[NonEmptyString] = Field(default_factory=list)
    """Expressions over axes that every workload must satisfy."""
    kloop: KloopSettings | None = None
    """kloop's extension block."""

    @model_validator(mode="after")
    def _check(self) -> Definition:
        _check_reference(self.reference)
        if overlap := sorted(set(self.inputs) & set(self.outputs)):
            raise ValueError(f"input and output names overlap: {overlap}")
        for role, tensors in (("input", self.inputs), ("output", self.outputs)):
            for tname, spec in tensors.items():
                for axis in spec.shape or []:
                    if axis not in self.axes:
                        raise ValueError(f'{role} "{tname}" uses undeclared axis "{axis}"')
        for text in self.constraints:
            self._check_expression("constraint", text)
        if self.kloop is not None:
            self._check_kloop(self.kloop)
        return self

    def _check_expression(self, what: str, text: str) -> None:
        try:
            unknown = names_in(text) - set(self.axes)
        except ExpressionError as exc:
            raise ValueError(f"{what}: {exc}") from None
        if unknown:
            raise ValueError(f"{what} {text!r} names undeclared axes {sorted(unknown)}")

    def _check_kloop(self, settings: KloopSettings) -> None:
        if settings.flops is not None:
            self._check_expression("kloop.flops", settings.flops)
        for key, table in (
            ("kloop.output_tolerance", settings.output_tolerance),
            ("kloop.comparators", settings.comparators),
        ):
            if unknown := sorted(set(table) - set(self.outputs)):
                raise ValueError(f"{key} names unknown outputs {unknown}")
        if unknown := sorted(set(settings.input_ranges) - set(self.inputs)):
            raise ValueError(f"kloop.input_ranges names unknown inputs {unknown}")
        if unknown := sorted(set(settings.structured) - set(self.inputs)):
            raise ValueError(f"kloop.structured names unknown inputs {unknown}")
        if settings.heldout is not None and (
            unknown := sorted(set(settings.heldout.axes) - set(self.var_axes))
        ):
            raise ValueError(f"kloop.heldout.axes names axes that are not var axes {unknown}")

    @property
    def const_axes(self) -> dict[str, int]:
        """Constant axes and their values."""
        return {n: a.value for n, a in self.axes.items() if isinstance(a, AxisConst)}

    @property
    def var_axes(self) -> list[str]:
        """Names of the variable axes, in declaration order."""
        return [n for n, a in self.axes.items() if isinstance(a, AxisVar)]

    @property
    def settings(self) -> KloopSettings:
        """The kloop block, or its defaults when the definition has none."""
        return self.kloop if self.kloop is not None else KloopSettings()


def _check_reference(source: str) -> None:
    try:
        module = ast.parse(source, mode="exec")
    except SyntaxError as exc:
        raise ValueError(f"reference is not valid Python: {exc.msg} (line {exc.lineno})") from None
    if not any(isinstance(n, ast.FunctionDef) and n.name == "run" for n in module.body):
        raise ValueError("reference must define a top-level function named 'run'")


# ----------------------------------------------------------------------------- workload


class RandomInput(TraceModel):
    """Generate the input randomly (per dtype, or within kloop.input_ranges)."""

    type: Literal["random"] = "random"
    """Type tag."""


class ScalarInput(TraceModel):
    """A literal scalar input."""

    type: Literal["scalar"] = "scalar"
    """Type tag."""
    value: int | float | bool
    """The value."""


class SafetensorsInput(TraceModel):
    """A tensor read from a safetensors file."""

    type: Literal["safetensors"] = "safetensors"
    """Type tag."""
    path: NonEmptyString
    """File path, relative to the task (or dataset) root."""
    tensor_key: NonEmptyString
    """Key of the tensor in the file."""


InputSpec = Annotated[RandomInput | ScalarInput | SafetensorsInput, Field(discriminator="type")]


class Workload(TraceModel):
    """One concrete call: values of the var axes and where each input comes from."""

    axes: dict[str, NonNegativeInt]
    """Values of the variable axes."""
    inputs: dict[str, InputSpec]
    """Input sources by input name; a missing non-optional input is drawn randomly."""
    uuid: NonEmptyString
    """Unique id of the workload."""


# ----------------------------------------------------------------------------- solution


class Language(StrEnum):
    """Solution languages: FlashInfer-Bench's plus kloop's `hip`."""

    PYTHON = "python"
    TRITON = "triton"
    CPP = "cpp"
    CUDA = "cuda"
    TILELANG = "tilelang"
    HIP = "hip"


SupportedLanguages = Language  # FlashInfer-Bench's name


class Binding(StrEnum):
    """How compiled solutions are exposed to Python."""

    TVM_FFI = "tvm-ffi"
    TORCH = "torch"


SupportedBindings = Binding  # FlashInfer-Bench's name

COMPILED_LANGUAGES = frozenset({Language.CPP, Language.CUDA, Language.HIP})


def check_relative_source_path(path: str) -> None:
    """A relative path (solution source, safetensors blob) must stay inside its directory."""
    if PurePosixPath(path).is_absolute() or PureWindowsPath(path).is_absolute() or path.startswith("\\"):
        raise ValueError(f"path {path!r} is absolute")
    if ".." in PurePosixPath(path.replace("\\", "/")).parts:
        raise ValueError(f"path {path!r} escapes its directory (..)")


class SourceFile(TraceModel):
    """One source file of a solution."""

    path: NonEmptyString
    """Path relative to the solution directory (no `..`, not absolute)."""
    content: NonEmptyString
    """The file's full text (a solution directory may omit it; the loader fills it in)."""

    @field_validator("path")
    @classmethod
    def _relative(cls, value: str) -> str:
        check_relative_source_path(value)
        return value


class BuildSpec(TraceModel):
    """How to build and call a solution."""

    language: Language
    """Source language."""
    target_hardware: list[str] = Field(min_length=1)
    """Hardware the solution targets (e.g. `cpu`, `cuda`, `H100`)."""
    entry_point: NonEmptyString
    """`FILE::SYMBOL`, e.g. `main.py::run` or `kernel.cpp::run`."""
    dependencies: list[NonEmptyString] = Field(default_factory=list)
    """Libraries the solution needs."""
    destination_passing_style: bool = True
    """True: called as fn(*inputs, *outputs) and writes outputs; False: returns them."""
    binding: Binding | None = None
    """Binding of compiled languages; kloop defaults to `torch` (see `effective_binding`)."""

    @field_validator("entry_point")
    @classmethod
    def _entry_point(cls, value: str) -> str:
        if value.count("::") != 1 or not all(value.split("::")):
            raise ValueError(f"entry_point {value!r} must look like FILE::SYMBOL")
        return value

    @property
    def effective_binding(self) -> Binding | None:
        """The binding kloop builds with: the declared one, else `torch` for compiled code."""
        if self.binding is not None:
            return self.binding
        return Binding.TORCH if self.language in COMPILED_LANGUAGES else None


TunableValue = int | float | bool | str


class SolutionKloopSettings(TraceModel):
    """kloop's block in solution.json: tunables the tuner may search."""

    tunables: dict[str, list[TunableValue]] = Field(default_factory=dict)
    """Name -> candidate values; sources use `${NAME}` placeholders."""
    config: dict[str, TunableValue] = Field(default_factory=dict)
    """The configuration these sources were instantiated with (written by the tuner)."""

    @field_validator("tunables")
    @classmethod
    def _names(cls, value: dict[str, list[TunableValue]]) -> dict[str, list[TunableValue]]:
        for name, values in value.items():
            if not name.isidentifier():
                raise ValueError(f"tunable name {name!r} is not an identifier")
            if not values:
                raise ValueError(f"tunable {name!r} has no values")
        return value


class Solution(TraceModel):
    """A concrete implementation of a Definition."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    name: NonEmptyString
    """Unique solution name."""
    definition: NonEmptyString
    """Name of the Definition it implements."""
    author: NonEmptyString
    """Who (or which agent) wrote it."""
    spec: BuildSpec
    """Build and call specification."""
    sources: list[SourceFile] = Field(min_length=1)
    """All source files."""
    description: str | None = None
    """The technique used."""
    kloop: SolutionKloopSettings | None = None
    """kloop's extension block (tunables)."""

    @model_validator(mode="after")
    def _check_sources(self) -> Solution:
        seen: set[str] = set()
        for source in self.sources:
            if source.path in seen:
                raise ValueError(f"duplicate source path {source.path!r}")
            seen.add(source.path)
        if self.entry_file not in seen:
            raise ValueError(f"entry file {self.entry_file!r} is not among the sources")
        return self

    @property
    def entry_file(self) -> str:
        return self.spec.entry_point.split("::")[0]

    @property
    def entry_symbol(self) -> str:
        return self.spec.entry_point.split("::")[1]

    def content_hash(self) -> str:
        """sha256 over everything that changes behaviour (build caches key on it)."""
        digest = hashlib.sha256()
        spec = self.spec.model_dump_json()
        for part in (self.name, self.definition, spec, *(p for s in self.sources for p in (s.path, s.content))):
            digest.update(part.encode())
            digest.update(b"\0")
        return digest.hexdigest()


# ----------------------------------------------------------------------------- trace


class Correctness(TraceModel):
    """Error of a solution's outputs against the reference."""

    model_config = ConfigDict(extra="ignore", ser_json_inf_nan="strings")

    max_relative_error: float = 0.0
    """Largest relative error."""
    max_absolute_error: float = 0.0
    """Largest absolute error."""
    extra: dict[str, Any] | None = None
    """Further metrics."""

    @field_validator("max_relative_error", "max_absolute_error")
    @classmethod
    def _non_negative(cls, value: float) -> float:
        if not math.isnan(value) and value < 0:
            raise ValueError("must be non-negative or NaN")
        return value


class Performance(TraceModel):
    """Timing of a solution against the reference."""

    latency_ms: float = Field(default=0.0, ge=0)
    """Solution latency."""
    reference_latency_ms: float = Field(default=0.0, ge=0)
    """Reference (baseline) latency."""
    speedup_factor: float = Field(default=0.0, ge=0)
    """reference_latency_ms / latency_ms."""


class Environment(TraceModel):
    """Where an evaluation ran."""

    hardware: NonEmptyString
    """Hardware name (e.g. `NVIDIA_H100`, `cpu`)."""
    libs: dict[str, str] = Field(default_factory=dict)
    """Library versions."""


class VerifyStatus(StrEnum):
    """Every verdict kloop gives: FlashInfer-Bench's closed set of outcomes plus kloop's REJECTED.

    One enum for the verifier and for traces: REJECTED (a hack or a broken integrity check) has
    no FlashInfer-Bench status, so it leaves kloop as RUNTIME_ERROR (`fib()`), the reason in the log.
    """

    PASSED = "PASSED"
    INCORRECT_SHAPE = "INCORRECT_SHAPE"
    INCORRECT_NUMERICAL = "INCORRECT_NUMERICAL"
    INCORRECT_DTYPE = "INCORRECT_DTYPE"
    RUNTIME_ERROR = "RUNTIME_ERROR"
    COMPILE_ERROR = "COMPILE_ERROR"
    TIMEOUT = "TIMEOUT"
    REJECTED = "REJECTED"

    def fib(self) -> VerifyStatus:
        """The status as FlashInfer-Bench spells it (REJECTED -> RUNTIME_ERROR)."""
        return VerifyStatus.RUNTIME_ERROR if self is VerifyStatus.REJECTED else self


class Evaluation(TraceModel):
    """One solution on one workload: status, metrics, environment."""

    status: VerifyStatus
    """Outcome, one of FlashInfer-Bench's (never REJECTED: export `fib()`)."""
    environment: Environment
    """Where it ran."""
    timestamp: NonEmptyString
    """ISO time of the evaluation."""
    log: str = ""
    """Captured output or the rejection reason."""
    correctness: Correctness | None = None
    """Present for PASSED and INCORRECT_NUMERICAL."""
    performance: Performance | None = None
    """Present only for PASSED."""

    @model_validator(mode="after")
    def _metrics_match_status(self) -> Evaluation:
        if self.status is not self.status.fib():
            raise ValueError(f"{self.status.value} is not a FlashInfer-Bench status (export it as {self.status.fib().value})")
        needs_correctness = self.status in (VerifyStatus.PASSED, VerifyStatus.INCORRECT_NUMERICAL)
        needs_performance = self.status == VerifyStatus.PASSED
        if (self.correctness is not None) != needs_correctness:
            raise ValueError(f"correctness must {'' if needs_correctness else 'not '}be given for {self.status.value}")
        if (self.performance is not None) != needs_performance:
            raise ValueError(f"performance must {'' if needs_performance else 'not '}be given for {self.status.value}")
        return self


class Trace(TraceModel):
    """A workload, optionally with a solution's evaluation on it (one line of a traces file)."""

    definition: NonEmptyString
    """Definition name."""
    workload: Workload
    """The workload."""
    solution: str | None = None
    """Solution name (None for workload-only lines)."""
    evaluation: Evaluation | None = None
    """The evaluation (None for workload-only lines)."""

    def is_workload_trace(self) -> bool:
        return self.solution is None and self.evaluation is None
