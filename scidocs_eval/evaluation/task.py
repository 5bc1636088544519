"""The task plugin interface: a `TaskSpec` that declares everything about a task, and the task registry.

A task is one small class: a validated `spec` (its name, metrics and main score, the Table 1 column each metric
fills, the embeddings group it reads and the metadata file that group covers) and an `evaluate` that scores an
`EmbeddingStore` on a `Suite`. Register it with `@register_task`; `scidocs_eval.tasks` holds the built-in ones.
The runner (`scidocs_eval.evaluation.runner`) times every task; tasks only compute.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import logging
import re
import warnings
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Generic, Literal, TypeVar

from scidocs_eval.data.sources import DownloadSource
from scidocs_eval.errors import MissingEmbeddingsError, ScidocsEvalError
from scidocs_eval.evaluation.integrity import DataShape, EvaluationItems, Problem, shape_findings
from scidocs_eval.extras import Requirement
from scidocs_eval.formats.embeddings import MISSING, EmbeddingStore
from scidocs_eval.formats.safe_output import Read, claim_inputs_are_not_outputs
from scidocs_eval.formats.suite import Paper, Suite
from scidocs_eval.params import Constraints, InputPath, input_paths, validate_params
from scidocs_eval.registry import ENTRY_POINT_GROUPS, Registry, check_params

MissingPolicy = Literal["official", "error"]
INPUT_FORMATS = ("classification", "regression", "proximity", "adhoc_query")
"""What a model embeds a group's papers for (SciRepEval's task formats, its [CLF], [RGN], [PRX] and [QRY]): papers
fed to a classifier, to a regressor, compared with papers (or searched: the candidates of a search), or short search
queries. A model that embeds differently per use (SPECTER2's task adapters, per-format prompts) is told which."""
QUERY_INPUT_FORMAT = "adhoc_query"
"""The input format of every `query_group` (the queries of a search, embedded apart from its documents)."""
_FAMILY_FORMAT = {"classification": "classification"}
"""A spec that names no input format gets its family's (proximity for every family not listed). The family is the
task's own label (`scidocs-eval tasks`), any name: nothing outside the tasks branches on it; what a command needs
from a task it reads from the task's declarations (`input_files`, `data_shapes`, `evaluation_items`, `paper_ids`,
`role_papers`, `paper_pairs`)."""
_NAME = re.compile(r"[a-z][a-z0-9_-]*")
log = logging.getLogger("scidocs_eval")


class CoverageError(ScidocsEvalError):
    """Too few of a task's items have a usable embedding for its numbers to mean anything."""


@dataclass(frozen=True)
class TaskSpec:
    """Everything a task declares about itself, checked when it is built.

    Args:
        name: registry name, lowercase (`--tasks NAME`, the folder of its files in a suite).
        description: one line for `scidocs-eval tasks`.
        family: a label of the kind of task ("classification", "ranking", "clustering", ...), any lowercase name:
            shown by `scidocs-eval tasks`; no command branches on it (a task declares its files, data shapes and
            papers instead).
        metrics: the metric names its TaskResult holds, in order (values ×100).
        main_score: the metric that ranks settings (`--tune`) and models; one of `metrics`.
        table1: metric -> Table 1 column key (see `scidocs_eval.leaderboard.COLUMNS`) for the metrics that
            fill a column of the paper's table; others are left out.
        embedding_group: the embeddings file it reads (`run --embeddings GROUP=FILE`; the official groups are
            "cls", "user-citation", "recomm").
        metadata_file: the suite's metadata file whose papers that group covers.
        benchmark: the named benchmark (see `BENCHMARKS`) the task belongs to; "scidocs" is the 2020 suite.
        query_group: the embeddings group its queries are read from, when queries and documents are embedded
            apart (retrieval tasks: "queries"; documents come from `embedding_group`); None: one group for both.
        dataset: where its data comes from when it is not in the suite, e.g. {"path": HF hub id, "revision":
            the commit MTEB pins}; empty for the suite's own tasks.
        mteb_task: the name of the MTEB task it reproduces (`export mteb` writes results under it), if any.
        input_format: what its `embedding_group`'s papers are embedded for (`INPUT_FORMATS`); empty: its
            family's (classification for "classification", proximity otherwise). Its `query_group` is
            `QUERY_INPUT_FORMAT`.
        text_fields: fields of its metadata records a model reads after title and abstract, in order, each that a
            record has (`Paper.extra`; SciRepEval's Search: venue, year); empty for title and abstract alone.
        paper_pairs: its `{name}/{split}.qrel` files judge pairs of the suite's papers: `--tune` scores a model on
            their val split, and a model fitted on a citation graph (SGC) keeps their val/test pairs out of it.
    """

    name: str
    description: str
    family: str
    metrics: tuple[str, ...]
    main_score: str
    embedding_group: str
    metadata_file: str
    table1: Mapping[str, str] = field(default_factory=dict)
    benchmark: str = "scidocs"
    query_group: str | None = None
    dataset: Mapping[str, str] = field(default_factory=dict)
    mteb_task: str | None = None
    input_format: str = ""
    text_fields: tuple[str, ...] = ()
    paper_pairs: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "text_fields", tuple(self.text_fields))
        if not self.input_format:
            object.__setattr__(self, "input_format", _FAMILY_FORMAT.get(self.family, "proximity"))
        object.__setattr__(self, "metrics", tuple(self.metrics))
        object.__setattr__(self, "table1", MappingProxyType(dict(self.table1)))
        object.__setattr__(self, "dataset", MappingProxyType(dict(self.dataset)))
        problems = []
        if not _NAME.fullmatch(self.name):
            problems.append(f"name {self.name!r} must be lowercase letters, digits, '-' or '_'")
        if not _NAME.fullmatch(self.family):
            problems.append(f"family {self.family!r} must be lowercase letters, digits, '-' or '_'")
        if not self.metrics or len(set(self.metrics)) != len(self.metrics):
            problems.append(f"metrics {self.metrics!r} must be a non-empty tuple without repeats")
        if self.main_score not in self.metrics:
            problems.append(f"main_score {self.main_score!r} is not one of its metrics {self.metrics!r}")
        unknown = sorted(set(self.table1) - set(self.metrics))
        if unknown:
            problems.append(f"table1 maps {unknown} which are not among its metrics {self.metrics!r}")
        if len(set(self.table1.values())) != len(self.table1):
            problems.append("table1 gives one column to two metrics")
        if not _NAME.fullmatch(self.embedding_group):
            problems.append(f"embedding_group {self.embedding_group!r} must be lowercase letters, digits, '-', '_'")
        if self.metadata_file and not self.metadata_file.endswith((".json", ".jsonl")):
            problems.append(f"metadata_file {self.metadata_file!r} must be a suite-relative .json or .jsonl "
                            "file (or empty: the task reads its texts from its own files)")
        if self.query_group is not None and (not _NAME.fullmatch(self.query_group)
                                             or self.query_group == self.embedding_group):
            problems.append(f"query_group {self.query_group!r} must be a group name other than embedding_group")
        if not all(isinstance(name, str) and name and name not in ("title", "abstract") for name in self.text_fields):
            problems.append(f"text_fields {self.text_fields!r} must name fields other than title and abstract")
        if self.input_format not in INPUT_FORMATS:
            problems.append(f"input_format {self.input_format!r} must be one of {', '.join(INPUT_FORMATS)}")
        if not _NAME.fullmatch(self.benchmark):
            problems.append(f"benchmark {self.benchmark!r} must be lowercase letters, digits, '-' or '_'")
        if problems:
            raise ValueError(f"task spec {self.name!r}: " + "; ".join(problems))


