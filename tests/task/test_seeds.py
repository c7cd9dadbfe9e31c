"""One seed derivation: stable, 63-bit, a different child per label."""

from __future__ import annotations

import hashlib

from kloop.task.seeds import derive_seed


def test_children_are_stable_distinct_and_63_bit() -> None:
    children = {derive_seed(12345, f"workload-{i}") for i in range(1000)}
    assert len(children) == 1000 and all(0 <= c < 2**63 for c in children)
    assert derive_seed(12345, "heldout") == derive_seed(12345, "heldout") != derive_seed(12346, "heldout")
    expected = int.from_bytes(hashlib.sha256(b"12345:heldout").digest()[:8], "little") >> 1
    assert derive_seed(12345, "heldout") == expected


def test_a_secret_string_alone_gives_a_seed() -> None:
    assert derive_seed("s3cret") == int.from_bytes(hashlib.sha256(b"s3cret").digest()[:8], "little") >> 1
    assert derive_seed("s3cret") != derive_seed("s3cret", "x")


def test_the_verifier_and_the_input_generator_use_the_same_function() -> None:
    import kloop.task.inputs as inputs
    import kloop.verify.workload as workload

    assert workload.derive_seed is derive_seed and inputs.derive_seed is derive_seed
