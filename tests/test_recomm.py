"""The recomm task end to end: seeds, reproducibility, both rankers, coverage, bad input, the demo's truth."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import orjson
import pytest

from scidocs_eval.cli.main import main
from scidocs_eval.errors import InputError, MissingEmbeddingsError, ScidocsEvalError
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.evaluation.task import get_task
from scidocs_eval.evaluators.recomm_rankers import impression_metrics
from scidocs_eval.formats.embeddings import EmbeddingStore
from scidocs_eval.formats.suite import Suite
from scidocs_eval.leaderboard import render_table1
from tests.builders import score_task

FAST_MLP = {"max_epochs": 3, "dropout_grid": [0.4]}
FAST_LGBM = {"max_rounds": 20, "num_leaves_grid": [7]}


def _random_store(suite: Suite, dim: int = 16, drop: int = 0) -> EmbeddingStore:
    """Random vectors for every paper of the suite but the first `drop` recomm papers."""
    rng = np.random.default_rng(0)
    ids = sorted(suite.metadata("recomm"))[drop:]
    return EmbeddingStore.from_mapping(dict(zip(ids, rng.standard_normal((len(ids), dim)))))


@pytest.fixture(scope="module")
def store(demo_suite: Suite) -> EmbeddingStore:
    return _random_store(demo_suite)


def test_required_files_name_every_input():
    task = get_task("recomm")
    assert task.required_files("test") == ["recomm/train.csv", "recomm/val.csv", "recomm/test.csv",
                                           "recomm/propensity_scores.json", "paper_metadata_recomm.json"]
    assert task.required_files("val") == ["recomm/train.csv", "recomm/val.csv", "recomm/propensity_scores.json",
                                          "paper_metadata_recomm.json"]


def test_mean_and_std_over_seeds_and_same_seed_same_bits(demo_suite: Suite, store: EmbeddingStore):
    task = get_task("recomm", seeds=2, ranker_params=FAST_MLP)
    result = score_task(task, demo_suite, store)
    runs = result.details["seeds"]
    assert [r["seed"] for r in runs] == [0, 1]
    for metric in ("adj-NDCG", "adj-P@1"):
        values = np.array([r[metric] for r in runs])
        assert result.metrics[metric] == round(float(values.mean()), 2)
        assert result.details["std"][metric] == round(float(values.std(ddof=1)), 2)
        assert 20 < result.metrics[metric] < 100
    assert runs[0]["chosen"]["dropout"] == 0.4 and 1 <= runs[0]["chosen"]["epochs"] <= 3
    again = score_task(get_task("recomm", seeds=1, seed=1, ranker_params=FAST_MLP), demo_suite, store)
    assert again.details["seeds"][0] == runs[1]
    shown, _ = task.shown_papers(task.load(demo_suite, "test"), store)
    first = task.make_ranker(5).fit(shown["train"], shown["val"]).score(shown["test"])
    second = task.make_ranker(5).fit(shown["train"], shown["val"]).score(shown["test"])
    assert first.tobytes() == second.tobytes()


def test_lightgbm_ranker_is_reproducible_and_picks_on_val(demo_suite: Suite, store: EmbeddingStore):
    params = {"seeds": 2, "ranker": "lgbm", "ranker_params": {**FAST_LGBM, "num_leaves_grid": [3, 7]}}
    first = score_task(get_task("recomm", **params), demo_suite, store)
    second = score_task(get_task("recomm", **params), demo_suite, store)
    assert first.details == second.details
    run = first.details["seeds"][0]
    assert set(run["val_adj_ndcg"]) == {"3", "7"}
    assert run["val_adj_ndcg"][str(run["chosen"]["num_leaves"])] == max(run["val_adj_ndcg"].values())
    assert 1 <= run["chosen"]["rounds"] <= 20
    assert 20 < first.metrics["adj-NDCG"] < 100


def test_query_projection_trains_the_cosine_through_a_linear_map(demo_suite: Suite, store: EmbeddingStore):
    task = get_task("recomm", seeds=1, query_projection=True, ranker_params={**FAST_MLP, "max_epochs": 1})
    shown, _ = task.shown_papers(task.load(demo_suite, "test"), store)
    ranker = task.make_ranker(0).fit(shown["train"], shown["val"])
    weight = ranker.network_.projection.weight.detach().numpy()
    assert weight.shape == (16, 16) and not np.allclose(weight, np.eye(16))
    assert np.isfinite(ranker.score(shown["test"])).all()


def test_coverage_counts_missing_embeddings_and_error_policy_lists_them(demo_suite: Suite):
    store = _random_store(demo_suite, drop=50)
    task = get_task("recomm", seeds=1, ranker="lgbm", ranker_params=FAST_LGBM)
    result = score_task(task, demo_suite, store)
    coverage = result.coverage
    dropped = set(sorted(demo_suite.metadata("recomm"))[:50])
    impressions = [i for s in ("train", "val", "test") for i in demo_suite.impressions(s)]
    assert coverage["queries_missing"] == len({i.query_id for i in impressions} & dropped)
    assert coverage["candidates_missing"] == len({p for i in impressions for p in i.shown} & dropped)
    assert coverage["candidates_missing"] > 0 and coverage["candidates_without_metadata"] == 0
    assert coverage["impressions_test"] == len(demo_suite.impressions("test"))
    with pytest.raises(MissingEmbeddingsError, match="task recomm: .* have no embedding"):
        score_task(task, demo_suite, store, missing="error")


def test_true_relevance_beats_position_and_the_adjustment_moves_the_right_way(demo_suite: Suite,
                                                                             store: EmbeddingStore):
    truth = orjson.loads(demo_suite.path("recomm/SYNTHETIC_true_relevance.json").read_bytes())
    recomm = get_task("recomm")
    shown, _ = recomm.shown_papers(recomm.load(demo_suite, "test"), store)
    for split in ("train", "val", "test"):
        relevance = np.concatenate([np.asarray(r) for r in truth[split]])
        position_only = -shown[split].position.astype(np.float64)
        by_truth = impression_metrics(shown[split], relevance)
        by_position = impression_metrics(shown[split], position_only)
        assert by_truth["adj-NDCG"] > by_position["adj-NDCG"] + 10
        # clicks at the top are over-counted without the correction: it lowers the position ranker's numbers
        # and raises those of the ranker that knows the true relevance
        unadjusted_position = impression_metrics(shown[split], position_only, adjusted=False)
        unadjusted_truth = impression_metrics(shown[split], relevance, adjusted=False)
        assert by_position["adj-P@1"] < unadjusted_position["P@1"]
        assert by_position["adj-NDCG"] < unadjusted_position["NDCG"]
        assert by_truth["adj-NDCG"] > unadjusted_truth["NDCG"]


def test_cli_fills_the_recomm_columns_with_std(demo_suite: Suite, tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = main(["baseline", "random", "--data", str(demo_suite.root), "--tasks", "recomm", "--quiet",
                 "--task-param", "recomm.seeds=2", "--task-param", "recomm.ranker=lgbm",
                 "--task-param", f"recomm.ranker_params={json.dumps(FAST_LGBM)}"])
    assert code == 0
    saved = json.loads((tmp_path / "scidocs-results" / "random.results.json").read_text())
    metrics, std = saved["tasks"]["recomm"]["metrics"], saved["tasks"]["recomm"]["details"]["std"]
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| random"))
    assert f"{metrics['adj-NDCG']:.2f} ± {std['adj-NDCG']:.2f}" in row
    assert f"{metrics['adj-P@1']:.2f} ± {std['adj-P@1']:.2f}" in row


def test_evaluate_fills_table1_recomm_columns(demo_suite: Suite, store: EmbeddingStore):
    params = {"recomm": {"seeds": 1, "ranker": "lgbm", "ranker_params": FAST_LGBM}}
    result = evaluate(store, RunConfig(data=demo_suite, tasks=["recomm"], progress=False, task_params=params))
    table = render_table1([result], include_paper=False)
    assert f"| {result.tasks['recomm'].metrics['adj-NDCG']:.2f} ± 0.00 |" in table


@pytest.mark.parametrize(("params", "message"), [
    ({"ranker": "svm"}, "ranker='svm' is not allowed; ranker must be one of 'mlp', 'lgbm'"),
    ({"ranker": "lgbn"}, "ranker='lgbn' is not allowed; ranker must be one of 'mlp', 'lgbm'"),
    ({"ranker": "lgbm", "query_projection": True}, "query_projection needs ranker='mlp'"),
    ({"seeds": 0}, "seeds=0 is not allowed; seeds must be an int >= 1"),
    ({"ranker_params": {"epochs": 3}}, "ranker 'mlp' has no parameter 'epochs' \\(did you mean 'max_epochs'\\?\\)"),
])
def test_bad_task_parameters_are_refused(params: dict, message: str):
    with pytest.raises(ScidocsEvalError, match=message):
        get_task("recomm", **params)


def _tiny_suite(root: Path, test_rows: list[list[str]], propensities: int = 3) -> Suite:
    """Three papers, one train and one val impression, and the given test rows."""
    metadata = {p: {"paper_id": p, "title": f"Paper {p}"} for p in ("a", "b", "c")}
    (root / "recomm").mkdir(parents=True)
    (root / "paper_metadata_recomm.json").write_bytes(orjson.dumps(metadata))
    (root / "recomm" / "propensity_scores.json").write_bytes(orjson.dumps({"scores": [1.0] * propensities}))
    for split, rows in (("train", [["a", "b", "b,c"]]), ("val", [["b", "a", "a,c"]]), ("test", test_rows)):
        with open(root / "recomm" / f"{split}.csv", "w", newline="") as handle:
            csv.writer(handle).writerows([["query_id", "clicked_id", "shown"], *rows])
    return Suite(root)


@pytest.mark.parametrize(("rows", "message"), [
    ([["a", "b", "b,c"], ["a", "c", "a,b"]],
     r"test\.csv:3: query 'a': clicked paper 'c' \(field 'clicked_id'\) is not in the shown list"),
    ([["a", "b", " , "]], r"test\.csv:2: query 'a': the shown list \(field 'shown'\) is empty"),
    ([["a", "b"]], r"test\.csv:2: expected 3 columns"),
    ([["c", "b", "a,c,a,b"]], r"test\.csv:2: query 'c': clicked paper is at position 4, but the propensity list "
                              r"has only 3 positions"),
])
def test_bad_impressions_name_file_and_line(tmp_path: Path, rows: list[list[str]], message: str):
    suite = _tiny_suite(tmp_path, rows)
    store = EmbeddingStore.from_mapping({"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [1.0, 1.0]})
    with pytest.raises(InputError, match=message):
        score_task(get_task("recomm", seeds=1, ranker="lgbm"), suite, store)


def test_the_rankers_torch_settings_are_the_callers_again_after_a_fit() -> None:
    """The MLP ranker seeds torch, turns on deterministic kernels and sets its threads for its fit only: a caller's
    deterministic mode, warn-only included, thread count and random stream are as they were."""
    torch = pytest.importorskip("torch")
    from scidocs_eval.evaluators.recomm_rankers import _reproducible_torch

    threads = torch.get_num_threads()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        torch.manual_seed(5)
        expected = torch.rand(3)
        torch.manual_seed(5)
        with _reproducible_torch(seed=0, threads=1):
            assert torch.are_deterministic_algorithms_enabled()
            assert not torch.is_deterministic_algorithms_warn_only_enabled()
            assert torch.get_num_threads() == 1
        assert torch.is_deterministic_algorithms_warn_only_enabled() and torch.are_deterministic_algorithms_enabled()
        assert torch.get_num_threads() == threads
        assert torch.equal(torch.rand(3), expected)
    finally:
        torch.use_deterministic_algorithms(False)
