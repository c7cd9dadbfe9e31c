"""The MLSys-2026 contest tasks under examples/contest: they load as published (names, axes, input
order), their baselines and honest rewrites pass `kloop verify` on the CPU, and a wrong gate, a wrong
routing, a top-k with one index wrong and a per-tensor FP8 scale are rejected.

Each verification is a real `kloop.verify.verify` without timing (sandbox, held-out draws, coverage
regimes and all), run in the test's process: the command around it has tests of its own
(tests/verify/test_cli.py), and a `kloop verify` subprocess per case imported torch again, 3-4 s of
CPU each on this machine. The wrong cases are one-line edits of the honest vectorized rewrite, so
the edit is the only thing that differs.
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

from kloop.task.load import load_task
from kloop.task.schema import Workload

CONTEST = Path(__file__).resolve().parents[2] / "examples" / "contest"
GDN_DECODE = "gdn_decode_qk4_v8_d128_k_last"
GDN_PREFILL = "gdn_prefill_qk4_v8_d128_k_last"
DSA_INDEXER = "dsa_topk_indexer_fp8_h64_d128_topk2048_ps64"
DSA_ATTN = "dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64"
MOE = "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048"
MOE_MINI = "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h256_i128"
CPU_TASKS = [GDN_DECODE, GDN_PREFILL, DSA_INDEXER, DSA_ATTN, MOE_MINI]
ALL_TASKS = [*CPU_TASKS, MOE]


FIRST_WORKLOAD = {MOE_MINI: {"seq_len": 7}}
"""The listed workload a `--workloads 1` verification of these tasks takes (others: the task's first).

The CPU-sized MoE lists seq_len 32, 7 and 1. Its Triton baseline runs one interpreted program per
(token, expert) pair and has no token blocking, so seq_len 7 goes through every path seq_len 32 does
(several tokens, each summing top-8 experts into its row) at under a quarter of the interpreter time:
32 tokens made it the suite's slowest test (about 26 s a run at load 20, five coverage regimes on it).
Held-out draws (seq_len 1-16, the task's rule) and the honest rewrites' all-workload runs still see
the other sizes."""


def _task_dir(task: str, tmp_path: Path) -> Path:
    """The task as published, or a copy whose workloads.jsonl lists FIRST_WORKLOAD's row first.

    Only the order of the listed rows differs (same definition, baseline, rows and uuids)."""
    axes = FIRST_WORKLOAD.get(task)
    if axes is None:
        return CONTEST / task
    copy = tmp_path / "task" / task
    shutil.copytree(CONTEST / task, copy)
    rows = [line for line in (copy / "workloads.jsonl").read_text().splitlines() if line.strip()]
    first = [r for r in rows if json.loads(r)["workload"]["axes"] == axes]
    assert len(first) == 1, f"{task} no longer lists one workload with axes {axes}"
    (copy / "workloads.jsonl").write_text("\n".join([*first, *(r for r in rows if r not in first)]) + "\n")
    return copy


def _verify(task: str, solution: Path, out_dir: Path, workloads: int | None = None) -> tuple[int, dict]:
    """`kloop verify --no-timing`'s exit code (0 passed, 1 rejected) and verdict JSON, from the same call.

    With `workloads=1` the first listed workload is `FIRST_WORKLOAD`'s where one is named."""
    from kloop.verify import VerifyOptions, verify

    root = _task_dir(task, out_dir) if workloads else CONTEST / task
    options = VerifyOptions(device="cpu", timing=False, workloads=workloads, log_dir=out_dir / f"{solution.name}-logs")
    result = verify(load_task(root), solution, options)
    return (0 if result.passed else 1), json.loads(result.model_dump_json())


def _failed(verdict: dict) -> list[str]:
    return [f"{c['name']}: {c['detail']}" for c in verdict.get("checks", []) if not c["passed"]]


@pytest.mark.parametrize("name", ALL_TASKS)
def test_contest_task_loads_with_the_contest_name(name: str) -> None:
    task = load_task(CONTEST / name)
    assert task.definition.name == name
    source = MOE if name == MOE_MINI else name  # the CPU-sized MoE shares the contest MoE's reference
    assert (CONTEST / source / "reference.py").read_text() == task.definition.reference
    assert (CONTEST / name / "README.md").is_file()
    gpu = CONTEST / name / "workloads_gpu.jsonl"
    if gpu.is_file():
        rows = [json.loads(line) for line in gpu.read_text().splitlines() if line.strip()]
        assert rows and all(r["definition"] == name for r in rows)
        for row in rows:
            workload = Workload.model_validate(row["workload"])
            assert set(workload.axes) == set(task.definition.var_axes)


def test_moe_reference_binds_inputs_by_name() -> None:
    """The public reference takes gemm2_* before gemm1_alpha/beta/clamp; `run` takes the definition's
    order and passes each argument by keyword, so a positional call cannot bind them wrongly."""
    task = load_task(CONTEST / MOE)
    tree = ast.parse(task.definition.reference)
    run = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run")
    assert [a.arg for a in run.args.args] == list(task.definition.inputs)
    call = next(n for n in ast.walk(run) if isinstance(n, ast.Call))
    assert not call.args and all(isinstance(k.value, ast.Name) and k.value.id == k.arg for k in call.keywords)
    assert {k.arg for k in call.keywords} == set(task.definition.inputs)
    public = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.endswith("_routing_reference"))
    assert [a.arg for a in public.args.args] != list(task.definition.inputs)[: len(public.args.args)]
    for folder in ("baseline", "solutions/vectorized", "solutions/reordered"):
        for task_name in (MOE, MOE_MINI):
            source = (CONTEST / task_name / folder / "main.py").read_text()
            fn = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "run")
            assert [a.arg for a in fn.args.args][: len(task.definition.inputs)] == list(task.definition.inputs)


