"""Every dataset file kind's typed row schema, held by its reader against hostile rows.

The file kinds and their readers come from the one registry (`formats.row_schema.FILE_KINDS`, `READERS`): a new
reader that declares its rows is fuzzed by construction, and a reader module that reads rows without declaring them
fails `test_every_row_reader_declares_its_file_kinds`. Each hostile value (null, wrong type, a boolean, a nested
list, an empty list, a huge number, a float, an empty string, an absent field, a column of two types, bytes that are
not UTF-8) goes into each field of each kind's valid example, and into the first item of a list field; the reader
either refuses it with one line naming the file, the line (row, or paper) and the field, or the value is one the
field's kind takes (`TAKEN_JSON`, `TAKEN_CELLS`, written here apart from the schema code); a value the kind takes
may still be refused by a rule of the reader (a query given as text needs the line's doc_id), in one line. Never
another exception.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest

from scidocs_eval.errors import InputError
from scidocs_eval.formats.row_schema import FILE_KINDS, READERS, Field, RowSchema, _Where, import_readers

import_readers()

HOSTILE: dict[str, Any] = {"null": None, "wrong-type": {"not": "this"}, "boolean": True, "nested-list": [["x"]],
                           "empty-list": [], "huge-number": 10**30, "float": 1.5, "empty-string": ""}
TAKEN_JSON = {"text": {"empty-string"}, "id": set(), "int": set(), "number": {"float", "huge-number"},
              "label": {"empty-string"}, "flag": set(), "grade": set(), "object": set()}
"""the hostile values a kind takes in JSON (a huge number: a float there, finite)."""
TAKEN_CELLS = {"text": set(HOSTILE) - {"null", "empty-string"}, "id": set(HOSTILE) - {"null", "empty-string"},
               "int": set(), "grade": set()}
"""in a delimited text file every value is text: an id or a text is any non-empty cell."""
FILE_NAMES = {"JSON lines": "rows/test.jsonl", "JSON lines (or a JSON array)": "rows/test.jsonl",
              "parquet": "config/test-00000-of-00001.parquet", "a JSON object {paper_id: row}": "metadata.json",
              "a JSON object {query: {candidate: row}}": "data.json",
              "CSV with a header": "recomm/test.csv", "TSV with a header": "qrels/test.tsv",
              "space-separated lines": "cite/test.qrel", "TSV lines (a header row allowed)": "citations.tsv",
              "lines, one id a line": "train.txt", "one JSON object": "recomm/propensity_scores.json",
              "a JSON object {class_label: name}": "mag/class_names.json"}
KEYED_BY_FIELD = "a JSON object {class_label: name}"
"""a file of {key: value}: the first field is the key (JSON text), the second the value."""
ONE_RECORD = "one JSON object"
"""a file of one record (its example has one row)."""
ONE_CELL_LINES = ("space-separated lines", "lines, one id a line")
KINDS = list(FILE_KINDS.values())


def _cell(value: Any) -> str:
    return "" if value is None else value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _write(schema: RowSchema, rows: list[dict[str, Any]], folder: Path) -> tuple[Path, list[str]]:
    """The rows in the kind's container, and where each row is named in an error (line, row, or paper)."""
    path = folder / FILE_NAMES[schema.container]
    path.parent.mkdir(parents=True, exist_ok=True)
    names = [f.name for f in schema.fields]
    if schema.container.startswith("JSON lines"):
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        return path, [f"{path.name}:{n}:" for n in range(1, len(rows) + 1)]
    if schema.container == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
        return path, [f"{path.name}: row {n}:" for n in range(1, len(rows) + 1)]
    if schema.container == KEYED_BY_FIELD:
        key_field, value_field = names
        keys = [row[key_field] if isinstance(row[key_field], str) else json.dumps(row[key_field]) for row in rows]
        path.write_text(json.dumps({key: row[value_field] for key, row in zip(keys, rows)}))
        return path, [f"class {key!r}" for key in keys]
    if schema.container.startswith("a JSON object {query"):
        queries = [f"q{n}" for n in range(len(rows))]
        path.write_text(json.dumps({query: {f"c{n}": row} for n, (query, row) in enumerate(zip(queries, rows))}))
        return path, [f"query {query!r}" for query in queries]
    if schema.container == ONE_RECORD:
        path.write_text(json.dumps(rows[-1]))
        return path, [f"{path.name}:"]
    if schema.container.startswith("a JSON object"):
        keys = [str(row.get("paper_id") or f"p{n}") for n, row in enumerate(rows)]
        path.write_text(json.dumps(dict(zip(keys, rows))))
        return path, [f"paper {key!r}" for key in keys]
    lines = [[_cell(row[name]) for name in names if name in row] for row in rows]
    if schema.container in ONE_CELL_LINES:
        path.write_text("".join(" ".join(cells) + "\n" for cells in lines))
        return path, [f"{path.name}:{n}:" for n in range(1, len(rows) + 1)]
    text = io.StringIO()
    csv.writer(text, delimiter="\t" if "TSV" in schema.container else ",", lineterminator="\n").writerows(
        [names, *lines])
    path.write_text(text.getvalue())
    return path, [f"{path.name}:{n}:" for n in range(2, len(rows) + 2)]


