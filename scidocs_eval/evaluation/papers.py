"""Which papers a run needs, read from the task specs: what a model fits on and what it embeds.

A fitted adapter learns from every paper of the metadata files the chosen tasks read (`fit_papers`), as the
paper's baselines did; a model embeds only the papers the chosen tasks score for the split (`papers_to_embed`):
classification its train split and the scored split, ranking the scored split's queries and candidates,
recommendation the queries and shown papers of the impressions it trains and scores on. Each task says so with
`Task.paper_ids`; a task that does not gets every paper of its metadata file.
"""

from __future__ import annotations

from collections.abc import Sequence

from scidocs_eval.evaluation.task import TASKS, get_task, task_names
from scidocs_eval.formats.suite import METADATA_FILES, Paper, Suite


def _runnable(suite: Suite, tasks: Sequence[str] | None, split: str) -> list[str]:
    """The chosen tasks (default: every registered one) whose files for `split` the suite has."""
    names = TASKS.check(tasks) if tasks else task_names()
    return [name for name in names if all(suite.has(f) for f in get_task(name).required_files(split))]


def metadata_files(suite: Suite, tasks: Sequence[str] | None = None) -> tuple[str, ...]:
    """The metadata files (those the suite has) whose papers the tasks read (default: every registered task),
    the official ones first in their order."""
    wanted = {TASKS[name].spec.metadata_file for name in (TASKS.check(tasks) if tasks else task_names())}
    official = [name for name in METADATA_FILES.values() if name in wanted]
    return tuple(name for name in official + sorted(wanted - set(official)) if suite.has(name))


def fit_papers(suite: Suite, tasks: Sequence[str] | None = None) -> list[Paper]:
    """Every paper of the metadata files the tasks read: the corpus a fitted adapter learns from."""
    return suite.papers(metadata_files(suite, tasks))


def papers_by_group(suite: Suite, tasks: Sequence[str] | None = None, split: str = "test") -> dict[str, list[Paper]]:
    """{embeddings group: the papers its runnable tasks read for `split`}, each in metadata-file order."""
    wanted: dict[str, set[str] | None] = {}
    files: dict[str, str] = {}
    for name in _runnable(suite, tasks, split):
        spec = TASKS[name].spec
        if not suite.has(spec.metadata_file):
            continue
        files[spec.embedding_group] = spec.metadata_file
        ids = get_task(name).paper_ids(suite, split)
        known = wanted.setdefault(spec.embedding_group, set())
        wanted[spec.embedding_group] = None if ids is None or known is None else known | set(ids)
    return {group: [paper for paper in suite.papers((files[group],)) if ids is None or paper.paper_id in ids]
            for group, ids in wanted.items()}


def papers_to_embed(suite: Suite, tasks: Sequence[str] | None = None, split: str = "test") -> list[Paper]:
    """The papers the tasks read for `split`, every group together, in the order of `fit_papers`."""
    wanted = {paper.paper_id for papers in papers_by_group(suite, tasks, split).values() for paper in papers}
    return [paper for paper in fit_papers(suite, tasks) if paper.paper_id in wanted]
