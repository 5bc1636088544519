"""Significance groups over many results: which models of a leaderboard differ (`rank_results`).

For one ranking (a task's main score, or a benchmark average over several task metrics) every pair of models is
tested on the items both scored, with the paired tests of `significance` (ranking metrics: sign-flip test;
macro F1: prediction-swap randomization test; every other metric, the recommendation's included: the paired
bootstrap test), Holm's correction over the pairs of that ranking, and a compact letter display (`letter_display`,
Piepho's insert-and-absorb): models that share a letter are not significantly different.

The resampling is shared across the pairs: one draw of signs, swaps or resampled items serves every model, each
model's statistic is computed once per draw, and a pair's null statistic is the difference of two models'
(linear for the sign flips and the swaps). Each pair's test is exactly the one `compare` runs (a different random
stream); 30 models cost 30 statistics per draw, not 435.

A benchmark average (the mean of several task metrics) is tested by resampling the items within each task (a
stratified randomization / bootstrap test): the same draw for every metric of one task (MAP and nDCG of a query
move together), independent draws across tasks. Not a test over the tasks' means: with 7 to 12 tasks a paired test
over them has 2^7 sign patterns at most and, after Holm over many pairs, can never reject.

The overall order is by mean rank across tasks (each task's main score, rank 1 = best), with Friedman's test and,
when it rejects, Nemenyi's post-hoc test (studentized range; it controls the error over all pairs itself).

Only comparable results are ranked together (`cohorts`): the same split, the same suite files where both read one,
the same task settings, the same leaked-items exclusion; the others form cohorts of their own, with the reason.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.comparison import ALPHA, MIN_SHARED, UNIT_NAMES, checked_estimators
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.task import TASKS
from scidocs_eval.progress import progress_bar
from scidocs_eval.statistics.significance import (
    RESAMPLES,
    ItemMetric,
    MacroF1Items,
    MeanItems,
    PropensityItems,
    StatisticItems,
    _coin_bytes,
    _resampled_counts,
    _unpacked,
    holm,
)

LEADERBOARD_FORMAT = "scidocs-eval-leaderboard/1"
RESOLUTION = 2
"""Resamples are at least RESOLUTION × pairs / alpha: the smallest Monte Carlo p-value, 1 / (resamples + 1), times
the number of pairs (Holm's first factor) is then alpha / RESOLUTION, so a clear difference can be significant."""
BATCH = 500
"""Resamples a draw holds: every test of a cohort draws its resamples in batches of this many (one random state per
task and batch), so a benchmark average combines the same resamples of its tasks."""
BATCH_VALUES = 1_600_000
"""Within a draw, arrays hold about this many values at most (12.8 MB of float64: below glibc's largest mmap
threshold, so the allocator reuses them rather than mapping fresh pages): a test computes its resamples'
statistics in chunks of rows (or of pairs) that fit. Smaller chunks cost more in numpy calls than they gain in
cache (65,536: twice the CPU time on 30 models); the p-values do not depend on it (tested)."""
THREADS = min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
"""Tasks resampled at once, one a thread (numpy's and scipy's loops run outside the GIL), at most 8 (each holds a
few arrays of BATCH_VALUES); the numbers do not depend on it: each task has its own random stream."""
_TOLERANCE = 1e-9
"""Null statistics within this (×100 metric points) of the observed one count as at least as extreme: floating
point sums of the same numbers in another order differ by far less."""

Component = tuple[str, str]
"""(task, metric) of a benchmark average."""


# ----------------------------------------------------------------------------------------------- letter display


def letter_display(significant: np.ndarray, order: Sequence[int] | None = None) -> list[str]:
    """Compact letter display of a symmetric (m, m) boolean matrix of significant differences: per model its
    letters, such that two models share a letter exactly when they are not significantly different.

    Piepho's insert-and-absorb (J. Comput. Graph. Stat. 13, 2004): start with one column holding every model; for
    each significant pair, split every column holding both into a copy without the one and a copy without the
    other, then drop every column contained in another. Letters go to the columns in the order of their best
    member in `order` (default 0, 1, ...: give the models best first so that the best gets "a").
    """
    m = len(significant)
    order = list(range(m)) if order is None else list(order)
    columns: list[int] = [(1 << m) - 1]  # bit i set: model i is in the column
    for i in range(m):
        for j in range(i + 1, m):
            if not significant[i, j]:
                continue
            both = (1 << i) | (1 << j)
            if not any(column & both == both for column in columns):
                continue  # no column holds both: nothing to split
            split = []
            for column in columns:
                split += [column & ~(1 << i), column & ~(1 << j)] if column & both == both else [column]
            columns = _absorbed(split)
    position = {model: rank for rank, model in enumerate(order)}
    columns.sort(key=lambda column: sorted(position[i] for i in range(m) if column >> i & 1))
    letters = [""] * m
    for index, column in enumerate(columns):
        for i in range(m):
            if column >> i & 1:
                letters[i] += _letter(index)
    return letters


def _absorbed(columns: list[int]) -> list[int]:
    """The columns (bit sets) that no other column contains, each once, in their order."""
    unique = list(dict.fromkeys(c for c in columns if c))
    if max(unique, default=0) < 1 << 62:  # bit sets of up to 62 models: one comparison of every two at once
        bits = np.array(unique, dtype=np.int64)
        inside = (bits[:, None] & bits[None, :]) == bits[:, None]
        np.fill_diagonal(inside, False)
        return [c for c, contained in zip(unique, inside.any(1)) if not contained]
    return [c for c in unique if not any(c != other and c & other == c for other in unique)]


_GREEK = "αβγδεζηθικλμνξοπρστυφχψω"


def _letter(index: int) -> str:
    """One character per letter, so that a model's letters read one by one: a..z, A..Z, α..ω, then CJK
    ideographs (a display needs that many only for odd patterns of significance)."""
    latin = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    if index < len(latin):
        return latin[index]
    if index < len(latin) + len(_GREEK):
        return _GREEK[index - len(latin)]
    return chr(0x4E00 + index - len(latin) - len(_GREEK))


def check_letters(letters: Sequence[str], significant: np.ndarray) -> None:
    """Raise unless `letters` is a valid letter display of `significant` (used by the tests and after each
    display is built: a wrong display is never printed)."""
    for i in range(len(letters)):
        for j in range(i + 1, len(letters)):
            shares = bool(set(letters[i]) & set(letters[j]))
            if shares == bool(significant[i, j]):
                raise AssertionError(f"letter display {letters} is invalid for models {i} and {j}")


# ------------------------------------------------------------------------------------------ shared resampling


NullBatches = Callable[[np.random.Generator, int], np.ndarray]
"""draw(rng, size) -> (size, pairs) null statistics of every pair, centred at 0 under the null hypothesis."""


@dataclass
class JointTest:
    """One metric of one task over every model, resampled once for all pairs (i < j; statistic j − i)."""

    observed: np.ndarray
    """(pairs,) value of model j − value of model i, ×100, unrounded."""
    draw: NullBatches
    test: str
    """the test's name for people."""


def _pairs(m: int) -> tuple[np.ndarray, np.ndarray]:
    first, second = np.triu_indices(m, k=1)
    return first, second


def _pair_differences(values: np.ndarray, out: np.ndarray) -> None:
    """out[:, pair] = values[:, j] − values[:, i] for the pairs i < j in `_pairs`' order, written model by model
    (slices, no gathered copies); `values` (rows, models), `out` (rows, pairs)."""
    m = values.shape[1]
    start = 0
    for i in range(m - 1):
        np.subtract(values[:, i + 1:], values[:, i:i + 1], out=out[:, start:start + m - 1 - i])
        start += m - 1 - i


def _chunks(rows: int, width: int) -> list[slice]:
    """`rows` split into consecutive slices of at most BATCH_VALUES // `width` rows (at least one)."""
    step = max(1, BATCH_VALUES // max(1, width))
    return [slice(start, min(start + step, rows)) for start in range(0, rows, step)]


def joint_test(estimators: Sequence[ItemMetric]) -> JointTest:
    """The paired test of every pair of `estimators` (one model each, all on the same items in the same order)."""
    first, second = _pairs(len(estimators))
    if all(isinstance(e, MeanItems) for e in estimators):
        return _sign_flip_test(estimators, first, second)
    if all(isinstance(e, MacroF1Items) for e in estimators):
        return _swap_test(estimators, first, second)
    if all(isinstance(e, PropensityItems) for e in estimators) and _same_impressions(estimators):
        return _propensity_test(estimators, first, second)
    if all(isinstance(e, StatisticItems) and e.statistic == estimators[0].statistic  # type: ignore[attr-defined]
           for e in estimators) and estimators[0].statistic in _SUMS:  # type: ignore[attr-defined]
        return _statistic_test(estimators, first, second)
    return _bootstrap_test(estimators, first, second)


def _same_impressions(estimators: Sequence[ItemMetric]) -> bool:
    one = estimators[0]
    return all(e.seeds == one.seeds and np.allclose(e.weights, one.weights, rtol=1e-12, atol=0)  # type: ignore[attr-defined]
               for e in estimators)


def _propensity_test(estimators: Sequence[ItemMetric], first: np.ndarray, second: np.ndarray) -> JointTest:
    """The recommendation's two-level paired bootstrap test (`PropensityItems.paired_test`) for every pair at once:
    models with the same rankers' seeds and impressions share the impression and the seed draws, and every model's
    per-seed weighted sums are one product."""
    one: PropensityItems = estimators[0]  # type: ignore[assignment]
    n_seeds = len(one.terms)
    terms = np.concatenate([e._resampling_terms for e in estimators]).T  # type: ignore[attr-defined]
    values = np.array([_unrounded(e) for e in estimators])
    observed = values[second] - values[first]

    def draw(rng: np.random.Generator, size: int) -> np.ndarray:
        weighted = _resampled_counts(rng, size, len(one.weights)) * one.weights
        seed_counts = one._seed_counts(rng, size)
        out = np.empty((size, len(first)))
        for rows in _chunks(size, max(len(one.weights), terms.shape[1], len(first))):
            per_seed = ((weighted[rows] @ terms).reshape(-1, len(estimators), n_seeds)
                        / weighted[rows].sum(1)[:, None, None])
            resampled = 100 * np.mean(per_seed * seed_counts[rows, None, :], axis=2)
            _pair_differences(resampled, out[rows])
            out[rows] -= observed
        return out

    return JointTest(observed, draw, "paired bootstrap test")


def _sign_flip_test(estimators: Sequence[ItemMetric], first: np.ndarray, second: np.ndarray) -> JointTest:
    """Σ sᵢ(bᵢ − aᵢ)/n with random signs s = Σ sᵢbᵢ/n − Σ sᵢaᵢ/n: one product of the signs with every model's
    values."""
    values = np.column_stack([e.values for e in estimators]) * (100 / len(estimators[0].ids))  # type: ignore[attr-defined]
    totals = values.sum(0)
    n = len(values)

    def draw(rng: np.random.Generator, size: int) -> np.ndarray:
        random_bytes = _coin_bytes(rng, size, n)
        out = np.empty((size, len(first)))
        for rows in _chunks(size, max(n, len(first))):
            statistic = (2 * _unpacked(random_bytes[rows], n) - 1) @ values
            _pair_differences(statistic, out[rows])
        return out

    return JointTest(totals[second] - totals[first], draw, "sign-flip randomization test")


def _swap_test(estimators: Sequence[ItemMetric], first: np.ndarray, second: np.ndarray) -> JointTest:
    """Each paper's two predictions swapped with probability 1/2: swapping moves A's per-class counts (hits,
    predicted) by b·(X_B − X_A) and B's by the opposite, X a model's one-hot (hit, predicted) indicators. Only the
    differences of two X's count, so each model's X is taken relative to the papers' most frequent predictions
    (zero where it predicts that): one sparse product of the swaps with every model's serves all pairs. Then, per
    model A, its pairs with every later model B are sums of one model's counts and the later models' (no copies
    per pair); the numbers are those of the pair-by-pair formula, sums of the same integers."""

    gold = estimators[0].gold  # type: ignore[attr-defined]
    for estimator in estimators[1:]:
        if not np.array_equal(estimator.gold, gold):  # type: ignore[attr-defined]
            raise ScidocsEvalError("the results have different gold labels for the same papers")
    predictions = np.column_stack([e.predicted for e in estimators])  # type: ignore[attr-defined]
    classes, coded = np.unique(np.concatenate([gold[:, None], predictions], axis=1), return_inverse=True)
    coded = coded.reshape(len(gold), -1)
    k, m = len(classes), len(estimators)
    in_gold = np.bincount(coded[:, 0], minlength=k) > 0
    gold_first = np.empty(k, dtype=np.int64)  # the gold classes first: only they have hits
    gold_first[np.argsort(~in_gold, kind="stable")] = np.arange(k)
    coded = gold_first[coded]
    gold_coded, predicted_coded = coded[:, 0], coded[:, 1:]
    kg = int(in_gold.sum())
    width = kg + k  # per model: hits of the gold classes, then predictions of every class
    n_gold = np.bincount(gold_coded, minlength=k)[:kg].astype(np.float64)
    differs = np.flatnonzero((predicted_coded != predicted_coded[:, :1]).any(1))  # others move nothing
    base = np.zeros((m, width))
    for model in range(m):
        hit = predicted_coded[:, model] == gold_coded
        base[model, :kg] = np.bincount(gold_coded[hit], minlength=kg)
        base[model, kg:] = np.bincount(predicted_coded[:, model], minlength=k)
    indicators = _relative_indicators(gold_coded[differs], predicted_coded[differs], kg, k)

    def macro_f1(hits: np.ndarray, denominators: np.ndarray, predicted_other: np.ndarray) -> np.ndarray:
        """Macro F1 ×100 of (..., classes, size) counts over the classes present (scikit-learn's): a gold class
        always is; a class only predicted is when predicted (its F1 is 0). Overwrites `hits`."""
        np.divide(hits, denominators, out=hits)
        return 100 * (2 * hits.sum(-2)) / (kg + (predicted_other > 0).sum(-2))

    def draw(rng: np.random.Generator, size: int) -> np.ndarray:
        random_bytes = _coin_bytes(rng, size, len(differs))
        out = np.empty((size, len(first)))
        for resamples in _chunks(size, max(len(differs), m * width)):
            swaps = _unpacked(random_bytes[resamples], len(differs), np.float32)
            moved = np.asarray(indicators @ swaps.T, dtype=np.float64).reshape(m, width, len(swaps))
            hits, predicted, other = moved[:, :kg], moved[:, kg:2 * kg], moved[:, 2 * kg:]
            kept_hits = base[:, :kg, None] - hits
            kept_denominators = (n_gold + base[:, kg:2 * kg])[..., None] - predicted
            kept_other = base[:, 2 * kg:, None] - other
            start = 0
            for a in range(m - 1):
                later = slice(a + 1, m)
                b_f1 = macro_f1(kept_hits[later] + hits[a], kept_denominators[later] + predicted[a],
                                kept_other[later] + other[a])
                a_f1 = macro_f1(hits[later] + kept_hits[a], predicted[later] + kept_denominators[a],
                                other[later] + kept_other[a])
                out[resamples, start:start + m - 1 - a] = (b_f1 - a_f1).T
                start += m - 1 - a
        return out

    values = macro_f1(base[:, :kg, None].copy(), (n_gold + base[:, kg:2 * kg])[..., None], base[:, 2 * kg:, None])
    return JointTest(values[second, 0] - values[first, 0], draw, "prediction-swap randomization test")


def _relative_indicators(gold: np.ndarray, predicted: np.ndarray, kg: int, k: int) -> Any:
    """CSR (models × (kg + k), papers) float32: each model's one-hot hits (gold class) and predictions minus those
    of each paper's most frequent prediction; `gold` (papers,) and `predicted` (papers, models) class codes, the
    gold classes first."""
    from scipy import sparse

    papers, m = predicted.shape
    votes = np.bincount((np.arange(papers)[:, None] * k + predicted).ravel(), minlength=papers * k)
    mode = votes.reshape(papers, k).argmax(1)
    mode_hit = mode == gold
    rows, cols, signs = [], [], []
    for model in range(m):
        own = predicted[:, model]
        other = np.flatnonzero(own != mode)
        hit = own == gold
        hit_differs = np.flatnonzero(hit != mode_hit)
        width = model * (kg + k)
        rows += [other, other, hit_differs]
        cols += [width + kg + own[other], width + kg + mode[other], width + gold[hit_differs]]
        signs += [np.ones(len(other)), -np.ones(len(other)), np.where(hit[hit_differs], 1.0, -1.0)]
    return sparse.csr_matrix((np.concatenate(signs), (np.concatenate(cols), np.concatenate(rows))),
                             shape=(m * (kg + k), papers), dtype=np.float32)


def _statistic_test(estimators: Sequence[ItemMetric], first: np.ndarray, second: np.ndarray) -> JointTest:
    """Paired bootstrap test of a statistic of gold values and predictions (`StatisticItems`) with every model's
    statistic on the shared resampled items from sums of the counts (`_SUMS`), one product for all models."""
    one: StatisticItems = estimators[0]  # type: ignore[assignment]
    for estimator in estimators[1:]:
        if not np.array_equal(estimator.gold, one.gold):  # type: ignore[attr-defined]
            raise ScidocsEvalError("the results have different gold values for the same items")
    resampled, description = _SUMS[one.statistic](one.gold, np.stack([e.predicted for e in estimators]),  # type: ignore[attr-defined]
                                                  one.statistic)
    n = len(one.ids)
    values = resampled(np.ones((1, n)))[0]
    observed = values[second] - values[first]

    def draw(rng: np.random.Generator, size: int) -> np.ndarray:
        counts = _resampled_counts(rng, size, n)
        out = np.empty((size, len(first)))
        for rows in _chunks(size, max(n, len(first))):
            statistic = resampled(counts[rows])
            _pair_differences(statistic, out[rows])
            out[rows] -= observed
        return out

    return JointTest(observed, draw, f"paired bootstrap test{description}")


StatisticOnCounts = Callable[[np.ndarray], np.ndarray]
"""statistic(counts (rows, n)) -> (rows, models) every model's statistic ×100 on resamples given as item counts."""


def _f1_sums(gold: np.ndarray, predicted: np.ndarray, statistic: str) -> tuple[StatisticOnCounts, str]:
    """Binary F1, or macro F1 over labels, of every model (`significance`'s f1_binary, f1_macro_multilabel, the
    same numbers): per label the counts summed over its hits, gold and predicted items, each label over the items
    that its gold or some model marks (the others add nothing). The sums are of integers, exact in float32."""
    m, n = predicted.shape[:2]
    gold = gold.reshape(n, -1)
    predicted = predicted.reshape(m, n, -1)
    per_label = []
    for label in range(gold.shape[1]):
        marked, hits = gold[:, label], predicted[:, :, label].T
        active = np.flatnonzero((marked != 0) | (hits != 0).any(1))
        per_label.append((active, np.column_stack([marked[active], marked[active, None] * hits[active],
                                                   hits[active]]).astype(np.float32)))

    def resampled(counts: np.ndarray) -> np.ndarray:
        counts = counts.astype(np.float32)
        hit_sums, denominator = np.empty((2, len(counts), m, len(per_label)))
        for label, (active, columns) in enumerate(per_label):
            sums = (counts[:, active] @ columns).astype(np.float64)
            hit_sums[:, :, label] = sums[:, 1:m + 1]
            denominator[:, :, label] = sums[:, :1] + sums[:, m + 1:]
        f1 = np.divide(2 * hit_sums, denominator, out=np.zeros_like(hit_sums), where=denominator > 0)
        return 100 * (f1[..., 0] if statistic == "f1_binary" else f1.mean(-1))

    return resampled, ""


def _kendall_sums(gold: np.ndarray, predicted: np.ndarray, statistic: str) -> tuple[StatisticOnCounts, str]:
    """Kendall's τ-b of every model: the pairs tied in the gold values and in each model's predictions exactly (from
    the counts of each tie group); the concordance Σ_{i<j} cᵢcⱼ·sᵢⱼ (sᵢⱼ = sgn(gᵢ − gⱼ)·sgn(pᵢ − pⱼ)) to first order
    around the items as scored (c = 1): cᵀh − ½·1ᵀh, hᵢ = Σⱼ sᵢⱼ (`_concordance`), exact at c = 1 and one product
    for every model; the rest, ½(c − 1)ᵀS(c − 1), carries about 1/n of the resampled variance. The exact τ of each
    resample costs O(n log n) per model and resample: hours for 30 models on SciRepEval's regression tasks."""
    m, n = predicted.shape
    concordance = _concordance(gold, predicted).astype(np.float64).T  # (n, m)
    half_total = concordance.sum(0) / 2
    tie_groups = [_tie_groups(gold)] + [_tie_groups(p) for p in predicted]

    def tied_pairs(counts: np.ndarray, total: np.ndarray, groups: tuple[np.ndarray, np.ndarray] | None,
                   squares: np.ndarray) -> np.ndarray:
        """(rows,) pairs of resampled items tied (copies of one item included): (Σ_group (Σ c)² − N) / 2;
        `squares` is Σ c², the sum where no two values are tied."""
        if groups is not None:
            order, starts = groups
            squares = (np.add.reduceat(counts[:, order], starts, axis=1) ** 2).sum(1)
        return (squares - total) / 2

    def resampled(counts: np.ndarray) -> np.ndarray:
        total = counts.sum(1)
        pairs = total * (total - 1) / 2
        squares = np.einsum("ij,ij->i", counts, counts)
        untied = pairs - tied_pairs(counts, total, None, squares)
        tied_gold = tied_pairs(counts, total, tie_groups[0], squares)
        difference = counts @ concordance - half_total
        denominator = np.column_stack([np.sqrt((pairs - tied_gold) * (
            untied if groups is None else pairs - tied_pairs(counts, total, groups, squares)))
            for groups in tie_groups[1:]])
        return 100 * np.divide(difference, denominator, out=np.zeros_like(difference), where=denominator > 0)

    return resampled, " (Kendall's τ to first order in the resampled items)"


_SUMS: dict[str, Callable[[np.ndarray, np.ndarray, str], tuple[StatisticOnCounts, str]]] = {
    "f1_binary": _f1_sums, "f1_macro_multilabel": _f1_sums, "kendalltau": _kendall_sums}
"""The statistics of `StatisticItems` that a joint test computes for every model from sums over the resampled
counts (Pearson's r, which no ranking tests, goes through each model's own `_metric_from_counts`)."""


def _tie_groups(values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(items ordered by value, start of each run of equal values) where some values repeat; None where none do."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    return (order, starts) if len(starts) < len(values) else None


def _concordance(gold: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """(m, n) int64 hᵢ = Σⱼ sgn(gᵢ − gⱼ)·sgn(pᵢ − pⱼ) for each model's predictions `predicted` (m, n) against `gold`
    (n,), in O(n log n · log(distinct gold values)): two items of different gold values first differ at one bit of
    their values' ranks; at each bit, within each block of ranks that agree above it, the items of the upper half
    meet those of the lower half, counted below and above in prediction by running counts in prediction order."""
    m, n = predicted.shape
    rank = np.unique(gold, return_inverse=True)[1].reshape(-1)
    predicted_rank = np.stack([np.unique(p, return_inverse=True)[1].reshape(-1) for p in predicted])
    concordance = np.zeros((m, n), dtype=np.int64)
    models = np.arange(m)[:, None]
    for bit in range(int(rank.max()).bit_length()):
        key = (rank >> (bit + 1))[None, :] * n + predicted_rank  # block, then prediction
        order = np.argsort(key, axis=1, kind="stable")
        key = np.take_along_axis(key, order, axis=1)
        upper = ((rank >> bit) & 1)[order]
        blocks, ties = _runs(key // n), _runs(key)
        concordance[models, order] += np.where(upper == 1, _balance(1 - upper, blocks, ties),
                                               -_balance(upper, blocks, ties))
    return concordance


def _balance(members: np.ndarray, blocks: tuple[np.ndarray, np.ndarray], ties: tuple[np.ndarray, np.ndarray]
             ) -> np.ndarray:
    """Per position of rows sorted by (block, prediction): how many `members` (0/1) of its block are predicted lower
    than it minus how many higher; `blocks` and `ties` the runs (`_runs`) of its block and of its prediction."""
    m, n = members.shape
    running = np.zeros((m, n + 1), dtype=np.int64)
    np.cumsum(members, axis=1, out=running[:, 1:])
    at = functools.partial(np.take_along_axis, running, axis=1)
    (block_start, block_end), (tie_start, tie_end) = blocks, ties
    return (at(tie_start) - at(block_start)) - (at(block_end + 1) - at(tie_end + 1))


def _runs(sorted_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each position of each row (sorted), the first and the last position of its run of equal values."""
    m, n = sorted_rows.shape
    positions = np.arange(n)
    change = sorted_rows[:, 1:] != sorted_rows[:, :-1]
    starts = np.maximum.accumulate(np.where(np.column_stack([np.ones(m, bool), change]), positions, 0), axis=1)
    ends = np.minimum.accumulate(np.where(np.column_stack([change, np.ones(m, bool)]), positions, n - 1)[:, ::-1],
                                 axis=1)[:, ::-1]
    return starts, ends


def _bootstrap_test(estimators: Sequence[ItemMetric], first: np.ndarray, second: np.ndarray) -> JointTest:
    """Paired bootstrap test: the same resampled items (and, recomm, the same resampled seeds where the rankers'
    seeds are the same) for every model; the null statistic is the resampled difference minus the observed one."""
    values = np.array([_unrounded(e) for e in estimators])
    observed = values[second] - values[first]
    seeds = [tuple(getattr(e, "seeds", ())) for e in estimators]

    def draw(rng: np.random.Generator, size: int) -> np.ndarray:
        counts = _resampled_counts(rng, size, len(estimators[0].ids))
        state = int(rng.integers(2**63))
        resampled = np.column_stack([e._metric_from_counts(np.random.default_rng([state, seeds.index(s)]), counts)[0]
                                     for e, s in zip(estimators, seeds)])
        return resampled[:, second] - resampled[:, first] - observed

    return JointTest(observed, draw, "paired bootstrap test")


def _unrounded(estimator: ItemMetric) -> float:
    """The metric ×100 before rounding (recomm: the mean over seeds of the weighted means)."""
    if isinstance(estimator, PropensityItems):
        return 100 * float(estimator.terms.mean(0) @ estimator.weights / estimator.weights.sum())
    return float(estimator._metric_from_counts(np.random.default_rng(0), np.ones((1, len(estimator.ids))))[0][0])


def _extreme(null: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """(pairs,) how many rows of `null` (size, pairs) are at least as far from 0 as `observed`."""
    with np.errstate(invalid="ignore"):
        return np.sum(np.abs(null) >= np.abs(observed) - _TOLERANCE * np.maximum(1, np.abs(observed)), axis=0)


def resamples_for(models: int, alpha: float = ALPHA, minimum: int = RESAMPLES) -> int:
    """Resamples enough for Holm over the pairs of `models` (see RESOLUTION), and at least `minimum`."""
    pairs = models * (models - 1) // 2
    return max(minimum, math.ceil(RESOLUTION * pairs / alpha))


# --------------------------------------------------------------------------------------------- the rankings


@dataclass
class RankedEntry:
    """One model in a ranking: its value (×100, as the results file prints it; an average: the mean of them),
    interval, letters and 1-based position."""

    label: str
    value: float
    ci: tuple[float, float] | None
    letters: str
    position: int


@dataclass
class Ranking:
    """Every model of a cohort on one task's metric or one benchmark average, best first, with the pairwise
    p-values (raw and Holm-adjusted, keyed "label A | label B")."""

    name: str
    metric: str
    components: list[Component]
    entries: list[RankedEntry]
    p_values: dict[str, float]
    p_holm: dict[str, float]
    test: str
    items: str
    """how many items of which unit the pairs were tested on (per task, for an average)."""
    resamples: int
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "metric": self.metric, "components": [list(c) for c in self.components],
                "test": self.test, "items": self.items, "resamples": self.resamples, "notes": self.notes,
                "entries": [{"label": e.label, "value": e.value, "ci": list(e.ci) if e.ci else None,
                             "group": e.letters, "position": e.position} for e in self.entries],
                "p_values": self.p_values, "p_holm": self.p_holm}


@dataclass
class MeanRanks:
    """The overall order: each model's mean rank over the cohort's tasks (main scores), Friedman's test and
    Nemenyi's post-hoc letters (all one group when Friedman does not reject or cannot run)."""

    labels: list[str]
    mean_rank: list[float]
    letters: list[str]
    tasks: list[str]
    friedman_statistic: float | None
    friedman_p: float | None
    critical_difference: float | None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"tasks": self.tasks, "friedman": {"statistic": self.friedman_statistic, "p_value": self.friedman_p},
                "post_hoc": "nemenyi", "critical_difference": self.critical_difference, "note": self.note,
                "entries": [{"label": label, "mean_rank": rank, "group": letters}
                            for label, rank, letters in zip(self.labels, self.mean_rank, self.letters)]}


@dataclass
class Cohort:
    """Results that may be ranked together (same split, suite files, task settings), with their rankings."""

    labels: list[str]
    split: str
    synthetic: bool
    rankings: list[Ranking]
    mean_ranks: MeanRanks | None
    reason: str = ""
    """why these results are not ranked with the first cohort ("" for the first)."""
    suites: list[str] = field(default_factory=list)
    """the suite folders the results name (`settings.data`), each once."""

    def to_dict(self) -> dict[str, Any]:
        return {"models": self.labels, "split": self.split, "synthetic": self.synthetic, "set_apart": self.reason,
                "rankings": [r.to_dict() for r in self.rankings],
                "mean_ranks": self.mean_ranks.to_dict() if self.mean_ranks else None}


@dataclass
class Leaderboard:
    """What `rank_results` returns: the cohorts, the first holding the most results."""

    cohorts: list[Cohort]
    alpha: float
    resamples: int | None
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return {"format": LEADERBOARD_FORMAT, "alpha": self.alpha, "seed": self.seed,
                "resamples": self.resamples or "auto", "correction": "holm over the pairs of each ranking",
                "cohorts": [c.to_dict() for c in self.cohorts]}


# -------------------------------------------------------------------------------------------- comparability


def comparability_problem(a: RunResult, b: RunResult) -> str | None:
    """Why `b`'s numbers cannot be tested against `a`'s, or None: another split, another suite file where both
    read one, other task settings for a task both ran, another missing-embedding rule or leaked-items exclusion."""
    split_a, split_b = a.settings.split, b.settings.split
    if split_a != split_b:
        return f"split {split_b} (not {split_a})"
    files_a, files_b = a.fingerprints.get("data", {}), b.fingerprints.get("data", {})
    differing = sorted(f for f in set(files_a) & set(files_b) if files_a[f] != files_b[f])
    if differing:
        return f"other suite files: {', '.join(differing[:3])}{' ...' if len(differing) > 3 else ''} differ"
    if a.settings.missing != b.settings.missing:
        return f"missing-embedding rule {b.settings.missing!r} (not {a.settings.missing!r})"
    params_a, params_b = a.settings.task_params, b.settings.task_params
    for task in (t for t in a.tasks if t in b.tasks):
        if (params_a.get(task) or {}) != (params_b.get(task) or {}):
            return f"task {task} settings {params_b.get(task) or {}} (not {params_a.get(task) or {}})"
    exclude_a, exclude_b = (r.settings.exclude for r in (a, b))
    if (exclude_a and exclude_a.sha256) != (exclude_b and exclude_b.sha256):
        return ("scored without the items an audit found leaked" if exclude_b else
                "scored on every item (the others without the items an audit found leaked)")
    return None


def cohorts(results: Sequence[RunResult]) -> list[tuple[list[int], str]]:
    """Indices of `results` grouped so that every two in a group are comparable; the largest group first (ties:
    the earliest), each other with why its first result is not comparable with the first group's."""
    groups: list[list[int]] = []
    for index, result in enumerate(results):
        home = next((g for g in groups if all(comparability_problem(results[i], result) is None for i in g)), None)
        if home is None:
            groups.append([index])
        else:
            home.append(index)
    groups.sort(key=lambda g: (-len(g), g[0]))
    main = groups[0]
    return [(group, "" if group is main else _set_apart_reason(results, main, group[0])) for group in groups]


def _set_apart_reason(results: Sequence[RunResult], main: list[int], index: int) -> str:
    problem = next(p for i in main if (p := comparability_problem(results[i], results[index])) is not None)
    return f"not comparable with the first group: {problem}"


# ------------------------------------------------------------------------------------------------- ranking


@dataclass
class _Aligned:
    """One task's metrics over every model of a cohort, on the items all of them scored."""

    estimators: dict[str, list[ItemMetric]]
    items: int
    unit: str
    note: str


def _aligned(task: str, metrics: Sequence[str], results: Sequence[RunResult], labels: Sequence[str]) -> _Aligned:
    per_model = [checked_estimators(task, result, label, metrics) for result, label in zip(results, labels)]
    units = {result.tasks[task].items["unit"] for result in results}
    if len(units) > 1:
        raise ScidocsEvalError(f"cannot rank task {task}: its per-item results are of different units "
                               f"({', '.join(sorted(units))})")
    unit = UNIT_NAMES.get(units.pop(), "items")
    ids = [result.tasks[task].items["ids"] for result in results]
    if all(i == ids[0] for i in ids):
        return _Aligned({m: [e[m] for e in per_model] for m in metrics}, len(ids[0]), unit, "")
    for label, model_ids in zip(labels, ids):
        if len(set(model_ids)) != len(model_ids):
            raise ScidocsEvalError(f"cannot rank task {task}: {label} lists one of its {unit} more than once and "
                                   "the results' items differ, so they cannot be paired")
    shared = set.intersection(*(set(i) for i in ids))
    order = [item for item in ids[0] if item in shared]
    for label, model_ids in zip(labels, ids):
        if len(order) < 2 or len(order) < MIN_SHARED * len(model_ids):
            raise ScidocsEvalError(f"cannot rank task {task}: only {len(order)} {unit} scored by every result "
                                   f"({label}: {len(model_ids)}); ranking over shared {unit} needs at least "
                                   f"{MIN_SHARED:.0%} of each one's (and 2)")
    positions = [{item: row for row, item in enumerate(model_ids)} for model_ids in ids]
    rows = [np.array([p[item] for item in order]) for p in positions]
    note = (f"{task}: the results scored {min(map(len, ids))} to {max(map(len, ids))} {unit}; the pairs are tested "
            f"over the {len(order)} every result scored (the values shown are the files')")
    return _Aligned({m: [e[m].reordered(r) for e, r in zip(per_model, rows)] for m in metrics}, len(order), unit,
                    note)


def _ranking(name: str, metric: str, components: list[Component], values: np.ndarray,
             cis: Sequence[tuple[float, float] | None], labels: Sequence[str], hits: np.ndarray, resamples: int,
             alpha: float, test: str, items: str, notes: list[str]) -> Ranking:
    m = len(labels)
    first, second = _pairs(m)
    p_values = (1 + hits) / (1 + resamples)
    adjusted = holm(p_values) if len(p_values) else p_values
    significant = np.zeros((m, m), dtype=bool)
    significant[first, second] = significant[second, first] = adjusted < alpha
    order = sorted(range(m), key=lambda i: (-values[i], i))
    letters = letter_display(significant, order)
    check_letters(letters, significant)
    entries = [RankedEntry(labels[i], round(float(values[i]), 2), cis[i], letters[i], position + 1)
               for position, i in enumerate(order)]
    key = [f"{labels[i]} | {labels[j]}" for i, j in zip(first, second)]
    return Ranking(name, metric, components, entries, dict(zip(key, map(float, p_values))),
                   dict(zip(key, map(float, adjusted))), test, items, resamples, notes)


def _mean_ranks(labels: Sequence[str], scores: np.ndarray, tasks: list[str], alpha: float) -> MeanRanks:
    """`scores` (tasks, models) of the main scores."""
    from scipy import stats

    n_tasks, k = scores.shape
    ranks = stats.rankdata(-scores, axis=1) if n_tasks else np.zeros((0, k))
    mean_rank = ranks.mean(0) if n_tasks else np.full(k, np.nan)
    same = [""] * k
    if k < 3 or n_tasks < 2:
        return MeanRanks(list(labels), [round(float(r), 3) for r in mean_rank], ["a"] * k, tasks, None, None, None,
                         "Friedman's test needs at least 3 models and 2 tasks")
    if np.all(scores == scores[:, :1]):
        statistic, p_value = 0.0, 1.0
    else:
        statistic, p_value = (float(v) for v in stats.friedmanchisquare(*scores.T))
    spread = math.sqrt(k * (k + 1) / (6 * n_tasks))
    critical = float(stats.studentized_range.ppf(1 - alpha, k, np.inf)) / math.sqrt(2) * spread
    significant = np.zeros((k, k), dtype=bool)
    note = ""
    if p_value < alpha:
        first, second = _pairs(k)
        q = np.abs(mean_rank[first] - mean_rank[second]) / spread * math.sqrt(2)
        nemenyi_p = stats.studentized_range.sf(q, k, np.inf)
        significant[first, second] = significant[second, first] = nemenyi_p < alpha
    else:
        note = f"Friedman's test does not reject at {alpha} (p = {p_value:.3g}): no post-hoc test, one group"
    order = sorted(range(k), key=lambda i: (mean_rank[i], i))
    letters = letter_display(significant, order) if k else same
    check_letters(letters, significant)
    return MeanRanks([labels[i] for i in order], [round(float(mean_rank[i]), 3) for i in order],
                     [letters[i] for i in order], tasks, statistic, p_value, critical, note)


def _interval(result: RunResult, task: str, metric: str) -> tuple[float, float] | None:
    ci = result.tasks[task].ci.get(metric)
    return (float(ci[0]), float(ci[1])) if ci else None


def rank_cohort(results: Sequence[RunResult], labels: Sequence[str], averages: Mapping[str, Sequence[Component]],
                resamples: int | None = None, seed: int = 0, alpha: float = ALPHA, progress: bool = True,
                reason: str = "") -> Cohort:
    """Every ranking of comparable `results`: each task all of them ran (its main score) and each of `averages`
    (name -> (task, metric) components) all of them hold; `resamples` None: `resamples_for` the cohort's size."""
    m = len(results)
    tasks = [t for t in results[0].tasks if all(t in r.tasks for r in results)]
    split = results[0].settings.split
    synthetic = any(r.synthetic for r in results)
    suites = list(dict.fromkeys(r.settings.data for r in results if r.settings.data))
    if m < 2:
        return Cohort(list(labels), split, synthetic, [], None, reason, suites)
    averages = {name: list(components) for name, components in averages.items()
                if all(t in tasks and all(c in r.tasks[t].metrics for r in results) for t, c in components)}
    wanted: dict[str, list[str]] = {t: [TASKS[t].spec.main_score] if t in TASKS else [] for t in tasks}
    for components in averages.values():
        for task, metric in components:
            wanted.setdefault(task, [])
            if metric not in wanted[task]:
                wanted[task].append(metric)
    wanted = {t: [mm for mm in ms if all(mm in r.tasks[t].metrics for r in results)] for t, ms in wanted.items()}
    aligned = {t: _aligned(t, ms, results, labels) for t, ms in wanted.items() if ms}
    tests = {(t, metric): joint_test(a.estimators[metric]) for t, a in aligned.items() for metric in a.estimators}
    total = resamples or resamples_for(m, alpha)
    pairs = m * (m - 1) // 2
    hits = {key: np.zeros(pairs, dtype=np.int64) for key in tests}
    average_hits = {name: np.zeros(pairs, dtype=np.int64) for name in averages}
    average_observed = {name: np.mean([tests[c].observed for c in components], axis=0)
                        for name, components in averages.items()}
    task_index = {t: i for i, t in enumerate(aligned)}
    generators = {t: np.random.default_rng([seed, i]) for t, i in task_index.items()}
    averaged = {c for components in averages.values() for c in components}

    def batch_of(task: str, size: int) -> dict[Component, np.ndarray]:
        """One batch of every metric of `task` (the same draw for each): its hits counted, the nulls an average
        needs returned."""
        state = generators[task].integers(2**63)
        kept = {}
        for metric in aligned[task].estimators:
            null = tests[(task, metric)].draw(np.random.default_rng(state), size)
            hits[(task, metric)] += _extreme(null, tests[(task, metric)].observed)
            if (task, metric) in averaged:
                kept[(task, metric)] = null
        return kept

    # the tasks already share the cores: BLAS threads on top of them only wait for each other
    with progress_bar(enabled=progress, total=total, desc="leaderboard", unit="resample") as bar, \
            ThreadPoolExecutor(min(THREADS, len(aligned) or 1)) as pool, threadpool_limits(1, user_api="blas"):
        for start in range(0, total, BATCH):
            size = min(BATCH, total - start)
            draws: dict[Component, np.ndarray] = {}
            for kept in pool.map(batch_of, aligned, [size] * len(aligned)):  # each task its own random stream
                draws.update(kept)
            for name, components in averages.items():
                null = np.mean([draws[c] for c in components], axis=0)
                average_hits[name] += _extreme(null, average_observed[name])
            bar.update(size)
    rankings = []
    for task in tasks:
        if task not in TASKS or task not in aligned:
            continue
        metric = TASKS[task].spec.main_score
        if (task, metric) not in tests:
            continue
        values = np.array([r.tasks[task].metrics[metric] for r in results])
        a = aligned[task]
        rankings.append(_ranking(task, metric, [(task, metric)], values,
                                 [_interval(r, task, metric) for r in results], labels, hits[(task, metric)], total,
                                 alpha, tests[(task, metric)].test, f"{a.items} {a.unit}",
                                 [a.note] if a.note else []))
    for name, components in averages.items():
        values = np.array([np.mean([r.tasks[t].metrics[c] for t, c in components]) for r in results])
        notes = [aligned[t].note for t in dict.fromkeys(t for t, _ in components) if aligned[t].note]
        test_names = sorted({tests[c].test for c in components})
        metric = (f"mean of {len(components)} task metrics" if len(components) > 3 else
                  "mean of " + ", ".join(f"{t} {c}" for t, c in components))
        rankings.append(_ranking(name, metric, components,
                                 values, [None] * m, labels, average_hits[name], total, alpha,
                                 "stratified " + " / ".join(test_names) + " (items resampled within each task)",
                                 "; ".join(f"{t}: {aligned[t].items} {aligned[t].unit}"
                                           for t in dict.fromkeys(t for t, _ in components)), notes))
    main_scores = [t for t in tasks if t in TASKS]
    scores = np.array([[r.tasks[t].metrics[TASKS[t].spec.main_score] for r in results] for t in main_scores])
    return Cohort(list(labels), split, synthetic, rankings,
                  _mean_ranks(labels, scores.reshape(len(main_scores), m), main_scores, alpha), reason, suites)


def rank_results(results: Sequence[RunResult], labels: Sequence[str],
                 averages: Mapping[str, Sequence[Component]] | None = None, resamples: int | None = None,
                 seed: int = 0, alpha: float = ALPHA, progress: bool = True) -> Leaderboard:
    """Rank `results` (named `labels`): split into comparable cohorts (`cohorts`), then each ranked
    (`rank_cohort`). The same seed gives the same p-values and letters.

    Raises:
        ScidocsEvalError: no results, labels that repeat, results without per-item data, inconsistent files.
    """
    if not results:
        raise ScidocsEvalError("no results to rank")
    if len(set(labels)) != len(labels):
        repeated = next(label for label in labels if list(labels).count(label) > 1)
        raise ScidocsEvalError(f"two results are labelled {repeated!r}; give each a distinct label")
    if resamples is not None and resamples < 1:
        raise ScidocsEvalError(f"resamples must be at least 1, got {resamples}")
    out = []
    for group, reason in cohorts(results):
        out.append(rank_cohort([results[i] for i in group], [labels[i] for i in group], averages or {},
                               resamples, seed, alpha, progress, reason))
    return Leaderboard(out, alpha, resamples, seed)

