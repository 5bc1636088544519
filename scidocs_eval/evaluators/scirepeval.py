"""SciRepEval's models and metrics, solved to optimality (facts from allenai/scirepeval `evaluation/`).

SciRepEval's `evaluator.py` imports its SVMs from sklearn-contrib-lightning when that is installed and from
`sklearn.svm` otherwise; the two are different optimisation problems (docs/scirepeval.md), and with lightning the
scikit-learn version changes the model selection too. `environment` names the problem solved here, always to
optimality (`ENVIRONMENT_SPECS` says what each one is):

- "lightning": lightning 0.6.2 beside scikit-learn ≥ 1.6, what installing SciRepEval gives today: no intercept,
  and lightning's estimators are not recognised as classifiers (its `BaseEstimator` precedes `ClassifierMixin`, so
  their tags are not a classifier's): GridSearchCV splits plain KFold folds, and OneVsRestClassifier predicts a
  label where the decision value exceeds 0.5, not 0;
- "lightning-pinned": lightning with the scikit-learn 1.1.2 of SciRepEval's requirements.txt, where they are
  classifiers: no intercept, stratified folds, threshold 0;
- "sklearn": liblinear's regularised intercept (`intercept_scaling=1`: a constant 1 feature), stratified folds,
  threshold 0.

Models, as SciRepEval builds them:
- single label: one-vs-rest squared-hinge linear SVM, C from logspace(-2, 2, 5) by 3-fold CV (no shuffle,
  accuracy, ties to the smaller C), refit on all of train; our exact Newton solver (`linear_svm.py`).
- multi-label: per label, a hinge-loss linear SVM with its own C from the same grid and CV (the folds of that
  label where they are stratified); solved exactly (`exact_svm.py`), every label and fold in one batch.
- regression: epsilon-insensitive linear SVR (epsilon 0), C from logspace(-4, 2, 7) by 3-fold KFold (no shuffle,
  R²); solved exactly (`exact_svm.py`).
- few-shot: SciRepEval's draws (single label: the folds of StratifiedKFold(ceil(n / k)), C = 1, no CV;
  multi-label: numpy's legacy generator seeded 42 + i takes k positives of each label), one score per iteration.

Every fit of the two piecewise-linear losses carries a certificate (its duality gap); one without is counted in
`Fit.not_converged` and warned about, never passed off as the optimum.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.metrics import f1_score
from scidocs_eval.evaluators.exact_svm import (
    absolute_error_columns,
    hinge_columns,
    one_blas_thread,
    solve_path,
    solve_path_at,
)
from scidocs_eval.evaluators.folds import Splits, kfold_splits, stratified_held_out, stratified_splits
from scidocs_eval.evaluators.linear_svm import LinearSVMGrid, fit_linear_svm, predict_linear_svm
from scidocs_eval.lazy_modules import lazy_module

np = lazy_module("numpy", __name__)


@dataclass(frozen=True)
class Environment:
    """What SciRepEval's code does in one environment: `intercept`: liblinear's regularised intercept;
    `classifier_tags`: scikit-learn sees its SVMs as classifiers (stratified CV folds, and OneVsRestClassifier's
    threshold 0 on the decision value; otherwise plain KFold and 0.5)."""

    name: str
    intercept: bool
    classifier_tags: bool
    description: str


ENVIRONMENT_SPECS = {spec.name: spec for spec in (
    Environment("lightning", False, False, "sklearn-contrib-lightning 0.6.2 with scikit-learn >= 1.6: no intercept, "
                "KFold CV folds, multi-label predicted where the decision value > 0.5"),
    Environment("lightning-pinned", False, True, "sklearn-contrib-lightning 0.6.2 with scikit-learn 1.1.2 "
                "(requirements.txt): no intercept, stratified CV folds, multi-label threshold 0"),
    Environment("sklearn", True, True, "scikit-learn's liblinear: regularised intercept (intercept_scaling=1), "
                "stratified CV folds, multi-label threshold 0"),
)}
ENVIRONMENTS = tuple(ENVIRONMENT_SPECS)
CLASSIFICATION_GRID = tuple(10.0**exponent for exponent in range(-2, 3))
"""SciRepEval's `np.logspace(-2, 2, 5)`, the same floats (tests/test_startup.py), without numpy at import."""
REGRESSION_GRID = tuple(10.0**exponent for exponent in range(-4, 3))
"""SciRepEval's `np.logspace(-4, 2, 7)`, the same floats."""
FOLDS = 3
RANDOM_STATE = 42


