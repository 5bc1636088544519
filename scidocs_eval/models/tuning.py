"""`--tune`: pick an adapter's settings on the suite's validation split.

Criterion: the mean main score (MAP) over the registered ranking tasks (co-view, co-read, cite, co-cite and any
other task that declares `paper_pairs`) whose `val.qrel` the suite has, computed by the real tasks through the
scoring core `scidocs_eval.evaluation.runner.score_tasks(..., split="val")`: no bootstrap intervals, no
fingerprints, no files, which `evaluate` adds on top and a grid would throw away. Classification is left out of
the criterion: its linear-SVM grid costs far more than one embedding of the val papers, and the ranking tasks are
where these baselines differ most. Only the val queries and candidates are embedded per candidate setting; test
data is never read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.model_selection import ParameterGrid

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.runner import score_tasks
from scidocs_eval.evaluation.task import TASKS, embedding_groups, task_names
from scidocs_eval.formats.embeddings import EmbeddingStore
from scidocs_eval.formats.suite import Paper, Suite
from scidocs_eval.progress import progress_bar

log = logging.getLogger("scidocs_eval")


def parameter_grid(**axes: Sequence[Any]) -> list[dict[str, Any]]:
    """Every combination of the given axes, e.g. parameter_grid(k=[1, 2], a=[1e-3]) (scikit-learn order)."""
    return list(ParameterGrid(axes))


@dataclass
class TuningResult:
    """The winning setting and every setting's score (mean val MAP, ×100)."""

    best: dict[str, Any]
    best_score: float
    scores: list[tuple[dict[str, Any], float]] = field(default_factory=list)


class ValScorer:
    """Scores candidate embeddings of the val papers by the mean val MAP over the ranking tasks present.

    Args:
        suite: the suite whose `{task}/val.qrel` files define the val papers and the score.
    """

    def __init__(self, suite: Suite | None):
        if suite is None:
            raise ScidocsEvalError("--tune needs a suite with a val split to tune on")
        self.suite = suite
        ranking = task_names(paper_pairs=True)
        self.tasks = [task for task in ranking if suite.has(f"{task}/val.qrel")]
        if not self.tasks:
            raise ScidocsEvalError(f"--tune needs the val split of a ranking task ({', '.join(ranking)}/"
                                   f"val.qrel) and {suite.root} has none")
        wanted: dict[str, None] = {}
        for task in self.tasks:
            for query, candidates in suite.qrels(task, "val").candidates.items():
                wanted.update(dict.fromkeys([query, *candidates]))
        by_id = {paper.paper_id: paper for paper in suite.papers()}
        self.papers: list[Paper] = [by_id[i] for i in wanted if i in by_id and by_id[i].has_text]
        """The val papers with text, in a fixed order; candidate embeddings come as rows in this order."""

    def score(self, matrix: np.ndarray) -> float:
        """Mean val MAP (×100) of `matrix`, shape (len(self.papers), dim), row i embedding self.papers[i]."""
        store = EmbeddingStore.from_mapping({p.paper_id: row for p, row in zip(self.papers, matrix)})
        results, _, _ = score_tasks(dict.fromkeys(embedding_groups(), store), self.suite, self.tasks, "val")
        return float(np.mean([results[task].metrics[TASKS[task].spec.main_score] for task in results]))

    def search(self, grid: Sequence[Mapping[str, Any]], embed: Callable[[dict[str, Any]], np.ndarray],
               desc: str = "tuning on val") -> TuningResult:
        """Score `embed(setting)` (rows in `self.papers` order) for each setting; the best one wins.

        Ties keep the earlier setting, so the grid's order is the tie-break.
        """
        scores = []
        with progress_bar(total=len(grid), unit="setting", desc=desc) as bar:
            for setting in grid:
                setting = dict(setting)
                value = self.score(embed(setting))
                log.info("%s: %s -> mean val MAP %.2f", desc, setting, value)
                scores.append((setting, value))
                bar.update()
        best, best_score = max(scores, key=lambda pair: pair[1])
        log.info("%s: best %s (mean val MAP %.2f)", desc, best, best_score)
        return TuningResult(best, best_score, scores)


def within_budget(grid: Sequence[Mapping[str, Any]], cost: Callable[[Mapping[str, Any]], int], budget: int,
                  desc: str) -> list[dict[str, Any]]:
    """The settings of `grid`, cheapest first, whose summed `cost` stays within `budget` (same unit as `cost`,
    e.g. tokens trained). Each setting left out is logged as a warning naming `desc`; none fitting is an error."""
    chosen, spent = [], 0
    for setting in sorted(grid, key=cost):
        if spent + cost(setting) > budget:
            log.warning("%s: skipping %s (it would bring the search to %d, over its budget of %d)", desc,
                        dict(setting), spent + cost(setting), budget)
            continue
        spent += cost(setting)
        chosen.append(dict(setting))
    if not chosen:
        raise ScidocsEvalError(f"{desc}: no setting fits the tuning budget of {budget} (the cheapest costs "
                               f"{min(map(cost, grid))}); raise the budget")
    return chosen