def _read(schema: RowSchema, rows: list[dict[str, Any]], folder: Path) -> tuple[InputError | None, Path, str]:
    """Read `rows` through the kind's reader: (its InputError or None, the file, how the last row is named)."""
    path, places = _write(schema, rows, folder)
    try:
        READERS[schema.name](str(path))
    except InputError as error:
        return error, path, places[-1]
    return None, path, places[-1]


def _cases() -> list[tuple[str, str, str, bool]]:
    """(file kind, field, hostile, into a list's first item) of every case."""
    cases = []
    for schema in KINDS:
        for spec in schema.fields:
            for hostile in [*HOSTILE, "missing", "mixed-types"]:
                cases.append((schema.name, spec.name, hostile, False))
            if spec.many:
                cases += [(schema.name, spec.name, hostile, True) for hostile in [*HOSTILE, "mixed-types"]]
    return cases


def _taken(schema: RowSchema, spec: Field, hostile: str, item: bool) -> bool:
    """Whether the field's declaration takes the hostile value (the reader then reads it)."""
    if hostile == "missing":
        return not spec.required
    if hostile == "mixed-types":
        return False
    if hostile == "null" and not item:
        return spec.null or not spec.required
    if spec.many and not item:
        return hostile == "empty-list" and spec.empty
    table = TAKEN_CELLS if schema.cells else TAKEN_JSON
    return any(hostile in table[kind] for kind in spec.kinds)


def _hostile_rows(schema: RowSchema, spec: Field, hostile: str, item: bool) -> list[dict[str, Any]] | None:
    """The example's rows with the hostile value in the last row (in every row of a parquet file, whose column has
    one type); None when the container cannot hold it."""
    rows = [dict(row) for row in schema.example]
    targets = rows if schema.container == "parquet" else rows[-1:]
    if schema.container == "lines, one id a line" and hostile in ("null", "empty-string", "missing"):
        return None  # a blank line is no row
    if schema.container == KEYED_BY_FIELD and hostile == "missing":
        return None  # a key always has a value
    if hostile == "mixed-types":
        first = rows[0].get(spec.name)
        sample = first[0] if spec.many and isinstance(first, list) and first else first
        if schema.container == "parquet" or not isinstance(sample, (str, int)) or isinstance(sample, bool) \
                or schema.cells:
            return None
        other: Any = 7 if isinstance(sample, str) else "seven"
        value = [other, *rows[-1][spec.name][1:]] if spec.many else other
        rows[-1][spec.name] = value
        return rows
    for row in targets:
        if hostile == "missing":
            row.pop(spec.name, None)
        elif item:
            row[spec.name] = [HOSTILE[hostile], *row[spec.name][1:]]
        else:
            row[spec.name] = HOSTILE[hostile]
    return rows


@pytest.mark.parametrize(("kind", "field", "hostile", "item"), _cases(),
                         ids=[f"{k}-{f}{'[0]' if i else ''}-{h}" for k, f, h, i in _cases()])
def test_a_hostile_value_is_one_line_naming_file_row_and_field(kind: str, field: str, hostile: str, item: bool,
                                                               tmp_path: Path) -> None:
    schema = FILE_KINDS[kind]
    spec = next(f for f in schema.fields if f.name == field)
    rows = _hostile_rows(schema, spec, hostile, item)
    if rows is None:
        pytest.skip(f"a {schema.container} file cannot hold {hostile}")
    try:
        error, path, place = _read(schema, rows, tmp_path)
    except (TypeError, ValueError, OverflowError) as unwritable:  # pyarrow: a column of no one type
        if schema.container == "parquet":
            pytest.skip(f"a parquet column cannot hold it ({unwritable})")
        raise
    if error is None:
        assert _taken(schema, spec, hostile, item), (kind, field, hostile, "read without an error")
        return
    message = str(error)
    assert "\n" not in message and path.name in message, message
    if schema.container == "parquet":
        place = f"{path.name}: row "  # the whole column holds the value: the first row is named
    assert place in message, (place, message)
    cell_gone = hostile == "missing" or (hostile in ("null", "empty-string") and "space-separated" in schema.container)
    if schema.cells and cell_gone:
        assert "expected" in message, message  # a cell less: the line's cells are counted (which one is unknown)
        return
    assert field in message or any(alias in message for alias in spec.aliases), (field, message)


