"""SciRepEval (Singh et al., EMNLP 2023): the tasks of its `scirepeval_tasks.jsonl`, with its data and rules.

Each task reads the test config of `allenai/scirepeval_test` it names and embeddings of the papers of its metadata
config of `allenai/scirepeval` (one embeddings group a metadata config, so papers shared by several tasks, as in
SciRepEval's save/load of embeddings, are embedded once). Layout: `scidocs_eval.formats.scirepeval`; the models and
metrics: `scidocs_eval.evaluators.scirepeval`; what runs and where it differs: docs/scirepeval.md.

A paper or query without a vector is left out, as SciRepEval does (`missing="error"` stops instead); vectors are
rounded to float16 first, as SciRepEval's loader does (`as_float16=False` keeps them as given).
"""

from __future__ import annotations

import logging
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from scidocs_eval.data.scirepeval import SciRepEvalHub, TableRow
from scidocs_eval.errors import ScidocsEvalError, UndefinedMetricError
from scidocs_eval.evaluation.integrity import DataShape, JudgedSplit, LabelledSplit, SampledEvaluation
from scidocs_eval.evaluation.metrics import trec_measures
from scidocs_eval.evaluation.task import (
    BENCHMARKS,
    Benchmark,
    DataT,
    MissingPolicy,
    Task,
    TaskData,
    TaskResult,
    TaskSpec,
    check_missing,
    register_task,
)
from scidocs_eval.evaluators import scirepeval as models
from scidocs_eval.evaluators.exact_svm import GAP_TOLERANCE
from scidocs_eval.formats.embeddings import PRESENT, EmbeddingStore
from scidocs_eval.formats.scirepeval import (
    EXTRA_TEXT_FIELDS,
    Labelled,
    meta_file,
    read_labels,
    read_qrels,
    read_reviewers,
    test_file,
)
from scidocs_eval.formats.suite import Paper, Suite, paper_of_record
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.params import InstanceOf, Interval, Options, validate_params

np = lazy_module("numpy", __name__)

# SciRepEval's tasks (its scirepeval_tasks.jsonl), the benchmark's own table (`TableRow`): name, kind
# (classification, multi_label, regression, proximity, adhoc_search, reviewer_matching), metadata config, test
# config, metrics, few-shot runs (sample size, iterations).
# Regression tasks add Pearson's r to SciRepEval's Kendall's tau; reviewer matching names its hard and soft P@k.
TASK_TABLE: tuple[TableRow, ...] = tuple(TableRow(*row) for row in (
    ("Biomimicry", "classification", "biomimicry", "biomimicry", ("f1",), ((64, 50), (16, 100))),
    ("DRSM", "classification", "drsm", "drsm", ("f1_macro",), ((64, 50), (24, 100))),
    ("RELISH", "proximity", "relish", "relish", ("ndcg",), ()),
    ("NFCorpus", "adhoc_search", "nfcorpus", "nfcorpus", ("ndcg",), ()),
    ("TREC-CoVID", "adhoc_search", "trec_covid", "trec_covid", ("ndcg",), ()),
    ("Paper-Reviewer Matching", "reviewer_matching", "paper_reviewer_matching", "paper_reviewer_matching",
     ("hard_P_5", "hard_P_10", "soft_P_5", "soft_P_10"), ()),
    ("Peer Review Score", "regression", "peer_review_score_hIndex", "peer_review_score", ("kendalltau", "pearsonr"),
     ()),
    ("Max hIndex", "regression", "peer_review_score_hIndex", "hIndex", ("kendalltau", "pearsonr"), ()),
    ("Tweet Mentions", "regression", "tweet_mentions", "tweet_mentions", ("kendalltau", "pearsonr"), ()),
    ("SciDocs MAG", "classification", "scidocs_mag_mesh", "scidocs_mag", ("f1_macro",), ()),
    ("SciDocs MeSH", "classification", "scidocs_mag_mesh", "scidocs_mesh", ("f1_macro",), ()),
    ("SciDocs Cite", "proximity", "scidocs_view_cite_read", "scidocs_cite", ("map", "ndcg"), ()),
    ("SciDocs CoView", "proximity", "scidocs_view_cite_read", "scidocs_view", ("map", "ndcg"), ()),
    ("SciDocs CoCite", "proximity", "scidocs_view_cite_read", "scidocs_cocite", ("map", "ndcg"), ()),
    ("SciDocs CoRead", "proximity", "scidocs_view_cite_read", "scidocs_read", ("map", "ndcg"), ()),
    ("Same Author Detection", "proximity", "same_author", "same_author", ("map",), ()),
    ("Highly Influential Citations", "proximity", "high_influence_cite", "high_influence_cite", ("map",), ()),
    ("Search", "adhoc_search", "search", "search", ("ndcg",), ()),
    ("Citation Count", "regression", "cite_count", "cite_count", ("kendalltau", "pearsonr"), ()),
    ("Publication Year", "regression", "pub_year", "pub_year", ("kendalltau", "pearsonr"), ()),
    ("Fields of study", "multi_label", "fos", "fos", ("f1_macro",), ((10, 50), (5, 100))),
    ("MeSH", "classification", "mesh_descriptors", "mesh_descriptors", ("f1_macro",), ()),
))

