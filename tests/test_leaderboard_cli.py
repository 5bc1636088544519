"""`scidocs-eval leaderboard`: markdown, -o (JSON), --out-dir (HTML) from files, folders and globs; published rows
placed by score without a letter; one-line errors for bad inputs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import orjson
import pytest

from scidocs_eval.cli import main
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.leaderboard.ranking import leaderboard_dict, render_markdown
from scidocs_eval.leaderboard.runs import collect_results
from scidocs_eval.leaderboard.table1 import paper_rows
from scidocs_eval.statistics.ranking_groups import rank_results
from tests.test_ranking_groups import write_three_models


@pytest.fixture(scope="module")
def results_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three results files (two identical models, one clearly better) and a file that is not a results file."""
    folder = tmp_path_factory.mktemp("results")
    write_three_models(folder)
    (folder / "notes.json").write_text('{"comment": "not results"}', encoding="utf-8")
    return folder


def test_folder_glob_and_files_name_the_same_results(results_folder: Path) -> None:
    by_folder, warnings = collect_results([str(results_folder)])
    assert [p.name for p in by_folder] == ["better.results.json", "same.results.json", "twin.results.json"]
    assert warnings == [f"1 JSON file(s) that are not results files, left out: {results_folder / 'notes.json'}"]
    by_glob, _ = collect_results([str(results_folder / "*.results.json")])
    assert by_glob == by_folder


def test_published_rows_are_placed_by_score_marked_and_without_a_letter(results_folder: Path) -> None:
    files, _ = collect_results([str(results_folder)])
    results = [RunResult.load(f) for f in files]
    board = rank_results(results, [r.model for r in results], resamples=300, progress=False)
    text = render_markdown(board)
    mag = text[text.index("### mag"):text.index("### Mean rank")]
    rows = [line.split(" | ") for line in mag.splitlines() if line.startswith("| ") and "Model" not in line]
    scores = [float(row[2]) for row in rows]
    assert scores == sorted(scores, reverse=True)
    published = [row for row in rows if "(published)" in row[1]]
    assert len(published) == len(paper_rows()) and all(row[0] == "| —" and row[4] == "— |" for row in published)
    assert "SciDocs test set" in mag
    data = leaderboard_dict(board)
    assert {row["source"] for row in data["cohorts"][0]["rankings"][0]["published"]} == {"SPECTER paper, Table 1"}


def test_cli_markdown_json_and_html(results_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture,
                                    caplog: pytest.LogCaptureFixture) -> None:
    out, site = tmp_path / "board.json", tmp_path / "site"
    with caplog.at_level("WARNING"):  # warnings are logged: each once (scidocs_eval.warning_groups)
        assert main(["leaderboard", str(results_folder), "--resamples", "300", "-o", str(out), "--out-dir",
                     str(site), "--quiet"]) == 0
    printed = capsys.readouterr()
    assert "| 1 | better |" in printed.out and "that are not results files, left out" in caplog.text
    data = orjson.loads(out.read_bytes())
    assert data["format"] == "scidocs-eval-leaderboard/1" and data["resamples"] == 300
    entries = data["cohorts"][0]["rankings"][0]["entries"]
    assert [e["label"] for e in entries][0] == "better" and entries[0]["group"] == "a"
    page = (site / "index.html").read_text(encoding="utf-8")
    assert "<svg" in page and "table class=\"ranking\"" in page
    # a second run replaces its own outputs
    assert main(["leaderboard", str(results_folder), "--resamples", "300", "-o", str(out), "--out-dir", str(site),
                 "--quiet"]) == 0


@pytest.mark.parametrize("arguments, message", [
    (["missing.results.json"], "no such results file or folder"),
    (["nothing-*.json"], "matches no results file"),
    (["--resamples", "5", "{folder}"], "--resamples"),
    (["{folder}/notes.json"], "not a scidocs-eval results file"),
])
def test_bad_inputs_are_one_line_errors(results_folder: Path, arguments: list[str], message: str,
                                        capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch,
                                        tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    code = main(["leaderboard", "--quiet", *[a.format(folder=results_folder) for a in arguments]])
    error = capsys.readouterr().err.strip()
    assert code != 0 and message in error and "Traceback" not in error and len(error.splitlines()) == 1, error


def test_an_output_that_is_an_input_or_a_file_of_the_user_is_refused(results_folder: Path, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture) -> None:
    mine = tmp_path / "mine.json"
    mine.write_text("keep me", encoding="utf-8")
    assert main(["leaderboard", str(results_folder), "--json", str(mine), "--quiet"]) != 0  # the hidden alias of -o
    assert mine.read_text(encoding="utf-8") == "keep me"
    assert main(["leaderboard", str(results_folder), "-o", str(results_folder / "same.results.json"),
                 "--quiet"]) != 0
    assert "Traceback" not in capsys.readouterr().err


def test_published_rows_are_not_shown_beside_a_suite_built_from_another_corpus(results_folder: Path,
                                                                               tmp_path: Path) -> None:
    built = tmp_path / "cora-suite"
    built.mkdir()
    (built / "build_report.json").write_text("{}", encoding="utf-8")
    files, _ = collect_results([str(results_folder)])
    results = [RunResult.load(f) for f in files]
    for result in results:
        result.settings = replace(result.settings, data=str(built))
    text = render_markdown(rank_results(results, [r.model for r in results], resamples=200, progress=False))
    assert "(published)" not in text and f"built from another corpus ({built})" in text


def test_files_of_the_same_name_in_two_folders_are_told_apart_by_their_paths(results_folder: Path,
                                                                             tmp_path: Path) -> None:
    from scidocs_eval.leaderboard.ranking import build_leaderboard

    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "same.results.json").write_bytes((results_folder / "same.results.json").read_bytes())
    board, runs, _ = build_leaderboard([str(results_folder), str(copy)], resamples=200, progress=False)
    labels = sorted(run.label for run in runs if run.result.model == "same")
    assert labels == sorted(f"same ({folder / 'same.results.json'})" for folder in (results_folder, copy))
    assert len(board.cohorts[0].labels) == 4
