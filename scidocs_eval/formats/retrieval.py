"""Retrieval datasets on disk: the BEIR layout and the Hugging Face parquet layout, read and written.

BEIR layout (a folder; what BEIR's zips and `data build --format beir` hold):

    corpus.jsonl                 {"_id", "title", "text"} per line
    queries.jsonl                {"_id", "text"} per line
    qrels/{split}.tsv            header "query-id<TAB>corpus-id<TAB>score", then one judgement per line
    top_ranked/{split}.jsonl     reranking only: {"query-id", "corpus-ids": [...]} per line (each query's
                                 candidates, MTEB's `top_ranked` subset)

HF parquet layout (a snapshot of an MTEB dataset repository on the hub): one folder per config, `corpus/`,
`queries/` (or `query/`), `default/` (or `qrels/`) and, for reranking, `top_ranked/`, each holding
`{split}-NNNNN-of-NNNNN.parquet` files with MTEB's columns (`_id`/`id`, `title`, `text`; `query-id`, `corpus-id`,
`score`; `query-id`, `corpus-ids`). A config with one split is read whatever that split is called, as MTEB does.

Every parse error names the file, the line (JSON lines and TSV files) or the row (parquet: counted from 1, as for
embeddings tables, within the file named) and the field.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from scidocs_eval.errors import InputError
from scidocs_eval.extras import require
from scidocs_eval.formats.judgements import Judgements
from scidocs_eval.formats.lines import json_lines, utf8_lines
from scidocs_eval.formats.safe_output import write_bytes_atomically

LAYOUTS = ("beir", "hf-parquet")
QRELS_HEADER = ("query-id", "corpus-id", "score")
_PARQUET_CONFIGS = {"corpus": ("corpus",), "queries": ("queries", "query"), "qrels": ("default", "qrels", "data"),
                    "top_ranked": ("top_ranked",)}


@dataclass(frozen=True)
class Document:
    """A corpus document: MTEB embeds it as ``(title + " " + text).strip()`` (only `text` when untitled)."""

    doc_id: str
    title: str
    text: str

    @property
    def mteb_text(self) -> str:
        return (self.title + " " + self.text).strip() if self.title else self.text.strip()


@dataclass(frozen=True)
class RetrievalData:
    """One split of a retrieval (or reranking) dataset.

    `qrels[q][d]` is the grade (a repeated judgement's later grade wins); `top_ranked[q]` lists the query's own
    candidates (reranking datasets; None for full-corpus retrieval); `files` are the files read.
    """

    corpus: dict[str, Document]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    top_ranked: dict[str, list[str]] | None
    layout: str
    files: tuple[Path, ...]


def detect_layout(folder: Path) -> str | None:
    """"beir", "hf-parquet", or None when `folder` holds neither layout."""
    if (folder / "corpus.jsonl").is_file() or (folder / "queries.jsonl").is_file():
        return "beir"
    if any((folder / config).is_dir() for config in _PARQUET_CONFIGS["corpus"]):
        return "hf-parquet"
    return None


def layout_files(folder: Path, split: str, reranking: bool = False) -> list[Path]:
    """The files a split of the dataset at `folder` needs, in its layout (the BEIR names when it has none)."""
    layout = detect_layout(folder) or "beir"
    if layout == "beir":
        files = [folder / "corpus.jsonl", folder / "queries.jsonl", folder / "qrels" / f"{split}.tsv"]
        return files + ([folder / "top_ranked" / f"{split}.jsonl"] if reranking else [])
    configs = ["corpus", "queries", "qrels"] + (["top_ranked"] if reranking else [])
    return [_parquet_config_dir(folder, config) or folder / _PARQUET_CONFIGS[config][0] for config in configs]


def read_retrieval_data(folder: str | os.PathLike[str], split: str = "test",
                        reranking: bool = False) -> RetrievalData:
    """Read one split of the dataset at `folder` (either layout); `reranking` also reads its `top_ranked`."""
    folder = Path(folder)
    layout = detect_layout(folder)
    if layout is None:
        raise InputError(folder, "no retrieval dataset here: expected corpus.jsonl, queries.jsonl and "
                         f"qrels/{split}.tsv (BEIR layout) or corpus/, queries/ and default/ parquet folders "
                         "(HF parquet layout)")
    files = layout_files(folder, split, reranking)
    for path in files:
        if not path.exists():
            raise InputError(path, f"not found (the {layout} layout of a retrieval dataset needs it)")
    if layout == "beir":
        corpus = _read_beir_corpus(files[0])
        queries = _read_beir_queries(files[1])
        qrels = read_qrels_tsv(files[2])
        top_ranked = _read_top_ranked_jsonl(files[3]) if reranking else None
    else:
        corpus = _parquet_corpus(files[0], split)
        queries = _parquet_queries(files[1], split)
        qrels = _parquet_qrels(files[2], split)
        top_ranked = _parquet_top_ranked(files[3], split) if reranking else None
    data = RetrievalData(corpus, queries, qrels, top_ranked, layout, tuple(files))
    check_candidates(data)
    return data


def check_candidates(data: RetrievalData) -> None:
    """An error when a candidate list names a query or document the dataset does not have (MTEB stops there)."""
    if data.top_ranked is None:
        return
    for query_id, candidates in data.top_ranked.items():
        if query_id not in data.queries:
            raise InputError(data.files[3], f"query {query_id!r} is not in {data.files[1].name}")
        unknown = next((d for d in candidates if d not in data.corpus), None)
        if unknown is not None:
            raise InputError(data.files[3], f"query {query_id!r}: candidate {unknown!r} is not in "
                             f"{data.files[0].name}")


def dangling_judgements(data: RetrievalData) -> tuple[list[str], list[str]]:
    """Judged query ids that are not in the queries file, and judged document ids not in the corpus: MTEB
    scores without them (the queries are left out, the documents can never be retrieved)."""
    queries = [q for q in data.qrels if q not in data.queries]
    documents = sorted({d for grades in data.qrels.values() for d in grades if d not in data.corpus})
    return queries, documents


def splits_of(folder: Path) -> list[str]:
    """The splits the dataset at `folder` has judgements for."""
    if detect_layout(folder) == "beir":
        return sorted(path.stem for path in (folder / "qrels").glob("*.tsv"))
    qrels = _parquet_config_dir(folder, "qrels")
    return sorted({_split_of(path) for path in qrels.glob("*.parquet")}) if qrels else []


def _split_of(path: Path) -> str:
    return path.name.split("-")[0].removesuffix(".parquet")



def _string_field(path: Path, record: Mapping, names: Sequence[str], line: int | None, required: bool = True,
                  row: int | None = None) -> str:
    """The first of the fields `names` a record has, as a string (an id may be an integer); an error naming the
    file, its line (JSON lines) or row (parquet) and the field."""
    for name in names:
        value = record.get(name)
        if value is not None:
            if isinstance(value, int) and not isinstance(value, bool) and name in ("_id", "id"):
                return str(value)
            if not isinstance(value, str):
                kind = "a string or an integer" if name in ("_id", "id") else "a string"
                raise InputError(path, f"{name!r} must be {kind}, got {type(value).__name__} {value!r}", line,
                                 row=row)
            return value
    if required:
        raise InputError(path, f"no {' or '.join(repr(n) for n in names)} field", line, row=row)
    return ""


def _unique(path: Path, seen: Mapping[str, object], key: str, line: int | None, row: int | None = None) -> None:
    if key in seen:
        raise InputError(path, f"id {key!r} appears twice", line, row=row)


def _read_beir_corpus(path: Path) -> dict[str, Document]:
    corpus: dict[str, Document] = {}
    for line, record in json_lines(path):
        doc_id = _string_field(path, record, ("_id", "id"), line)
        _unique(path, corpus, doc_id, line)
        corpus[doc_id] = Document(doc_id, _string_field(path, record, ("title",), line, required=False),
                                  _string_field(path, record, ("text",), line))
    if not corpus:
        raise InputError(path, "no documents")
    return corpus


def _read_beir_queries(path: Path) -> dict[str, str]:
    queries: dict[str, str] = {}
    for line, record in json_lines(path):
        query_id = _string_field(path, record, ("_id", "id"), line)
        _unique(path, queries, query_id, line)
        queries[query_id] = _string_field(path, record, ("text",), line)
    if not queries:
        raise InputError(path, "no queries")
    return queries


def read_qrels_tsv(path: Path) -> dict[str, dict[str, int]]:
    """BEIR's qrels TSV: an optional header `query-id corpus-id score`, then tab-separated judgements."""
    judgements = Judgements(path)
    for line, text in enumerate(utf8_lines(path), start=1):
        fields = text.rstrip("\n").rstrip("\r").split("\t")
        if not text.strip():
            continue
        if line == 1 and tuple(f.strip() for f in fields) == QRELS_HEADER:
            continue
        if len(fields) != 3:
            raise InputError(path, f"expected 3 tab-separated fields query-id, corpus-id, score, got "
                             f"{len(fields)}", line)
        query_id, doc_id, score = (f.strip() for f in fields)
        judgements.add(query_id, doc_id, score, line)
    if not judgements.grades:
        raise InputError(path, "no judgements")
    return judgements.grades


def _read_top_ranked_jsonl(path: Path) -> dict[str, list[str]]:
    top_ranked: dict[str, list[str]] = {}
    for line, record in json_lines(path):
        query_id = _string_field(path, record, ("query-id",), line)
        _unique(path, top_ranked, query_id, line)
        candidates = record.get("corpus-ids")
        if not isinstance(candidates, list) or not all(isinstance(c, str) for c in candidates):
            raise InputError(path, f"query {query_id!r}: 'corpus-ids' must be a list of strings", line)
        top_ranked[query_id] = candidates
    if not top_ranked:
        raise InputError(path, "no candidate lists")
    return top_ranked


def _parquet_config_dir(folder: Path, config: str) -> Path | None:
    return next((folder / name for name in _PARQUET_CONFIGS[config] if (folder / name).is_dir()), None)


def _parquet_rows(config_dir: Path, split: str, what: str) -> list[tuple[Path, int, dict]]:
    """(file, row number in it (from 1, as the embeddings tables count rows), row) of every row of one config's `split`
    (or of its only split), files in name order; an error when there is no row (`what`: what the rows are)."""
    pq = require("pyarrow.parquet", "reading a retrieval dataset in the HF parquet layout")

    files = sorted(config_dir.glob("*.parquet"))
    if not files:
        raise InputError(config_dir, "no .parquet files")
    splits = sorted({_split_of(path) for path in files})
    chosen = split if split in splits else splits[0] if len(splits) == 1 else None
    if chosen is None:
        raise InputError(config_dir, f"no split {split!r} among {', '.join(splits)}")
    picked = [path for path in files if _split_of(path) == chosen]
    rows: list[tuple[Path, int, dict]] = []
    for path in picked:
        try:
            table = pq.read_table(path).to_pylist()
        except Exception as error:  # pyarrow raises several types for a broken file
            raise InputError(path, f"not a readable parquet file ({error})") from None
        rows += [(path, number, row) for number, row in enumerate(table, start=1)]
    if not rows:
        raise InputError(picked[0], f"no {what} (every file of split {chosen!r} is empty)")
    return rows


def _parquet_corpus(config_dir: Path, split: str) -> dict[str, Document]:
    corpus: dict[str, Document] = {}
    for path, number, row in _parquet_rows(config_dir, split, "documents"):
        doc_id = _string_field(path, row, ("_id", "id"), None, row=number)
        _unique(path, corpus, doc_id, None, row=number)
        corpus[doc_id] = Document(doc_id, _string_field(path, row, ("title",), None, required=False, row=number),
                                  _string_field(path, row, ("text",), None, row=number))
    return corpus


def _parquet_queries(config_dir: Path, split: str) -> dict[str, str]:
    queries: dict[str, str] = {}
    for path, number, row in _parquet_rows(config_dir, split, "queries"):
        query_id = _string_field(path, row, ("_id", "id"), None, row=number)
        _unique(path, queries, query_id, None, row=number)
        queries[query_id] = _string_field(path, row, ("text",), None, row=number)
    return queries


def _parquet_qrels(config_dir: Path, split: str) -> dict[str, dict[str, int]]:
    rows = _parquet_rows(config_dir, split, "judgements")
    judgements = Judgements(rows[0][0])
    for path, number, row in rows:
        judgements.path = path
        judgements.add(_row_field(path, row, "query-id", number), _row_field(path, row, "corpus-id", number),
                       row.get("score"), row=number)
    return judgements.grades


def _parquet_top_ranked(config_dir: Path, split: str) -> dict[str, list[str]]:
    top_ranked: dict[str, list[str]] = {}
    for path, number, row in _parquet_rows(config_dir, split, "candidate lists"):
        query_id = _row_field(path, row, "query-id", number)
        candidates = row.get("corpus-ids")
        if not isinstance(candidates, list) or not all(isinstance(c, (str, int)) for c in candidates):
            raise InputError(path, f"query {query_id!r}: 'corpus-ids' must be a list of ids", row=number)
        if query_id in top_ranked:
            raise InputError(path, f"query {query_id!r} has two candidate lists", row=number)
        top_ranked[query_id] = [str(c) for c in candidates]
    return top_ranked


def _row_field(path: Path, row: Mapping, name: str, number: int) -> str:
    """An id column of an HF parquet row (a string or an integer), or an error naming the row and column."""
    value = row.get(name)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        problem = f"no {name!r} column" if name not in row else f"{name!r} is {value!r}, not an id"
        raise InputError(path, problem, row=number)
    return str(value)


def write_beir(folder: str | os.PathLike[str], corpus: Sequence[Document], queries: Mapping[str, str],
               qrels: Mapping[str, Mapping[str, Mapping[str, int]]],
               top_ranked: Mapping[str, Mapping[str, Sequence[str]]] | None = None) -> list[Path]:
    """Write a dataset in the BEIR layout into `folder`, file by file atomically; `qrels` (and `top_ranked`) map
    each split to its judgements (candidate lists). Returns the files written."""
    folder = Path(folder)
    contents = {
        folder / "corpus.jsonl": b"".join(orjson.dumps({"_id": d.doc_id, "title": d.title, "text": d.text}) + b"\n"
                                          for d in corpus),
        folder / "queries.jsonl": b"".join(orjson.dumps({"_id": q, "text": text}) + b"\n"
                                           for q, text in queries.items()),
    }
    for split, judgements in qrels.items():
        contents[folder / "qrels" / f"{split}.tsv"] = ("\t".join(QRELS_HEADER) + "\n" + "".join(
            f"{q}\t{d}\t{grade}\n" for q, grades in judgements.items() for d, grade in grades.items())).encode()
    for split, lists in (top_ranked or {}).items():
        contents[folder / "top_ranked" / f"{split}.jsonl"] = b"".join(
            orjson.dumps({"query-id": q, "corpus-ids": list(c)}) + b"\n" for q, c in lists.items())
    for path, data in contents.items():
        write_bytes_atomically(path, data, rows=None)
    return list(contents)
