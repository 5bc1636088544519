"""Which papers a run needs, read from the task declarations: what a model fits on and what it embeds.

A fitted adapter learns from every paper of the metadata files the chosen tasks read (`fit_papers`), as the
paper's baselines did; a model embeds only the papers the chosen tasks score for the split (`papers_to_embed`):
classification its train split and the scored split, ranking the scored split's queries and candidates,
recommendation the queries and shown papers of the impressions it trains and scores on. Each task says so with
`Task.paper_ids`; a task that does not gets every paper of its metadata file. A task whose queries or documents
are texts of its own (retrieval, the queries of a search: `Task.role_papers`) gives them as a group of their own.
Each group is embedded in its role (`group_role`): what for (its input format) and, for a retrieval side, MTEB's
prompt type and task. `embedding_needs` is the one reading of all that, what `run/embedding_plan.py` plans
from.

`tasks` is None for the default benchmark's tasks (`selected_tasks`); where a function takes built tasks
({name: Task}, `build_tasks`), each is asked with its parameters (a `folder` parameter: the folder it reads).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.task import (
    INPUT_FORMATS,
    TASKS,
    Task,
    TaskData,
    build_tasks,
    group_input_formats,
    selected_tasks,
)
from scidocs_eval.formats.suite import METADATA_FILES, Paper, Suite


def _built(tasks: Sequence[str] | Mapping[str, Task] | None, benchmark: str | None = None) -> dict[str, Task]:
    """{name: Task}: `tasks` as built, or the chosen tasks built with their default parameters."""
    return dict(tasks) if isinstance(tasks, Mapping) else build_tasks(selected_tasks(tasks, benchmark))


def _runnable(suite: Suite, tasks: Mapping[str, Task], split: str) -> dict[str, Task]:
    """The tasks whose files for `split` the suite has."""
    return {name: task for name, task in tasks.items()
            if all(suite.has(f) for f in task.input_files(suite, split))}


def metadata_files(suite: Suite, tasks: Sequence[str] | None = None, benchmark: str | None = None) -> tuple[str, ...]:
    """The metadata files (those the suite has) whose papers the tasks read, the official ones first in their
    order (a task reading texts of its own has none)."""
    wanted = {TASKS[name].spec.metadata_file for name in selected_tasks(tasks, benchmark)} - {""}
    official = [name for name in METADATA_FILES.values() if name in wanted]
    return tuple(name for name in official + sorted(wanted - set(official)) if suite.has(name))


def text_fields(tasks: Sequence[str] | None = None, benchmark: str | None = None) -> dict[str, tuple[str, ...]]:
    """{metadata file: the fields its tasks embed after title and abstract} (`TaskSpec.text_fields`)."""
    return {TASKS[name].spec.metadata_file: TASKS[name].spec.text_fields
            for name in selected_tasks(tasks, benchmark) if TASKS[name].spec.text_fields}


def fit_papers(suite: Suite, tasks: Sequence[str] | None = None, benchmark: str | None = None) -> list[Paper]:
    """Every paper of the metadata files the tasks read: the corpus a fitted adapter learns from."""
    return suite.papers(metadata_files(suite, tasks, benchmark), text_fields(tasks, benchmark))


@dataclass(frozen=True)
class GroupNeed:
    """What one embeddings group of a run needs embedded, read from its tasks' declarations.

    Attributes:
        role: what the group is embedded for (`EmbeddingRole`).
        metadata_file: the metadata file whose papers the group covers; "" for texts of the tasks' own.
        ids: the ids its tasks read for the split (None: every paper of `metadata_file`).
        papers: the texts of the tasks' own (`Task.role_papers`), for a group with no metadata file.
    """

    role: EmbeddingRole
    metadata_file: str = ""
    ids: frozenset[str] | None = None
    papers: tuple[Paper, ...] = ()


def embedding_needs(suite: Suite, tasks: Sequence[str] | Mapping[str, Task], split: str = "test"
                    ) -> dict[str, GroupNeed]:
    """{embeddings group: what its runnable tasks (`tasks`, names or built tasks, those whose files for `split` the
    suite has) need embedded}: the one reading of the task declarations (`Task.paper_ids`, `Task.role_papers`,
    `TaskSpec.input_format`, the query group's prompt type) that every run plans its embedding from. An id a second
    task gives another text of its own is an error naming both."""
    runnable = _runnable(suite, _built(tasks), split)
    loaded = {name: task.load(suite, split) for name, task in runnable.items()}  # each task's data, once
    wanted: dict[str, set[str] | None] = {}
    files: dict[str, str] = {}
    for name in runnable:
        spec = TASKS[name].spec
        if not spec.metadata_file or not suite.has(spec.metadata_file):
            continue
        files[spec.embedding_group] = spec.metadata_file
        ids = runnable[name].paper_ids(loaded[name])
        known = wanted.setdefault(spec.embedding_group, set())
        wanted[spec.embedding_group] = None if ids is None or known is None else known | set(ids)
    names = list(runnable)
    needs = {group: GroupNeed(group_role(group, names), files[group], None if ids is None else frozenset(ids))
             for group, ids in wanted.items()}
    for group, (papers, prompt_type) in _own_texts(runnable, loaded).items():
        needs[group] = GroupNeed(group_role(group, names, prompt_type), papers=tuple(papers))
    return needs


def papers_to_embed(suite: Suite, tasks: Sequence[str] | None = None, split: str = "test",
                    benchmark: str | None = None) -> list[Paper]:
    """The papers of metadata files the tasks read for `split`, every group together, in the order of
    `fit_papers` (what a model that embeds every group alike embeds of them)."""
    names = selected_tasks(tasks, benchmark)
    wanted: set[str] = set()
    for need in embedding_needs(suite, names, split).values():
        if need.metadata_file:
            wanted |= set(suite.metadata(need.metadata_file)) if need.ids is None else need.ids
    return [paper for paper in suite.papers(metadata_files(suite, names), text_fields(names))
            if paper.paper_id in wanted]


def _own_texts(runnable: Mapping[str, Task], loaded: Mapping[str, TaskData]) -> dict[str, tuple[list[Paper], str]]:
    """group -> (papers, MTEB prompt type) of the texts tasks give of their own (`Task.role_papers`)."""
    roles: dict[str, tuple[dict[str, Paper], str]] = {}
    origin: dict[tuple[str, str], str] = {}
    for name, task in runnable.items():
        for group, (given, prompt_type) in task.role_papers(loaded[name]).items():
            papers, _ = roles.setdefault(group, ({}, prompt_type))
            for paper in given:
                known = papers.get(paper.paper_id)
                if known is not None and known != paper:
                    raise ScidocsEvalError(f"{group} id {paper.paper_id!r} has one text in task "
                                           f"{origin[group, paper.paper_id]!r} and another in task {name!r}; score "
                                           "those tasks in separate runs")
                papers[paper.paper_id] = paper
                origin.setdefault((group, paper.paper_id), name)
    return {group: (list(papers.values()), prompt_type) for group, (papers, prompt_type) in roles.items()}


@dataclass(frozen=True)
class EmbeddingRole:
    """What a group's papers are embedded for, told to a model that embeds differently per use
    (`Adapter.embedding_role`).

    Attributes:
        input_format: one of `INPUT_FORMATS` (classification, regression, proximity, adhoc_query).
        prompt_type: "query" or "document" for a side of a retrieval task (MTEB's prompt type), else None.
        mteb_task: the MTEB task whose queries or documents the group holds, if any.
    """

    input_format: str
    prompt_type: str | None = None
    mteb_task: str | None = None

    def __post_init__(self) -> None:
        if self.input_format not in INPUT_FORMATS:
            raise ScidocsEvalError(f"input format must be one of {', '.join(INPUT_FORMATS)}, not "
                                   f"{self.input_format!r}")


def group_role(group: str, tasks: Sequence[str], prompt_type: str | None = None) -> EmbeddingRole:
    """The role of embeddings group `group` in a run of `tasks` (`prompt_type` from `papers_by_role`)."""
    mteb_task = next((TASKS[name].spec.mteb_task for name in tasks
                      if group in TASKS[name].groups() and TASKS[name].spec.mteb_task), None)
    return EmbeddingRole(group_input_formats()[group], prompt_type, mteb_task)
