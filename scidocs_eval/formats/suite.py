"""A SciDocs data directory in the official layout, read lazily (each file on first use, then kept).

Layout (see the README's "Data layout"):

    paper_metadata_{mag_mesh,view_cite_read,recomm}.json   {paper_id: {paper_id, title, abstract, ...}}
    {mag,mesh}/{train,val,test}.csv                         header, then paper_id,class_label
    {mag,mesh}/class_names.json                             optional {class_label: name} (figures use it)
    {coview,coread,cite,cocite}/{val,test}.qrel             "query_id 0 candidate_id relevance"
    recomm/{train,val,test}.csv                             header, then query_id,clicked_id,"id1,id2,..."
    recomm/propensity_scores.json                           {"scores": [p_1, p_2, ...]}
"""

from __future__ import annotations

import csv
import hashlib
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import orjson

from scidocs_eval.errors import InputError
from scidocs_eval.formats.judgements import Judgements
from scidocs_eval.formats.lines import utf8_lines
from scidocs_eval.formats.row_schema import Field, RowSchema, file_kind, reads
from scidocs_eval.formats.scirepeval import read_meta
from scidocs_eval.lazy_modules import lazy_module

np = lazy_module("numpy", __name__)

log = logging.getLogger("scidocs_eval")

METADATA_FILES = {
    "mag_mesh": "paper_metadata_mag_mesh.json",
    "view_cite_read": "paper_metadata_view_cite_read.json",
    "recomm": "paper_metadata_recomm.json",
}
SYNTHETIC_MARKER = "SYNTHETIC.md"
CLASS_NAMES_FILE = "class_names.json"
SPLITS = ("train", "val", "test")
METADATA = file_kind(RowSchema("SciDocs metadata", "a JSON object {paper_id: row}", (
    Field("paper_id", "id", required=False), Field("title", "text", required=False, null=True),
    Field("abstract", "text", required=False, null=True),
    *(Field(name, "id", required=False, null=True, many=True, empty=True)
      for name in ("authors", "references", "cited_by"))), keep_other=True, example=(
    {"paper_id": "p1", "title": "A title", "abstract": "An abstract.", "authors": ["a1"], "references": ["p2"],
     "cited_by": ["p3"]},
    {"paper_id": "p2", "title": "Another", "abstract": None, "authors": ["a2"], "references": [], "cited_by": ["p1"]})))
"""a paper's record in the metadata files (null: absent; the record's other fields are kept as given)."""
IMPRESSIONS = file_kind(RowSchema("SciDocs recomm impressions", "CSV with a header", (
    Field("query_id", "id"), Field("clicked_id", "id"), Field("shown", "text")), cells=True,
    example=({"query_id": "q1", "clicked_id": "p2", "shown": "p1,p2,p3"},
             {"query_id": "q2", "clicked_id": "p4", "shown": "p4,p5"})))
"""recomm's impressions: the papers shown (comma-separated, in display order), the clicked one among them."""
CLASS_LABELS = file_kind(RowSchema("SciDocs class labels", "CSV with a header", (
    Field("paper_id", "id"), Field("class_label", "int")), cells=True,
    example=({"paper_id": "p1", "class_label": 0}, {"paper_id": "p2", "class_label": 1})))
QRELS = file_kind(RowSchema("SciDocs qrels", "space-separated lines", (
    Field("query_id", "id"), Field("iteration", "text"), Field("candidate_id", "id"), Field("relevance", "grade")),
    cells=True, example=({"query_id": "q1", "iteration": "0", "candidate_id": "p1", "relevance": 1},
                         {"query_id": "q1", "iteration": "0", "candidate_id": "p2", "relevance": 0})))
PROPENSITIES = file_kind(RowSchema("SciDocs recomm propensities", "one JSON object", (
    Field("scores", "number", many=True),), example=({"scores": [1.0, 0.62, 0.5]},)))
