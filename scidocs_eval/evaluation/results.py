"""A run's results: metrics and coverage per task, settings, versions, fingerprints, timings; JSON on disk."""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import orjson

from scidocs_eval.errors import InputError
from scidocs_eval.evaluation.task import TaskResult
from scidocs_eval.formats.safe_output import write_bytes_atomically

RESULTS_FORMAT = 1
_VERSIONED_PACKAGES = ("scidocs-eval", "numpy", "scipy", "scikit-learn", "pytrec-eval-terrier", "torch",
                       "lightgbm")


def package_versions() -> dict[str, str]:
    """Installed versions of the packages that can change a number."""
    versions = {}
    for name in _VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def _results_file_problem(data: Any) -> str | None:
    """What makes `data` (a parsed JSON file) not a results file, or None."""
    if not isinstance(data, dict):
        return f"a JSON {type(data).__name__}, not an object"
    if data.get("format") != RESULTS_FORMAT:
        return f"'format' is {data.get('format')!r}, not {RESULTS_FORMAT}"
    if not isinstance(data.get("model"), str) or not isinstance(data.get("tasks"), dict):
        return "no 'model' name or no 'tasks' object"
    for name, task in data["tasks"].items():
        metrics = task.get("metrics") if isinstance(task, dict) else None
        if not isinstance(metrics, dict) or not all(isinstance(v, (int, float)) for v in metrics.values()):
            return f"task {name!r} has no 'metrics' object of numbers"
    return None


def _intervals_problem(task: str, intervals: Any) -> str | None:
    """What makes a task's `ci` not {metric: [low, high]} with finite low <= high, or None."""
    if not isinstance(intervals, dict):
        return f"task {task!r}: 'ci' must be an object {{metric: [low, high]}}"
    for metric, pair in intervals.items():
        try:
            low, high = (float(v) for v in pair)
        except (TypeError, ValueError):
            return f"task {task!r}: ci of {metric!r} must be [low, high], got {pair!r}"
        if not (math.isfinite(low) and math.isfinite(high) and low <= high):
            return f"task {task!r}: ci of {metric!r} is not an interval: {pair!r}"
    return None


@dataclass
class RunResult:
    """Everything one evaluation produced. `tasks` maps task name to its TaskResult."""

    model: str
    tasks: dict[str, TaskResult]
    settings: dict[str, Any] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    """Tasks that could not run (an optional package missing), with the reason; the CLI exits non-zero."""
    fingerprints: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=package_versions)
    timings: dict[str, float] = field(default_factory=dict)
    synthetic: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"format": RESULTS_FORMAT, **asdict(self)}

    def save(self, path: str | os.PathLike[str]) -> Path:
        options = orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY
        return write_bytes_atomically(path, orjson.dumps(self.to_dict(), default=str, option=options))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        fields = {k: v for k, v in data.items() if k != "format"}
        fields["tasks"] = {name: TaskResult(**task) for name, task in data["tasks"].items()}
        return cls(**fields)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> RunResult:
        """The results file at `path`; anything else (including a task's malformed `ci` intervals) is a one-line
        error naming the file (and the task)."""
        path = Path(path)
        if not path.is_file():
            raise InputError(path, "is a folder, not a results file" if path.is_dir() else "results file not found")
        try:
            data = orjson.loads(path.read_bytes())
            problem = _results_file_problem(data)
            if problem is None:
                for name, task in data["tasks"].items():
                    if (bad_ci := _intervals_problem(name, task.get("ci", {}))) is not None:
                        raise InputError(path, bad_ci)
                return cls.from_dict(data)
        except (orjson.JSONDecodeError, KeyError, TypeError) as error:
            problem = str(error)
        raise InputError(path, f"not a scidocs-eval results file ({problem}; they are written by `scidocs-eval run "
                         "--out` and `scidocs-eval baseline`)")

    def format_table(self, ci: bool = False) -> str:
        """A plain-text table for the terminal: one line per task with its metrics and coverage; with `ci`, each
        metric's 95% bootstrap interval too."""
        label = f"{self.model} (synthetic demo suite)" if self.synthetic else self.model
        interval_header = f"{'95% CI':<17} " if ci else ""
        lines = [label, f"{'task':<8} {'metric':<9} {'value':>7}   {interval_header}coverage"]
        for name, result in self.tasks.items():
            coverage = ", ".join(f"{k}={v}" for k, v in result.coverage.items() if v)
            for i, (metric, value) in enumerate(result.metrics.items()):
                bounds = result.ci.get(metric)
                interval = (f"{f'[{bounds[0]:.2f}, {bounds[1]:.2f}]' if bounds else '—':<17} " if ci else "")
                lines.append(f"{name if i == 0 else '':<8} {metric:<9} {value:>7.2f}   {interval}"
                             f"{coverage if i == 0 else ''}")
        lines += [f"{name:<8} skipped: {why}" for name, why in self.skipped.items()]
        lines += [f"{name:<8} NOT RUN: {why}" for name, why in self.failed.items()]
        return "\n".join(lines)
