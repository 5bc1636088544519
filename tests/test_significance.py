"""Per-item results, confidence intervals and `compare`: exact cases, a coverage simulation, the demo-suite
acceptance checks, refusals, and the CLI."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import numpy as np
import orjson
import pytest
from scipy import stats
from sklearn.metrics import f1_score

from scidocs_eval import compare
from scidocs_eval.cli import main
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.evaluation.task import task_names
from scidocs_eval.formats.suite import Suite
from scidocs_eval.leaderboard.compare_table import format_comparison
from scidocs_eval.models.adapter import get_adapter
from scidocs_eval.run.baseline import run_baseline
from scidocs_eval.run.embedding import write_embeddings
from scidocs_eval.statistics.significance import (
    MacroF1Items,
    MeanItems,
    PropensityItems,
    batched_macro_f1,
    confidence_intervals,
    holm,
    task_metrics,
)

FAST_RECOMM = {"seeds": 2, "ranker_params": {"max_epochs": 3, "dropout_grid": [0.0]}}


def _ids(n: int) -> list[str]:
    return [f"q{i}" for i in range(n)]


@pytest.fixture(scope="module")
def random_embeddings(demo_suite: Suite, tmp_path_factory: pytest.TempPathFactory) -> Path:
    papers = demo_suite.papers()
    adapter = get_adapter("random").fit(papers)
    return write_embeddings(adapter, papers, tmp_path_factory.mktemp("random") / "random.jsonl", progress=False)


@pytest.fixture(scope="module")
def random_run(demo_suite: Suite, random_embeddings: Path) -> RunResult:
    """Every task of the demo suite on random embeddings (recomm: 2 quick seeds)."""
    return evaluate(random_embeddings, RunConfig(data=demo_suite, task_params={"recomm": FAST_RECOMM}, progress=False))


# --- the statistics on exact cases -------------------------------------------------------------------------


def test_ten_queries_p_value_is_the_exact_enumeration_of_all_sign_flips() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.uniform(size=10), rng.uniform(size=10)
    differences = b - a
    flips = np.array(list(itertools.product((-1.0, 1.0), repeat=10)))
    null = flips @ differences
    enumerated = np.mean(np.abs(null) >= abs(differences.sum()) - 1e-12)
    p = MeanItems(_ids(10), a).paired_p_value(MeanItems(_ids(10), b))
    assert p == pytest.approx(enumerated, abs=1e-12)
    assert 0.05 < p < 1


def test_monte_carlo_sign_flip_agrees_with_scipy_permutation_test() -> None:
    rng = np.random.default_rng(4)
    a = rng.uniform(size=40)
    b = a + rng.normal(0.03, 0.1, size=40)
    ours = MeanItems(_ids(40), a).paired_p_value(MeanItems(_ids(40), b), resamples=20_000, seed=1)
    reference = stats.permutation_test((b - a,), lambda d, axis: np.mean(d, axis=axis), vectorized=True,
                                       permutation_type="samples", n_resamples=20_000, rng=2).pvalue
    assert ours == pytest.approx(reference, abs=0.01)


def test_better_on_every_query_gives_p_below_one_in_a_thousand() -> None:
    rng = np.random.default_rng(5)
    a = rng.uniform(0, 0.8, size=200)
    b = a + rng.uniform(0.01, 0.2, size=200)
    mine, theirs = MeanItems(_ids(200), a), MeanItems(_ids(200), b)
    assert mine.paired_p_value(theirs) < 0.001
    low, high = mine.paired_interval(theirs)
    assert 0 < low < 100 * np.mean(b - a) < high


def test_bootstrap_interval_covers_the_true_mean_at_its_nominal_rate() -> None:
    """400 samples of 100 draws from a skewed Beta(2, 5) (mean 2/7): the 95% interval should cover 2/7 in
    about 95% of them (percentile bootstrap: a little under at n = 100; binomial sd ≈ 1.1 points)."""
    rng = np.random.default_rng(6)
    covered = []
    for trial in range(400):
        values = rng.beta(2, 5, size=100)
        low, high = MeanItems(_ids(100), values).interval(resamples=1000, seed=trial)
        covered.append(low <= 100 * 2 / 7 <= high)
    assert 0.92 <= np.mean(covered) <= 0.98


def test_batched_macro_f1_equals_scikit_learn_including_absent_classes() -> None:
    rng = np.random.default_rng(7)
    gold, predicted = rng.integers(0, 6, size=(50, 30)), rng.integers(0, 6, size=(50, 30))
    predicted[:10] = np.where(predicted[:10] == 5, 4, predicted[:10])  # class 5 never predicted in some rows
    gold[:5] = np.where(gold[:5] == 3, 2, gold[:5])  # class 3 absent from gold in some rows
    expected = [f1_score(g, p, average="macro") for g, p in zip(gold, predicted)]
    np.testing.assert_allclose(batched_macro_f1(gold, predicted, 6), expected, rtol=1e-12)


def test_f1_swap_test_matches_its_exact_enumeration() -> None:
    """12 papers: exact (all 4096 swap patterns, scipy) vs the vectorised Monte Carlo (forced by 4000 < 4096)."""
    rng = np.random.default_rng(8)
    gold = rng.integers(0, 3, size=12)
    mine = np.where(rng.uniform(size=12) < 0.5, gold, rng.integers(0, 3, size=12))
    theirs = np.where(rng.uniform(size=12) < 0.8, gold, rng.integers(0, 3, size=12))
    a, b = MacroF1Items(_ids(12), gold, mine), MacroF1Items(_ids(12), gold, theirs)
    exact = a.paired_p_value(b, resamples=10_000)
    sampled = a.paired_p_value(b, resamples=4000, seed=1)
    assert exact == pytest.approx(sampled, abs=0.03)
    assert a.value() == pytest.approx(100 * f1_score(gold, mine, average="macro"), abs=0.005)


def test_recomm_paired_test_of_runs_with_the_same_seeds_is_one() -> None:
    rng = np.random.default_rng(9)
    weights, terms = rng.uniform(1, 3, size=50), rng.uniform(size=(3, 50))
    a = PropensityItems(_ids(50), weights, terms)
    assert a.paired_p_value(PropensityItems(_ids(50), weights, terms)) == 1.0
    assert a.paired_interval(PropensityItems(_ids(50), weights, terms + 0.2))[0] > 0
    assert a.paired_p_value(PropensityItems(_ids(50), weights, terms + 0.2)) < 0.001


def test_recomm_test_keeps_its_level_when_the_seeds_matter() -> None:
    """Null simulation: A and B are the same ranker up to each seed's shift of every impression's term and
    per-run noise (B also has a per-impression effect with mean 0). 5 seeds each; the false-positive rate at
    0.05 stays near 0.05 (an impressions-only test rejects most of these; see docs/significance.md)."""
    rng = np.random.default_rng(10)
    n = 200
    weights, base = rng.uniform(1, 3, size=n), rng.uniform(0.2, 0.8, size=n)

    def run(effect: np.ndarray | float) -> np.ndarray:
        return np.clip(base + effect + rng.normal(0, 0.02, size=(5, 1)) + rng.normal(0, 0.1, size=(5, n)), 0, 1)

    rejected = [PropensityItems(_ids(n), weights, run(0.0)).paired_p_value(
        PropensityItems(_ids(n), weights, run(rng.normal(0, 0.05, size=n)), seeds=[5, 6, 7, 8, 9]),
        resamples=500, seed=trial) < 0.05 for trial in range(200)]
    assert np.mean(rejected) <= 0.1


def test_holm_adjustment() -> None:
    np.testing.assert_allclose(holm(np.array([0.01, 0.04, 0.03])), [0.03, 0.06, 0.06])
    np.testing.assert_allclose(holm(np.array([0.5, 0.9])), [1.0, 1.0])


# --- per-item results of every task -------------------------------------------------------------------------


def test_every_metric_recomputes_from_its_items_after_a_round_trip(random_run: RunResult, tmp_path: Path) -> None:
    loaded = RunResult.load(random_run.save(tmp_path / "run.json"))
    assert set(loaded.tasks) == {"mag", "mesh", "coview", "coread", "cite", "cocite", "recomm"}
    for name, result in loaded.tasks.items():
        estimators = task_metrics(result.items, list(result.metrics))
        assert set(estimators) == set(result.metrics)
        for metric, estimator in estimators.items():
            assert estimator.value() == result.metrics[metric], (name, metric)
            low, high = result.ci[metric]
            assert low <= result.metrics[metric] <= high, (name, metric)
    recomm = loaded.tasks["recomm"].items
    assert recomm["seeds"] == [0, 1] and np.shape(recomm["adj-NDCG"]) == (2, len(recomm["ids"]))


def test_results_without_items_or_intervals_still_load_and_compare_says_why_not(random_run: RunResult,
                                                                                tmp_path: Path) -> None:
    data = random_run.to_dict()
    for task in data["tasks"].values():
        del task["ci"], task["items"]
    old = tmp_path / "old.results.json"
    old.write_bytes(orjson.dumps(data))
    loaded = RunResult.load(old)
    assert loaded.tasks["cite"].ci == {} and loaded.tasks["cite"].items == {}
    with pytest.raises(ScidocsEvalError, match="old.results.json.*task mag has no per-item results"):
        compare(old, random_run, progress=False)


# --- compare -------------------------------------------------------------------------------------------------


def test_identical_results_give_delta_zero_and_p_one(random_run: RunResult) -> None:
    comparison = compare(random_run, random_run, resamples=2000, progress=False)
    rows = comparison.pairs[0].rows
    assert len(rows) == 12
    for row in rows:
        assert (row.delta, row.ci_low, row.ci_high, row.p_value, row.p_holm) == (0, 0, 0, 1, 1)
        assert row.verdict == "no significant difference"


def test_sif_is_significantly_better_than_random_on_every_ranking_metric(demo_suite: Suite, tmp_path: Path,
                                                                        demo_vectors: Path) -> None:
    runs = [run_baseline(name, RunConfig(data=demo_suite, tasks=task_names("ranking"), progress=False),
                         out_dir=tmp_path, params={"vectors": str(demo_vectors)} if name == "sif" else {})
            for name in ("random", "sif")]
    rows = compare(*runs, progress=False).pairs[0].rows
    assert len(rows) == 8
    for row in rows:
        assert row.verdict == "better" and row.p_holm < 0.05 and row.ci_low > 0, row
        assert row.n == 25 and row.unit == "query"


def test_a_run_against_itself_with_another_recomm_seed_count_is_not_significant(
        random_run: RunResult, random_embeddings: Path, demo_suite: Suite) -> None:
    more_seeds = evaluate(random_embeddings, RunConfig(data=demo_suite, tasks=["recomm"], progress=False,
                                                       task_params={"recomm": {**FAST_RECOMM, "seeds": 4}}))
    assert more_seeds.tasks["recomm"].metrics != random_run.tasks["recomm"].metrics
    comparison = compare(random_run, more_seeds, progress=False)
    assert {row.verdict for row in comparison.pairs[0].rows} == {"no significant difference"}
    assert set(comparison.pairs[0].skipped) == {"mag", "mesh", "coview", "coread", "cite", "cocite"}


def test_different_splits_and_suite_files_are_refused_naming_what_differs(random_run: RunResult) -> None:
    val = replace(random_run, settings=replace(random_run.settings, split="val"))
    with pytest.raises(ScidocsEvalError, match=r"different splits \(random: test, random: val\)"):
        compare(random_run, val, progress=False)
    files = dict(random_run.fingerprints["data"])
    files["cite/test.qrel"] = "0" * 64
    other = replace(random_run, fingerprints={**random_run.fingerprints, "data": files})
    with pytest.raises(ScidocsEvalError, match="different suite files: cite/test.qrel"):
        compare(random_run, other, progress=False)


def _with_cite_items(run: RunResult, kept: slice) -> RunResult:
    cite = run.tasks["cite"]
    items = {key: (value[kept] if isinstance(value, list) else value) for key, value in cite.items.items()}
    return replace(run, tasks={"cite": replace(cite, items=items, metrics={
        m: MeanItems(items["ids"], items[m]).value() for m in cite.metrics})})


def test_items_that_differ_are_compared_over_the_shared_ones_with_a_loud_note(random_run: RunResult) -> None:
    fewer = _with_cite_items(random_run, slice(1, None))
    comparison = compare(random_run, fewer, progress=False)
    pair = comparison.pairs[0]
    assert len(pair.notes) == 1 and "25 queries" in pair.notes[0] and "the 24 both scored" in pair.notes[0]
    assert "NOT the headline numbers" in format_comparison(comparison)
    for row in pair.rows:
        assert row.n == 24 and row.delta == 0 and row.value_a == row.value_b == fewer.tasks["cite"].metrics[row.metric]
    assert comparison.to_dict()["comparisons"][0]["notes"] == pair.notes


def test_too_few_shared_items_are_refused_naming_the_counts(random_run: RunResult) -> None:
    with pytest.raises(ScidocsEvalError, match=r"only 10 queries scored by both \(random: 25, random: 10\)"):
        compare(random_run, _with_cite_items(random_run, slice(0, 10)), progress=False)


def test_a_single_shared_item_is_refused_and_gets_no_interval(random_run: RunResult) -> None:
    cite = random_run.tasks["cite"]
    items = {key: (value[:1] if isinstance(value, list) else value) for key, value in cite.items.items()}
    one = replace(random_run, tasks={"cite": replace(cite, items=items, metrics={
        m: MeanItems(items["ids"], items[m]).value() for m in cite.metrics})})
    with pytest.raises(ScidocsEvalError, match="cannot compare task cite: 1 queries shared; a paired test needs"):
        compare(one, one, progress=False)
    assert confidence_intervals(items, list(cite.metrics)) == {}


def test_edited_metric_is_refused(random_run: RunResult) -> None:
    cite = random_run.tasks["cite"]
    edited = replace(random_run, tasks={"cite": replace(cite, metrics={**cite.metrics, "map": 99.0})})
    with pytest.raises(ScidocsEvalError, match="map recomputed from the per-item results is"):
        compare(random_run, edited, progress=False)


def test_items_in_another_order_are_aligned(random_run: RunResult) -> None:
    cite = random_run.tasks["cite"]
    items = {key: (value[::-1] if isinstance(value, list) else value) for key, value in cite.items.items()}
    reversed_run = replace(random_run, tasks={"cite": replace(cite, items=items)})
    row = compare(random_run, reversed_run, resamples=500, progress=False).pairs[0].rows[0]
    assert (row.delta, row.p_value) == (0, 1)


def test_compare_cli_json_markdown_and_several_files(random_run: RunResult, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    a = random_run.save(tmp_path / "a.results.json")
    b = random_run.save(tmp_path / "b.results.json")
    out = tmp_path / "cmp.json"
    assert main(["compare", str(a), str(b), str(a), "--resamples", "500", "--json", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "cite     map" in printed and "no significant difference" in printed and "25 queries" in printed
    written = orjson.loads(out.read_bytes())
    assert len(written["comparisons"]) == 2
    cell = written["comparisons"][0]["results"]["mag"]["f1"]
    assert {"delta", "ci_low", "ci_high", "p_value", "p_holm", "n"} <= set(cell) and cell["n"] == 80
    assert main(["compare", str(a), str(b), "--resamples", "200", "--markdown", "--quiet"]) == 0
    assert "| cite | map |" in capsys.readouterr().out
    foreign = tmp_path / "notes.json"
    foreign.write_text("{}", encoding="utf-8")
    assert main(["compare", str(a), str(b), "--resamples", "100", "--json", str(foreign), "--quiet"]) == 2
    assert "already exists and was not written by scidocs-eval" in capsys.readouterr().err
    assert foreign.read_text(encoding="utf-8") == "{}"
    assert main(["compare", str(a)]) == 2


def test_table_and_run_print_intervals(random_run: RunResult, tmp_path: Path, random_embeddings: Path,
                                       demo_suite: Suite, capsys: pytest.CaptureFixture[str]) -> None:
    path = random_run.save(tmp_path / "a.results.json")
    assert main(["table", "--ci", "--no-paper", str(path)]) == 0
    low, high = random_run.tasks["cite"].ci["map"]
    assert f"{random_run.tasks['cite'].metrics['map']:.2f} [{low:.2f}, {high:.2f}]" in capsys.readouterr().out
    assert main(["run", "--embeddings", str(random_embeddings), "--data", str(demo_suite.root), "--tasks", "cite",
                 "--ci", "--quiet"]) == 0
    assert f"[{low:.2f}, {high:.2f}]" in capsys.readouterr().out
