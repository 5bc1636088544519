"""Each warning once per run: a command's repeated warning (one per tuning round, per task, per file of a folder)
is printed the first time only, and the end of the run says how many times it came."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

log = logging.getLogger("scidocs_eval")

_SHOWN = 100
"""characters of a repeated warning quoted in its count line."""
_NAMED = 5
"""items named in a grouped warning (the count says how many more)."""


class OncePerRun(logging.Filter):
    """A filter for the handlers that print a command's log: a warning whose text was printed already in this run
    is held back and counted (`repeats`)."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()
        self._last: tuple[logging.LogRecord | None, bool] = (None, True)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        last, shown = self._last
        if record is not last:  # each handler asks about the same record: it counts once
            message = record.getMessage()
            self.counts[message] += 1
            shown = self.counts[message] == 1
            self._last = (record, shown)
        return shown

    def repeats(self) -> list[str]:
        """A line per warning that came more than once: its start and its count."""
        return [f"the warning {_shorten(message)!r} came {count} times in this run (shown once)"
                for message, count in self.counts.items() if count > 1]


def _shorten(message: str) -> str:
    return message if len(message) <= _SHOWN else message[:_SHOWN - 3] + "..."


@contextmanager
def each_warning_once(handlers: Sequence[logging.Handler]) -> Iterator[OncePerRun]:
    """Within the block, `handlers` print each warning once; at its end (an error too), one line per warning that
    came again, with its count."""
    once = OncePerRun()
    for handler in handlers:
        handler.addFilter(once)
    try:
        yield once
    finally:
        for handler in handlers:
            handler.removeFilter(once)
        for line in once.repeats():
            log.warning(line)


def grouped(items: Iterable[str], what: str) -> str | None:
    """One warning for many items of one kind, `what` saying what they are ("JSON file(s) that are not results
    files, left out"): "3 JSON file(s) ...: a, b, c"; None when there is none."""
    items = list(dict.fromkeys(items))
    if not items:
        return None
    named = ", ".join(items[:_NAMED]) + (f" and {len(items) - _NAMED} more" if len(items) > _NAMED else "")
    return f"{len(items)} {what}: {named}"
