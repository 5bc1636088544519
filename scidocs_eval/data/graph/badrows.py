"""Bad input in a snapshot, named: the engines count the bad rows of each part (a malformed line reads as a row
of nulls; a record without its key field is bad too), and a scan of only those parts names each (file, line).
A damaged gzip part (truncated, corrupt) is always an error: the works after the damage cannot be counted."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from scidocs_eval.errors import ScidocsEvalError

if TYPE_CHECKING:
    from scidocs_eval.data.graph.snapshot import Snapshot

SHOWN = 100
"""Bad rows listed in build.json (all are counted)."""


def local_path(engine_path: str) -> str:
    """A part's path as an engine names it ("file:///x" from Spark) as a local path."""
    return engine_path.removeprefix("file://") if engine_path.startswith("file:///") else engine_path.removeprefix(
        "file:")


def bad_lines(part: Path, key: str) -> Iterator[tuple[int, str]]:
    """(line, why) of every bad line of `part`: malformed JSON, not an object, or without `key`."""
    with gzip.open(part, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError as error:
                yield number, f"malformed JSON ({error})"
                continue
            if not isinstance(record, dict):
                yield number, f"not a JSON object ({type(record).__name__})"
            elif record.get(key) is None:
                yield number, f"no {key!r}"


def check(bad_counts: Mapping[str, int], keys: Mapping[str, str], snapshot: Snapshot, max_bad_rows: int) -> list[str]:
    """"FILE:LINE: why" for the bad rows (at most SHOWN), or a ScidocsEvalError naming the first ones when there
    are more than `max_bad_rows`; `keys`: the field each dataset's records need."""
    total = sum(bad_counts.values())
    if not total:
        return []
    key_of = {str(part): keys[name] for name, dataset in snapshot.datasets.items() for part in dataset.parts}
    named = []
    for part in sorted(bad_counts):
        for line, why in bad_lines(Path(part), key_of.get(part, "id")):
            named.append(f"{part}:{line}: {why}")
            if len(named) >= SHOWN:
                break
        if len(named) >= SHOWN:
            break
    if total > max_bad_rows:
        first = named[0] if named else f"{sorted(bad_counts)[0]}: {total} bad rows"
        more = f" (and {total - 1} more bad rows: " + ", ".join(named[1:4]) + (", ..." if total > 4 else "") + ")" \
            if total > 1 else ""
        raise ScidocsEvalError(f"{first}{more}; {total} bad row(s) in all, more than --max-bad-rows {max_bad_rows}; "
                               "nothing written (raise --max-bad-rows to build without them, each named in "
                               "build.json)")
    return named


def damaged_part(parts: list[Path], hint: str = "") -> tuple[Path, str] | None:
    """The first part (those named in `hint` first) that is not a whole gzip stream, and why."""
    for part in sorted(parts, key=lambda p: str(p) not in hint):
        lines = 0
        try:
            with gzip.open(part, "rb") as handle:
                for _ in handle:
                    lines += 1
        except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as error:
            return part, f"damaged gzip part after line {lines} ({error or type(error).__name__})"
    return None


def engine_failure(error: Exception, parts: list[Path]) -> ScidocsEvalError:
    """The one-line error for an engine that failed reading the parts: the damaged part when there is one."""
    message = str(error)
    damaged = damaged_part(parts, message)
    if damaged is not None:
        return ScidocsEvalError(f"{damaged[0]}: {damaged[1]}; download it again (a part cannot be read in part: "
                                "the works after the damage are unknown); nothing written")
    first = next((line for line in message.splitlines() if line.strip()), type(error).__name__)
    return ScidocsEvalError(f"the engine could not read the snapshot: {first[:300]}")
