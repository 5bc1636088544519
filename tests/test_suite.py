"""The suite reader: missing and malformed files name path, line and what was expected; resolving the data dir."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from scidocs_eval.data.resolve import resolve_suite
from scidocs_eval.errors import InputError, SuiteNotFoundError
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.formats.embeddings import EmbeddingStore
from scidocs_eval.formats.suite import Suite
from scidocs_eval.leaderboard.run_table import format_run


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_missing_file_names_path_and_expectation(tmp_path: Path) -> None:
    suite = Suite(tmp_path)
    with pytest.raises(InputError) as caught:
        suite.qrels("cite", "test")
    assert str(caught.value) == (f"{tmp_path / 'cite' / 'test.qrel'}: file not found "
                                 "(expected lines \"query_id 0 candidate_id relevance\")")
    with pytest.raises(InputError, match=r"paper_metadata_recomm\.json: file not found \(expected a JSON object"):
        suite.metadata("recomm")
    with pytest.raises(InputError, match=r"mag/train\.csv: file not found \(expected a header row, then paper_id"):
        suite.labels("mag", "train")


def test_qrels_keep_candidates_once_and_count_repeats(tmp_path: Path) -> None:
    write(tmp_path / "cite" / "val.qrel", "q1 0 a 1\nq1 0 b 0\n\nq1 0 a 1\nq2 0 a 1\n")
    qrels = Suite(tmp_path).qrels("cite", "val")
    assert qrels.candidates == {"q1": ["a", "b"], "q2": ["a"]}
    assert qrels.relevance == {"q1": {"a": 1, "b": 0}, "q2": {"a": 1}}
    assert qrels.repeated == 1


def test_a_pair_judged_twice_with_different_grades_keeps_the_later_grade_counted(tmp_path: Path) -> None:
    """The official qrel format's rule (the official evaluator reads it into a dict), counted for the
    `pair-judged-twice` warning; BEIR, HF parquet and SciRepEval files refuse it (tests/test_task_contract.py)."""
    write(tmp_path / "cite" / "val.qrel", "q1 0 a 1\nq1 0 b 0\n\nq1 0 a 0\n")
    qrels = Suite(tmp_path).qrels("cite", "val")
    assert qrels.relevance == {"q1": {"a": 0, "b": 0}} and qrels.conflicts == 1 and qrels.repeated == 0


@pytest.mark.parametrize("bad_line, message", [
    ("q1 0 a", "expected 4 fields 'query_id 0 candidate_id relevance', got 3"),
    ("q1 0 a 1 extra", "expected 4 fields 'query_id 0 candidate_id relevance', got 5"),
    ("q1 0 a yes", "field 'relevance' is string 'yes' (not an integer), expected an integer grade"),
    ("q1 0 a 0.5", "field 'relevance' is string '0.5' (not an integer), expected an integer grade"),
    ("q1 0 a 100000000000000000000", "field 'relevance' is string '100000000000000000000' (beyond what pytrec_eval "
     "takes: |grade| <= 2147483647; use small grades 0, 1, 2, ...), expected an integer grade"),
])
def test_malformed_qrel_line(tmp_path: Path, bad_line: str, message: str) -> None:
    path = write(tmp_path / "coview" / "test.qrel", f"q0 0 b 1\n{bad_line}\n")
    with pytest.raises(InputError) as caught:
        Suite(tmp_path).qrels("coview", "test")
    assert str(caught.value) == f"{path}:2: {message}"


def test_empty_qrel_file(tmp_path: Path) -> None:
    path = write(tmp_path / "coread" / "test.qrel", "\n")
    with pytest.raises(InputError, match="no qrel lines") as caught:
        Suite(tmp_path).qrels("coread", "test")
    assert str(caught.value).startswith(str(path))


@pytest.mark.parametrize("text, message", [
    ("[1, 2]", "expected a JSON object keyed by paper id, got list"),
    ('{"p1": "a title"}', "paper 'p1': the row is string 'a title', expected an object {paper_id, title,"),
    ('{"p1": {', "malformed JSON"),
])
def test_malformed_metadata(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path / "paper_metadata_mag_mesh.json", text)
    with pytest.raises(InputError) as caught:
        Suite(tmp_path).metadata("mag_mesh")
    assert str(caught.value).startswith(f"{path}: {message}")


def test_papers_are_merged_across_groups(tmp_path: Path) -> None:
    write(tmp_path / "paper_metadata_mag_mesh.json",
          '{"1": {"paper_id": "1", "title": "A", "abstract": null}, "2": {"title": "B", "abstract": "b"}}')
    write(tmp_path / "paper_metadata_view_cite_read.json", '{"2": {"title": "other"}, "3": {"title": ""}}')
    papers = Suite(tmp_path).papers()
    assert [(p.paper_id, p.title, p.abstract) for p in papers] == [("1", "A", ""), ("2", "B", "b"), ("3", "", "")]
    assert [p.has_text for p in papers] == [True, True, False]


def test_recomm_files(tmp_path: Path) -> None:
    write(tmp_path / "recomm" / "test.csv", 'query_id,clicked_id,shown\nq,b,"a,b,c"\n')
    impression = Suite(tmp_path).impressions("test")[0]
    assert (impression.shown, impression.clicked_position, impression.line) == (("a", "b", "c"), 2, 2)
    write(tmp_path / "recomm" / "val.csv", 'query_id,clicked_id,shown\nq,z,"a,b,c"\n')
    with pytest.raises(InputError, match=r"val\.csv:2: query 'q': clicked paper 'z' \(field 'clicked_id'\) is not "
                                         r"in the shown list"):
        Suite(tmp_path).impressions("val")
    write(tmp_path / "recomm" / "propensity_scores.json", '{"scores": [1.0, 0.5]}')
    np.testing.assert_array_equal(Suite(tmp_path).propensities, [1.0, 0.5])
    write(tmp_path / "recomm" / "propensity_scores.json", '{"scores": [1.0, 0]}')
    with pytest.raises(InputError, match=r"field 'scores\[1\]' is 0, expected a positive number"):
        _ = Suite(tmp_path).propensities
    write(tmp_path / "recomm" / "propensity_scores.json", '{"scores": [1.0, "0.5"]}')
    with pytest.raises(InputError, match=r"field 'scores\[1\]' is string '0\.5', expected a finite number"):
        _ = Suite(tmp_path).propensities


@pytest.mark.parametrize("make", ["absent", "empty"])
def test_resolve_suite_without_data_says_how_to_get_it(tmp_path: Path, make: str) -> None:
    root = tmp_path / "data"
    if make == "empty":
        root.mkdir()
    with pytest.raises(SuiteNotFoundError) as caught:
        resolve_suite(root)
    message = str(caught.value)
    assert message.startswith(f"no SciDocs data at {root}.")
    assert f"scidocs-eval data download --out-dir {root}" in message and "--data demo" in message


def test_resolve_suite_default_uses_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCIDOCS_EVAL_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(SuiteNotFoundError, match="no SciDocs data at .*nowhere"):
        resolve_suite(None)
    write(tmp_path / "nowhere" / "cite" / "test.qrel", "q 0 a 1\n")
    suite = resolve_suite(None)
    assert suite.root == tmp_path / "nowhere" and not suite.is_synthetic
    assert resolve_suite(suite) is suite


def test_tasks_with_absent_files_are_skipped_with_a_note(tmp_path: Path) -> None:
    write(tmp_path / "cite" / "test.qrel", "q 0 a 1\nq 0 b 0\n")
    store = EmbeddingStore.from_mapping({"q": [0.0], "a": [1.0], "b": [2.0]})
    result = evaluate(store, RunConfig(data=tmp_path, tasks=["mag", "cite", "cocite"], progress=False))
    assert list(result.tasks) == ["cite"]
    assert result.tasks["cite"].metrics == {"map": 100.0, "ndcg": 100.0}
    assert result.skipped == {"mag": f"missing mag/train.csv, mag/test.csv in {tmp_path}",
                              "cocite": f"missing cocite/test.qrel in {tmp_path}"}
    assert "cocite   skipped: missing cocite/test.qrel" in format_run(result)
