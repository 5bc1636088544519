"""The task plugin interface and its registry.

A task is one small class: it declares its name, the embeddings file it reads (the official code's three
files: "cls", "user-citation", "recomm"), its metrics and the Table 1 columns they fill, and scores a
`EmbeddingStore` on a `Suite`. Register it with `@register_task`; `scidocs_eval.tasks` holds the built-in ones.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from scidocs_eval.embeddings import MISSING, EmbeddingStore
from scidocs_eval.errors import MissingEmbeddingsError, ScidocsEvalError
from scidocs_eval.plugins import import_submodules
from scidocs_eval.suite import Suite

MissingPolicy = Literal["official", "error"]
EMBEDDING_GROUPS = ("cls", "user-citation", "recomm")
METADATA_OF_GROUP = {"cls": "mag_mesh", "user-citation": "view_cite_read", "recomm": "recomm"}
"""The metadata file (`Suite.metadata` group) whose papers each embeddings group covers."""


@dataclass
class TaskResult:
    """What one task reports: metrics (×100, rounded to 2 decimals), coverage counts and extra details.

    `items` holds what the metrics average, per query, test paper or impression (compact: ids once, values as
    arrays; `scidocs_eval.significance` reads it); `ci` maps each metric to its 95% bootstrap interval
    [low, high] (×100, 2 decimals). Both are empty in results written before they existed.
    """

    task: str
    metrics: dict[str, float]
    coverage: dict[str, int]
    details: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    ci: dict[str, list[float]] = field(default_factory=dict)
    items: dict[str, Any] = field(default_factory=dict)


class Task(ABC):
    """Base class of every task plugin; subclasses set the class attributes below."""

    name: ClassVar[str]
    description: ClassVar[str]
    embedding_group: ClassVar[str]
    metrics: ClassVar[tuple[str, ...]]
    table1_columns: ClassVar[dict[str, str]]
    """metric name -> Table 1 column key (see `scidocs_eval.leaderboard.COLUMNS`)."""

    @abstractmethod
    def required_files(self, split: str) -> list[str]:
        """Suite-relative files the task reads for `split`; absent ones make the run skip the task."""

    @abstractmethod
    def evaluate(self, suite: Suite, embeddings: EmbeddingStore, split: str = "test",
                 missing: MissingPolicy = "official") -> TaskResult:
        """Score `embeddings` on `split` ("val" or "test")."""


def check_missing(task: str, role: str, ids: list[str], codes: Any, missing: MissingPolicy) -> None:
    """Under the "error" policy, stop with the ids (in `ids`, status `codes`) that have no embedding."""
    if missing == "error":
        absent = [paper_id for paper_id, code in zip(ids, codes) if code == MISSING]
        if absent:
            raise MissingEmbeddingsError(task, role, absent, len(absent))


TASKS: dict[str, type[Task]] = {}


def register_task(cls: type[Task]) -> type[Task]:
    """Class decorator: make a task available by its `name`."""
    if cls.embedding_group not in EMBEDDING_GROUPS:
        raise ValueError(f"{cls.__name__}.embedding_group must be one of {EMBEDDING_GROUPS}")
    TASKS[cls.name] = cls
    return cls


def task_names() -> list[str]:
    """Names of the registered tasks: those in Table 1 in its column order, then the others as registered.

    (Registration order alone depends on which task module happened to be imported first.)
    """
    import_submodules("scidocs_eval.tasks")
    from scidocs_eval.leaderboard.table1 import COLUMNS

    column_position = {column: position for position, column in enumerate(COLUMNS)}

    def table1_position(name: str) -> int:
        return min((column_position.get(c, len(COLUMNS)) for c in TASKS[name].table1_columns.values()),
                   default=len(COLUMNS))

    return sorted(TASKS, key=table1_position)


def get_task(name: str, **params: Any) -> Task:
    """An instance of the task registered as `name`, built with `params`."""
    if name not in task_names():
        raise ScidocsEvalError(f"unknown task {name!r}; known tasks: {', '.join(TASKS)}")
    return TASKS[name](**params)
