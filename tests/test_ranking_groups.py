"""Significance groups of a leaderboard (`statistics/ranking_groups.py`) on constructed results with known
differences: identical models share a group, a clearly better model is alone, the error rate over random
relabelings stays at alpha, the letter display is valid on random inputs, only comparable results are tested."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import f1_score

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.metrics import macro_f1
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.task import TaskResult
from scidocs_eval.statistics.ranking_groups import (
    check_letters,
    joint_test,
    letter_display,
    rank_results,
)
from scidocs_eval.statistics.significance import ItemMetric, MacroF1Items, MeanItems, confidence_intervals, holm

AVERAGE = {"Avg": [("mag", "f1"), ("cite", "map"), ("cite", "ndcg"), ("cocite", "map")]}


def ranking_task(name: str, values: dict[str, np.ndarray]) -> TaskResult:
    """A ranking task's result with per-query `values` (metric -> (n,) in [0, 1])."""
    ids = [f"q{i}" for i in range(len(next(iter(values.values()))))]
    metrics = {m: MeanItems(ids, v).value() for m, v in values.items()}
    return TaskResult(name, metrics, {}, items={"unit": "query", "ids": ids, **{m: list(map(float, v))
                                                                                 for m, v in values.items()}})


def mag_task(gold: np.ndarray, predicted: np.ndarray) -> TaskResult:
    ids = [f"p{i}" for i in range(len(gold))]
    return TaskResult("mag", {"f1": macro_f1(gold, predicted)}, {},
                      items={"unit": "paper", "ids": ids, "gold": gold.tolist(), "predicted": predicted.tolist()})


def run(name: str, tasks: list[TaskResult], **settings_: object) -> RunResult:
    for task in tasks:
        task.ci = confidence_intervals(task.items, list(task.metrics), resamples=200)
    return RunResult(name, {t.task: t for t in tasks}, settings={"split": "test", **settings_},
                     fingerprints={"data": {"cite/test.qrel": "aa", "mag/test.csv": "bb"}})


def model(rng: np.random.Generator, base: dict[str, np.ndarray], shift: float, gold: np.ndarray,
          accuracy: float, name: str) -> RunResult:
    cite = {m: np.clip(v + shift, 0, 1) for m, v in base.items()}
    right = rng.random(len(gold)) < accuracy
    predicted = np.where(right, gold, rng.integers(0, 5, len(gold)))
    return run(name, [ranking_task("cite", cite), ranking_task("cocite", {"map": cite["map"], "ndcg": cite["ndcg"]}),
                      mag_task(gold, predicted)])


def write_three_models(folder: Path, twin_name: str = "twin") -> None:
    """Three results files in `folder`: `same`, its identical twin (`twin_name`), and `better`, clearly better."""
    rng = np.random.default_rng(1)
    base = {"map": rng.uniform(0.1, 0.7, 120), "ndcg": rng.uniform(0.1, 0.7, 120)}
    gold = rng.integers(0, 5, 200)
    same = model(np.random.default_rng(5), base, 0.0, gold, 0.5, "same")
    same.save(folder / "same.results.json")
    RunResult.from_dict({**same.to_dict(), "model": twin_name}).save(folder / "twin.results.json")
    model(np.random.default_rng(6), base, 0.2, gold, 0.95, "better").save(folder / "better.results.json")


@pytest.fixture(scope="module")
def three_models() -> tuple[list[RunResult], list[str]]:
    """Two identical models and one better on every query by 0.2 and far more accurate."""
    rng = np.random.default_rng(1)
    base = {"map": rng.uniform(0.1, 0.7, 200), "ndcg": rng.uniform(0.1, 0.7, 200)}
    gold = rng.integers(0, 5, 300)
    same = model(np.random.default_rng(5), base, 0.0, gold, 0.5, "same")
    twin = RunResult.from_dict({**same.to_dict(), "model": "twin"})
    better = model(np.random.default_rng(6), base, 0.2, gold, 0.95, "better")
    return [same, twin, better], ["same", "twin", "better"]


