"""Where kloop keeps its per-user state: `$KLOOP_HOME`, default `~/.kloop`."""

from __future__ import annotations

import os
from pathlib import Path


def kloop_home() -> Path:
    """The state directory (not created here: callers create what they write)."""
    configured = os.environ.get("KLOOP_HOME")
    return Path(configured).expanduser() if configured else Path.home() / ".kloop"


def device_cache_path() -> Path:
    """The JSON file holding one measured DeviceInfo per device key."""
    return kloop_home() / "device-cache.json"
