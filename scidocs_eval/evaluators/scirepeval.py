"""SciRepEval's models and metrics, solved to optimality (facts from allenai/scirepeval `evaluation/`).

SciRepEval's `evaluator.py` imports its SVMs from sklearn-contrib-lightning when that is installed and from
`sklearn.svm` otherwise; the two are different optimisation problems (docs/scirepeval.md). `environment` names the
problem solved here, always to convergence:

- "lightning": no intercept (lightning's LinearSVC and LinearSVR fit none);
- "sklearn": liblinear's regularised intercept (`intercept_scaling=1`): the same problem with a constant 1 feature.

Models, as SciRepEval builds them:
- single label: one-vs-rest squared-hinge linear SVM, C from logspace(-2, 2, 5) by 3-fold stratified CV (no
  shuffle, accuracy, ties to the smaller C), refit on all of train; solved by our exact Newton solver
  (`linear_svm.py`), the problem lightning's LinearSVC and liblinear solve.
- multi-label: per label, a hinge-loss linear SVM with its own C from the same grid and CV; predicted where the
  decision value is > 0. Solved by liblinear's dual coordinate descent to a tolerance of 1e-8.
- regression: epsilon-insensitive linear SVR (epsilon 0), C from logspace(-4, 2, 7) by 3-fold CV (no shuffle,
  R²); liblinear's dual solver to a tolerance of 1e-8.
- few-shot: SciRepEval's draws (single label: the folds of StratifiedKFold(ceil(n / k)), C = 1, no CV;
  multi-label: numpy's legacy generator seeded 42 + i takes k positives of each label), one score per iteration.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import kendalltau, pearsonr
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import f1_score, mean_squared_error, pairwise
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.svm import LinearSVC, LinearSVR

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluators.linear_svm import LinearSVMGrid, fit_linear_svm, predict_linear_svm

ENVIRONMENTS = ("lightning", "sklearn")
CLASSIFICATION_GRID = tuple(float(c) for c in np.logspace(-2, 2, 5))
REGRESSION_GRID = tuple(float(c) for c in np.logspace(-4, 2, 7))
FOLDS = 3
RANDOM_STATE = 42
EXACT_TOLERANCE = 1e-8
MAX_ITERATIONS = 1_000_000


@dataclass
class Fit:
    """Predictions and what the fit chose: C per model, non-converged fits (should stay 0)."""

    predicted: np.ndarray
    chosen_c: list[float] = field(default_factory=list)
    not_converged: int = 0


def with_intercept(x: np.ndarray, environment: str) -> np.ndarray:
    """x as float64, with liblinear's constant bias feature (intercept_scaling=1) in the sklearn environment."""
    if environment not in ENVIRONMENTS:
        raise ScidocsEvalError(f"environment must be one of {', '.join(ENVIRONMENTS)}, not {environment!r}")
    x = np.asarray(x, dtype=np.float64)
    return np.hstack([x, np.ones((x.shape[0], 1))]) if environment == "sklearn" else x


PARALLEL_FROM = 5000
"""Training papers from which the SVM grid runs in worker processes: below, starting them costs more than the fits."""


def single_label(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, environment: str,
                 c_grid: Sequence[float] = CLASSIFICATION_GRID, folds: int = FOLDS, n_jobs: int | None = None) -> Fit:
    """SciRepEval's `classify` for one label a paper: the C grid by stratified CV, then refit."""
    train, test = with_intercept(x_train, environment), with_intercept(x_test, environment)
    if n_jobs is None:
        n_jobs = -1 if len(train) >= PARALLEL_FROM else 1
    grid = LinearSVMGrid(c_grid=tuple(c_grid), folds=folds, n_jobs=n_jobs).fit(train, y_train)
    return Fit(grid.predict(test), [grid.best_c_])


def single_label_fixed_c(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, environment: str,
                         c: float = 1.0) -> np.ndarray:
    """One fit at `c`, no CV (SciRepEval's few-shot single-label fits: LinearSVC's default C=1)."""
    classes, weights = fit_linear_svm(with_intercept(x_train, environment), y_train, c)
    return predict_linear_svm(with_intercept(x_test, environment), classes, weights)