def test_identical_models_share_a_group_and_a_clearly_better_one_is_alone(three_models) -> None:
    results, labels = three_models
    board = rank_results(results, labels, AVERAGE, resamples=2000, progress=False)
    (cohort,) = board.cohorts
    names = [r.name for r in cohort.rankings]
    assert names == ["cite", "cocite", "mag", "Avg"]
    for ranking in cohort.rankings:
        groups = {e.label: e.letters for e in ranking.entries}
        assert ranking.entries[0].label == "better" and groups["better"] == "a", ranking.name
        assert groups["same"] == groups["twin"] == "b", ranking.name
        assert ranking.p_values["same | twin"] == 1.0
        assert ranking.p_holm["same | better"] < 0.05
    mean_ranks = cohort.mean_ranks
    assert mean_ranks.labels[0] == "better" and mean_ranks.mean_rank[0] == 1.0
    assert mean_ranks.friedman_p is not None


def test_the_same_seed_gives_the_same_p_values(three_models) -> None:
    results, labels = three_models
    one = rank_results(results, labels, AVERAGE, resamples=500, seed=3, progress=False).to_dict()
    two = rank_results(results, labels, AVERAGE, resamples=500, seed=3, progress=False).to_dict()
    assert one == two


def test_joint_tests_agree_with_compare_s_pairwise_tests(three_models) -> None:
    """Each pair's p-value from the shared resampling is the one `compare`'s own test gives, up to Monte Carlo
    error (different random streams)."""
    results, _ = three_models
    rng = np.random.default_rng(0)
    values = [rng.uniform(0, 1, 150) for _ in range(3)]
    values[1] = np.clip(values[0] + rng.normal(0.02, 0.1, 150), 0, 1)
    estimators = [MeanItems([str(i) for i in range(150)], v) for v in values]
    test = joint_test(estimators)
    null = np.concatenate([test.draw(np.random.default_rng(s), 2000) for s in range(5)])
    joint = (1 + np.sum(np.abs(null) >= np.abs(test.observed) - 1e-9, axis=0)) / (1 + len(null))
    pairwise = [estimators[0].paired_p_value(estimators[1], 10_000), estimators[0].paired_p_value(estimators[2],
                                                                                                   10_000)]
    assert joint[:2] == pytest.approx(pairwise, abs=0.02)
    mag = [ItemMetric.from_items(r.tasks["mag"].items, "f1") for r in results]
    test = joint_test(mag)
    null = test.draw(np.random.default_rng(0), 10_000)
    joint = (1 + np.sum(np.abs(null) >= np.abs(test.observed) - 1e-9, axis=0)) / 10_001
    assert joint[0] == 1.0 and joint[1] == pytest.approx(mag[0].paired_p_value(mag[2]), abs=0.01)


def _exchangeable(rng: np.random.Generator, models: int, n: int) -> list[RunResult]:
    """Models that differ only by a random relabelling of each item's values (the null hypothesis holds): each
    query's (and paper's) values over the models are permuted at random."""
    cite = rng.beta(2, 3, (n, models))
    cite = np.take_along_axis(cite, rng.permuted(np.tile(np.arange(models), (n, 1)), axis=1), axis=1)
    gold = rng.integers(0, 4, n)
    predictions = np.where(rng.random((n, models)) < 0.6, gold[:, None], rng.integers(0, 4, (n, models)))
    return [run(f"m{j}", [ranking_task("cite", {"map": cite[:, j], "ndcg": cite[:, j] ** 2}),
                          mag_task(gold, predictions[:, j])]) for j in range(models)]


def _rejects(test, resamples: int, seed: int, alpha: float) -> bool:
    null = test.draw(np.random.default_rng(seed), resamples)
    p_values = (1 + np.sum(np.abs(null) >= np.abs(test.observed) - 1e-9, axis=0)) / (1 + resamples)
    return bool(min(holm(p_values)) < alpha)


