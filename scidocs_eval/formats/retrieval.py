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

Each file kind's rows are declared once (`BEIR_CORPUS`, ..., `PARQUET_TOP_RANKED`: `formats.row_schema`); every parse
error names the file, the line (JSON lines and TSV files) or the row (parquet: counted from 1, as for embeddings
tables, within the file named) and the field.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from scidocs_eval.errors import InputError
from scidocs_eval.extras import require
from scidocs_eval.formats.judgements import Judgements
from scidocs_eval.formats.lines import json_lines, utf8_lines
from scidocs_eval.formats.row_schema import Field, RowSchema, check_table, file_kind, reads
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
    candidates (reranking datasets; None for full-corpus retrieval); `files` are the files read. `document_ids`
    are the corpus' ids in file order; `corpus` their documents, None when the corpus was read without its texts
    (`read_retrieval_data(texts=False)`).
    """

    corpus: dict[str, Document] | None
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    top_ranked: dict[str, list[str]] | None
    layout: str
    files: tuple[Path, ...]
    document_ids: tuple[str, ...] = ()


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


def read_retrieval_data(folder: str | os.PathLike[str], split: str = "test", reranking: bool = False,
                        texts: bool = True) -> RetrievalData:
    """Read one split of the dataset at `folder` (either layout); `reranking` also reads its `top_ranked`;
    `texts=False` reads the corpus' ids only (its `corpus` is then None: the vectors are given)."""
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
    corpus: dict[str, Document] | None = None
    if layout == "beir":
        if texts:
            corpus = _read_beir_corpus(files[0])
        document_ids = tuple(corpus) if corpus is not None else _read_beir_corpus_ids(files[0])
        queries = _read_beir_queries(files[1])
        qrels = read_qrels_tsv(files[2])
        top_ranked = _read_top_ranked_jsonl(files[3]) if reranking else None
    else:
        if texts:
            corpus = _parquet_corpus(files[0], split)
        document_ids = tuple(corpus) if corpus is not None else _parquet_corpus_ids(files[0], split)
        queries = _parquet_queries(files[1], split)
        qrels = _parquet_qrels(files[2], split)
        top_ranked = _parquet_top_ranked(files[3], split) if reranking else None
    data = RetrievalData(corpus, queries, qrels, top_ranked, layout, tuple(files), document_ids)
    check_candidates(data)
    return data


def check_candidates(data: RetrievalData) -> None:
    """An error when a candidate list names a query or document the dataset does not have (MTEB stops there)."""
    if data.top_ranked is None:
        return
    documents = set(data.document_ids)
    for query_id, candidates in data.top_ranked.items():
        if query_id not in data.queries:
            raise InputError(data.files[3], f"query {query_id!r} is not in {data.files[1].name}")
        unknown = next((d for d in candidates if d not in documents), None)
        if unknown is not None:
            raise InputError(data.files[3], f"query {query_id!r}: candidate {unknown!r} is not in "
                             f"{data.files[0].name}")


def dangling_judgements(data: RetrievalData) -> tuple[list[str], list[str]]:
    """Judged query ids that are not in the queries file, and judged document ids not in the corpus: MTEB
    scores without them (the queries are left out, the documents can never be retrieved)."""
    corpus = set(data.document_ids)
    queries = [q for q in data.qrels if q not in data.queries]
    documents = sorted({d for grades in data.qrels.values() for d in grades if d not in corpus})
    return queries, documents


def splits_of(folder: Path) -> list[str]:
    """The splits the dataset at `folder` has judgements for."""
    if detect_layout(folder) == "beir":
        return sorted(path.stem for path in (folder / "qrels").glob("*.tsv"))
    qrels = _parquet_config_dir(folder, "qrels")
    return sorted({_split_of(path) for path in qrels.glob("*.parquet")}) if qrels else []


def _split_of(path: Path) -> str:
    return path.name.split("-")[0].removesuffix(".parquet")



CORPUS_FIELDS = (Field("_id", "id", aliases=("id",)), Field("title", "text", required=False, null=True),
                 Field("text", "text"))
QUERY_FIELDS = (Field("_id", "id", aliases=("id",)), Field("text", "text"))
QRELS_FIELDS = (Field("query-id", "id"), Field("corpus-id", "id"), Field("score", "grade"))
TOP_RANKED_FIELDS = (Field("query-id", "id"), Field("corpus-ids", "id", many=True))
_CORPUS_EXAMPLE = ({"_id": "d1", "title": "A title", "text": "An abstract."}, {"_id": "d2", "title": "",
                                                                               "text": "Another."})
