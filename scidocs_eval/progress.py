"""Progress bars for long work, on stderr, silenced with `enabled=False` or SCIDOCS_EVAL_QUIET=1."""

from __future__ import annotations

import os
import sys
from typing import Any

from tqdm.auto import tqdm


def announce(line: str, *, enabled: bool = True) -> None:
    """One line on stderr before long work (how much there is), silenced as the progress bars are."""
    if enabled and os.environ.get("SCIDOCS_EVAL_QUIET") != "1":
        tqdm.write(line, file=sys.stderr)


def progress_bar(*, enabled: bool = True, **kwargs: Any) -> tqdm:
    """A tqdm bar (usable as a context manager) that is disabled when progress is off."""
    disable = not enabled or os.environ.get("SCIDOCS_EVAL_QUIET") == "1"
    return tqdm(disable=disable, leave=False, dynamic_ncols=True, **kwargs)
