"""Bad input in a snapshot, named: every line of every part is checked against its dataset's one schema before an
engine reads it (`scan_part`, the same code whichever engine runs the build). A malformed line, a line that is
not a JSON object, a record without its key field and a record with a field of another JSON type than the
schema's are bad rows, counted and named (file, line). Tolerated bad rows (`--max-bad-rows`) are left out of a
copy of their part that the engines read instead, so the engines read only records of the schema's types, in
strict mode (an engine that could not read one is an error, never a null). A damaged gzip part (truncated,
corrupt) is always an error: the works after the damage cannot be counted."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from scidocs_eval.data.graph.snapshot import Dataset, record_decoder
from scidocs_eval.errors import ScidocsEvalError

SHOWN = 100
"""Bad rows listed in build.json (all are counted)."""


@dataclass(frozen=True)
class PartScan:
    """One part checked: its good records, its bad lines (line, why), and why it is damaged (None: whole)."""

    part: Path
    records: int
    bad: tuple[tuple[int, str], ...]
    damaged: str | None = None


def scan_part(part: Path, fields: tuple[tuple[str, str], ...], key: str) -> PartScan:
    """Every line of `part` checked against the schema `fields` (blank lines are skipped, as the engines skip
    them)."""
    check = record_decoder(fields, key)
    bad: list[tuple[int, str]] = []
    records = number = 0
    try:
        with gzip.open(part, "rb") as handle:
            for number, raw in enumerate(handle, start=1):
                if not raw.strip():
                    continue
                why = check(raw)
                if why is None:
                    records += 1
                else:
                    bad.append((number, why))
    except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as error:
        return PartScan(part, records, tuple(bad), f"damaged gzip part after line {number} "
                                                   f"({error or type(error).__name__})")
    return PartScan(part, records, tuple(bad))


def scan_arguments(datasets: Sequence[Dataset]) -> list[tuple[Path, tuple[tuple[str, str], ...], str]]:
    """`scan_part`'s arguments for every part of `datasets`."""
    return [(part, dataset.fields, dataset.key) for dataset in datasets for part in dataset.parts]


def check(scans: Sequence[PartScan], max_bad_rows: int) -> list[str]:
    """"FILE:LINE: why" for the bad rows (at most SHOWN); a ScidocsEvalError naming a damaged part, or the first
    bad rows when there are more than `max_bad_rows`."""
    for scan in scans:
        if scan.damaged:
            raise ScidocsEvalError(f"{scan.part}: {scan.damaged}; download it again (a part cannot be read in "
                                   "part: the works after the damage are unknown); nothing written")
    named = [f"{scan.part}:{line}: {why}" for scan in sorted(scans, key=lambda s: str(s.part))
             for line, why in scan.bad]
    total = len(named)
    if total > max_bad_rows:
        more = f" (and {total - 1} more bad rows: " + ", ".join(named[1:4]) + (", ..." if total > 4 else "") + ")" \
            if total > 1 else ""
        raise ScidocsEvalError(f"{named[0]}{more}; {total} bad row(s) in all, more than --max-bad-rows "
                               f"{max_bad_rows}; nothing written (raise --max-bad-rows to build without them, each "
                               "named in build.json)")
    return named[:SHOWN]


def without_bad_rows(scan: PartScan, folder: Path) -> Path:
    """A copy of the part without its bad lines, in `folder` (the build's spill folder), for the engines."""
    bad = {line for line, _ in scan.bad}
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / f"{len(list(folder.iterdir())):05d}-{scan.part.name}"
    with gzip.open(scan.part, "rb") as source, gzip.GzipFile(copy, "wb", compresslevel=1, mtime=0) as target:
        for number, raw in enumerate(source, start=1):
            if number not in bad:
                target.write(raw)
    return copy


def engine_failure(error: Exception) -> ScidocsEvalError:
    """The one-line error for an engine that failed reading parts that passed the check."""
    message = str(error)
    first = next((line for line in message.splitlines() if line.strip()), type(error).__name__)
    return ScidocsEvalError(f"the engine could not read the snapshot's checked records: {first[:300]}")