SOURCE = SciRepEvalHub(TASK_TABLE)
"""Where `data download --benchmark scirepeval` fetches the configs of the table's tasks (and their synthetic copy)."""
BENCHMARKS.register(Benchmark("scirepeval", "SciRepEval (EMNLP 2023): classification, regression, proximity and "
                              "ad-hoc search tasks on allenai/scirepeval data, SciRepEval's models and metrics",
                              table_kind="scirepeval", download=SOURCE,
                              synthetic_label="synthetic SciRepEval copy"))

log = logging.getLogger("scidocs_eval")
BENCHMARK = "scirepeval"
PREFIX = "scirepeval-"
REVIEWERS_CONFIG = "reviewers"


def write_synthetic_scirepeval(dest: str | os.PathLike[str], seed: int = 0, dim: int = 24,
                               size: int = 1) -> dict[str, np.ndarray]:
    """A synthetic copy of every config of SciRepEval's tasks (`SciRepEvalHub.write_synthetic` of its table);
    returns a noisy "model"'s vectors (doc_id -> float16 vector), for tests and demos."""
    return SOURCE.write_synthetic(dest, seed, dim, size)


def task_name(title: str) -> str:
    """Our registry name of a SciRepEval task: "Fields of study" -> "scirepeval-fields-of-study"."""
    return PREFIX + re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def test_split_file(config: str, split: str) -> str:
    """SciRepEval has a test split only: "val" names a file no copy has, so the task is skipped with a note."""
    return test_file(config, "test" if split == "test" else "validation")


@dataclass
class _Vectors:
    """The vectors of the ids that have one (SciRepEval's dict of embeddings), with coverage counts."""

    by_id: dict[str, np.ndarray]

    @classmethod
    def of(cls, task: str, embeddings: EmbeddingStore, ids: Sequence[str], as_float16: bool) -> _Vectors:
        ids = list(dict.fromkeys(ids))
        present = [i for i, code in zip(ids, embeddings.status(ids)) if code == PRESENT]
        matrix = embeddings.vectors(present, dtype=np.float64)
        if as_float16:
            with np.errstate(over="ignore"):
                matrix = matrix.astype(np.float16).astype(np.float64)
            overflow = ~np.isfinite(matrix).all(axis=1)
            if overflow.any():
                raise ScidocsEvalError(
                    f"task {task!r}: {int(overflow.sum())} vector(s) have values beyond float16's range (65504), "
                    f"the first of paper {present[int(np.argmax(overflow))]!r}; SciRepEval's float16 loader would "
                    f"turn them into infinities. Scale the vectors, or pass --task-param {task}.as_float16=false")
        return cls(dict(zip(present, matrix)))


@dataclass(frozen=True)
class LabelledConfig(TaskData):
    """A supervised task's train split and scored split."""

    train: Labelled
    scored: Labelled


@dataclass(frozen=True)
class JudgedConfig(TaskData):
    """A proximity or search task's judgements ({query: {candidate: grade}})."""

    qrels: dict[str, dict[str, int]]


@dataclass(frozen=True)
class ReviewerConfig(JudgedConfig):
    """Reviewer matching: the hard judgements (`qrels`), the soft ones and each reviewer's papers."""

    soft: dict[str, dict[str, int]]
    reviewers: dict[str, list[str]]


