"""The table of the tasks outside Table 1 and SciRepEval's table (MTEB's SciDocs tasks, the full-corpus
benchmark, a plugin's): a row per run, a column per task, each task's main score."""

from __future__ import annotations

import os
from collections.abc import Sequence

from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.task import BENCHMARKS, TASKS
from scidocs_eval.leaderboard.table1 import _cell, distinguishing_details, our_row

PER_TASK = "tasks"
"""The `Benchmark.table_kind` of a benchmark whose table is a column per task (this module's)."""


def other_tasks(result: RunResult) -> list[str]:
    """The tasks of `result` that neither Table 1 nor a table of their benchmark's own kind (SciRepEval's) shows."""
    return [name for name in result.tasks if name in TASKS and not TASKS[name].spec.table1
            and (TASKS[name].spec.benchmark not in BENCHMARKS
                 or BENCHMARKS[TASKS[name].spec.benchmark].table_kind == PER_TASK)]


def render_task_table(results: Sequence[RunResult], sources: Sequence[str | os.PathLike[str]] | None = None,
                      selected: Sequence[str] | None = None) -> str:
    """Markdown: the runs that scored such a task (of `selected`, when given; labels as Table 1's, never two alike), a
    column per task with its main score (×100), "—" where a run did not score it."""
    def shown(result: RunResult) -> list[str]:
        return [name for name in result.tasks if name in selected] if selected is not None else other_tasks(result)

    details = distinguishing_details(results, sources)
    chosen = [(result, detail) for result, detail in zip(results, details) if shown(result)]
    tasks = list(dict.fromkeys(name for result, _ in chosen for name in shown(result)))
    headers = [f"{name} {TASKS[name].spec.main_score}" for name in tasks]
    lines = ["| Model | " + " | ".join(headers) + " |", "|" + "---|" * (len(tasks) + 1)]
    for result, detail in chosen:
        cells = [_cell(result.tasks[name].metrics.get(TASKS[name].spec.main_score)) if name in result.tasks else "—"
                 for name in tasks]
        lines.append(f"| {our_row(result, details=detail).label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
