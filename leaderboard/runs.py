"""Results files as the charts and the report page read them: the RunResult, where it was read from, its label.

Reading and checking the file (its confidence intervals included: a task entry may carry `"ci": {metric: [low,
high]}`, the 95% bootstrap intervals the runner stores; older files have none) is `RunResult.load`'s job; here
the intervals are only mapped to Table 1 columns.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from scidocs_eval.errors import InputError, ScidocsEvalError
from scidocs_eval.evaluation.results import RunResult, is_results_file
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
    """Every results file; no two labels alike: a label adds what `distinguishing_details` finds (the split, the
    suite, the file name where a model name and those still repeat)."""
    runs = [load_run(p) for p in paths]
    for run, details in zip(runs, distinguishing_details([run.result for run in runs], [run.path for run in runs])):
        if details:
            run.label = f"{run.result.model} ({', '.join(details)})"
    return runs


def results_paths(patterns: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The results files `table`, `report` and `plot results` read from `patterns`: a file as given; a folder's
    results files, told by content whatever their names (`run -o results/mine.json` included), other files
    passed over; a glob's matches that are results files. An empty folder or a glob matching none is an error."""
    paths: list[Path] = []
    for pattern in map(str, patterns):
        path = Path(pattern)
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.suffix == ".json" and is_results_file(p))
            if not found:
                raise InputError(path, "holds no results file (they are written by `scidocs-eval run -o FILE` and "
                                 "`scidocs-eval baseline`)")
        elif path.exists():
            found = [path]  # RunResult.load names what is wrong with it
        elif not glob.has_magic(pattern):
            raise InputError(path, "no such results file or folder (`baseline` writes scidocs-results/ in the "
                             "folder it runs in)")
        else:
            found = sorted(Path(p) for p in glob.glob(pattern) if is_results_file(p))
            if not found:
                raise ScidocsEvalError(f"{pattern}: matches no results file")
        paths += [p for p in found if p not in paths]
    return paths