def test_shared_resampling_keeps_the_family_wise_error_rate_at_alpha() -> None:
    """The tests themselves under the null (each item's values permuted over 6 models: 15 pairs), 300 seeds each
    for the sign-flip and the swap test; a true rate of 0.05 exceeds the bound (mean + 2 sd) with < 3% chance."""
    trials, alpha, models, n = 300, 0.05, 6, 30
    ids = [str(i) for i in range(n)]
    rejections = {"sign flip": 0, "swap": 0}
    for trial in range(trials):
        rng = np.random.default_rng(trial)
        values = rng.permuted(np.tile(rng.beta(2, 3, (n, 1)), (1, models)) + rng.normal(0, 0.1, (n, 1))
                              * rng.permuted(np.tile(np.arange(models), (n, 1)), axis=1), axis=1)
        gold = rng.integers(0, 4, n)
        predicted = np.where(rng.random((n, models)) < 0.6, gold[:, None], rng.integers(0, 4, (n, models)))
        rejections["sign flip"] += _rejects(joint_test([MeanItems(ids, values[:, j]) for j in range(models)]),
                                            300, trial, alpha)
        rejections["swap"] += _rejects(joint_test([MacroF1Items(ids, gold, predicted[:, j]) for j in range(models)]),
                                       300, trial, alpha)
    bound = trials * alpha + 2 * np.sqrt(trials * alpha * (1 - alpha))
    assert all(count <= bound for count in rejections.values()), rejections


@pytest.mark.slow
def test_family_wise_error_rate_over_random_relabelings_is_at_most_alpha() -> None:
    """Under the null (relabelled models), the share of leaderboards with any significant pair stays at alpha:
    300 seeded leaderboards of 5 models; a true rate of 0.05 exceeds the bound (mean + 2 sd) with < 3% chance."""
    trials, alpha = 300, 0.05
    rejections = {"cite": 0, "mag": 0, "Avg": 0}
    for trial in range(trials):
        results = _exchangeable(np.random.default_rng(trial), 5, 40)
        board = rank_results(results, [r.model for r in results], {"Avg": [("cite", "map"), ("mag", "f1")]},
                             resamples=400, seed=trial, alpha=alpha, progress=False)
        for ranking in board.cohorts[0].rankings:
            rejections[ranking.name] += min(ranking.p_holm.values()) < alpha
    bound = trials * alpha + 2 * np.sqrt(trials * alpha * (1 - alpha))
    assert all(count <= bound for count in rejections.values()), rejections


significance_matrices = st.integers(1, 9).flatmap(
    lambda m: st.lists(st.booleans(), min_size=m * (m - 1) // 2, max_size=m * (m - 1) // 2).map(
        lambda flags: _symmetric(m, flags)))


def _symmetric(m: int, flags: list[bool]) -> np.ndarray:
    matrix = np.zeros((m, m), dtype=bool)
    first, second = np.triu_indices(m, k=1)
    matrix[first, second] = matrix[second, first] = flags
    return matrix


@settings(max_examples=300, deadline=None)
@given(significance_matrices, st.randoms())
def test_letter_display_is_valid_on_random_inputs(significant: np.ndarray, random) -> None:
    order = list(range(len(significant)))
    random.shuffle(order)
    letters = letter_display(significant, order)
    check_letters(letters, significant)  # raises on a pair that shares a letter iff it differs
    assert all(letters) and letters[order[0]].startswith("a")


def test_letter_display_of_many_letters_keeps_one_character_per_letter() -> None:
    """60 models, each different from every other but its neighbour: 59 letters, past the alphabet."""
    m = 60
    significant = ~np.eye(m, dtype=bool)
    for i in range(m - 1):
        significant[i, i + 1] = significant[i + 1, i] = False
    letters = letter_display(significant)
    check_letters(letters, significant)
    assert len(set("".join(letters))) == m - 1 and "α" in "".join(letters) and all(len(x) <= 2 for x in letters)