"""recomm's position bias: the propensity of each display position, from the first (each a positive number)."""
CLASS_NAMES = file_kind(RowSchema("SciDocs class names", "a JSON object {class_label: name}", (
    Field("class_label", "int"), Field("name", "text")),
    example=({"class_label": 0, "name": "Biology"}, {"class_label": 1, "name": "Physics"})))
"""a classification task's optional names of its classes (figures' legends): each key an integer label."""
LABELS_HEADER = "paper_id,class_label"
IMPRESSIONS_HEADER = "query_id,clicked_id,shown"


@dataclass(frozen=True)
class Paper:
    """A paper as the adapters see it: `extra` holds the further fields a task embeds after the abstract, in order
    (SciRepEval's Search: venue and year), empty for most."""

    paper_id: str
    title: str
    abstract: str
    extra: tuple[str, ...] = ()

    @property
    def has_text(self) -> bool:
        return bool(self.title.strip() or self.abstract.strip() or any(part.strip() for part in self.extra))


def paper_of_record(paper_id: str, record: dict, extra_fields: Sequence[str] = ()) -> Paper:
    """The `Paper` of a metadata record; each field of `extra_fields` the record has (not empty) becomes a part of
    `extra`, as text (SciRepEval joins `str(record[field])` for every field whose value is truthy)."""
    return Paper(str(paper_id), record.get("title") or "", record.get("abstract") or "",
                 tuple(str(record[name]) for name in extra_fields if record.get(name)))


@dataclass(frozen=True)
class LabelledPapers:
    """One split of a classification task: `ids[i]` has class `labels[i]` (int64, shape (n,))."""

    ids: list[str]
    labels: np.ndarray


@dataclass(frozen=True)
class Qrels:
    """One split of a ranking task.

    `candidates[q]` lists the query's candidates in file order, each once; `relevance[q][c]` is the grade
    (a pair judged twice with different grades keeps the later grade, as the official evaluator's dict and
    pytrec_eval's parser do: the official qrels format's rule, counted in `conflicts` and warned about as
    `pair-judged-twice`); `repeated` counts lines that repeat a pair with its grade.
    """

    candidates: dict[str, list[str]]
    relevance: dict[str, dict[str, int]]
    repeated: int
    conflicts: int = 0


@dataclass(frozen=True)
class Impression:
    """One recommendation impression: the papers shown for `query_id`, in display order, and the click."""

    query_id: str
    clicked_id: str
    shown: tuple[str, ...]
    line: int

    @property
    def item_id(self) -> str:
        """The impression's id in per-item results: "line:query_id" (a query may have several impressions)."""
        return f"{self.line}:{self.query_id}"

    @property
    def clicked_position(self) -> int:
        """1-based display position of the clicked paper."""
        return self.shown.index(self.clicked_id) + 1