@pytest.mark.parametrize("kind", [s.name for s in KINDS if s.container != "parquet"])
def test_bytes_that_are_not_utf8_are_one_line_naming_the_file(kind: str, tmp_path: Path) -> None:
    schema = FILE_KINDS[kind]
    path, places = _write(schema, [dict(row) for row in schema.example], tmp_path)
    data = path.read_bytes()
    cut = data.rstrip(b"\n").rfind(b"\n") + 1 if not schema.container.startswith("a JSON object") else len(data) - 3
    path.write_bytes(data[:cut] + b"\xff" + data[cut:])
    with pytest.raises(InputError) as caught:
        READERS[kind](str(path))
    message = str(caught.value)
    assert "\n" not in message and path.name in message, message
    if not schema.container.startswith("a JSON object"):
        assert places[-1] in message, (places[-1], message)


@pytest.mark.parametrize("kind", [s.name for s in KINDS])
def test_every_file_kind_reads_its_example(kind: str, tmp_path: Path) -> None:
    schema = FILE_KINDS[kind]
    assert kind in READERS, f"file kind {kind!r} has no registered reader (formats.row_schema.reads)"
    if schema.container == ONE_RECORD:
        assert len(schema.example) == 1, "a file of one record: an example of one row"
    else:
        assert len(schema.example) >= 2, "an example of two rows (the last one gets the hostile value)"
    error, _, _ = _read(schema, [dict(row) for row in schema.example], tmp_path)
    assert error is None, str(error)


ROW_READING = ("json_lines(", "utf8_lines(", "read_table(", "csv_rows(", "orjson.loads(")
NOT_DATASET_FILES = {"embeddings", "embeddings_cache", "embeddings_files", "embeddings_tables", "embeddings_writers",
                     "embeddings_output", "vector_cache", "provenance", "lines", "safe_output", "writers",
                     "row_schema"}
"""formats modules that read no dataset rows: embeddings (tests/test_reader_boundaries.py), caches, provenance, the
line readers themselves."""


def test_every_row_reader_declares_its_file_kinds() -> None:
    import scidocs_eval.formats as formats

    folder = Path(formats.__file__).parent
    for module in sorted(folder.glob("*.py")):
        source = module.read_text()
        if module.stem in NOT_DATASET_FILES or not any(call in source for call in ROW_READING):
            continue
        assert "file_kind(" in source and ("reads(" in source), \
            f"formats/{module.name} reads rows but declares no file kind (formats.row_schema.file_kind, reads)"


PARSING = re.compile(r"\b((or)?json\.loads?|csv\.reader|csv\.DictReader|utf8_lines|json_lines|read_table|read_parquet|"
                     r"read_csv|np\.loadtxt)\(|\.read(_text)?\(\)\.split")
"""calls that parse a file's rows (or a whole file into values)."""
PARSES_NO_DATASET = {
    "scidocs_eval/cli/options.py": "a JSON option value (-p, --task-param), checked by the parameter's declaration",
    "scidocs_eval/data/download.py": "its own download state file (.scidocs-download.json)",
    "scidocs_eval/data/graph/recipe.py": "an abstract's inverted index inside a typed snapshot row, and the qrels "
                                         "it has just written",
    "scidocs_eval/evaluation/contamination.py": "an audit file the tool wrote (AuditReport.load checks its format)",
    "scidocs_eval/evaluation/results.py": "results files: their schema is RunResult's dataclasses (results.json_kinds)",
    "scidocs_eval/models/weights.py": "its own digest memo, and a tokenizer's definition (hashed, not read as rows)",
    "scidocs_eval/models/word_vectors.py": "GloVe's word index shipped with the vectors (a model's file)",
    "scidocs_eval/training/specter.py": "a checkpoint's settings record, written by the tool",
    "leaderboard/figures.py": "the training history `train specter` wrote",
    "leaderboard/table1.py": "the paper's published Table 1, shipped in the package",
    "leaderboard/scirepeval_table.py": "SciRepEval's published rows, shipped in the package",
}
"""modules outside formats/ that parse a file, and why it is no dataset file (a dataset file is read by a reader
of formats/ that declares its kind)."""


