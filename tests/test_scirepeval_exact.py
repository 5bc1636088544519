"""The exact hinge and ε-insensitive solvers (evaluators/exact_svm.py) and SciRepEval's model selection around them.

Optimality is checked against an independent formulation (the dual box-constrained QP solved by scipy's L-BFGS-B)
and by the KKT conditions themselves, not only against liblinear.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import LinearSVC, LinearSVR

from scidocs_eval.evaluation import metrics
from scidocs_eval.evaluators import folds as folds_module
from scidocs_eval.evaluators import scirepeval as models
from scidocs_eval.evaluators.exact_svm import (
    GAP_TOLERANCE,
    PiecewiseLinearSVM,
    absolute_error_columns,
    hinge_columns,
    solve_path,
)


def _data(seed: int, n: int = 40, dim: int = 5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, dim))
    labels = (x @ rng.normal(size=dim) + rng.normal(size=n) > 0.3).astype(int)
    targets = x @ rng.normal(size=dim) + 0.5 * rng.normal(size=n)
    return x, labels, targets


def _dual_reference(x: np.ndarray, kinks: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """w = Xᵀβ of max Σ β_i k_i − ½‖Xᵀβ‖² over lower ≤ β ≤ upper: an independent QP solve (L-BFGS-B)."""
    def negative_dual(beta: np.ndarray) -> tuple[float, np.ndarray]:
        w = x.T @ beta
        return 0.5 * w @ w - kinks @ beta, x @ w - kinks

    result = minimize(negative_dual, np.zeros(len(kinks)), jac=True, method="L-BFGS-B",
                      bounds=list(zip(lower, upper)), options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 100_000})
    return x.T @ result.x


def _kkt_violation(x: np.ndarray, w: np.ndarray, c: float, kinks: np.ndarray, left: np.ndarray,
                   right: np.ndarray) -> float:
    """How far w is from satisfying w = Xᵀβ with β_i in the subdifferential box of row i's loss: 0 at the optimum.

    β_i = C·a_i where x_i·w < k_i, −C·b_i where > k_i, anything in [−C·b_i, C·a_i] on the kink; the rows on the kink
    (to 1e-9) take the β that fits w best, by bounded least squares."""
    from scipy.optimize import lsq_linear

    distance = kinks - x @ w
    on_kink = np.abs(distance) <= 1e-9
    beta = np.where(distance > 0, c * left, -c * right)
    rest = w - x[~on_kink].T @ beta[~on_kink]
    if on_kink.any():
        fitted = lsq_linear(x[on_kink].T, rest, bounds=(-c * right[on_kink] - 1e-15, c * left[on_kink] + 1e-15),
                            tol=1e-14, lsmr_tol="auto")
        rest = rest - x[on_kink].T @ fitted.x
    return float(np.linalg.norm(rest) / max(np.linalg.norm(w), 1e-300))


@pytest.mark.parametrize("intercept", [False, True])
@pytest.mark.parametrize("loss", ["hinge", "absolute"])
@pytest.mark.parametrize("c", [0.01, 1.0, 100.0])
def test_solutions_are_optimal_against_an_independent_qp_and_the_kkt_conditions(loss: str, c: float,
                                                                                  intercept: bool) -> None:
    x, labels, targets = _data(seed=int(c * 7) + intercept)
    if intercept:
        x = np.hstack([x, np.ones((len(x), 1))])
    rows = np.ones((len(x), 1), dtype=bool)
    columns = hinge_columns(labels[:, None], rows) if loss == "hinge" else absolute_error_columns(targets, rows)
    kinks, left, right = (array[:, 0] for array in columns)
    problem = PiecewiseLinearSVM(x, *columns)
    solution = problem.solve(c)
    w = solution.weights[:, 0]
    assert solution.certified[0] and solution.gap[0] <= GAP_TOLERANCE
    reference = _dual_reference(x, kinks, -c * right, c * left)
    ours, theirs = problem.objective(np.array([c]), w[:, None])[0], problem.objective(
        np.array([c]), reference[:, None])[0]
    assert ours <= theirs * (1 + 1e-12)  # never worse than the reference: ours is the optimum
    # the primal objective is 1-strongly convex: ½‖w − w*‖² ≤ P(w_ref) − P(w*)
    assert np.linalg.norm(w - reference) <= np.sqrt(2 * max(theirs - ours, 0.0)) + 1e-9
    assert _kkt_violation(x, w, c, kinks, left, right) <= 1e-9


def test_hinge_equals_liblinear_run_to_a_tight_tolerance_with_and_without_intercept() -> None:
    x, labels, _ = _data(seed=3, n=80)
    for intercept in (False, True):
        features = np.hstack([x, np.ones((len(x), 1))]) if intercept else x
        ours = PiecewiseLinearSVM(features, *hinge_columns(labels[:, None], np.ones((len(x), 1), bool))).solve(0.1)
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            svc = LinearSVC(C=0.1, loss="hinge", dual=True, fit_intercept=intercept, tol=1e-10,
                            max_iter=10**6).fit(x, labels)
        theirs = np.append(svc.coef_[0], svc.intercept_) if intercept else svc.coef_[0]
        np.testing.assert_allclose(ours.weights[:, 0], theirs, atol=1e-6)


def test_columns_are_independent_problems_and_rows_left_out_do_not_count() -> None:
    """A batch (labels × folds, each with its own rows) gives each column what it gives alone."""
    x, labels, targets = _data(seed=5, n=60)
    rng = np.random.default_rng(0)
    rows = rng.random((60, 4)) < 0.7
    label_columns = np.stack([labels, 1 - labels, labels, (targets > 0).astype(int)], axis=1)
    batch, _ = solve_path(x, *hinge_columns(label_columns, rows), [0.1, 10.0])
    for column in range(4):
        alone = PiecewiseLinearSVM(x[rows[:, column]], *hinge_columns(label_columns[rows[:, column], column:column + 1],
                                                                      np.ones((rows[:, column].sum(), 1), bool)))
        np.testing.assert_allclose(batch[1][:, column], alone.solve(10.0).weights[:, 0], atol=1e-9)


def test_the_grid_in_one_batch_equals_each_c_alone() -> None:
    x, _, targets = _data(seed=11, n=50)
    grid = list(models.REGRESSION_GRID)
    columns = absolute_error_columns(targets, np.ones((50, 1), bool))
    path, uncertified = solve_path(x, *columns, grid)
    assert uncertified.tolist() == [0]
    for c, weights in zip(grid, path):
        np.testing.assert_allclose(weights, PiecewiseLinearSVM(x, *columns).solve(c).weights, atol=1e-9)


def test_regression_grid_equals_scikit_learn_run_to_convergence() -> None:
    x, _, targets = _data(seed=2, n=60)
    for environment, intercept in (("lightning", False), ("sklearn", True)):
        fit = models.regression(x, targets, x[:10], environment)
        assert fit.not_converged == 0
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            reference = GridSearchCV(LinearSVR(epsilon=0.0, dual=True, fit_intercept=intercept, tol=1e-12,
                                               max_iter=10**7), {"C": list(models.REGRESSION_GRID)}, cv=KFold(3)
                                     ).fit(x, targets)
        assert fit.chosen_c == [reference.best_params_["C"]]
        np.testing.assert_allclose(fit.predicted, reference.predict(x[:10]), atol=1e-6)
        assert ("no intercept" in fit.problem) != intercept


def _multi_label_data(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    topics = rng.integers(4, size=150)
    centres = rng.normal(size=(4, 8))
    x = (centres[topics] + 0.9 * rng.normal(size=(150, 8))).astype(np.float16).astype(np.float64)
    y = np.stack([(topics == label) | (rng.random(150) < 0.15) for label in range(4)], axis=1).astype(int)
    return x[:100], y[:100], x[100:]


class _ExactHinge(ClassifierMixin, BaseEstimator):
    """A hinge-loss linear SVM for scikit-learn's own GridSearchCV and OneVsRestClassifier, fit by the exact solver
    (whose optimality the tests above check): a reference for the model selection around it."""

    def __init__(self, C: float = 1.0, fit_intercept: bool = False) -> None:
        self.C, self.fit_intercept = C, fit_intercept

    def _features(self, x: np.ndarray) -> np.ndarray:
        return np.hstack([x, np.ones((len(x), 1))]) if self.fit_intercept else x

    def fit(self, x: np.ndarray, y: np.ndarray) -> _ExactHinge:
        self.classes_ = np.unique(y)
        positive = (y == self.classes_[-1]).astype(int)[:, None]
        self.coef_ = PiecewiseLinearSVM(self._features(x), *hinge_columns(positive, np.ones_like(positive, bool))
                                        ).solve(self.C).weights[:, 0]
        return self

    def decision_function(self, x: np.ndarray) -> np.ndarray:
        return self._features(x) @ self.coef_

    def predict(self, x: np.ndarray) -> np.ndarray:
        return self.classes_[(self.decision_function(x) > 0).astype(int)]


class _ExactHingeNotAClassifier(_ExactHinge):
    """... whose tags say it is no classifier, as lightning 0.6.2's LinearSVC under scikit-learn >= 1.6."""

    def __sklearn_tags__(self):  # noqa: ANN204
        tags = super().__sklearn_tags__()
        tags.estimator_type = None
        return tags