def test_letter_display_of_a_chain() -> None:
    """a ~ b ~ c but a ≠ c: the textbook overlapping display."""
    significant = _symmetric(3, [False, True, False])
    assert letter_display(significant) == ["a", "ab", "b"]


def test_only_comparable_results_are_tested_and_the_others_are_set_apart_with_the_reason(three_models) -> None:
    results, labels = three_models
    other_split = RunResult.from_dict({**results[2].to_dict(), "model": "val-run",
                                       "settings": {"split": "val"}})
    other_files = RunResult.from_dict({**results[0].to_dict(), "model": "other-suite",
                                       "fingerprints": {"data": {"cite/test.qrel": "cc"}}})
    other_params = RunResult.from_dict({**results[0].to_dict(), "model": "c-grid",
                                        "settings": {"split": "test", "task_params": {"mag": {"c_grid": [1.0]}}}})
    board = rank_results([*results, other_split, other_files, other_params],
                         [*labels, "val-run", "other-suite", "c-grid"], resamples=200, progress=False)
    assert [c.labels for c in board.cohorts] == [labels, ["val-run"], ["other-suite"], ["c-grid"]]
    reasons = [c.reason for c in board.cohorts]
    assert reasons[0] == "" and "split val" in reasons[1] and "cite/test.qrel" in reasons[2]
    assert "task mag settings" in reasons[3]
    assert all(c.rankings == [] for c in board.cohorts[1:])  # one result: nothing to test it against
    tested = {key for ranking in board.cohorts[0].rankings for key in ranking.p_values}
    assert not any(name in key for key in tested for name in ("val-run", "other-suite", "c-grid"))


def test_items_that_differ_are_tested_over_the_shared_ones_with_a_note(three_models) -> None:
    results, labels = three_models
    data = results[2].to_dict()
    cite = data["tasks"]["cite"]
    kept = slice(0, 150)
    cite["items"] = {"unit": "query", "ids": cite["items"]["ids"][kept], "map": cite["items"]["map"][kept],
                     "ndcg": cite["items"]["ndcg"][kept]}
    cite["metrics"] = {m: MeanItems(cite["items"]["ids"], np.array(cite["items"][m])).value() for m in ("map", "ndcg")}
    fewer = RunResult.from_dict(data)
    board = rank_results([results[0], results[1], fewer], labels, resamples=300, progress=False)
    cite_ranking = board.cohorts[0].rankings[0]
    assert cite_ranking.items == "150 queries" and "150 every result scored" in cite_ranking.notes[0]


def test_bad_inputs_are_one_line_errors(three_models) -> None:
    results, labels = three_models
    with pytest.raises(ScidocsEvalError, match="labelled 'same'"):
        rank_results(results, ["same", "same", "x"], progress=False)
    edited = RunResult.from_dict(results[0].to_dict())
    edited.tasks["cite"].metrics["map"] += 1
    with pytest.raises(ScidocsEvalError, match="inconsistent"):
        rank_results([edited, results[2]], ["edited", "better"], progress=False)
    with pytest.raises(ScidocsEvalError, match="no results"):
        rank_results([], [], progress=False)


def test_holm_is_what_the_ranking_applies(three_models) -> None:
    results, labels = three_models
    ranking = rank_results(results, labels, resamples=300, progress=False).cohorts[0].rankings[0]
    raw = np.array(list(ranking.p_values.values()))
    assert list(ranking.p_holm.values()) == pytest.approx(holm(raw).tolist())


def test_recommendation_joint_test_agrees_with_compare_s_two_level_bootstrap() -> None:
    from scidocs_eval.statistics.significance import PropensityItems

    rng = np.random.default_rng(2)
    ids, weights = [str(i) for i in range(300)], rng.uniform(1, 3, 300)
    base = rng.uniform(0.3, 1, (3, 300))
    estimators = [PropensityItems(ids, weights, np.clip(base + shift + rng.normal(0, 0.05, base.shape), 0, 1))
                  for shift in (0.0, 0.01, 0.08)]
    test = joint_test(estimators)
    assert test.test == "paired bootstrap test"
    null = test.draw(np.random.default_rng(0), 5000)
    joint = (1 + np.sum(np.abs(null) >= np.abs(test.observed) - 1e-9, axis=0)) / 5001
    assert joint[:2] == pytest.approx([estimators[0].paired_p_value(estimators[j], 5000) for j in (1, 2)], abs=0.03)


