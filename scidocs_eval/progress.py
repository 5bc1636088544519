"""Progress bars for long work, on stderr, silenced with `enabled=False`, inside `silenced()`, or with
SCIDOCS_EVAL_QUIET=1."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tqdm.auto import tqdm

_SILENCED: ContextVar[bool] = ContextVar("scidocs_eval_progress_silenced", default=False)


@contextmanager
def silenced(silent: bool = True) -> Iterator[None]:
    """Within the block (when `silent`), every bar and announcement is off: for work a caller asked to run
    without progress (`progress=False`) whose inner steps (an adapter's `--tune` grid) do not take the flag."""
    token = _SILENCED.set(_SILENCED.get() or silent)
    try:
        yield
    finally:
        _SILENCED.reset(token)


def _quiet() -> bool:
    return _SILENCED.get() or os.environ.get("SCIDOCS_EVAL_QUIET") == "1"


def close_open_bars() -> None:
    """Clear every progress bar still drawn, so that the next line printed on stderr is a line of its own: a bar
    of a generator that its consumer's error left suspended is otherwise closed only when the generator is
    collected, after the error line was printed behind the bar's text. Into a file or a pipe, where a cleared bar
    stays as text, a newline ends it (a `grep '^scidocs-eval: error'` finds the error)."""
    std = sys.modules.get("tqdm.std")  # no bar was ever made if tqdm is not loaded
    bars = [bar for bar in list(std.tqdm._instances) if not bar.disable] if std is not None else []
    for bar in bars:
        bar.close()
    if bars and not sys.stderr.isatty():
        sys.stderr.write("\n")


def announce(line: str, *, enabled: bool = True) -> None:
    """One line on stderr before long work (how much there is), silenced as the progress bars are."""
    if enabled and not _quiet():
        from tqdm.auto import tqdm  # tqdm.auto loads asyncio: not at start-up

        tqdm.write(line, file=sys.stderr)


def progress_bar(*, enabled: bool = True, **kwargs: Any) -> tqdm:
    """A tqdm bar (usable as a context manager) that is disabled when progress is off."""
    from tqdm.auto import tqdm

    disable = not enabled or _quiet()
    return tqdm(disable=disable, leave=False, dynamic_ncols=True, **kwargs)
