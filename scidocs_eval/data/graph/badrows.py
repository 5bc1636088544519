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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from scidocs_eval.data.graph.snapshot import Dataset, record_checks
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


COMPRESSED_BLOCK = 1 << 20
"""Compressed bytes read at a time by `scan_part`."""
DECOMPRESSED_BLOCK = 1 << 24
"""The most decompressed bytes one step of `scan_part` holds (a highly compressed part is not inflated at once)."""


def decompressed_blocks(part: Path, compressed: int = COMPRESSED_BLOCK,
                        decompressed: int = DECOMPRESSED_BLOCK) -> Iterator[bytes]:
    """A gzip part's decompressed bytes, in blocks, read as Python's gzip module reads it: members one after the
    other (zero bytes between them skipped), each member's CRC and length checked (zlib.error), a part that ends
    inside a member an EOFError."""
    member = None
    seen = False  # a member was read: zero padding may follow it
    with open(part, "rb") as handle:
        while block := handle.read(compressed):
            while block:
                if member is None:
                    if seen:
                        block = block.lstrip(b"\x00")
                        if not block:
                            break
                    member = zlib.decompressobj(16 + zlib.MAX_WBITS)
                out = member.decompress(block, decompressed)
                if out:
                    yield out
                if member.eof:
                    block, member, seen = member.unused_data, None, True
                else:
                    block = member.unconsumed_tail
    if member is not None:
        raise EOFError("Compressed file ended before the end-of-stream marker was reached")


def scan_part(part: Path, fields: tuple[tuple[str, str], ...], key: str, *, block: int = COMPRESSED_BLOCK) -> PartScan:
    """Every line of `part` checked against the schema `fields` (blank lines are skipped, as the engines skip
    them). The part is decompressed in blocks and each block's lines decoded in one loop (msgspec's typed decoder
    in C, the object it builds dropped at once); `why` is asked only of a line the decoder refused."""
    decode, errors, why = record_checks(fields, key)
    bad: list[tuple[int, str]] = []
    records = number = 0
    tail = b""

    def refused(line: bytes) -> None:
        if line.strip():
            reason = why(line)
            if reason is None:  # the decoder refused what the check accepts: never silently a good record
                raise RuntimeError(f"{part}:{number}: the schema check's decoder and its reason disagree")
            bad.append((number, reason))
    try:
        for data in decompressed_blocks(part, block):
            lines = (tail + data).split(b"\n")
            tail = lines.pop()  # the part of a line that continues in the next block (b"" after a newline)
            for raw in lines:
                number += 1
                try:
                    decode(raw)
                    records += 1
                except errors:
                    refused(raw + b"\n")  # as read line by line: the reason may name the newline's byte
        if tail:  # the last line, without a newline
            number += 1
            try:
                decode(tail)
                records += 1
            except errors:
                refused(tail)
    except (EOFError, zlib.error, OSError) as error:
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
