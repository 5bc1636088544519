"""Confidence intervals and paired significance tests from the per-item results each task keeps.

Each task's `TaskResult.items` holds what its metrics average (see docs/significance.md):

- ranking, unit "query": per query the value of each metric (`{"ids", "map": [...], "ndcg": [...]}`); the
  metric is their mean ×100.
- classification, unit "paper": per test paper the gold label and the prediction (`{"ids", "gold",
  "predicted"}`); the metric is macro F1 ×100, recomputed on every resample.
- recommendation, unit "impression": per test impression its propensity weight and, per ranker seed, its nDCG
  and P@1 terms (`{"ids", "weight", "seeds", "adj-NDCG": [[...] per seed], "adj-P@1": [...]}`); per seed the
  metric is the weighted mean of the terms, and the reported metric is the mean over seeds.

`ItemMetric.from_items` builds the right estimator; it recomputes the printed metric (`value`), a bootstrap
interval (`interval`), and against another run on the same items a paired-bootstrap interval of the difference
(`paired_interval`) and a paired test (`paired_p_value`: randomization; recomm: two-level bootstrap).
All values are ×100 like the metrics.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.metrics import macro_f1, percent
from scidocs_eval.lazy_modules import lazy_module

np = lazy_module("numpy", __name__)

CONFIDENCE = 0.95
RESAMPLES = 10_000
"""Default number of bootstrap resamples and of random permutations."""
BATCH = 500
"""Resamples processed at once: bounds memory at BATCH × n_items values per array."""


def _percentile_interval(samples: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    tail = 50 * (1 - confidence)
    low, high = np.percentile(samples, [tail, 100 - tail])
    return float(low), float(high)


def _two_sided_p(null: np.ndarray, observed: float, exact: bool = False) -> float:
    """Share of the null distribution at least as extreme as `observed` (absolute value); Monte Carlo
    p-values count the observed arrangement too, (1 + hits) / (1 + resamples), so they are never 0."""
    tolerance = 1e-12 * max(1.0, abs(observed))
    hits = int(np.sum(np.abs(null) >= abs(observed) - tolerance))
    return hits / len(null) if exact else (1 + hits) / (1 + len(null))


def _coin_flips(rng: np.random.Generator, resamples: int, n: int) -> np.ndarray:
    """(resamples, n) float64 of 0/1, each entry independent with probability 1/2 (8 per random byte)."""
    return _unpacked(_coin_bytes(rng, resamples, n), n)


def _coin_bytes(rng: np.random.Generator, resamples: int, n: int) -> np.ndarray:
    """(resamples, ⌈n/8⌉) uint8: the random bits of `_coin_flips`, packed (a caller unpacks them in chunks)."""
    return rng.integers(0, 256, size=(resamples, (n + 7) // 8), dtype=np.uint8)


def _unpacked(random_bytes: np.ndarray, n: int, dtype: type | str = "float64") -> np.ndarray:
    """(rows, n) of 0/1 from `_coin_bytes`'s rows."""
    return np.unpackbits(random_bytes, axis=1, count=n).astype(dtype)


def _sign_flips(rng: np.random.Generator, resamples: int, n: int) -> np.ndarray:
    """(resamples, n) float64 of ±1, each entry independent with probability 1/2."""
    return 2 * _coin_flips(rng, resamples, n) - 1


def _batches(resamples: int) -> list[int]:
    return [min(BATCH, resamples - start) for start in range(0, resamples, BATCH)]


def _resampled_counts(rng: np.random.Generator, size: int, n: int) -> np.ndarray:
    """(size, n) float64: how often each of n items is drawn in each of `size` resamples of n."""
    drawn = rng.integers(0, n, size=(size, n))
    drawn += (np.arange(size) * n)[:, None]
    return np.bincount(drawn.ravel(), minlength=size * n).reshape(size, n).astype(np.float64)


