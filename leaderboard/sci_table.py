"""The `sci` benchmark's table: each owner's own averages of a run, side by side, never one average over a mix.

- SciDocs: Table 1's Avg (the SPECTER paper's mean of its 12 columns; `leaderboard.table1`).
- MTEB: per MTEB task type (Retrieval, Reranking, Clustering, Classification), the mean of the main scores (×100) of
  the MTEB tasks the run scored, MTEB's leaderboard rule "Mean (TaskType)" applied to our task set, which is no MTEB
  benchmark: labelled "(ours)".
- SciRepEval: its README's columns (In-Train, Out-of-Train, SciDocs, Average; `leaderboard.scirepeval_table`).

A column a run cannot fill (a task absent) is "—" with the missing tasks in a note.
"""

from __future__ import annotations

from collections.abc import Sequence

from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.task import TASKS
from scidocs_eval.leaderboard import scirepeval_table
from scidocs_eval.leaderboard.table1 import our_row as table1_row

MTEB_TYPES = ("Retrieval", "Reranking", "Clustering", "Classification")
HEADERS = ("model", "SciDocs Avg (SPECTER paper)", *(f"MTEB {t} mean (ours)" for t in MTEB_TYPES),
           *(f"SciRepEval {column}" for column in scirepeval_table.COLUMNS))


def mteb_type(task: str) -> str | None:
    """The MTEB task type of one of our tasks (its spec's `dataset["type"]`, declared by the task), None when it
    reproduces no MTEB task."""
    spec = TASKS[task].spec
    return spec.dataset.get("type") if spec.mteb_task else None


def mteb_means(result: RunResult) -> dict[str, tuple[float, int]]:
    """MTEB type -> (mean main score ×100, number of tasks) over the run's MTEB tasks of that type."""
    scores: dict[str, list[float]] = {}
    for name, task_result in result.tasks.items():
        kind = mteb_type(name) if name in TASKS else None
        if kind is not None:
            scores.setdefault(kind, []).append(task_result.metrics[TASKS[name].spec.main_score])
    return {kind: (sum(values) / len(values), len(values)) for kind, values in scores.items()}


def _cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def render_sci_table(results: Sequence[RunResult]) -> str:
    """A markdown table, one row per run, with each owner's averages; notes name what a "—" lacks."""
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    notes = []
    for result in results:
        scidocs = table1_row(result)
        means = mteb_means(result)
        scirepeval = scirepeval_table.our_row(result)
        cells = [_cell(scidocs.avg), *(f"{means[t][0]:.2f} ({means[t][1]} tasks)" if t in means else "—"
                                       for t in MTEB_TYPES),
                 *(_cell(scirepeval.values[column]) for column in scirepeval_table.COLUMNS)]
        lines.append(f"| {result.model} (ours) | " + " | ".join(cells) + " |")
        if scidocs.avg is None:
            notes.append(f"{result.model}: no SciDocs Avg, missing {', '.join(scidocs.missing)}")
        notes += [f"{result.model}: {note}" for note in scirepeval.notes]
    notes.append("MTEB means: mean of the main scores of the MTEB tasks run, per MTEB task type (the rule of MTEB's "
                 "leaderboard, over this task set, not an MTEB benchmark).")
    return "\n".join(lines + [""] + notes) + "\n"
