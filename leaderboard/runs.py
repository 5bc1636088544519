"""Results files as the charts and the report page read them: the RunResult plus its confidence intervals.

A task entry of a results file may carry `"ci": {metric: [low, high]}` (same units as `metrics`: the 95%
bootstrap intervals evaluation stores once the `compare` work is in); older files have none, and everything here
works without them. Task fields this version does not know (such as compare's per-item `items`) are not needed
for pictures and are set aside.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

import orjson

from scidocs_eval.errors import InputError
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.task import TASKS, TaskResult


@dataclass
class LoadedRun:
    """One results file: `result`, `path`, the `label` tables and charts show, and `ci` as
    {task: {metric: (low, high)}}."""

    result: RunResult
    path: Path
    label: str
    ci: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)

    def column_ci(self) -> dict[str, tuple[float, float]]:
        """Table 1 column key -> (low, high), for the columns whose metric has an interval."""
        out = {}
        for task, intervals in self.ci.items():
            columns = TASKS[task].spec.table1 if task in TASKS else {}
            for metric, interval in intervals.items():
                if metric in columns:
                    out[columns[metric]] = interval
        return out


def _intervals(path: Path, task: str, raw: object) -> dict[str, tuple[float, float]]:
    if not isinstance(raw, dict):
        raise InputError(path, f"task {task!r}: 'ci' must be an object {{metric: [low, high]}}")
    intervals = {}
    for metric, pair in raw.items():
        try:
            low, high = (float(v) for v in pair)
        except (TypeError, ValueError):
            raise InputError(path, f"task {task!r}: ci of {metric!r} must be [low, high], got {pair!r}") from None
        if not (math.isfinite(low) and math.isfinite(high) and low <= high):
            raise InputError(path, f"task {task!r}: ci of {metric!r} is not an interval: {pair!r}")
        intervals[str(metric)] = (low, high)
    return intervals


def load_run(path: str | os.PathLike[str], label: str | None = None) -> LoadedRun:
    """Read a results file with its confidence intervals (malformed ones are an error naming file and task)."""
    path = Path(path)
    try:
        data = orjson.loads(path.read_bytes())
        tasks = data["tasks"]
        ci = {task: _intervals(path, task, entry["ci"]) for task, entry in tasks.items() if entry.get("ci")}
    except FileNotFoundError:
        raise InputError(path, "results file not found") from None
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError) as error:
        raise InputError(path, f"not a scidocs-eval results file ({error})") from None
    known = {f.name for f in fields(TaskResult)}
    data["tasks"] = {task: {k: v for k, v in entry.items() if k in known} for task, entry in tasks.items()}
    try:
        result = RunResult.from_dict(data)
    except (KeyError, TypeError) as error:
        raise InputError(path, f"not a scidocs-eval results file ({error})") from None
    return LoadedRun(result, path, label or result.model, ci)


def load_runs(paths: Sequence[str | os.PathLike[str]]) -> list[LoadedRun]:
    """Every results file; two files with the same model name get the file name added to their labels."""
    runs = [load_run(p) for p in paths]
    models = [run.result.model for run in runs]
    for run in runs:
        if models.count(run.result.model) > 1:
            run.label = f"{run.result.model} ({run.path.name})"
    return runs