@dataclass
class TaskResult:
    """What one task reports: metrics (×100, rounded to 2 decimals), coverage counts and extra details.

    `items` holds what the metrics average, per query, test paper or impression (compact: ids once, values as
    arrays; `scidocs_eval.statistics.significance` reads it); `ci` maps each metric to its 95% bootstrap interval
    [low, high] (×100, 2 decimals), set by the runner. Both are empty in results written before they existed.
    """

    task: str
    metrics: dict[str, float]
    coverage: dict[str, int]
    details: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    """set by the runner, which times every task."""
    ci: dict[str, list[float]] = field(default_factory=dict)
    items: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TaskData:
    """One split of a task's data as its loader read it (`Task.load`): each task family subclasses it with the
    typed fields its questions (`data_shapes`, `role_papers`, `paper_ids`, `evaluation_items`, `evaluate`) read;
    a command loads it once and passes it to each, so a run parses each dataset file once.

    Attributes:
        split: the split read.
        with_texts: whether the texts a model embeds were read (False: ids only, where the vectors are given).
        suite: the suite it was read from (set by `load`; a reader need not give it).
    """

    split: str
    with_texts: bool
    suite: Suite = field(default=None, kw_only=True, compare=False, repr=False)  # type: ignore[assignment]


@dataclass(frozen=True)
class TaskInputs:
    """Every path a task reads for a split, resolved as its loader resolves them (`Task.inputs`): `files`, and
    `folders` it reads whole (a dataset folder it lists, a folder a parameter names): no output may be written at
    one of the files or anywhere below one of the folders; `readers`: who reads each, which a refusal names."""

    files: tuple[Path, ...] = ()
    folders: tuple[Path, ...] = ()
    readers: Mapping[Path, tuple[tuple[str, str], ...]] = field(default_factory=dict, compare=False)
    """path -> (task, what the path is to it: "data file", "'folder' parameter") of every task that reads it."""

    def union(self, other: TaskInputs) -> TaskInputs:
        readers = dict(self.readers)
        for path, found in other.readers.items():
            readers[path] = tuple(dict.fromkeys(readers.get(path, ()) + found))
        return TaskInputs(tuple(dict.fromkeys(self.files + other.files)),
                          tuple(dict.fromkeys(self.folders + other.folders)), readers)

    def read_by(self, path: Path) -> str:
        """Who reads `path`, in words: "task mag: its data file", "tasks cite and cocite: their metadata file"."""
        by_role: dict[str, list[str]] = {}
        for task, role in self.readers.get(path, ()):
            by_role.setdefault(role, []).append(task)
        return "; ".join(f"task {tasks[0]}: its {role}" if len(tasks) == 1 else
                         f"tasks {', '.join(tasks[:-1])} and {tasks[-1]}: their {role}"
                         for role, tasks in by_role.items())

    def declared(self) -> tuple[list[Read], list[Read]]:
        """(files, folders) as the output layer takes them, each with who reads it."""
        return ([Read(path, self.read_by(path)) for path in self.files],
                [Read(path, self.read_by(path)) for path in self.folders])


