"""import-fib finds the sizes a published definition leaves unstated by running its own reference (`fib_oracle`).

Both definitions are flashinfer's own (fb28d7242b35) and were refused before: `bmm_mxfp8` declares its
swizzled scale buffers as free var axes (`A_scale_size`), `gemm_fp8` shapes B as `[K_div_block_size, N,
block_size]` without declaring either axis. The relations found must hold on every draw the verifier makes.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from kloop.task.fib_import import import_fib
from kloop.task.inputs import heldout_workloads, make_inputs
from kloop.task.load import load_task
from kloop.task.reference import run_reference

DATA = Path(__file__).parent / "data" / "fib"


def _original(name: str, function: str):
    namespace: dict = {}
    exec(json.loads((DATA / name).read_text())["reference"], namespace)  # the published reference, unchanged
    return namespace[function]


def test_scale_buffer_sizes_are_derived_from_the_reference(tmp_path: Path) -> None:
    done = import_fib(DATA / "bmm_mxfp8_N128_K128.json", tmp_path / "t", scale=0.5)
    task = load_task(tmp_path / "t")
    # one 128x4 tile of 512 E8M0 bytes per batch entry (M, N, K // 32 all fit one tile)
    assert "A_scale_size == 512 * batch_size" in task.definition.constraints
    assert "B_scale_size == 512 * batch_size" in task.definition.constraints
    assert any("derived: A_scale_size == 512 * batch_size" in n for n in done.notes)
    reference = _original("bmm_mxfp8_N128_K128.json", "_bmm_mxfp8_reference")
    drawn = heldout_workloads(task.definition, task.workloads, seed=5, count=3)
    assert drawn
    for workload in [*task.workloads, *drawn]:
        axes = workload.axes
        assert axes["A_scale_size"] == 512 * axes["batch_size"]
        inputs = make_inputs(task.definition, workload, seed=1)
        ours = run_reference(task.definition, inputs)["C"]
        scales = {k: inputs[k].view(torch.uint8) for k in ("A_scale", "B_scale")}
        theirs = reference(inputs["A"], inputs["B"], **scales, dtype=torch.bfloat16)
        assert ours.shape == (axes["batch_size"], axes["M"], 128) and torch.equal(ours, theirs)


def test_undeclared_block_size_is_searched_and_recorded(tmp_path: Path) -> None:
    done = import_fib(DATA / "gemm_fp8_N1536_K7168.json", tmp_path / "t", scale=0.5)
    task = load_task(tmp_path / "t")
    assert task.definition.const_axes["block_size"] == 128
    assert "K_div_block_size == K // block_size" in task.definition.constraints
    assert all(w.axes["K_div_block_size"] == 56 for w in task.workloads)
    assert any("'block_size' has no value" in n and "128 is the first" in n for n in done.notes)
    inputs = make_inputs(task.definition, task.workloads[0], seed=2)
    assert inputs["B"].shape == (56, 1536, 128)
    expected = _original("gemm_fp8_N1536_K7168.json", "_mm_fp8_reference")(inputs["A"], inputs["B"])
    assert torch.equal(run_reference(task.definition, inputs)["C"], expected)


def test_a_named_quotient_two_inputs_share_follows_its_divisor_in_heldout_draws(tmp_path: Path) -> None:
    """gemm_fp8_nt_groupwise declares `K_div_block` (a_scale's and b_scale's second dim) a free var axis.

    All listed axes at 4 happened to work (K // 4 = 1792 divides K), but held-out draws perturbed
    K_div_block alone (5: 7168 // 5 * 5 = 7165) and the published reference failed on its own inputs,
    so the A/A failed. Its name says K // block: the import derives it, held-out draws keep it.
    """
    done = import_fib(DATA / "gemm_fp8_nt_groupwise_n1536_k7168.json", tmp_path / "t", scale=0.5)
    task = load_task(tmp_path / "t")
    reference = _original("gemm_fp8_nt_groupwise_n1536_k7168.json", "_gemm_fp8_nt_groupwise_reference")
    drawn = [w for seed in range(4) for w in heldout_workloads(task.definition, task.workloads, seed=seed, count=2)]
    assert len({w.axes["M"] for w in drawn}) > 1  # the draws do vary the real problem dimension
    for workload in [*task.workloads, *drawn]:
        inputs = make_inputs(task.definition, workload, seed=3)
        expected = reference(inputs["a"], inputs["b"], inputs["a_scale"], inputs["b_scale"])  # fails if inconsistent
        ours = run_reference(task.definition, inputs)["out"]
        assert ours.shape == (workload.axes["M"], 1536) and torch.equal(ours, expected)
    assert {(w.axes["K_div_block"], w.axes["N_div_block"]) for w in [*task.workloads, *drawn]} == {(56, 12)}
    assert {"K_div_block == K // block", "N_div_block == N // block"} <= set(task.definition.constraints)
    assert task.definition.const_axes["block"] == 128
    assert any("'K_div_block' is K // block (its name says so)" in n for n in done.notes)