@dataclass
class Fit:
    """Predictions and what the fit chose: C per model, fits without an optimality certificate (should stay 0),
    and the problem solved, in words (for a result's details)."""

    predicted: np.ndarray
    chosen_c: list[float] = field(default_factory=list)
    not_converged: int = 0
    problem: str = ""


def environment_spec(environment: str) -> Environment:
    if environment not in ENVIRONMENT_SPECS:
        raise ScidocsEvalError(f"environment must be one of {', '.join(ENVIRONMENTS)}, not {environment!r}")
    return ENVIRONMENT_SPECS[environment]


def with_intercept(x: np.ndarray, environment: str) -> np.ndarray:
    """x as float64, with liblinear's constant bias feature (intercept_scaling=1) in the sklearn environment."""
    x = np.asarray(x, dtype=np.float64)
    return np.hstack([x, np.ones((x.shape[0], 1))]) if environment_spec(environment).intercept else x


PARALLEL_FROM = 5000
"""Training papers from which the SVM grid runs in worker processes: below, starting them costs more than the fits."""


def single_label(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, environment: str,
                 c_grid: Sequence[float] = CLASSIFICATION_GRID, folds: int = FOLDS, n_jobs: int | None = None) -> Fit:
    """SciRepEval's `classify` for one label a paper: the C grid by CV (stratified or not, as the environment's
    GridSearchCV splits), then refit."""
    spec = environment_spec(environment)
    train, test = with_intercept(x_train, environment), with_intercept(x_test, environment)
    problem = f"squared hinge, one-vs-rest; {spec.description}"
    # one BLAS thread: these systems are small, and threads waiting on each other cost more than they gain
    with one_blas_thread():
        if not spec.classifier_tags:
            return _single_label_kfold(train, y_train, test, c_grid, folds, problem)
        if n_jobs is None:
            n_jobs = -1 if len(train) >= PARALLEL_FROM else 1
        grid = LinearSVMGrid(c_grid=tuple(c_grid), folds=folds, n_jobs=n_jobs).fit(train, y_train)
    return Fit(grid.predict(test), [grid.best_c_], problem=problem)


def _single_label_kfold(train: np.ndarray, y: np.ndarray, test: np.ndarray, c_grid: Sequence[float], folds: int,
                        problem: str) -> Fit:
    """The C grid over unstratified KFold folds (GridSearchCV on an estimator it does not see as a classifier):
    a fold trained on one class predicts that class."""
    means = []
    splits = kfold_splits(len(train), folds)
    for c in c_grid:
        accuracy = []
        for fitted, held_out in splits:
            classes, weights = fit_linear_svm(train[fitted], y[fitted], c)
            accuracy.append(float(np.mean(predict_linear_svm(train[held_out], classes, weights) == y[held_out])))
        means.append(float(np.mean(accuracy)))
    best = float(c_grid[int(np.argmax(means))])
    classes, weights = fit_linear_svm(train, y, best)
    return Fit(predict_linear_svm(test, classes, weights), [best], problem=problem)


def single_label_fixed_c(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, environment: str,
                         c: float = 1.0) -> np.ndarray:
    """One fit at `c`, no CV (SciRepEval's few-shot single-label fits: LinearSVC's default C=1)."""
    with one_blas_thread():
        classes, weights = fit_linear_svm(with_intercept(x_train, environment), y_train, c)
    return predict_linear_svm(with_intercept(x_test, environment), classes, weights)


