"""`RunConfig`: what a run scores and how, built once (by the CLI or the Python API) and checked in one place.

`evaluate(embeddings, config)`, `evaluate_model(model, config)` and `run_baseline(name, config)` take it; their
keyword forms of earlier versions (`evaluate(file, "demo", tasks=[...])`) still work for a release, as a thin
layer that builds the config (`config_from_keywords`) with a DeprecationWarning. The model (an embeddings file, a
model object, an adapter) and how it is called stay the entry point's own arguments: the configuration says what
is scored, on which data, under which rules, and where the results go. What a results file records of it is
`RunSettings` (`evaluation/results.py`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.results import LeakExclusion, RunSettings
from scidocs_eval.evaluation.task import (
    DEFAULT_MIN_COVERAGE,
    MissingPolicy,
    Task,
    build_tasks,
    selected_tasks,
)
from scidocs_eval.formats.suite import Suite
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.params import FRACTION, InstanceOf, ListOf, Options, Satisfies, check_value

np = lazy_module("numpy", __name__)

SPLITS = ("test", "val")
MISSING_POLICIES = ("official", "error")
DTYPES = ("float32", "float64")


def _is_task_params(value: Any) -> bool:
    return isinstance(value, Mapping) and all(isinstance(task, str) and isinstance(params, Mapping)
                                              and all(isinstance(key, str) for key in params)
                                              for task, params in value.items())


def run_tasks(tasks: Sequence[str] | None = None, benchmarks: Sequence[str] | str | None = None) -> list[str]:
    """The tasks a run scores: `tasks` (each in one of `benchmarks` when given), else every task of each benchmark
    (default: the default benchmark's)."""
    if isinstance(benchmarks, str):
        benchmarks = [benchmarks]
    if not benchmarks or len(benchmarks) == 1:
        return selected_tasks(tasks, benchmarks[0] if benchmarks else None)
    chosen = [name for benchmark in benchmarks for name in selected_tasks(None, benchmark)]
    if not tasks:
        return list(dict.fromkeys(chosen))
    names = selected_tasks(tasks)
    outside = [name for name in names if name not in chosen]
    if outside:
        raise ScidocsEvalError(f"task(s) {', '.join(outside)} are in none of the benchmarks {', '.join(benchmarks)}")
    return names


@dataclass(frozen=True)
class RunConfig:
    """What a run scores and how (every field checked when the configuration is built; a bad value is a one-line
    `ParameterError` naming the field).

    Args:
        data: suite directory, "demo", a Suite, or None for the default data directory.
        tasks: task names, of any benchmark (default: the benchmarks' tasks); never empty.
        benchmarks: the registered benchmark(s) whose tasks are scored (a name or several; default "scidocs");
            with `tasks`, each task must belong to one of them. Several are embedded with one plan.
        split: "test" (what the paper reports) or "val".
        missing: "official" (the official rules for papers without an embedding) or "error".
        task_params: constructor parameters per task name, e.g. {"recomm": {"seeds": 3}} (None: {}).
        min_coverage: the least share (0..1) of each task's queries, candidates or papers with a usable
            embedding; below it, or with none at all, a CoverageError.
        dtype: "float32" or "float64" (any numpy spelling of them): the vectors' precision when scored.
        progress: show progress bars.
        cache: use the run's cache: the parsed-embeddings cache when scoring files (`evaluate`), the embedding
            cache across runs when embedding (`evaluate_model`, `run_baseline`).
        output: where to write the results JSON (none by default; `run_baseline` writes into its `out_dir`).
        exclude: an audit file (`scidocs-eval audit --out`): every task is scored without the items it found
            leaked (made on the same suite files and split, auditing every task run; else an error).
    """

    data: str | Suite | None = None
    tasks: tuple[str, ...] | None = None
    benchmarks: tuple[str, ...] | None = None
    split: str = "test"
    missing: MissingPolicy = "official"
    task_params: Mapping[str, Mapping[str, Any]] | None = None
    min_coverage: float = DEFAULT_MIN_COVERAGE
    dtype: str = "float32"
    progress: bool = True
    cache: bool = True
    output: Path | None = None
    exclude: Path | None = None

    parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "data": [str, os.PathLike, Suite, None],
        "tasks": [ListOf(InstanceOf(str), min_length=1), None],
        "benchmarks": [ListOf(InstanceOf(str), min_length=1), None],
        "split": [Options(SPLITS)],
        "missing": [Options(MISSING_POLICIES)],
        "task_params": [Satisfies(_is_task_params, "an object {task: {parameter: value}}", [[1], {"mag": 3}]), None],
        "min_coverage": [FRACTION],
        "dtype": [Options(DTYPES)],
        "progress": [bool],
        "cache": [bool],
        "output": [str, os.PathLike, None],
        "exclude": [str, os.PathLike, None],
    }
    """each field's rules (`scidocs_eval.params`), checked in the order of the fields; the table of every
    parameter in docs/errors_and_files.md lists them."""

    def __post_init__(self) -> None:
        given = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if isinstance(given["benchmarks"], str):
            given["benchmarks"] = [given["benchmarks"]]
        if given["dtype"] is not None and not isinstance(given["dtype"], (str, bool)):
            with contextlib.suppress(TypeError):  # else refused below, named
                given["dtype"] = np.dtype(given["dtype"]).name  # np.float64, np.dtype("f8") -> its name
        for name, rules in self.parameter_constraints.items():
            check_value(name, given[name], rules, "RunConfig")
        normal = {
            "data": os.fspath(given["data"]) if isinstance(given["data"], os.PathLike) else given["data"],
            "tasks": tuple(given["tasks"]) if given["tasks"] is not None else None,
            "benchmarks": tuple(given["benchmarks"]) if given["benchmarks"] is not None else None,
            "task_params": {task: dict(params) for task, params in (given["task_params"] or {}).items()},
            "dtype": given["dtype"],
            "output": Path(given["output"]) if given["output"] is not None else None,
            "exclude": Path(given["exclude"]) if given["exclude"] is not None else None,
        }
        for name, value in normal.items():
            object.__setattr__(self, name, value)
        self.built_tasks()  # task names, benchmarks and task parameters checked before any work starts

    @classmethod
    def build(cls, config: RunConfig | None = None, **given: Any) -> RunConfig:
        """`config` (default: the defaults) with each of `given` that is not None put in: what the keyword
        parameters of `evaluate`, `evaluate_model` and `run_baseline` do."""
        unknown = sorted(set(given) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise TypeError(f"RunConfig has no field(s) {', '.join(unknown)}")
        if config is not None and not isinstance(config, RunConfig):
            raise ScidocsEvalError(f"config must be a RunConfig, not {type(config).__name__}")
        overrides = {name: value for name, value in given.items() if value is not None}
        return dataclasses.replace(config, **overrides) if config is not None else cls(**overrides)

    def task_names(self) -> list[str]:
        """The tasks the run scores (`run_tasks`)."""
        return run_tasks(self.tasks, self.benchmarks)

    def built_tasks(self) -> dict[str, Task]:
        """Every task of the run (and of `task_params`) built with its parameters."""
        return build_tasks(self.task_names(), self.task_params)

    def settings(self, suite_root: str | os.PathLike[str], names: Sequence[str],
                 exclusion: LeakExclusion | None = None) -> RunSettings:
        """What the results file records of this configuration, for a run of the tasks `names` on the suite at
        `suite_root`."""
        return RunSettings(data=str(suite_root), tasks=tuple(names), split=self.split, missing=self.missing,
                           task_params={task: dict(params) for task, params in self.task_params.items()},
                           dtype=self.dtype, min_coverage=self.min_coverage, exclude=exclusion,
                           benchmarks=self.benchmarks)


KEYWORD_ALIASES = {"benchmark": "benchmarks"}
"""keyword parameters of earlier versions' entry points -> the `RunConfig` field each was."""


def config_from_keywords(entry: str, config: Any, keywords: Mapping[str, Any],
                         handled: Mapping[str, str] | None = None) -> RunConfig:
    """The `RunConfig` of an entry point (`entry`: "evaluate", ...) given `config` (a RunConfig, None, or, in the
    form of earlier versions, the suite as the second argument) and the keyword parameters of earlier versions
    (`split=`, `tasks=`, `benchmark=`, ...: each not None put into the config, as `RunConfig.build` does), with one
    DeprecationWarning naming them (and those of `handled`, {keyword: what replaces it}, which the entry point
    took itself); an unknown keyword is a TypeError, as Python's own."""
    unknown = sorted(set(keywords) - {f.name for f in dataclasses.fields(RunConfig)} - set(KEYWORD_ALIASES))
    if unknown:
        raise TypeError(f"{entry}() got an unexpected keyword argument {unknown[0]!r}")
    given = dict(keywords)
    names = [*(["data"] if config is not None and not isinstance(config, RunConfig) else []), *keywords]
    handled = dict(handled or {})
    if config is not None and not isinstance(config, RunConfig):
        if "data" in given:
            raise TypeError(f"{entry}() got the suite twice: as its second argument ({config!r}) and as data=")
        given["data"] = config  # the second positional parameter was `data`
        config = None
    if names or handled:
        replacements = [f"RunConfig({', '.join(f'{n}=...' for n in names)})"] if names else []
        replacements += list(dict.fromkeys(handled.values()))
        warnings.warn(f"{entry}()'s {', '.join([*names, *handled])} keyword form is deprecated and goes in the next "
                      f"release: pass {entry}(..., {', '.join(replacements)})", DeprecationWarning, stacklevel=3)
    if not given:
        return config if config is not None else RunConfig()
    for old, new in KEYWORD_ALIASES.items():
        if old in given:
            if given.get(new) is not None and given[old] is not None:
                raise ScidocsEvalError(f"{entry}(): give {old} or {new}, not both")
            value = given.pop(old)
            given[new] = given.get(new) if value is None else value
    return RunConfig.build(config, **given)
