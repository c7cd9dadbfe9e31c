"""The orchestrator: stages, rounds, gate, lineage, workspace, prompts, resume.

`run_campaign` starts a run, `resume` continues one; `Campaign` and `Services` are the parts
for callers that pass their own agents, verifier, clock or progress view.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kloop.lazy import lazy_exports

if TYPE_CHECKING:
    from kloop.loop.config import RunConfig
    from kloop.loop.services import Services
    from kloop.loop.summary import Summary

# Names load on first use (PEP 562), so `kloop --help` does not import the whole loop.
_EXPORTS = {
    "Campaign": "kloop.loop.campaign", "RunConfig": "kloop.loop.config", "Stage": "kloop.loop.config",
    "default_services": "kloop.loop.defaults", "Services": "kloop.loop.services", "Outcome": "kloop.loop.stopping",
    "RunStatus": "kloop.loop.stopping", "Summary": "kloop.loop.summary",
}


__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = ["Campaign", "Outcome", "RunConfig", "RunStatus", "Services", "Stage", "Summary", "default_services", "resume", "run_campaign"]


def run_campaign(config: RunConfig, run_dir: Path, services: Services | None = None) -> Summary:
    """Create RUN_DIR for `config.task` and run it to a stop."""
    from kloop.loop.campaign import Campaign
    from kloop.loop.defaults import default_services

    campaign = Campaign.create(Path(config.task), run_dir, config, services or default_services(config))
    return campaign.run()


def resume(run_dir: Path, services: Services | None = None) -> Summary:
    """Continue the run in RUN_DIR (after a crash, a signal, a budget or an approval)."""
    from kloop.loop.campaign import Campaign
    from kloop.loop.config import load_config
    from kloop.loop.defaults import default_services
    from kloop.loop.state import RunPaths

    config = load_config(RunPaths(run_dir).config)
    return Campaign.open(run_dir, services or default_services(config)).run()
