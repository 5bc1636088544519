"""A synthetic snapshot in the real layouts and schemas (OpenAlex works, Semantic Scholar datasets), seeded, with
the skew of the real graph: power-law citation counts (references drawn in proportion to a Pareto fitness),
works without an abstract, retracted and paratext works, references to works outside the snapshot, one work
updated in two partitions (the later version wins), and PubMed works with MeSH descriptors. For the tests and
`bench/graph_build.py`."""

from __future__ import annotations

import datetime
import gzip
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson

from scidocs_eval.errors import ScidocsEvalError

FIELDS = ("Art", "Biology", "Business", "Chemistry", "Computer science", "Economics", "Engineering",
          "Environmental science", "Geography", "Geology", "History", "Materials science", "Mathematics",
          "Medicine", "Philosophy", "Physics", "Political science", "Psychology", "Sociology")
"""MAG's 19 top-level fields (SciDocs' MAG classes; OpenAlex's level-0 concepts)."""
MESH = (("D009369", "Neoplasms"), ("D003920", "Diabetes Mellitus"), ("D006331", "Heart Diseases"),
        ("D001249", "Asthma"), ("D009103", "Multiple Sclerosis"), ("D010300", "Parkinson Disease"),
        ("D000544", "Alzheimer Disease"), ("D006973", "Hypertension"), ("D015658", "HIV Infections"),
        ("D003924", "Diabetes Mellitus, Type 2"), ("D008175", "Lung Neoplasms"))
"""MeSH disease descriptors (SciDocs' MeSH task has 11 disease classes)."""
PARTITIONS = ("2023-11-20", "2024-03-01", "2024-07-15")
_COMMON = ("we", "study", "method", "results", "show", "model", "data", "analysis", "new", "approach", "based",
           "effect", "using", "propose", "paper", "evidence", "significant", "framework", "novel", "large")


@dataclass(frozen=True)
class SyntheticGraph:
    """What the generator wrote: counts a test can check against."""

    works: int
    parts: int
    outside_references: int
    duplicated_work: str


