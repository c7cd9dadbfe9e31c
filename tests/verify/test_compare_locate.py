"""A numerical rejection says where and how: worst element with both values, the dim the
mismatches sit in, and offset / scale / transposition / zeros when one explains the output."""

from __future__ import annotations

import re

import torch

from kloop.task.schema import ComparatorName, Tolerance
from kloop.verify.compare import compare
from kloop.verify.hints import call_signature_hint

TOL = Tolerance(atol=1e-4, rtol=1e-4)
ALL = ComparatorName.ALLCLOSE


def _ref(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(7), dtype=torch.float64)


def test_offset_and_scale_are_named_with_their_values() -> None:
    ref = _ref(16, 12)
    assert "constant offset: out = ref + 0.5" in compare((ref + 0.5).float(), ref, TOL, ALL).detail
    assert "constant offset: out = ref - 2" in compare((ref - 2).float(), ref, TOL, ALL).detail
    assert "scale: out = 0.5 * ref" in compare((ref * 0.5).float(), ref, TOL, ALL).detail


def test_transposition_and_transposed_memory_are_recognised() -> None:
    square = _ref(9, 9)
    assert "transposition: out equals ref transposed (dims 0 and 1)" in compare(square.t().float(), square, TOL, ALL).detail
    wide = _ref(4, 6)
    out = wide.t().contiguous().reshape(4, 6)  # written in the wrong order, read back in the right shape
    assert "transposed then reshaped (dims 0 and 1)" in compare(out.float(), wide, TOL, ALL).detail


def test_worst_index_row_and_last_columns_are_located() -> None:
    ref = _ref(32, 40)
    out = ref.clone()
    out[5, 17] += 3.0
    out[5, 2] += 0.5
    detail = compare(out.float(), ref, TOL, ALL).detail
    assert f"worst at [5, 17]: got {float(out.float()[5, 17]):.6g}, expected {float(ref[5, 17]):.6g}" in detail
    assert "all mismatches in row 5 of dim 0 (size 32)" in detail
    tail = ref.clone()
    tail[:, -3:] = 0.0
    detail = compare(tail.float(), ref, TOL, ALL).detail
    assert "3 of 40 slices along dim 1 (the last ones): columns 37, 38, 39" in detail
    assert "zeros where the reference does not" in detail


def test_noise_gets_a_location_but_no_invented_pattern() -> None:
    ref = _ref(64, 64)
    noise = torch.randn(64, 64, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 1e-2
    detail = compare((ref + noise).float(), ref, TOL, ALL).detail
    assert "worst at [" in detail
    assert not re.search(r"looks like|confined|all mismatches|zeros", detail), detail


def test_passing_outputs_carry_no_locator() -> None:
    ref = _ref(8, 8)
    assert "worst" not in compare(ref.float(), ref, TOL, ALL).detail


def test_wrong_arity_names_the_spec_field_and_both_signatures() -> None:
    error = "TypeError: run() takes 1 positional argument but 2 were given"
    hint = call_signature_hint(error, True, ["x"], ["output"])
    assert "kloop called run(x, output) because spec.destination_passing_style is true (the default)" in hint
    assert "destination_passing_style false: run(x) returning output" in hint
    hint = call_signature_hint("TypeError: run() missing 1 required positional argument: 'out'", False, ["a", "b"], ["c", "d"])
    assert "run(a, b) because spec.destination_passing_style is false" in hint and "returning (c, d)" in hint
    assert call_signature_hint("RuntimeError: shape mismatch", True, ["x"], ["y"]) == ""


def test_real_verify_of_a_value_returning_run_under_the_default_names_the_cause(tmp_path) -> None:
    import json
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    solution = tmp_path / "returns"
    solution.mkdir()
    (solution / "main.py").write_text("import torch\n\ndef run(x, w):\n    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w\n")
    (solution / "solution.json").write_text(json.dumps({
        "name": "returns", "definition": "rmsnorm_tiny", "author": "test", "sources": [{"path": "main.py"}],
        "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": "main.py::run"}}))  # fmt: skip
    proc = subprocess.run([str(root / ".venv" / "bin" / "kloop"), "verify", str(root / "tests" / "verify" / "tasks" / "rmsnorm_tiny"),
                           str(solution), "--no-timing", "--workloads", "1", "--heldout", "0", "--json", "-"],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    verdict = json.loads(proc.stdout)
    assert verdict["status"] == "RUNTIME_ERROR"
    reason = " ".join(verdict["reasons"])
    assert "run(x, w, y) because spec.destination_passing_style is true (the default)" in reason, reason
    assert "destination_passing_style false: run(x, w) returning y" in reason
