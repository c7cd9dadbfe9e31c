"""The playbook: rules.yaml loaded and validated, evaluated on one profile, findings ranked.

Ranking is kloop's own (see rules.yaml's header): decide the bound from speed-of-light fractions,
put the specific causes of that bound first, then the bound itself, then the health verdict, then
the rest. The tool's own rule order (ncu's estimated speedups) is kept as evidence, never used.
"""

from __future__ import annotations

import ast
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kloop.errors import BadInput
from kloop.profile.derive import arch_facts, build_context, known_names
from kloop.profile.expr import Expression, ExpressionError, Missing, parse
from kloop.profile.schema import Bound, Evidence, Finding, FindingId, KernelProfile, KernelReport, Severity

RULES_PATH = Path(__file__).with_name("rules.yaml")
MAX_GAIN = 0.95


class PlaybookError(BadInput):
    """rules.yaml (or a user rules file) is malformed: names the rule and the problem."""


class Role(StrEnum):
    """What a rule says: the kernel's bound, a cause, or the health verdict."""

    bound = "bound"
    cause = "cause"
    health = "health"


class Rule(BaseModel):
    """One playbook entry (see rules.yaml's header for the meaning of each field)."""

    model_config = ConfigDict(extra="forbid")

    id: FindingId = Field(description="Finding vocabulary id.")
    role: Role = Field(description="bound, cause or health.")
    severity: Severity = Field(description="Severity of the finding when it fires.")
    explains: list[Bound] = Field(default_factory=list, description="Bounds this rule explains.")
    when: list[str] = Field(description="Conditions; all must hold. Each 'metric OP expression'.")
    cite: list[str] = Field(default_factory=list, description="Extra metrics shown as evidence.")
    gain: str = Field(description="Expression: estimated fraction of runtime saved.")
    weight: float = Field(1.0, gt=0, description="Specificity weight used in ranking.")
    supersedes: list[FindingId] = Field(
        default_factory=list, description="Findings this more specific cause explains away: they rank after it."
    )
    mechanism: str = Field(min_length=1, description="Why the hardware is slow.")
    fix: str = Field(min_length=1, description="What to change.")
    wiki_query: str = Field(min_length=1, description="Technique words for KernelWiki.")

    @field_validator("when")
    @classmethod
    def _non_empty(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("a rule needs at least one condition")
        return value


class BoundRule(BaseModel):
    """One entry of the bound decision list (first match wins)."""

    model_config = ConfigDict(extra="forbid")

    bound: Bound = Field(description="The bound decided when all conditions hold.")
    when: list[str] = Field(default_factory=list, description="Conditions; empty means always.")


class CompiledRule:
    """A validated rule with its expressions parsed once."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.conditions: list[Expression] = [parse(text) for text in rule.when]
        self.gain: Expression = parse(rule.gain)


class Playbook:
    """Validated rules plus the bound decision list."""

    def __init__(self, bounds: list[BoundRule], rules: list[Rule], source: Path) -> None:
        self.source = source
        self.bounds = [(b.bound, [parse(t) for t in b.when]) for b in bounds]
        self.rules = [CompiledRule(r) for r in rules]

    def decide_bound(self, ctx: dict[str, Any]) -> Bound:
        """The first bound whose conditions all hold."""
        for bound, conditions in self.bounds:
            if all(_holds(c, ctx) for c in conditions):
                return bound
        return Bound.unknown


def _holds(expression: Expression, ctx: dict[str, Any]) -> bool:
    try:
        return bool(expression.evaluate(ctx))
    except (Missing, TypeError, ZeroDivisionError):
        return False


def _validate_names(where: Path, label: str, texts: list[str], names: frozenset[str]) -> None:
    for text in texts:
        try:
            expression = parse(text)
        except ExpressionError as exc:
            raise PlaybookError(where, f"{label}: {exc}") from exc
        unknown = sorted(expression.names - names)
        if unknown:
            raise PlaybookError(where, f"{label}: unknown metric(s) {', '.join(unknown)} in {text!r}")


def load_playbook(path: Path | None = None) -> Playbook:
    """Load and validate a rules file (default: the shipped rules.yaml); PlaybookError if bad."""
    path = path or RULES_PATH
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise PlaybookError(path, f"cannot read rules: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list) or not isinstance(data.get("bounds"), list):
        raise PlaybookError(path, "expected a mapping with 'bounds' and 'rules' lists")
    names = known_names()
    try:
        bounds = [BoundRule.model_validate(b) for b in data["bounds"]]
    except ValidationError as exc:
        raise PlaybookError(path, f"bounds: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}") from exc
    for index, bound in enumerate(bounds):
        _validate_names(path, f"bounds[{index}]", bound.when, names)
    rules = []
    for index, raw in enumerate(data["rules"]):
        label = f"rules[{index}] ({raw.get('id', '?') if isinstance(raw, dict) else '?'})"
        try:
            rule = Rule.model_validate(raw)
        except ValidationError as exc:
            error = exc.errors()[0]
            raise PlaybookError(path, f"{label}: {'.'.join(map(str, error['loc']))}: {error['msg']}") from exc
        _validate_names(path, label, [*rule.when, rule.gain, *rule.cite], names)
        rules.append(rule)
    return Playbook(bounds, rules, path)


@cache
def default_playbook() -> Playbook:
    """The shipped playbook, loaded once."""
    return load_playbook()


_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


def _condition_evidence(condition: Expression, ctx: dict[str, Any]) -> Evidence:
    """'metric OP expr' -> (metric, measured value, 'OP evaluated-threshold'); else the raw text."""
    tree = condition.tree
    if isinstance(tree, ast.Compare) and len(tree.comparators) == 1:
        left = tree.left
        if isinstance(left, ast.Call) and isinstance(left.func, ast.Name) and left.func.id == "default":
            left = left.args[0]  # default(metric, x) cites the metric itself
        if isinstance(left, ast.Name):
            right = tree.comparators[0]
            try:
                threshold: Any = _round(Expression(ast.unparse(right), right, frozenset()).evaluate(ctx))
            except Missing:
                threshold = ast.unparse(right)
            return Evidence(metric=left.id, value=_round(ctx.get(left.id)), threshold=f"{_OPS[type(tree.ops[0])]} {threshold}")
    return Evidence(metric=condition.text, value=True, threshold=None)


def _evidence(rule: CompiledRule, ctx: dict[str, Any]) -> list[Evidence]:
    items = [_condition_evidence(c, ctx) for c in rule.conditions]
    seen = {e.metric for e in items}
    for metric in rule.rule.cite:
        if metric not in seen and ctx.get(metric) is not None:
            seen.add(metric)
            items.append(Evidence(metric=metric, value=_round(ctx[metric]), threshold=None))
    return items


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.4g}")
    return value


def _finding(rule: CompiledRule, ctx: dict[str, Any]) -> tuple[Finding, float]:
    try:
        gain = float(rule.gain.evaluate(ctx))
        gain = max(0.0, min(MAX_GAIN, gain))
    except (Missing, TypeError, ValueError, ZeroDivisionError):
        gain = None
    r = rule.rule
    finding = Finding(
        id=r.id,
        severity=r.severity,
        evidence=_evidence(rule, ctx),
        mechanism=r.mechanism,
        fix=r.fix,
        wiki_query=r.wiki_query,
        est_gain=round(gain, 3) if gain is not None else None,
    )
    return finding, (gain or 0.0) * r.weight


class Fired(NamedTuple):
    """A rule whose conditions held, its finding and its ranking score (est_gain x weight)."""

    rule: Rule
    finding: Finding
    score: float


def _tier(item: Fired, bound: Bound) -> int:
    """0 causes of the bound, 1 the bound, 2 health, 3 everything else."""
    rule = item.rule
    if rule.role is Role.cause and bound in rule.explains and rule.severity in (Severity.high, Severity.medium):
        return 0
    return {Role.bound: 1, Role.health: 2}.get(rule.role, 3)


def rank(fired: list[Fired], bound: Bound) -> list[Finding]:
    """Order findings: causes of the bound, the bound, health, then the rest (one per id).

    A cause that another fired rule `supersedes` (a symptom of it) ranks after the other causes.
    """
    best: dict[FindingId, Fired] = {}
    for item in fired:
        if item.finding.id not in best or item.score > best[item.finding.id].score:
            best[item.finding.id] = item
    has_cause = any(_tier(i, bound) == 0 for i in best.values())
    kept = [
        i for i in best.values()
        if not (i.rule.role is Role.health and has_cause) and not (i.rule.role is Role.bound and bound not in i.rule.explains)
    ]  # fmt: skip
    superseded = {sid for i in kept for sid in i.rule.supersedes}

    def order(item: Fired) -> tuple[float, float]:
        tier = _tier(item, bound)
        return (tier + 0.5 if tier == 0 and item.finding.id in superseded else tier, -item.score)

    kept.sort(key=order)
    return [i.finding for i in kept]


def analyze_profile(
    profile: KernelProfile, *, min_bytes: float | None = None, min_flops: float | None = None, playbook: Playbook | None = None
) -> tuple[KernelReport, dict[str, Any]]:
    """Evaluate the playbook on one profile: the report (without digest text) and the context used."""
    playbook = playbook or default_playbook()
    ctx = build_context(profile, min_bytes=min_bytes, min_flops=min_flops, facts=arch_facts(profile))
    bound = playbook.decide_bound(ctx)
    fired = []
    for rule in playbook.rules:
        if all(_holds(c, ctx) for c in rule.conditions):
            finding, score = _finding(rule, ctx)
            fired.append(Fired(rule.rule, finding, score))
    sol = {k.removesuffix("_pct"): round(ctx[k] / 100.0, 4) for k in ("sol_bytes_pct", "sol_flops_pct", "dram_sol_pct", "memory_sol_pct", "compute_sol_pct") if k in ctx}
    report = KernelReport(profile=profile, bound=bound, findings=rank(fired, bound), sol_fractions=sol)
    return report, ctx
