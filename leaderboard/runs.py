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


def collect_results(patterns: Sequence[str | os.PathLike[str]]) -> tuple[list[Path], list[str]]:
    """The results files `patterns` name, the one collector of `table`, `report`, `plot results` and
    `leaderboard`: a file as given; a folder's results files (recursively, sorted), told by content whatever their
    names (`run -o results/mine.json` included); a glob's matches that are results files. Returns (files,
    warnings): a JSON file in a folder, or a glob's match, that is not a results file is left out with a warning
    naming it; a file named twice is read once. A folder or glob with no results file, or a path that does not
    exist, is an error."""
    files: list[Path] = []
    warnings: list[str] = []
    for pattern in map(str, patterns):
        magic = glob.has_magic(pattern)
        matches = [Path(p) for p in sorted(glob.glob(pattern, recursive=True))] if magic else [Path(pattern)]
        if magic and not matches:
            raise ScidocsEvalError(f"{pattern}: matches no results file")
        for match in matches:
            if match.is_dir():
                found = [p for p in sorted(match.rglob("*.json")) if p.is_file()]
                kept = [p for p in found if is_results_file(p)]
                warnings += [f"{p}: not a results file, left out" for p in found if p not in kept]
                if not kept:
                    raise InputError(match, "holds no results file (they are written by `scidocs-eval run -o FILE` "
                                     "and `scidocs-eval baseline`)")
                files += kept
            elif not match.exists():
                raise InputError(match, "no such results file or folder (`baseline` writes scidocs-results/ in "
                                 "the folder it runs in)")
            elif magic and not is_results_file(match):
                warnings.append(f"{match}: not a results file, left out")
            else:
                files.append(match)  # RunResult.load names what is wrong with a file given by name
    unique = list(dict.fromkeys(Path(os.path.realpath(f)) for f in files))
    if len(unique) < len(files):
        warnings.append(f"{len(files) - len(unique)} results file(s) named more than once, read once")
    return unique, warnings


def results_paths(patterns: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """`collect_results`'s files, for the commands that print tables, not what was left out."""
    return collect_results(patterns)[0]
