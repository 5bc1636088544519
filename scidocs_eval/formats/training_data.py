"""A model's training data, read from the formats it comes in, as what a contamination audit needs: which papers
the model saw (by id, with their text where the data has it), in which role, and which (query, positive) pairs.

Accepted sources (`read_training_source` tells them apart by what they are):

- a SPECTER training folder: `data.json` {query: {candidate: {"count": c}}} (the highest count of a query's
  candidates marks its positives, lower counts its hard negatives), `metadata.json` {paper_id: {title,
  abstract}} (every paper in it may be drawn as a random negative: role "corpus") and `train.txt` / `val.txt`
  (the queries trained on; without them every query of data.json counts). `test.txt` is not read: SPECTER does
  not train on it. A folder with only `metadata.json` is a corpus.
- a `data.json` or `metadata.json` file on its own (told apart by their records).
- SciRepEval-style triplets: a JSON array, or JSON lines, of {"query", "pos", "neg"}, each an id or an object with
  an id (`paper_id`, `sha`, `doc_id`, `id` and/or `corpus_id`: every one given is an id of the paper) and
  optionally `title` and `abstract`.
- papers: JSON lines {paper_id, title, abstract} (role "corpus").
- a list of paper ids: a text file, one id a line (role "corpus").
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from scidocs_eval.errors import InputError
from scidocs_eval.formats.corpus import metadata_record, read_paper_records
from scidocs_eval.formats.lines import utf8_lines
from scidocs_eval.formats.row_schema import Field, RowChecker, RowSchema, file_kind, reads
from scidocs_eval.formats.suite import METADATA

QUERY, POSITIVE, NEGATIVE, CORPUS = 1, 2, 4, 8
ROLE_NAMES = {QUERY: "query", POSITIVE: "positive", NEGATIVE: "negative", CORPUS: "corpus paper"}
"""Roles a paper had in training, as bit flags (one paper may have several)."""
ID_KEYS = ("paper_id", "sha", "doc_id", "id", "corpus_id")
"""Keys naming a paper's id in a triplet's paper object; every one present is an id of that paper."""
TRIPLET_KEYS = ("query", "pos", "neg")
SPECTER_FILES = ("data.json", "metadata.json", "train.txt", "val.txt")


def role_names(flags: int) -> list[str]:
    """The names of the roles set in `flags`, in ROLE_NAMES order."""
    return [name for flag, name in ROLE_NAMES.items() if flags & flag]


@dataclass
class TrainingData:
    """What a model was trained on.

    `roles[id]`: the role flags of every paper id seen (aliases included); `texts[id]`: (title, abstract) of the
    papers whose text the data holds (one entry per paper, under its first id); `positives[query]`: the ids that
    were the query's positives; `sources`: per source read, its path, kind and counts.
    """

    roles: dict[str, int] = field(default_factory=dict)
    texts: dict[str, tuple[str, str]] = field(default_factory=dict)
    positives: dict[str, set[str]] = field(default_factory=dict)
    sources: list[dict[str, Any]] = field(default_factory=list)

    def mark(self, ids: Iterable[str], role: int) -> None:
        roles = self.roles
        for paper_id in ids:
            roles[paper_id] = roles.get(paper_id, 0) | role

    def add_text(self, paper_id: str, title: str, abstract: str) -> None:
        if (title or abstract) and paper_id not in self.texts:
            self.texts[paper_id] = (title, abstract)

    def add_pair(self, query: str, positive: str) -> None:
        self.positives.setdefault(query, set()).add(positive)

    @property
    def pair_count(self) -> int:
        return sum(map(len, self.positives.values()))


def read_training_data(paths: Iterable[str | os.PathLike[str]]) -> TrainingData:
    """Every source of `paths` read into one TrainingData (see the module docstring for the formats)."""
    data = TrainingData()
    for path in paths:
        read_training_source(path, data)
    if not data.roles:
        raise InputError(", ".join(str(p) for p in paths), "no training papers in the given sources")
    return data


def read_training_source(path: str | os.PathLike[str], data: TrainingData) -> None:
    """Add one source (a SPECTER folder, data.json, metadata.json, triplets, papers or an id list) to `data`."""
    path = Path(path)
    before = (len(data.roles), data.pair_count)
    if path.is_dir():
        kind = _read_specter_folder(path, data)
    elif not path.is_file():
        raise InputError(path, "training data not found (give a SPECTER folder, data.json, metadata.json, "
                         "triplets JSON/JSON lines, papers JSON lines or a text file of paper ids)")
    else:
        kind = _read_file(path, data)
    data.sources.append({"path": str(path), "kind": kind, "new_ids": len(data.roles) - before[0],
                         "new_pairs": data.pair_count - before[1]})


def read_json_object(path: str | os.PathLike[str], missing: str) -> dict[str, Any]:
    """The JSON object of the file at `path` (its rows checked by the caller, against the file's kind); an absent
    file, malformed JSON or another value is one line naming the file (`missing`: what the folder should hold)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, f"training file not found ({missing})")
    value = _json(path)
    if value is _NOT_JSON:
        raise InputError(path, "malformed JSON (expected a JSON object)")
    if not isinstance(value, dict):
        raise InputError(path, f"expected a JSON object, got a JSON {type(value).__name__}")
    return value


