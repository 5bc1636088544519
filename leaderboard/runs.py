"""Results files as the charts and the report page read them: the RunResult, where it was read from, its label.

Reading and checking the file (its confidence intervals included: a task entry may carry `"ci": {metric: [low,
high]}`, the 95% bootstrap intervals the runner stores; older files have none) is `RunResult.load`'s job; here
the intervals are only mapped to Table 1 columns.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.leaderboard.table1 import distinguishing_details, result_ci


@dataclass
class LoadedRun:
    """One results file: `result`, `path` and the `label` tables and charts show."""

    result: RunResult
    path: Path
    label: str

    def column_ci(self) -> dict[str, tuple[float, float]]:
        """Table 1 column key -> (low, high), for the columns whose metric has an interval."""
        return {column: (low, high) for column, (low, high) in result_ci(self.result).items()}


def load_run(path: str | os.PathLike[str], label: str | None = None) -> LoadedRun:
    """Read a results file (a malformed one, or a malformed interval in it, is an error naming file and task)."""
    result = RunResult.load(path)
    return LoadedRun(result, Path(path), label or result.model)


def load_runs(paths: Sequence[str | os.PathLike[str]]) -> list[LoadedRun]:
    """Every results file; a label adds the split and the suite when not all files share them, and the file name
    when two files still share a label."""
    runs = [load_run(p) for p in paths]
    for run, details in zip(runs, distinguishing_details([run.result for run in runs])):
        if details:
            run.label = f"{run.result.model} ({', '.join(details)})"
    labels = [run.label for run in runs]
    for run in runs:
        if labels.count(run.label) > 1:
            run.label = f"{run.label} ({run.path.name})"
    return runs
