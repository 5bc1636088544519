"""`data build --from openalex|s2`: the snapshot readers, the recipe on DuckDB, determinism, bad input, the
cutoff, scoring and auditing the suite (the Spark engine: tests/test_graph_spark.py)."""

from __future__ import annotations

import csv
import gzip
import hashlib
import sys
import zlib
from pathlib import Path

import orjson
import pytest
from sqlglot import exp

pytest.importorskip("duckdb", reason="the [graph] extra (duckdb, sqlglot) is not installed")
pytest.importorskip("sqlglot", reason="the [graph] extra (duckdb, sqlglot, msgspec) is not installed")
pytest.importorskip("msgspec", reason="the [graph] extra (duckdb, sqlglot, msgspec) is not installed")

from scidocs_eval.cli.main import main  # noqa: E402
from scidocs_eval.data.graph.badrows import scan_part  # noqa: E402
from scidocs_eval.data.graph.recipe import BUILD_FILE, Filters, Recipe, build_graph_suite  # noqa: E402
from scidocs_eval.data.graph.snapshot import (  # noqa: E402
    OPENALEX_WORK,
    S2_ABSTRACT,
    S2_CITATION,
    S2_PAPER,
    abstract_from_inverted_index,
    open_snapshot,
    record_decoder,
)
from scidocs_eval.data.graph.synthetic import write_synthetic_snapshot  # noqa: E402
from scidocs_eval.errors import ScidocsEvalError  # noqa: E402
from scidocs_eval.evaluation.contamination import audit_suite  # noqa: E402
from scidocs_eval.formats.corpus import parse_published  # noqa: E402
from scidocs_eval.formats.suite import Suite  # noqa: E402
from scidocs_eval.formats.training_data import read_training_data  # noqa: E402

SMALL = Recipe(queries_per_split=20, papers_per_class=20, train_queries=100)
CUTOFF = "2018-06-30"
SIZES = ["--queries-per-split", "20", "--papers-per-class", "20", "--train-queries", "100"]


