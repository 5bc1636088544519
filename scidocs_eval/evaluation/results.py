"""A run's results: metrics and coverage per task, settings, versions, fingerprints, timings; JSON on disk."""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import os
import types
import typing
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import orjson

from scidocs_eval.errors import InputError, ScidocsEvalError
from scidocs_eval.evaluation.task import TaskResult
from scidocs_eval.formats.safe_output import Rows, write_bytes_atomically
from scidocs_eval.params import Declared, InstanceOf, ListOf, Satisfies, describe, make_constraint

log = logging.getLogger("scidocs_eval")

RESULTS_FORMAT = 1
_VERSIONED_PACKAGES = ("scidocs-eval", "numpy", "scipy", "scikit-learn", "pytrec-eval-terrier", "torch",
                       "lightgbm")


def package_versions() -> dict[str, str]:
    """Installed versions of the packages that can change a number."""
    return dict(_installed_versions())


@functools.cache
def _installed_versions() -> tuple[tuple[str, str], ...]:
    """Read once per process: each `metadata.version` parses a METADATA file (about 3 ms; 24 ms for the seven)."""
    versions = []
    for name in _VERSIONED_PACKAGES:
        try:
            versions.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            continue
    return tuple(versions)


_JSON_KINDS: dict[Any, tuple[type, ...]] = {str: (str,), bool: (bool,), float: (int, float), int: (int,),
                                            type(None): (type(None),)}
"""A field's Python type -> the JSON values that give it (anything else is read from a JSON object)."""


def json_kinds(cls: type) -> dict[str, tuple[type, ...]]:
    """{field: the JSON value types it is read from} of the dataclass `cls`, from its type annotations: the
    results file's schema, generated from the classes that hold it (a field of an unknown type: a JSON object)."""
    hints = typing.get_type_hints(cls)
    kinds = {}
    for item in dataclasses.fields(cls):
        options = typing.get_args(hints[item.name]) if isinstance(hints[item.name], types.UnionType) \
            else (hints[item.name],)
        kinds[item.name] = tuple(kind for option in options
                                 for kind in _JSON_KINDS.get(typing.get_origin(option) or option, (dict,)))
    return kinds


_REQUIRED = ("model", "tasks")
_TYPE_NAMES = {str: "a string", dict: "an object", bool: "true or false", int: "a number", float: "a number"}


def _field_problem(name: str, value: Any, kinds: tuple[type, ...]) -> str | None:
    if isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds):
        return None
    got = "null" if value is None else f"{type(value).__name__} {value!r:.60}"
    return f"field {name!r} must be {_TYPE_NAMES[kinds[0]]}, got {got}"


def _results_file_problem(data: Any) -> str | None:
    """What makes `data` (a parsed JSON file) not a results file, or None: each known field of the file and of
    each task must have its type (a malformed field is named); unknown fields are allowed (`unknown_fields`)."""
    if not isinstance(data, dict):
        return f"a JSON {type(data).__name__}, not an object"
    if not _is_int(data.get("format")):
        return f"'format' is {data.get('format')!r}, not {RESULTS_FORMAT}"
    if data["format"] > RESULTS_FORMAT:
        return (f"'format' is {data['format']}: written by a newer scidocs-eval, which reads format "
                f"{RESULTS_FORMAT}; upgrade scidocs-eval")
    if data["format"] != RESULTS_FORMAT:
        return f"'format' is {data['format']!r}, not {RESULTS_FORMAT}"
    absent = [name for name in _REQUIRED if name not in data]
    if absent:
        return f"no {' and no '.join(repr(name) for name in absent)} field"
    for name, kinds in _RUN_FIELDS.items():
        if name in data and (problem := _field_problem(name, data[name], kinds)):
            return problem
    if problem := settings_problem(data.get("settings", {})):
        return problem
    for name, task in data["tasks"].items():
        if not isinstance(task, dict):
            return f"task {name!r} must be an object, got {type(task).__name__}"
        for field_name, kinds in _TASK_FIELDS.items():
            if field_name in task and (problem := _field_problem(field_name, task[field_name], kinds)):
                return f"task {name!r}: {problem}"
        metrics = task.get("metrics")
        if not isinstance(metrics, dict) or not all(_is_real(v) for v in metrics.values()):
            return f"task {name!r} has no 'metrics' object of numbers"
        if not isinstance(task.get("coverage", {}), dict) or not all(
                _is_int(v) for v in task.get("coverage", {}).values()):
            return f"task {name!r}: field 'coverage' must be an object of counts"
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def unknown_fields(data: dict[str, Any]) -> list[str]:
    """The fields of a results file (and of its tasks, as "tasks.NAME.FIELD") this version does not know."""
    unknown = [name for name in data if name not in _RUN_FIELDS and name != "format"]
    unknown += [f"settings.{name}" for name in data.get("settings", {}) if name not in _SETTINGS_FIELDS
                and name not in (*LEGACY_SETTINGS, LEGACY_BENCHMARK)]
    return unknown + [f"tasks.{task}.{name}" for task, fields in data["tasks"].items() for name in fields
                      if name not in _TASK_FIELDS]


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