class Suite:
    """A SciDocs data directory. Nothing is read until asked for; every parse error names file and line."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)
        self._metadata: dict[str, dict[str, dict]] = {}
        self._queries: dict[str, list[str]] = {}
        self._impressions: dict[str, tuple[list[Impression], list[InputError]]] = {}

    def __repr__(self) -> str:
        return f"Suite({str(self.root)!r})"

    @property
    def is_synthetic(self) -> bool:
        """True for a generated suite (the demo, or one built from it): it carries a SYNTHETIC.md marker, or one of
        its task folders does (a task folder of a suite built from the demo, copied into another suite)."""
        return (self.root / SYNTHETIC_MARKER).exists() or any(
            (folder / SYNTHETIC_MARKER).exists() for folder in self.root.glob("*/") if folder.is_dir())

    def path(self, relative: str) -> Path:
        return self.root / relative

    def has(self, relative: str) -> bool:
        return self.path(relative).is_file()

    def require(self, relative: str, expected: str) -> Path:
        path = self.path(relative)
        if not path.is_file():
            raise InputError(path, f"file not found (expected {expected})")
        return path

    def metadata(self, metadata_file: str) -> dict[str, dict]:
        """``{paper_id: record}`` of one metadata file (a key of METADATA_FILES or a suite-relative file)."""
        relative = METADATA_FILES.get(metadata_file, metadata_file)
        if relative not in self._metadata and relative.endswith(".jsonl"):
            self._metadata[relative] = self._meta_lines(relative)
        if relative not in self._metadata:
            path = self.require(relative, "a JSON object {paper_id: {paper_id, title, abstract, ...}}")
            try:
                data = orjson.loads(path.read_bytes())
            except orjson.JSONDecodeError as error:
                raise InputError(path, f"malformed JSON ({error})") from None
            if not isinstance(data, dict):
                raise InputError(path, f"expected a JSON object keyed by paper id, got {type(data).__name__}")
            check_metadata(path, data)
            self._metadata[relative] = data
        return self._metadata[relative]

    def _meta_lines(self, relative: str) -> dict[str, dict]:
        """A metadata file in JSON lines, one paper (or query with candidates) a line: SciRepEval's layout."""
        path = self.require(relative, "JSON lines of papers (SciRepEval layout, see formats/scirepeval.py)")
        meta = read_meta(path)
        if meta.conflicts:
            log.warning("%s: %d paper id(s) given twice with different fields (the first is used, as SciRepEval "
                        "does): %s", path, len(meta.conflicts), ", ".join(meta.conflicts[:5]))
        check_metadata(path, meta.records)
        self._queries[relative] = meta.queries
        return meta.records

    def query_ids(self, metadata_file: str) -> list[str]:
        """The ids of the queries of a metadata file of query lines (SciRepEval's `{doc_id, query, candidates}`
        configs), in file order; [] for a file of papers."""
        self.metadata(metadata_file)
        return self._queries.get(METADATA_FILES.get(metadata_file, metadata_file), [])

    def papers(self, metadata_files: tuple[str, ...] | None = None,
               extra_fields: Mapping[str, Sequence[str]] | None = None) -> list[Paper]:
        """Every paper of the given metadata files (suite-relative names, or keys of METADATA_FILES; all present
        ones by default), each id once, with the `extra_fields` {metadata file: fields} a task embeds after the
        abstract (`TaskSpec.text_fields`). ("group" is an embeddings group, `TaskSpec.embedding_group`, elsewhere.)"""
        extra_fields = extra_fields or {}
        metadata_files = metadata_files or tuple(key for key, name in METADATA_FILES.items() if self.has(name))
        seen: dict[str, Paper] = {}
        differing: list[str] = []
        for metadata_file in metadata_files:
            fields = extra_fields.get(metadata_file, ())
            for paper_id, record in self.metadata(metadata_file).items():
                paper = paper_of_record(paper_id, record, fields)
                if paper_id not in seen:
                    seen[paper_id] = paper
                elif seen[paper_id] != paper:
                    differing.append(paper_id)
        if differing:
            log.warning("%d paper id(s) have a different text in two metadata files; each is embedded "
                        "once, from the first file (%s): %s", len(differing), ", ".join(metadata_files),
                        ", ".join(differing[:5]))
        return list(seen.values())

    def labels(self, task: str, split: str) -> LabelledPapers:
        """`{task}/{split}.csv` of a classification task."""
        path = self.require(f"{task}/{split}.csv", "a header row, then paper_id,class_label")
        ids: list[str] = []
        labels: list[int] = []
        checker = CLASS_LABELS.checker(path)
        for line, row in csv_rows(path, LABELS_HEADER, _is_labelled_row):
            if len(row) != 2:
                raise InputError(path, f"expected 2 columns (paper_id,class_label), got {len(row)}", line)
            checked = checker.row(dict(zip(("paper_id", "class_label"), row)), line)
            ids.append(checked["paper_id"])
            labels.append(checked["class_label"])
        if not ids:
            raise InputError(path, "no rows after the header")
        return LabelledPapers(ids, np.asarray(labels, dtype=np.int64))

    def qrels(self, task: str, split: str) -> Qrels:
        """`{task}/{split}.qrel` of a ranking task."""
        path = self.require(f"{task}/{split}.qrel", 'lines "query_id 0 candidate_id relevance"')
        judgements = Judgements(path, "relevance", later_wins=True)
        checker = QRELS.checker(path)
        for line, text in enumerate(utf8_lines(path), start=1):
            fields = text.split()
            if not fields:
                continue
            if len(fields) != 4:
                raise InputError(path, f"expected 4 fields 'query_id 0 candidate_id relevance', "
                                 f"got {len(fields)}", line)
            row = checker.row(dict(zip(("query_id", "iteration", "candidate_id", "relevance"), fields)), line)
            judgements.add(row["query_id"], row["candidate_id"], row["relevance"], line)
        if not judgements.candidates:
            raise InputError(path, "no qrel lines")
        return Qrels(judgements.candidates, judgements.grades, judgements.repeated, len(judgements.conflicts))

    def impressions(self, split: str) -> list[Impression]:
        """`recomm/{split}.csv`: one impression per row; the clicked id must be among those shown."""
        impressions, problems = self.impression_rows(split)
        if problems:
            raise problems[0]
        if not impressions:
            raise InputError(self.path(f"recomm/{split}.csv"), "no rows after the header")
        return impressions

    def impression_rows(self, split: str) -> tuple[list[Impression], list[InputError]]:
        """`recomm/{split}.csv` read once: its good rows, and an InputError for each bad row (left out)."""
        if split not in self._impressions:
            path = self.require(f"recomm/{split}.csv", 'a header row, then query_id,clicked_id,"id1,id2,..."')
            problems: list[InputError] = []
            self._impressions[split] = (read_impressions(path, problems), problems)
        return self._impressions[split]

    @cached_property
    def propensities(self) -> np.ndarray:
        """`recomm/propensity_scores.json`: propensity of each display position (float64, shape (n_positions,))."""
        return read_propensities(self.require("recomm/propensity_scores.json", '{"scores": [p_1, p_2, ...]}'))

    def class_names(self, task: str) -> dict[int, str]:
        """`{task}/class_names.json` as {class_label: name}, or {} when the suite has none."""
        relative = f"{task}/{CLASS_NAMES_FILE}"
        return read_class_names(self.path(relative)) if self.has(relative) else {}

    def fingerprint(self, relatives: list[str]) -> dict[str, str]:
        """sha256 of each given file that exists (for the results file)."""
        return {relative: _sha256(self.path(relative)) for relative in relatives if self.has(relative)}