def _json(path: Path) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError:
        return _NOT_JSON


_NOT_JSON = object()


def _read_file(path: Path, data: TrainingData) -> str:
    whole = _json(path)
    if isinstance(whole, dict) and whole and "paper_id" not in whole and not any(key in whole for key in TRIPLET_KEYS):
        first = next(iter(whole.values()))
        if isinstance(first, dict) and first and all(isinstance(v, dict) and "count" in v for v in first.values()):
            _read_counts(path, whole, None, data)
            return "specter data.json"
        _read_metadata(path, whole, data)
        return "metadata"
    if isinstance(whole, list):
        checker = TRIPLETS.checker(path)
        for index, record in enumerate(whole):
            _read_triplet(path, record, data, f"item {index}", None, checker)
        return "triplets"
    if whole is not _NOT_JSON and not isinstance(whole, dict):
        raise InputError(path, f"a JSON {type(whole).__name__}; expected triplets, papers or SPECTER files")
    lines = path.read_bytes().splitlines()
    first = next((line for line in lines if line.strip()), b"")
    try:
        first_record = orjson.loads(first)
    except orjson.JSONDecodeError:
        first_record = None
    if isinstance(first_record, dict) and any(key in first_record for key in TRIPLET_KEYS):
        checker = TRIPLETS.checker(path)
        for number, line in enumerate(lines, start=1):
            if line.strip():
                try:
                    record = orjson.loads(line)
                except orjson.JSONDecodeError as error:
                    raise InputError(path, f"malformed JSON ({error})", number) from None
                _read_triplet(path, record, data, None, number, checker)
        return "triplets"
    if isinstance(first_record, dict):
        for _, record in read_paper_records(path):
            data.add_text(record["paper_id"], record["title"], record["abstract"])
            data.mark([record["paper_id"]], CORPUS)
        return "papers"
    ids = read_id_list(path)
    data.mark(ids, CORPUS)
    return "paper ids"


ID_LIST = file_kind(RowSchema("id list", "lines, one id a line", (Field("id", "id"),), cells=True,
                           example=({"id": "q1"}, {"id": "q2"})))
"""SPECTER's train.txt / val.txt / test.txt, or a list of the papers a model saw: one paper id a line (a blank line
is no row)."""


@reads(ID_LIST)
def read_id_list(path: str | os.PathLike[str]) -> list[str]:
    """The ids of an id list (`ID_LIST`), in file order; a line with spaces inside is an error naming it."""
    ids = []
    checker = ID_LIST.checker(path)
    for number, line in enumerate(utf8_lines(path), start=1):
        text = line.strip()
        if not text:
            continue
        if len(text.split()) != 1:
            raise InputError(path, f"expected one paper id a line (field 'id'), got {text[:60]!r}", number)
        ids.append(checker.row({"id": text}, number)["id"])
    return ids


def _read_metadata(path: Path, whole: dict, data: TrainingData) -> None:
    checker = METADATA.checker(path)
    for key, value in whole.items():
        record = metadata_record(path, key, value, checker)
        data.add_text(key, record["title"], record["abstract"])
        data.mark([key], CORPUS)


def _read_counts(path: Path, whole: dict, queries: set[str] | None, data: TrainingData) -> None:
    """data.json: each trained query (all of them when `queries` is None), its positives (the highest count) and
    hard negatives (lower counts)."""
    for query, counts in specter_counts(path, whole).items():
        if queries is not None and query not in queries:
            continue
        data.mark([query], QUERY)
        top = max(counts.values(), default=0)
        for candidate, count in counts.items():
            if count == top:
                data.mark([candidate], POSITIVE)
                data.add_pair(query, candidate)
            else:
                data.mark([candidate], NEGATIVE)


