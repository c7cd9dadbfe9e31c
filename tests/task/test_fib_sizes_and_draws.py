"""import-fib on flashinfer's own definitions that the size oracle and the input draws could not take before.

All four are flashinfer's (fb28d7242b35), unchanged: `msa_sparse_decode_attention` sizes `cu_seqlens_k`
with a free `len_indptr` that is really `total_q + 1`; `rope_quantize_fp8_append_paged_kv_cache` has a
free `head_dim` that is `no_rope_dim + rope_dim`, a `batch_size_plus_1` no constraint defines, and a
reference that reads the first page of every sequence; `gdn_fused_decode` writes its state pools at
`state_indices` (`index_copy_`); `chain_speculative_sampling` has `num_speculative_plus_1` unconstrained.
Every relation must hold on the held-out draws the verifier makes, where the reference must run.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from kloop.task.fib_hints import scatter_indices
from kloop.task.fib_import import import_fib
from kloop.task.inputs import heldout_workloads, make_inputs
from kloop.task.load import load_task
from kloop.task.reference import run_reference

DATA = Path(__file__).parent / "data" / "fib"


def _original(name: str, function: str, helpers: bool = False):
    namespace: dict = {}
    source = json.loads((DATA / name).read_text())["reference"]
    if helpers:  # the helper the published reference calls, from the same flashinfer commit
        exec((DATA / "helpers" / "rope.py").read_text().replace("from ..template", "#").replace("from ._init", "#"),
             namespace)  # fmt: skip
    exec(source, namespace)
    return namespace[function]


def _drawn(task, count: int = 4):
    return [*task.workloads, *heldout_workloads(task.definition, task.workloads, seed=9, count=count)]


def test_indptr_length_is_found_as_a_sum_not_a_multiple(tmp_path: Path) -> None:
    name = "msa_sparse_decode_attention_h64_kv4_d128_topk16.json"
    done = import_fib(DATA / name, tmp_path / "t", scale=0.5)
    task = load_task(tmp_path / "t")
    assert "len_indptr == total_q + 1" in task.definition.constraints  # the old search settled on 2 * total_q
    assert any("len_indptr == total_q + 1" in n for n in done.notes)
    reference = _original(name, "_msa_sparse_decode_attention_reference")
    drawn = _drawn(task)
    assert len(drawn) > len(task.workloads)
    for workload in drawn:
        axes = workload.axes
        assert axes["len_indptr"] == axes["total_q"] + 1
        inputs = make_inputs(task.definition, workload, seed=3)
        assert int(inputs["cu_seqlens_k"][-1]) == axes["total_k"]
        ours = run_reference(task.definition, inputs)["output"]
        theirs = reference(**{k: v for k, v in inputs.items() if k in ("q", "k", "v", "q2k_indices", "cu_seqlens_k")},
                           seqlen_q=inputs["seqlen_q"], causal=inputs["causal"], softmax_scale=inputs["softmax_scale"])  # fmt: skip
        assert torch.equal(ours, theirs)


def test_head_dim_sum_offset_axis_and_nonempty_pages(tmp_path: Path) -> None:
    name = "rope_quantize_fp8_append_paged_kv_cache_h8_kv2_rope64_ps16.json"
    done = import_fib(DATA / name, tmp_path / "t", scale=0.5, helpers=[DATA / "helpers" / "rope.py"])
    task = load_task(tmp_path / "t")
    constraints = task.definition.constraints
    assert "head_dim == no_rope_dim + rope_dim" in constraints
    assert "batch_size_plus_1 == batch_size + 1" in constraints
    assert task.definition.settings.structured["kv_indptr"].nonempty
    assert any("no empty segment" in n for n in done.notes)
    for workload in _drawn(task):
        axes = workload.axes
        assert axes["head_dim"] == axes["no_rope_dim"] + 64 and axes["batch_size_plus_1"] == axes["batch_size"] + 1
        inputs = make_inputs(task.definition, workload, seed=5)
        indptr = inputs["kv_indptr"]
        if axes["num_kv_indices"] >= axes["batch_size"]:
            assert bool((indptr.diff() >= 1).all()), indptr  # every sequence has a page to append into
        out = run_reference(task.definition, inputs)
        assert out["q_nope_out"].shape == (axes["nnz"], 8, axes["no_rope_dim"])


def test_indices_the_reference_writes_at_are_drawn_unique(tmp_path: Path) -> None:
    name = "gdn_fused_decode_h5120_v48_d128.json"
    source = json.loads((DATA / name).read_text())["reference"]
    assert "state_indices" in scatter_indices(source)  # `idx = state_indices.to(...)`, `x.index_copy_(0, idx, ...)`
    assert not scatter_indices("def f(x, idx):\n    y = x[idx]\n    return y.index_select(0, idx)\n")  # reads only
    import_fib(DATA / name, tmp_path / "t", scale=0.5)
    task = load_task(tmp_path / "t")
    spec = task.definition.settings.structured["state_indices"]
    assert spec.kind == "index" and spec.unique and spec.high == "num_pages"
    for seed in range(6):
        for workload in _drawn(task, 2):
            indices = make_inputs(task.definition, workload, seed=seed)["state_indices"]
            assert len(set(indices.tolist())) == indices.numel(), indices


def test_plus_one_axis_follows_its_stem_in_heldout_draws(tmp_path: Path) -> None:
    done = import_fib(DATA / "chain_speculative_sampling_v32000.json", tmp_path / "t", scale=0.5)
    task = load_task(tmp_path / "t")
    assert "num_speculative_plus_1 == num_speculative + 1" in task.definition.constraints
    assert any("its name says so" in n and "num_speculative_plus_1" in n for n in done.notes)
    drawn = _drawn(task)
    assert len(drawn) > len(task.workloads)
    for workload in drawn:
        axes = workload.axes
        assert axes["num_speculative_plus_1"] == axes["num_speculative"] + 1
        out = run_reference(task.definition, make_inputs(task.definition, workload, seed=2))
        first = next(iter(out.values()))
        assert first.shape[0] == axes["batch_size"]