class SciRepEvalTask(Task[DataT]):
    """A SciRepEval task: `meta_config` (the papers), `test_config` (labels or qrels), `title` (its name there).

    Args:
        as_float16: round every vector to float16 before use, as SciRepEval's embeddings loader does.
    """

    title: ClassVar[str]
    meta_config: ClassVar[str]
    test_config: ClassVar[str]
    parameter_constraints: ClassVar[dict[str, list]] = {"as_float16": [InstanceOf(bool)]}
    splits: ClassVar[tuple[str, ...]] = ("test",)

    def __init__(self, as_float16: bool = True):
        self.as_float16 = as_float16
        validate_params(self.parameter_constraints, self.params(), f"task {self.name!r}")

    def _vectors(self, embeddings: EmbeddingStore, ids: Sequence[str], role: str, missing: MissingPolicy,
                 coverage: dict[str, int]) -> _Vectors:
        unique = list(dict.fromkeys(ids))
        codes = embeddings.status(unique)
        check_missing(self.name, role, unique, codes, missing)
        coverage[role] = len(unique)
        coverage[f"{role}_without_vector"] = int(np.sum(codes != PRESENT))
        return _Vectors.of(self.name, embeddings, unique, self.as_float16)


class SupervisedTask(SciRepEvalTask[LabelledConfig]):
    """Train on the config's train split, score its test split (papers without a vector are left out)."""

    multi_label: ClassVar[bool] = False
    numeric: ClassVar[bool] = False
    parameter_constraints: ClassVar[dict[str, list]] = {"as_float16": [InstanceOf(bool)],
                                                        "environment": [Options(models.ENVIRONMENTS)]}

    def __init__(self, as_float16: bool = True, environment: str = "lightning"):
        self.environment = environment
        super().__init__(as_float16)

    def required_files(self, split: str) -> list[str]:
        return [test_file(self.test_config, "train"), test_split_file(self.test_config, split)]

    def read(self, suite: Suite, split: str, texts: bool = True) -> LabelledConfig:
        train, scored = (read_labels(suite.require(relative, "JSON lines {paper_id, label}"), self.multi_label,
                                     self.numeric) for relative in self.input_files(suite, split))
        return LabelledConfig(split, texts, train, scored)

    def data_shapes(self, data: LabelledConfig) -> list[DataShape]:
        train_file, scored_file = self.input_files(data.suite, data.split)
        train, scored = data.train, data.scored
        kind = "values" if self.numeric else "label-sets" if self.multi_label else "classes"
        return [LabelledSplit(self.name, train_file, scored_file, train.ids, train.labels, scored.ids, scored.labels,
                              kind, models.FOLDS, overlap="warning")]  # SciRepEval scores such papers as they are

    def _split(self, suite: Suite, relative: str, labelled: Labelled, split: str, embeddings: EmbeddingStore,
               missing: MissingPolicy, coverage: dict[str, int]) -> tuple[Labelled, np.ndarray]:
        vectors = self._vectors(embeddings, labelled.ids, f"{split}_papers", missing, coverage)
        keep = [i for i, paper in enumerate(labelled.ids) if paper in vectors.by_id]
        if not keep:
            raise ScidocsEvalError(f"task {self.name!r}: no paper of {suite.path(relative)} has a vector in the "
                                   "embeddings (wrong file for this task?)")
        kept = Labelled([labelled.ids[i] for i in keep], labelled.labels[keep], [labelled.lines[i] for i in keep])
        x = np.array([vectors.by_id[paper] for paper in kept.ids]).reshape(len(keep), embeddings.dim)
        return kept, x

    def _data(self, data: LabelledConfig, embeddings: EmbeddingStore, missing: MissingPolicy
              ) -> tuple[Labelled, np.ndarray, Labelled, np.ndarray, dict[str, int]]:
        coverage: dict[str, int] = {}
        suite, split = data.suite, data.split
        train_file, scored_file = self.input_files(suite, split)
        train, x_train = self._split(suite, train_file, data.train, "train", embeddings, missing, coverage)
        test, x_test = self._split(suite, scored_file, data.scored, split, embeddings, missing, coverage)
        return train, x_train, test, x_test, coverage


