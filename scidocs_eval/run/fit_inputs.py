"""What an adapter's `fit` is given besides its corpus, worked out from the suite by the pipeline, never by the
adapter: an adapter never holds the suite, so no test judgement can reach what it learns.

- `citations`, for an adapter whose `fit` takes them (`Adapter.citation_files` not None: SGC): the `references`
  and `cited_by` of the suite's recomm metadata plus the files its parameters name, after the leakage guard
  (`guard_edges`, as in the paper): every edge between a judged query and one of its candidates (of every task
  whose val or test files the suite holds, from the task's declared data shapes: the ranking tasks' qrels, the
  recomm impressions of every split, ...) and every incoming citation of a val/test query are removed before the
  adapter sees them.
- `val`, for `TunedAdapter` (`--tune`): a `ValScorer`, which reads the val split alone.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Sequence

from scidocs_eval.evaluation.task import TASKS, Task, TaskInputs, get_task, task_names
from scidocs_eval.formats.corpus import read_citations
from scidocs_eval.formats.safe_output import Read
from scidocs_eval.formats.suite import METADATA_FILES, Paper, Suite
from scidocs_eval.models.adapter import Adapter, Edge
from scidocs_eval.models.tuning import TunedAdapter, ValScorer
from scidocs_eval.run.embedding_plan import embed_papers

log = logging.getLogger("scidocs_eval")

EVALUATED_SPLITS = ("val", "test")


def fit_adapter(adapter: Adapter, corpus: Sequence[Paper], suite: Suite) -> Adapter:
    """`adapter.fit(corpus)`, with the `citations` it may use (guarded) and, tuned, the `val` split's scorer."""
    inputs: dict[str, object] = {}
    if adapter.citation_files() is not None:
        inputs["citations"] = fit_citations(adapter, suite, corpus)
    if isinstance(adapter, TunedAdapter) and adapter.scorer is None:
        inputs["val"] = ValScorer(suite, encode=embed_papers)
    return adapter.fit(corpus, **inputs)  # type: ignore[call-arg]


def fit_citations(adapter: Adapter, suite: Suite, corpus: Sequence[Paper]) -> list[Edge]:
    """The citation edges `adapter` may propagate over: the suite's metadata citations and those of the files
    its parameters name (`Adapter.citation_files`), after `guard_edges`. A warning names the tasks whose papers
    no surviving edge touches (there the adapter embeds as without a graph)."""
    known = {paper.paper_id for paper in corpus}
    edges = [(citing, cited) for file in adapter.citation_files() or ()
             for _, citing, cited in read_citations(file, known)]
    edges += metadata_citations(suite)
    kept = guard_edges(edges, suite)
    _warn_where_unlinked(adapter.name, kept, known, suite, len(edges))
    return kept


def metadata_citations(suite: Suite) -> list[Edge]:
    """Edges from the recomm metadata's `references` and `cited_by` lists (none if the file is absent)."""
    if not suite.has(METADATA_FILES["recomm"]):
        return []
    edges = []
    for paper_id, record in suite.metadata("recomm").items():
        edges += [(paper_id, str(cited)) for cited in record.get("references") or ()]
        edges += [(str(citing), paper_id) for citing in record.get("cited_by") or ()]
    return edges


def guarded_splits(suite: Suite) -> list[tuple[Task, str]]:
    """(task, split) of every registered task's val and test split that the suite holds: what the leakage guard
    reads (`guard_edges`), and what a command declares it reads (`fit_reads`)."""
    tasks = [get_task(name) for name in task_names()]
    return [(task, split) for task in tasks for split in EVALUATED_SPLITS
            if all(suite.has(file) for file in task.input_files(suite, split))]


def guard_edges(edges: Iterable[Edge], suite: Suite) -> list[Edge]:
    """`edges` without query-candidate edges (either direction) and without citations of val/test queries: the
    held-out queries and pairs of every registered task's data shapes for the val and test splits the suite holds
    (`DataShape.held_out`)."""
    pairs: set[frozenset[str]] = set()
    queries: set[str] = set()
    for task, split in guarded_splits(suite):
        for shape in task.data_shapes(task.load(suite, split)):
            judged, shown = shape.held_out()
            queries |= judged
            pairs |= shown
    return [(citing, cited) for citing, cited in edges
            if cited not in queries and frozenset((citing, cited)) not in pairs]


def fit_reads(adapter: Adapter, suite: Suite) -> tuple[list[Read], list[Read]]:
    """(files, folders) of the suite that fitting `adapter` reads beyond its corpus and its own parameters' paths:
    for an adapter that takes citations, the recomm metadata (its edges) and every file the leakage guard reads
    (`guarded_splits`); nothing for the others. A command hands them to the output layer with its other inputs."""
    if adapter.citation_files() is None:
        return [], []
    by = f"adapter {adapter.name}'s leakage guard"
    read = functools.reduce(TaskInputs.union, (task.inputs(suite, split) for task, split in guarded_splits(suite)),
                            TaskInputs())
    files, folders = read.declared()
    metadata = [Read(suite.path(METADATA_FILES["recomm"]), f"adapter {adapter.name}: the citations of its fit")]
    return ([*metadata, *(Read(file.path, f"{by} ({file.by})") for file in files)],
            [Read(folder.path, f"{by} ({folder.by})") for folder in folders])


def _warn_where_unlinked(name: str, edges: Sequence[Edge], known: set[str], suite: Suite, read: int) -> None:
    """A warning naming the tasks whose papers no surviving edge touches: there SGC (the adapter that takes
    citations) scores what SIF scores."""
    linked = {paper for citing, cited in edges if citing != cited and citing in known and cited in known
              for paper in (citing, cited)}
    by_file: dict[str, list[str]] = {}
    for task in task_names():
        by_file.setdefault(TASKS[task].spec.metadata_file, []).append(task)
    unlinked = [task for file, tasks in by_file.items() if suite.has(file)
                and linked.isdisjoint(suite.metadata(file)) for task in tasks]
    if unlinked:
        log.warning("%s: no citation edge survives the leakage guard among the papers of %s (%d edges read, %d "
                    "papers linked): each keeps its SIF vector, so %s scores what sif scores there. Give a citation "
                    "graph with --citations FILE (TSV citing<TAB>cited).", name, ", ".join(unlinked), read,
                    len(linked), name)