def _is_counts(value: Any) -> bool:
    return isinstance(value, Mapping) and all(_is_int(count) for count in value.values())


def _is_exclusion(value: Any) -> bool:
    return isinstance(value, Mapping) and isinstance(value.get("audit"), str) \
        and isinstance(value.get("sha256"), str) and isinstance(value.get("leaked_if"), list) \
        and all(isinstance(strength, str) for strength in value["leaked_if"]) \
        and _is_counts(value.get("items_excluded"))


_TASK_PARAMS = Satisfies(lambda v: isinstance(v, Mapping) and all(isinstance(p, Mapping) for p in v.values()),
                         "an object {task: {parameter: value}}")
_EXCLUSION = Satisfies(_is_exclusion, "an object {audit, sha256, leaked_if: [...], items_excluded: {task: count}}")
LEGACY_SETTINGS = ("adapter", "model_object")
"""settings of earlier versions that `ModelInfo` now holds; kept as they are, without a warning."""
LEGACY_BENCHMARK = "benchmark"
"""the one benchmark a run named, as results files before `benchmarks` recorded it; read into `benchmarks`."""


def _json(*rules: Declared) -> dict[str, Any]:
    """A `RunSettings` field's metadata: the rules of its JSON value in a results file (`scidocs_eval.params`)."""
    return {"json": list(rules)}


def settings_problem(settings: Any) -> str | None:
    """What makes a results file's `settings` (parsed JSON) not what `RunSettings` holds, or None."""
    if not isinstance(settings, dict):
        return _field_problem("settings", settings, (dict,))
    for name, rules in _SETTINGS_FIELDS.items():
        if name in settings and not any(make_constraint(rule).is_satisfied_by(settings[name]) for rule in rules):
            value = settings[name]
            got = "null" if value is None else f"{type(value).__name__} {value!r:.60}"
            return f"field 'settings.{name}' must be {describe(rules)}, got {got}"
    return None


