"""Where scidocs-eval keeps data and caches (per user; overridable by environment variables)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from scidocs_eval.errors import ScidocsEvalError

DATA_ENV = "SCIDOCS_EVAL_DATA"
CACHE_ENV = "SCIDOCS_EVAL_CACHE"


def _from_environment(variable: str) -> Path | None:
    """The path in $variable, with `~` and `~user` expanded; None when unset; an error naming the variable when
    the user does not exist."""
    value = os.environ.get(variable)
    if not value:
        return None
    try:
        return Path(value).expanduser()
    except RuntimeError:
        raise ScidocsEvalError(f"${variable}={value!r}: cannot expand {value.split(os.sep)[0]!r} (no such user or "
                               "home folder); give a full path") from None


def default_data_dir() -> Path:
    """The SciDocs data directory used when no `--data` is given: $SCIDOCS_EVAL_DATA or the user data dir."""
    override = _from_environment(DATA_ENV)
    if override:
        return override
    return Path(platformdirs.user_data_dir("scidocs-eval")) / "scidocs"


def cache_dir(*parts: str) -> Path:
    """A folder under $SCIDOCS_EVAL_CACHE or the user cache dir (created on demand); a file where a folder of it
    should be is an error naming the variable."""
    override = _from_environment(CACHE_ENV)
    root = override or Path(platformdirs.user_cache_dir("scidocs-eval"))
    path = root.joinpath(*parts)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        in_the_way = next((p for p in [root, *reversed(path.parents)] if p.exists() and not p.is_dir()), path)
        where = f"${CACHE_ENV}={str(override)!r}" if override else "the cache folder"
        raise ScidocsEvalError(f"{where}: {in_the_way} is a file, not a folder; point ${CACHE_ENV} at a folder (it "
                               "is created if missing), or unset it for the default "
                               f"({platformdirs.user_cache_dir('scidocs-eval')})") from None
    return path
