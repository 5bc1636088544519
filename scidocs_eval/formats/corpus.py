"""Paper corpora and citation lists outside a suite: one reader per format, and the one `paper_text`.

- Papers: JSON lines, one ``{"paper_id", "title", "abstract", ...}`` object a line (blank lines skipped; `PAPERS`),
  or an official metadata file ``{paper_id: {title, abstract, ...}}`` (one JSON object without a "paper_id" key;
  `suite.METADATA`).
  A paper id given twice is an error naming both lines.
- Citations: TSV lines ``citing<TAB>cited`` (blank lines skipped). A first line whose two fields are both
  unknown paper ids (when the caller knows the ids) is a header and is skipped.
"""

from __future__ import annotations

import datetime
import os
import re
from collections.abc import Container
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from scidocs_eval.errors import InputError
from scidocs_eval.formats.lines import utf8_lines
from scidocs_eval.formats.row_schema import Field, RowChecker, RowSchema, file_kind, reads
from scidocs_eval.formats.suite import METADATA, Paper

CitationLink = tuple[int, str, str]
"""(line number, citing paper id, cited paper id)."""
DATE_FIELDS = ("publication_date", "date")
YEAR_FIELDS = ("year", "publication_year")
"""Where a paper record gives when it was published (OpenAlex: publication_date / publication_year; S2ORC and
SciRepEval: year): the first of DATE_FIELDS that is set, else the first of YEAR_FIELDS."""
_DATE = re.compile(r"^(\d{4})(?:-(\d{2})-(\d{2}))?$")


@dataclass(frozen=True)
class Published:
    """When a paper was published: a year, and the day when the record gives one. Also a cutoff
    (`parse_published`): `is_after(cutoff)` is True, False, or None when a year-only paper falls in a date
    cutoff's year (it cannot be told)."""

    year: int
    date: datetime.date | None = None

    def is_after(self, cutoff: Published) -> bool | None:
        if cutoff.date is None:
            return self.year > cutoff.year
        if self.date is not None:
            return self.date > cutoff.date
        return None if self.year == cutoff.year else self.year > cutoff.year

    def __str__(self) -> str:
        return self.date.isoformat() if self.date else str(self.year)


def parse_published(text: str) -> Published:
    """A year ("2019") or a date ("2019-06-30"); ValueError otherwise."""
    match = _DATE.match(str(text).strip())
    if not match:
        raise ValueError(f"expected a year (2019) or a date (2019-06-30), got {text!r}")
    year, month, day = match.groups()
    date = datetime.date(int(year), int(month), int(day)) if month else None
    return Published(int(year), date)


def published(record: dict, path: str | os.PathLike[str], line: int | None = None) -> Published | None:
    """When the paper of `record` was published (see DATE_FIELDS), or None; a value that is no year or date is an
    InputError naming the paper."""
    for key in (*DATE_FIELDS, *YEAR_FIELDS):
        value = record.get(key)
        if value in (None, ""):
            continue
        text = str(value)[:10] if key in DATE_FIELDS else str(value)
        if isinstance(value, float) and value.is_integer():
            text = str(int(value))
        try:
            found = parse_published(text)
        except ValueError:
            raise InputError(path, f"paper {record.get('paper_id')!r}: {key!r} is {value!r}, not a year or a date "
                             "(YYYY-MM-DD)", line) from None
        if key in YEAR_FIELDS and found.date is not None:
            raise InputError(path, f"paper {record.get('paper_id')!r}: {key!r} is {value!r}, not a year", line)
        return found
    return None


def paper_text(paper: Paper, separator: str = " ") -> str:
    """Title + separator + abstract (+ separator + each `extra` field), each stripped; a missing part is left out
    with its separator.

    The text every model reads: the word-based baselines with a space, transformers with their [SEP] token.
    """
    return separator.join(part for part in (paper.title.strip(), paper.abstract.strip(),
                                            *(field.strip() for field in paper.extra)) if part)


