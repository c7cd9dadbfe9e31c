"""Each real CLI's tool vocabulary, so one scripted model can drive all three adapters in the tests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest

from kloop.agents.cli_process import CliAgent
from kloop.agents.doctor import ADAPTERS, SCRIPTED_SHELL, SCRIPTED_WRITE, scripted_adapter
from kloop.agents.scripted_server import ScriptedServer, Step


@dataclass(frozen=True)
class Cli:
    """How to build the adapter against a scripted server and how its model calls its tools."""

    name: str
    make: Callable[[ScriptedServer], CliAgent]
    write: Callable[[Path, str], list[Step]]  # Claude Code writes only a file it has Read
    shell: Callable[[str], Step]
    installed: Callable[[], bool]


def _installed(name: str) -> Callable[[], bool]:
    return lambda: ADAPTERS[name]().program_argv() is not None


CLIS = [Cli(name, partial(scripted_adapter, name), SCRIPTED_WRITE[name], SCRIPTED_SHELL[name], _installed(name))
        for name in ADAPTERS]


def cli_params() -> list[object]:
    """One pytest param per CLI; a CLI that setup did not install is skipped with the reason."""
    return [pytest.param(c, id=c.name, marks=pytest.mark.skipif(
        not c.installed(), reason=f"{c.name} CLI missing: run scripts/agent-clis.sh (setup does)")) for c in CLIS]