_QUERY_EXAMPLE = ({"_id": "q1", "text": "a query"}, {"_id": "q2", "text": "another query"})
_QRELS_EXAMPLE = ({"query-id": "q1", "corpus-id": "d1", "score": 1}, {"query-id": "q2", "corpus-id": "d2", "score": 2})
_TOP_RANKED_EXAMPLE = ({"query-id": "q1", "corpus-ids": ["d1", "d2"]}, {"query-id": "q2", "corpus-ids": ["d2"]})
BEIR_CORPUS = file_kind(RowSchema("BEIR corpus", "JSON lines", CORPUS_FIELDS, _CORPUS_EXAMPLE))
BEIR_QUERIES = file_kind(RowSchema("BEIR queries", "JSON lines", QUERY_FIELDS, _QUERY_EXAMPLE))
BEIR_QRELS = file_kind(RowSchema("BEIR qrels", "TSV with a header", QRELS_FIELDS, _QRELS_EXAMPLE, cells=True))
BEIR_TOP_RANKED = file_kind(RowSchema("BEIR candidate lists", "JSON lines", TOP_RANKED_FIELDS, _TOP_RANKED_EXAMPLE))
PARQUET_CORPUS = file_kind(RowSchema("HF parquet corpus", "parquet", CORPUS_FIELDS, _CORPUS_EXAMPLE))
PARQUET_QUERIES = file_kind(RowSchema("HF parquet queries", "parquet", QUERY_FIELDS, _QUERY_EXAMPLE))
PARQUET_QRELS = file_kind(RowSchema("HF parquet qrels", "parquet", QRELS_FIELDS, _QRELS_EXAMPLE))
_BEIR_CORPUS_IDS = RowSchema("BEIR corpus", "JSON lines", CORPUS_FIELDS[:1])
_PARQUET_CORPUS_IDS = RowSchema("HF parquet corpus", "parquet", CORPUS_FIELDS[:1])
"""a corpus read for its ids alone (the vectors are given): the other fields are not checked, as they are not read."""
PARQUET_TOP_RANKED = file_kind(RowSchema("HF parquet candidate lists", "parquet", TOP_RANKED_FIELDS,
                                         _TOP_RANKED_EXAMPLE))


def _unique(path: Path, seen: Mapping[str, object], key: str, line: int | None, row: int | None = None) -> None:
    if key in seen:
        raise InputError(path, f"id {key!r} appears twice", line, row=row)


def _documents(path: Path, rows: Iterable[tuple[int | None, int | None, dict]]) -> dict[str, Document]:
    corpus: dict[str, Document] = {}
    for line, row, record in rows:
        _unique(path, corpus, record["_id"], line, row)
        corpus[record["_id"]] = Document(record["_id"], record["title"] or "", record["text"])
    if not corpus:
        raise InputError(path, "no documents")
    return corpus


def _document_ids(path: Path, rows: Iterable[tuple[int | None, int | None, dict]]) -> tuple[str, ...]:
    """The corpus' ids alone, in file order (checked as `_documents` checks them)."""
    seen: dict[str, None] = {}
    for line, row, record in rows:
        _unique(path, seen, record["_id"], line, row)
        seen[record["_id"]] = None
    if not seen:
        raise InputError(path, "no documents")
    return tuple(seen)


def _queries(path: Path, rows: Iterable[tuple[int | None, int | None, dict]]) -> dict[str, str]:
    queries: dict[str, str] = {}
    for line, row, record in rows:
        _unique(path, queries, record["_id"], line, row)
        queries[record["_id"]] = record["text"]
    if not queries:
        raise InputError(path, "no queries")
    return queries


def _candidate_lists(path: Path, rows: Iterable[tuple[int | None, int | None, dict]]) -> dict[str, list[str]]:
    top_ranked: dict[str, list[str]] = {}
    for line, row, record in rows:
        if record["query-id"] in top_ranked:
            raise InputError(path, f"query {record['query-id']!r} has two candidate lists", line, row=row)
        top_ranked[record["query-id"]] = record["corpus-ids"]
    if not top_ranked:
        raise InputError(path, "no candidate lists")
    return top_ranked


def _json_rows(path: Path, schema: RowSchema) -> Iterator[tuple[int | None, int | None, dict]]:
    checker = schema.checker(path)
    return ((line, None, checker.row(record, line)) for line, record in json_lines(path))


@reads(BEIR_CORPUS)
def _read_beir_corpus(path: Path) -> dict[str, Document]:
    return _documents(path, _json_rows(path, BEIR_CORPUS))


def _read_beir_corpus_ids(path: Path) -> tuple[str, ...]:
    """The corpus' ids alone, in file order (its texts are neither kept nor checked). The ids of a large corpus
    are all a run with its vectors given reads of it: they are taken in one pass and checked for repeats at once,
    and only a corpus with a repeat is read again, by `_document_ids`, to name the line."""
    checker = _BEIR_CORPUS_IDS.checker(path)
    ids = [checker.row(record, line)["_id"] for line, record in json_lines(path)]
    if len(set(ids)) != len(ids) or not ids:
        return _document_ids(path, _json_rows(path, _BEIR_CORPUS_IDS))
    return tuple(ids)