class ClassificationTask(SupervisedTask):
    """Single-label (macro or binary F1) or multi-label (macro F1 over labels) classification."""

    metric: ClassVar[str]

    def fit(self, x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray) -> models.Fit:
        if self.multi_label:
            with warnings.catch_warnings():  # a label below the folds is the named warning of `data_shapes`
                warnings.filterwarnings("ignore", "The least populated class", UserWarning)
                return models.multi_label(x_train, y_train, x_test, self.environment)
        return models.single_label(x_train, y_train, x_test, self.environment)

    def evaluate(self, data: LabelledConfig, embeddings: EmbeddingStore,
                 missing: MissingPolicy = "official") -> TaskResult:
        train, x_train, test, x_test, coverage = self._data(data, embeddings, missing)
        fit = self.fit(x_train, train.labels, x_test)
        _warn_if_stalled(self.name, fit)
        value = models.classification_metric(test.labels, fit.predicted, self.metric)
        details = {"environment": self.environment, "problem": fit.problem, "C": fit.chosen_c,
                   "fits_not_converged": fit.not_converged}
        return TaskResult(self.name, {self.metric: value}, coverage, details,
                          items=classification_items(self.metric, self.multi_label, test.ids, test.labels,
                                                     fit.predicted))


def _warn_if_stalled(task: str, fit: models.Fit) -> None:
    if fit.not_converged:
        log.warning("%s: %d SVM fit(s) have no optimality certificate (their duality gap stayed above %g of the "
                    "objective); the number may differ from the exact solution (details: fits_not_converged)", task,
                    fit.not_converged, GAP_TOLERANCE)


def classification_items(metric: str, multi_label: bool, ids: list[str], gold: np.ndarray,
                         predicted: np.ndarray) -> dict[str, Any]:
    """Per test paper its gold label(s) and prediction, with the statistic the metric recomputes from them."""
    if metric == "f1_macro" and not multi_label:
        return {"unit": "paper", "ids": ids, "gold": gold.tolist(), "predicted": np.asarray(predicted).tolist()}
    statistic = "f1_macro_multilabel" if multi_label else "f1_binary"
    return {"unit": "sample", "statistic": {metric: statistic}, "ids": ids, "gold": gold.tolist(),
            "predicted": np.asarray(predicted).tolist()}


class RegressionTask(SupervisedTask):
    """Linear SVR; Kendall's τ (the task's score) and Pearson's r ×100; the MSE in details."""

    numeric = True

    def evaluate(self, data: LabelledConfig, embeddings: EmbeddingStore,
                 missing: MissingPolicy = "official") -> TaskResult:
        train, x_train, test, x_test, coverage = self._data(data, embeddings, missing)
        fit = models.regression(x_train, train.labels, x_test, self.environment)
        _warn_if_stalled(self.name, fit)
        if np.ptp(test.labels) == 0:
            raise UndefinedMetricError(self.name, f"every test paper has the value {test.labels[0]:g}, so Kendall's "
                                                  "tau and Pearson's r are undefined")
        if np.ptp(fit.predicted) == 0:
            raise UndefinedMetricError(
                self.name, f"the regressor (C={fit.chosen_c[0]:g}) predicts {fit.predicted[0]:g} for every "
                f"one of the {len(fit.predicted)} test papers: the embeddings give it nothing to fit, and Kendall's "
                "tau and Pearson's r of a constant are undefined (SciRepEval prints nan)")
        values = models.regression_metrics(test.labels, fit.predicted)
        details = {"environment": self.environment, "problem": fit.problem, "C": fit.chosen_c[0],
                   "fits_not_converged": fit.not_converged,
                   "mse": values.pop("mse")}
        items = {"unit": "sample", "statistic": {"kendalltau": "kendalltau", "pearsonr": "pearsonr"},
                 "ids": test.ids, "gold": test.labels.tolist(), "predicted": fit.predicted.tolist()}
        return TaskResult(self.name, values, coverage, details, items=items)


