"""One split of a Hugging Face dataset as rows, on disk as JSON lines: MTEB's clustering and classification sets.

A dataset folder holds `{split}.jsonl`, one JSON object per row with the dataset's columns as the hub has them at
the revision MTEB pins (`data download` writes it; synthetic copies for tests are written the same way). Rows are
read in file order, which is the hub's row order: MTEB's sampling draws row indices, so the order is part of the
data. Each file kind's rows are declared once (`CLUSTERING_ROWS`, `CLUSTERING_ROW_LISTS`, `CLASSIFICATION_ROWS`,
`formats.row_schema`): a row without a field the task reads, a null, a value of the wrong type or a column of two
types is an error naming the file, the line and the field.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from scidocs_eval.errors import InputError
from scidocs_eval.formats.lines import json_lines
from scidocs_eval.formats.row_schema import Field, RowChecker, RowSchema, file_kind, reads
from scidocs_eval.formats.safe_output import write_bytes_atomically


def text_id(text: str) -> str:
    """The id a row's text is embedded under: a digest of the text (equal texts, one embedding)."""
    return "text-" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:20]


def split_file(folder: str | os.PathLike[str], split: str) -> Path:
    return Path(folder) / f"{split}.jsonl"


CLUSTERING_ROWS = file_kind(RowSchema("HF clustering rows", "JSON lines", (
    Field("sentences", "text"), Field("labels", "label")),
    example=({"sentences": "A paper on cells", "labels": "cell biology"},
             {"sentences": "A paper on brains", "labels": "neuroscience"})))
"""MTEB's clustering sets with one document a row (bioRxiv's v2)."""
CLUSTERING_ROW_LISTS = file_kind(RowSchema("HF clustering row lists", "JSON lines", (
    Field("sentences", "text", many=True), Field("labels", "label", many=True)), parallel=("sentences", "labels"),
    example=({"sentences": ["A paper on cells", "A paper on brains"], "labels": ["cell biology", "neuroscience"]},
             {"sentences": ["A paper on genes"], "labels": ["genomics"]})))
"""MTEB's clustering sets whose rows are sets of documents (medRxiv's v2, ArXiv's hierarchical): parallel lists."""
CLASSIFICATION_ROWS = file_kind(RowSchema("HF classification rows", "JSON lines", (
    Field("text", "text"), Field("label", "label")),
    example=({"text": "A paper on graphs", "label": 3}, {"text": "A paper on groups", "label": 5})))
"""MTEB's classification sets (ArxivClassification.v2): a text and its label, one type for the label column in
every split of the dataset."""


def read_rows(path: str | os.PathLike[str], schema: RowSchema, after: RowChecker | None = None
              ) -> tuple[list[dict[str, Any]], RowChecker]:
    """The rows of `path` checked against `schema` (only its fields kept), and the checker that read them: pass it
    as `after` to read another split of the dataset, whose columns must have the same types."""
    checker = schema.checker(path, after)
    rows = [checker.row(record, line) for line, record in json_lines(path)]
    if not rows:
        raise InputError(path, "has no rows")
    return rows, checker


for _schema in (CLUSTERING_ROWS, CLUSTERING_ROW_LISTS, CLASSIFICATION_ROWS):
    reads(_schema)(partial(read_rows, schema=_schema))


def write_rows(folder: str | os.PathLike[str], split: str, rows: Iterable[Mapping[str, Any]]) -> Path:
    """Write one split's rows as `{split}.jsonl` in `folder` (atomically)."""
    data = b"".join(orjson.dumps(dict(row)) + b"\n" for row in rows)
    return write_bytes_atomically(split_file(folder, split), data, rows=None)


def flatten_lists(rows: Sequence[Mapping[str, Any]], *columns: str) -> list[tuple]:
    """Rows whose `columns` are parallel lists (MTEB's older clustering layout: one row per set of documents,
    `CLUSTERING_ROW_LISTS` checks the lengths) flattened into one tuple per document, rows in order."""
    return [values for row in rows for values in zip(*(row[c] for c in columns), strict=True)]
