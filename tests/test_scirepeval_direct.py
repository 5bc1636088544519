"""SciRepEval's evaluation without importing scikit-learn or scipy.stats (a second of every run): the folds, draws,
scores and similarities that `scidocs_eval/evaluators/scirepeval.py` computes in scikit-learn's and scipy's own
steps are theirs bit for bit, on random inputs with ties, string labels and zero rows; where they must decide
(warnings, errors, NaN), they are asked."""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scidocs_eval.evaluation import metrics
from scidocs_eval.evaluators import folds as folds_module
from scidocs_eval.evaluators import scirepeval as models

sklearn_metrics = pytest.importorskip("sklearn.metrics")
model_selection = pytest.importorskip("sklearn.model_selection")
stats = pytest.importorskip("scipy.stats")
pairwise = pytest.importorskip("sklearn.metrics.pairwise")


def _quietly(call: Callable[..., Any], *args: Any) -> Any:
    """call(*args), or "error" where it raises ValueError (scikit-learn's refusals), its warnings silenced."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return call(*args)
    except ValueError:
        return "error"


def _their_draws(labels: np.ndarray, size: int, iterations: int) -> list[np.ndarray]:
    """SciRepEval's few-shot single-label draws, by scikit-learn."""
    draws = []
    folds = model_selection.StratifiedKFold(n_splits=-(-len(labels) // size))
    for _, held_out in folds.split(np.zeros((len(labels), 1)), labels):
        draws.append(held_out)
        if len(draws) == iterations:
            break
    return draws


def _their_splits(labels: np.ndarray, folds: int) -> list[tuple[np.ndarray, np.ndarray]]:
    return list(model_selection.StratifiedKFold(folds).split(np.zeros((len(labels), 1)), labels))


@pytest.mark.parametrize("seed", range(4))
def test_folds_and_few_shot_draws_are_scikit_learns(seed: int) -> None:
    rng = np.random.default_rng(seed)
    stratified = 0
    for _ in range(100):
        n, folds, classes = int(rng.integers(3, 200)), int(rng.integers(2, 10)), int(rng.integers(1, 6))
        labels = rng.integers(0, classes, n)
        if rng.random() < 0.3:
            labels = np.array([f"class {value}" for value in labels])
        if folds <= n:
            ours = folds_module.kfold_splits(n, folds)
            theirs = list(model_selection.KFold(folds).split(np.zeros((n, 1))))
            assert all(np.array_equal(a, b) and a.dtype == b.dtype for x, y in zip(ours, theirs) for a, b in zip(x, y))
        test_folds = folds_module.stratified_test_folds(labels, folds)
        if test_folds is not None:
            stratified += 1
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # the direct form is used only where scikit-learn does not warn
                theirs = list(model_selection.StratifiedKFold(folds).split(np.zeros((n, 1)), labels))
            assert all(np.array_equal(np.flatnonzero(test_folds == fold), held_out)
                       for fold, (_, held_out) in enumerate(theirs))
        ours = _quietly(folds_module.stratified_splits, labels, folds)  # scikit-learn's own where it decides
        theirs = _quietly(_their_splits, labels, folds)
        assert (ours == theirs) if "error" in (ours, theirs) else len(ours) == len(theirs) and all(
            np.array_equal(a, b) and a.dtype == b.dtype for x, y in zip(ours, theirs) for a, b in zip(x, y))
        size, iterations = int(rng.integers(1, 40)), int(rng.integers(1, 20))
        ours = _quietly(models.few_shot_single_label_draws, labels, size, iterations)
        theirs = _quietly(_their_draws, labels, size, iterations)
        assert (ours == theirs) if "error" in (ours, theirs) else \
            len(ours) == len(theirs) and all(np.array_equal(a, b) for a, b in zip(ours, theirs))
    assert stratified > 50


@pytest.mark.parametrize("seed", range(4))
def test_scores_are_scipys_and_scikit_learns_to_the_last_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(100):
        n = int(rng.integers(3, 300))
        gold = rng.standard_normal(n) if rng.random() < 0.5 else rng.integers(0, 5, n).astype(np.float64)  # ties
        predicted = gold + rng.standard_normal(n) * rng.random() if rng.random() < 0.7 else \
            rng.integers(0, 4, n).astype(np.float64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert models._r2_score(gold, predicted) == sklearn_metrics.r2_score(gold, predicted)
            tau, r = stats.kendalltau(gold, predicted)[0], stats.pearsonr(gold, predicted)[0]
            assert models._kendall_tau(gold, predicted) == tau
            assert models._pearson_r(gold, predicted) == r
            assert models.regression_metrics(gold, predicted) == {
                "kendalltau": models.rounded(tau), "pearsonr": models.rounded(r),
                "mse": float(sklearn_metrics.mean_squared_error(gold, predicted))}
        classes = int(rng.integers(2, 6))
        true, guessed = rng.integers(0, classes, n), rng.integers(0, classes, n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert models.classification_metric(true, guessed, "f1_macro") == \
                models.rounded(sklearn_metrics.f1_score(true, guessed, average="macro"))
        direct = metrics.f1_of_indicators(*metrics.label_indicators(true, guessed), "macro")
        assert direct is None or direct == sklearn_metrics.f1_score(true, guessed, average="macro")
        x, y = rng.standard_normal((int(rng.integers(1, 50)), 16)), rng.standard_normal((1, 16))
        x[0] = 0 if rng.random() < 0.2 else x[0]
        assert np.array_equal(models._euclidean_distances(x, y), pairwise.euclidean_distances(x, y))
        assert np.array_equal(models._cosine_similarity(x, y), pairwise.cosine_similarity(x, y))


def test_where_scipy_must_decide_it_is_asked() -> None:
    constant = np.ones(10)
    assert models._kendall_tau(constant, np.arange(10.0)) is None
    assert models._pearson_r(constant, np.arange(10.0)) is None
    assert models._pearson_r(np.array([1.0, 2.0]), np.array([2.0, 1.0])) is None  # n = 2: scipy rounds
    assert models._kendall_tau(np.array([1.0, np.nan, 3.0]), np.arange(3.0)) is None
    with pytest.warns(stats.ConstantInputWarning):
        assert np.isnan(models.regression_metrics(constant, np.arange(10.0))["pearsonr"])


def test_a_scirepeval_run_imports_neither_scikit_learn_nor_scipy_stats(tmp_path: Path) -> None:
    """The whole benchmark on a small synthetic copy, in the lightning environment's problem (the one SciRepEval's
    README installs), in a fresh interpreter."""
    from scidocs_eval.data.scirepeval import write_embeddings_jsonl
    from scidocs_eval.evaluation.task import TASKS, task_names
    from scidocs_eval.tasks.scirepeval import write_synthetic_scirepeval

    vectors = write_synthetic_scirepeval(tmp_path / "data", seed=0, dim=8)
    embeddings = write_embeddings_jsonl(tmp_path / "embeddings.jsonl", vectors)
    params = [f"--task-param={name}.environment=lightning" for name in task_names(benchmark="scirepeval")
              if "environment" in TASKS[name].parameter_constraints]
    probe = ("import sys\nfrom scidocs_eval.cli.main import main\nstatus = main(sys.argv[1:])\n"
             "print(status, sorted({m.split('.')[0] for m in sys.modules} & {'sklearn', 'pandas'}), "
             "'scipy.stats' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe, "run", "--benchmark", "scirepeval", "--data",
                           str(tmp_path / "data"), "--embeddings", str(embeddings), "--no-cache", "--quiet", "-o",
                           str(tmp_path / "results.json"), *params], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "0 [] False"


def test_kendall_tau_leaves_large_inputs_to_scipy_with_the_same_number() -> None:
    """The pair count is n²: above KENDALL_DIRECT_MOST items scipy counts, and the metric is scipy's τ-b."""
    from scipy import stats

    rng = np.random.default_rng(5)
    gold = rng.integers(0, 50, models.KENDALL_DIRECT_MOST + 1).astype(np.float64)
    predicted = gold + rng.normal(size=len(gold))
    assert models._kendall_tau(gold, predicted) is None
    assert models.regression_metrics(gold, predicted)["kendalltau"] == models.rounded(
        stats.kendalltau(gold, predicted)[0])
    assert models._kendall_tau(gold[:-1], predicted[:-1]) == stats.kendalltau(gold[:-1], predicted[:-1])[0]