_LOADED: weakref.WeakKeyDictionary[Suite, dict[tuple, TaskData]] = weakref.WeakKeyDictionary()
"""{suite: {(task class, split, parameters): its TaskData}}: what `Task.load` read in a run (a run resolves its suite
once; the entry goes with it)."""
_VECTORS_GIVEN: weakref.WeakSet[Suite] = weakref.WeakSet()
"""Suites a run scores given vectors on (`vectors_given`): their tasks' loads need no texts."""


def vectors_given(suite: Suite) -> None:
    """Note that the run on `suite` scores vectors it was given: a task's `load` then reads no text it would only
    embed (a retrieval corpus' ids, not its texts), unless asked for texts (`role_papers`)."""
    _VECTORS_GIVEN.add(suite)


DataT = TypeVar("DataT", bound=TaskData)


class Task(ABC, Generic[DataT]):
    """Base class of every task plugin; a concrete subclass sets `spec` (the rest is read from it).

    A task reads its data in `read` (called through `load`, which keeps what it read for the run) from the files
    `input_files` names: `inputs` resolves the same names (and every path-valued parameter) for the output layer,
    so no command writes where a task reads."""

    spec: ClassVar[TaskSpec]
    name: ClassVar[str]
    description: ClassVar[str]
    embedding_group: ClassVar[str]
    metrics: ClassVar[tuple[str, ...]]
    parameter_constraints: ClassVar[Constraints] = {}
    """every constructor parameter's type and range (`scidocs_eval.params`), checked before any work starts."""
    splits: ClassVar[tuple[str, ...]] = ("val", "test")
    """the splits its data comes with, the scored one last (`data verify` checks each; a file of one that is not
    there is a warning); `run --split` may still ask for another."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        spec = cls.__dict__.get("spec")
        if spec is not None:
            if not isinstance(spec, TaskSpec):
                raise TypeError(f"{cls.__name__}.spec must be a TaskSpec, got {spec!r}")
            cls.name, cls.description = spec.name, spec.description
            cls.embedding_group, cls.metrics = spec.embedding_group, spec.metrics
        _adapt_contract(cls)

    def requirements(self) -> list[Requirement]:
        """The optional packages this task, as configured, needs (checked before it runs; `scidocs-eval tasks`
        lists them). The default: none, the light core scores it."""
        return []

    @abstractmethod
    def required_files(self, split: str) -> list[str]:
        """Suite-relative files the task reads for `split`; absent ones make the run skip the task."""

    def input_files(self, suite: Suite, split: str) -> list[str]:
        """The files of `suite` it reads for `split` (suite-relative or absolute); `required_files` by default, a
        task whose files depend on the layout found on disk overrides it. `read` reads these."""
        return self.required_files(split)

    def input_folders(self, suite: Suite, split: str) -> list[Path]:
        """Folders it reads whole for `split` (their listing decides what it reads); none by default."""
        return []

    def inputs(self, suite: Suite, split: str) -> TaskInputs:
        """Every path it reads for `split`: its input files and its metadata file, resolved against the suite as
        `read` resolves them, its input folders, and each path-valued parameter (`InputPath`: a folder, read whole,
        or a file), resolved against the suite as well; each with what it is to the task (`TaskInputs.readers`)."""
        given = [(f"'{name}' parameter", suite.path(value), folder or suite.path(value).is_dir())
                 for name, value, folder in input_paths(self.parameter_constraints, self.params())]
        readers: dict[Path, tuple[tuple[str, str], ...]] = {}

        def read(path: Path, role: str) -> Path:
            """`path`, noted as read in the `role` it has, or as a parameter's (a file in a parameter's folder)."""
            parameter = next((name for name, value, _ in given if value == path), None)
            inside = next((name for name, value, _ in given if value in path.parents), None)
            role = parameter or (f"{inside}'s {role}" if inside else role)
            readers[path] = tuple(dict.fromkeys((*readers.get(path, ()), (self.name, role))))
            return path

        files = [read(suite.path(name), "data file") for name in self.input_files(suite, split)]
        if self.spec.metadata_file:
            files.append(read(suite.path(self.spec.metadata_file), "metadata file"))
        folders = [read(folder, "dataset folder") for folder in self.input_folders(suite, split)]
        for name, value, folder in given:
            (folders if folder else files).append(read(value, name))
        return TaskInputs(tuple(dict.fromkeys(files)), tuple(dict.fromkeys(folders)), readers)

    def params(self) -> dict[str, Any]:
        """Its parameters' values (those of `parameter_constraints`)."""
        return {name: getattr(self, name, None) for name in self.parameter_constraints}

    def read(self, suite: Suite, split: str, texts: bool = True) -> DataT:
        """Parse its files of `split` (`input_files`) into its `TaskData`; `texts=False` may leave out the texts a
        model embeds (a task that has none to leave out reads the same). Call `load`, which reads once a run. The
        default reads nothing: a task without a reader gets its split and suite (`data.suite`, `data.split`)."""
        return TaskData(split, texts)  # type: ignore[return-value]  # a task without a reader has no data type

    def load(self, suite: Suite, split: str, texts: bool | None = None) -> DataT:
        """Its data of `split`, read once per run (per suite object) and parameters: a command loads it and passes it
        to every question it asks of the task (`data_shapes(data)`, `evaluate(data, embeddings)`, ...). `texts`:
        whether the texts a model embeds are needed (None: unless the run scores given vectors, `vectors_given`); a
        load with texts serves a question that needs none."""
        if texts is None:
            texts = suite not in _VECTORS_GIVEN
        loaded = _LOADED.setdefault(suite, {})
        key = (type(self), split, repr(sorted(self.params().items())))
        data = loaded.get(key)
        if data is None or (texts and not data.with_texts):
            # kept without its suite: a value of the weak mapping that held its key would keep it alive
            data = loaded[key] = dataclasses.replace(self.read(suite, split, texts), suite=None)
        return dataclasses.replace(data, suite=suite)  # type: ignore[return-value]  # what `read` returned

    def role_papers(self, data: DataT) -> dict[str, tuple[list[Paper], str]]:
        """group -> (papers, MTEB prompt type "query" or "document") of what a model embeds apart from the papers
        of the metadata file: the texts of a retrieval task (each in `Paper.title`, so that `paper_text` gives it
        back whatever separator a model uses), a search task's queries; {} for a task that reads only the papers
        of its metadata file."""
        return {}

    @abstractmethod
    def evaluate(self, data: DataT, embeddings: EmbeddingStore, missing: MissingPolicy = "official") -> TaskResult:
        """Score `embeddings` on its loaded data (`load(suite, split)`: the split "val" or "test")."""

    @classmethod
    def groups(cls) -> tuple[str, ...]:
        """The embeddings groups it reads: its documents' group, then its queries' when they have their own."""
        return (cls.spec.embedding_group,) + ((cls.spec.query_group,) if cls.spec.query_group else ())

    def evaluate_groups(self, data: DataT, stores: Mapping[str, EmbeddingStore],
                        missing: MissingPolicy = "official") -> TaskResult:
        """Score the stores of its `groups()` (what the runner calls); a task with one group reads that one."""
        return self.evaluate(data, stores[self.embedding_group], missing)

    def paper_ids(self, data: DataT) -> list[str] | None:
        """The ids whose embeddings `evaluate(data, ...)` reads (a model embeds only these); None, the default for a
        task that does not say: every paper of its spec's metadata file."""
        return None

    def data_shapes(self, data: DataT) -> list[DataShape]:
        """Its data of `split` by shape (`evaluation.integrity`: `LabelledSplit`, `JudgedSplit`,
        `SampledEvaluation`, or a shape of its own), read with the readers `evaluate` uses: the integrity rules of
        each shape apply to it in `run` and `data verify`. [] (the default): no rule by shape applies."""
        return []

    def evaluation_items(self, data: DataT) -> EvaluationItems | None:
        """What its split scores (the audit, `run --exclude`: the ids of its TaskResult's per-item results are these
        items); by default the items of its data shapes; None: it declares none."""
        parts = [items for shape in self.data_shapes(data) if (items := shape.evaluation_items())]
        return functools.reduce(EvaluationItems.merged, parts) if parts else None

    def paper_texts(self, data: DataT) -> dict[str, tuple[str, str]]:
        """(title, abstract) of the papers of its split by id (the audit matches them by title and text): those of
        its metadata file, then the texts it embeds apart (`role_papers`)."""
        texts: dict[str, tuple[str, str]] = {}
        suite = data.suite
        if self.spec.metadata_file and suite.has(self.spec.metadata_file):
            texts = {paper_id: (record.get("title") or "", record.get("abstract") or "")
                     for paper_id, record in suite.metadata(self.spec.metadata_file).items()}
        for papers, _ in self.role_papers(data).values():
            for paper in papers:
                texts.setdefault(paper.paper_id, (paper.title, paper.abstract))
        return texts

    def findings(self, data: DataT) -> list[Problem]:
        """The integrity findings of its loaded data (what `run` stops on or warns about before scoring, and
        `data verify` lists); a file that does not parse raises its InputError when loaded."""
        return shape_findings(self.data_shapes(data))