class FewShotTask(ClassificationTask):
    """A few-shot variant: SciRepEval's draws of `sample_size` examples, `iterations` times; the score is the mean
    of the per-iteration scores (each rounded to 2 decimals, as SciRepEval averages them), with their spread.

    Args:
        sample_size: examples a class (single label: the size of each StratifiedKFold fold) or positives a label
            (multi-label) drawn for each iteration; None: SciRepEval's for the task.
        iterations: how many draws; None: SciRepEval's for the task.
        seed: the first iteration's seed of numpy's legacy generator (multi-label; SciRepEval: 42, then 43, ...);
            single-label draws are the folds of an unshuffled StratifiedKFold and need none.
    """

    sample_size_default: ClassVar[int]
    iterations_default: ClassVar[int]
    parameter_constraints: ClassVar[dict[str, list]] = {
        **SupervisedTask.parameter_constraints, "sample_size": [Interval(int, 1, None), None],
        "iterations": [Interval(int, 1, None), None], "seed": [Interval(int, 0, 2**31 - 1)]}

    def __init__(self, as_float16: bool = True, environment: str = "lightning", sample_size: int | None = None,
                 iterations: int | None = None, seed: int = models.RANDOM_STATE):
        self.sample_size, self.iterations, self.seed = sample_size, iterations, seed
        super().__init__(as_float16, environment)
        self.sample_size = self.sample_size_default if sample_size is None else sample_size
        self.iterations = self.iterations_default if iterations is None else iterations

    def data_shapes(self, data: LabelledConfig) -> list[DataShape]:
        (labelled,) = super().data_shapes(data)
        assert isinstance(labelled, LabelledSplit)
        # single-label draws are fitted with a fixed C (no CV): the folds rule is the draws'
        labelled = replace(labelled, folds=None if not self.multi_label else labelled.folds)
        return [labelled, SampledEvaluation(self.name, labelled.train_file, labelled.train_labels, self.sample_size,
                                            self.iterations, self.multi_label,
                                            models.FOLDS if self.multi_label else None)]

    def evaluate(self, data: LabelledConfig, embeddings: EmbeddingStore,
                 missing: MissingPolicy = "official") -> TaskResult:
        train, x_train, test, x_test, coverage = self._data(data, embeddings, missing)
        scores = []
        stalled = 0
        problem = models.fixed_c_problem(self.environment)
        if self.multi_label:
            draws = models.few_shot_multi_label_draws(train.labels, self.sample_size, self.iterations, self.seed)
            for fit in models.multi_label_draws(x_train, train.labels, x_test, self.environment, draws):
                stalled += fit.not_converged
                predicted, problem = fit.predicted, fit.problem
                scores.append(models.classification_metric(test.labels, predicted, self.metric))
        else:
            for draw in models.few_shot_single_label_draws(train.labels, self.sample_size, self.iterations):
                predicted = models.single_label_fixed_c(x_train[draw], train.labels[draw], x_test,
                                                        self.environment)
                scores.append(models.classification_metric(test.labels, predicted, self.metric))
        values = np.asarray(scores)
        _warn_if_stalled(self.name, models.Fit(values, not_converged=stalled))
        details = {"environment": self.environment, "problem": problem, "fits_not_converged": stalled,
                   "sample_size": self.sample_size,
                   "iterations": len(scores),
                   "per_iteration": scores, "std": {self.metric: round(float(np.std(values)), 2)},
                   "min": {self.metric: float(values.min())}, "max": {self.metric: float(values.max())}}
        items = {"unit": "iteration", "ids": [str(i) for i in range(len(scores))], self.metric: (values / 100).tolist()}
        return TaskResult(self.name, {self.metric: round(float(np.mean(values)), 2)}, coverage, details,
                          items=items)


def _qrels(suite: Suite, relative: str) -> dict[str, dict[str, int]]:
    return read_qrels(suite.require(relative, "JSON lines {query_id, cand_id, score}"))


def _check_scored(task: str, run: dict[str, dict[str, float]], path: Any) -> None:
    if not any(run.values()):
        raise ScidocsEvalError(f"task {task!r}: no query of {path} has a vector with a candidate that has one "
                               "(wrong embeddings file for this task?)")