def fixed_c_problem(environment: str, c: float = 1.0) -> str:
    """The problem of `single_label_fixed_c`, in words."""
    intercept = "regularised intercept" if environment_spec(environment).intercept else "no intercept"
    return f"squared hinge, one-vs-rest, C = {c:g} without CV; {intercept} ({environment})"


def _fold_splits(n: int, labels: np.ndarray | None, folds: int) -> Splits:
    """GridSearchCV's folds: StratifiedKFold by `labels` when given, else KFold; neither shuffles."""
    return kfold_splits(n, folds) if labels is None else stratified_splits(labels, folds)


def _choose(scores: np.ndarray) -> int:
    """GridSearchCV's choice from (C, fold) scores: the best mean fold score, the first in grid order on ties."""
    return int(np.argmax([float(np.mean(row)) for row in scores]))


def multi_label(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, environment: str,
                c_grid: Sequence[float] = CLASSIFICATION_GRID, folds: int = FOLDS) -> Fit:
    """SciRepEval's OneVsRestClassifier(GridSearchCV(LinearSVC(loss="hinge"))): y_train (n, n_labels) of 0/1."""
    return multi_label_draws(x_train, y_train, x_test, environment, [np.arange(len(y_train))], c_grid, folds)[0]


def multi_label_draws(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, environment: str,
                      draws: Sequence[Sequence[int]], c_grid: Sequence[float] = CLASSIFICATION_GRID,
                      folds: int = FOLDS) -> list[Fit]:
    """`multi_label` trained on each draw of training rows (indices into x_train, in the order SciRepEval's
    GridSearchCV sees them): one Fit a draw.

    Every (draw, label, fold, C) is one column of a batch of exact hinge problems over the training rows; the
    refits of every (draw, label) at its C are one more batch.
    """
    spec = environment_spec(environment)
    train, test = with_intercept(x_train, environment), with_intercept(x_test, environment)
    y_train = np.asarray(y_train)
    n, n_labels = y_train.shape
    draws = [np.asarray(draw, dtype=np.int64) for draw in draws]
    fits, fold_columns, held_out, refit_columns = [], [], [], []
    for number, draw in enumerate(draws):
        y = y_train[draw]
        constant = [len(np.unique(y[:, label])) == 1 for label in range(n_labels)]
        # OneVsRestClassifier takes its threshold from its first estimator: a constant label's is no classifier
        threshold = 0.0 if spec.classifier_tags and not constant[0] else 0.5
        problem = f"hinge, one-vs-rest, C per label by {folds}-fold CV (accuracy); {spec.description}"
        if spec.classifier_tags and constant[0]:
            problem += "; its first label is constant in training, so OneVsRestClassifier's threshold is 0.5"
        fit = Fit(np.zeros((test.shape[0], n_labels), dtype=np.int64), [float("nan")] * n_labels, problem=problem)
        fits.append((fit, threshold))
        for label in range(n_labels):
            if constant[label]:  # OneVsRestClassifier's constant predictor: its decision value is the label
                fit.predicted[:, label] = int(y[0, label] > threshold)
                continue
            refit_columns.append((number, label))
            splits = _fold_splits(len(draw), y[:, label] if spec.classifier_tags else None, folds)
            for fitted, scored in splits:
                fold_columns.append((number, label, draw[fitted]))
                held_out.append(draw[scored])
    if not refit_columns:
        return [fit for fit, _ in fits]
    rows = np.zeros((n, len(fold_columns)), dtype=bool)
    for column, (_, _, fitted) in enumerate(fold_columns):
        rows[fitted, column] = True
    labels = y_train[:, [label for _, label, _ in fold_columns]]
    positives, sizes = (labels * rows).sum(axis=0), rows.sum(axis=0)
    single_class = (positives == 0) | (positives == sizes)
    if spec.classifier_tags and single_class.any():
        _, label, _ = fold_columns[int(np.argmax(single_class))]
        raise ScidocsEvalError(f"multi-label: label {label} has one class in the training part of a CV fold: "
                               "SciRepEval's LinearSVC fails to fit there (too few papers of one class)")
    path, uncertified = solve_path(train, *hinge_columns(labels, rows), list(c_grid))
    # every column's held-out rows, one after another: each C's accuracies are sums over these stretches
    lengths = np.array([len(h) for h in held_out])
    owner = np.repeat(np.arange(len(fold_columns)), lengths)
    held_rows = np.concatenate(held_out)
    held_labels = labels[held_rows, owner]
    # lightning predicts the one class it saw; otherwise GridSearchCV scores the SVM's own predict (decision > 0)
    only_class = (positives == sizes).astype(int)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    scores = np.zeros((len(c_grid), len(fold_columns)))
    for position, weights in enumerate(path):
        decisions = (train @ weights)[held_rows, owner]
        predicted = np.where(single_class[owner], only_class[owner], (decisions > 0).astype(int))
        scores[position] = np.add.reduceat((predicted == held_labels).astype(np.float64), starts) / lengths
    chosen_c, refit_rows = [], np.zeros((n, len(refit_columns)), dtype=bool)
    folds_of_model: dict[tuple[int, int], list[int]] = {}
    for j, (number, label, _) in enumerate(fold_columns):
        folds_of_model.setdefault((number, label), []).append(j)
    for column, (number, label) in enumerate(refit_columns):
        own = folds_of_model[(number, label)]
        best = _choose(scores[:, own])
        chosen_c.append(float(c_grid[best]))
        fits[number][0].chosen_c[label] = chosen_c[-1]
        refit_rows[draws[number], column] = True
    refit_labels = y_train[:, [label for _, label in refit_columns]]
    refit, refit_uncertified = solve_path_at(train, *hinge_columns(refit_labels, refit_rows), np.array(chosen_c))
    decisions = test @ refit
    for column, (number, label) in enumerate(refit_columns):
        fit, threshold = fits[number]
        fit.predicted[:, label] = (decisions[:, column] > threshold).astype(np.int64)
    folds_of = np.array([number for number, _, _ in fold_columns])
    refits_of = np.array([number for number, _ in refit_columns])
    for number, (fit, _) in enumerate(fits):
        fit.not_converged = int(uncertified[folds_of == number].sum() + refit_uncertified[refits_of == number].sum())
    return [fit for fit, _ in fits]


