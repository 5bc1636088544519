"""`data verify`: counts per task and split, every problem found, and the exit status."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from scidocs_eval.cli.main import main
from scidocs_eval.errors import InputError
from scidocs_eval.evaluation.verify import verify_suite
from scidocs_eval.formats.suite import Suite


@pytest.fixture
def suite_copy(demo_suite: Suite, tmp_path: Path) -> Path:
    """A writable copy of the demo suite."""
    return Path(shutil.copytree(demo_suite.root, tmp_path / "suite"))


def _append(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)


def _messages(root: Path) -> list[str]:
    return [str(p) for p in verify_suite(root).problems]


def test_clean_suite_counts_match_the_files(demo_suite: Suite, capsys: pytest.CaptureFixture[str]) -> None:
    report = verify_suite(demo_suite.root)
    assert report.problems == []
    assert report.complete == ["mag", "mesh", "coview", "coread", "cite", "cocite", "recomm"]
    assert report.counts["mag"]["test"]["train_papers"] == len(demo_suite.labels("mag", "train").ids)
    qrels = demo_suite.qrels("cite", "test")
    assert report.counts["cite"]["test"] == {
        "queries": len(qrels.candidates), "pairs": sum(map(len, qrels.candidates.values())),
        "positives": sum(g for grades in qrels.relevance.values() for g in grades.values())}
    assert report.counts["recomm"]["val"]["impressions"] == len(demo_suite.impressions("val"))
    assert report.counts["recomm"]["test"]["train_impressions"] == len(demo_suite.impressions("train"))
    assert report.metadata["recomm"] == len(demo_suite.metadata("recomm"))
    assert main(["data", "verify", str(demo_suite.root)]) == 0
    out = capsys.readouterr().out
    assert "(SYNTHETIC demo suite)" in out and "0 error(s), 0 warning(s)" in out
    assert "usable: tasks with all their files: mag, mesh, coview, coread, cite, cocite, recomm" in out


def test_every_problem_is_reported(suite_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = Suite(suite_copy)
    mag_id = suite.labels("mag", "train").ids[0]
    _append(suite_copy / "mag/train.csv", f"{mag_id},3\nnot-a-paper,1\n")
    qrels = suite.qrels("cite", "test")
    query, candidates = next(iter(qrels.candidates.items()))
    grade = qrels.relevance[query][candidates[0]]
    _append(suite_copy / "cite/test.qrel", f"{query} 0 {candidates[0]} {grade}\nghost-q 0 {candidates[1]} 0\n")
    impression = suite.impressions("test")[0]
    rows = (suite_copy / "recomm/test.csv").read_text().splitlines()
    shown = ",".join(impression.shown)
    _append(suite_copy / "recomm/test.csv", f'{impression.query_id},elsewhere,"{shown}"\n'
                                            f'{impression.query_id},nowhere,"{shown}"\n{rows[1]}\n')
    problems = _messages(suite_copy)
    n_rows = len(rows)
    assert problems == [
        f"WARNING [repeated-paper] mag/train.csv: 1 paper(s) listed more than once: {mag_id}",
        "WARNING [paper-without-metadata] mag/train.csv: 1 id(s) have no metadata in paper_metadata_mag_mesh.json: "
        "not-a-paper",
        "WARNING [repeated-judgement] cite/test.qrel: 1 line(s) repeat a judged pair with its grade (read once)",
        "WARNING [query-without-positive] cite/test.qrel: 1 query(ies) without a positive (they score 0): ghost-q",
        "WARNING [paper-without-metadata] cite/test.qrel: 1 id(s) have no metadata in "
        "paper_metadata_view_cite_read.json: ghost-q",
        f"ERROR recomm/test.csv:{n_rows + 1}: query {impression.query_id!r}: clicked paper 'elsewhere' "
        "(field 'clicked_id') is not in the shown list",
        f"ERROR recomm/test.csv:{n_rows + 2}: query {impression.query_id!r}: clicked paper 'nowhere' "
        "(field 'clicked_id') is not in the shown list",
        f"WARNING [repeated-impression] recomm/test.csv: 1 line(s) repeat an impression (each is scored): line "
        f"{n_rows + 3} repeats 2",
    ]
    assert main(["data", "verify", str(suite_copy)]) == 1
    out = capsys.readouterr().out
    assert "2 error(s), 6 warning(s)" in out
    assert "NOT usable: tasks with all their files: mag, mesh, coview, coread, cite, cocite" in out


def test_warnings_only_is_usable_unless_strict(suite_copy: Path) -> None:
    _append(suite_copy / "mesh/test.csv", "unknown-paper,2\n")
    assert main(["data", "verify", str(suite_copy)]) == 0
    assert main(["data", "verify", str(suite_copy), "--strict"]) == 1


def test_unparsable_files_are_errors_and_stop_only_their_task(suite_copy: Path) -> None:
    _append(suite_copy / "mag/val.csv", "some-paper,not-a-number\n")
    (suite_copy / "coread/val.qrel").write_text("q1 0 c1\n")
    (suite_copy / "recomm/propensity_scores.json").write_bytes(orjson.dumps({"scores": [1.0, 0.5]}))
    report = verify_suite(suite_copy)
    lines = (suite_copy / "mag/val.csv").read_text().count("\n")
    beyond = {split: sum(i.clicked_position > 2 for i in Suite(suite_copy).impressions(split))
              for split in ("train", "val", "test")}
    assert [str(p).split(" (no propensity")[0] for p in report.errors] == [
        f"ERROR mag/val.csv:{lines}: field 'class_label' is string 'not-a-number' (not an integer), expected an "
        "integer",
        "ERROR coread/val.qrel:1: expected 4 fields 'query_id 0 candidate_id relevance', got 3",
        *(f"ERROR [propensity-positions] recomm/{split}.csv: {beyond[split]} impression(s) have their click at a "
          "position beyond the 2 of recomm/propensity_scores.json" for split in ("train", "val", "test")),
    ]
    assert report.complete == ["mesh", "coview", "cite", "cocite"]
    assert not report.usable()


def test_missing_metadata_and_partial_tasks(suite_copy: Path) -> None:
    (suite_copy / "paper_metadata_view_cite_read.json").unlink()
    (suite_copy / "mesh/val.csv").unlink()
    for task in ("coread", "recomm"):
        shutil.rmtree(suite_copy / task)
    report = verify_suite(suite_copy)
    assert [str(p) for p in report.problems] == [
        "WARNING mesh: missing mesh/val.csv",
        "WARNING paper_metadata_view_cite_read.json: file not found (expected a JSON object "
        "{paper_id: {paper_id, title, abstract, ...}}) (`run` does not read it; the ids of the tasks that use it "
        "cannot be checked and `baseline` cannot embed them)",
    ]
    assert report.absent == ["coread", "recomm"]
    # `run` scores the ranking tasks without their metadata file (only recomm reads its metadata), and mesh's test
    # split without its val file
    assert report.complete == ["mag", "mesh", "coview", "cite", "cocite"]


def test_empty_directory_is_not_usable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "verify", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "not in this suite: mag, mesh, coview, coread, cite, cocite, recomm" in out
    assert "NOT usable: tasks with all their files: none" in out


def test_not_a_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="nothing-here: not a directory"):
        verify_suite(tmp_path / "nothing-here")


def test_a_folder_no_task_reads_is_checked_and_scored_as_the_task_with_a_folder_parameter(
        suite_copy: Path, tmp_path: Path) -> None:
    """A label task of `data build --label-task venue` has no registered task of its own: verify checks it as mag
    reads it, and `run --task-param mag.folder=venue` scores it (the same reader, the same rules)."""
    shutil.copytree(suite_copy / "mag", suite_copy / "venue")
    report = verify_suite(suite_copy)
    assert "venue" in report.complete and report.counts["venue"]["test"] == report.counts["mag"]["test"]
    _append(suite_copy / "venue/test.csv", "some-paper,x\n")
    lines = (suite_copy / "venue/test.csv").read_text().count("\n")
    report = verify_suite(suite_copy)  # which task reads it is a guess: a folder none parses is a warning
    assert "venue" not in report.complete and report.usable()
    assert [str(p) for p in report.problems] == [f"WARNING venue: no registered task reads this folder (as mag reads "
                                                 f"it, venue/test.csv:{lines}: field 'class_label' is string 'x' "
                                                 "(not an integer), expected an integer)"]
    (suite_copy / "venue/test.csv").write_text((suite_copy / "mag/test.csv").read_text())
    store = tmp_path / "e.jsonl"
    store.write_text("".join(orjson.dumps({"paper_id": p, "embedding": [float(i % 7), 1.0]}).decode() + "\n"
                             for i, p in enumerate(Suite(suite_copy).metadata("mag_mesh"))))
    out = tmp_path / "venue.json"
    assert main(["run", "--embeddings", str(store), "--data", str(suite_copy), "--tasks", "mag", "--task-param",
                 "mag.folder=venue", "-o", str(out), "--quiet"]) == 0
    assert main(["run", "--embeddings", str(store), "--data", str(suite_copy), "--tasks", "mag", "-o",
                 str(tmp_path / "mag.json"), "--quiet"]) == 0
    venue, mag = (orjson.loads(p.read_bytes())["tasks"]["mag"]["metrics"] for p in (out, tmp_path / "mag.json"))
    assert venue == mag
