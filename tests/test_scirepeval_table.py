"""SciRepEval's results table (`table --benchmark scirepeval`, the report's second table): averages of a real run on
a synthetic SciRepEval copy, "—" and a note for a missing task, published rows, the synthetic label."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import subprocess
from pathlib import Path

import pytest

from scidocs_eval.cli.main import main
from scidocs_eval.data.scirepeval import write_embeddings_jsonl
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.evaluation.task import TASKS, task_names
from scidocs_eval.leaderboard import scirepeval_table
from scidocs_eval.leaderboard.scirepeval_table import COLUMNS, GROUPS, S2AND, our_row, render_scirepeval_table
from scidocs_eval.tasks.scirepeval import write_synthetic_scirepeval

REPO = Path(__file__).resolve().parents[1]
CHECKOUT = Path(os.environ.get("SCIREPEVAL_CHECKOUT", "/work/.mirror/allenai+scirepeval/repo"))
COMMIT = "e04594e6401cb68fb4ddf6daa801fb219cccc0bb"
README_NAMES = {
    "MeSH Descriptors": "scirepeval-mesh", "Fields of study": "scirepeval-fields-of-study",
    "Biomimicry": "scirepeval-biomimicry", "DRSM": "scirepeval-drsm", "SciDocs-MAG": "scirepeval-scidocs-mag",
    "SciDocs-Mesh Diseases": "scirepeval-scidocs-mesh", "Citation Count": "scirepeval-citation-count",
    "Year of Publication": "scirepeval-publication-year", "Peer Review Score": "scirepeval-peer-review-score",
    "Max Author hIndex": "scirepeval-max-hindex", "Tweet Mentions": "scirepeval-tweet-mentions",
    "Same Author Detection": "scirepeval-same-author-detection",
    "Highly Influential Citations": "scirepeval-highly-influential-citations", "S2AND*": S2AND,
    "Paper-Reviewer Matching**": "scirepeval-paper-reviewer-matching", "RELISH": "scirepeval-relish",
    "SciDocs-Cite": "scirepeval-scidocs-cite", "SciDocs-CoCite": "scirepeval-scidocs-cocite",
    "SciDocs-CoView": "scirepeval-scidocs-coview", "SciDocs-CoRead": "scirepeval-scidocs-coread",
    "Search": "scirepeval-search", "NFCorpus": "scirepeval-nfcorpus", "TREC-CoVID": "scirepeval-trec-covid",
}
"""The task names of SciRepEval's README table -> ours (Citation Prediction has no test data: not a task)."""


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunResult, Path]:
    """A run of benchmark scirepeval (few-shot variants: 1 iteration) on the smallest synthetic copy, saved."""
    folder = tmp_path_factory.mktemp("scirepeval-table")
    vectors = write_synthetic_scirepeval(folder / "data", seed=0, size=1)
    embeddings = write_embeddings_jsonl(folder / "embeddings.jsonl", vectors)
    params = {name: {"iterations": 1} for name in task_names(benchmark="scirepeval") if name.endswith("-shot")}
    path = folder / "results" / "topicvec.results.json"
    result = evaluate(embeddings, RunConfig(data=folder / "data", benchmarks="scirepeval", task_params=params,
                                            output=path, progress=False, cache=False), model="topicvec")
    assert not result.failed and not result.skipped
    return result, path


def _cells(markdown: str, label: str) -> list[str]:
    line = next(line for line in markdown.splitlines() if line.startswith(f"| {label} |"))
    return [cell.strip() for cell in line.strip("|").split("|")][1:]


def test_groups_cover_every_registered_task_once_with_metrics_it_reports() -> None:
    listed = [task for tasks in GROUPS.values() for task in tasks]
    assert len(listed) == len(set(listed))
    base = [name for name in task_names(benchmark="scirepeval") if not name.endswith("-shot")]
    assert sorted(listed) == sorted([*base, S2AND])
    for tasks in GROUPS.values():
        for task, metrics in tasks.items():
            assert task == S2AND or set(metrics) <= set(TASKS[task].spec.metrics)
    assert list(COLUMNS) == ["In-Train", "Out-of-Train", "SciDocs", "Average"]


def _git_show(path: str) -> str | None:
    done = subprocess.run(["git", "-C", str(CHECKOUT), "show", f"{COMMIT}:{path}"], capture_output=True, text=True,
                          check=False)
    return done.stdout if done.returncode == 0 else None