@dataclass(frozen=True)
class LeakExclusion:
    """What a run scored without (`run --exclude`): the audit file, its sha256, the match strengths it counts as
    leaked, and the items excluded per task."""

    audit: str
    sha256: str
    leaked_if: tuple[str, ...]
    items_excluded: Mapping[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {"audit": self.audit, "sha256": self.sha256, "leaked_if": list(self.leaked_if),
                "items_excluded": dict(self.items_excluded)}


@dataclass(frozen=True)
class RunSettings:
    """What a run was scored with, as its results file records it (`settings`; written by `evaluate` from its
    `RunConfig`). A setting an earlier version did not record is None (`split` and `missing`: the defaults every
    version applied); `other` keeps the keys this version does not know, as they were (`settings["adapter"]` and
    `settings["model_object"]` of earlier versions, which `ModelInfo` now holds, among them).

    Args:
        data: the suite folder scored.
        tasks: the tasks the run scored or skipped.
        split: "test" or "val".
        missing: the missing-embedding rule, "official" or "error".
        task_params: constructor parameters per task name.
        dtype: the vectors' precision ("float32", "float64").
        min_coverage: the coverage guard's least share.
        exclude: the audit whose leaked items were not scored (`run --exclude`), if any.
        benchmarks: the benchmarks named (several: embedded with one plan), when any was.
        other: keys of `settings` this version does not know.
    """

    data: str | None = field(default=None, metadata=_json(str, None))
    tasks: tuple[str, ...] = field(default=(), metadata=_json(ListOf(InstanceOf(str))))
    split: str = field(default="test", metadata=_json(str))
    missing: str = field(default="official", metadata=_json(str))
    task_params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, metadata=_json(_TASK_PARAMS))
    dtype: str | None = field(default=None, metadata=_json(str, None))
    min_coverage: float | None = field(default=None, metadata=_json(float, None))
    exclude: LeakExclusion | None = field(default=None, metadata=_json(_EXCLUSION, None))
    benchmarks: tuple[str, ...] | None = field(default=None, metadata=_json(ListOf(InstanceOf(str)), None))
    other: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of a results file's `settings`: the keys earlier versions wrote (those not recorded
        left out), then `other`."""
        data: dict[str, Any] = {"data": self.data, "tasks": list(self.tasks),
                                "split": self.split, "missing": self.missing,
                                "task_params": {task: dict(params) for task, params in self.task_params.items()},
                                "dtype": self.dtype, "min_coverage": self.min_coverage,
                                "exclude": self.exclude.to_dict() if self.exclude else None,
                                "benchmarks": list(self.benchmarks) if self.benchmarks is not None else None}
        return {**{key: value for key, value in data.items() if value is not None}, **self.other}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunSettings:
        """The settings of a results file (any version); a malformed known key is a `ScidocsEvalError` naming it."""
        if problem := settings_problem(dict(data)):
            raise ScidocsEvalError(f"malformed results settings: {problem}")
        known = {key: value for key, value in data.items()
                 if key in _SETTINGS_FIELDS and key != LEGACY_BENCHMARK and value is not None}
        if isinstance(data.get(LEGACY_BENCHMARK), str) and "benchmarks" not in known:
            known["benchmarks"] = [data[LEGACY_BENCHMARK]]
        exclude = known.pop("exclude", None)
        known.update({key: tuple(known[key]) for key in ("tasks", "benchmarks") if key in known},
                     task_params={task: dict(params) for task, params in known.get("task_params", {}).items()})
        return cls(**known, exclude=LeakExclusion(exclude["audit"], exclude["sha256"], tuple(exclude["leaked_if"]),
                                                  dict(exclude["items_excluded"])) if exclude else None,
                   other={key: value for key, value in data.items()
                          if key not in _SETTINGS_FIELDS and key != LEGACY_BENCHMARK})

    def __getitem__(self, key: str) -> Any:
        """Read as the dict of earlier versions (deprecated: read the attributes)."""
        warnings.warn("RunResult.settings as a mapping is deprecated; read its attributes (RunSettings), e.g. "
                      "result.settings.split", DeprecationWarning, stacklevel=2)
        return self.to_dict()[key]

    def get(self, key: str, default: Any = None) -> Any:
        """Read as the dict of earlier versions (deprecated: read the attributes)."""
        warnings.warn("RunResult.settings as a mapping is deprecated; read its attributes (RunSettings), e.g. "
                      "result.settings.split", DeprecationWarning, stacklevel=2)
        return self.to_dict().get(key, default)


@dataclass(frozen=True)
class ModelInfo:
    """What embedded the papers of a run that scidocs-eval embedded itself (`baseline`, `evaluate_model`).

    Args:
        name: the adapter's registry name, or the name a model object was given.
        paper_row: the paper's Table 1 row this adapter reproduces, if any.
        params: the adapter's constructor parameters (`best_params`: values tuning picked).
        best_params: the values `fit` picked on val (`--tune`), which the embeddings were made with.
        tuning: every setting `--tune` scored, {"params": setting, "score": mean val MAP ×100}, in grid order.
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
    tuning: Sequence[Mapping[str, Any]] = field(default_factory=list)
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


_SETTINGS_FIELDS: dict[str, list[Declared]] = {
    item.name: [*item.metadata["json"]] for item in dataclasses.fields(RunSettings) if "json" in item.metadata}
"""the settings a results file holds, each with the rules of its JSON value, from `RunSettings`'s fields."""
_SETTINGS_FIELDS[LEGACY_BENCHMARK] = [str, None]


