"""`--tune`: an adapter wrapped in `TunedAdapter`, fitted at every setting of its grid and scored on val.

The shape of scikit-learn's `GridSearchCV`: `TunedAdapter(adapter)` holds an adapter and its grid (the adapter's
`tuning_grid`, or one given); its `fit(corpus)` fits a copy of the adapter at each setting, scores it with a
`ValScorer`, and keeps the best copy, which then embeds. `best_params_`, `best_score_` and `scores_` (every
setting and its score, in grid order) say what was tried; the results file records them (`ModelInfo`). Ties keep
the earlier setting, so the grid's order is the tie-break. Adapters carry no tuning code: they declare a grid.

Criterion: the mean main score (MAP) over the registered ranking tasks (co-view, co-read, cite, co-cite and any
other task that declares `paper_pairs`) whose `val.qrel` the suite has, computed by the real tasks through the
scoring core `scidocs_eval.evaluation.runner.score_tasks(..., split="val")`: no bootstrap intervals, no
fingerprints, no files, which `evaluate` adds on top and a grid would throw away. Classification is left out of
the criterion: its linear-SVM grid costs far more than one embedding of the val papers, and the ranking tasks are
where these baselines differ most. Only the val queries and candidates are embedded per setting (a transductive
adapter embeds every paper of the suite with them, as it would in a run); test data is never read.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.task import TASKS, embedding_groups, get_task, task_names
from scidocs_eval.formats.embeddings import EmbeddingStore
from scidocs_eval.formats.suite import Paper, Suite
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.models.adapter import ADAPTERS, Adapter, Edge, get_adapter
from scidocs_eval.models.model_cache import shared_fits
from scidocs_eval.progress import progress_bar
from scidocs_eval.registry import check_params

if TYPE_CHECKING:
    from scidocs_eval.evaluation.papers import EmbeddingRole

np = lazy_module("numpy", __name__)

log = logging.getLogger("scidocs_eval")

TUNE_PARAM = "tune"
"""The `baseline` parameter (`--tune`, `-p tune=true`) that wraps the adapter in `TunedAdapter`."""


def parameter_grid(**axes: Sequence[Any]) -> list[dict[str, Any]]:
    """Every combination of the given axes, e.g. parameter_grid(k=[1, 2], a=[1e-3]) (scikit-learn order)."""
    from sklearn.model_selection import ParameterGrid

    return list(ParameterGrid(axes))


class UnusableSetting(ScidocsEvalError):
    """A setting of a grid that cannot be fitted (fastText diverged at its learning rate).

    Args:
        message: why.
        params: the values that make it unusable: `TunedAdapter` skips every later setting that holds them too.
    """

    def __init__(self, message: str, params: Mapping[str, Any] | None = None):
        super().__init__(message)
        self.params = dict(params or {})


class ValScorer:
    """Scores an adapter's embeddings of the val papers by the mean val MAP over the ranking tasks present.

    Args:
        suite: the suite whose `{task}/val.qrel` files define the val papers and the score.
        encode: (adapter, val papers, the suite's papers) -> the val papers' vectors; the pipeline gives the
            embedding plan's (`run.embedding_plan.embed_papers`, the one road to vectors); None: the adapter's
            `transform` (a transductive adapter's over every paper of the suite).
    """

    def __init__(self, suite: Suite | None,
                 encode: Callable[[Adapter, Sequence[Paper], Sequence[Paper]], np.ndarray] | None = None):
        self.encode = encode
        if suite is None:
            raise ScidocsEvalError("--tune needs a suite with a val split to tune on")
        self.suite = suite
        ranking = task_names(paper_pairs=True)
        val_files = {task: get_task(task).input_files(suite, "val") for task in ranking}
        self.tasks = [task for task in ranking if all(suite.has(file) for file in val_files[task])]
        if not self.tasks:
            raise ScidocsEvalError(f"--tune needs the val split of a ranking task "
                                   f"({', '.join(f for files in val_files.values() for f in files)}) and "
                                   f"{suite.root} has none")
        wanted: dict[str, None] = {}
        for task in self.tasks:
            for query, candidates in suite.qrels(task, "val").candidates.items():
                wanted.update(dict.fromkeys([query, *candidates]))
        self.nodes: list[Paper] = [paper for paper in suite.papers() if paper.has_text]
        """Every paper of the suite with text: what a transductive adapter embeds the val papers with."""
        by_id = {paper.paper_id: paper for paper in self.nodes}
        self.papers: list[Paper] = [by_id[i] for i in wanted if i in by_id]
        """The val papers with text, in a fixed order; candidate embeddings come as rows in this order."""

    def score(self, matrix: np.ndarray) -> float:
        """Mean val MAP (×100) of `matrix`, shape (len(self.papers), dim), row i embedding self.papers[i]."""
        from scidocs_eval.evaluation.runner import score_tasks

        store = EmbeddingStore.from_mapping({p.paper_id: row for p, row in zip(self.papers, matrix)})
        results, _, _ = score_tasks(dict.fromkeys(embedding_groups(), store), self.suite, self.tasks, "val")
        return float(np.mean([results[task].metrics[TASKS[task].spec.main_score] for task in results]))

    def score_adapter(self, adapter: Adapter) -> float:
        """Mean val MAP (×100) of a fitted adapter's embeddings of the val papers."""
        if self.encode is not None:
            return self.score(self.encode(adapter, self.papers, self.nodes))
        if not adapter.transductive:
            return self.score(adapter.transform(self.papers))
        rows = {paper.paper_id: row for row, paper in enumerate(self.nodes)}
        return self.score(adapter.transform(self.nodes)[[rows[p.paper_id] for p in self.papers]])


def has_grid(adapter: type[Adapter] | Adapter) -> bool:
    """Whether an adapter (class or instance) declares a grid for `--tune` (`Adapter.tuning_grid`)."""
    cls = adapter if isinstance(adapter, type) else type(adapter)
    return cls.tuning_grid is not Adapter.tuning_grid


class TunedAdapter(Adapter):
    """`adapter` tuned on val: fitted at each setting of `grid` (default: `adapter.tuning_grid(corpus)`), the
    best by `ValScorer` embeds. Everything else (name, roles, ids, transductive, the Table 1 row) is the adapter's.

    Args:
        adapter: the adapter whose parameters are searched (its own stay as given).
        grid: settings to try, each {parameter: value}; None: the adapter's `tuning_grid`.
        scorer: scores the settings; None: `fit` takes it (`val`), which the pipeline gives (`fit_adapter`).

    After `fit`: `best_params_` (the winning setting), `best_score_` (its mean val MAP ×100), `scores_` (every
    scored setting, {"params", "score"}, in grid order), `best_adapter_` (the fitted copy that embeds).
    """

    requires_fit = True

    def __init__(self, adapter: Adapter, grid: Sequence[Mapping[str, Any]] | None = None,
                 scorer: ValScorer | None = None):
        self.adapter, self.grid, self.scorer = adapter, grid, scorer

    @property  # type: ignore[override]
    def name(self) -> str:
        return self.adapter.name

    @property  # type: ignore[override]
    def paper_row(self) -> str | None:
        return self.adapter.paper_row

    @property  # type: ignore[override]
    def transductive(self) -> bool:
        return self.adapter.transductive

    @property  # type: ignore[override]
    def reads_ids(self) -> bool:
        return self.adapter.reads_ids

    @property
    def by_format(self) -> bool:
        return self.adapter.by_format

    def get_params(self) -> dict[str, Any]:
        """The adapter's parameters, with `tune`: True (what the results and the embeddings' settings record)."""
        return {**self.adapter.get_params(), TUNE_PARAM: True}

    def validate(self) -> None:
        self.adapter.validate()

    def citation_files(self) -> list[str] | None:
        return self.adapter.citation_files()

    def fit(self, papers: Sequence[Paper], citations: Sequence[Edge] | None = None,
            val: ValScorer | None = None) -> TunedAdapter:
        """Fit a copy of the adapter at each setting on `papers` (with `citations`, for an adapter that takes
        them), score each with `val` (or the `scorer` given), keep the best."""
        scorer = self.scorer or val
        if scorer is None:
            raise ScidocsEvalError(f"--tune: {self.name} needs a val split to score its settings on: give "
                                   "TunedAdapter a scorer (ValScorer(suite)) or run it with scidocs-eval baseline")
        self.validate()
        grid = [dict(s) for s in (self.grid if self.grid is not None else self.adapter.tuning_grid(papers) or [])]
        if not grid:
            raise ScidocsEvalError(f"--tune: adapter {self.name!r} has no settings to tune")
        for setting in grid:  # every setting's parameters checked before any fit
            self.candidate(setting)
        inputs = {} if citations is None else {"citations": citations}
        desc = f"tuning {self.name}"
        self.scores_: list[dict[str, Any]] = []
        self.best_adapter_: Adapter | None = None
        unusable: list[UnusableSetting] = []
        fitted: tuple[dict[str, Any], Adapter] | None = None  # the last fit, reused where only transform changes
        warnings_of_fit: dict[int, list[logging.LogRecord]] = {}  # id of a fitted candidate -> its fit's warnings
        with progress_bar(total=len(grid), unit="setting", desc=desc) as bar, shared_fits():
            for setting in grid:
                if fitted is not None and self._same_fit(fitted[0], setting):
                    candidate = copy.copy(fitted[1])  # its fitted state shared, its transform's parameters set
                    vars(candidate).update({k: v for k, v in setting.items() if k in candidate.transform_params})
                    warnings_of_fit[id(candidate)] = warnings_of_fit[id(fitted[1])]
                    self._score(candidate, setting, scorer, desc)
                elif not any(_holds(setting, error.params) for error in unusable):
                    candidate = self.candidate(setting)
                    try:
                        with _held_warnings() as held:
                            candidate.fit(papers, **inputs)
                    except UnusableSetting as error:
                        log.warning("%s: %s skipped (%s)", desc, setting, error)
                        unusable.append(error)
                    else:
                        fitted = setting, candidate
                        warnings_of_fit[id(candidate)] = held
                        self._score(candidate, setting, scorer, desc)
                bar.update()
        if self.best_adapter_ is None:
            raise ScidocsEvalError(f"{desc}: no setting of the grid could be fitted ({unusable[-1]})")
        # a fit's warnings (under-trained vectors, ...) are about the vectors that embed only for the picked setting
        for record in warnings_of_fit[id(self.best_adapter_)]:
            logging.getLogger(record.name).handle(record)
        others = {record.getMessage() for held in warnings_of_fit.values() for record in held} - {
            record.getMessage() for record in warnings_of_fit[id(self.best_adapter_)]}
        for message in sorted(others):
            log.info("%s: a setting not picked: %s", desc, message)
        log.info("%s: best %s (mean val MAP %.2f)", desc, self.best_params_, self.best_score_)
        self.fitted_ = True
        return self

    def _same_fit(self, fitted: Mapping[str, Any], setting: Mapping[str, Any]) -> bool:
        """Whether `setting` differs from the `fitted` one only in parameters `transform` alone reads."""
        free = self.adapter.transform_params
        return {k: v for k, v in fitted.items() if k not in free} == {k: v for k, v in setting.items() if k not in free}

    def _score(self, candidate: Adapter, setting: dict[str, Any], scorer: ValScorer, desc: str) -> None:
        """Score a fitted candidate; it becomes the best if it beats every earlier one (only the best is kept)."""
        score = scorer.score_adapter(candidate)
        log.info("%s: %s -> mean val MAP %.2f", desc, setting, score)
        self.scores_.append({"params": setting, "score": score})
        if self.best_adapter_ is None or score > self.best_score_:
            self.best_adapter_, self.best_params_, self.best_score_ = candidate, setting, score

    def candidate(self, setting: Mapping[str, Any]) -> Adapter:
        """A new, unfitted adapter of the wrapped one's class with its parameters and `setting` (sklearn's
        `clone(...).set_params(...)`); a setting naming a parameter the adapter does not take is an error."""
        cls = type(self.adapter)
        return cls(**check_params(cls, {**self.adapter.get_params(), **setting}, f"--tune grid of {self.name!r}"))

    def transform(self, papers: Sequence[Paper]) -> np.ndarray:
        assert self.best_adapter_ is not None
        return self.best_adapter_.transform(papers)

    def transform_batches(self, papers: Sequence[Paper]) -> Iterator[tuple[Sequence[Paper], np.ndarray]]:
        assert self.best_adapter_ is not None
        yield from self.best_adapter_.transform_batches(papers)

    @contextmanager
    def embedding_role(self, role: EmbeddingRole) -> Iterator[None]:
        with (self.best_adapter_ or self.adapter).embedding_role(role):
            yield

    def role_view(self, role: EmbeddingRole) -> str:
        return self.adapter.role_view(role)

    def input_key(self, paper: Paper) -> bytes:
        return self.adapter.input_key(paper)

    def weights_identity(self) -> dict[str, str] | None:
        return self.adapter.weights_identity()

    def row_detail(self) -> str | None:
        return self.adapter.row_detail()

    def row_note(self) -> str | None:
        return self.adapter.row_note()


@contextmanager
def _held_warnings() -> Iterator[list[logging.LogRecord]]:
    """Within the block, the package's warnings are held in the list yielded, not printed (a `--tune` grid point's
    fit: `TunedAdapter.fit` prints those of the picked setting); its other records pass on as usual."""
    package = logging.getLogger("scidocs_eval")
    held: list[logging.LogRecord] = []

    def hold(record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            held.append(record)
        else:
            logging.getLogger().handle(record)

    holder = logging.Handler()
    holder.emit = hold  # type: ignore[method-assign]
    propagate = package.propagate
    package.addHandler(holder)
    package.propagate = False
    try:
        yield held
    finally:
        package.removeHandler(holder)
        package.propagate = propagate


def _holds(setting: Mapping[str, Any], values: Mapping[str, Any]) -> bool:
    """Whether `setting` holds every one of `values` (none given: no)."""
    return bool(values) and all(key in setting and setting[key] == value for key, value in values.items())


def baseline_adapter(name: str, params: Mapping[str, Any] | None = None) -> Adapter:
    """The adapter `baseline NAME` runs: `get_adapter(name, **params)`, wrapped in `TunedAdapter` when `params`
    hold `tune` true (`--tune`); an adapter without a grid is refused, naming those with one."""
    params = dict(params or {})
    tune = params.pop(TUNE_PARAM, False)
    adapter = get_adapter(name, **params)
    if not tune:
        return adapter
    if not has_grid(adapter):
        tunable = sorted(n for n in ADAPTERS.names() if has_grid(ADAPTERS[n]))
        raise ScidocsEvalError(f"--tune: baseline {name!r} has no settings to tune on val (adapters with a grid: "
                               f"{', '.join(tunable)})")
    return TunedAdapter(adapter)


def within_budget(grid: Sequence[Mapping[str, Any]], cost: Callable[[Mapping[str, Any]], int], budget: int,
                  desc: str) -> list[dict[str, Any]]:
    """The settings of `grid`, cheapest first, whose summed `cost` stays within `budget` (same unit as `cost`,
    e.g. tokens trained). The settings left out are named in one warning naming `desc`; none fitting is an
    error."""
    chosen, skipped, spent = [], [], 0
    for setting in sorted(grid, key=cost):
        if spent + cost(setting) > budget:
            skipped.append(dict(setting))
            continue
        spent += cost(setting)
        chosen.append(dict(setting))
    if not chosen:
        raise ScidocsEvalError(f"{desc}: no setting fits the tuning budget of {budget} (the cheapest costs "
                               f"{min(map(cost, grid))}); raise the budget")
    if skipped:
        log.warning("%s: skipping %d of the %d settings, over its budget of %d (the %d kept cost %d): %s", desc,
                    len(skipped), len(grid), budget, len(chosen), spent, ", ".join(map(str, skipped)))
    return chosen