def digests(folder: Path) -> dict[str, str]:
    """sha256 of every file of a built folder (its manifest too)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def works_of(snapshot: Path) -> dict[str, dict]:
    """The latest version of every work of an OpenAlex snapshot, by short id."""
    works: dict[str, dict] = {}
    for part in sorted(snapshot.rglob("*.gz")):
        for line in gzip.decompress(part.read_bytes()).splitlines():
            work = orjson.loads(line)
            key = work["id"].rsplit("/", 1)[1]
            if key not in works or work["updated_date"] > works[key]["updated_date"]:
                works[key] = work
    return works


def published_of(work: dict) -> str:
    return work["publication_date"]


@pytest.fixture(scope="module")
def openalex(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("openalex")
    write_synthetic_snapshot(folder, 300, seed=3)
    return folder


@pytest.fixture(scope="module")
def built(openalex: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("built") / "suite"
    assert main(["data", "build", "--from", "openalex", str(openalex), "--out-dir", str(out), "--test-after", CUTOFF,
                 *SIZES, "--quiet"]) == 0
    return out


def evaluation_papers(suite: Suite) -> set[str]:
    """Every evaluation query and classification test paper of the suite."""
    queries = {q for task in ("cite", "cocite") for split in ("val", "test") if suite.has(f"{task}/{split}.qrel")
               for q in suite.qrels(task, split).candidates}
    return queries | {p for task in ("mag", "mesh") for p in suite.labels(task, "test").ids}


def test_layouts_and_report(built: Path, openalex: Path) -> None:
    for name in ("mag/train.csv", "mag/class_names.json", "mesh/test.csv", "cite/test.qrel", "cocite/val.qrel",
                 "paper_metadata_mag_mesh.json", "paper_metadata_view_cite_read.json", "specter/data.json",
                 "specter/metadata.json", "specter/train.txt", "cite-full/corpus.jsonl", "cite-full/qrels/test.tsv",
                 "cocite-full/queries.jsonl", BUILD_FILE):
        assert (built / name).is_file(), name
    report = orjson.loads((built / BUILD_FILE).read_bytes())
    assert report["snapshot_digest"] == open_snapshot("openalex", openalex).digest()
    assert report["seed"] == 0 and report["cutoff"] == CUTOFF and report["parts"] == 3
    counts = report["counts"]
    assert counts["records"] == 301 and counts["works"] == 300 and counts["older_versions_replaced"] == 1
    assert counts["kept"] == 300 - counts["retracted"] - counts["paratext"] + _both(openalex)
    assert counts["links_outside_the_kept_works"] > 0 and counts["bad_rows"] == 0
    assert set(report["not_supported"]) == {"coview", "coread", "recomm"}


def _both(snapshot: Path) -> int:
    return sum(1 for w in works_of(snapshot).values() if w["is_retracted"] and w["is_paratext"])


def test_the_recipe_on_the_graph(built: Path, openalex: Path) -> None:
    works = works_of(openalex)
    suite = Suite(built)
    dropped = {key for key, w in works.items() if w["is_retracted"] or w["is_paratext"]}
    everywhere = set(suite.metadata("mag_mesh")) | set(suite.metadata("view_cite_read")) | set(
        orjson.loads((built / "specter/metadata.json").read_bytes()))
    assert everywhere and not everywhere & dropped
    duplicated = works["W151"]  # its later version: not retracted, its own title
    assert duplicated["title"] != "Superseded title"
    if "W151" in everywhere:
        record = {**suite.metadata("mag_mesh"), **suite.metadata("view_cite_read")}.get("W151")
        assert record is None or record["title"] == duplicated["title"]
    cites = {key: {r.rsplit("/", 1)[1] for r in w["referenced_works"]} for key, w in works.items()}
    for split in ("val", "test"):
        for query, grades in suite.qrels("cite", split).relevance.items():
            positives = {c for c, g in grades.items() if g == 1}
            assert 1 <= len(positives) <= 5 and positives <= cites[query]
            assert len(grades) - len(positives) == 25 and not (set(grades) - positives) & cites[query]
            assert published_of(works[query]) > CUTOFF
    names = orjson.loads((built / "mag/class_names.json").read_bytes())
    for split in ("train", "val", "test"):
        for row in csv.DictReader((built / f"mag/{split}.csv").read_text().splitlines()):
            assert works[row["pid"]]["primary_topic"]["field"]["display_name"] == names[row["class_label"]]
            assert (published_of(works[row["pid"]]) > CUTOFF) == (split == "test")
    for row in csv.DictReader((built / "mesh/test.csv").read_text().splitlines()):
        majors = [m["descriptor_name"] for m in works[row["pid"]]["mesh"] if m["is_major_topic"]]
        assert majors[0] == orjson.loads((built / "mesh/class_names.json").read_bytes())[row["class_label"]]
    metadata = suite.metadata("view_cite_read")
    some = next(key for key, record in metadata.items() if record["abstract"])
    assert metadata[some]["abstract"] == abstract_from_inverted_index(works[some]["abstract_inverted_index"])


def test_training_files_only_before_the_cutoff_and_audit_clean(built: Path, openalex: Path, tmp_path: Path) -> None:
    works = works_of(openalex)
    data = orjson.loads((built / "specter/data.json").read_bytes())
    training = set(data) | {c for candidates in data.values() for c in candidates}
    assert training and all(published_of(works[p]) <= CUTOFF for p in training)
    counts = {v["count"] for candidates in data.values() for v in candidates.values()}
    assert counts == {1, 5}
    suite = Suite(built)
    report = audit_suite(read_training_data([built / "specter"]), suite, split="test")
    assert {"mag", "cite"} <= set(report.tasks)
    assert all(info["leaked"] == 0 and info["direct_leaks"] == 0 for info in report.tasks.values()), report.format()
    planted = sorted(q for q in suite.qrels("cite", "test").candidates)[:3]
    records = {**orjson.loads((built / "specter/metadata.json").read_bytes()),
               **{q: suite.metadata("view_cite_read")[q] for q in planted}}
    leaky = tmp_path / "leaky.jsonl"
    leaky.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records.values()))
    report = audit_suite(read_training_data([leaky]), suite, split="test", tasks=["cite"])
    assert report.tasks["cite"]["leaked"] == len(planted), report.format()


def test_rebuild_is_byte_identical_and_another_seed_differs(built: Path, openalex: Path, tmp_path: Path) -> None:
    assert main(["data", "build", "--from", "openalex", str(openalex), "--out-dir", str(tmp_path / "again"),
                 "--test-after", CUTOFF, *SIZES, "--quiet"]) == 0
    assert digests(tmp_path / "again") == digests(built)
    build_graph_suite("openalex", openalex, tmp_path / "seed1", seed=1, test_after=parse_published(CUTOFF),
                      recipe=SMALL, progress=False)
    assert (tmp_path / "seed1/cite/test.qrel").read_bytes() != (built / "cite/test.qrel").read_bytes()


def test_scored_by_run(built: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "results"
    assert main(["baseline", "random", "--data", str(built), "--out", str(out), "--quiet"]) == 0
    results = orjson.loads(next(out.glob("*.results.json")).read_bytes())
    assert {"mag", "mesh", "cite", "cocite"} <= set(results["tasks"])
    assert main(["run", "--data", str(built), "--benchmark", "full-corpus", "--embeddings",
                 str(next(out.glob("*.jsonl"))), "--quiet"]) == 0


def test_semantic_scholar_snapshot(tmp_path: Path) -> None:
    write_synthetic_snapshot(tmp_path / "s2", 300, source="s2", seed=3)
    report = build_graph_suite("s2", tmp_path / "s2", tmp_path / "suite", test_after=parse_published("2018"),
                               recipe=SMALL, progress=False)
    assert {"mag", "cite"} <= set(report.built_tasks()) and "mesh" in report.not_supported
    assert report.counts["links_outside_the_kept_works"] > 0
    abstracts = {r["abstract"] for r in Suite(tmp_path / "suite").metadata("view_cite_read").values()}
    assert "" in abstracts and len(abstracts) > 10


@pytest.mark.parametrize(("filters", "holds"), [
    (Filters(first_year=2010, last_year=2020), lambda w: 2010 <= w["publication_year"] <= 2020),
    (Filters(languages=("de",)), lambda w: w["language"] == "de"),
    (Filters(types=("article",)), lambda w: w["type"] == "article"),
    (Filters(fields=("Medicine", "Biology", "Physics")),
     lambda w: w["primary_topic"]["field"]["display_name"] in ("Medicine", "Biology", "Physics")),
    (Filters(require_abstract=True), lambda w: bool(w["abstract_inverted_index"])),
])
def test_every_filter_keeps_only_what_it_names(openalex: Path, tmp_path: Path, filters: Filters, holds) -> None:
    works = works_of(openalex)
    try:
        report = build_graph_suite("openalex", openalex, tmp_path / "suite", filters=filters, recipe=SMALL,
                                   progress=False)
    except ScidocsEvalError as error:  # too few works for any task: still, nothing else was kept
        assert "too few" in str(error)
        return
    expected = sum(1 for w in works.values() if holds(w) and not w["is_retracted"] and not w["is_paratext"])
    assert report.counts["kept"] == expected
    suite = Suite(tmp_path / "suite")
    assert all(holds(works[p]) for p in {**suite.metadata("mag_mesh"), **suite.metadata("view_cite_read")})


# -- bad input ---------------------------------------------------------------------------------------------------

def _damaged(openalex: Path, tmp_path: Path, lines: list[bytes]) -> tuple[Path, Path]:
    """A copy of the snapshot with one more part holding `lines`."""
    copy = tmp_path / "snapshot"
    for part in sorted(openalex.rglob("*")):
        target = copy / part.relative_to(openalex)
        if part.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(part.read_bytes())
    extra = copy / "data/works/updated_date=2024-07-15/part_999.gz"
    extra.write_bytes(gzip.compress(b"".join(lines), mtime=0))
    return copy, extra


GOOD = (b'{"id": "https://openalex.org/W900001", "title": "A late work", "publication_year": 2020, '
        b'"publication_date": "2020-01-01", "updated_date": "2024-07-15T00:00:00", "referenced_works": []}\n')


@pytest.mark.parametrize(("bad", "why"), [
    (b'{"id": "https://openalex.org/W900002", "title": "broken\n', "malformed JSON"),
    (b'{"title": "a work without its id", "publication_year": 2020}\n', "no 'id'"),
    (b'[1, 2, 3]\n', "not a JSON object"),
])
def test_a_bad_row_is_named_and_refused_unless_allowed(openalex: Path, tmp_path: Path, bad: bytes, why: str,
                                                       capsys: pytest.CaptureFixture) -> None:
    snapshot, part = _damaged(openalex, tmp_path, [GOOD, GOOD.replace(b"W900001", b"W900003"), bad])
    out = tmp_path / "suite"
    assert main(["data", "build", "--from", "openalex", str(snapshot), "--out-dir", str(out), *SIZES,
                 "--quiet"]) == 2
    error = capsys.readouterr().err.strip()
    assert f"{part}:3: {why}" in error and "--max-bad-rows 0" in error and len(error.splitlines()) == 1
    assert not out.exists()
    assert main(["data", "build", "--from", "openalex", str(snapshot), "--out-dir", str(out), *SIZES,
                 "--max-bad-rows", "1", "--quiet"]) == 0
    report = orjson.loads((out / BUILD_FILE).read_bytes())
    assert report["counts"]["bad_rows"] == 1 and report["bad_rows"][0].startswith(f"{part}:3: {why}")
    assert report["counts"]["records"] == 303


def test_a_truncated_part_is_an_error_naming_it(openalex: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture) -> None:
    snapshot, part = _damaged(openalex, tmp_path, [GOOD] * 50)
    part.write_bytes(part.read_bytes()[:-12])
    out = tmp_path / "suite"
    assert main(["data", "build", "--from", "openalex", str(snapshot), "--out-dir", str(out), *SIZES,
                 "--max-bad-rows", "1000", "--quiet"]) == 2
    error = capsys.readouterr().err.strip()
    assert str(part) in error and "damaged gzip part" in error and len(error.splitlines()) == 1
    assert not out.exists()


# -- every field the build reads, of a wrong JSON type: a bad row, named by its path ------------------------------

_WRONG = {exp.DataType.Type.TEXT: [123, ["x"]], exp.DataType.Type.BIGINT: ["1", 1.5, True],
          exp.DataType.Type.DOUBLE: ["0.5", False], exp.DataType.Type.BOOLEAN: ["yes", 1]}
"""Wrong JSON values for each scalar type of the schemas (a string of digits for an integer, 1 for a boolean:
values an engine could coerce)."""


def wrong_values(kind: exp.DataType, path: str) -> list[tuple[str, object]]:
    """(path, value) for a value of a wrong type at every level of a schema type: the value itself, an element of
    an array, a value of a map, a member of an object (each path as the check names it)."""
    if kind.this in _WRONG:
        return [(path, value) for value in _WRONG[kind.this]]
    if kind.this == exp.DataType.Type.ARRAY:
        return [(path, "W1"), (path, {"0": 1}),
                *((p, [v]) for p, v in wrong_values(kind.expressions[0], f"{path}[0]"))]
    if kind.this == exp.DataType.Type.MAP:
        return [(path, ["x"]), *((p, {"word": v}) for p, v in wrong_values(kind.expressions[1], f"{path}[...]"))]
    return [(path, "x"), (path, ["x"]), *((p, {c.name: v}) for c in kind.expressions
                                          for p, v in wrong_values(c.args["kind"], f"{path}.{c.name}"))]


def wrong_records(fields: tuple[tuple[str, str], ...], key: str, valid_key: object) -> list[tuple[str, bytes]]:
    """(the path the error names, a line) for every field of a schema and every wrong type of it; each record
    otherwise valid (its key set, every other field absent)."""
    lines = []
    for name, kind in fields:
        for path, value in wrong_values(exp.DataType.build(kind, dialect="spark"), name):
            record = {name: value} if name == key else {key: valid_key, name: value}
            lines.append((path, orjson.dumps(record) + b"\n"))
    return lines


def _copy_with(snapshot: Path, tmp_path: Path, parts: dict[str, list[bytes]]) -> Path:
    """A copy of the snapshot with more parts (relative path: lines)."""
    copy = tmp_path / "snapshot"
    for part in sorted(snapshot.rglob("*")):
        if part.is_file():
            (copy / part.relative_to(snapshot)).parent.mkdir(parents=True, exist_ok=True)
            (copy / part.relative_to(snapshot)).write_bytes(part.read_bytes())
    for relative, lines in parts.items():
        (copy / relative).write_bytes(gzip.compress(b"".join(lines), mtime=0))
    return copy


def test_the_wrong_type_cases_cover_every_field() -> None:
    paths = {path for path, _ in wrong_records(OPENALEX_WORK, "id", "W1")}
    assert {"title", "publication_date", "publication_year", "referenced_works", "referenced_works[0]",
            "mesh", "mesh[0]", "mesh[0].is_major_topic", "mesh[0].descriptor_name", "primary_topic.field.display_name",
            "abstract_inverted_index", "abstract_inverted_index[...][0]", "concepts[0].level", "ids.pmid",
            "is_retracted"} <= paths
    assert {name for name, _ in OPENALEX_WORK} <= paths


WRONG_BY_SOURCE = {
    "openalex": {"data/works/updated_date=2024-07-15/part_999.gz":
                 wrong_records(OPENALEX_WORK, "id", "https://openalex.org/W900001")},
    "s2": {f"{name}/part_999.gz": wrong_records(fields, key, 900001) for name, fields, key in (
        ("papers", S2_PAPER, "corpusid"), ("abstracts", S2_ABSTRACT, "corpusid"),
        ("citations", S2_CITATION, "citingcorpusid"))},
}


@pytest.mark.parametrize("source", ["openalex", "s2"])
def test_every_field_of_a_wrong_type_is_a_named_bad_row_left_out(source: str, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture) -> None:
    """Each field the build reads, of each wrong type, at every level: counted and named (file, line, path);
    refused by default; with --max-bad-rows, left out: the suite is the clean snapshot's, byte for byte."""
    clean = tmp_path / "clean"
    write_synthetic_snapshot(clean, 300, source=source, seed=3)
    wrong = WRONG_BY_SOURCE[source]
    snapshot = _copy_with(clean, tmp_path, {part: [line for _, line in cases] for part, cases in wrong.items()})
    expected = [f"{snapshot / part}:{line}: {path}: wrong type (" for part, cases in sorted(wrong.items())
                for line, (path, _) in enumerate(cases, start=1)]
    total = len(expected)
    assert total > 40
    cutoff = "2018-06-30" if source == "openalex" else "2018"
    argv = ["data", "build", "--from", source, str(snapshot), "--test-after", cutoff, *SIZES, "--quiet"]
    assert main([*argv, "--out-dir", str(tmp_path / "refused"), "--max-bad-rows", str(total - 1)]) == 2
    error = capsys.readouterr().err.strip()
    assert f"{total} bad row(s) in all, more than --max-bad-rows {total - 1}" in error and len(error.splitlines()) == 1
    assert not (tmp_path / "refused").exists()
    assert main([*argv, "--out-dir", str(tmp_path / "suite"), "--max-bad-rows", str(total)]) == 0
    report = orjson.loads((tmp_path / "suite" / BUILD_FILE).read_bytes())
    assert report["counts"]["bad_rows"] == total
    assert len(report["bad_rows"]) == min(total, 100)
    assert all(row.startswith(prefix) for row, prefix in zip(report["bad_rows"], expected, strict=False))
    assert main([*argv[:4], str(clean), *argv[5:], "--out-dir", str(tmp_path / "clean-suite")]) == 0
    with_bad, without = digests(tmp_path / "suite"), digests(tmp_path / "clean-suite")
    for describing in (BUILD_FILE, ".scidocs-eval-files.json"):  # the report, and the folder's manifest of it
        assert with_bad.pop(describing) != without.pop(describing)
    assert with_bad == without and len(without) > 20


