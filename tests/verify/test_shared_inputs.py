"""The supervisor's own comparison of a call's inputs (`measure.SharedInputs`), byte for byte.

The red-team tests show a candidate that clobbers its inputs is caught end to end; these pin the
comparison itself: one flipped byte in any dtype and any size is a change, an untouched input is not.
"""

from __future__ import annotations

import mmap

import pytest
import torch

from kloop.verify.measure import SharedInputs


@pytest.mark.parametrize(("dtype", "numel"), [(torch.float32, 4096), (torch.bfloat16, 7), (torch.int8, 13),
                                              (torch.bool, 5), (torch.float8_e4m3fn, 9), (torch.int64, 0)])  # fmt: skip
def test_one_flipped_byte_of_any_input_is_a_change(dtype: torch.dtype, numel: int) -> None:
    source = torch.arange(numel).to(dtype)
    other = torch.ones(3, 5)
    shared = SharedInputs({"x": source, "w": other})
    try:
        assert shared.changed() == []
        entry = shared.layout[0]
        if entry["nbytes"] == 0:
            return
        box_side = mmap.mmap(shared.fd, shared.size)  # the sandbox maps the same memfd
        last = entry["offset"] + entry["nbytes"] - 1
        box_side[last] ^= 0x01
        assert shared.changed() == ["x"]
        box_side[last] ^= 0x01
        assert shared.changed() == []
        box_side.close()
    finally:
        shared.close()
    assert torch.equal(source, torch.arange(numel).to(dtype)), "staging must not change the supervisor's tensors"


def test_a_strided_input_is_compared_as_the_box_sees_it() -> None:
    """A transposed tensor travels contiguous; the comparison is against those bytes, not its storage."""
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    shared = SharedInputs({"x": base.t()})
    try:
        view = torch.frombuffer(shared.map, dtype=torch.float32, count=12).reshape(4, 3)
        assert torch.equal(view, base.t())
        del view
        assert shared.changed() == []
    finally:
        shared.close()