def specter_counts(path: str | os.PathLike[str], whole: object) -> dict[str, dict[str, int]]:
    """{query: {candidate: count}} of SPECTER's data.json (parsed: `whole`), every row checked against
    `SPECTER_COUNTS`: the one reading of the file, for the audit and for training (`training.triplets`)."""
    if not isinstance(whole, dict):
        raise InputError(path, "expected a JSON object {query: {candidate: {\"count\": c}}}")
    checker = SPECTER_COUNTS.checker(path)
    counts = {}
    for query, candidates in whole.items():
        if not isinstance(candidates, dict):
            raise InputError(path, f"query {query!r}: expected {{candidate_id: {{\"count\": c}}}}")
        counts[query] = {candidate: checker.row(value, where=f"query {query!r}, candidate {candidate!r}")["count"]
                         for candidate, value in candidates.items()}
    return counts


SPECTER_COUNTS = file_kind(RowSchema("SPECTER data.json", "a JSON object {query: {candidate: row}}", (
    Field("count", "int"),), example=({"count": 5}, {"count": 1})))
"""SPECTER's training pairs: how often each candidate was co-viewed, co-cited... with its query (an integer, never
a float truncated)."""


@reads(SPECTER_COUNTS)
def _read_counts_file(path: str | os.PathLike[str]) -> TrainingData:
    data = TrainingData()
    _read_file(Path(path), data)
    return data


def _read_specter_folder(folder: Path, data: TrainingData) -> str:
    present = [name for name in SPECTER_FILES if (folder / name).is_file()]
    if not {"data.json", "metadata.json"} & set(present):
        raise InputError(folder, "not a SPECTER training folder (no data.json or metadata.json in it)")
    if "metadata.json" in present:
        whole = _json(folder / "metadata.json")
        if not isinstance(whole, dict):
            raise InputError(folder / "metadata.json", "expected a JSON object {paper_id: {title, abstract}}")
        _read_metadata(folder / "metadata.json", whole, data)
    if "data.json" not in present:
        return "specter folder (metadata.json only)"
    listed = [name for name in ("train.txt", "val.txt") if name in present]
    queries = {q for name in listed for q in read_id_list(folder / name)} if listed else None
    whole = _json(folder / "data.json")
    if whole is _NOT_JSON:
        raise InputError(folder / "data.json", "not JSON (expected a JSON object {query: {candidate: {count}}})")
    _read_counts(folder / "data.json", whole, queries, data)
    if queries:
        data.mark(queries, QUERY)
    return f"specter folder ({', '.join(present)})"


TRIPLET_PAPER = RowSchema("triplet paper", "an object", (
    *(Field(key, "id", required=False, null=True) for key in ID_KEYS),
    Field("title", "text", required=False, null=True), Field("abstract", "text", required=False, null=True)))
TRIPLETS = file_kind(RowSchema("triplets", "JSON lines (or a JSON array)", (
    Field("query", ("id", "object"), of=TRIPLET_PAPER), Field("pos", ("id", "object"), of=TRIPLET_PAPER),
    Field("neg", ("id", "object"), of=TRIPLET_PAPER, required=False, null=True)), example=(
    {"query": {"sha": "a1", "title": "A", "abstract": "B", "corpus_id": 1}, "pos": "b2", "neg": {"paper_id": "c3"}},
    {"query": {"sha": "d4", "title": "C", "abstract": None, "corpus_id": 2}, "pos": "e5", "neg": None})))
"""SciRepEval-style triplets: each member a paper id or a paper object with at least one id."""


def _paper_ids(path: Path, value: str | dict, where: str, line: int | None) -> tuple[list[str], str, str]:
    """(ids, title, abstract) of one triplet member (checked against `TRIPLETS`): an id, or an object with ids and
    text."""
    if isinstance(value, str):
        return [value.strip()], "", ""
    ids = list(dict.fromkeys(value[key].strip() for key in ID_KEYS if value.get(key) is not None))
    if not ids:
        raise InputError(path, f"{where}: expected a paper id or an object with one of {', '.join(ID_KEYS)}", line)
    return ids, value["title"] or "", value["abstract"] or ""


@reads(TRIPLETS)
def _read_triplets_file(path: str | os.PathLike[str]) -> TrainingData:
    data = TrainingData()
    _read_file(Path(path), data)
    return data


def _read_triplet(path: Path, record: Any, data: TrainingData, where: str | None, line: int | None,
                  checker: RowChecker) -> None:
    checked = checker.row(record, line, where=where or "")
    members = {}
    for key, role in (("query", QUERY), ("pos", POSITIVE), ("neg", NEGATIVE)):
        if checked[key] is None:
            continue
        ids, title, abstract = _paper_ids(path, checked[key], f"{where + ', ' if where else ''}{key!r}", line)
        data.mark(ids, role)
        data.add_text(ids[0], title, abstract)
        members[key] = ids
    for query in members["query"]:
        for positive in members["pos"]:
            data.add_pair(query, positive)
