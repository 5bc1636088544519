"""The layouts and record schemas of the snapshots `data build --from` reads, and the digest of a snapshot.

- OpenAlex works (`aws s3 sync s3://openalex/data/works`): `{DIR}/data/works/updated_date=YYYY-MM-DD/part_NNN.gz`
  (a `manifest` file beside the partitions), gzip JSON lines, one work a line. DIR may also be the `works` folder.
- Semantic Scholar datasets (the Datasets API's files, one folder per dataset): `{DIR}/papers/*.gz`,
  `{DIR}/abstracts/*.gz`, `{DIR}/citations/*.gz`, gzip JSON lines.

Each schema lists only the fields the recipe reads, in Spark's DDL; DuckDB's column types are derived from it
(SQLGlot), and so is the check of every record's JSON types (`record_check`), so both engines read the same fields
with the same types and a record whose field has another type is a bad row, never a null read in its place.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Optional

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.extras import require

SOURCES = ("openalex", "s2")
OPENALEX_PREFIX = "https://openalex.org/"


@dataclass(frozen=True)
class Dataset:
    """One dataset of a snapshot: its name (the table the recipe reads), its parts, and their schema.

    `raw_json` names the fields the engines read as their JSON text (an object whose keys are data: OpenAlex's
    abstract_inverted_index); their schema is still checked on every record. `key`: the field a record cannot
    be without."""

    name: str
    parts: tuple[Path, ...]
    fields: tuple[tuple[str, str], ...]
    key: str
    raw_json: frozenset[str] = frozenset()

    def spark_schema(self) -> str:
        return ", ".join(f"`{name}` {'STRING' if name in self.raw_json else kind}" for name, kind in self.fields)

    def duckdb_columns(self) -> dict[str, str]:
        exp = require("sqlglot.expressions", "data build --engine duckdb", extra="graph")
        return {name: "JSON" if name in self.raw_json else exp.DataType.build(kind, dialect="spark").sql("duckdb")
                for name, kind in self.fields}


PLAIN_ID = r'^[^"\\\x00-\x1f]*$'
"""A record's key (a work's id) holds no character JSON escapes: it is written into JSON text as is."""


def _json_type(kind: Any, name: str) -> Any:
    """The msgspec type of a value of `kind` (a SQLGlot DataType), null allowed at every level (the engines read
    it as null); an object may hold more keys than the schema names (they are not read)."""
    exp = require("sqlglot.expressions", "data build --from", extra="graph")
    msgspec = require("msgspec", "data build --from", extra="graph")
    kinds = exp.DataType.Type
    scalars = {kinds.TEXT: str, kinds.DOUBLE: float, kinds.BOOLEAN: bool,
               kinds.BIGINT: Annotated[int, msgspec.Meta(ge=-2**63, le=2**63 - 1)]}
    if kind.this in scalars:
        python = scalars[kind.this]
    elif kind.this == kinds.ARRAY:
        python = list[_json_type(kind.expressions[0], name)]  # type: ignore[misc]
    elif kind.this == kinds.MAP and kind.expressions[0].this == kinds.TEXT:
        python = dict[str, _json_type(kind.expressions[1], name)]  # type: ignore[misc]
    elif kind.this == kinds.STRUCT:
        python = msgspec.defstruct(name, [(c.name, _json_type(c.args["kind"], f"{name}_{c.name}"), None)
                                          for c in kind.expressions])
    else:
        raise ValueError(f"no JSON type for the schema type {kind.sql('spark')}")
    return Optional[python]  # noqa: UP045 (a runtime type for msgspec, built from a variable)


def record_decoder(fields: tuple[tuple[str, str], ...], key: str) -> Callable[[bytes], str | None]:
    """The check of one line against a dataset's schema (compiled once, run in C by msgspec): None for a good
    record, else why it is bad (malformed JSON, not an object, without `key` or with a key that is not a
    `PLAIN_ID`, or the first field whose JSON type
    is not the schema's, named by its path: "title: wrong type (Expected `str | null`, got `array`)")."""
    return record_checks(fields, key)[2]


@functools.lru_cache(maxsize=16)
def record_checks(fields: tuple[tuple[str, str], ...], key: str) \
        -> tuple[Callable[[bytes], object], tuple[type[Exception], ...], Callable[[bytes], str | None]]:
    """`record_decoder`'s check in its two halves, for a loop over many lines: `decode(line)` returns for a good
    record and raises one of `errors` for a bad one, whose reason `why(line)` gives (the check's answer)."""
    exp = require("sqlglot.expressions", "data build --from", extra="graph")
    msgspec = require("msgspec", "data build --from", extra="graph")
    members = []
    for name, kind in fields:
        python = _json_type(exp.DataType.build(kind, dialect="spark"), name)
        if name != key:
            members.append((name, python, None))
        elif python.__args__[0] is str:  # an id is written into JSON as is (the training file is built in SQL)
            members.append((name, Annotated[str, msgspec.Meta(pattern=PLAIN_ID)]))
        else:
            members.append((name, python.__args__[0]))
    members.sort(key=lambda member: len(member) == 3)  # the required key first, as Python's signatures want
    decoder = msgspec.json.Decoder(msgspec.defstruct("Record", members))

    def check(line: bytes) -> str | None:
        try:
            decoder.decode(line)
        except msgspec.ValidationError as error:
            why, _, path = str(error).partition(" - at ")
            if why.startswith("Object missing required field"):
                return f"no {key!r}"
            if path in ("", "`$`"):
                return f"not a JSON object ({why})"
            field = path.strip('`').removeprefix('$.')
            if "matching regex" in why:
                return f"{field}: an id with a quote, a backslash or a control character"
            return f"{field}: wrong type ({why})"
        except msgspec.DecodeError as error:
            return f"malformed JSON ({error})"
        return None
    return decoder.decode, (msgspec.ValidationError, msgspec.DecodeError), check


OPENALEX_WORK = (
    ("id", "STRING"),
    ("title", "STRING"),
    ("display_name", "STRING"),
    ("abstract_inverted_index", "MAP<STRING, ARRAY<BIGINT>>"),
    ("publication_date", "STRING"),
    ("publication_year", "BIGINT"),
    ("type", "STRING"),
    ("language", "STRING"),
    ("referenced_works", "ARRAY<STRING>"),
    ("primary_topic", "STRUCT<id: STRING, display_name: STRING, score: DOUBLE, "
                      "subfield: STRUCT<id: STRING, display_name: STRING>, "
                      "field: STRUCT<id: STRING, display_name: STRING>, "
                      "domain: STRUCT<id: STRING, display_name: STRING>>"),
    ("concepts", "ARRAY<STRUCT<id: STRING, display_name: STRING, level: BIGINT, score: DOUBLE>>"),
    ("mesh", "ARRAY<STRUCT<descriptor_ui: STRING, descriptor_name: STRING, qualifier_ui: STRING, "
             "qualifier_name: STRING, is_major_topic: BOOLEAN>>"),
    ("is_retracted", "BOOLEAN"),
    ("is_paratext", "BOOLEAN"),
    ("updated_date", "STRING"),
    ("ids", "STRUCT<openalex: STRING, doi: STRING, pmid: STRING>"),
)
S2_PAPER = (
    ("corpusid", "BIGINT"),
    ("externalids", "STRUCT<DOI: STRING, PubMed: STRING, MAG: STRING, ArXiv: STRING>"),
    ("title", "STRING"),
    ("year", "BIGINT"),
    ("publicationdate", "STRING"),
    ("publicationtypes", "ARRAY<STRING>"),
    ("s2fieldsofstudy", "ARRAY<STRUCT<category: STRING, source: STRING>>"),
)
S2_ABSTRACT = (("corpusid", "BIGINT"), ("abstract", "STRING"))
S2_CITATION = (("citingcorpusid", "BIGINT"), ("citedcorpusid", "BIGINT"), ("isinfluential", "BOOLEAN"))


@dataclass(frozen=True)
class Snapshot:
    """A snapshot folder: its source, its datasets, and the files that identify it (manifests and parts)."""

    source: str
    root: Path
    datasets: dict[str, Dataset]

    def digest(self) -> str:
        """sha256 of every manifest's bytes and every part's path (relative) and size: a changed, added or
        removed part changes it."""
        digest = hashlib.sha256()
        files = sorted({p for d in self.datasets.values() for p in d.parts} | set(self._manifests()))
        for path in files:
            digest.update(f"{path.relative_to(self.root)}\t{path.stat().st_size}\n".encode())
            if path.name == "manifest":
                digest.update(path.read_bytes())
        return digest.hexdigest()

    def _manifests(self) -> list[Path]:
        return sorted(self.root.rglob("manifest"))

    def parts(self) -> list[Path]:
        return sorted(p for d in self.datasets.values() for p in d.parts)


def _gzip_parts(folder: Path) -> tuple[Path, ...]:
    return tuple(sorted(p for p in folder.rglob("*.gz") if p.is_file()))


def open_snapshot(source: str, folder: str | os.PathLike[str]) -> Snapshot:
    """The snapshot of `source` at `folder`; a one-line error when its layout is not there."""
    root = Path(folder)
    if source not in SOURCES:
        raise ScidocsEvalError(f"--from must be one of {', '.join(SOURCES)}, got {source!r}")
    if not root.is_dir():
        raise ScidocsEvalError(f"--from {source} {root}: no such folder")
    if source == "openalex":
        works = next((c for c in (root / "data" / "works", root / "works", root) if any(c.glob("updated_date=*"))),
                     None)
        if works is None:
            raise ScidocsEvalError(f"--from openalex {root}: no works snapshot there (expected "
                                   "data/works/updated_date=YYYY-MM-DD/part_NNN.gz, as `aws s3 sync "
                                   "s3://openalex/data/works` writes)")
        parts = _gzip_parts(works)
        if not parts:
            raise ScidocsEvalError(f"--from openalex {works}: the updated_date=... partitions hold no .gz part")
        return Snapshot(source, root, {"works": Dataset("works", parts, OPENALEX_WORK, "id",
                                                        frozenset({"abstract_inverted_index"}))})
    datasets = {}
    for name, fields, key in (("papers", S2_PAPER, "corpusid"), ("abstracts", S2_ABSTRACT, "corpusid"),
                              ("citations", S2_CITATION, "citingcorpusid")):
        parts = _gzip_parts(root / name) if (root / name).is_dir() else ()
        if not parts:
            raise ScidocsEvalError(f"--from s2 {root}: no {name}/*.gz (expected one folder per dataset: papers, "
                                   "abstracts, citations, as the Datasets API's files are downloaded)")
        datasets[name] = Dataset(name, parts, fields, key)
    return Snapshot(source, root, datasets)


def abstract_from_inverted_index(index: dict[str, list[int]] | None) -> str:
    """The abstract an OpenAlex inverted index {word: [positions]} stands for: its words in position order."""
    if not index:
        return ""
    placed = sorted((position, word) for word, positions in index.items() for position in positions or ())
    return " ".join(word for _, word in placed)