def regression(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, environment: str,
               c_grid: Sequence[float] = REGRESSION_GRID, folds: int = FOLDS) -> Fit:
    """SciRepEval's GridSearchCV(LinearSVR(), C grid, cv=3): KFold without shuffling, scored by R²; the folds are
    with the C grid, the columns of one batch of exact ε-insensitive (ε = 0) problems."""
    spec = environment_spec(environment)
    train, test = with_intercept(x_train, environment), with_intercept(x_test, environment)
    y_train = np.asarray(y_train, dtype=np.float64)
    splits = _fold_splits(len(train), None, folds)
    rows = np.zeros((len(train), folds), dtype=bool)
    for fold, (fitted, _) in enumerate(splits):
        rows[fitted, fold] = True
    path, uncertified = solve_path(train, *absolute_error_columns(y_train, rows), list(c_grid))
    uncertified = int(uncertified.sum())
    scores = np.zeros((len(c_grid), folds))
    for position, weights in enumerate(path):
        for fold, (_, held_out) in enumerate(splits):
            scores[position, fold] = _r2_score(y_train[held_out], train[held_out] @ weights[:, fold])
    best = _choose(scores)
    refit, refit_uncertified = solve_path_at(train, *absolute_error_columns(y_train, np.ones((len(train), 1),
                                                                                             dtype=bool)),
                                             np.array([c_grid[best]]))
    problem = (f"epsilon-insensitive (epsilon 0) linear SVR, C by {folds}-fold KFold (R²); "
               f"{'regularised intercept' if spec.intercept else 'no intercept'} ({spec.name})")
    return Fit(test @ refit[:, 0], [float(c_grid[best])], uncertified + int(refit_uncertified.sum()), problem)