class ItemMetric(ABC):
    """One metric of one task as a function of its items (`ids`, in a fixed order)."""

    unit: str

    def __init__(self, ids: list[str]):
        self.ids = list(ids)

    @classmethod
    def from_items(cls, items: Mapping[str, Any], metric: str) -> ItemMetric:
        """The estimator of `metric` for a task's `items` (dispatch on `items["unit"]`)."""
        kinds: dict[str, type[ItemMetric]] = {"query": MeanItems, "iteration": MeanItems, "paper": MacroF1Items,
                                              "impression": PropensityItems, "sample": StatisticItems}
        unit = items.get("unit")
        if unit not in kinds:
            raise ScidocsEvalError(f"per-item results of unknown unit {unit!r}")
        estimator = kinds[unit].build(items, metric)
        estimator.unit = unit  # one class serves several units (queries, few-shot iterations)
        return estimator

    @classmethod
    @abstractmethod
    def build(cls, items: Mapping[str, Any], metric: str) -> ItemMetric:
        """The estimator of `metric` from `items`."""

    @abstractmethod
    def reordered(self, order: np.ndarray) -> ItemMetric:
        """The same metric on the items taken in `order` (indices into `ids`)."""

    @abstractmethod
    def value(self) -> float:
        """The metric as the task prints it (×100, rounded to 2 decimals)."""

    @abstractmethod
    def interval(self, resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, float]:
        """95% bootstrap interval of the metric (×100)."""

    @abstractmethod
    def paired_interval(self, other: ItemMetric, resamples: int = RESAMPLES, seed: int = 0
                        ) -> tuple[float, float]:
        """95% paired-bootstrap interval of other − self (×100); both on the same items, same order."""

    @abstractmethod
    def paired_p_value(self, other: ItemMetric, resamples: int = RESAMPLES, seed: int = 0) -> float:
        """Two-sided p-value of a paired test of other − self = 0 (see each class)."""

    def paired_test(self, other: ItemMetric, resamples: int = RESAMPLES, seed: int = 0
                    ) -> tuple[tuple[float, float], float]:
        """(`paired_interval`, `paired_p_value`) of other against self."""
        return self.paired_interval(other, resamples, seed), self.paired_p_value(other, resamples, seed)

    @abstractmethod
    def _metric_from_counts(self, rng: np.random.Generator, *counts: np.ndarray) -> tuple[np.ndarray, ...]:
        """The metric ×100 on resamples given as item counts, one (batch,) array per (batch, n) `counts` array;
        any other random draw (the recommendation ranker's seeds) is shared by all of them. NaN where a
        resample holds no item."""

    def subset_test(self, keep: np.ndarray, resamples: int = RESAMPLES, seed: int = 0
                    ) -> tuple[tuple[float, float], float]:
        """95% interval and two-sided p-value of (metric over the items where `keep`) − (metric over all items).

        Paired bootstrap: each resample draws n items from all of them; the metric over the whole draw and over
        its kept items make one difference. The p-value is the bootstrap test of that difference (the share of
        resampled differences at least as far from the observed one as it is from 0), as `compare` does for
        recommendation.
        """
        keep = np.asarray(keep, dtype=bool)
        rng = np.random.default_rng(seed)
        samples = []
        for size in _batches(resamples):
            counts = _resampled_counts(rng, size, len(self.ids))
            whole, part = self._metric_from_counts(rng, counts, counts * keep)
            samples.append(part - whole)
        differences = np.concatenate(samples)
        differences = differences[np.isfinite(differences)]
        observed = self.reordered(np.flatnonzero(keep)).value() - self.value()
        return _percentile_interval(differences), _two_sided_p(differences - observed, observed)