def is_results_file(path: str | os.PathLike[str]) -> bool:
    """Whether the file at `path` is a scidocs-eval results file, told by its content (any name): a JSON object
    of the results format. Files over 64 MB (embeddings, not results) are not read."""
    path = Path(path)
    try:
        if not path.is_file() or path.stat().st_size > 64 << 20:
            return False
        with open(path, "rb") as handle:
            if handle.read(1).strip() not in (b"{", b""):
                return False
        return _results_file_problem(orjson.loads(path.read_bytes())) is None
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError):
        return False


@dataclass
class RunResult:
    """Everything one evaluation produced. `tasks` maps task name to its TaskResult (each with its own
    `seconds`); `timings` holds the phases (fit, embed, loading_embeddings, total); `model_info` what embedded
    the papers, when scidocs-eval did."""

    model: str
    tasks: dict[str, TaskResult]
    settings: RunSettings = field(default_factory=RunSettings)
    """what the run was scored with (a mapping of the results-file form is turned into `RunSettings`)."""
    skipped: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    """Tasks that could not run (an optional package missing), with the reason; the CLI exits non-zero."""
    fingerprints: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=package_versions)
    timings: dict[str, float] = field(default_factory=dict)
    synthetic: bool = False
    model_info: ModelInfo | None = None
    unknown: dict[str, Any] = field(default_factory=dict)
    """fields of a file written by a newer version (top level, and "tasks" -> {task: {field: value}}), kept as
    they were so that rewriting the file keeps them."""

    def __post_init__(self) -> None:
        if isinstance(self.settings, Mapping):
            self.settings = RunSettings.from_dict(self.settings)

    def to_dict(self) -> dict[str, Any]:
        data = {"format": RESULTS_FORMAT, **asdict(self), "settings": self.settings.to_dict()}
        unknown = data.pop("unknown")
        for task, fields in unknown.get("tasks", {}).items():
            data["tasks"].get(task, {}).update(fields)
        return {**data, **{name: value for name, value in unknown.items() if name != "tasks"}}

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the results file at `path`; its rows are its tasks, so replacing a results file that held tasks
        this run lacks says so in one warning naming them (`safe_output.Rows`; docs/errors_and_files.md)."""
        options = orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY
        return write_bytes_atomically(path, orjson.dumps(self.to_dict(), default=str, option=options),
                                      rows=Rows("tasks", set(self.tasks)))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        fields = {k: v for k, v in data.items() if k in _RUN_FIELDS}
        fields["settings"] = settings = RunSettings.from_dict(data.get("settings") or {})
        fields["tasks"] = {name: TaskResult(**{k: v for k, v in task.items() if k in _TASK_FIELDS})
                           for name, task in data["tasks"].items()}
        info = fields.get("model_info")
        fields["model_info"] = ModelInfo.from_dict(info) if isinstance(info, Mapping) else \
            ModelInfo.from_legacy_settings(settings.other)
        unknown: dict[str, Any] = {k: v for k, v in data.items() if k not in _RUN_FIELDS and k != "format"}
        unknown_in_tasks = {name: extra for name, task in data["tasks"].items()
                            if (extra := {k: v for k, v in task.items() if k not in _TASK_FIELDS})}
        if unknown_in_tasks:
            unknown["tasks"] = unknown_in_tasks
        return cls(**fields, unknown=unknown)

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
                if unknown := unknown_fields(data):
                    log.warning("%s: field(s) this scidocs-eval does not know, kept as they are (a file from a newer "
                                "version?): %s", path, ", ".join(unknown))
                return cls.from_dict(data)
        except orjson.JSONDecodeError as error:
            problem = f"not JSON: {error}"
        except (KeyError, TypeError) as error:
            problem = f"malformed: {error}"
        if problem.startswith(("field ", "task ")):
            raise InputError(path, f"malformed results file: {problem}")
        raise InputError(path, f"not a scidocs-eval results file ({problem}; they are written by `scidocs-eval run "
                         "--out` and `scidocs-eval baseline`)")


_RUN_FIELDS = {name: kinds for name, kinds in json_kinds(RunResult).items() if name != "unknown"}
"""the fields of a results file and the JSON values each is read from, from `RunResult`'s fields."""
_TASK_FIELDS = json_kinds(TaskResult)
"""the fields of a task's results, from `TaskResult`'s fields."""
