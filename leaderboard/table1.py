"""Table 1 (12 SciDocs columns + Avg): one row model (`Table1Row`) for our runs and the paper's published rows,
which the markdown table (`render_table1`), the HTML report and `plot results` all render."""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
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


@dataclass(frozen=True)
class Table1Row:
    """One row of Table 1 as every renderer shows it: ours (from a RunResult) or the paper's.

    Args:
        name: the model's name (a run's label, or the paper's model).
        ours: True for a row of ours, False for the paper's.
        values: Table 1 column key -> value, for the columns this row fills.
        avg: the plain mean of the 12 columns; None when a column is missing (never a mean of fewer numbers).
        ci: column -> 95% bootstrap interval, where the results file holds one.
        std: column -> standard deviation over the ranker's seeds, where a task reports one (recommendation).
        detail: what the label adds in brackets (a checkpoint that is not the paper's), if anything.
        kinds: what the label adds in parentheses ("ours", "not a paper baseline", "synthetic demo suite",
            "leaked items excluded").
        note: a footnote (why the row is not comparable to the paper's), if any.
        synthetic: the run scored the synthetic demo suite.
    """

    name: str
    ours: bool
    values: Mapping[str, float]
    avg: float | None
    ci: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    std: Mapping[str, float] = field(default_factory=dict)
    detail: str | None = None
    kinds: tuple[str, ...] = ()
    note: str | None = None
    synthetic: bool = False

    @property
    def label(self) -> str:
        """The markdown table's label: name, [detail], (kinds); the paper's rows say "(paper)"."""
        if not self.ours:
            return f"{self.name} (paper)"
        return f"{self.name}{f' [{self.detail}]' if self.detail else ''} ({', '.join(self.kinds)})"

    @property
    def missing(self) -> list[str]:
        """The keys of the columns this row does not fill."""
        return [column for column in COLUMNS if column not in self.values]


def our_row(result: RunResult, name: str | None = None, details: Sequence[str] = ()) -> Table1Row:
    """The Table 1 row of a run (named `name`, default its model name): values, Avg, intervals, spreads, and the
    label's detail, kinds (`details` first: see `distinguishing_details`) and footnote from its model info."""
    values = table1_row(result)
    info = result.model_info
    kinds = ("ours", *details, *(("not a paper baseline",) if info and not info.paper_row else ()),
             *(("synthetic demo suite",) if result.synthetic else ()),
             *(("leaked items excluded",) if result.settings.exclude else ()))
    avg = None if any(c not in values for c in COLUMNS) else sum(values[c] for c in COLUMNS) / len(COLUMNS)
    return Table1Row(name or result.model, True, values, avg,
                     {c: (low, high) for c, (low, high) in result_ci(result).items()}, _result_std(result),
                     info.row_detail if info else None, kinds, info.row_note if info else None, result.synthetic)


def paper_table1_rows() -> list[Table1Row]:
    """The paper's published rows as `Table1Row`s (their Avg as published)."""
    return [Table1Row(row.model, False, row.values, row.avg) for row in paper_rows()]


def distinguishing_details(results: Sequence[RunResult],
                           sources: Sequence[str | os.PathLike[str]] | None = None) -> list[list[str]]:
    """For each result, what its label must add so that no two rows read alike: the split when it is not the
    paper's (test) or not all results share it, the suite (its folder's name; its path when two folders share a
    name) when not all share it; then, for rows that still share a model name and those details, the results
    file's name (its path as given when the names are alike too), or the row's number without `sources`."""
    splits = [result.settings.split for result in results]
    suites = [result.settings.data or "not recorded" for result in results]
    names_unique = len({Path(folder).name for folder in set(suites)}) == len(set(suites))
    shown = [f"suite {Path(folder).name if names_unique else folder}" for folder in suites]
    details = [([f"{split} split"] if split != "test" or len(set(splits)) > 1 else [])
               + ([suite] if len(set(suites)) > 1 else []) for split, suite in zip(splits, shown)]
    keys = [(result.model, *detail) for result, detail in zip(results, details)]
    twins = [keys.count(key) > 1 for key in keys]
    if sources is None:
        return [detail + ([f"run {index + 1}"] if twin else []) for index, (detail, twin)
                in enumerate(zip(details, twins))]
    file_names = [Path(source).name for source in sources]
    twin_names = {name for name in file_names if file_names.count(name) > 1}
    return [detail + ([str(source) if name in twin_names else name] if twin else [])
            for detail, twin, source, name in zip(details, twins, sources, file_names)]


def paper_row_name(result: RunResult) -> str | None:
    """The paper's row to read beside `result`: the adapter's declared row, else the row whose name is the
    result's model name (any case), else None."""
    declared = result.model_info.paper_row if result.model_info else None
    by_name = {row.model.lower(): row.model for row in paper_rows()}
    return declared or by_name.get(result.model.lower())


def render_table1(results: Sequence[RunResult], names: Sequence[str] | None = None,
                  include_paper: bool | Literal["same-name"] = True, ci: bool = False,
                  sources: Sequence[str | os.PathLike[str]] | None = None) -> str:
    """Markdown Table 1: our rows (named by `names` or each result's model) then the paper's (all of them, or
    with `include_paper="same-name"` only the rows of the same name as ours, see `paper_row_name`).

    Avg is the plain mean of the 12 columns; a row missing a column gets "—" for Avg and a note saying which
    columns are missing, never an average of fewer numbers. With `ci`, each value is followed by its 95%
    bootstrap interval (in place of the recommendation's ± standard deviation over seeds). No two of our rows
    share a label: `distinguishing_details` (with `sources`, the results files the rows were read from).
    """
    names = list(names) if names is not None else [r.model for r in results]
    header = "| Model | " + " | ".join(COLUMNS.values()) + " | Avg |"
    lines = [header, "|" + "---|" * (len(COLUMNS) + 2)]
    notes = []
    for row in (our_row(result, name, details)
                for name, result, details in zip(names, results, distinguishing_details(results, sources))):
        if row.note:
            notes.append(f"{row.label}: {row.note}")
        stds = {} if ci else row.std
        intervals = row.ci if ci else {}
        cells = [_cell(row.values.get(c)) + (f" ± {stds[c]:.2f}" if c in stds else "")
                 + (f" [{intervals[c][0]:.2f}, {intervals[c][1]:.2f}]" if c in intervals else "") for c in COLUMNS]
        lines.append(f"| {row.label} | " + " | ".join(cells) + f" | {_cell(row.avg)} |")
        if row.missing:
            notes.append(f"{row.label}: no Avg, missing {', '.join(COLUMNS[c] for c in row.missing)}.")
        if stds:
            notes.append(f"{row.label}: ± is the standard deviation over the ranker's seeds.")
        if ci and len(intervals) < len(row.values):
            notes.append(f"{row.label}: no interval where the results file has none (written before scidocs-eval "
                         "kept per-item results).")
    if ci:
        notes.append("[low, high]: 95% bootstrap interval over the task's queries, test papers or impressions "
                     "(recommendation: the ranker's seeds resampled too); see docs/significance.md.")
    if include_paper:
        wanted = {paper_row_name(result) for result in results}
        lines += [f"| {row.label} | " + " | ".join(_cell(row.values[c]) for c in COLUMNS) + f" | {_cell(row.avg)} |"
                  for row in paper_table1_rows() if include_paper is True or row.name in wanted]
    if notes:
        lines.append("")
        lines += [f"- {note}" for note in notes]
    return "\n".join(lines) + "\n"
