"""SciRepEval's results table (In-Train, Out-of-Train, SciDocs, Average) for our runs, then the rows published in
allenai/scirepeval's BENCHMARKING.md (our copy: scirepeval_published.tsv) and SPECTER2's In-Train from its README
(specter2_published.tsv; its other columns are defined otherwise there, so they are not shown).

BENCHMARKING.md publishes the four columns but does not say which tasks or metrics each averages. The groups here
are those of SciRepEval's README (same commit): its "Train" column (Y: In-Train; N: Out-of-Train, the six SciDocs
tasks apart) and its "Metric" column; few-shot variants are not among its tasks. Each column is the plain mean of
its tasks' metrics; a row missing any of them gets "—" and a note naming them, never a mean of fewer numbers.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.formats.suite import SYNTHETIC_MARKER
from scidocs_eval.leaderboard.table1 import _cell, distinguishing_details

SOURCE = "allenai/scirepeval e04594e6401cb68fb4ddf6daa801fb219cccc0bb"
SPECTER2_SOURCE = "allenai/SPECTER2 edd2cc65eeb1ba984daffacccd456774c111e17c"
SPECTER2_NOTE = (f"In-Train only, for these SPECTER2 rows: the SPECTER2 README ({SPECTER2_SOURCE}) defines its "
                 "Out-of-Train and average otherwise than BENCHMARKING.md (its SPECTER row: 72.0 and 67.5, "
                 "BENCHMARKING.md's 57.4 and 68.0; In-Train agrees) and has no SciDocs column, so those are left "
                 "out (there: Base 73.6 and 69.1, Adapters 74.1 and 71.1)")
PUBLISHED = {"scirepeval_published.tsv": ("paper", ""), "specter2_published.tsv": ("SPECTER2 README", SPECTER2_NOTE)}
"""Each file of published rows: what their label says of where they come from, and a note its first row carries."""
S2AND = "S2AND"
"""An Out-of-Train task scidocs-eval does not run (docs/scirepeval.md), so our Out-of-Train and Average are "—"."""
_PROXIMITY = ("map", "ndcg")
GROUPS: dict[str, dict[str, tuple[str, ...]]] = {
    "In-Train": {
        "scirepeval-mesh": ("f1_macro",), "scirepeval-fields-of-study": ("f1_macro",),
        "scirepeval-citation-count": ("kendalltau",), "scirepeval-publication-year": ("kendalltau",),
        "scirepeval-same-author-detection": ("map",), "scirepeval-highly-influential-citations": ("map",),
        "scirepeval-search": ("ndcg",)},
    "Out-of-Train": {
        "scirepeval-biomimicry": ("f1",), "scirepeval-drsm": ("f1_macro",),
        "scirepeval-peer-review-score": ("kendalltau",), "scirepeval-max-hindex": ("kendalltau",),
        "scirepeval-tweet-mentions": ("kendalltau",), S2AND: ("b3_f1",),
        "scirepeval-paper-reviewer-matching": ("hard_P_5", "hard_P_10", "soft_P_5", "soft_P_10"),
        "scirepeval-relish": ("ndcg",), "scirepeval-nfcorpus": ("ndcg",), "scirepeval-trec-covid": ("ndcg",)},
    "SciDocs": {
        "scirepeval-scidocs-mag": ("f1_macro",), "scirepeval-scidocs-mesh": ("f1_macro",),
        **{f"scirepeval-scidocs-{name}": _PROXIMITY for name in ("cite", "coview", "cocite", "coread")}},
}
"""Column -> {our task name: the metrics it contributes}, from SciRepEval's README (see the module docstring)."""
AVERAGE = "Average"
COLUMNS: dict[str, dict[str, tuple[str, ...]]] = {**GROUPS, AVERAGE: {k: v for g in GROUPS.values()
                                                                     for k, v in g.items()}}
"""The table's columns in BENCHMARKING.md's order; Average is the mean over every task of the three groups."""
DEFINITION = ("In-Train, Out-of-Train, SciDocs: plain mean of the metrics of the tasks SciRepEval's README groups "
              "so (its Train and Metric columns), Average over all of them; few-shot variants not included. "
              f"BENCHMARKING.md ({SOURCE}) publishes these columns without saying how they are computed, so the "
              "(paper) rows may weigh tasks differently; see docs/scirepeval.md.")


