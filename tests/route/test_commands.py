"""`kloop tune`, `kloop route`, `kloop export` through the CLI, on real verifications and real run directories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kloop.cli import main
from tests.loop.helpers import VECTORIZED, make_campaign, real_verifier

TASK = Path(__file__).parent / "tasks" / "rowscale_wide"
TUNABLE = ("import torch\n\nMODE = '${MODE}'\n\n\ndef run(x, w):\n"
           "    return torch.mul(x, w) if MODE == 'mul' else x * w\n")


def _tunable(root: Path) -> Path:
    folder = root / "tunable"
    folder.mkdir()
    (folder / "main.py").write_text(TUNABLE)
    meta = {"name": "rowscale-tunable", "definition": "rowscale_d16", "author": "tests",
            "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": "main.py::run",
                     "destination_passing_style": False}, "sources": [{"path": "main.py"}],
            "kloop": {"tunables": {"MODE": ["mul", "star"]}}}
    (folder / "solution.json").write_text(json.dumps(meta))
    return folder


def test_tune_verifies_every_configuration_of_a_small_space(tmp_path: Path) -> None:
    out = tmp_path / "tune.json"
    code = main(["tune", str(TASK), str(_tunable(tmp_path)), "--budget", "4", "--regime", "n:0-3",
                 "--device", "cpu", "--json", str(out)])
    data = json.loads(out.read_text())
    assert code == 0, data
    assert data["strategy"] == "exhaustive" and data["space_size"] == 2 and data["regime"] == "n:0-3"
    assert [e["config"] for e in data["evaluations"]] == [{"MODE": "mul"}, {"MODE": "star"}]
    assert all(e["status"] == "PASSED" and e["speedup_ci"] for e in data["evaluations"])
    assert data["default"]["config"] == {"MODE": "mul"} and data["best"] is not None
    assert isinstance(data["significant"], bool)


def test_tune_bad_input_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "solution.json").write_text((TASK / "baseline" / "solution.json").read_text())
    assert main(["tune", str(TASK), str(plain)]) == 2
    assert main(["tune", str(TASK), str(_tunable(tmp_path)), "--regime", "n:5-6"]) == 2
    assert main(["tune", str(TASK), str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert "declares no kloop.tunables" in err and "known: n:0-3, n:4-15, n:16-255, n:256-inf" in err


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One accepted round judged by the real verifier: export writes traces only for the task's listed
    workloads, and only a real verdict names them (the fake verdict's one row is a made-up workload)."""
    tmp = tmp_path_factory.mktemp("export")
    make_campaign(tmp, [{"claim": "vectorized", "files": {"main.py": VECTORIZED}}], verifier=real_verifier()).run()
    return tmp / "run"


def test_route_needs_two_accepted_candidates(fake_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "route.json"
    assert main(["route", str(fake_run), "--json", str(out)]) == 1
    assert json.loads(out.read_text())["admitted"] is False
    assert main(["route", str(tmp_path / "nope")]) == 2


def test_export_writes_files_flashinfer_bench_accepts(fake_run: Path, tmp_path: Path) -> None:
    from flashinfer_bench.data import Definition, Solution, Trace

    dest = tmp_path / "fib"
    assert main(["export", str(fake_run), "--fib", str(dest)]) == 0
    Definition.model_validate_json((dest / "definitions" / "rowscale_d16.json").read_text())
    files = sorted((dest / "solutions" / "rowscale_d16").glob("*.json"))
    assert len(files) == 1
    solution = Solution.model_validate_json(files[0].read_text())
    assert solution.definition == "rowscale_d16" and "x * w" in solution.sources[0].content
    traces = [Trace.model_validate_json(line) for line in (dest / "traces" / "rowscale_d16.jsonl").read_text().splitlines()]
    assert traces and all(t.solution == solution.name for t in traces)
    assert main(["export", str(fake_run)]) == 2


@pytest.mark.slow
def test_route_on_a_real_run_refuses_a_route_noise_alone_would_give(tmp_path: Path) -> None:
    """A/A: two accepted candidates with the same code; no regime may earn a route."""

    same = "import torch\n\n\ndef run(x, w):\n    return torch.mul(x, w)\n"
    lines = [{"claim": "vectorized", "files": {"main.py": VECTORIZED}},
             {"claim": "same speed, clearer", "goal": "refactor", "files": {"main.py": same}}]
    campaign = make_campaign(tmp_path, lines, verifier=real_verifier(), task=TASK)
    campaign.run()
    out = tmp_path / "route.json"
    code = main(["route", str(tmp_path / "run"), "--json", str(out)])
    report = json.loads(out.read_text())
    assert code == 1 and not report["admitted"], report


def test_a_configuration_as_fast_as_the_default_is_not_significant(tmp_path: Path) -> None:
    """A/A on the gate's direct rule: two spellings of one multiply, timed in the same rounds."""
    from kloop.route.tune import Evaluation, confirm, real_judge
    from kloop.task.load import load_task
    from kloop.verify.stats import SpeedRule

    judge = real_judge({"device": "cpu"})
    ok, evidence = confirm(load_task(TASK), _tunable(tmp_path), Evaluation(config={"MODE": "star"}, status="PASSED"),
                           Evaluation(config={"MODE": "mul"}, status="PASSED"), judge, SpeedRule())
    assert not ok
    assert "in the same rounds" in evidence if judge.direct else "intervals" in evidence