def test_no_module_outside_formats_parses_dataset_rows() -> None:
    """data/, training/, evaluators/, run/, evaluation/, models/, tasks/, baselines/ and leaderboard/ read a
    dataset file only through a formats reader (which declares its kind, above); a module that parses one itself
    fails here."""
    import scidocs_eval

    package = Path(scidocs_eval.__file__).parent
    root = package.parent
    modules = [path for path in sorted(package.rglob("*.py")) if path.relative_to(package).parts[0] != "formats"]
    modules += [path for folder in ("tasks", "baselines", "leaderboard")
                for path in sorted((root / folder).glob("*.py"))]
    parsing = {str(path.relative_to(root)) for path in modules if PARSING.search(path.read_text())}
    assert parsing - set(PARSES_NO_DATASET) == set(), \
        "these modules parse a file themselves: read a dataset file through formats/ (a declared file kind), or " \
        "list the module in PARSES_NO_DATASET with what it parses"
    assert set(PARSES_NO_DATASET) <= parsing, "PARSES_NO_DATASET lists a module that parses nothing now"


def test_the_docs_table_is_the_registry() -> None:
    from scidocs_eval.cli.row_schema_docs import DOC, updated_page

    page = DOC.read_text(encoding="utf-8")
    assert updated_page(page) == page, "docs/errors_and_files.md is stale: python -m scidocs_eval.cli.row_schema_docs"


CLI_CASES = {
    "citations": ("e.tsv", "a\tb\nb\t\n", ["data", "build", "--papers", "{dir}/p.jsonl", "--citations", "{file}",
                                            "--out-dir", "{dir}/out"], "e.tsv:2: field 'cited' is empty"),
    "id list": ("ids.txt", "p1\np2 p3\n", ["audit", "--train", "{file}", "--data", "{suite}", "--tasks", "cite"],
                "ids.txt:2: expected one paper id a line (field 'id')"),
    "SPECTER data.json": ("data.json", '{"q": {"c": {"count": 5}, "d": {"count": 1.5}}}',
                          ["audit", "--train", "{file}", "--data", "{suite}", "--tasks", "cite"],
                          "data.json: query 'q', candidate 'd': field 'count' is number 1.5, expected an integer"),
}
"""A hostile file of each kind typed last, through the command that reads it: (file, text, argv, the line)."""


@pytest.mark.parametrize("kind", CLI_CASES)
def test_a_hostile_row_of_the_later_kinds_is_one_line_and_exit_2_from_the_cli(
        kind: str, tmp_path: Path, demo_suite: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from scidocs_eval.cli.main import main

    name, text, argv, line = CLI_CASES[kind]
    (tmp_path / name).write_text(text)
    (tmp_path / "p.jsonl").write_text('{"paper_id": "a", "title": "t", "abstract": "x"}\n'
                                      '{"paper_id": "b", "title": "u", "abstract": "y"}\n')
    filled = [arg.format(dir=tmp_path, file=tmp_path / name, suite=demo_suite.root) for arg in argv]
    assert main([*filled, "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err and line in err, err
    assert kind in FILE_KINDS


VALUES = (None, "", " ", "d1", "d2", 7, 1.5, True, ["d1"], {"x": 1})


@pytest.mark.parametrize("kind", sorted(FILE_KINDS))
def test_the_plain_row_path_checks_as_the_full_check_does(kind: str) -> None:
    """`RowChecker.row` takes the rows of single values by a short path (a string its kind takes as it is, at
    once; any other value through the same per-value check): for every value of `VALUES` in every field (and
    alias) of each kind's example, one row after another, `row` returns what the full check returns or raises
    the same error."""
    schema = FILE_KINDS[kind]
    names = [spec.name for spec in schema.fields] + [alias for spec in schema.fields for alias in spec.aliases]
    checker, reference = schema.checker("f"), schema.checker("f")
    if checker._plain is None:
        pytest.skip(f"{kind}: every row takes the full check (a list, a nested object or parallel fields)")
    first = dict(schema.example[0]) if schema.example else {}
    assert checker.row(first, 1) == reference._object(schema, first, "", "", _where(1))
    assert checker._plain_row(first, checker._plain, 2, None, "") is not None  # the example takes the short path
    for field, value in itertools.product(names, VALUES):
        record = {**first, field: value}
        assert _outcome(checker.row, record, 2) == \
            _outcome(reference._object, schema, record, "", "", _where(2)), (field, value)


def _outcome(check: Any, *arguments: Any) -> tuple[str, Any]:
    try:
        return "read", check(*arguments)
    except InputError as error:
        return "refused", str(error)


def _where(line: int) -> _Where:
    return _Where(line, None, "")