@dataclass(frozen=True)
class SciRepEvalRow:
    """A row: `values` column -> average (None when a task is missing), `missing` column -> the missing tasks,
    `kinds` what an our row's label adds in parentheses (as Table 1's: "ours", details, "synthetic ...")."""

    name: str
    ours: bool
    values: dict[str, float | None]
    missing: dict[str, list[str]] = field(default_factory=dict)
    kinds: tuple[str, ...] = ()
    synthetic: bool = False
    source: str = "paper"
    """where a published row comes from (`PUBLISHED`)."""
    remark: str = ""
    """a published row's note (its source's, on the source's first row)."""

    @property
    def label(self) -> str:
        return f"{self.name} ({', '.join(self.kinds)})" if self.ours else f"{self.name} ({self.source})"

    @property
    def notes(self) -> list[str]:
        if not self.ours:
            return [self.remark] if self.remark else []
        return [f"no {column}, missing {', '.join(tasks)}" for column, tasks in self.missing.items()]


def has_scirepeval(result: RunResult) -> bool:
    """True when the result holds a task of the table."""
    return any(name in COLUMNS[AVERAGE] for name in result.tasks)


def is_synthetic(result: RunResult) -> bool:
    """Scored on generated data: the result says so, or its suite folder carries the synthetic marker file."""
    data = result.settings.data
    return result.synthetic or (data is not None and (Path(data) / SYNTHETIC_MARKER).is_file())


def _missing_name(task: str) -> str:
    return f"{task} (not supported by scidocs-eval)" if task == S2AND else task


def our_row(result: RunResult, name: str | None = None, details: Sequence[str] = ()) -> SciRepEvalRow:
    """The row of a run: each column's mean, or None and the missing tasks (a task or one of its metrics absent)."""
    values: dict[str, float | None] = {}
    missing: dict[str, list[str]] = {}
    for column, tasks in COLUMNS.items():
        absent = [task for task, metrics in tasks.items()
                  if task not in result.tasks or any(m not in result.tasks[task].metrics for m in metrics)]
        numbers = [result.tasks[task].metrics[m] for task, metrics in tasks.items() if task not in absent
                   for m in metrics]
        values[column] = None if absent else sum(numbers) / len(numbers)
        if absent:
            missing[column] = [_missing_name(task) for task in absent]
    synthetic = is_synthetic(result)
    kinds = ("ours", *details, *(("synthetic SciRepEval copy",) if synthetic else ()))
    return SciRepEvalRow(name or result.model, True, values, missing, kinds, synthetic)


def published_rows() -> list[SciRepEvalRow]:
    """BENCHMARKING.md's rows, then SPECTER2's, as published (a column a source does not give: None)."""
    rows = []
    for file, (source, note) in PUBLISHED.items():
        text = resources.files("scidocs_eval.leaderboard").joinpath(file).read_text("utf-8")
        lines = [line for line in text.splitlines() if line and not line.startswith("#")]
        rows += [SciRepEvalRow(record["model"], False, {c: float(record[c]) if record[c] else None for c in COLUMNS},
                               source=source, remark="" if index else note)
                 for index, record in enumerate(csv.DictReader(lines, delimiter="\t"))]
    return rows


def table_rows(results: Sequence[RunResult], names: Sequence[str] | None = None,
               include_paper: bool = True,
               sources: Sequence[str | os.PathLike[str]] | None = None) -> list[SciRepEvalRow]:
    """Our rows (the results holding a task of the table; labels as Table 1's), then the published ones."""
    names = list(names) if names is not None else [r.model for r in results]
    rows = [our_row(result, name, details) for name, result, details
            in zip(names, results, distinguishing_details(results, sources)) if has_scirepeval(result)]
    return rows + (published_rows() if include_paper else [])


def render_scirepeval_table(results: Sequence[RunResult], names: Sequence[str] | None = None,
                            include_paper: bool = True,
                            sources: Sequence[str | os.PathLike[str]] | None = None) -> str:
    """Markdown: our rows, then the published ones, then the notes (missing tasks, how the columns are made)."""
    names = list(names) if names is not None else [r.model for r in results]
    rows = table_rows(results, names, include_paper, sources)
    if not any(row.ours for row in rows):
        raise ScidocsEvalError(f"none of the {len(results)} results file(s) holds a SciRepEval task of the table "
                               "(run them with --benchmark scirepeval)")
    lines = ["| Model | " + " | ".join(COLUMNS) + " |", "|" + "---|" * (len(COLUMNS) + 1)]
    lines += [f"| {row.label} | " + " | ".join(_cell(row.values[c]) for c in COLUMNS) + " |" for row in rows]
    notes = [f"{row.label}: {note}." for row in rows for note in row.notes]
    notes += [f"{name}: left out, it holds no SciRepEval task." for name, result in zip(names, results)
              if not has_scirepeval(result)]
    return "\n".join([*lines, "", *(f"- {note}" for note in [*notes, DEFINITION])]) + "\n"
