"""Fields of paper records as the user's files hold them, checked: a wrong type is an error naming the file, line
or paper, never a silent default."""

from __future__ import annotations

from os import PathLike

from scidocs_eval.errors import InputError


def text_field(record: dict, key: str, path: str | PathLike[str], line: int | None = None,
               paper_id: str | None = None) -> str:
    """`record[key]` as text: a string, or "" when absent or null; anything else is an InputError naming the
    file, line or paper."""
    value = record.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        where = f"paper {paper_id!r}: " if paper_id is not None else ""
        raise InputError(path, f"{where}{key!r} must be a string, got {type(value).__name__} {str(value)[:40]!r}",
                         line)
    return value


def metadata_record(path: str | PathLike[str], key: str, value: object) -> dict:
    """One entry of the official metadata {id: {title, abstract, ...}}: an object (null: no text) whose
    `paper_id`, if it has one, is its key."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise InputError(path, f"paper {key!r}: expected an object {{title, abstract}}, got {type(value).__name__} "
                         f"{str(value)[:40]!r}")
    inner = value.get("paper_id", key)
    if str(inner) != key:
        raise InputError(path, f"paper {key!r}: its 'paper_id' is {inner!r}; the key and the paper_id must agree")
    return {**value, "paper_id": key}
