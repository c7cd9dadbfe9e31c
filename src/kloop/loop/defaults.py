"""The real parts a campaign runs with when the caller passes none of its own."""

from __future__ import annotations

from kloop.loop.config import RunConfig
from kloop.loop.services import Services
from kloop.loop.verifier import Verifier

MODEL_KINDS = ("claude", "codex", "kimi", "openai")
"""Writer kinds driven by a model: the same agent also plays the researcher (offline kinds do not)."""


def default_services(config: RunConfig) -> Services:
    """Agents from the specs, the real verifier (with warm spare sandboxes), wiki, profiler, ceiling."""
    from kloop.agents import get_agent
    from kloop.agents.containment import package_digest
    from kloop.agents.registry import parse_spec
    from kloop.loop.branches import branch_names
    from kloop.loop.ceiling import DeviceCeiling
    from kloop.loop.progress import default_progress
    from kloop.loop.services import KernelWiki, VendorProfiler

    spec = config.writer_for(branch_names(config.team)[0] if config.team > 1 else None)
    writer = get_agent(spec, where="--writer")  # a team's branches build their own (kloop.loop.team)
    return Services(
        writer=writer,
        researcher=writer if parse_spec(spec)[0] in MODEL_KINDS else None,
        kloop_digest=package_digest,
        reviewer=get_agent(config.reviewer, where="--reviewer"),
        tuner=get_agent(f"tuner:{config.tune_budget}"),  # through the registry: the loop names no concrete agent
        verifier=_verifier(config),
        wiki=KernelWiki(),
        profiler=VendorProfiler(config.device),
        progress=default_progress(),
        ceiling=DeviceCeiling(config.device),
    )


def _verifier(config: RunConfig) -> Verifier:
    """In this process (`--cluster local`), or over a pool: same verdicts, the worker named in each.

    A team always verifies through a pool (local slots by default): its branches then never time
    two candidates on one slot at once, and each candidate travels with its baseline and incumbent.
    """
    from kloop.loop.verifier import KloopVerifier

    if config.cluster == "local" and config.team == 1:
        return KloopVerifier(config.device, {"prestart": True, **config.verify})
    from kloop.pool.open import open_pool
    from kloop.pool.verifier import PoolVerifier

    return PoolVerifier(open_pool(config.cluster, config.device), config.device, config.verify)