def _words(rng: np.random.Generator, field: int, n: int) -> list[str]:
    topical = [f"{FIELDS[field].split()[0].lower()}{k}" for k in rng.integers(0, 40, n // 2)]
    common = [_COMMON[k] for k in rng.integers(0, len(_COMMON), n - n // 2)]
    words = topical + common
    rng.shuffle(words)
    return words


def _inverted_index(words: list[str]) -> dict[str, list[int]]:
    index: dict[str, list[int]] = {}
    for position, word in enumerate(words):
        index.setdefault(word, []).append(position)
    return index


def write_synthetic_snapshot(folder: str | os.PathLike[str], works: int = 300, *, source: str = "openalex",
                             seed: int = 0, references: float = 20.0, first_year: int = 2005,
                             last_year: int = 2024, works_per_part: int = 5000) -> SyntheticGraph:
    """Write a snapshot of `works` works (about `references` references each, to earlier works) under `folder`,
    in the layout of `source` ("openalex" or "s2"); the same arguments write the same bytes."""
    folder = Path(folder)
    if folder.exists() and any(folder.iterdir()):
        raise ScidocsEvalError(f"{folder}: not empty; a synthetic snapshot is written into a new or empty folder only")
    rng = np.random.default_rng(seed)
    n = works
    days = (datetime.date(last_year, 12, 31) - datetime.date(first_year, 1, 1)).days
    day = np.sort(rng.integers(0, days + 1, n))
    dates = [datetime.date(first_year, 1, 1) + datetime.timedelta(days=int(d)) for d in day]
    fitness = rng.pareto(1.5, n) + 0.05
    cumulative = np.cumsum(fitness)
    field = rng.integers(0, len(FIELDS), n)
    has_abstract = rng.random(n) > 0.1
    retracted = rng.random(n) < 0.02
    paratext = rng.random(n) < 0.02
    pubmed = (rng.random(n) < 0.4) | (field == FIELDS.index("Medicine"))
    language = np.where(rng.random(n) < 0.95, "en", "de")
    kind = rng.choice(np.array(["article", "article", "article", "book-chapter", "preprint", "dataset"]), n)
    outside = [0]

    def drawn() -> Iterator[dict]:
        for i in range(n):
            refs: set[int] = set()
            if i:
                wanted = min(i, int(rng.poisson(references)))
                picks = np.searchsorted(cumulative[:i], rng.random(wanted * 2) * cumulative[i - 1], side="right")
                refs = {int(p) for p in picks[:wanted]}
            outside_refs = [n + 1 + int(k) for k in rng.integers(0, n, int(rng.random() < 0.3))]
            outside[0] += len(outside_refs)
            mesh = []
            if pubmed[i]:
                for j, k in enumerate(rng.choice(len(MESH), 1 + int(rng.integers(0, 3)), replace=False)):
                    ui, name = MESH[int(k)]
                    mesh.append({"descriptor_ui": ui, "descriptor_name": name, "qualifier_ui": None,
                                 "qualifier_name": None, "is_major_topic": j == 0 or bool(rng.random() < 0.3)})
            yield {"i": i, "refs": sorted(refs) + outside_refs, "mesh": mesh,
                   "title": " ".join(_words(rng, int(field[i]), 8)).capitalize(),
                   "abstract": _words(rng, int(field[i]), 60) if has_abstract[i] else None}

    if source == "openalex":  # streamed: a real-sized snapshot does not fit in memory as Python objects
        parts = _write_openalex(folder, drawn(), dates, field, retracted, paratext, pubmed, language, kind, rng,
                                works_per_part)
    else:
        parts = _write_s2(folder, list(drawn()), dates, field, retracted, paratext, pubmed, language, kind, rng,
                          works_per_part)
    duplicated = f"W{1 + n // 2}" if source == "openalex" else str(1 + n // 2)
    return SyntheticGraph(n, parts, outside[0], duplicated)


def _work_id(i: int) -> str:
    return f"W{i + 1}"


class _Parts:
    """One partition's parts, written as its lines come: `works_per_part` lines a part (part_000.gz, ...)."""

    def __init__(self, folder: Path, works_per_part: int):
        self.folder, self.works_per_part = folder, works_per_part
        self.written: list[tuple[Path, int]] = []
        self.handle: gzip.GzipFile | None = None

    def write(self, line: bytes) -> None:
        if self.handle is None or self.written[-1][1] == self.works_per_part:
            self.close()
            self.folder.mkdir(parents=True, exist_ok=True)
            path = self.folder / f"part_{len(self.written):03d}.gz"
            self.handle = gzip.GzipFile(path, "wb", compresslevel=6, mtime=0)
            self.written.append((path, 0))
        self.handle.write(line)
        path, count = self.written[-1]
        self.written[-1] = (path, count + 1)

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None


def _write_parts(folder: Path, lines: list[bytes], works_per_part: int) -> list[tuple[Path, int]]:
    parts = _Parts(folder, works_per_part)
    for line in lines:
        parts.write(line)
    parts.close()
    return parts.written


def _write_openalex(folder: Path, records: Iterable[dict], dates: list[datetime.date], field: np.ndarray,
                    retracted: np.ndarray, paratext: np.ndarray, pubmed: np.ndarray, language: np.ndarray,
                    kind: np.ndarray, rng: np.random.Generator, works_per_part: int) -> int:
    """Each work's JSON without its updated_date (the last key) to a scratch file first, as `records` come; then,
    once the partitions are drawn (after every record, as the seed's sequence has them), each line with its
    updated_date to its partition's parts."""
    duplicated = len(dates) // 2
    old = b""
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile(dir=folder) as scratch:
        for record in records:
            i = record["i"]
            f = int(field[i])
            concepts = [{"id": f"https://openalex.org/C{f}", "display_name": FIELDS[f], "level": 0, "score": 0.9},
                        {"id": f"https://openalex.org/C{100 + f}", "display_name": f"{FIELDS[f]} topic", "level": 1,
                         "score": 0.5}]
            work = {
                "id": f"https://openalex.org/{_work_id(i)}", "title": record["title"],
                "display_name": record["title"],
                "abstract_inverted_index": _inverted_index(record["abstract"]) if record["abstract"] else None,
                "publication_date": dates[i].isoformat(), "publication_year": dates[i].year, "type": str(kind[i]),
                "language": str(language[i]),
                "referenced_works": [f"https://openalex.org/{_work_id(r)}" for r in record["refs"]],
                "primary_topic": {"id": f"https://openalex.org/T{f}", "display_name": f"{FIELDS[f]} topic",
                                  "score": 0.99, "subfield": {"id": f"S{f}", "display_name": f"{FIELDS[f]} (sub)"},
                                  "field": {"id": f"F{f}", "display_name": FIELDS[f]},
                                  "domain": {"id": "D1", "display_name": "Domain"}},
                "concepts": concepts, "mesh": record["mesh"] if pubmed[i] else [],
                "is_retracted": bool(retracted[i]), "is_paratext": bool(paratext[i]),
                "ids": {"openalex": f"https://openalex.org/{_work_id(i)}",
                        "pmid": f"https://pubmed.ncbi.nlm.nih.gov/{1000 + i}" if pubmed[i] else None},
            }
            if i == duplicated:  # an older version in the first partition: the later one must win
                old = orjson.dumps({**work, "title": "Superseded title", "is_retracted": True})[:-1]
            scratch.write(orjson.dumps(work)[:-1] + b"\n")  # orjson escapes a newline in a string: one a line
        partition_of = rng.integers(0, len(PARTITIONS), len(dates))
        works = folder / "data" / "works"
        writers = {p: _Parts(works / f"updated_date={p}", works_per_part) for p in PARTITIONS}
        scratch.seek(0)
        for i, body in enumerate(scratch):
            partition = PARTITIONS[int(partition_of[i])]
            if i == duplicated:
                writers[PARTITIONS[0]].write(old + f',"updated_date":"{PARTITIONS[0]}T00:00:00"}}\n'.encode())
                partition = PARTITIONS[-1]
            writers[partition].write(body[:-1] + f',"updated_date":"{partition}T00:00:00"}}\n'.encode())
    entries = []
    for parts in writers.values():
        parts.close()
        for path, count in parts.written:
            entries.append({"url": f"s3://openalex/data/works/{path.parent.name}/{path.name}",
                            "meta": {"content_length": path.stat().st_size, "record_count": count}})
    (works / "manifest").write_bytes(orjson.dumps({"entries": entries, "meta": {
        "content_length": sum(e["meta"]["content_length"] for e in entries),
        "record_count": sum(e["meta"]["record_count"] for e in entries)}}, option=orjson.OPT_INDENT_2))
    return len(entries)


def _write_s2(folder: Path, records: list[dict], dates: list[datetime.date], field: np.ndarray,
              retracted: np.ndarray, paratext: np.ndarray, pubmed: np.ndarray, language: np.ndarray,
              kind: np.ndarray, rng: np.random.Generator, works_per_part: int) -> int:
    papers, abstracts, citations = [], [], []
    for record in records:
        i = record["i"]
        corpus_id = i + 1
        fields = [{"category": FIELDS[int(field[i])], "source": "s2-fos-model"}]
        if rng.random() < 0.3:
            fields.insert(0, {"category": FIELDS[(int(field[i]) + 1) % len(FIELDS)], "source": "external"})
        papers.append(orjson.dumps({
            "corpusid": corpus_id, "externalids": {"DOI": None, "PubMed": str(1000 + i) if pubmed[i] else None,
                                                   "MAG": None, "ArXiv": None, "CorpusId": str(corpus_id)},
            "title": record["title"], "year": dates[i].year,
            "publicationdate": dates[i].isoformat() if rng.random() < 0.9 else None,
            "publicationtypes": ["JournalArticle"] if kind[i] == "article" else ["Review"],
            "s2fieldsofstudy": fields}) + b"\n")
        if record["abstract"]:
            abstracts.append(orjson.dumps({"corpusid": corpus_id, "abstract": " ".join(record["abstract"])}) + b"\n")
        for r in record["refs"]:
            cited = r + 1 if r < len(records) else None
            citations.append(orjson.dumps({"citationid": len(citations) + 1, "citingcorpusid": corpus_id,
                                           "citedcorpusid": cited, "isinfluential": bool(rng.random() < 0.1),
                                           "contexts": None, "intents": None}) + b"\n")
    count = 0
    for name, lines in (("papers", papers), ("abstracts", abstracts), ("citations", citations)):
        count += len(_write_parts(folder / name, lines, works_per_part * (20 if name == "citations" else 1)))
    return count
