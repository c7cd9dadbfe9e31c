"""A shipped YAML file's parse, kept as JSON: `kloop wiki search` reads its tables without importing PyYAML.

Importing PyYAML and parsing the alias table took ~40 ms of each search's start-up; reading the
same data back as JSON takes ~1 ms. Only the parse is cached (keyed by the text's sha256), so
validation, error messages and everything after stay the caller's, exactly as from YAML. Data that
does not survive a JSON round trip unchanged (dates, non-string keys) is never cached. The cache
lives in `$KLOOP_HOME/cache` (KLOOP_HOME defaulting to ~/.kloop); a missing, corrupt or unwritable
cache only costs the parse.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any


class YamlError(ValueError):
    """The text is not valid YAML; str() is PyYAML's own message."""


def cache_dir() -> Path:
    home = os.environ.get("KLOOP_HOME") or str(Path.home() / ".kloop")
    return Path(home).expanduser() / "cache"


def parse_yaml(text: str) -> Any:
    """`yaml.safe_load(text)` with libyaml's parser where PyYAML has it (~10x faster); YamlError if invalid."""
    import yaml

    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise YamlError(str(exc)) from None


def load_yaml(text: str, name: str) -> Any:
    """`parse_yaml(text)`, from the cache entry `name` when it holds this text's parse."""
    path = cache_dir() / f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:24]}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    data = parse_yaml(text)
    try:
        encoded = json.dumps(data)
        if json.loads(encoded) == data:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            tmp.write_text(encoded, encoding="utf-8")
            os.replace(tmp, path)  # whole or absent: a reader never sees half a file
    except (OSError, TypeError, ValueError):
        pass
    return data