class ProximityTask(SciRepEvalTask[JudgedConfig]):
    """Each query's candidates ranked by −L2 distance; trec_eval measures by pytrec_eval, mean over queries."""

    def required_files(self, split: str) -> list[str]:
        return [test_split_file(self.test_config, split)]

    def read(self, suite: Suite, split: str, texts: bool = True) -> JudgedConfig:
        return JudgedConfig(split, texts, _qrels(suite, self.input_files(suite, split)[0]))

    def data_shapes(self, data: JudgedConfig) -> list[DataShape]:
        return [JudgedSplit(self.name, self.input_files(data.suite, data.split)[0], data.qrels)]

    def _scored(self, qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]],
                metrics: Sequence[str], prefix: str = "") -> tuple[dict[str, float], dict[str, Any]]:
        per_query = trec_measures(qrels, run, metrics)
        ids = list(per_query)
        values = {prefix + m: models.rounded(float(np.mean([per_query[q][m] for q in ids]))) if ids else 0.0
                  for m in metrics}
        items: dict[str, Any] = {"unit": "query", "ids": ids}
        items.update({prefix + m: [per_query[q][m] for q in ids] for m in metrics})
        return values, items

    def evaluate(self, data: JudgedConfig, embeddings: EmbeddingStore,
                 missing: MissingPolicy = "official") -> TaskResult:
        return self._rank(data, embeddings, embeddings, missing)

    def _rank(self, data: JudgedConfig, query_store: EmbeddingStore, candidate_store: EmbeddingStore,
              missing: MissingPolicy) -> TaskResult:
        suite, split, qrels = data.suite, data.split, data.qrels
        coverage: dict[str, int] = {}
        queries = self._vectors(query_store, list(qrels), "queries", missing, coverage)
        candidates = self._vectors(candidate_store, [c for grades in qrels.values() for c in grades], "candidates",
                                   missing, coverage)
        run = models.negative_l2_run({**candidates.by_id, **queries.by_id}, qrels)
        _check_scored(self.name, run, suite.path(test_split_file(self.test_config, split)))
        values, items = self._scored(qrels, run, self.metrics)
        coverage["queries_scored"] = len(items["ids"])
        return TaskResult(self.name, values, coverage, {}, items=items)


class SearchTask(ProximityTask):
    """Ad-hoc search: each query's candidates ranked by −L2 distance to the query's vector, as proximity; the
    queries (texts, or papers) are embedded apart from the candidates, in the group `spec.query_group`, for a model
    that embeds a search query differently (SciRepEval's [QRY] task id, SPECTER2's adhoc_query adapter). One
    embeddings file may hold both, as SciRepEval's does."""

    def paper_ids(self, data: JudgedConfig) -> list[str]:
        suite = data.suite
        queries = set(suite.query_ids(self.spec.metadata_file))
        return [paper_id for paper_id in suite.metadata(self.spec.metadata_file) if paper_id not in queries]

    def role_papers(self, data: JudgedConfig) -> dict[str, tuple[list[Paper], str]]:
        suite = data.suite
        records = suite.metadata(self.spec.metadata_file)
        queries = [paper_of_record(q, records[q], self.spec.text_fields)
                   for q in suite.query_ids(self.spec.metadata_file)]
        assert self.spec.query_group is not None
        return {self.spec.query_group: (queries, "query")}

    def evaluate(self, data: JudgedConfig, embeddings: EmbeddingStore,
                 missing: MissingPolicy = "official") -> TaskResult:
        assert self.spec.query_group is not None
        return self.evaluate_groups(data, {self.embedding_group: embeddings, self.spec.query_group: embeddings},
                                    missing)

    def evaluate_groups(self, data: JudgedConfig, stores: Mapping[str, EmbeddingStore],
                        missing: MissingPolicy = "official") -> TaskResult:
        assert self.spec.query_group is not None
        return self._rank(data, stores[self.spec.query_group], stores[self.embedding_group], missing)