def test_swap_test_null_is_each_pair_s_macro_f1_difference_on_the_swapped_predictions() -> None:
    """The swap test's shared computation (each model's counts relative to the papers' most frequent prediction,
    pairs as sums of two models' counts) gives, for every pair and resample, scikit-learn's macro F1 of B minus A
    after swapping exactly the papers the random bits name, a class outside the gold labels included."""
    from scidocs_eval.statistics.significance import _coin_bytes, _unpacked

    rng = np.random.default_rng(3)
    n, models = 120, 5
    gold = rng.integers(0, 4, n)
    predicted = np.where(rng.random((n, models)) < 0.6, gold[:, None], rng.integers(0, 6, (n, models)))
    estimators = [MacroF1Items([str(i) for i in range(n)], gold, predicted[:, j]) for j in range(models)]
    test = joint_test(estimators)
    null = test.draw(np.random.default_rng(7), 40)
    differs = np.flatnonzero((predicted != predicted[:, :1]).any(1))
    swaps = _unpacked(_coin_bytes(np.random.default_rng(7), 40, len(differs)), len(differs)).astype(bool)
    first, second = np.triu_indices(models, k=1)
    for resample in (0, 17, 39):
        swapped = np.zeros(n, dtype=bool)
        swapped[differs[swaps[resample]]] = True
        for pair, (a, b) in enumerate(zip(first, second)):
            new_a = np.where(swapped, predicted[:, b], predicted[:, a])
            new_b = np.where(swapped, predicted[:, a], predicted[:, b])
            expected = 100 * (f1_score(gold, new_b, average="macro") - f1_score(gold, new_a, average="macro"))
            assert null[resample, pair] == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("statistic", ["f1_binary", "f1_macro_multilabel"])
def test_f1_of_every_model_from_sums_is_the_statistic_of_each_resample(statistic: str) -> None:
    """Binary and multi-label F1 of all models at once from per-label sums of the resampled counts: the same numbers
    as `significance`'s statistic of each model on each resample (exact integer sums)."""
    from scidocs_eval.statistics.ranking_groups import _f1_sums
    from scidocs_eval.statistics.significance import STATISTICS, _resampled_counts

    rng = np.random.default_rng(4)
    shape = () if statistic == "f1_binary" else (6,)
    gold = (rng.random((250, *shape)) < 0.2).astype(float)
    predicted = np.where(rng.random((4, 250, *shape)) < 0.15, 1 - gold, gold)
    resampled, _ = _f1_sums(gold, predicted, statistic)
    counts = _resampled_counts(rng, 60, 250)
    each = np.column_stack([100 * STATISTICS[statistic](gold, np.broadcast_to(p, (60, *p.shape)), counts)
                            for p in predicted])
    assert np.array_equal(resampled(counts), each)


def test_concordance_of_each_item_counts_ties_as_zero() -> None:
    from scidocs_eval.statistics.ranking_groups import _concordance

    rng = np.random.default_rng(5)
    for _ in range(40):
        n = int(rng.integers(2, 80))
        gold = rng.integers(0, int(rng.integers(1, 12)), n).astype(float)
        predicted = rng.integers(0, int(rng.integers(1, 12)), (3, n)).astype(float)
        brute = (np.sign(gold[:, None] - gold[None, :])[None]
                 * np.sign(predicted[:, :, None] - predicted[:, None, :])).sum(2)
        assert np.array_equal(_concordance(gold, predicted), brute)