@pytest.mark.parametrize("environment", models.ENVIRONMENTS)
def test_multi_label_is_scirepevals_one_vs_rest_grid_search_in_each_environment(environment: str) -> None:
    """SciRepEval's OneVsRestClassifier(GridSearchCV(LinearSVC(loss="hinge"))) with an exact hinge solver in place
    of its own: the lightning environment (scikit-learn >= 1.6) splits KFold folds and predicts where the decision
    value exceeds 0.5; the others stratify and predict above 0."""
    spec = models.ENVIRONMENT_SPECS[environment]
    x, y, x_test = _multi_label_data(seed=4)
    estimator = (_ExactHinge if spec.classifier_tags else _ExactHingeNotAClassifier)(fit_intercept=spec.intercept)
    reference = OneVsRestClassifier(GridSearchCV(estimator, {"C": list(models.CLASSIFICATION_GRID)}, cv=3)).fit(x, y)
    expected = reference.predict(x_test)
    fit = models.multi_label(x, y, x_test, environment)
    assert fit.not_converged == 0
    assert fit.chosen_c == [float(e.best_params_["C"]) for e in reference.estimators_]
    assert np.array_equal(fit.predicted, expected)
    assert spec.description in fit.problem


def test_lightning_threshold_and_folds_change_the_multi_label_number() -> None:
    """The mechanism behind the lightning environment's lower Fields-of-study number, on data where it shows."""
    x, y, x_test = _multi_label_data(seed=4)
    lightning = models.multi_label(x, y, x_test, "lightning")
    pinned = models.multi_label(x, y, x_test, "lightning-pinned")
    assert lightning.predicted.sum() < pinned.predicted.sum()  # 0.5 above 0 predicts fewer labels


