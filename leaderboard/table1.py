"""Render Table 1 (12 SciDocs columns + Avg) from RunResults, with the paper's published rows."""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.task import TASKS, TaskResult

COLUMNS: dict[str, str] = {
    "mag_f1": "MAG F1", "mesh_f1": "MeSH F1",
    "coview_map": "Co-View MAP", "coview_ndcg": "Co-View nDCG",
    "coread_map": "Co-Read MAP", "coread_ndcg": "Co-Read nDCG",
    "cite_map": "Cite MAP", "cite_ndcg": "Cite nDCG",
    "cocite_map": "Co-Cite MAP", "cocite_ndcg": "Co-Cite nDCG",
    "recomm_ndcg": "Recomm nDCG", "recomm_p1": "Recomm P@1",
}
"""Table 1 column keys in the paper's order, with their headers."""


@dataclass(frozen=True)
class PaperRow:
    """A published row: model name, year and the 12 values plus the paper's Avg."""

    model: str
    year: str
    values: dict[str, float]
    avg: float


def paper_rows() -> list[PaperRow]:
    """The paper's Table 1 rows and the two published SPECTER rows (our copy of the figures)."""
    text = resources.files("scidocs_eval.leaderboard").joinpath("paper_table1.tsv").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    rows = []
    for record in csv.DictReader(lines, delimiter="\t"):
        values = {key: float(record[key]) for key in COLUMNS}
        rows.append(PaperRow(record["model"], record["year"], values, float(record["avg"])))
    return rows


def _cell(value: float | None) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.2f}"


def _by_column(result: RunResult, values_of: Callable[[TaskResult], Mapping[str, float]]) -> dict[str, float]:
    """Column key -> value, from each task's `values_of(task_result)` (metric -> value) through its spec's table1."""
    row = {}
    for name, task_result in result.tasks.items():
        table1 = TASKS[name].spec.table1
        for metric, value in values_of(task_result).items():
            if metric in table1:
                row[table1[metric]] = value
    return row


def table1_row(result: RunResult) -> dict[str, float]:
    """Table 1 column key -> value, for the columns this run filled."""
    return _by_column(result, lambda task_result: task_result.metrics)


def result_ci(result: RunResult) -> dict[str, list[float]]:
    """Column -> 95% bootstrap interval [low, high], where the results file holds one."""
    return _by_column(result, lambda task_result: task_result.ci)


def _result_std(result: RunResult) -> dict[str, float]:
    """Column -> standard deviation over seeds, where a task reports one (recommendation)."""
    return _by_column(result, lambda task_result: task_result.details.get("std", {}))


def distinguishing_details(results: Sequence[RunResult]) -> list[list[str]]:
    """For each result, what its label must add so that rows scored differently are told apart: the split
    when not all results share it, the suite (its folder's name; its path when two folders share a name) when not
    all share it."""
    splits = [str(result.settings.get("split", "test")) for result in results]
    suites = [str(result.settings.get("data", "not recorded")) for result in results]
    names_unique = len({Path(folder).name for folder in set(suites)}) == len(set(suites))
    shown = [f"suite {Path(folder).name if names_unique else folder}" for folder in suites]
    return [([f"{split} split"] if len(set(splits)) > 1 else []) + ([suite] if len(set(suites)) > 1 else [])
            for split, suite in zip(splits, shown)]


def _label(name: str, result: RunResult, details: Sequence[str] = ()) -> tuple[str, str | None]:
    """Our row's label and footnote: "(ours)", the adapter's detail (e.g. a checkpoint that is not the paper's),
    "not a paper baseline" for an adapter that reproduces no paper row, "synthetic demo suite" for demo runs."""
    adapter = result.settings.get("adapter") or {}
    detail = adapter.get("row_detail")
    kinds = ["ours", *details]
    if adapter and not adapter.get("paper_row"):
        kinds.append("not a paper baseline")
    if result.synthetic:
        kinds.append("synthetic demo suite")
    return f"{name}{f' [{detail}]' if detail else ''} ({', '.join(kinds)})", adapter.get("row_note")


def paper_row_name(result: RunResult) -> str | None:
    """The paper's row to read beside `result`: the adapter's declared row, else the row whose name is the
    result's model name (any case), else None."""
    declared = (result.settings.get("adapter") or {}).get("paper_row")
    by_name = {row.model.lower(): row.model for row in paper_rows()}
    return declared or by_name.get(result.model.lower())


def render_table1(results: Sequence[RunResult], names: Sequence[str] | None = None,
                  include_paper: bool | Literal["same-name"] = True, ci: bool = False) -> str:
    """Markdown Table 1: our rows (named by `names` or each result's model) then the paper's (all of them, or
    with `include_paper="same-name"` only the rows of the same name as ours, see `paper_row_name`).

    Avg is the plain mean of the 12 columns; a row missing a column gets "—" for Avg and a note saying which
    columns are missing, never an average of fewer numbers. With `ci`, each value is followed by its 95%
    bootstrap interval (in place of the recommendation's ± standard deviation over seeds).
    """
    names = list(names) if names is not None else [r.model for r in results]
    header = "| Model | " + " | ".join(COLUMNS.values()) + " | Avg |"
    lines = [header, "|" + "---|" * (len(COLUMNS) + 2)]
    notes = []
    for name, result, details in zip(names, results, distinguishing_details(results)):
        row = table1_row(result)
        label, note = _label(name, result, details)
        if note:
            notes.append(f"{label}: {note}")
        missing = [COLUMNS[c] for c in COLUMNS if c not in row]
        avg = None if missing else sum(row[c] for c in COLUMNS) / len(COLUMNS)
        stds = {} if ci else _result_std(result)
        intervals = result_ci(result) if ci else {}
        cells = [_cell(row.get(c)) + (f" ± {stds[c]:.2f}" if c in stds else "")
                 + (f" [{intervals[c][0]:.2f}, {intervals[c][1]:.2f}]" if c in intervals else "") for c in COLUMNS]
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {_cell(avg)} |")
        if missing:
            notes.append(f"{label}: no Avg, missing {', '.join(missing)}.")
        if stds:
            notes.append(f"{label}: ± is the standard deviation over the ranker's seeds.")
        if ci and len(intervals) < len(row):
            notes.append(f"{label}: no interval where the results file has none (written before scidocs-eval "
                         "kept per-item results).")
    if ci:
        notes.append("[low, high]: 95% bootstrap interval over the task's queries, test papers or impressions "
                     "(recommendation: the ranker's seeds resampled too); see docs/significance.md.")
    if include_paper:
        wanted = {paper_row_name(result) for result in results}
        lines += [f"| {row.model} (paper) | " + " | ".join(_cell(row.values[c]) for c in COLUMNS)
                  + f" | {_cell(row.avg)} |" for row in paper_rows()
                  if include_paper is True or row.model in wanted]
    if notes:
        lines.append("")
        lines += [f"- {note}" for note in notes]
    return "\n".join(lines) + "\n"