def text_field(record: dict, key: str, path: str | os.PathLike[str], line: int | None = None,
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


PAPERS = file_kind(RowSchema("papers", "JSON lines", (
    Field("paper_id", "id"), Field("title", "text", required=False, null=True),
    Field("abstract", "text", required=False, null=True)), keep_other=True,
    example=({"paper_id": "p1", "title": "A title", "abstract": "An abstract.", "year": 2019},
             {"paper_id": "p2", "title": "Another", "abstract": None})))
"""a corpus outside a suite, one paper a line (its other fields kept as given: a label, a year)."""


def metadata_record(path: str | os.PathLike[str], key: str, value: object,
                    checker: RowChecker | None = None) -> dict:
    """One entry of the official metadata {id: {title, abstract, ...}}, checked against `METADATA` (`checker`: the
    file's, which remembers its columns' types): an object (null: no text) whose `paper_id`, if it has one, is its
    key; `title` and `abstract` strings ("" when absent or null)."""
    record = (checker or METADATA.checker(path)).row({} if value is None else value, where=f"paper {key!r}")
    if record["paper_id"] not in (None, key):
        raise InputError(path, f"paper {key!r}: its 'paper_id' is {record['paper_id']!r}; the key and the paper_id "
                         "must agree")
    return {**record, "paper_id": key, "title": record["title"] or "", "abstract": record["abstract"] or ""}


@reads(PAPERS)
def read_paper_records(path: str | os.PathLike[str], expected: str = "{paper_id, title, abstract}"
                       ) -> list[tuple[int | None, dict[str, Any]]]:
    """(line, record) of every paper in a JSON lines corpus (`PAPERS`; line None: an official metadata file,
    `METADATA`), `paper_id` a string, `title` and `abstract` strings ("" when absent or null).

    `expected` describes the format in the error for an absent file.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(path, f"papers file not found (expected JSON lines {expected})")
    text = path.read_bytes()
    try:
        whole = orjson.loads(text)
    except orjson.JSONDecodeError:
        whole = None
    if isinstance(whole, dict) and "paper_id" not in whole:
        checker = METADATA.checker(path)
        records = [(None, metadata_record(path, key, value, checker)) for key, value in whole.items()]
    else:
        checker, records = PAPERS.checker(path), []
        for line, raw in enumerate(text.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                record = checker.row(orjson.loads(raw), line)
            except orjson.JSONDecodeError as error:
                raise InputError(path, f"malformed JSON ({error})", line) from None
            records.append((line, {**record, "title": record["title"] or "", "abstract": record["abstract"] or ""}))
    first_line: dict[str, int | None] = {}
    for line, record in records:
        paper_id = record["paper_id"]
        if paper_id in first_line:
            raise InputError(path, f"paper {paper_id!r} repeats line {first_line[paper_id]}", line)
        first_line[paper_id] = line
    return records


def read_papers(path: str | os.PathLike[str]) -> list[Paper]:
    """The papers of a corpus file (see the module docstring), in file order; none at all is an error."""
    papers = [Paper(record["paper_id"], record.get("title") or "", record.get("abstract") or "")
              for _, record in read_paper_records(path)]
    if not papers:
        raise InputError(path, "no papers in corpus")
    return papers


CITATIONS = file_kind(RowSchema("citations", "TSV lines (a header row allowed)", (
    Field("citing", "id"), Field("cited", "id")), cells=True,
    example=({"citing": "p1", "cited": "p2"}, {"citing": "p2", "cited": "p3"})))
"""a citation graph outside a suite: one link a line, the citing paper's id, a tab, the cited paper's id."""


@reads(CITATIONS)
def read_citations(path: str | os.PathLike[str], known: Container[str] | None = None) -> list[CitationLink]:
    """Every citation link of a TSV file (`CITATIONS`), in file order (see the module docstring for the header
    rule)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "citations file not found (expected TSV lines citing<TAB>cited)")
    links = []
    checker = CITATIONS.checker(path)
    for line, text in enumerate(utf8_lines(path), start=1):
        if not text.strip():
            continue
        fields = [field.strip() for field in text.rstrip("\r\n").split("\t")]
        if len(fields) != 2:
            raise InputError(path, f"expected 2 tab-separated fields citing<TAB>cited, got {len(fields)}", line)
        if line == 1 and known is not None and fields[0] not in known and fields[1] not in known:
            continue
        row = checker.row(dict(zip(("citing", "cited"), fields)), line)
        links.append((line, row["citing"], row["cited"]))
    return links
