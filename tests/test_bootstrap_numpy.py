"""Bootstrap intervals at array speed equal `scipy.stats.bootstrap`'s bit for bit (same percentile method, same
draws from the same seed), for every metric of a task from one set of resamples."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from scidocs_eval.statistics.significance import (
    BATCH,
    CONFIDENCE,
    MeanItems,
    confidence_intervals,
    mean_intervals,
)


def _scipy(row: np.ndarray, resamples: int, seed: int) -> tuple[float, float]:
    result = stats.bootstrap((row,), lambda values, axis=-1: np.mean(values, axis=axis), n_resamples=resamples,
                             confidence_level=CONFIDENCE, method="percentile", vectorized=True, batch=BATCH,
                             rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def _rows(rng: np.random.Generator, n: int) -> np.ndarray:
    """Per-item values as metrics have them: continuous, 0/1, few levels, constant, a repeated row, negatives."""
    continuous = 100 * rng.random(n)
    return np.stack([continuous, 100.0 * (rng.random(n) < 0.3), np.round(100 * rng.random(n), -1), np.full(n, 42.5),
                     continuous, 100 * rng.normal(size=n), np.zeros(n)])


@pytest.mark.parametrize(("n", "resamples", "seed"), [(2, 1000, 0), (3, 999, 5), (57, 1234, 1), (400, 10_000, 0),
                                                      (1000, 700, 3)])
def test_every_row_equals_scipy_bootstrap_bit_for_bit(n: int, resamples: int, seed: int) -> None:
    values = _rows(np.random.default_rng(n), n)
    ours = mean_intervals(values, resamples, seed)
    assert ours == [_scipy(row, resamples, seed) for row in values]


def test_a_nan_item_gives_a_nan_interval_as_scipy_does() -> None:
    values = np.array([[1.0, 2.0, np.nan, 4.0], [1.0, 2.0, 3.0, 4.0]])
    with pytest.warns(stats.DegenerateDataWarning):
        theirs = _scipy(values[0], 500, 0)
    assert np.isnan(theirs).all() and np.isnan(mean_intervals(values, 500, 0)[0]).all()
    assert mean_intervals(values, 500, 0)[1] == _scipy(values[1], 500, 0)


def test_a_tasks_intervals_from_one_resampling_equal_each_metrics_own() -> None:
    rng = np.random.default_rng(7)
    ids = [f"q{i}" for i in range(300)]
    items = {"unit": "query", "ids": ids, **{f"m{j}": rng.random(300).tolist() for j in range(6)}}
    shared = confidence_intervals(items, [f"m{j}" for j in range(6)], resamples=2000, seed=4)
    for metric, interval in shared.items():
        own = MeanItems(ids, np.array(items[metric])).interval(2000, 4)
        assert interval == [round(bound, 2) for bound in own] == [round(b, 2) for b in _scipy(
            100 * np.array(items[metric]), 2000, 4)]