@reads(CLASS_NAMES)
def read_class_names(path: str | os.PathLike[str]) -> dict[int, str]:
    """{class_label: name} of a class names file (`CLASS_NAMES`)."""
    try:
        data = orjson.loads(Path(path).read_bytes())
    except orjson.JSONDecodeError as error:
        raise InputError(path, f"malformed JSON ({error}); expected {{class_label: name}}") from None
    if not isinstance(data, dict):
        raise InputError(path, f"expected a JSON object {{class_label: name}}, got a JSON {type(data).__name__}")
    checker = CLASS_NAMES.checker(path)
    names = {}
    for key, name in data.items():
        label = int(key) if key.strip().lstrip("-").isdigit() else key  # a JSON key is text: "3" is the label 3
        row = checker.row({"class_label": label, "name": name}, where=f"class {key!r}")
        names[row["class_label"]] = row["name"]
    return names


@reads(PROPENSITIES)
def read_propensities(path: str | os.PathLike[str]) -> np.ndarray:
    """The propensity of each display position (`PROPENSITIES`: float64, shape (n_positions,))."""
    try:
        record = orjson.loads(Path(path).read_bytes())
    except orjson.JSONDecodeError as error:
        raise InputError(path, f'malformed JSON ({error}); expected {{"scores": [p_1, p_2, ...]}}') from None
    scores = PROPENSITIES.checker(path).row(record)["scores"]
    if (bad := next((n for n, score in enumerate(scores) if score <= 0), None)) is not None:
        raise InputError(path, f"field 'scores[{bad}]' is {scores[bad]!r}, expected a positive number (the "
                         "propensity of a display position)")
    return np.asarray(scores, dtype=np.float64)


