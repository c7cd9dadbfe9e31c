"""`kloop task import-fib` on definitions exactly as flashinfer publishes them (tests/task/data/fib/README.md)."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kloop.task.fib_import import ImportProblems, import_fib
from kloop.task.inputs import heldout_workloads, make_inputs
from kloop.task.load import load_task
from kloop.task.reference import load_reference, run_reference
from kloop.task.regimes import coverage_inputs

DATA = Path(__file__).parent / "data" / "fib"
MOE = DATA / "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048.json"
SMALL_MOE = {"hidden_size": 256, "num_hidden_blocks": 2, "intermediate_size": 128, "gemm1_out_size": 256,
             "num_intermediate_blocks": 1, "num_gemm1_out_blocks": 2, "num_local_experts": 4}  # fmt: skip


def _published(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def _original(definition: dict, function: str):
    namespace: dict = {}
    exec(definition["reference"], namespace)  # the published reference, as flashinfer's own test runs it
    return namespace[function]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kloop.cli", "task", "import-fib", *args],
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def test_reference_form_imports_and_matches_the_published_function(tmp_path: Path) -> None:
    done = import_fib(DATA / "rmsnorm_h4096.json", tmp_path / "t", scale=0.25)
    task = load_task(tmp_path / "t")
    assert "def run(hidden_states, weight)" in task.definition.reference
    assert [w.axes for w in task.workloads] == [{"batch_size": 2}, {"batch_size": 8}] == done.workloads
    inputs = make_inputs(task.definition, task.workloads[0], seed=3)
    ours = run_reference(task.definition, inputs)["output"]
    theirs = _original(_published("rmsnorm_h4096.json"), "_rmsnorm_reference")(**inputs)
    assert torch.equal(ours, theirs)


def test_moe_reference_is_bound_by_name_not_by_position(tmp_path: Path) -> None:
    published = json.loads(MOE.read_text())
    order = list(published["inputs"])
    reference = _original(published, "_trtllm_fp8_block_scale_moe_ds_routing_reference")
    params = list(inspect.signature(reference).parameters)
    # the trap: the definition lists gemm1_alpha/beta/clamp_limit where the reference expects gemm2_weights
    assert order.index("gemm2_weights") != params.index("gemm2_weights")
    assert order[params.index("gemm2_weights")] == "gemm1_alpha"
    import_fib(MOE, tmp_path / "moe", consts=SMALL_MOE, scale=0.25)
    task = load_task(tmp_path / "moe")
    inputs = make_inputs(task.definition, task.workloads[0], seed=1)
    assert list(inputs) == order and inputs["gemm1_alpha"] is None  # optional, absent from the workload
    ours = load_reference(task.definition)(*inputs.values())  # kloop's positional call, in definition order
    theirs = reference(**{p: inputs[p] for p in params if p in inputs})  # the rest keep their defaults
    assert ours.shape == (task.workloads[0].axes["seq_len"], 256) and torch.equal(ours, theirs)
    positional = list(inputs.values())[: params.index("top_k")]  # as many as the reference takes before top_k
    with pytest.raises((AttributeError, TypeError)):  # positionally, gemm2_weights would receive gemm1_alpha (None)
        reference(*positional, **{p: inputs[p] for p in params[params.index("top_k"):] if p in inputs})


def test_in_place_output_is_renamed_and_says_so(tmp_path: Path) -> None:
    done = import_fib(DATA / "rope_pos_ids_inplace_h32_kv8_d128.json", tmp_path / "t", scale=0.25,
                      helpers=[DATA / "helpers" / "rope.py"])  # fmt: skip
    task = load_task(tmp_path / "t")
    assert list(task.definition.outputs) == ["q_out", "k_out"]
    assert any("output 'q' is written in place into input 'q': renamed 'q_out'" in n for n in done.notes)
    inputs = make_inputs(task.definition, task.workloads[0], seed=2)
    before = inputs["q"].clone()
    out = run_reference(task.definition, inputs)
    assert torch.equal(inputs["q"], before)  # the reference rotated a copy, not the caller's tensor
    assert not torch.equal(out["q_out"], before)


def test_an_in_place_output_the_reference_never_writes_is_left_out(tmp_path: Path) -> None:
    """flashinfer's fused_add_rmsnorm reference returns only `output`: `residual` is never updated.

    Changed expectation (was: refused). `output` has full ground truth and `residual` has none, so the
    task keeps `output`, says in a note why `residual` is gone, and still refuses a definition whose
    every output is such an unwritten in-place one (nothing left to check), in one line naming the file.
    """
    done = import_fib(DATA / "fused_add_rmsnorm_h5120.json", tmp_path / "t", scale=0.25)
    task = load_task(tmp_path / "t")
    assert list(task.definition.outputs) == ["output"]
    assert any("output 'residual'" in n and "never writes it" in n for n in done.notes)
    inputs = make_inputs(task.definition, task.workloads[0], seed=4)
    theirs = _original(_published("fused_add_rmsnorm_h5120.json"), "_fused_add_rmsnorm_reference")(**inputs)
    assert torch.equal(run_reference(task.definition, inputs)["output"], theirs)
    data = _published("fused_add_rmsnorm_h5120.json")  # both outputs in place, neither written by the reference
    data["outputs"] = {"hidden_states": data["outputs"]["output"], "residual": data["outputs"]["residual"]}
    (tmp_path / "only.json").write_text(json.dumps(data))
    proc = _cli(str(tmp_path / "only.json"), "-o", str(tmp_path / "u"), "--scale", "0.25")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 2 and "Traceback" not in proc.stderr  # one line per problem
    for line, output in zip(lines, ("hidden_states_out", "residual_out"), strict=True):
        assert line.startswith(f"kloop: error: {tmp_path / 'only.json'}: ") and "tensor(" not in line
        assert f"never writes in-place output {output!r}" in line
    assert not (tmp_path / "u").exists()


def test_structured_inputs_hold_in_heldout_and_coverage_draws(tmp_path: Path) -> None:
    import_fib(DATA / "gqa_paged_decode_h32_kv8_d128_ps16.json", tmp_path / "t", scale=0.5)
    task = load_task(tmp_path / "t")
    structured = task.definition.settings.structured
    assert structured["kv_indptr"].kind == "indptr" and structured["kv_indptr"].total == "num_kv_indices"
    assert structured["kv_indices"].kind == "index" and structured["kv_indices"].high == "num_pages"
    drawn = heldout_workloads(task.definition, task.workloads, seed=11, count=3)
    assert drawn, "held-out workloads must be drawable: len_indptr follows batch_size"
    for workload in [*task.workloads, *drawn]:
        axes = workload.axes
        assert axes["len_indptr"] == axes["batch_size"] + 1
        for inputs in (make_inputs(task.definition, workload, seed=5),
                       coverage_inputs(task.definition, workload, "wide", seed=5)):  # fmt: skip
            indptr, indices = inputs["kv_indptr"], inputs["kv_indices"]
            assert indptr[0] == 0 and indptr[-1] == axes["num_kv_indices"] and bool((indptr.diff() >= 0).all())
            assert int(indices.max()) < axes["num_pages"] and int(indices.min()) >= 0
            output = run_reference(task.definition, inputs)["output"]
            assert torch.isfinite(output.float()).all()


def test_probability_rows_stay_probabilities_under_coverage(tmp_path: Path) -> None:
    import_fib(DATA / "top_k_renorm_probs_v32000.json", tmp_path / "t", scale=0.25)
    task = load_task(tmp_path / "t")
    assert task.definition.settings.structured["probs"].kind == "probs"
    probs = coverage_inputs(task.definition, task.workloads[0], "wide", seed=7)["probs"]
    assert bool((probs >= 0).all()) and torch.allclose(probs.sum(-1), torch.ones(probs.shape[0]), atol=1e-4)


def test_unmappable_dtype_is_explained(tmp_path: Path) -> None:
    data = _published("rmsnorm_h4096.json")
    data["inputs"]["weight"]["dtype"] = "complex64"
    (tmp_path / "d.json").write_text(json.dumps(data))
    proc = _cli(str(tmp_path / "d.json"), "-o", str(tmp_path / "t"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "input 'weight': dtype 'complex64' has no FlashInfer-Trace equivalent" in proc.stderr
    assert not (tmp_path / "t").exists()


def test_uint8_is_stored_as_int8_and_reinterpreted(tmp_path: Path) -> None:
    done = import_fib(DATA / "xqa_h1_kv16_d8_ps2.json", tmp_path / "t", check=False)
    definition = load_task(tmp_path / "t").definition
    assert definition.inputs["seq_lens"].dtype.value == "int32"
    assert any("dtype uint32 is stored as int32" in n for n in done.notes)
    assert "'seq_lens': 'uint32'" in definition.reference and "'semaphores': 'uint32'" in definition.reference


def test_max_bytes_sizes_var_axes_and_refuses_what_const_axes_overflow(tmp_path: Path) -> None:
    from kloop.task.fib_sizes import footprint

    done = import_fib(DATA / "rmsnorm_h4096.json", tmp_path / "t", max_bytes=100_000)
    definition = json.loads((tmp_path / "t" / "definition.json").read_text())
    assert done.workloads and all(footprint(definition, w).data <= 100_000 for w in done.workloads)
    assert any("scaled by" in n for n in done.notes)
    proc = _cli(str(MOE), "-o", str(tmp_path / "moe"), "--max-bytes", "64000000")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "gemm1_weights 896 MB" in proc.stderr and "--const hidden_size=" in proc.stderr


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    data = _published("rope_pos_ids_h32_kv8_d128.json")
    data["outputs"]["q_rope"]["dtype"] = "complex64"
    (tmp_path / "d.json").write_text(json.dumps(data))
    proc = _cli(str(tmp_path / "d.json"), "-o", str(tmp_path / "t"))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and len(lines) == 2
    assert all(line.startswith("kloop: error: ") for line in lines)
    assert "dtype 'complex64'" in lines[0] and "_apply_rope_core" in lines[1] and "elsewhere in flashinfer" in lines[1]


def test_helpers_from_flashinfer_make_the_reference_whole(tmp_path: Path) -> None:
    with pytest.raises(ImportProblems, match="_rope_freqs"):
        import_fib(DATA / "rope_pos_ids_h32_kv8_d128.json", tmp_path / "a", scale=0.25)
    done = import_fib(DATA / "rope_pos_ids_h32_kv8_d128.json", tmp_path / "b", scale=0.25,
                      helpers=[DATA / "helpers" / "rope.py"])  # fmt: skip
    assert any("_apply_rope_core" in n and "inlined" in n for n in done.notes)
    task = load_task(tmp_path / "b")
    out = run_reference(task.definition, make_inputs(task.definition, task.workloads[0], seed=0))
    assert out["q_rope"].shape == (task.workloads[0].axes["nnz"], 32, 128)


def test_imported_reference_verifies_against_itself(tmp_path: Path) -> None:
    from kloop.task.load import reference_solution, write_solution_dir

    import_fib(DATA / "rmsnorm_h4096.json", tmp_path / "t", scale=0.25)
    solution = write_solution_dir(reference_solution(load_task(tmp_path / "t").definition), tmp_path / "ref")
    from kloop.verify import VerifyOptions, verify

    options = VerifyOptions(device="cpu", timing=False, workloads=1, heldout=1, log_dir=tmp_path / "logs")
    result = verify(load_task(tmp_path / "t"), solution, options)  # in process: the command has its own tests
    assert result.passed, result.reasons
    assert any(w.heldout for w in result.workloads)