@reads(BEIR_QUERIES)
def _read_beir_queries(path: Path) -> dict[str, str]:
    return _queries(path, _json_rows(path, BEIR_QUERIES))


@reads(BEIR_QRELS)
def read_qrels_tsv(path: Path) -> dict[str, dict[str, int]]:
    """BEIR's qrels TSV: an optional header `query-id corpus-id score`, then tab-separated judgements."""
    judgements = Judgements(path)
    checker = BEIR_QRELS.checker(path)
    for line, text in enumerate(utf8_lines(path), start=1):
        fields = text.rstrip("\n").rstrip("\r").split("\t")
        if not text.strip():
            continue
        if line == 1 and tuple(f.strip() for f in fields) == QRELS_HEADER:
            continue
        if len(fields) != 3:
            raise InputError(path, f"expected 3 tab-separated fields query-id, corpus-id, score, got "
                             f"{len(fields)}", line)
        record = checker.row(dict(zip(QRELS_HEADER, (f.strip() for f in fields))), line)
        judgements.add(record["query-id"], record["corpus-id"], record["score"], line)
    if not judgements.grades:
        raise InputError(path, "no judgements")
    return judgements.grades


@reads(BEIR_TOP_RANKED)
def _read_top_ranked_jsonl(path: Path) -> dict[str, list[str]]:
    return _candidate_lists(path, _json_rows(path, BEIR_TOP_RANKED))


def _parquet_config_dir(folder: Path, config: str) -> Path | None:
    return next((folder / name for name in _PARQUET_CONFIGS[config] if (folder / name).is_dir()), None)


def _parquet_rows(config_dir: Path, split: str, what: str, schema: RowSchema,
                  columns: Sequence[str] | None = None) -> list[tuple[Path, int, dict]]:
    """(file, row number in it (from 1, as the embeddings tables count rows), row checked against `schema`) of every
    row of one config's `split` (or of its only split), files in name order; an error when there is no row (`what`:
    what the rows are). `columns`: read only those of them a file has (None: every column)."""
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
            names = None if columns is None else [c for c in columns if c in pq.read_schema(path).names]
            table = pq.read_table(path, columns=names)
        except Exception as error:  # pyarrow raises several types for a broken file
            raise InputError(path, f"not a readable parquet file ({error})") from None
        rows += [(path, number, row) for number, row in enumerate(check_table(path, table, schema), start=1)]
    if not rows:
        raise InputError(picked[0], f"no {what} (every file of split {chosen!r} is empty)")
    return rows


def _parquet_records(config_dir: Path, split: str, what: str, schema: RowSchema,
                     columns: Sequence[str] | None = None) -> tuple[Path, list[tuple[int | None, int | None, dict]]]:
    rows = _parquet_rows(config_dir, split, what, schema, columns)
    return rows[0][0], [(None, number, row) for _, number, row in rows]


def _parquet_corpus(config_dir: Path, split: str) -> dict[str, Document]:
    return _documents(*_parquet_records(config_dir, split, "documents", PARQUET_CORPUS))


def _parquet_corpus_ids(config_dir: Path, split: str) -> tuple[str, ...]:
    """The corpus' ids alone (only the id column is read), in row order."""
    return _document_ids(*_parquet_records(config_dir, split, "documents", _PARQUET_CORPUS_IDS,
                                           columns=CORPUS_FIELDS[0].names))


def _parquet_queries(config_dir: Path, split: str) -> dict[str, str]:
    return _queries(*_parquet_records(config_dir, split, "queries", PARQUET_QUERIES))


def _parquet_qrels(config_dir: Path, split: str) -> dict[str, dict[str, int]]:
    rows = _parquet_rows(config_dir, split, "judgements", PARQUET_QRELS)
    judgements = Judgements(rows[0][0])
    for path, number, row in rows:
        judgements.path = path
        judgements.add(row["query-id"], row["corpus-id"], row["score"], row=number)
    return judgements.grades


def _parquet_top_ranked(config_dir: Path, split: str) -> dict[str, list[str]]:
    return _candidate_lists(*_parquet_records(config_dir, split, "candidate lists", PARQUET_TOP_RANKED))


def _one_parquet_file(read: Callable[[Path, str], object]) -> Callable[[str], object]:
    """A reader of one parquet file of a config (the fuzz test's view of the config readers)."""
    return lambda path: read(Path(path).parent, _split_of(Path(path)))


for _schema, _read in ((PARQUET_CORPUS, _parquet_corpus), (PARQUET_QUERIES, _parquet_queries),
                       (PARQUET_QRELS, _parquet_qrels), (PARQUET_TOP_RANKED, _parquet_top_ranked)):
    reads(_schema)(_one_parquet_file(_read))


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