_ASKS = ("data_shapes", "role_papers", "paper_ids", "evaluation_items", "paper_texts", "findings")
"""The questions a command asks of a task's loaded data: `(data)`; before TaskData, `(suite, split)`."""
_SCORES = ("evaluate", "evaluate_groups")
"""Scoring: `(data, embeddings, missing)`; before TaskData, `(suite, embeddings, split, missing)`."""


def _old_form(name: str) -> str:
    return f"{name}(suite, embeddings, split, missing)" if name in _SCORES else f"{name}(suite, split)"


def _new_form(name: str) -> str:
    return f"{name}(data, embeddings, missing)" if name in _SCORES else f"{name}(data)"


def _old_call(task: Task, name: str, suite: Suite, args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict]:
    """The arguments of the TaskData form for a call in the form before it: the data loaded (`Task.load`)."""
    if name in _ASKS:
        split = args[0] if args else kwargs.pop("split")
        return (task.load(suite, split),), {}
    store, *rest = args
    split = rest[0] if rest else kwargs.pop("split", "test")
    return (task.load(suite, split), store, *rest[1:]), kwargs


def _adapt_contract(cls: type) -> None:
    """Keep tasks and callers of the form before TaskData working for a release, each with a DeprecationWarning:
    a method a class defines as `(self, suite, split, ...)` is called with the data's suite and split; a call
    `task.method(suite, split, ...)` of a method of the TaskData form loads the data first."""
    for name in (*_ASKS, *_SCORES):
        method = cls.__dict__.get(name)
        if method is None or getattr(method, "_task_contract", False):
            continue
        if list(inspect.signature(method).parameters)[1:2] == ["suite"]:
            warnings.warn(f"task class {cls.__qualname__} defines {_old_form(name)}, the form before TaskData: "
                          f"define {_new_form(name)}, where data is what Task.load(suite, split) returns (data.suite, "
                          "data.split); the old form is called through an adapter for one release "
                          "(docs/architecture.md, the task contract)", DeprecationWarning, stacklevel=4)
            wrapper = _old_definition(name, method)
        else:
            wrapper = _new_definition(name, method)
        wrapper._task_contract = True  # type: ignore[attr-defined]
        setattr(cls, name, wrapper)