def few_shot_single_label_draws(y_train: np.ndarray, sample_size: int, iterations: int) -> list[np.ndarray]:
    """SciRepEval's few-shot training sets: the first `iterations` held-out folds of
    StratifiedKFold(n_splits=ceil(n / sample_size)) without shuffling."""
    return stratified_held_out(y_train, math.ceil(len(y_train) / sample_size), iterations)


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
    """SciRepEval's "f1" (binary, positive class 1) or "f1_macro" (multi-class or multi-label: macro over the
    classes or labels), ×100."""
    return rounded(f1_score(gold, predicted, {"f1": "binary", "f1_macro": "macro"}[metric]))


def regression_metrics(gold: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    """Kendall's τ and Pearson's r (×100, 2 decimals) and the MSE, as SciRepEval computes them (scipy's and
    scikit-learn's, in their own arithmetic where `_kendall_tau`, `_pearson_r` and `_mean_squared_error` can)."""
    gold, predicted = np.asarray(gold), np.asarray(predicted)
    tau, r, mse = _kendall_tau(gold, predicted), _pearson_r(gold, predicted), _mean_squared_error(gold, predicted)
    if tau is None or r is None:
        from scipy.stats import kendalltau, pearsonr

        tau, r = kendalltau(gold, predicted)[0], pearsonr(gold, predicted)[0]
    if mse is None:
        from sklearn.metrics import mean_squared_error

        mse = mean_squared_error(gold, predicted)
    return {"kendalltau": rounded(tau), "pearsonr": rounded(r), "mse": float(mse)}


def _float_pair(gold: np.ndarray, predicted: np.ndarray) -> bool:
    """Whether both are 1-D float64 arrays of one length, at least 3, all finite: where the direct forms below
    are those of scipy and scikit-learn (elsewhere they decide: warnings, NaN, conversions)."""
    return (gold.ndim == predicted.ndim == 1 and gold.dtype == predicted.dtype == np.float64
            and len(gold) == len(predicted) >= 3 and bool(np.isfinite(gold).all() and np.isfinite(predicted).all()))


KENDALL_DIRECT_MOST = 4096
"""`_kendall_tau` counts every pair (n² work and blocks of 512 × n temporaries); above this many items scipy's
O(n log n) count is cheaper than its import."""


def _kendall_tau(gold: np.ndarray, predicted: np.ndarray) -> float | None:
    """scipy's `kendalltau(gold, predicted)[0]` (τ-b): its integer pair counts, found here as the sum of the pairs'
    sign products, then its arithmetic; None where scipy decides (no pair untied on one side, or not
    `_float_pair`) and above `KENDALL_DIRECT_MOST` items."""
    if not _float_pair(gold, predicted) or len(gold) > KENDALL_DIRECT_MOST:
        return None
    n = len(gold)
    pairs = n * (n - 1) // 2
    tied = [int((counts * (counts - 1) // 2).sum()) for counts in (np.unique(gold, return_counts=True)[1],
                                                                   np.unique(predicted, return_counts=True)[1])]
    if pairs in tied:
        return None
    sign_products = 0
    for start in range(0, n, 512):  # every ordered pair once: each unordered pair twice
        block = slice(start, start + 512)
        sign_products += int((np.sign(gold[block, None] - gold[None, :])
                              * np.sign(predicted[block, None] - predicted[None, :])).sum())
    tau = (sign_products // 2) / np.sqrt(pairs - tied[0]) / np.sqrt(pairs - tied[1])
    return np.minimum(1.0, max(-1.0, tau))


def _pearson_r(gold: np.ndarray, predicted: np.ndarray) -> float | None:
    """scipy's `pearsonr(gold, predicted)[0]` in its own steps (means, scaled norms, `vecdot`, clip); None where
    scipy decides (a constant or nearly constant input: its warnings; numpy without `vecdot`; not `_float_pair`)."""
    if not _float_pair(gold, predicted) or not hasattr(np, "vecdot"):
        return None
    if (gold == gold[0]).all() or (predicted == predicted[0]).all():
        return None
    centred, norms = [], []
    for values in (gold, predicted):
        mean = np.mean(values, axis=-1, keepdims=True)
        deviations = values - mean
        largest = np.max(np.abs(deviations), axis=-1, keepdims=True)
        norm = largest * np.linalg.norm(deviations / largest, ord=2, axis=-1, keepdims=True)
        if (norm < np.finfo(np.float64).eps ** 0.75 * np.abs(mean)).any():
            return None
        centred.append(deviations)
        norms.append(norm)
    r = np.clip(np.vecdot(centred[0] / norms[0], centred[1] / norms[1], axis=-1), -1.0, 1.0)
    return r[()]


def _mean_squared_error(gold: np.ndarray, predicted: np.ndarray) -> float | None:
    """scikit-learn's `mean_squared_error` of one output in its steps (columns of shape (n, 1)); None where it
    decides (not `_float_pair`)."""
    if not _float_pair(gold, predicted):
        return None
    return float(np.average(np.average((gold.reshape(-1, 1) - predicted.reshape(-1, 1)) ** 2, axis=0)))


def _r2_score(gold: np.ndarray, predicted: np.ndarray) -> float:
    """scikit-learn's `r2_score` of one output in its steps (columns of shape (n, 1); 1 for a perfect prediction,
    0 for a constant gold predicted imperfectly); scikit-learn itself outside `_float_pair`."""
    if not _float_pair(gold, predicted):
        from sklearn.metrics import r2_score

        return r2_score(gold, predicted)
    gold, predicted = gold.reshape(-1, 1), predicted.reshape(-1, 1)
    numerator = np.sum(1.0 * (gold - predicted) ** 2, axis=0)
    denominator = np.sum(1.0 * (gold - np.average(gold, axis=0)) ** 2, axis=0)
    if numerator[0] == 0:
        return 1.0
    if denominator[0] == 0:
        return 0.0
    return float(np.average(1 - numerator / denominator))


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
        distances = _euclidean_distances(np.array([vectors[c] for c in candidates]),
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
                similarity = _cosine_similarity(np.array([vectors[p] for p in papers]),
                                                np.array([vectors[query]])).ravel()
                scores[reviewer] = float(np.mean(sorted(similarity, reverse=True)[:3]))
        run[query] = scores
    return run


def _euclidean_distances(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """scikit-learn's `euclidean_distances(x, y)` in its steps for float64 matrices (−2·x yᵀ plus the squared row
    norms, clipped at 0, square root); scikit-learn itself for other inputs (float32 goes through its upcast)."""
    if not (x.ndim == y.ndim == 2 and x.dtype == y.dtype == np.float64):
        from sklearn.metrics import pairwise

        return pairwise.euclidean_distances(x, y)
    distances = -2 * (x @ y.T)
    distances += np.einsum("ij,ij->i", x, x)[:, None]
    distances += np.einsum("ij,ij->i", y, y)[None, :]
    np.maximum(distances, 0, out=distances)
    return np.sqrt(distances, out=distances)


def _cosine_similarity(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """scikit-learn's `cosine_similarity(x, y)` in its steps for float64 matrices (rows divided by their norms, a
    norm below 10 machine epsilons taken as 1, then x yᵀ); scikit-learn itself for other inputs."""
    if not (x.ndim == y.ndim == 2 and x.dtype == y.dtype == np.float64):
        from sklearn.metrics import pairwise

        return pairwise.cosine_similarity(x, y)
    normalised = []
    for matrix in (x, y):
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
        norms[norms < 10 * np.finfo(np.float64).eps] = 1.0
        normalised.append(matrix / norms[:, None])
    return normalised[0] @ normalised[1].T