def _liblinear(model: Any, x: np.ndarray, y: np.ndarray) -> tuple[Any, bool]:
    """`model` fit on (x, y); and whether liblinear reported stopping before its tolerance."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model.fit(x, y)
    return model, any(issubclass(w.category, ConvergenceWarning) for w in caught)


def _grid_search(make: Callable[[float], Any], x: np.ndarray, y: np.ndarray, c_grid: Sequence[float],
                 splits: list[tuple[np.ndarray, np.ndarray]], score: Callable[[Any, np.ndarray, np.ndarray], float]
                 ) -> tuple[Any, float, int]:
    """GridSearchCV's choice (mean fold score, first best C in grid order) and the refit: (model, C, stalls)."""
    stalls = 0
    means = []
    for c in c_grid:
        scores = []
        for train, held_out in splits:
            model, stalled = _liblinear(make(c), x[train], y[train])
            stalls += stalled
            scores.append(score(model, x[held_out], y[held_out]))
        means.append(float(np.mean(scores)))
    best = c_grid[int(np.argmax(means))]
    model, stalled = _liblinear(make(best), x, y)
    return model, float(best), stalls + stalled


def _hinge_svc(environment: str) -> Callable[[float], LinearSVC]:
    return lambda c: LinearSVC(C=c, loss="hinge", dual=True, fit_intercept=environment == "sklearn",
                               intercept_scaling=1.0, tol=EXACT_TOLERANCE, max_iter=MAX_ITERATIONS,
                               random_state=RANDOM_STATE)


def _accuracy(model: Any, x: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(model.predict(x) == y))


def multi_label(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, environment: str,
                c_grid: Sequence[float] = CLASSIFICATION_GRID, folds: int = FOLDS) -> Fit:
    """SciRepEval's OneVsRestClassifier(GridSearchCV(LinearSVC(loss="hinge"))): y_train (n, n_labels) of 0/1."""
    x_train, x_test = np.asarray(x_train, dtype=np.float64), np.asarray(x_test, dtype=np.float64)
    predicted = np.zeros((x_test.shape[0], y_train.shape[1]), dtype=np.int64)
    fit = Fit(predicted)
    for label in range(y_train.shape[1]):
        y = y_train[:, label]
        if len(np.unique(y)) == 1:  # OneVsRestClassifier predicts a constant label constantly
            predicted[:, label] = y[0]
            fit.chosen_c.append(float("nan"))
            continue
        splits = list(StratifiedKFold(n_splits=folds).split(x_train, y))
        model, c, stalls = _grid_search(_hinge_svc(environment), x_train, y, c_grid, splits, _accuracy)
        predicted[:, label] = model.decision_function(x_test) > 0
        fit.chosen_c.append(c)
        fit.not_converged += stalls
    return fit


def regression(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, environment: str,
               c_grid: Sequence[float] = REGRESSION_GRID, folds: int = FOLDS) -> Fit:
    """SciRepEval's GridSearchCV(LinearSVR(), C grid, cv=3): KFold without shuffling, scored by R²."""
    x_train, x_test = np.asarray(x_train, dtype=np.float64), np.asarray(x_test, dtype=np.float64)

    def make(c: float) -> LinearSVR:
        return LinearSVR(C=c, epsilon=0.0, loss="epsilon_insensitive", dual=True,
                         fit_intercept=environment == "sklearn", intercept_scaling=1.0, tol=EXACT_TOLERANCE,
                         max_iter=MAX_ITERATIONS, random_state=RANDOM_STATE)

    splits = list(KFold(n_splits=folds).split(x_train))
    model, c, stalls = _grid_search(make, x_train, y_train, c_grid, splits,
                                    lambda model, x, y: float(model.score(x, y)))
    return Fit(model.predict(x_test), [c], stalls)