def _old_definition(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def called_with_data(self: Task, first: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(first, Suite):  # its own calls, in its own form
            return method(self, first, *args, **kwargs)
        if name in _ASKS:
            return method(self, first.suite, first.split)
        store, *rest = args
        return method(self, first.suite, store, first.split, *rest, **kwargs)
    return called_with_data


def _new_definition(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def also_called_the_old_way(self: Task, first: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(first, Suite):
            warnings.warn(f"{type(self).__name__}.{_old_form(name)} is deprecated and goes in the next release: "
                          f"pass the task's data, {_new_form(name)} with data = task.load(suite, split)",
                          DeprecationWarning, stacklevel=2)
            args, kwargs = _old_call(self, name, first, args, kwargs)
            return method(self, *args, **kwargs)
        return method(self, first, *args, **kwargs)
    return also_called_the_old_way


_adapt_contract(Task)


class FolderTask(Task[DataT]):
    """A task whose data is one folder of the suite (a hub dataset's copy): the task parameter `folder`, by default
    the folder named after the task."""

    parameter_constraints: ClassVar[dict[str, list]] = {"folder": [InputPath(folder=True), None]}
    splits: ClassVar[tuple[str, ...]] = ("test",)

    def __init__(self, folder: str | None = None):
        validate_params(self.parameter_constraints, {"folder": folder}, f"task {self.name!r}")
        self.folder = folder

    def dataset_folder(self, suite: Suite) -> Path:
        return suite.path(self.folder or self.name)

    def input_folders(self, suite: Suite, split: str) -> list[Path]:
        return [self.dataset_folder(suite)]


def suite_relative(suite: Suite, path: str | Path) -> str:
    """`path` relative to the suite's root when it is inside it (how findings name files), else as given."""
    path = Path(path)
    return str(path.relative_to(suite.root)) if suite.root in path.parents else str(path)


def check_missing(task: str, role: str, ids: list[str], codes: Any, missing: MissingPolicy) -> None:
    """Under the "error" policy, stop with the ids (in `ids`, status `codes`) that have no embedding."""
    if missing == "error":
        absent = [paper_id for paper_id, code in zip(ids, codes) if code == MISSING]
        if absent:
            raise MissingEmbeddingsError(task, role, absent, len(absent))


TASKS: Registry[type[Task]] = Registry("task", Task, plugins="scidocs_eval.tasks",
                                      entry_points=ENTRY_POINT_GROUPS["task"],
                                      key=lambda cls: cls.spec.name)
"""Every task by name; the built-in ones in module order (classification, ranking, recomm: Table 1's order)."""


def register_task(cls: type[Task]) -> type[Task]:
    """Class decorator: make a task available by its spec's name (a taken name is an error)."""
    if not isinstance(getattr(cls, "spec", None), TaskSpec):
        raise TypeError(f"{cls.__name__} has no TaskSpec `spec`")
    for other in TASKS.registered():
        if other.spec.embedding_group == cls.spec.embedding_group and other.spec.name != cls.spec.name \
                and other.spec.text_fields != cls.spec.text_fields:
            raise ValueError(f"task {cls.spec.name!r} embeds group {cls.spec.embedding_group!r} with text fields "
                             f"{cls.spec.text_fields}, but task {other.spec.name!r} with {other.spec.text_fields}; "
                             "give it an embeddings group of its own")
        if other.spec.embedding_group == cls.spec.embedding_group and other.spec.name != cls.spec.name \
                and other.spec.metadata_file != cls.spec.metadata_file:
            raise ValueError(f"task {cls.spec.name!r} reads embeddings group {cls.spec.embedding_group!r} as the "
                             f"papers of {cls.spec.metadata_file or 'its own files'}, but task {other.spec.name!r} "
                             f"reads that group as {other.spec.metadata_file or 'its own files'}; give it an "
                             "embeddings group of its own")
    formats = {group: fmt for other in TASKS.registered() for group, fmt in _group_formats(other.spec)}
    for group, input_format in _group_formats(cls.spec):
        if formats.get(group, input_format) != input_format:
            raise ValueError(f"task {cls.spec.name!r} embeds group {group!r} for {input_format}, but registered "
                             f"tasks embed it for {formats[group]}; give it an embeddings group of its own")
    return TASKS.register(cls)


def _group_formats(spec: TaskSpec) -> list[tuple[str, str]]:
    return [(spec.embedding_group, spec.input_format)] + \
        ([(spec.query_group, QUERY_INPUT_FORMAT)] if spec.query_group else [])


def group_input_formats() -> dict[str, str]:
    """{embeddings group: input format} of every registered task's groups (one format a group, checked when a task
    registers)."""
    return {group: input_format for _, cls in TASKS.items() for group, input_format in _group_formats(cls.spec)}


class BenchmarkTable(ABC):
    """How a kind of benchmark table is rendered from results (`Benchmark.table`): SciDocs' Table 1, SciRepEval's
    columns, the `sci` benchmark's averages side by side, a column per task. Rendering is the leaderboard's job: the
    leaderboard registers these (`scidocs_eval.leaderboard.benchmark_tables`), found by `name` on first use."""

    name: ClassVar[str]
    shows: ClassVar[str]
    """what it shows, for the hint that suggests it ("Table 1 beside the paper's rows")."""
    intervals: ClassVar[bool] = False
    """whether it can show each value's 95% bootstrap interval (`table --ci`)."""

    @abstractmethod
    def render(self, benchmark: Benchmark, results: Sequence[Any], sources: Sequence[str | Path] | None,
               include_paper: bool, ci: bool) -> str:
        """Markdown of `results` (`RunResult`s; `sources` their files, for labels), with the published rows unless
        `include_paper` is False."""

    def after_run(self, benchmark: Benchmark, result: Any) -> str | None:
        """What `run` and `baseline` print of this table after their own (None: nothing)."""
        return None

    def averages(self, benchmark: Benchmark) -> dict[str, list[tuple[str, str]]]:
        """The averages of this table that `leaderboard` ranks: name -> the (task, metric) pairs it averages, each
        task registered (none by default)."""
        return {}

    def published(self, average: str) -> list[tuple[str, float, str, str]]:
        """The published values of one of its `averages`: (label, value, source, note), in the source's order."""
        return []

    def published_note(self, average: str) -> str:
        """What a ranking of `average` beside published values says of how the average is defined ("": nothing)."""
        return ""


BENCHMARK_TABLES: Registry[type[BenchmarkTable]] = Registry("benchmark table", BenchmarkTable,
                                                            plugins="scidocs_eval.leaderboard.benchmark_tables")
"""Every kind of benchmark table by name, registered by the leaderboard (or a plugin)."""


DEFAULT_SYNTHETIC_LABEL = "synthetic demo suite"


@dataclass(frozen=True)
class Benchmark:
    """A named group of tasks (`run --benchmark NAME`) and what it owns: its tasks (those whose spec names it, and
    those of its `members`), its results table, where its data comes from, what a synthetic copy of it is called.
    Register one with `BENCHMARKS.register(Benchmark(...))` in the module of its tasks; the CLI, `table`,
    `leaderboard`, `data download` and the hints ask it, never compare its name (tests/test_architecture.py).

    Args:
        name: registry name (`--benchmark NAME`), lowercase.
        description: one line for `scidocs-eval benchmarks`.
        members: other benchmarks whose tasks it holds too (`sci`: every scientific benchmark, in one run).
        table_kind: its results table, a `BENCHMARK_TABLES` name ("table1", "scirepeval", "sci", "tasks": a column
            per task's main score, the default).
        download: where `data download --benchmark NAME` fetches its data from (`scidocs_eval.data.sources`);
            None: it has no download.
        synthetic_label: what a run's label adds when its suite is generated data.
    """

    name: str
    description: str
    members: tuple[str, ...] = ()
    table_kind: str = "tasks"
    download: DownloadSource | None = None
    synthetic_label: str = DEFAULT_SYNTHETIC_LABEL

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise ValueError(f"benchmark name {self.name!r} must be lowercase letters, digits, '-' or '_'")
        object.__setattr__(self, "members", tuple(self.members))

    def task_names(self) -> list[str]:
        """Its tasks (and its members'), in the registry's order."""
        return task_names(benchmark=self.name)

    def owns(self, task: str) -> bool:
        """Whether the registered task `task` is one of its own (not a member benchmark's)."""
        return task in TASKS and TASKS[task].spec.benchmark == self.name

    def option(self) -> tuple[str, ...]:
        """The command-line words that name it (none for the default benchmark)."""
        return () if self.name == DEFAULT_BENCHMARK else ("--benchmark", self.name)

    def table(self, results: Sequence[Any], sources: Sequence[str | Path] | None = None, include_paper: bool = True,
              ci: bool = False) -> str:
        """Its results table (markdown) of `results` (`RunResult`s; `sources`: their files, for labels)."""
        renderer = BENCHMARK_TABLES[self.table_kind]()
        if ci and not renderer.intervals:
            raise ScidocsEvalError(f"the {self.name} table shows averages, it has no intervals (--ci)")
        return renderer.render(self, results, sources, include_paper, ci)

    def shows(self) -> str:
        """What its table shows (a hint's "gives")."""
        return BENCHMARK_TABLES[self.table_kind].shows

    def after_run(self, result: Any) -> str | None:
        """What a run that named it prints of its table after the run's own (the `sci` table), or None."""
        return BENCHMARK_TABLES[self.table_kind]().after_run(self, result)


DEFAULT_BENCHMARK = "scidocs"
"""What `run`, `baseline` and `evaluate_model` score when given no benchmark and no tasks: the 2020 suite."""
BENCHMARKS: Registry[Benchmark] = Registry("benchmark", Benchmark, plugins="scidocs_eval.tasks",
                                          entry_points=ENTRY_POINT_GROUPS["task"])
"""Every named benchmark, registered by the task plugin modules that define its tasks."""


def benchmarks_of(tasks: Sequence[str], named: Sequence[str] | None = None) -> list[Benchmark]:
    """The benchmarks a run named (`named`), else those of its registered `tasks`, each once, in order."""
    names = list(named) if named else [TASKS[task].spec.benchmark for task in tasks if task in TASKS]
    return [BENCHMARKS[name] for name in dict.fromkeys(names) if name in BENCHMARKS]


def task_names(family: str | None = None, benchmark: str | None = None, paper_pairs: bool | None = None
               ) -> list[str]:
    """Names of the registered tasks (with one family label, of one benchmark or a benchmark it gathers
    (`Benchmark.members`), judging the suite's paper pairs, if given), in the registry's order. Commands select by
    benchmark or by a declaration (`paper_pairs`), never by family (tests/test_architecture.py)."""
    within = None if benchmark is None else {benchmark, *BENCHMARKS[benchmark].members}
    return [name for name, cls in TASKS.items() if (family is None or cls.spec.family == family)
            and (within is None or cls.spec.benchmark in within)
            and (paper_pairs is None or cls.spec.paper_pairs == paper_pairs)]


def selected_tasks(tasks: Sequence[str] | None = None, benchmark: str | None = None) -> list[str]:
    """The task names a run scores: `tasks` (each checked, and in `benchmark` when one is named), else the tasks
    of `benchmark` (default "scidocs")."""
    if benchmark is not None:
        BENCHMARKS.check([benchmark])
    if not tasks:
        return task_names(benchmark=benchmark or DEFAULT_BENCHMARK)
    names = TASKS.check(tasks)
    inside = set(task_names(benchmark=benchmark)) if benchmark is not None else set(names)
    outside = [name for name in names if name not in inside]
    if outside:
        raise ScidocsEvalError(f"task(s) {', '.join(outside)} are not in benchmark {benchmark!r} (its tasks: "
                               f"{', '.join(task_names(benchmark=benchmark))}); leave out the benchmark to pick "
                               "tasks of any benchmark")
    return names


def run_inputs(suite: Suite, tasks: Iterable[Task], split: str) -> TaskInputs:
    """The union of the `inputs` of `tasks` for `split` and for each split they come with (a model is tuned on
    val, a classifier trained on train): what a command that scores them hands the output layer."""
    return functools.reduce(TaskInputs.union, (task.inputs(suite, each) for task in tasks
                                               for each in dict.fromkeys([split, *task.splits])), TaskInputs())


def claim_task_inputs(suite: Suite, tasks: Iterable[Task], split: str,
                      outputs: Mapping[str, Any] | Sequence[tuple[str, Any]], inputs: Iterable[Any] = (),
                      folders: Iterable[str | Path] = ()) -> TaskInputs:
    """Hand the output layer every path the command reads, before it reads or writes anything: what `tasks` read
    (`run_inputs`), the command's other `inputs` (files, or folders whose files it reads) and `folders` (read whole:
    a checkpoint); a one-line error when one of `outputs` ({option: path}, or (option, path) pairs when an option
    writes several files) is among them. Returns the tasks'."""
    read = run_inputs(suite, tasks, split)
    task_files, task_folders = read.declared()
    files, whole = [*task_files, *inputs], [*task_folders, *folders]
    for option, path in outputs.items() if isinstance(outputs, Mapping) else outputs:
        claim_inputs_are_not_outputs(files, {option: path}, whole)
    return read


def get_task(name: str, **params: Any) -> Task:
    """An instance of the task registered as `name`, built with `params` (checked: `registry.check_params`)."""
    return TASKS[name](**check_params(TASKS[name], params, f"task {name!r}"))


def build_tasks(names: Sequence[str], params: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Task]:
    """Every task of `names` and of `params` built with its parameters: all checked before any work starts."""
    params = params or {}
    return {name: get_task(name, **params.get(name, {})) for name in dict.fromkeys([*names, *params])}


DEFAULT_MIN_COVERAGE = 0.8
"""The least share of a task's items (per role: queries, candidates, train papers, ...) with a usable embedding
for its numbers to be reported; see docs/errors_and_files.md ("Coverage") for why 80%."""


def coverage_shares(coverage: Mapping[str, int]) -> dict[str, tuple[int, int, int]]:
    """{role: (items, absent, empty)} read from a TaskResult's coverage counts: every `ROLE_missing` count with
    its `ROLE_empty` and its total `ROLE` (or `ROLE_papers`, as the classification tasks name it)."""
    shares = {}
    for key, absent in coverage.items():
        if not key.endswith("_missing"):
            continue
        role = key.removesuffix("_missing")
        total, name = (coverage[role], role) if role in coverage else (coverage.get(f"{role}_papers"), f"{role} papers")
        if total:
            shares[name] = (int(total), int(absent), int(coverage.get(f"{role}_empty", 0)))
    return shares


def check_coverage(task: str, coverage: Mapping[str, int], min_coverage: float, cause: str | None = None) -> None:
    """One warning line with the counts when some item of `task` lacks a usable embedding; an error when a role
    has none at all, or a share below `min_coverage`; the error names `cause` when known (the embeddings file's
    record says it was written for other tasks or another split)."""
    shares = coverage_shares(coverage)
    lacking = {role: counts for role, counts in shares.items() if counts[1] + counts[2]}
    if not lacking:
        return
    counts = "; ".join(f"{total - absent - empty} of {total} {role} usable ({absent} absent, {empty} empty)"
                       for role, (total, absent, empty) in lacking.items())
    worst_role, (total, absent, empty) = min(lacking.items(), key=lambda item: 1 - sum(item[1][1:]) / item[1][0])
    share = (total - absent - empty) / total
    if share == 0:
        raise CoverageError(f"task {task}: none of its {total} {worst_role} has a usable embedding ({counts}); "
                            + (cause or "the embeddings are not of this suite's papers"))
    if share < min_coverage:
        raise CoverageError(f"task {task}: {share:.1%} of its {worst_role} have a usable embedding, below the minimum "
                            f"coverage {min_coverage:.0%} ({counts}); "
                            + (cause or "check that the embeddings are of this suite's papers, or lower "
                                        "--min-coverage"))
    log.warning("task %s: some items have no usable embedding: %s", task, counts)


def metadata_file_of_group(group: str) -> str:
    """The metadata file whose papers the embeddings group `group` covers (from the registered tasks)."""
    files = {cls.spec.metadata_file for _, cls in TASKS.items() if cls.spec.embedding_group == group}
    if len(files) != 1:
        raise ValueError(f"embeddings group {group!r} is read by tasks with metadata files {sorted(files)}")
    return files.pop()


def embedding_groups() -> list[str]:
    """The embeddings groups the registered tasks read (documents' and queries' groups), in registration order."""
    return list(dict.fromkeys(group for _, cls in TASKS.items() for group in cls.groups()))
