"""One split of a Hugging Face dataset as rows, on disk as JSON lines: MTEB's clustering and classification sets.

A dataset folder holds `{split}.jsonl`, one JSON object per row with the dataset's columns as the hub has them at
the revision MTEB pins (`data download` writes it; synthetic copies for tests are written the same way). Rows are
read in file order, which is the hub's row order: MTEB's sampling draws row indices, so the order is part of the
data. A row without a column the task reads, or of the wrong type, is an error naming the file and line.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from scidocs_eval.errors import InputError
from scidocs_eval.formats.lines import json_lines
from scidocs_eval.formats.safe_output import write_bytes_atomically


def text_id(text: str) -> str:
    """The id a row's text is embedded under: a digest of the text (equal texts, one embedding)."""
    return "text-" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:20]


def split_file(folder: str | os.PathLike[str], split: str) -> Path:
    return Path(folder) / f"{split}.jsonl"


def read_rows(path: str | os.PathLike[str], columns: Mapping[str, tuple[type, ...]]) -> list[dict[str, Any]]:
    """The rows of `path`, each checked to hold every column of `columns` (name -> accepted types); only those
    columns are kept."""
    rows = []
    for line, record in json_lines(path):
        row = {}
        for name, types in columns.items():
            if name not in record:
                raise InputError(path, f"row has no {name!r} column (it has {', '.join(sorted(record))})", line)
            if not isinstance(record[name], types):
                raise InputError(path, f"column {name!r} is a {type(record[name]).__name__}, expected "
                                 f"{' or '.join(t.__name__ for t in types)}", line)
            row[name] = record[name]
        rows.append(row)
    if not rows:
        raise InputError(path, "has no rows")
    return rows


def write_rows(folder: str | os.PathLike[str], split: str, rows: Iterable[Mapping[str, Any]]) -> Path:
    """Write one split's rows as `{split}.jsonl` in `folder` (atomically)."""
    data = b"".join(orjson.dumps(dict(row)) + b"\n" for row in rows)
    return write_bytes_atomically(split_file(folder, split), data, rows=None)


def flatten_lists(path: str | os.PathLike[str], rows: Sequence[Mapping[str, Any]], *columns: str) -> list[tuple]:
    """Rows whose `columns` are parallel lists (MTEB's older clustering layout: one row per set of documents)
    flattened into one tuple per document, rows in order; lists of unequal length are an error."""
    flat: list[tuple] = []
    for number, row in enumerate(rows, start=1):
        values = [row[c] if isinstance(row[c], list) else [row[c]] for c in columns]
        if len({len(v) for v in values}) != 1:
            raise InputError(path, f"row {number}: columns {', '.join(columns)} are lists of different lengths")
        flat.extend(zip(*values))
    return flat
