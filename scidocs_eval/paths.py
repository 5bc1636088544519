"""Where scidocs-eval keeps data and caches (per user; overridable by environment variables)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

DATA_ENV = "SCIDOCS_EVAL_DATA"
CACHE_ENV = "SCIDOCS_EVAL_CACHE"


def default_data_dir() -> Path:
    """The SciDocs data directory used when no `--data` is given: $SCIDOCS_EVAL_DATA or the user data dir."""
    override = os.environ.get(DATA_ENV)
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_data_dir("scidocs-eval")) / "scidocs"


def cache_dir(*parts: str) -> Path:
    """A folder under $SCIDOCS_EVAL_CACHE or the user cache dir (created on demand)."""
    override = os.environ.get(CACHE_ENV)
    root = Path(override).expanduser() if override else Path(platformdirs.user_cache_dir("scidocs-eval"))
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path
