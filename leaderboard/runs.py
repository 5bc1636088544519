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
from scidocs_eval.formats.provenance import SETTINGS_SUFFIX
from scidocs_eval.formats.safe_output import MANIFEST, is_ours
from scidocs_eval.leaderboard.table1 import distinguishing_details, result_ci
from scidocs_eval.warning_groups import grouped


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
    warnings): the JSON files in a folder, or a glob's matches, that are not results files are left out with one
    warning naming them, the tool's own records (`is_tool_record`: settings records, manifests, any file the
    ledger proves the tool wrote) without a word; a file named twice is read once. A folder or glob with no results
    file, or a path that does not exist, is an error."""
    files: list[Path] = []
    left_out: list[Path] = []
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
                left_out += [p for p in found if p not in kept]
                if not kept:
                    raise InputError(match, "holds no results file (they are written by `scidocs-eval run -o FILE` "
                                     "and `scidocs-eval baseline`)")
                files += kept
            elif not match.exists():
                raise InputError(match, "no such results file or folder (`baseline` writes scidocs-results/ in "
                                 "the folder it runs in)")
            elif magic and not is_results_file(match):
                left_out.append(match)
            else:
                files.append(match)  # RunResult.load names what is wrong with a file given by name
    if note := grouped((str(p) for p in left_out if not is_tool_record(p)),
                       "JSON file(s) that are not results files, left out"):
        warnings.append(note)
    unique = list(dict.fromkeys(Path(os.path.realpath(f)) for f in files))
    if len(unique) < len(files):
        warnings.append(f"{len(files) - len(unique)} results file(s) named more than once, read once")
    return unique, warnings


def is_tool_record(path: Path) -> bool:
    """Whether `path` is a file the tool writes beside its outputs, never a results file: an output's settings
    record (`OUT.settings.json`, the output beside it), a built folder's manifest, or any file the ledger proves the
    tool wrote as it is now (a leaderboard's JSON, an audit)."""
    described = path.name.removesuffix(SETTINGS_SUFFIX)
    return (path.name == MANIFEST or (described != path.name and (path.parent / described).exists())
            or is_ours(path))


def results_paths(patterns: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """`collect_results`'s files, for the commands that print tables, not what was left out."""
    return collect_results(patterns)[0]