class MeanItems(ItemMetric):
    """A metric that is the mean of per-item values (ranking MAP and nDCG per query).

    Args:
        ids: (n,) item ids.
        values: (n,) per-item values in [0, 1].
    """

    unit = "query"

    def __init__(self, ids: list[str], values: np.ndarray):
        super().__init__(ids)
        self.values = np.asarray(values, dtype=np.float64)

    @classmethod
    def build(cls, items: Mapping[str, Any], metric: str) -> MeanItems:
        return cls(items["ids"], items[metric])

    def reordered(self, order: np.ndarray) -> MeanItems:
        reordered = MeanItems([self.ids[i] for i in order], self.values[order])
        reordered.unit = self.unit
        return reordered

    def value(self) -> float:
        return percent(float(np.mean(self.values))) if len(self.values) else 0.0

    def interval(self, resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, float]:
        return mean_intervals(100 * self.values[None], resamples, seed)[0]

    def paired_interval(self, other: ItemMetric, resamples: int = RESAMPLES, seed: int = 0
                        ) -> tuple[float, float]:
        return mean_intervals(100 * self._differences(other)[None], resamples, seed)[0]

    def paired_p_value(self, other: ItemMetric, resamples: int = RESAMPLES, seed: int = 0) -> float:
        """Sign-flip test of the mean per-item difference: exact (all 2^n flips, by scipy) when 2^n ≤
        `resamples`, else `resamples` random flips (vectorised numpy)."""
        differences = self._differences(other)
        n = len(differences)
        if n < 63 and 2 ** n <= resamples:
            from scipy import stats

            return float(stats.permutation_test((differences,), _mean, permutation_type="samples",
                                                n_resamples=resamples, vectorized=True).pvalue)
        rng = np.random.default_rng(seed)
        # Σ sᵢdᵢ with sᵢ = 2bᵢ − 1: one matrix product with the coin flips b
        null = np.concatenate([2 * (_coin_flips(rng, size, n) @ differences) - differences.sum()
                               for size in _batches(resamples)])
        return _two_sided_p(null, float(differences.sum()))

    def _differences(self, other: ItemMetric) -> np.ndarray:
        assert isinstance(other, MeanItems)
        return other.values - self.values

    def _metric_from_counts(self, rng: np.random.Generator, *counts: np.ndarray) -> tuple[np.ndarray, ...]:
        return tuple(_ratio(100 * (c @ self.values), c.sum(1)) for c in counts)


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, NaN where the denominator is 0."""
    return np.divide(numerator, denominator, out=np.full(len(numerator), np.nan), where=denominator > 0)


def _mean(values: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(values, axis=axis)


MEAN_SLICE = 50
"""Resamples of one batch whose means are taken at once: their gathered values stay in the cache."""


def bootstrap_means(values: np.ndarray, resamples: int = RESAMPLES, seed: int = 0) -> np.ndarray:
    """(m, resamples): the mean of each row of `values` (m, n) on each bootstrap resample of its n items, one set
    of resamples for every row.

    The resamples are `scipy.stats.bootstrap`'s (`rng=np.random.default_rng(seed)`, batches of `BATCH`: each batch
    draws a (batch, n) matrix of item indices) and each mean is numpy's over the drawn values in drawn order, so
    each row's means are those scipy computes for it alone, bit for bit. Rows equal bit for bit are resampled once.
    """
    values = np.ascontiguousarray(values, dtype=np.float64)
    n = values.shape[1]
    _, first, inverse = np.unique(values.view(np.uint64), axis=0, return_index=True, return_inverse=True)
    distinct = values[first]
    rng = np.random.default_rng(seed)
    means = np.empty((len(distinct), resamples))
    start = 0
    for size in _batches(resamples):
        drawn = rng.integers(0, n, size=(size, n))
        for part in range(0, size, MEAN_SLICE):
            columns = slice(start + part, start + min(part + MEAN_SLICE, size))
            for row, row_values in enumerate(distinct):
                means[row, columns] = row_values[drawn[part:part + MEAN_SLICE]].mean(axis=-1)
        start += size
    return means[inverse.ravel()]


def scipy_percentile_intervals(samples: np.ndarray, confidence: float = CONFIDENCE) -> np.ndarray:
    """(m, 2) the percentile interval of each row of `samples` (m, resamples) as `scipy.stats.bootstrap` takes it
    (`scipy.stats.quantile`, its default method "linear", at (1 − confidence)/2 and 1 − that, in its arithmetic: the
    same bits); NaN for a row holding a NaN, as scipy propagates it."""
    alpha = (1 - confidence) / 2
    probabilities = np.array([alpha, 1 - alpha])
    ordered = np.sort(samples, axis=-1)
    n = ordered.shape[-1]
    position = probabilities * n + (1 - probabilities)
    upper = position // 1
    lower = upper - 1
    weight = np.where(lower < 0, 0.0, position % 1)
    lower, upper = np.clip(lower, 0, n - 1).astype(np.int64), np.clip(upper, 0, n - 1).astype(np.int64)
    intervals = (1 - weight) * ordered[:, lower] + weight * ordered[:, upper]
    return np.where(np.isnan(samples).any(axis=-1, keepdims=True), np.nan, intervals)


def mean_intervals(values: np.ndarray, resamples: int = RESAMPLES, seed: int = 0) -> list[tuple[float, float]]:
    """The 95% percentile bootstrap interval of the mean of each row of `values` (m, n): for each row what
    `scipy.stats.bootstrap((row,), np.mean, method="percentile", batch=BATCH, rng=np.random.default_rng(seed))`
    returns, from one set of resamples for all rows (`bootstrap_means`, `scipy_percentile_intervals`)."""
    intervals = scipy_percentile_intervals(bootstrap_means(values, resamples, seed))
    return [(float(low), float(high)) for low, high in intervals]


class MacroF1Items(ItemMetric):
    """Macro F1 over per-paper gold labels and predictions (MAG, MeSH).

    Like scikit-learn's `f1_score(average="macro")`, the classes averaged are those present (in the gold
    labels or the predictions) in the sample at hand; F1 of a class = 2·TP / (n_gold + n_predicted).

    Resampling works on patterns: papers with the same (gold, prediction[, other prediction]) are
    interchangeable for F1, so resampling n papers with replacement is drawing the pattern counts from a
    multinomial. Per-class counts are then one matrix product per batch.

    Args:
        ids: (n,) paper ids.
        gold: (n,) int class labels.
        predicted: (n,) int predicted labels.
    """

    unit = "paper"

    def __init__(self, ids: list[str], gold: np.ndarray, predicted: np.ndarray):
        super().__init__(ids)
        self.gold = np.asarray(gold, dtype=np.int64)
        self.predicted = np.asarray(predicted, dtype=np.int64)

    @classmethod
    def build(cls, items: Mapping[str, Any], metric: str) -> MacroF1Items:
        if metric not in ("f1", "f1_macro"):
            raise ScidocsEvalError(f"per-paper results give macro F1, not {metric!r}")
        return cls(items["ids"], items["gold"], items["predicted"])

    def reordered(self, order: np.ndarray) -> MacroF1Items:
        return MacroF1Items([self.ids[i] for i in order], self.gold[order], self.predicted[order])

    def value(self) -> float:
        return macro_f1(self.gold, self.predicted)

    def interval(self, resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, float]:
        patterns, counts, k = _patterns(self.gold, self.predicted)
        gold, predicted = _class_indicators(patterns[:, 0], k), _class_indicators(patterns[:, 1], k)
        rng = np.random.default_rng(seed)
        samples = []
        for size in _batches(resamples):
            drawn = rng.multinomial(len(self.gold), counts / counts.sum(), size=size).astype(np.float64)
            samples.append(100 * _macro_from_counts(drawn @ (gold * predicted), drawn @ gold, drawn @ predicted))
        return _percentile_interval(np.concatenate(samples))

    def paired_interval(self, other: ItemMetric, resamples: int = RESAMPLES, seed: int = 0
                        ) -> tuple[float, float]:
        patterns, counts, k = _patterns(self.gold, self.predicted, self._check(other).predicted)
        gold, mine, theirs = (_class_indicators(patterns[:, column], k) for column in range(3))
        rng = np.random.default_rng(seed)
        samples = []
        for size in _batches(resamples):
            drawn = rng.multinomial(len(self.gold), counts / counts.sum(), size=size).astype(np.float64)
            n_gold = drawn @ gold
            samples.append(100 * (_macro_from_counts(drawn @ (gold * theirs), n_gold, drawn @ theirs)
                                  - _macro_from_counts(drawn @ (gold * mine), n_gold, drawn @ mine)))
        return _percentile_interval(np.concatenate(samples))

    def paired_p_value(self, other: ItemMetric, resamples: int = RESAMPLES, seed: int = 0) -> float:
        """Approximate randomization test: each paper's two predictions are swapped with probability 1/2 and
        the F1 difference recomputed; exact (every swap pattern, by scipy) when 2^n ≤ `resamples`."""
        theirs_predicted = self._check(other).predicted
        n = len(self.gold)
        patterns, counts, k = _patterns(self.gold, self.predicted, theirs_predicted)
        classes = np.unique(np.concatenate([self.gold, self.predicted, theirs_predicted]))
        if n < 63 and 2 ** n <= resamples:
            def statistic(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
                gold = np.broadcast_to(np.searchsorted(classes, self.gold), a.shape)
                return batched_macro_f1(gold, b, k) - batched_macro_f1(gold, a, k)
            from scipy import stats

            return float(stats.permutation_test(
                (np.searchsorted(classes, self.predicted), np.searchsorted(classes, theirs_predicted)), statistic,
                permutation_type="samples", n_resamples=resamples, vectorized=True).pvalue)
        gold, mine, theirs = (_class_indicators(patterns[:, column], k) for column in range(3))
        n_gold = counts @ gold
        hits_a, predicted_a = counts @ (gold * mine), counts @ mine
        hits_b, predicted_b = counts @ (gold * theirs), counts @ theirs
        # swapping a paper moves A's counts by (B's indicators − A's) and B's the other way; only papers whose
        # two predictions differ move anything
        differs = self.predicted != theirs_predicted
        gold_d, mine_d, theirs_d = (_class_indicators(np.searchsorted(classes, labels[differs]), k)
                                    for labels in (self.gold, self.predicted, theirs_predicted))
        change = np.hstack([gold_d * (theirs_d - mine_d), theirs_d - mine_d])
        rng = np.random.default_rng(seed)
        null = []
        for size in _batches(resamples):
            moved = _coin_flips(rng, size, len(change)) @ change
            null.append(_macro_from_counts(hits_b - moved[:, :k], n_gold, predicted_b - moved[:, k:])
                        - _macro_from_counts(hits_a + moved[:, :k], n_gold, predicted_a + moved[:, k:]))
        observed = float(_macro_from_counts(hits_b, n_gold, predicted_b) - _macro_from_counts(hits_a, n_gold,
                                                                                              predicted_a))
        return _two_sided_p(np.concatenate(null), observed)

    def _metric_from_counts(self, rng: np.random.Generator, *counts: np.ndarray) -> tuple[np.ndarray, ...]:
        classes, coded = np.unique(np.concatenate([self.gold, self.predicted]), return_inverse=True)
        gold, predicted = (_class_indicators(column, len(classes)) for column in coded.reshape(2, -1))
        out = []
        for c in counts:
            values = 100 * _macro_from_counts(c @ (gold * predicted), c @ gold, c @ predicted)
            out.append(np.where(c.sum(1) > 0, values, np.nan))
        return tuple(out)

    def _check(self, other: ItemMetric) -> MacroF1Items:
        assert isinstance(other, MacroF1Items)
        if not np.array_equal(self.gold, other.gold):
            raise ScidocsEvalError("the two results have different gold labels for the same papers")
        return other


def _patterns(*columns: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """(distinct rows of the label columns as class indices (m, n_columns), their counts (m,) float64, number
    of classes k)."""
    classes, coded = np.unique(np.concatenate(columns), return_inverse=True)
    patterns, counts = np.unique(coded.reshape(len(columns), -1).T, axis=0, return_counts=True)
    return patterns, counts.astype(np.float64), len(classes)


def _class_indicators(labels: np.ndarray, k: int) -> np.ndarray:
    """(m, k) one-hot float64 of class indices (m,)."""
    return np.eye(k)[labels]


def _macro_from_counts(hits: np.ndarray, n_gold: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    denominator = n_gold + predicted
    present = denominator > 0
    f1 = np.divide(2 * hits, denominator, out=np.zeros_like(denominator, dtype=np.float64), where=present)
    return f1.sum(-1) / present.sum(-1)


def batched_macro_f1(gold: np.ndarray, predicted: np.ndarray, k: int) -> np.ndarray:
    """Macro F1 (fraction) of each row of (..., n) class indices in [0, k); shape (...)."""
    gold, predicted = np.broadcast_arrays(np.asarray(gold), np.asarray(predicted))
    leading = gold.shape[:-1]
    gold2, predicted2 = gold.reshape(-1, gold.shape[-1]), predicted.reshape(-1, gold.shape[-1])
    rows = len(gold2)
    offsets = (np.arange(rows) * k * k)[:, None]
    confusion = np.bincount((offsets + gold2 * k + predicted2).ravel(), minlength=rows * k * k)
    confusion = confusion.reshape(rows, k, k)
    hits = np.diagonal(confusion, axis1=1, axis2=2)
    return _macro_from_counts(hits, confusion.sum(2), confusion.sum(1)).reshape(leading)


class PropensityItems(ItemMetric):
    """Propensity-adjusted nDCG or P@1 of the recommendation task, averaged over the ranker's seeds.

    Per seed s the metric is Σᵢ wᵢ·xₛᵢ / Σᵢ wᵢ (×100, rounded to 2 decimals, as the task prints each seed);
    the reported metric is their mean, rounded to 2 decimals.

    Its noise has two sources, the impressions and the rankers' seeds, and intervals resample both: the
    impressions with replacement (one draw shared by both runs of a paired interval) and the seeds with
    replacement (one draw for both runs when they used the same seeds, else one each). Before the seeds are
    resampled, each seed's deviation from the seed mean is scaled by √(S / (S − 1)), so that the resampled
    seed variance is unbiased (a plain bootstrap of S values has (S − 1)/S of it). The paired p-value is the
    two-level bootstrap test of the same draws: the share of resampled differences at least as far from the
    observed difference as the observed difference is from 0 (see docs/significance.md for why not a
    randomization test here).

    Args:
        ids: (n,) impression ids ("line:query_id" of the split's CSV).
        weights: (n,) inverse propensity of each impression's clicked position.
        terms: (n_seeds, n) per seed and impression the metric's term (nDCG: 1 / log2(2 + rank − 1); P@1: 0/1).
        seeds: (n_seeds,) the rankers' seeds (default 0, 1, ...).
    """

    unit = "impression"

    def __init__(self, ids: list[str], weights: np.ndarray, terms: np.ndarray, seeds: list[int] | None = None):
        super().__init__(ids)
        self.weights = np.asarray(weights, dtype=np.float64)
        self.terms = np.atleast_2d(np.asarray(terms, dtype=np.float64))
        self.seeds = list(seeds) if seeds is not None else list(range(len(self.terms)))
        n_seeds = len(self.terms)
        seed_mean = self.terms.mean(0)
        scale = np.sqrt(n_seeds / (n_seeds - 1)) if n_seeds > 1 else 1.0
        self._resampling_terms = seed_mean + scale * (self.terms - seed_mean)

    @classmethod
    def build(cls, items: Mapping[str, Any], metric: str) -> PropensityItems:
        return cls(items["ids"], items["weight"], items[metric], items.get("seeds"))

    def reordered(self, order: np.ndarray) -> PropensityItems:
        return PropensityItems([self.ids[i] for i in order], self.weights[order], self.terms[:, order], self.seeds)

    def value(self) -> float:
        per_seed = [percent(float(self.weights @ terms / self.weights.sum())) for terms in self.terms]
        return float(np.round(np.mean(per_seed), 2))

    def _resampled_metric(self, counts: np.ndarray, seed_counts: np.ndarray) -> np.ndarray:
        """(batch,) metric ×100 on each resample: impression counts (batch, n), seed counts (batch, n_seeds)."""
        weighted = counts * self.weights
        per_seed = (weighted @ self._resampling_terms.T) / weighted.sum(1, keepdims=True)
        return 100 * np.mean(per_seed * seed_counts, axis=1)

    def _seed_counts(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """(size, n_seeds) how often each seed is drawn in each resample of the seeds (with replacement)."""
        n_seeds = len(self.terms)
        return rng.multinomial(n_seeds, np.full(n_seeds, 1 / n_seeds), size=size)

    def _metric_from_counts(self, rng: np.random.Generator, *counts: np.ndarray) -> tuple[np.ndarray, ...]:
        seed_counts = self._seed_counts(rng, len(counts[0]))
        with np.errstate(invalid="ignore", divide="ignore"):
            return tuple(self._resampled_metric(c, seed_counts) for c in counts)

    def interval(self, resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, float]:
        rng = np.random.default_rng(seed)
        samples = [self._resampled_metric(_resampled_counts(rng, size, len(self.weights)), self._seed_counts(rng, size))
                   for size in _batches(resamples)]
        return _percentile_interval(np.concatenate(samples))

    def _paired_differences(self, other: ItemMetric, resamples: int, seed: int) -> np.ndarray:
        """(resamples,) other − self (×100) on two-level paired resamples."""
        assert isinstance(other, PropensityItems)
        if not np.allclose(self.weights, other.weights, rtol=1e-12, atol=0):
            raise ScidocsEvalError("the two results have different propensity weights for the same impressions")
        rng = np.random.default_rng(seed)
        samples = []
        for size in _batches(resamples):
            counts = _resampled_counts(rng, size, len(self.weights))
            mine = self._seed_counts(rng, size)
            theirs = mine if other.seeds == self.seeds else other._seed_counts(rng, size)
            samples.append(other._resampled_metric(counts, theirs) - self._resampled_metric(counts, mine))
        return np.concatenate(samples)

    def paired_interval(self, other: ItemMetric, resamples: int = RESAMPLES, seed: int = 0
                        ) -> tuple[float, float]:
        return _percentile_interval(self._paired_differences(other, resamples, seed))

    def paired_p_value(self, other: ItemMetric, resamples: int = RESAMPLES, seed: int = 0) -> float:
        return self.paired_test(other, resamples, seed)[1]

    def paired_test(self, other: ItemMetric, resamples: int = RESAMPLES, seed: int = 0
                    ) -> tuple[tuple[float, float], float]:
        """Interval and p-value from one set of two-level resamples."""
        assert isinstance(other, PropensityItems)
        differences = self._paired_differences(other, resamples, seed)
        observed = 100 * float((other.terms.mean(0) - self.terms.mean(0)) @ self.weights / self.weights.sum())
        return _percentile_interval(differences), _two_sided_p(differences - observed, observed)


def _f1_binary(gold: np.ndarray, predicted: np.ndarray, counts: np.ndarray) -> np.ndarray:
    hits = np.sum(counts * gold * predicted, -1)
    denominator = np.sum(counts * gold, -1) + np.sum(counts * predicted, -1)
    return np.divide(2 * hits, denominator, out=np.zeros_like(hits, dtype=np.float64), where=denominator > 0)


def _f1_macro_multilabel(gold: np.ndarray, predicted: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Mean over all labels of each label's F1 (0 for a label neither given nor predicted), as scikit-learn."""
    hits = np.einsum("bn,bnl->bl", counts, gold * predicted)
    denominator = np.einsum("bn,nl->bl", counts, gold) + np.einsum("bn,bnl->bl", counts, predicted)
    return np.divide(2 * hits, denominator, out=np.zeros_like(hits), where=denominator > 0).mean(-1)


def _pearsonr(gold: np.ndarray, predicted: np.ndarray, counts: np.ndarray) -> np.ndarray:
    weights = counts / counts.sum(-1, keepdims=True)
    gold_centred = gold - np.sum(weights * gold, -1, keepdims=True)
    predicted_centred = predicted - np.sum(weights * predicted, -1, keepdims=True)
    covariance = np.sum(weights * gold_centred * predicted_centred, -1)
    spread = np.sqrt(np.sum(weights * gold_centred**2, -1) * np.sum(weights * predicted_centred**2, -1))
    return np.divide(covariance, spread, out=np.zeros_like(covariance), where=spread > 0)


_PAIRWISE_KENDALL_ITEMS = 2000
"""Up to this many items, Kendall's τ of a batch of resamples is one pass over the (n, n) pair signs (one row, the
metric itself: scipy's O(n log n) τ-b)."""


def _kendalltau(gold: np.ndarray, predicted: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Kendall's τ-b (scipy's) of each resample, the items repeated as often as drawn (0 where undefined)."""
    if len(counts) > 1 and len(gold) <= _PAIRWISE_KENDALL_ITEMS and (predicted == predicted[:1]).all():
        return _kendalltau_pairwise(gold, predicted[0], counts)
    from scipy import stats

    values = []
    for predicted_row, count in zip(predicted, counts):
        drawn = count.astype(np.int64)
        tau = stats.kendalltau(np.repeat(gold, drawn), np.repeat(predicted_row, drawn))[0]
        values.append(0.0 if np.isnan(tau) else tau)
    return np.asarray(values)


def _kendalltau_pairwise(gold: np.ndarray, predicted: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """τ-b = (C − D) / √((n₀ − n₁)(n₀ − n₂)) from item counts c: C − D = ½·cSc (S: sign products of item pairs),
    n₀ = N(N − 1)/2 pairs, n₁ = ½(c·[gᵢ = gⱼ]·c − N) pairs tied in gold (copies of one item included), n₂ in the
    predictions."""
    signs = np.sign(gold[:, None] - gold[None, :]) * np.sign(predicted[:, None] - predicted[None, :])
    total = counts.sum(-1)
    pairs = total * (total - 1) / 2

    def quadratic(matrix: np.ndarray) -> np.ndarray:
        return np.einsum("bi,bi->b", counts @ matrix, counts)

    tied_gold = (quadratic((gold[:, None] == gold[None, :]).astype(np.float64)) - total) / 2
    tied_predicted = (quadratic((predicted[:, None] == predicted[None, :]).astype(np.float64)) - total) / 2
    denominator = np.sqrt((pairs - tied_gold) * (pairs - tied_predicted))
    difference = quadratic(signs) / 2
    return np.divide(difference, denominator, out=np.zeros_like(difference), where=denominator > 0)


STATISTICS: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]] = {
    "f1_binary": _f1_binary, "f1_macro_multilabel": _f1_macro_multilabel, "pearsonr": _pearsonr,
    "kendalltau": _kendalltau}
"""statistic(gold (n[, labels]), predictions (batch, n[, labels]), counts (batch, n)) -> (batch,) fractions: the
metric on resamples given as how often each item is drawn."""


class StatisticItems(ItemMetric):
    """A metric recomputed from per-item gold values and predictions by one of `STATISTICS` (binary or
    multi-label F1, Kendall's τ, Pearson's r): bootstrap intervals resample the items; the paired test swaps each
    item's two predictions with probability 1/2 (approximate randomization).

    Args:
        ids: (n,) item ids.
        statistic: a key of `STATISTICS`.
        gold: (n,) or (n, labels) gold values.
        predicted: the same shape, the predictions.
    """

    unit = "sample"

    def __init__(self, ids: list[str], statistic: str, gold: np.ndarray, predicted: np.ndarray):
        super().__init__(ids)
        if statistic not in STATISTICS:
            raise ScidocsEvalError(f"per-item results name an unknown statistic {statistic!r}")
        self.statistic = statistic
        self.gold = np.asarray(gold, dtype=np.float64)
        self.predicted = np.asarray(predicted, dtype=np.float64)

    @classmethod
    def build(cls, items: Mapping[str, Any], metric: str) -> StatisticItems:
        return cls(items["ids"], items["statistic"][metric], items["gold"], items["predicted"])

    def reordered(self, order: np.ndarray) -> StatisticItems:
        return StatisticItems([self.ids[i] for i in order], self.statistic, self.gold[order], self.predicted[order])

    def _metric_from_counts(self, rng: np.random.Generator, *counts: np.ndarray) -> tuple[np.ndarray, ...]:
        return tuple(self._on(self.predicted, c) for c in counts)

    def _on(self, predicted: np.ndarray, counts: np.ndarray) -> np.ndarray:
        predicted = np.broadcast_to(predicted, (len(counts), *self.predicted.shape)) if predicted.ndim == \
            self.predicted.ndim else predicted
        return 100 * STATISTICS[self.statistic](self.gold, predicted, counts)

    def value(self) -> float:
        return float(np.round(self._on(self.predicted, np.ones((1, len(self.ids))))[0], 2))

    def _resampled(self, rng: np.random.Generator, size: int) -> np.ndarray:
        n = len(self.ids)
        return rng.multinomial(n, np.full(n, 1 / n), size=size).astype(np.float64)

    def interval(self, resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, float]:
        rng = np.random.default_rng(seed)
        return _percentile_interval(np.concatenate([self._on(self.predicted, self._resampled(rng, size))
                                                    for size in _batches(resamples)]))

    def _check(self, other: ItemMetric) -> StatisticItems:
        assert isinstance(other, StatisticItems)
        if not np.array_equal(self.gold, other.gold):
            raise ScidocsEvalError("the two results have different gold values for the same items")
        return other

    def paired_interval(self, other: ItemMetric, resamples: int = RESAMPLES, seed: int = 0
                        ) -> tuple[float, float]:
        theirs = self._check(other)
        rng = np.random.default_rng(seed)
        samples = []
        for size in _batches(resamples):
            counts = self._resampled(rng, size)
            samples.append(theirs._on(theirs.predicted, counts) - self._on(self.predicted, counts))
        return _percentile_interval(np.concatenate(samples))

    def paired_p_value(self, other: ItemMetric, resamples: int = RESAMPLES, seed: int = 0) -> float:
        theirs = self._check(other)
        rng = np.random.default_rng(seed)
        n = len(self.ids)
        null = []
        for size in _batches(resamples):
            swap = _coin_flips(rng, size, n).astype(bool).reshape(size, n, *([1] * (self.predicted.ndim - 1)))
            mine = np.where(swap, theirs.predicted, self.predicted)
            others = np.where(swap, self.predicted, theirs.predicted)
            ones = np.ones((size, n))
            null.append(self._on(others, ones) - self._on(mine, ones))
        ones = np.ones((1, n))
        observed = float(theirs._on(theirs.predicted, ones)[0] - self._on(self.predicted, ones)[0])
        return _two_sided_p(np.concatenate(null), observed)


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm–Bonferroni adjusted p-values (same order as `p_values`), capped at 1."""
    p_values = np.asarray(p_values, dtype=np.float64)
    m = len(p_values)
    order = np.argsort(p_values, kind="stable")
    adjusted = np.maximum.accumulate((m - np.arange(m)) * p_values[order])
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    return out


def subset_items(items: Mapping[str, Any], keep: Sequence[int]) -> dict[str, Any]:
    """`items` restricted to the items at positions `keep` (a task's per-item results, any unit): per-item lists
    indexed; the recommendation's per-seed lists indexed within each seed; "unit", "seeds" and "statistic" (which
    statistic a metric recomputes) kept."""
    per_seed = items.get("unit") == "impression"
    out: dict[str, Any] = {}
    for key, value in items.items():
        if key in ("unit", "seeds", "statistic"):
            out[key] = value
        elif per_seed and key not in ("ids", "weight"):
            out[key] = [[row[i] for i in keep] for row in value]
        else:
            out[key] = [value[i] for i in keep]
    return out


def task_metrics(items: Mapping[str, Any], metrics: list[str]) -> dict[str, ItemMetric]:
    """metric name -> its estimator, for the metrics of `metrics` that `items` covers."""
    if not items:
        return {}
    return {metric: ItemMetric.from_items(items, metric) for metric in metrics}


def confidence_intervals(items: Mapping[str, Any], metrics: list[str], resamples: int = RESAMPLES,
                         seed: int = 0) -> dict[str, list[float]]:
    """metric -> [low, high], the 95% bootstrap interval (×100, rounded to 2 decimals); {} without items, and no
    interval for a metric over fewer than 2 items (a resample of one item is that item). The metrics that are
    means of per-item values share one set of resamples (`mean_intervals`), each interval the one its own
    `interval` gives."""
    estimators = {metric: estimator for metric, estimator in task_metrics(items, metrics).items()
                  if len(estimator.ids) >= 2}
    means = [metric for metric, estimator in estimators.items() if isinstance(estimator, MeanItems)]
    intervals: dict[str, tuple[float, float]] = {}
    if means:
        matrix = np.stack([100 * estimators[metric].values for metric in means])  # type: ignore[attr-defined]
        intervals.update(zip(means, mean_intervals(matrix, resamples, seed)))
    return {metric: [round(bound, 2) for bound in (intervals[metric] if metric in intervals
                                                   else estimator.interval(resamples, seed))]
            for metric, estimator in estimators.items()}
