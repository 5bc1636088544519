"""MAG/MeSH classification: our SVM grid against scikit-learn's, zero vectors, macro F1, splits, bad csv files."""

from __future__ import annotations

import csv
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import f1_score
from sklearn.model_selection import GridSearchCV
from sklearn.svm import LinearSVC

from scidocs_eval.errors import InputError, MissingEmbeddingsError
from scidocs_eval.evaluation import metrics
from scidocs_eval.evaluation.task import get_task
from scidocs_eval.evaluators.linear_svm import LinearSVMGrid
from scidocs_eval.formats.embeddings import EmbeddingStore
from scidocs_eval.formats.suite import Suite
from scidocs_eval.tasks.classification import OFFICIAL_C_GRID
from tests.builders import score_task


def blobs(n: int, dim: int, classes: int, spread: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Overlapping Gaussian classes (not separable): (n, dim) float32 features and (n,) labels."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((classes, dim))
    labels = rng.integers(classes, size=n)
    return (centers[labels] + spread * rng.standard_normal((n, dim))).astype(np.float32), labels


def sklearn_grid(x: np.ndarray, y: np.ndarray, grid: tuple[float, ...] = OFFICIAL_C_GRID) -> GridSearchCV:
    svm = LinearSVC(loss="squared_hinge", dual=False, fit_intercept=False, tol=1e-8, max_iter=100000)
    return GridSearchCV(svm, {"C": list(grid)}, cv=3).fit(x, y)


@pytest.mark.parametrize("gram_budget", [0, 2**30], ids=["conjugate-gradients", "per-class-factors"])
def test_both_newton_solvers_reach_scikit_learns_model(gram_budget: int) -> None:
    """Nearly separable data, where few points violate the margin at large C (the Woodbury updates) and many
    at small C (the Gram rebuilds and, under its condition bound, CG)."""
    x, y = blobs(400, 48, 4, spread=0.5, seed=7)
    for c in (1e-4, 1e-2, 1.0, 100.0):
        ours = LinearSVMGrid(c_grid=(c,), gram_budget=gram_budget).fit(x, y)
        reference = LinearSVC(C=c, loss="squared_hinge", dual=False, fit_intercept=False, tol=1e-12,
                              max_iter=10**6).fit(x, y)
        np.testing.assert_allclose(ours.coef_.T, reference.coef_, rtol=1e-4, atol=1e-6 * np.abs(reference.coef_).max())


@pytest.mark.parametrize("classes", [5, 2])
def test_grid_matches_scikit_learn(classes: int) -> None:
    x, y = blobs(600, 32, classes, spread=2.5, seed=classes)
    x_test, _ = blobs(300, 32, classes, spread=2.5, seed=100 + classes)
    ours = LinearSVMGrid(c_grid=OFFICIAL_C_GRID, folds=3).fit(x, y)
    reference = sklearn_grid(x, y)
    assert ours.best_c_ == reference.best_params_["C"]
    np.testing.assert_allclose(ours.cv_accuracy_, reference.cv_results_["mean_test_score"], atol=1e-12)
    np.testing.assert_array_equal(ours.predict(x_test), reference.predict(x_test))
    assert 0.3 < max(ours.cv_accuracy_) < 1.0, "the problem should be learnable but not separable"


def test_same_model_whatever_the_number_of_worker_processes() -> None:
    """1 process (folds in turn) and 6 (two groups of classes per fold, one refit group per process)."""
    x, y = blobs(450, 24, 5, spread=1.5, seed=11)
    serial, split = (LinearSVMGrid(c_grid=OFFICIAL_C_GRID, n_jobs=n_jobs).fit(x, y) for n_jobs in (1, 6))
    assert split.best_c_ == serial.best_c_ and split.cv_accuracy_ == serial.cv_accuracy_
    np.testing.assert_allclose(split.coef_, serial.coef_, rtol=1e-9, atol=1e-12)


def test_ties_in_cv_accuracy_go_to_the_smallest_c() -> None:
    x, y = blobs(90, 4, 3, spread=0.01, seed=3)
    grid = (100.0, 1.0, 1e-4, 0.01)
    ours = LinearSVMGrid(c_grid=grid).fit(x, y)
    assert ours.cv_accuracy_ == [1.0, 1.0, 1.0, 1.0]
    assert ours.best_c_ == 1e-4
    assert sklearn_grid(x, y, tuple(sorted(grid))).best_params_["C"] == 1e-4


def write_labels(path: Path, rows: list[tuple[str, int]] | list[list[str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["pid", "class_label"])
        writer.writerows(rows)


@pytest.fixture(scope="module")
def mag_suite(tmp_path_factory: pytest.TempPathFactory):
    """A MAG task of 600 train / 150 val / 150 test papers, with absent and empty embeddings in each split."""
    root = tmp_path_factory.mktemp("mag")
    x, y = blobs(900, 16, 4, spread=2.0, seed=7)
    ids = [f"p{i}" for i in range(900)]
    splits = {"train": slice(0, 600), "val": slice(600, 750), "test": slice(750, 900)}
    for split, part in splits.items():
        write_labels(root / "mag" / f"{split}.csv", list(zip(ids[part], y[part].tolist())))
    absent = {ids[i] for i in (0, 5, 610, 760, 761)}
    empty = {ids[i] for i in (1, 620, 770)}
    mapping = {pid: ([] if pid in empty else vector) for pid, vector in zip(ids, x) if pid not in absent}
    features = x.copy()
    features[[i for i, pid in enumerate(ids) if pid in absent | empty]] = 0
    return Suite(root), EmbeddingStore.from_mapping(mapping), features, y, splits


@pytest.mark.parametrize("split", ["test", "val"])
def test_task_equals_scikit_learn_with_zero_vectors(mag_suite, split: str) -> None:
    suite, store, features, y, splits = mag_suite
    result = score_task(get_task("mag"), suite, store, split=split)
    reference = sklearn_grid(features[splits["train"]], y[splits["train"]])
    predicted = reference.predict(features[splits[split]])
    expected = round(100 * f1_score(y[splits[split]], predicted, average="macro"), 2)
    assert result.metrics == {"f1": expected}
    assert result.details["C"] == reference.best_params_["C"]
    missing, empty = {"test": (2, 1), "val": (1, 1)}[split]
    assert result.coverage == {"train_papers": 600, "train_missing": 2, "train_empty": 1,
                               f"{split}_papers": 150, f"{split}_missing": missing, f"{split}_empty": empty}


def test_val_and_test_scores_differ(mag_suite) -> None:
    suite, store, *_ = mag_suite
    task = get_task("mag")
    assert score_task(task, suite, store, split="val").metrics != score_task(task, suite, store, split="test").metrics


def test_missing_error_names_the_split(mag_suite) -> None:
    suite, store, *_ = mag_suite
    with pytest.raises(MissingEmbeddingsError, match=r"^task mag: 2 train papers have no embedding: p0, p5$"):
        score_task(get_task("mag"), suite, store, missing="error")


def test_custom_grid_parameter(mag_suite) -> None:
    suite, store, *_ = mag_suite
    result = score_task(get_task("mag", c_grid=(0.5,)), suite, store)
    assert result.details["C"] == 0.5 and list(result.details["cv_accuracy"]) == ["0.5"]


@pytest.mark.parametrize("row, message", [
    (["p1", "2", "extra"], "expected 2 columns (paper_id,class_label), got 3"),
    (["p1"], "expected 2 columns (paper_id,class_label), got 1"),
    (["p1", "two"], "field 'class_label' is string 'two' (not an integer), expected an integer"),
])
def test_malformed_csv_names_file_and_line(tmp_path: Path, row: list[str], message: str) -> None:
    write_labels(tmp_path / "mesh" / "train.csv", [["p0", "1"], row])
    write_labels(tmp_path / "mesh" / "test.csv", [["p0", "1"]])
    with pytest.raises(InputError) as caught:
        score_task(get_task("mesh"), Suite(tmp_path), EmbeddingStore.from_mapping({"p0": [1.0]}))
    assert str(caught.value) == f"{tmp_path / 'mesh' / 'train.csv'}:3: {message}"


def test_csv_without_rows(tmp_path: Path) -> None:
    write_labels(tmp_path / "mesh" / "test.csv", [])
    with pytest.raises(InputError, match="no rows after the header"):
        Suite(tmp_path).labels("mesh", "test")
    (tmp_path / "mesh" / "test.csv").write_text("", encoding="utf-8")
    with pytest.raises(InputError, match=r"test\.csv: file is empty \(expected a header row\)"):
        Suite(tmp_path).labels("mesh", "test")


def test_f1_score_without_scikit_learn_is_scikit_learns_bit_for_bit() -> None:
    """The macro F1 the classification tasks print, computed without importing scikit-learn, equals f1_score's
    before rounding: integer and string labels, classes only one side has, and the cases it hands to f1_score."""
    rng = np.random.default_rng(4)
    for _ in range(300):
        n, classes = int(rng.integers(1, 60)), int(rng.integers(1, 20))
        gold, predicted = rng.integers(0, classes, n), rng.integers(0, classes + 2, n)
        for pair in ((gold, predicted), (gold.astype(str), predicted.astype(str))):
            assert metrics.f1_score(*pair, "macro") == f1_score(*pair, average="macro")
        binary_gold, binary_predicted = gold % 2, predicted % 2
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # f1_score's zero division, which it decides
            assert metrics.f1_score(binary_gold, binary_predicted, "binary") == \
                f1_score(binary_gold, binary_predicted, average="binary")
    assert metrics.label_indicators(np.array([0.5, 1.0]), np.array([0.5, 1.0])) is None  # f1_score decides
    assert metrics.macro_f1(np.array([2, 0, 2, 1]), np.array([2, 1, 2, 1])) == round(100 * f1_score(
        [2, 0, 2, 1], [2, 1, 2, 1], average="macro"), 2)


def test_a_scidocs_run_imports_neither_scikit_learn_nor_scipy_stats(tiny_suite: Suite, tmp_path: Path) -> None:
    """MAG and MeSH (the SVM grid's stratified folds, macro F1) and the ranking tasks, in a fresh interpreter:
    importing scikit-learn was about two seconds of such a run."""
    probe = ("import sys\nfrom scidocs_eval.cli.main import main\nstatus = main(sys.argv[1:])\n"
             "print(status, sorted({m.split('.')[0] for m in sys.modules} & {'sklearn', 'pandas'}), "
             "'scipy.stats' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe, "baseline", "random", "--data", str(tiny_suite.root),
                           "--tasks", "mag,mesh,coview,coread,cite,cocite", "--no-cache", "--quiet", "--out-dir",
                           str(tmp_path)], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "0 [] False"
