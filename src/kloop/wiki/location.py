"""Where a wiki lives by default: imported by the store and by the resident-search client alike, with nothing else."""

from __future__ import annotations

import os
from pathlib import Path


def default_db_path() -> Path:
    """`$KLOOP_HOME/wiki.sqlite`, KLOOP_HOME defaulting to ~/.kloop."""
    home = os.environ.get("KLOOP_HOME") or str(Path.home() / ".kloop")
    return Path(home).expanduser() / "wiki.sqlite"
