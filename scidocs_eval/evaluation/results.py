"""A run's results: metrics and coverage per task, settings, versions, fingerprints, timings; JSON on disk."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
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


@dataclass(frozen=True)
class ModelInfo:
    """What embedded the papers of a run that scidocs-eval embedded itself (`baseline`, `evaluate_model`).

    Args:
        name: the adapter's registry name, or the name a model object was given.
        paper_row: the paper's Table 1 row this adapter reproduces, if any.
        params: the adapter's constructor parameters (`best_params`: values tuning picked).
        best_params: the values `fit` picked on val (`--tune`), which the embeddings were made with.
        train_corpus: the corpus it was fitted on, when not the suite's papers.
        groups: {embeddings group: what embedded it} where each group had a model of its own (SPECTER2).
        row_detail: what Table 1 adds to the row's label (a checkpoint's name), if anything.
        row_note: a footnote Table 1 prints under the row, if any.
        call: how a model object was called (class, inputs, separator, batch size, encode kwargs).
    """

    name: str
    paper_row: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    best_params: Mapping[str, Any] = field(default_factory=dict)
    train_corpus: str | None = None
    groups: Mapping[str, str] = field(default_factory=dict)
    row_detail: str | None = None
    row_note: str | None = None
    call: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelInfo:
        known = {key: value for key, value in data.items() if key in cls.__dataclass_fields__}
        return cls(**known)

    @classmethod
    def from_legacy_settings(cls, settings: Mapping[str, Any]) -> ModelInfo | None:
        """The model info a results file of an earlier version kept in `settings["adapter"]` (baseline) or
        `settings["model_object"]` (evaluate_model), or None."""
        adapter, model_object = settings.get("adapter"), settings.get("model_object")
        if isinstance(adapter, Mapping) and isinstance(adapter.get("name"), str):
            return cls.from_dict(adapter)
        if isinstance(model_object, Mapping):
            return cls(name=str(model_object.get("class", "model object")), call=dict(model_object))
        return None


@dataclass
class RunResult:
    """Everything one evaluation produced. `tasks` maps task name to its TaskResult (each with its own
    `seconds`); `timings` holds the phases (fit, embed, loading_embeddings, total); `model_info` what embedded
    the papers, when scidocs-eval did."""

    model: str
    tasks: dict[str, TaskResult]
    settings: dict[str, Any] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    fingerprints: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=package_versions)
    timings: dict[str, float] = field(default_factory=dict)
    synthetic: bool = False
    model_info: ModelInfo | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"format": RESULTS_FORMAT, **asdict(self)}

    def save(self, path: str | os.PathLike[str]) -> Path:
        options = orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY
        return write_bytes_atomically(path, orjson.dumps(self.to_dict(), default=str, option=options))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        fields = {k: v for k, v in data.items() if k != "format"}
        fields["tasks"] = {name: TaskResult(**task) for name, task in data["tasks"].items()}
        info = fields.get("model_info")
        fields["model_info"] = ModelInfo.from_dict(info) if isinstance(info, Mapping) else \
            ModelInfo.from_legacy_settings(fields.get("settings") or {})
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
                         "--output` and `scidocs-eval baseline`)")
