"""Which papers a run needs, read from the task specs: what a model fits on and what it embeds.

A fitted adapter learns from every paper of the metadata files the chosen tasks read (`fit_papers`), as the
paper's baselines did; a model embeds only the papers the chosen tasks score for the split (`papers_to_embed`):
classification its train split and the scored split, ranking the scored split's queries and candidates,
recommendation the queries and shown papers of the impressions it trains and scores on. Each task says so with
`Task.paper_ids`; a task that does not gets every paper of its metadata file. A task whose queries and documents
are texts of its own (retrieval, `Task.role_texts`) has them embedded apart, one file per group (`role_papers`).

`tasks` is None for the default benchmark's tasks (`selected_tasks`).
"""

from __future__ import annotations

from collections.abc import Sequence

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.task import TASKS, get_task, selected_tasks
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


def fit_papers(suite: Suite, tasks: Sequence[str] | None = None, benchmark: str | None = None) -> list[Paper]:
    """Every paper of the metadata files the tasks read: the corpus a fitted adapter learns from."""
    return suite.papers(metadata_files(suite, tasks, benchmark))


def papers_by_group(suite: Suite, tasks: Sequence[str] | None = None, split: str = "test",
                    benchmark: str | None = None) -> dict[str, list[Paper]]:
    """{embeddings group: the papers its runnable tasks read for `split`}, each in metadata-file order (tasks with
    texts of their own: see `role_papers`)."""
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
    return {group: [paper for paper in suite.papers((files[group],)) if ids is None or paper.paper_id in ids]
            for group, ids in wanted.items()}


def papers_to_embed(suite: Suite, tasks: Sequence[str] | None = None, split: str = "test",
                    benchmark: str | None = None) -> list[Paper]:
    """The papers the tasks read for `split`, every group together, in the order of `fit_papers`."""
    wanted = {paper.paper_id for papers in papers_by_group(suite, tasks, split, benchmark).values()
              for paper in papers}
    return [paper for paper in fit_papers(suite, tasks, benchmark) if paper.paper_id in wanted]


def role_papers(suite: Suite, tasks: Sequence[str] | None = None, split: str = "test",
                benchmark: str | None = None) -> dict[str, tuple[list[Paper], str]]:
    """group -> (papers, MTEB prompt type) of the tasks whose queries and documents are embedded apart
    (`Task.role_texts`; only those whose files the suite has).

    Each text rides in `Paper.title` with an empty abstract, so `paper_text` gives back MTEB's exact text (a
    document's title and text joined by a space) whatever separator a model uses. An id a second task gives
    another text is an error naming both.
    """
    roles: dict[str, tuple[dict[str, Paper], str]] = {}
    origin: dict[tuple[str, str], str] = {}
    for name in _runnable(suite, tasks, split, benchmark):
        for group, (ids, texts, prompt_type) in get_task(name).role_texts(suite, split).items():
            papers, _ = roles.setdefault(group, ({}, prompt_type))
            for item_id, text in zip(ids, texts):
                known = papers.get(item_id)
                if known is not None and known.title != text:
                    raise ScidocsEvalError(f"{group} id {item_id!r} has one text in task {origin[group, item_id]!r} "
                                           f"and another in task {name!r}; score those tasks in separate runs")
                papers[item_id] = Paper(item_id, text, "")
                origin.setdefault((group, item_id), name)
    return {group: (list(papers.values()), prompt_type) for group, (papers, prompt_type) in roles.items()}