@pytest.mark.parametrize("name", CPU_TASKS)
def test_contest_baseline_verifies_on_cpu(tmp_path: Path, name: str) -> None:
    """The first listed workload (`FIRST_WORKLOAD`), its held-out draws and the coverage regimes (the
    Triton baselines run in the interpreter: every workload of the sparse attention takes minutes on a
    loaded box)."""
    rc, verdict = _verify(name, CONTEST / name / "baseline", tmp_path, workloads=1)
    assert rc == 0 and verdict["status"] == "PASSED", _failed(verdict)
    assert verdict["workloads"][0]["axes"] == FIRST_WORKLOAD.get(name, verdict["workloads"][0]["axes"])
    assert any(w["uuid"].startswith("heldout-coverage-") for w in verdict["workloads"])


@pytest.mark.parametrize("name", CPU_TASKS)
@pytest.mark.parametrize("rewrite", ["vectorized", pytest.param("reordered", marks=pytest.mark.slow)])
def test_contest_honest_rewrites_pass(tmp_path: Path, name: str, rewrite: str) -> None:
    rc, verdict = _verify(name, CONTEST / name / "solutions" / rewrite, tmp_path)
    assert rc == 0 and verdict["status"] == "PASSED", _failed(verdict)


# task, what is wrong, (text in the vectorized rewrite, its replacement)
WRONG = [
    (GDN_DECODE, "gate without exp(A_log)", ("-torch.exp(A_log.float()) * F.softplus(", "-F.softplus(")),
    (GDN_PREFILL, "gate without exp(A_log)", ("-torch.exp(A_log.float()) * F.softplus(", "-F.softplus(")),
    (MOE_MINI, "softmax routing instead of DeepSeek's sigmoid",
     ("s = 1.0 / (1.0 + torch.exp(-routing_logits.to(torch.float32)))", "s = torch.softmax(routing_logits.to(torch.float32), dim=1)")),
    (MOE_MINI, "FP8 weight scale per tensor instead of per 128x128 block",
     ("scale.float()[:, :, None, :, None]", "scale.float().mean(dim=(1, 2), keepdim=True)[:, :, None, :, None]")),
    (DSA_INDEXER, "one top-k index wrong",
     ("    return out\n", "    out[0, 0] = (out[0, 0] + 1) % (num_pages * page_size)\n    return out\n")),
    (DSA_ATTN, "softmax scale applied twice", ("(logits * sm_scale)", "(logits * sm_scale * sm_scale)")),
]


@pytest.mark.parametrize(("name", "why", "edit"), WRONG, ids=[f"{w[0][:12]}-{w[1][:24]}" for w in WRONG])
def test_contest_wrong_case_is_rejected(tmp_path: Path, name: str, why: str, edit: tuple[str, str]) -> None:
    solution = tmp_path / "wrong"
    shutil.copytree(CONTEST / name / "solutions" / "vectorized", solution)
    source = (solution / "main.py").read_text()
    assert source.count(edit[0]) == 1, f"the edit for {why!r} no longer matches the vectorized rewrite"
    (solution / "main.py").write_text(source.replace(edit[0], edit[1]))
    rc, verdict = _verify(name, solution, tmp_path, workloads=1)
    assert rc == 1 and verdict["status"] == "INCORRECT_NUMERICAL", (why, verdict.get("status"), _failed(verdict))
    assert any(c["name"] == "numeric" and not c["passed"] for c in verdict["checks"]), why