def few_shot_single_label_draws(y_train: np.ndarray, sample_size: int, iterations: int) -> list[np.ndarray]:
    """SciRepEval's few-shot training sets: the first `iterations` held-out folds of
    StratifiedKFold(n_splits=ceil(n / sample_size)) without shuffling."""
    folds = StratifiedKFold(n_splits=math.ceil(len(y_train) / sample_size))
    draws = []
    for _, held_out in folds.split(np.zeros((len(y_train), 1)), y_train):
        draws.append(held_out)
        if len(draws) == iterations:
            break
    return draws


def few_shot_multi_label_draws(y_train: np.ndarray, sample_size: int, iterations: int, seed: int = RANDOM_STATE
                               ) -> list[list[int]]:
    """SciRepEval's few-shot multi-label training sets: for iteration i, numpy's legacy generator seeded seed + i
    draws `sample_size` positives of each label without replacement; the set of them, in Python's set order
    (the order GridSearchCV's folds then see)."""
    draws = []
    for iteration in range(iterations):
        generator = np.random.RandomState(seed + iteration)
        chosen: set[int] = set()
        for label in range(y_train.shape[1]):
            positives = np.where(y_train[:, label] == 1)[0]
            if len(positives) < sample_size:
                raise ScidocsEvalError(f"few-shot: label {label} has {len(positives)} training positives, fewer "
                                       f"than the sample size {sample_size}")
            chosen.update(generator.choice(positives, sample_size, replace=False).tolist())
        draws.append(list(chosen))
    return draws


def rounded(value: float) -> float:
    """×100, rounded to 2 decimals, as SciRepEval prints (np.round(100 * value, 2))."""
    return float(np.round(100 * value, 2))


def classification_metric(gold: np.ndarray, predicted: np.ndarray, metric: str) -> float:
    """SciRepEval's "f1" (binary, positive class 1) or "f1_macro" (multi-label: macro over labels), ×100."""
    average = {"f1": "binary", "f1_macro": "macro"}[metric]
    return rounded(f1_score(gold, predicted, average=average))


def regression_metrics(gold: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    """Kendall's τ and Pearson's r (×100, 2 decimals) and the MSE, as SciRepEval computes them."""
    return {"kendalltau": rounded(kendalltau(gold, predicted)[0]), "pearsonr": rounded(pearsonr(gold, predicted)[0]),
            "mse": float(mean_squared_error(gold, predicted))}


def negative_l2_run(vectors: Mapping[str, np.ndarray], qrels: Mapping[str, Mapping[str, int]]
                    ) -> dict[str, dict[str, float]]:
    """SciRepEval's `IREvaluator.retrieval`: each query's candidates scored by −(Euclidean distance), computed as
    scikit-learn's `euclidean_distances` does; queries and candidates without a vector are left out."""
    run = {}
    for query, grades in qrels.items():
        if query not in vectors:
            continue
        candidates = [c for c in grades if c in vectors]
        if not candidates:
            run[query] = {}
            continue
        distances = pairwise.euclidean_distances(np.array([vectors[c] for c in candidates]),
                                                 np.array([vectors[query]])).ravel()
        run[query] = {c: float(-d) for c, d in zip(candidates, distances)}
    return run


def reviewer_run(vectors: Mapping[str, np.ndarray], qrels: Mapping[str, Mapping[str, int]],
                 reviewers: Mapping[str, Sequence[str]]) -> dict[str, dict[str, float]]:
    """SciRepEval's `ReviewerMatchingEvaluator.retrieval`: a reviewer scores the mean of the 3 highest cosine
    similarities between the query paper and the reviewer's papers (those with a vector)."""
    run = {}
    for query, grades in qrels.items():
        if query not in vectors:
            continue
        scores = {}
        for reviewer in grades:
            papers = [p for p in reviewers.get(reviewer, ()) if p in vectors]
            if papers:
                similarity = pairwise.cosine_similarity(np.array([vectors[p] for p in papers]),
                                                        np.array([vectors[query]])).ravel()
                scores[reviewer] = float(np.mean(sorted(similarity, reverse=True)[:3]))
        run[query] = scores
    return run
