"""Which papers a run needs, read from the task specs: what a model fits on and what it embeds.

A fitted adapter learns from every paper of the metadata files the chosen tasks read (`fit_papers`), as the
paper's baselines did; a model embeds only the papers the chosen tasks score for the split (`papers_to_embed`):
classification its train split and the scored split, ranking the scored split's queries and candidates,
recommendation the queries and shown papers of the impressions it trains and scores on. Each task says so with
`Task.paper_ids`; a task that does not gets every paper of its metadata file. A task whose queries or documents
are texts of its own (retrieval, the queries of a search: `Task.role_papers`) has them embedded apart, one file
per group (`papers_by_role`). Each group is embedded in its role (`group_role`): what for (its input format) and,
for a retrieval side, MTEB's prompt type and task.

`tasks` is None for the default benchmark's tasks (`selected_tasks`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.task import (
    INPUT_FORMATS,
    TASKS,
    get_task,
    group_input_formats,
    metadata_file_of_group,
    selected_tasks,
)
from scidocs_eval.formats.suite import METADATA_FILES, Paper, Suite


def _runnable(suite: Suite, tasks: Sequence[str] | None, split: str, benchmark: str | None) -> list[str]:
    """The chosen tasks whose files for `split` the suite has."""
    return [name for name in selected_tasks(tasks, benchmark)
            if all(suite.has(f) for f in get_task(name).input_files(suite, split))]


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


def papers_by_group(suite: Suite, tasks: Sequence[str] | None = None, split: str = "test",
                    benchmark: str | None = None) -> dict[str, list[Paper]]:
    """{embeddings group: the papers its runnable tasks read for `split`}, each in metadata-file order (tasks with
    texts of their own: see `papers_by_role`)."""
    wanted: dict[str, set[str] | None] = {}
    files: dict[str, str] = {}
    for name in _runnable(suite, tasks, split, benchmark):
        spec = TASKS[name].spec
        if not spec.metadata_file or not suite.has(spec.metadata_file):
            continue
        files[spec.embedding_group] = spec.metadata_file
        ids = get_task(name).paper_ids(suite, split)
        known = wanted.setdefault(spec.embedding_group, set())
        wanted[spec.embedding_group] = None if ids is None or known is None else known | set(ids)
    fields = text_fields(tasks, benchmark)
    return {group: [paper for paper in suite.papers((files[group],), fields) if ids is None or paper.paper_id in ids]
            for group, ids in wanted.items()}


def papers_by_format(suite: Suite, by_group: Mapping[str, Sequence[Paper]], tasks: Sequence[str] | None = None,
                     benchmark: str | None = None) -> dict[str, list[Paper]]:
    """{input format: the papers of its groups in `by_group` (`papers_by_group`)}, each id once per format: what an
    adapter that embeds by format embeds (an id two metadata files give different texts: the first file's, with
    `Suite.papers`'s warning)."""
    formats = group_input_formats()
    wanted: dict[str, set[str]] = {}
    files: dict[str, dict[str, None]] = {}
    for group, papers in by_group.items():
        wanted.setdefault(formats[group], set()).update(paper.paper_id for paper in papers)
        files.setdefault(formats[group], {})[metadata_file_of_group(group)] = None
    fields = text_fields(tasks, benchmark)
    return {input_format: [paper for paper in suite.papers(tuple(files[input_format]), fields)
                           if paper.paper_id in ids] for input_format, ids in wanted.items()}


def papers_to_embed(suite: Suite, tasks: Sequence[str] | None = None, split: str = "test",
                    benchmark: str | None = None) -> list[Paper]:
    """The papers the tasks read for `split`, every group together, in the order of `fit_papers`."""
    wanted = {paper.paper_id for papers in papers_by_group(suite, tasks, split, benchmark).values()
              for paper in papers}
    return [paper for paper in fit_papers(suite, tasks, benchmark) if paper.paper_id in wanted]


def papers_by_role(suite: Suite, tasks: Sequence[str] | None = None, split: str = "test",
                   benchmark: str | None = None) -> dict[str, tuple[list[Paper], str]]:
    """group -> (papers, MTEB prompt type) of the tasks' papers embedded apart (`Task.role_papers`; only tasks
    whose files the suite has). An id a second task gives another text is an error naming both."""
    roles: dict[str, tuple[dict[str, Paper], str]] = {}
    origin: dict[tuple[str, str], str] = {}
    for name in _runnable(suite, tasks, split, benchmark):
        for group, (given, prompt_type) in get_task(name).role_papers(suite, split).items():
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