class ReviewerMatchingTask(ProximityTask):
    """Paper–reviewer matching: a reviewer's score is the mean of the 3 highest cosine similarities between the
    query paper and the reviewer's papers; P@5 and P@10 on the hard and the soft qrels."""

    measures = ("P_5", "P_10")

    def required_files(self, split: str) -> list[str]:
        hard = "test_hard" if split == "test" else "validation_hard"
        return [test_file(self.test_config, hard), test_file(self.test_config, hard.replace("hard", "soft")),
                test_file(REVIEWERS_CONFIG, "metadata")]

    def read(self, suite: Suite, split: str, texts: bool = True) -> ReviewerConfig:
        hard_file, soft_file, reviewers_file = self.input_files(suite, split)
        return ReviewerConfig(split, texts, _qrels(suite, hard_file), _qrels(suite, soft_file),
                              read_reviewers(suite.require(reviewers_file, "JSON lines {r_id, papers}")))

    def data_shapes(self, data: ReviewerConfig) -> list[DataShape]:
        hard_file, soft_file, _ = self.input_files(data.suite, data.split)
        return [JudgedSplit(self.name, relative, qrels, corpus=data.reviewers)
                for relative, qrels in ((hard_file, data.qrels), (soft_file, data.soft))]

    def evaluate(self, data: ReviewerConfig, embeddings: EmbeddingStore,
                 missing: MissingPolicy = "official") -> TaskResult:
        suite = data.suite
        hard_file, soft_file, _ = self.input_files(suite, data.split)
        hard, soft, reviewers = data.qrels, data.soft, data.reviewers
        coverage: dict[str, int] = {}
        queries = self._vectors(embeddings, list(hard), "queries", missing, coverage)
        wanted = {r for grades in hard.values() for r in grades}
        papers = self._vectors(embeddings, [p for r in wanted for p in reviewers.get(r, ())], "reviewer_papers",
                               missing, coverage)
        coverage["reviewers_without_papers"] = len(wanted - set(reviewers))
        run = models.reviewer_run({**papers.by_id, **queries.by_id}, hard, reviewers)
        _check_scored(self.name, run, suite.path(hard_file))
        values, items = self._scored(hard, run, self.measures, "hard_")
        soft_values, soft_items = self._scored(soft, run, self.measures, "soft_")
        if soft_items["ids"] != items["ids"]:
            raise ScidocsEvalError(f"task {self.name!r}: {suite.path(soft_file)} and {suite.path(hard_file)} score "
                                   "different queries; they should list the same ones")
        values.update(soft_values)
        items.update({k: v for k, v in soft_items.items() if k.startswith("soft_")})
        return TaskResult(self.name, values, coverage, {}, items=items)


_BASES: dict[str, type[SciRepEvalTask]] = {"classification": ClassificationTask, "multi_label": ClassificationTask,
                                            "regression": RegressionTask, "proximity": ProximityTask,
                                            "adhoc_search": SearchTask, "reviewer_matching": ReviewerMatchingTask}
FORMATS = {"classification": "classification", "multi_label": "classification", "regression": "regression",
           "proximity": "proximity", "adhoc_search": "adhoc_search", "reviewer_matching": "proximity"}
"""SciRepEval's task type (its `TASK_IDS` key) of each of our kinds."""
INPUT_FORMAT = {"classification": "classification", "regression": "regression", "proximity": "proximity",
                "adhoc_search": "proximity"}
"""The input format (`INPUT_FORMATS`) of a task type's papers: SciRepEval's task id for it ([CLF], [RGN], [PRX];
a search's candidates [PRX], its queries, embedded apart, [QRY])."""
NOT_SUPPORTED = {"S2AND": "author name disambiguation needs the `s2and` package's clustering and the S2AND data "
                          "from S3 (not on the Hugging Face hub); the `s2and` package is not on PyPI"}


def _spec(name: str, title: str, kind: str, meta_config: str, metrics: tuple[str, ...]) -> TaskSpec:
    group = "scirepeval-" + meta_config.lower().replace("_", "-")
    return TaskSpec(name, f"SciRepEval {title} ({FORMATS[kind].replace('_', ' ')}; {', '.join(metrics)})",
                    "scirepeval", metrics, metrics[0], group, meta_file(meta_config), benchmark=BENCHMARK,
                    input_format=INPUT_FORMAT[FORMATS[kind]],
                    query_group=f"{group}-queries" if kind == "adhoc_search" else None,
                    text_fields=EXTRA_TEXT_FIELDS.get(meta_config, ()))


def _class_name(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("-")) + "Task"


def _register(title: str, kind: str, meta_config: str, test_config: str, metrics: tuple[str, ...],
              few_shot: tuple[tuple[int, int], ...]) -> None:
    """Register the task of one row of SciRepEval's task table, and its few-shot variants."""
    attributes: dict[str, Any] = {"title": title, "meta_config": meta_config, "test_config": test_config,
                                  "multi_label": kind == "multi_label",
                                  "metric": metrics[0], "__module__": __name__}
    name = task_name(title)
    register_task(type(_class_name(name), (_BASES[kind],), {**attributes, "spec": _spec(name, title, kind, meta_config,
                                                                            metrics)}))
    for sample_size, iterations in few_shot:
        shot = f"{name}-{sample_size}-shot"
        register_task(type(_class_name(shot), (FewShotTask,), {
            **attributes, "sample_size_default": sample_size, "iterations_default": iterations,
            "spec": _spec(shot, f"{title} {sample_size} shot, {iterations} iterations", kind, meta_config,
                          metrics)}))


for _row in TASK_TABLE:
    _register(*_row)
