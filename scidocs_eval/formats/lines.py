"""Text files read line by line as UTF-8, where a byte that is not UTF-8 is an error naming the file and line."""

from __future__ import annotations

import os
from collections.abc import Iterator

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
