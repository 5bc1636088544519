"""Text files read line by line: as UTF-8 (a byte that is not UTF-8 is an error naming the file and line), or as
JSON lines of objects (anything else is an error naming the line)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import orjson

from scidocs_eval.errors import InputError


def utf8_lines(path: str | os.PathLike[str]) -> Iterator[str]:
    """The lines of `path` (each with its line ending), decoded as UTF-8; a byte that is not UTF-8 is an
    InputError naming the file, the line and the column (never a UnicodeDecodeError)."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise InputError(path, f"byte 0x{raw[error.start]:02x} at column {error.start + 1} is not UTF-8 "
                                 "(save the file as UTF-8)", number) from None


def json_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(1-based line, object) for each non-blank line; an error naming the line for anything else."""
    with open(path, "rb") as handle:
        for line, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError as error:
                raise InputError(path, f"malformed JSON ({error})", line) from None
            if not isinstance(record, dict):
                raise InputError(path, f"expected a JSON object, got {type(record).__name__}", line)
            yield line, record
