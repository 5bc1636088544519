"""The layouts and record schemas of the snapshots `data build --from` reads, and the digest of a snapshot.

- OpenAlex works (`aws s3 sync s3://openalex/data/works`): `{DIR}/data/works/updated_date=YYYY-MM-DD/part_NNN.gz`
  (a `manifest` file beside the partitions), gzip JSON lines, one work a line. DIR may also be the `works` folder.
- Semantic Scholar datasets (the Datasets API's files, one folder per dataset): `{DIR}/papers/*.gz`,
  `{DIR}/abstracts/*.gz`, `{DIR}/citations/*.gz`, gzip JSON lines.

Each schema lists only the fields the recipe reads, in Spark's DDL; DuckDB's column types are derived from it
(SQLGlot), so both engines read the same fields with the same types.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.extras import require

SOURCES = ("openalex", "s2")
OPENALEX_PREFIX = "https://openalex.org/"


@dataclass(frozen=True)
class Dataset:
    """One dataset of a snapshot: its name (the table the recipe reads), its parts, and their schema.

    `raw_json` names the fields read as their JSON text (an object whose keys are data: OpenAlex's
    abstract_inverted_index)."""

    name: str
    parts: tuple[Path, ...]
    fields: tuple[tuple[str, str], ...]
    raw_json: frozenset[str] = frozenset()

    def spark_schema(self) -> str:
        return ", ".join(f"`{name}` {kind}" for name, kind in self.fields)

    def duckdb_columns(self) -> dict[str, str]:
        exp = require("sqlglot.expressions", "data build --engine duckdb", extra="graph")
        return {name: "JSON" if name in self.raw_json else exp.DataType.build(kind, dialect="spark").sql("duckdb")
                for name, kind in self.fields}


OPENALEX_WORK = (
    ("id", "STRING"),
    ("title", "STRING"),
    ("display_name", "STRING"),
    ("abstract_inverted_index", "STRING"),
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
        return Snapshot(source, root, {"works": Dataset("works", parts, OPENALEX_WORK,
                                                        frozenset({"abstract_inverted_index"}))})
    datasets = {}
    for name, fields in (("papers", S2_PAPER), ("abstracts", S2_ABSTRACT), ("citations", S2_CITATION)):
        parts = _gzip_parts(root / name) if (root / name).is_dir() else ()
        if not parts:
            raise ScidocsEvalError(f"--from s2 {root}: no {name}/*.gz (expected one folder per dataset: papers, "
                                   "abstracts, citations, as the Datasets API's files are downloaded)")
        datasets[name] = Dataset(name, parts, fields)
    return Snapshot(source, root, datasets)


def abstract_from_inverted_index(index: dict[str, list[int]] | None) -> str:
    """The abstract an OpenAlex inverted index {word: [positions]} stands for: its words in position order."""
    if not index:
        return ""
    placed = sorted((position, word) for word, positions in index.items() for position in positions or ())
    return " ".join(word for _, word in placed)
