"""Classification scored as MTEB 2.x scores its classification tasks (`AbsTaskClassification`).

Each of `n_experiments` experiments trains a logistic regression (scikit-learn's, `max_iter=100`,
`random_state=seed`) on at most `samples_per_label` training documents per label and predicts every test document.
The training documents of experiment i: the training indices shuffled by `numpy.random.RandomState(seed)` i + 1
times in a row (each experiment shuffles the previous experiment's order again, with a fresh generator of the same
seed), then the first `samples_per_label` of each label in that order. The scores are the means over the
experiments of accuracy, macro and weighted F1, precision and recall (and, with two labels, average precision).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence
from typing import Any

from scidocs_eval.lazy_modules import lazy_module

np = lazy_module("numpy", __name__)

SEED = 42
"""MTEB's default task seed."""
SAMPLES_PER_LABEL = 8
N_EXPERIMENTS = 10
CLASSIFICATION_METRICS = ("accuracy", "f1", "f1_weighted", "precision", "precision_weighted", "recall",
                          "recall_weighted")
BINARY_METRICS = ("ap", "ap_weighted")
"""average precision, which MTEB computes only when the test labels are two (NaN otherwise: not computed here)."""


def undersampled_experiments(labels: Sequence[Hashable], n_experiments: int = N_EXPERIMENTS,
                             samples_per_label: int = SAMPLES_PER_LABEL, seed: int = SEED) -> list[list[int]]:
    """The training indices of each experiment, in MTEB's order (`_undersample_data`)."""
    order = list(range(len(labels)))
    experiments = []
    for _ in range(n_experiments):
        np.random.RandomState(seed).shuffle(order)
        taken: dict[Hashable, int] = defaultdict(int)
        chosen = []
        for index in order:
            if taken[labels[index]] < samples_per_label:
                chosen.append(index)
                taken[labels[index]] += 1
        experiments.append(chosen)
    return experiments


def experiment_scores(y_true: Sequence[Hashable], y_pred: np.ndarray) -> dict[str, float]:
    """One experiment's scores (MTEB's `_calculate_scores`; average precision only with two test labels)."""
    from sklearn.metrics import accuracy_score, average_precision_score, f1_score, precision_score, recall_score

    scores = {"accuracy": accuracy_score(y_true, y_pred), "f1": f1_score(y_true, y_pred, average="macro"),
              "f1_weighted": f1_score(y_true, y_pred, average="weighted"),
              "precision": precision_score(y_true, y_pred, average="macro"),
              "precision_weighted": precision_score(y_true, y_pred, average="weighted"),
              "recall": recall_score(y_true, y_pred, average="macro"),
              "recall_weighted": recall_score(y_true, y_pred, average="weighted")}
    if len(np.unique(y_true)) == 2:
        scores["ap"] = average_precision_score(y_true, y_pred, average="macro")
        scores["ap_weighted"] = average_precision_score(y_true, y_pred, average="weighted")
    return {name: float(value) for name, value in scores.items()}


def run_experiments(train_vectors: np.ndarray, train_labels: Sequence[Hashable], test_vectors: np.ndarray,
                    test_labels: Sequence[Hashable], experiments: Sequence[Sequence[int]],
                    seed: int = SEED) -> list[dict[str, float]]:
    """Each experiment's scores: a logistic regression fitted on its rows of `train_vectors`, scored on the test."""
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits

    results = []
    for chosen in experiments:
        model = LogisticRegression(max_iter=100, random_state=seed)
        with threadpool_limits(1):  # 8 papers a label: threads only cost (as k-means in evaluators/clustering.py)
            model.fit(train_vectors[list(chosen)], [train_labels[i] for i in chosen])
        results.append(experiment_scores(test_labels, model.predict(test_vectors)))
    return results


def mteb_scores(per_experiment: Sequence[dict[str, float]]) -> dict[str, Any]:
    """MTEB's scores dict: each metric's mean over the experiments, and `scores_per_experiment`."""
    names = [name for name in (*CLASSIFICATION_METRICS, *BINARY_METRICS) if name in per_experiment[0]]
    return {**{name: float(np.mean([scores[name] for scores in per_experiment])) for name in names},
            "scores_per_experiment": [dict(scores) for scores in per_experiment]}