reads(METADATA)(lambda path: Suite(Path(path).parent).metadata(Path(path).name))
reads(CLASS_LABELS)(lambda path: Suite(Path(path).parents[1]).labels(Path(path).parent.name, Path(path).stem))
reads(IMPRESSIONS)(lambda path: Suite(Path(path).parents[1]).impressions(Path(path).stem))
reads(QRELS)(lambda path: Suite(Path(path).parents[1]).qrels(Path(path).parent.name, Path(path).stem))


def check_metadata(path: str | os.PathLike[str], records: Mapping[str, object]) -> None:
    """An error naming the paper when a metadata record of `path` does not hold to `METADATA`, or names another
    paper id than its key."""
    checker = METADATA.checker(path)
    for paper_id, record in records.items():
        checked = checker.row(record, where=f"paper {paper_id!r}")
        if checked["paper_id"] not in (None, str(paper_id)):
            raise InputError(path, f"paper {paper_id!r}: its 'paper_id' is {checked['paper_id']!r}; the key and the "
                             "paper_id must agree")


def csv_rows(path: Path, header: str, is_data: Callable[[list[str]], bool]) -> Iterator[tuple[int, list[str]]]:
    """Rows after the header, with their 1-based line numbers; blank lines are skipped.

    A first line that `is_data` takes for a data row means the header is missing (its row would be lost): an
    error saying so, with `header` as the expected shape.
    """
    reader = csv.reader(utf8_lines(path))
    first = next(reader, None)
    if first is None:
        raise InputError(path, "file is empty (expected a header row)")
    if is_data([cell.strip() for cell in first]):
        raise InputError(path, f"the first line is a data row, not a header: the header row (such as "
                         f"{header}) is missing, and without it this row would be skipped", reader.line_num)
    for row in reader:
        if row:
            yield reader.line_num, [cell.strip() for cell in row]


def _is_labelled_row(row: list[str]) -> bool:
    """A classification row: two cells, the second an integer (a header names the column instead)."""
    if len(row) != 2:
        return False
    try:
        int(row[1])
    except ValueError:
        return False
    return True


def _shown_ids(field: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in field.split(",") if s.strip())


def _is_impression_row(row: list[str]) -> bool:
    """A recomm row: three cells, the clicked id among the shown ones (a header's column names are not)."""
    return len(row) == 3 and row[1] in _shown_ids(row[2])


def read_impressions(path: Path, problems: list[InputError] | None = None) -> list[Impression]:
    """The impressions of a recomm csv, one per row, in file order.

    A bad row raises an `InputError` naming its line, or, when `problems` is given, is appended to it and left
    out (`data verify` lists every bad row; `run` stops at the first). A missing header is always raised.
    """
    impressions = []
    checker = IMPRESSIONS.checker(path)
    for line, row in csv_rows(path, IMPRESSIONS_HEADER, _is_impression_row):
        problem = None
        if len(row) != 3:
            problem = f'expected 3 columns query_id,clicked_id,"id1,...", got {len(row)}'
        else:
            try:
                checked = checker.row(dict(zip(("query_id", "clicked_id", "shown"), row)), line)
            except InputError as error:
                if problems is None:
                    raise
                problems.append(error)
                continue
            query_id, clicked_id, shown_field = checked["query_id"], checked["clicked_id"], checked["shown"]
            shown = _shown_ids(shown_field)
            if not shown:
                problem = f"query {query_id!r}: the shown list (field 'shown') is empty"
            elif clicked_id not in shown:
                problem = (f"query {query_id!r}: clicked paper {clicked_id!r} (field 'clicked_id') is not in the "
                           "shown list")
        if problem is None:
            impressions.append(Impression(query_id, clicked_id, shown, line))
        elif problems is None:
            raise InputError(path, problem, line)
        else:
            problems.append(InputError(path, problem, line))
    return impressions


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()