@pytest.mark.parametrize(("source", "part", "line", "path"), [
    ("openalex", "data/works/updated_date=2024-07-15/part_999.gz", b'{"id": "W5", "publication_date": 123}\n',
     "publication_date"),
    ("openalex", "data/works/updated_date=2024-07-15/part_999.gz", b'{"id": "W5", "referenced_works": "W1"}\n',
     "referenced_works"),
    ("openalex", "data/works/updated_date=2024-07-15/part_999.gz", b'{"id": "W5", "title": ["x"]}\n', "title"),
    ("openalex", "data/works/updated_date=2024-07-15/part_999.gz",
     b'{"id": "W5", "mesh": [{"descriptor_name": "Asthma", "is_major_topic": "true"}]}\n', "mesh[0].is_major_topic"),
    ("s2", "papers/part_999.gz", b'{"corpusid": "abc", "title": "x"}\n', "corpusid"),
    ("s2", "citations/part_999.gz", b'{"citingcorpusid": 5, "citedcorpusid": "7"}\n', "citedcorpusid"),
])
def test_the_issues_wrong_types_stop_the_build_naming_file_line_and_field(
        source: str, part: str, line: bytes, path: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    clean = tmp_path / "clean"
    write_synthetic_snapshot(clean, 60, source=source, seed=3)
    snapshot = _copy_with(clean, tmp_path, {part: [b"\n", line]})
    assert main(["data", "build", "--from", source, str(snapshot), "--out-dir", str(tmp_path / "suite"), *SIZES,
                 "--quiet"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"scidocs-eval: error: {snapshot / part}:2: {path}: wrong type (Expected")
    assert "1 bad row(s) in all, more than --max-bad-rows 0" in error and len(error.splitlines()) == 1
    assert not (tmp_path / "suite").exists()


@pytest.mark.parametrize(("argv", "message"), [
    (["--from", "crossref", "X"], "--from: the source must be one of openalex, s2"),
    (["--from", "openalex", "/nonexistent/snapshot"], "no such folder"),
    (["--from", "s2", "{openalex}"], "no papers/*.gz"),
    (["--from", "openalex", "{openalex}", "--papers", "p.jsonl"], "--papers is for the other ways"),
    (["--from", "openalex", "{openalex}", "--years", "2020-2010"], "ends before it starts"),
    (["--from", "openalex", "{openalex}", "--papers-per-class", "4"], "--papers-per-class"),
    (["--from", "openalex", "{openalex}", "--max-bad-rows", "-1"], "--max-bad-rows"),
    (["--from", "openalex", "{openalex}", "--years", "2030-"], "no work is left after the filters"),
])
def test_bad_arguments_are_one_line(openalex: Path, tmp_path: Path, capsys: pytest.CaptureFixture, argv: list[str],
                                    message: str) -> None:
    argv = [a.replace("{openalex}", str(openalex)) for a in argv]
    assert main(["data", "build", *argv, "--out-dir", str(tmp_path / "suite"), "--quiet"]) == 2
    error = capsys.readouterr().err.strip()
    assert message in error, error
    assert not (tmp_path / "suite").exists()


def test_a_folder_of_the_users_is_refused_and_no_spill_is_left(openalex: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert main(["data", "build", "--from", "openalex", str(openalex), "--out-dir", str(out), *SIZES,
                 "--quiet"]) == 2
    assert "not empty and was not written by" in capsys.readouterr().err
    assert (out / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


@pytest.mark.parametrize(("module", "engine", "extra"), [("duckdb", "duckdb", "graph"), ("pyspark", "spark", "spark")])
def test_a_missing_engine_names_its_extra(openalex: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture, module: str, engine: str, extra: str) -> None:
    for name in [m for m in sys.modules if m == module or m.startswith(f"{module}.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, module, None)
    assert main(["data", "build", "--from", "openalex", str(openalex), "--engine", engine, "--out-dir",
                 str(tmp_path / "suite"), "--quiet"]) == 2
    error = capsys.readouterr().err.strip()
    assert f"(the [{extra}] extra)" in error and len(error.splitlines()) == 1, error
    assert not (tmp_path / "suite").exists()


# -- the check reads a part as Python's gzip module reads it, line by line -------------------------------------------

def _scanned_line_by_line(part: Path) -> tuple[int, tuple[tuple[int, str], ...]]:
    """The check's answer for every line of `part` read by Python's gzip module, one line at a time."""
    check = record_decoder(OPENALEX_WORK, "id")
    records, bad = 0, []
    with gzip.open(part, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if raw.strip():
                why = check(raw)
                records += why is None
                bad += [] if why is None else [(number, why)]
    return records, tuple(bad)


def test_the_block_scan_finds_what_a_line_by_line_read_finds(openalex: Path, tmp_path: Path) -> None:
    """Lines across block boundaries, blank and whitespace lines, CRLF, a last line without a newline, bad rows of
    each kind, parts of several gzip members with zero padding between them: the same records and the same bad
    rows (line, why) at every block size."""
    good = gzip.decompress(sorted(openalex.rglob("*.gz"))[0].read_bytes()).splitlines(keepends=True)[:40]
    lines = [*good[:10], b"\n", b"   \r\n", good[10].replace(b"\n", b"\r\n"), b'[1, 2, 3]\n',
             b'{"title": "a work without its id"}\n', b'{"id": "https://openalex.org/W9", "title": 5}\n',
             b'{"id": "https://openalex.org/W9", "title": "broken\n', *good[11:], b'{"id": "W1"}']
    text = b"".join(lines)
    single, members = tmp_path / "single.gz", tmp_path / "members.gz"
    single.write_bytes(gzip.compress(text, mtime=0))
    members.write_bytes(gzip.compress(text[:777], mtime=0) + b"\x00" * 5 + gzip.compress(text[777:], mtime=0))
    for part in (single, members):
        expected = _scanned_line_by_line(part)
        assert len(expected[1]) == 4 and expected[0] == len(good) + 1
        for block in (1, 7, 100, 4096, 1 << 20):
            scan = scan_part(part, OPENALEX_WORK, "id", block=block)
            assert (scan.records, scan.bad, scan.damaged) == (*expected, None), (part.name, block)


@pytest.mark.parametrize("damage", ["truncated", "corrupt", "trailing garbage", "not gzip"])
def test_a_damaged_part_is_found_by_the_block_scan_as_by_gzip(tmp_path: Path, damage: str) -> None:
    text = GOOD * 2000
    data = gzip.compress(text, mtime=0)
    data = {"truncated": data[:-12], "corrupt": data[:-8] + bytes([data[-8] ^ 0xFF]) + data[-7:],
            "trailing garbage": data + b"garbage", "not gzip": text}[damage]
    part = tmp_path / "part.gz"
    part.write_bytes(data)
    with pytest.raises((EOFError, OSError, zlib.error)):
        _scanned_line_by_line(part)
    for block in (5, 1 << 20):
        scan = scan_part(part, OPENALEX_WORK, "id", block=block)
        assert scan.damaged is not None and scan.damaged.startswith("damaged gzip part after line ")