@pytest.mark.skipif(not CHECKOUT.exists(), reason="no allenai/scirepeval checkout (SCIREPEVAL_CHECKOUT)")
def test_groups_follow_the_readmes_train_column_and_published_rows_are_benchmarkings() -> None:
    readme, benchmarking = _git_show("README.md"), _git_show("BENCHMARKING.md")
    if readme is None or benchmarking is None:
        pytest.skip(f"the checkout lacks commit {COMMIT}")
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in readme.splitlines()
            if line.startswith(("|CLF|", "|RGN|", "|PRX|", "|SRCH|"))]
    names = {row[1].split("](")[0].lstrip("["): row[2] for row in rows}
    names.pop("Citation Prediction")  # no test data, no metric
    assert set(names) == set(README_NAMES)
    for readme_name, train in names.items():
        ours = README_NAMES[readme_name]
        column = "In-Train" if train == "Y" else "SciDocs" if ours.startswith("scirepeval-scidocs-") else "Out-of-Train"
        assert ours in GROUPS[column], readme_name
    published = [[cell.replace("**", "") for cell in line.strip("|").split("|")[1:]]
                 for line in benchmarking.splitlines() if line.startswith("|[") or line.startswith("|SciNCL")]
    assert [[float(v) for v in row] for row in published] == [
        [row.values[c] for c in COLUMNS] for row in scirepeval_table.published_rows() if row.source == "paper"]


SPECTER2_CHECKOUT = Path(os.environ.get("SPECTER2_CHECKOUT", "/work/.mirror/allenai+SPECTER2/repo"))


@pytest.mark.skipif(not SPECTER2_CHECKOUT.exists(), reason="no allenai/SPECTER2 checkout (SPECTER2_CHECKOUT)")
def test_specter2_rows_are_its_readmes_in_train_and_the_other_columns_are_left_out_with_why() -> None:
    """The SPECTER2 README's columns besides In-Train are another definition: its SPECTER row differs from
    BENCHMARKING.md's there and agrees on In-Train, which alone is shown."""
    commit = scirepeval_table.SPECTER2_SOURCE.split()[1]
    done = subprocess.run(["git", f"--git-dir={SPECTER2_CHECKOUT}", "show", f"{commit}:README.md"],
                          capture_output=True, text=True, check=False)
    if done.returncode:
        pytest.skip(f"the checkout lacks commit {commit}")
    table = {line.strip("|").split("|")[0].split("](")[0].lstrip("["): line.strip("|").split("|")[1:4]
             for line in done.stdout.splitlines() if line.startswith("|[") and "n/a" not in line}
    cell = {name: [float(v.replace("*", "")) for v in values] for name, values in table.items()}
    specter = next(row for row in scirepeval_table.published_rows() if row.name == "SPECTER")
    assert cell["SPECTER"][0] == specter.values["In-Train"]  # In-Train: one definition
    assert cell["SPECTER"][1] != specter.values["Out-of-Train"]  # Out-of-Train: another
    ours = {row.name: row for row in scirepeval_table.published_rows() if row.source == "SPECTER2 README"}
    assert {name: row.values["In-Train"] for name, row in ours.items()} == {
        "SPECTER2 Base": cell["SPECTER2 Base"][0], "SPECTER2-Adapters": cell["SPECTER2-Adapters"][0]}
    assert all(row.values[c] is None for row in ours.values() for c in ("Out-of-Train", "SciDocs", "Average"))


def test_specter2s_published_rows_show_in_train_alone_and_say_why_once(scored: tuple[RunResult, Path]) -> None:
    markdown = render_scirepeval_table([scored[0]])
    assert "| SPECTER2 Base (SPECTER2 README) | 56.30 | — | — | — |" in markdown
    assert "| SPECTER2-Adapters (SPECTER2 README) | 62.30 | — | — | — |" in markdown
    assert markdown.count("In-Train only, for these SPECTER2 rows") == 1


def test_averages_are_plain_means_of_the_listed_tasks_metrics_in_the_results_file(
        scored: tuple[RunResult, Path]) -> None:
    result, path = scored
    saved = json.loads(path.read_text(encoding="utf-8"))["tasks"]
    markdown = render_scirepeval_table([result])
    cells = dict(zip(COLUMNS, _cells(markdown, "topicvec (ours, synthetic SciRepEval copy)")))
    for column in ("In-Train", "SciDocs"):
        numbers = [saved[task]["metrics"][metric] for task, metrics in GROUPS[column].items() for metric in metrics]
        assert len(numbers) == {"In-Train": 7, "SciDocs": 10}[column]
        assert cells[column] == f"{sum(numbers) / len(numbers):.2f}"
    # S2AND is an Out-of-Train task scidocs-eval cannot run: no Out-of-Train, no Average, and notes saying why
    assert cells["Out-of-Train"] == cells["Average"] == "—"
    for column in ("Out-of-Train", "Average"):
        assert f"no {column}, missing S2AND (not supported by scidocs-eval)." in markdown
    # with S2AND's number the two columns are the means over all their tasks
    with_s2and = dataclasses.replace(result, tasks={**result.tasks, S2AND: dataclasses.replace(
        result.tasks["scirepeval-drsm"], task=S2AND, metrics={"b3_f1": 50.0})})
    row = our_row(with_s2and)
    for column in ("Out-of-Train", "Average"):
        numbers = [50.0 if task == S2AND else saved[task]["metrics"][metric]
                   for task, metrics in COLUMNS[column].items() for metric in metrics]
        assert row.values[column] == pytest.approx(sum(numbers) / len(numbers))
    assert not row.missing


