"""rules reviewer: the claim's numbers vs the measured ones, and each hack pattern in a diff."""

from __future__ import annotations

import pytest

from kloop.agents import (
    AgentRequest,
    Claim,
    Decision,
    ProgressMark,
    ReviewEvidence,
    Role,
    Severity,
    get_agent,
)
from kloop.agents.rules import review


def _evidence(added: str, claim: str = "vectorized: 2x", speedup: float = 2.0, status: str = "PASSED",
              best: float = 1.0) -> ReviewEvidence:
    diff = "--- a/solution/main.py\n+++ b/solution/main.py\n" + "".join(f"+{line}\n" for line in added.splitlines())
    return ReviewEvidence(claim=Claim(text=claim), diff=diff, verify_status=status, speedup_geomean=speedup,
                          speedup_ci=[speedup * 0.95, speedup * 1.05], best_speedup=best,
                          listed_axes={"n": [24, 40], "tiny": [1]})


def test_honest_round_is_accepted_as_advanced() -> None:
    verdict = review(_evidence("import torch\ndef run(x, w):\n    return x * w\n"))
    assert verdict.decision is Decision.accept and verdict.progress is ProgressMark.advanced
    assert not [f for f in verdict.findings if f.severity is Severity.high]


@pytest.mark.parametrize(("code", "flag"), [
    ("spec = open('../sealed/definition.json').read()", "reads task files"),
    ("w = json.load(open('workloads.jsonl'))", "reads task files"),
    ("from kloop.task import reference", "imports kloop"),
    ("ref = load_reference(d)", "reference"),
    ("frames = sys._getframe(2)", "reference or the harness"),
    ("if x.shape[0] == 24:", "special-cases listed shapes (24)"),
    ("y = fast(x) if n in (24, 40) else slow(x)", "special-cases listed shapes (24, 40)"),
    ("@functools.lru_cache(maxsize=None)", "caches results"),
    ("key = x.data_ptr()", "caches results"),
    ("_CACHE = {}", "module-level state"),
    ("import time", "timing tricks"),
    ("threading.Thread(target=warm).start()", "timing tricks"),
])
def test_each_hack_pattern_rejects(code: str, flag: str) -> None:
    verdict = review(_evidence(code))
    assert verdict.decision is Decision.reject
    assert any(flag in f.text and f.severity is Severity.high for f in verdict.findings), verdict.findings


def test_innocent_lookalikes_pass() -> None:
    code = "# cached in registers, see notes\nfor i in range(24):\n    pass\nBLOCK = 64\nif n > 1:\n    pass\n"
    assert review(_evidence(code)).decision is Decision.accept


def test_claim_against_measurement() -> None:
    verdict = review(_evidence("x = 1", claim="huge: 10x", speedup=2.0))
    assert any("claim says 10x, measured 2.00x" in f.text and f.severity is Severity.medium for f in verdict.findings)


def test_failed_verification_and_regression_reject() -> None:
    assert review(_evidence("x = 1", status="INCORRECT_NUMERICAL")).decision is Decision.reject
    verdict = review(_evidence("x = 1", speedup=1.2, best=2.0))
    assert verdict.progress is ProgressMark.regressed and verdict.decision is Decision.reject


def test_full_review_scans_the_whole_solution() -> None:
    evidence = _evidence("x = 1")
    evidence.files = {"solution/main.py": "import torch\n_MEMO = {}\n"}
    assert review(evidence).decision is Decision.accept
    assert review(evidence, full=True).decision is Decision.reject


def test_agent_contract() -> None:
    agent = get_agent("rules")
    result = agent.run(AgentRequest(role=Role.reviewer, prompt="", workspace=".", read_only=True,
                                    evidence=_evidence("x = 1")))
    assert result.verdict is not None and result.verdict.decision is Decision.accept
    assert agent.run(AgentRequest(role=Role.reviewer, prompt="", workspace=".")).status.value == "crashed"