def test_few_shot_draws_in_one_batch_equal_each_draw_alone() -> None:
    x, y, x_test = _multi_label_data(seed=6)
    draws = models.few_shot_multi_label_draws(y, 5, 4)
    batch = models.multi_label_draws(x, y, x_test, "lightning", draws)
    for draw, fit in zip(draws, batch):
        alone = models.multi_label(x[draw], y[draw], x_test, "lightning")
        assert np.array_equal(fit.predicted, alone.predicted) and fit.chosen_c == alone.chosen_c


def test_a_constant_first_label_makes_one_vs_rest_threshold_half() -> None:
    """OneVsRestClassifier takes its threshold from its first estimator; a constant label's is no classifier."""
    x, y, x_test = _multi_label_data(seed=4)
    y = y.copy()
    y[:, 0] = 1
    fit = models.multi_label(x, y, x_test, "sklearn")
    assert fit.predicted[:, 0].tolist() == [1] * len(x_test)
    assert "threshold is 0.5" in fit.problem


def test_a_solve_without_certificate_is_counted_never_passed_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """When no solution passes the duality-gap test (forced here), every such solve is counted in the Fit."""
    import scidocs_eval.evaluators.exact_svm as exact_svm

    monkeypatch.setattr(exact_svm, "GAP_TOLERANCE", -1.0)
    monkeypatch.setattr(exact_svm, "_SMALLEST_BARRIER", 1e-6)
    x, _, targets = _data(seed=2, n=30)
    fit = models.regression(x, targets, x[:5], "lightning")
    assert fit.not_converged == len(models.REGRESSION_GRID) * models.FOLDS + 1