def test_a_missing_task_gives_a_dash_and_a_note_naming_it(scored: tuple[RunResult, Path]) -> None:
    result, _ = scored
    tasks = {name: value for name, value in result.tasks.items() if name != "scirepeval-search"}
    markdown = render_scirepeval_table([dataclasses.replace(result, tasks=tasks, model="partial")])
    cells = dict(zip(COLUMNS, _cells(markdown, "partial (ours, synthetic SciRepEval copy)")))
    assert cells["In-Train"] == "—" and cells["SciDocs"] != "—"
    assert "partial (ours, synthetic SciRepEval copy): no In-Train, missing scirepeval-search." in markdown
    assert "no Average, missing scirepeval-search, S2AND (not supported by scidocs-eval)." in markdown


def test_published_rows_carry_the_tsv_values_and_name_their_source(scored: tuple[RunResult, Path]) -> None:
    text = (REPO / "leaderboard" / "scirepeval_published.tsv").read_text(encoding="utf-8")
    assert text.startswith("# allenai/scirepeval BENCHMARKING.md, commit " + COMMIT)
    records = list(csv.DictReader([line for line in text.splitlines() if not line.startswith("#")], delimiter="\t"))
    assert len(records) == 9
    markdown = render_scirepeval_table([scored[0]])
    labels = [line.split(" | ")[0][2:] for line in markdown.splitlines()[2:] if line.startswith("| ")]
    assert labels == ["topicvec (ours, synthetic SciRepEval copy)", *(f"{r['model']} (paper)" for r in records),
                      "SPECTER2 Base (SPECTER2 README)", "SPECTER2-Adapters (SPECTER2 README)"]
    for record in records:
        assert _cells(markdown, f"{record['model']} (paper)") == [f"{float(record[c]):.2f}" for c in COLUMNS]
    assert "| SPECTER (paper) |" not in render_scirepeval_table([scored[0]], include_paper=False)


def test_synthetic_label_from_the_result_or_the_suites_marker(scored: tuple[RunResult, Path]) -> None:
    result, _ = scored
    assert result.synthetic and our_row(result).label == "topicvec (ours, synthetic SciRepEval copy)"
    # a result that does not say so, from a folder with write_synthetic_scirepeval's marker file: still synthetic
    assert our_row(dataclasses.replace(result, synthetic=False)).synthetic
    real = dataclasses.replace(result, synthetic=False,
                               settings=dataclasses.replace(result.settings, data="/no/such/folder"))
    assert our_row(real).label == "topicvec (ours)"


def test_cli_table_benchmark_scirepeval(scored: tuple[RunResult, Path], capsys: pytest.CaptureFixture[str]) -> None:
    _, path = scored
    assert main(["table", "--benchmark", "scirepeval", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| Model | In-Train | Out-of-Train | SciDocs | Average |")
    assert "| topicvec (ours, synthetic SciRepEval copy) |" in out and "| SPECTER (paper) |" in out
    assert main(["table", str(path)]) == 0  # default: Table 1
    assert capsys.readouterr().out.startswith("| Model | MAG F1 |")


@pytest.mark.parametrize(("argv", "message"), [
    (["--benchmark", "nope"], "unknown benchmark 'nope'"),
    (["--benchmark", "mteb-scidocs"], "holds a task of benchmark mteb-scidocs"),
    (["--benchmark", "scirepeval", "--ci"], "--ci"),
])
def test_cli_table_errors_are_one_line(scored: tuple[RunResult, Path], capsys: pytest.CaptureFixture[str],
                                       argv: list[str], message: str) -> None:
    assert main(["table", *argv, str(scored[1])]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith("scidocs-eval: error: ")
    assert message in captured.err


def test_results_without_a_scirepeval_task_are_an_error_or_left_out(scored: tuple[RunResult, Path]) -> None:
    result, _ = scored
    other = dataclasses.replace(result, tasks={}, model="empty")
    with pytest.raises(ScidocsEvalError, match="holds a SciRepEval task"):
        render_scirepeval_table([other])
    assert "- empty: left out, it holds no SciRepEval task." in render_scirepeval_table([result, other])


def test_report_shows_the_scirepeval_table_second(scored: tuple[RunResult, Path], tmp_path: Path) -> None:
    pytest.importorskip("jinja2")
    from scidocs_eval.leaderboard.report import write_report
    from scidocs_eval.leaderboard.runs import load_runs

    page = write_report(load_runs([scored[1]]), tmp_path / "site").read_text(encoding="utf-8")
    assert not (tmp_path / "site" / "results.png").exists()  # no Table 1 column to chart: no chart, no error
    assert page.index('id="leaderboard"') < page.index('id="scirepeval"')
    table = page[page.index('id="scirepeval"'):]
    assert "topicvec" in table and 'tag synthetic' in table and "SPECTER (paper)" in table
    assert "missing S2AND (not supported by scidocs-eval)" in table
