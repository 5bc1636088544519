"""Table 1: the paper's column order, its published rows, Avg as the plain mean of 12, missing columns said so;
confidence intervals read once (by `RunResult.load`), shown per column, and a malformed one refused."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from scidocs_eval.cli import main
from scidocs_eval.errors import InputError
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.task import TaskResult
from scidocs_eval.leaderboard import COLUMNS, paper_rows, render_table1
from scidocs_eval.leaderboard.runs import load_run

HEADER = ("| Model | MAG F1 | MeSH F1 | Co-View MAP | Co-View nDCG | Co-Read MAP | Co-Read nDCG | Cite MAP | Cite nDCG "
          "| Co-Cite MAP | Co-Cite nDCG | Recomm nDCG | Recomm P@1 | Avg |")

FULL_METRICS = {
    "mag": {"f1": 80.0}, "mesh": {"f1": 85.5}, "coview": {"map": 80.25, "ndcg": 90.0},
    "coread": {"map": 81.0, "ndcg": 90.5}, "cite": {"map": 85.0, "ndcg": 93.0},
    "cocite": {"map": 84.0, "ndcg": 92.0}, "recomm": {"adj-NDCG": 53.0, "adj-P@1": 19.0},
}


def run_result(metrics: dict[str, dict[str, float]], model: str = "mine", synthetic: bool = False) -> RunResult:
    tasks = {name: TaskResult(name, values, coverage={}) for name, values in metrics.items()}
    return RunResult(model=model, tasks=tasks, synthetic=synthetic)


def test_column_order() -> None:
    assert list(COLUMNS) == ["mag_f1", "mesh_f1", "coview_map", "coview_ndcg", "coread_map", "coread_ndcg",
                             "cite_map", "cite_ndcg", "cocite_map", "cocite_ndcg", "recomm_ndcg", "recomm_p1"]
    assert render_table1([], include_paper=False).splitlines()[0] == HEADER


def test_paper_rows_carry_published_values() -> None:
    rows = {row.model: row for row in paper_rows()}
    assert list(rows)[:10] == ["Random", "Doc2vec", "Fasttext-sum", "SIF", "ELMo", "Citeomatic", "SGC", "SciBERT",
                               "Sent-BERT", "SPECTER"]
    specter = rows["SPECTER"]
    assert [specter.values[c] for c in COLUMNS] == [82.0, 86.4, 83.6, 91.5, 84.5, 92.4, 88.3, 94.9, 88.1, 94.8,
                                                    53.9, 20.0]
    assert specter.avg == 80.0 and specter.year == "2020"
    assert rows["Random"].values["mag_f1"] == 4.8 and rows["Random"].avg == 32.5
    for row in rows.values():
        assert abs(sum(row.values.values()) / 12 - row.avg) < 0.06, row.model
    table = render_table1([])
    assert ("| SPECTER (paper) | 82.00 | 86.40 | 83.60 | 91.50 | 84.50 | 92.40 | 88.30 | 94.90 | 88.10 | 94.80 "
            "| 53.90 | 20.00 | 80.00 |") in table.splitlines()
    assert "| Random (paper) | 4.80 | 9.40 |" in table


def test_full_row_average_is_plain_mean_of_twelve() -> None:
    result = run_result(FULL_METRICS, synthetic=True)
    values = [v for metrics in FULL_METRICS.values() for v in metrics.values()]
    lines = render_table1([result], include_paper=False).splitlines()
    assert lines[2] == ("| mine (ours, synthetic demo suite) | 80.00 | 85.50 | 80.25 | 90.00 | 81.00 | 90.50 | 85.00 "
                        f"| 93.00 | 84.00 | 92.00 | 53.00 | 19.00 | {sum(values) / 12:.2f} |")
    assert f"{sum(values) / 12:.2f}" == "77.77"
    assert len(lines) == 3


def test_missing_columns_give_no_average_and_a_note() -> None:
    partial = {name: values for name, values in FULL_METRICS.items() if name not in ("recomm", "mesh")}
    lines = render_table1([run_result(partial), run_result(FULL_METRICS, model="other")], names=["A", "B"],
                          include_paper=False).splitlines()
    assert lines[2] == ("| A (ours) | 80.00 | — | 80.25 | 90.00 | 81.00 | 90.50 | 85.00 | 93.00 | 84.00 | 92.00 "
                        "| — | — | — |")
    assert lines[3].startswith("| B (ours) | 80.00 | 85.50 |") and lines[3].endswith("| 77.77 |")
    assert lines[-1] == "- A (ours): no Avg, missing MeSH F1, Recomm nDCG, Recomm P@1."


def test_standard_deviation_shown_for_seeded_tasks() -> None:
    result = run_result(FULL_METRICS)
    result.tasks["recomm"].details["std"] = {"adj-NDCG": 0.25, "adj-P@1": 1.5}
    table = render_table1([result], include_paper=False)
    assert "| 53.00 ± 0.25 | 19.00 ± 1.50 | 77.77 |" in table
    assert "- mine (ours): ± is the standard deviation over the ranker's seeds." in table


def test_intervals_come_from_the_results_reader_and_map_to_columns(tmp_path: Path) -> None:
    result = run_result(FULL_METRICS)
    result.tasks["cite"].ci = {"map": [83.5, 86.0], "ndcg": [92, 94]}
    path = result.save(tmp_path / "mine.results.json")
    assert RunResult.load(path).tasks["cite"].ci == {"map": [83.5, 86.0], "ndcg": [92, 94]}
    run = load_run(path)
    assert run.column_ci() == {"cite_map": (83.5, 86.0), "cite_ndcg": (92, 94)}
    assert "| 85.00 [83.50, 86.00] | 93.00 [92.00, 94.00] |" in render_table1([run.result], ci=True)


@pytest.mark.parametrize(("ci", "problem"), [
    ({"f1": [90, 80]}, "task 'mag': ci of 'f1' is not an interval: [90, 80]"),
    ({"f1": [70, "nan"]}, "task 'mag': ci of 'f1' is not an interval: [70, 'nan']"),
    ({"f1": [70]}, "task 'mag': ci of 'f1' must be [low, high], got [70]"),
    ({"f1": "70-80"}, "task 'mag': ci of 'f1' must be [low, high], got '70-80'"),
    ([70, 80], "malformed results file: task 'mag': field 'ci' must be an object, got list [70, 80]"),
])
def test_a_malformed_interval_is_a_one_line_error_naming_file_and_task(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], ci: object, problem: str) -> None:
    data = run_result(FULL_METRICS).to_dict()
    data["tasks"]["mag"]["ci"] = ci
    path = tmp_path / "bad.results.json"
    path.write_bytes(orjson.dumps(data))
    with pytest.raises(InputError) as error:
        RunResult.load(path)
    assert str(error.value) == f"{path}: {problem}"
    for command in (["report", str(path), "--out", str(tmp_path / "site")], ["table", str(path)],
                    ["plot", "results", str(path), "--out", str(tmp_path / "chart.png")]):
        assert main(command) == 2
        assert capsys.readouterr().err == f"scidocs-eval: error: {path}: {problem}\n"
    assert not (tmp_path / "site").exists() and not (tmp_path / "chart.png").exists()