def test_f1_without_scikit_learns_checks_is_scikit_learns_f1_bit_for_bit() -> None:
    """classification_metric's direct F1 of 0/1 indicators equals f1_score exactly, and hands every case it does
    not cover (zero division, other labels) to f1_score."""
    from sklearn.metrics import f1_score

    rng = np.random.default_rng(0)
    for _ in range(300):
        n, labels = int(rng.integers(1, 40)), int(rng.integers(1, 7))
        rate = rng.random()
        gold = (rng.random((n, labels)) < rate).astype(int)
        predicted = (rng.random((n, labels)) < rng.random()).astype(int)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            macro = f1_score(gold, predicted, average="macro")
            binary = f1_score(gold[:, 0], predicted[:, 0], average="binary")
            assert models.classification_metric(gold, predicted, "f1_macro") == models.rounded(macro)
            assert models.classification_metric(gold[:, 0], predicted[:, 0], "f1") == models.rounded(binary)
        direct = metrics.f1_of_indicators(gold, predicted, "macro")
        assert direct is None or direct == macro  # bit for bit, not only after rounding
    classes = np.array([0, 1, 2, 2, 1])
    assert metrics.f1_of_indicators(classes, classes, "binary") is None


@pytest.mark.parametrize("loss", ["hinge", "absolute"])
def test_newton_systems_over_rows_and_over_features_reach_the_same_certified_optimum(
        loss: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The interior-point method's two ways of solving its Newton systems (K + D over a column's rows, or over the
    features with the rows nearest their kinks kept apart) end at the same optimum, each certified."""
    import scidocs_eval.evaluators.exact_svm as exact_svm

    x, labels, targets = _data(seed=8, n=90, dim=6)
    rows = np.random.default_rng(1).random((90, 3)) < 0.8
    columns = hinge_columns(np.stack([labels] * 3, axis=1), rows) if loss == "hinge" else \
        absolute_error_columns(targets, rows)
    solutions = []
    for factor in (0.0, 1e9):  # every batch over the features; every batch over the rows
        monkeypatch.setattr(exact_svm, "_ROWS_FACTOR", factor)
        solution = PiecewiseLinearSVM(x, *columns).solve(np.array([0.01, 1.0, 100.0]))
        assert solution.certified.all() and (solution.gap <= GAP_TOLERANCE).all()
        solutions.append(solution.weights)
    np.testing.assert_allclose(solutions[0], solutions[1], atol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("environment", ["lightning", "sklearn"])
def test_every_solve_of_a_multi_label_fit_at_scirepevals_scale_is_certified(environment: str) -> None:
    """SciRepEval's size (1,200 training papers, 96-d float16 vectors, 20 labels: 300 CV solves and 20 refits):
    no solve is left without its optimality certificate (one was, before the interior-point method)."""
    rng = np.random.default_rng(0)
    topics = rng.integers(20, size=1400)
    x = (0.4 * rng.normal(size=(20, 96))[topics] + rng.normal(size=(1400, 96))).astype(np.float16).astype(float)
    y = np.stack([(topics == label) | (rng.random(1400) < 0.1) for label in range(20)], axis=1).astype(int)
    fit = models.multi_label(x[:1200], y[:1200], x[1200:], environment)
    assert fit.not_converged == 0


def test_stratified_folds_are_scikit_learns() -> None:
    """The multi-label CV's stratified folds, assigned without asking scikit-learn each time, are StratifiedKFold's
    own, and every case they do not cover (a class below the folds) is left to StratifiedKFold."""
    from sklearn.model_selection import StratifiedKFold

    rng = np.random.default_rng(3)
    for _ in range(400):
        n = int(rng.integers(6, 60))
        labels = (rng.random(n) < rng.uniform(0.05, 0.95)).astype(int)
        ours = models._fold_splits(n, labels, 3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = list(StratifiedKFold(n_splits=3).split(np.zeros((n, 1)), labels))
        assert len(ours) == len(theirs)
        for (train, test), (their_train, their_test) in zip(ours, theirs):
            assert np.array_equal(train, their_train) and np.array_equal(test, their_test)
    assert folds_module.stratified_test_folds(np.array([0, 1, 1, 1, 1, 0]), 3) is None  # class 0 below 3 rows
    three_classes = np.array([0, 2, 1, 2, 1, 0])  # any class labels now (tests/test_scirepeval_direct.py)
    folds = folds_module.stratified_test_folds(three_classes, 2)
    assert [list(np.flatnonzero(folds == fold)) for fold in range(2)] == \
        [list(test) for _, test in StratifiedKFold(n_splits=2).split(np.zeros((6, 1)), three_classes)]


@pytest.mark.parametrize("loss", ["hinge", "absolute"])
def test_solutions_at_a_models_width_are_optimal_against_an_independent_qp(loss: str) -> None:
    """256-d, fewer rows than features (the few-shot and CV shape of real encoders, solved over the rows from
    each column's K): every column of a batch (three row sets, three values of C) certified, never worse than
    the independent QP, within its strong-convexity bound of it, and satisfying the KKT conditions."""
    rng = np.random.default_rng(256)
    x = np.round(rng.normal(size=(70, 256)), 2)
    labels = (x[:, :8].sum(axis=1) + rng.normal(size=70) > 0).astype(int)
    targets = x[:, :8] @ rng.normal(size=8) + 0.3 * rng.normal(size=70)
    rows = np.repeat(rng.random((70, 3)) < 0.7, 3, axis=1)
    c = np.tile([0.01, 1.0, 100.0], 3)
    columns = hinge_columns(np.stack([labels] * 9, axis=1), rows) if loss == "hinge" else \
        absolute_error_columns(targets, rows)
    problem = PiecewiseLinearSVM(x, *columns)
    solution = problem.solve(c)
    assert solution.certified.all() and (solution.gap <= GAP_TOLERANCE).all()
    kinks, left, right = columns
    for column in range(9):
        used = rows[:, column]
        w = solution.weights[:, column]
        reference = _dual_reference(x[used], kinks[used, column], -c[column] * right[used, column],
                                    c[column] * left[used, column])
        ours, theirs = problem.objective(c, np.stack([w] * 9, axis=1))[column], problem.objective(
            c, np.stack([reference] * 9, axis=1))[column]
        assert ours <= theirs * (1 + 1e-12)
        assert np.linalg.norm(w - reference) <= np.sqrt(2 * max(theirs - ours, 0.0)) + 1e-9
        assert _kkt_violation(x[used], w, c[column], kinks[used, column], left[used, column],
                              right[used, column]) <= 1e-9


@pytest.mark.parametrize("dim", [10, 4], ids=["rows-below-features", "rows-above-features"])
def test_kink_systems_are_solved_for_their_least_norm_solution_full_rank_or_not(dim: int) -> None:
    """The finish's kink systems G v = r: full-rank ones solved directly, rank-deficient ones (duplicate rows, as
    float16 vectors give) through the pseudo-inverse (over the features where the rows outnumber them: G is then
    singular); either way the least-norm solution (numpy's lstsq), zero on the padding."""
    from scidocs_eval.evaluators.exact_svm import _least_norm

    rng = np.random.default_rng(0)
    rows = rng.normal(size=(4, 6, dim))
    rows[1, 3] = rows[1, 0]  # a duplicate row: singular
    rows[2, :, 3:] = 0.0
    rows[2, :, :2] = rows[2, :, 2:3]  # rank 1
    present = np.ones((4, 6), dtype=bool)
    present[3, 4:] = False  # padding (the column's 4 rows: at most as many as the features)
    rows[3, 4:] = rng.normal(size=(2, dim))  # padding is masked out, whatever it holds
    gram = (rows * present[:, :, None]) @ (rows * present[:, :, None]).transpose(0, 2, 1)
    rhs = rng.normal(size=(4, 6)) * present
    asked = []

    def gram_of(columns: np.ndarray, size: int) -> np.ndarray:
        asked.append((list(columns), size))
        return gram[columns][:, :size, :size]

    solved = _least_norm(present, rows, gram_of)(rhs)
    # only the columns with at most as many rows as features, cut to the most rows one of them has
    assert asked == ([([0, 1, 2, 3], 6)] if dim == 10 else [([3], 4)])
    for column in range(4):
        kept = present[column]
        expected = np.linalg.lstsq(gram[column][np.ix_(kept, kept)], rhs[column, kept], rcond=None)[0]
        np.testing.assert_allclose(solved[column, kept], expected, rtol=1e-8, atol=1e-10)
        assert not solved[column, ~kept].any()