def test_kendall_joint_test_is_scipy_s_tau_observed_and_the_exact_bootstrap_s_spread() -> None:
    """Kendall's τ-b of every model: the observed differences are scipy's; on resamples the first-order
    concordance with exact tie terms spreads as the exact resampled τ does (400 items with tied gold values)."""
    from scipy.stats import kendalltau

    from scidocs_eval.statistics.significance import STATISTICS, StatisticItems, _resampled_counts

    rng = np.random.default_rng(6)
    gold = rng.poisson(3, 400).astype(float)
    predicted = gold + rng.normal(0, 2, (3, 400))
    predicted[2] = np.round(predicted[2])  # ties in a model's predictions too
    ids = [str(i) for i in range(400)]
    test = joint_test([StatisticItems(ids, "kendalltau", gold, p) for p in predicted])
    tau = [100 * kendalltau(gold, p)[0] for p in predicted]
    assert test.observed == pytest.approx([tau[1] - tau[0], tau[2] - tau[0], tau[2] - tau[1]], abs=1e-9)
    assert "first order" in test.test
    null = test.draw(np.random.default_rng(0), 2000)
    counts = _resampled_counts(np.random.default_rng(0), 2000, 400)
    exact = np.column_stack([100 * STATISTICS["kendalltau"](gold, np.broadcast_to(p, counts.shape), counts)
                             for p in predicted])
    exact_null = exact[:, [1, 2, 2]] - exact[:, [0, 0, 1]]
    assert null.std(0) == pytest.approx(exact_null.std(0), rel=0.03)
    assert np.abs(null - (exact_null - test.observed)).mean() < 0.1 * exact_null.std()


def test_bootstrap_statistic_tests_keep_the_family_wise_error_rate_at_alpha() -> None:
    """Kendall's τ and binary F1 under the null (each item's predictions permuted over 5 models: 10 pairs), 200
    seeds each; a true rate of 0.05 exceeds the bound (mean + 2 sd) with < 3% chance."""
    from scidocs_eval.statistics.significance import StatisticItems

    trials, alpha, models, n = 200, 0.05, 5, 200
    ids = [str(i) for i in range(n)]
    rejections = {"kendalltau": 0, "f1_binary": 0}
    for trial in range(trials):
        rng = np.random.default_rng(trial)
        gold = rng.poisson(3, n).astype(float)
        shuffled = rng.permuted(np.tile(np.arange(models), (n, 1)), axis=1)
        scores = np.take_along_axis(gold[:, None] + rng.normal(0, 2, (n, models)), shuffled, axis=1)
        labels = (gold > 3).astype(float)
        guesses = np.take_along_axis(np.where(rng.random((n, models)) < 0.3, 1 - labels[:, None], labels[:, None]),
                                     shuffled, axis=1)
        rejections["kendalltau"] += _rejects(joint_test([StatisticItems(ids, "kendalltau", gold, scores[:, j])
                                                         for j in range(models)]), 300, trial, alpha)
        rejections["f1_binary"] += _rejects(joint_test([StatisticItems(ids, "f1_binary", labels, guesses[:, j])
                                                        for j in range(models)]), 300, trial, alpha)
    bound = trials * alpha + 2 * np.sqrt(trials * alpha * (1 - alpha))
    assert all(count <= bound for count in rejections.values()), rejections


def test_the_p_values_do_not_depend_on_the_threads_or_the_chunks(three_models,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from scidocs_eval.statistics import ranking_groups

    results, labels = three_models
    monkeypatch.setattr(ranking_groups, "THREADS", 1)
    one = rank_results(results, labels, AVERAGE, resamples=700, seed=4, progress=False).to_dict()
    monkeypatch.setattr(ranking_groups, "THREADS", 3)
    assert rank_results(results, labels, AVERAGE, resamples=700, seed=4, progress=False).to_dict() == one
    monkeypatch.setattr(ranking_groups, "BATCH_VALUES", 3000)  # arrays of a few rows: many chunks per draw
    assert rank_results(results, labels, AVERAGE, resamples=700, seed=4, progress=False).to_dict() == one
