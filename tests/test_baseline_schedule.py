"""The corpus-size epoch schedule, the collapse check, `--tune` over fastText's epochs × learning rate, the tfidf
baseline, SGC's row re-normalisation, Table 1's labels for rows that are not the paper's, and what the defaults
give on Cora (the paper's order of SIF and fasttext-sum above Doc2Vec does not hold there: a strict xfail)."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import numpy as np
import pytest

from scidocs_eval.baselines import doc2vec
from scidocs_eval.data.build import build_suite
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.formats.suite import Paper, Suite
from scidocs_eval.leaderboard import render_table1
from scidocs_eval.models import word_vectors
from scidocs_eval.models.adapter import get_adapter
from scidocs_eval.models.gensim_training import EpochSchedule, epochs_within_budget, mean_pair_cosine
from scidocs_eval.models.text import tokenize_papers
from scidocs_eval.models.tuning import TunedAdapter, ValScorer, within_budget
from scidocs_eval.models.word_vectors import COLLAPSE_COSINE, FasttextSettings, corpus_word_vectors
from scidocs_eval.run.baseline import run_baseline
from scidocs_eval.run.fit_inputs import fit_adapter

SCIDOCS_TOKENS = 26_500_000
"""Corpus tokens of the SciDocs-scale benchmark corpus (bench/bench_baselines.py)."""


@pytest.mark.parametrize("tokens, fasttext_epochs, doc2vec_epochs", [
    (50_000, 50, 50), (405_813, 20, 20), (467_665, 17, 17), (2_000_000, 5, 10), (SCIDOCS_TOKENS, 2, 4)])
def test_schedule_trains_small_corpora_longer_and_keeps_scidocs_scale_within_the_cap(
        tokens: int, fasttext_epochs: int, doc2vec_epochs: int) -> None:
    """Cora (405,813 tokens) and CiteSeer get 20 and 17 epochs; SciDocs scale keeps today's capped 2 and 4."""
    for schedule, cap, expected in ((word_vectors.SCHEDULE, word_vectors.MAX_TRAINED_TOKENS, fasttext_epochs),
                                    (doc2vec.SCHEDULE, doc2vec.MAX_TRAINED_TOKENS, doc2vec_epochs)):
        assert epochs_within_budget(schedule.epochs(tokens), tokens, cap, "x") == expected


def test_schedule_clamps_to_its_range() -> None:
    schedule = EpochSchedule(target_passes=1000, min_epochs=3, max_epochs=7)
    assert [schedule.epochs(n) for n in (1, 100, 200, 10_000, 0)] == [7, 7, 5, 3, 7]


def test_mean_pair_cosine_tells_collapsed_from_spread_vectors() -> None:
    rng = np.random.default_rng(0)
    spread = rng.standard_normal((500, 50))
    collapsed = spread * 0.1 + 1.0  # every vector near (1, 1, ..., 1)
    assert abs(mean_pair_cosine(spread)) < 0.02
    assert mean_pair_cosine(collapsed) > 0.9
    assert mean_pair_cosine(spread) == mean_pair_cosine(spread)  # seeded sample
    assert np.isnan(mean_pair_cosine(spread[:1]))


def test_within_budget_keeps_the_cheapest_settings_and_says_what_it_skips(caplog: pytest.LogCaptureFixture) -> None:
    grid = [{"epochs": e, "lr": lr} for e in (4, 1, 2) for lr in (0.1, 0.05)]
    with caplog.at_level(logging.WARNING, logger="scidocs_eval"):
        kept = within_budget(grid, lambda s: 10 * s["epochs"], 50, "tuning x")
    assert kept == [{"epochs": 1, "lr": 0.1}, {"epochs": 1, "lr": 0.05}, {"epochs": 2, "lr": 0.1}]
    assert [record.getMessage() for record in caplog.records] == [  # one line, naming every setting left out
        "tuning x: skipping 3 of the 6 settings, over its budget of 50 (the 3 kept cost 40): {'epochs': 2, 'lr': "
        "0.05}, {'epochs': 4, 'lr': 0.1}, {'epochs': 4, 'lr': 0.05}"]
    with pytest.raises(ScidocsEvalError, match="no setting fits the tuning budget of 5"):
        within_budget(grid, lambda s: 10 * s["epochs"], 5, "tuning x")


@pytest.mark.slow
def test_tune_searches_fasttext_epochs_and_learning_rate_within_the_budget(
        demo_suite: Suite, caplog: pytest.LogCaptureFixture) -> None:
    papers = demo_suite.papers()
    tokens = sum(map(len, tokenize_papers(papers, progress=False)))
    adapter = TunedAdapter(get_adapter("sif", dim=10, min_count=1, bucket=10_000, epochs=2,
                                       tune_max_tokens=int(tokens * 5.5)))
    with caplog.at_level(logging.INFO, logger="scidocs_eval"):
        adapter.fit(papers, val=ValScorer(demo_suite))
    tried = {(score["params"]["epochs"], score["params"]["lr"]) for score in adapter.scores_}
    assert tried == {(1, 0.025), (1, 0.05), (1, 0.1), (2, 0.025)}  # 1+1+1+2 epochs within 5.5 corpus passes
    assert len(adapter.scores_) == 4 * 5  # each fastText setting with each of SIF's `a`
    best = adapter.best_params_  # the tuned values; the wrapped adapter's stay as given (the estimator contract)
    assert (best["epochs"], best["lr"]) in tried and (adapter.adapter.epochs, adapter.adapter.lr) == (2, 0.05)
    assert "tuning sif: best" in caplog.text
    assert caplog.text.count("tuning sif epochs x lr: skipping 5 of the 9 settings") == 1
    assert best["a"] in (1e-5, 3e-5, 1e-4, 3e-4, 1e-3)
    assert adapter.transform(papers[:3]).shape == (3, 10)


def test_tfidf_baseline_runs_end_to_end_on_the_demo_suite(demo_suite: Suite, tmp_path: Path) -> None:
    result = run_baseline("tfidf", RunConfig(data=demo_suite, tasks=["cite", "cocite"], progress=False),
                          out_dir=tmp_path)
    chance = run_baseline("random", RunConfig(data=demo_suite, tasks=["cite", "cocite"], progress=False),
                          out_dir=tmp_path)
    for task in ("cite", "cocite"):
        assert result.tasks[task].metrics["map"] > chance.tasks[task].metrics["map"] + 20
    vectors = get_adapter("tfidf", dim=50).fit(demo_suite.papers()).transform(demo_suite.papers()[:20])
    assert vectors.shape == (20, 50) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1, rtol=1e-5)
    assert result.model_info.paper_row is None
    assert "| tfidf (ours, not a paper baseline, synthetic demo suite) |" in render_table1([result])


def test_tfidf_refuses_a_corpus_without_words() -> None:
    with pytest.raises(ScidocsEvalError, match="tfidf: no word left to weigh in 2 papers"):
        get_adapter("tfidf").fit([Paper("a", "", "a"), Paper("b", "", "b")])


def test_sent_bert_row_names_its_model_and_says_it_saw_citations() -> None:
    adapter = get_adapter("sent-bert")
    assert adapter.row_detail() == "all-MiniLM-L6-v2"
    assert "S2ORC citation pairs and SPECTER's citation triplets" in adapter.row_note()
    assert "not the paper's 2019 Sent-BERT" in get_adapter("sent-bert", model="/models/other-sbert").row_note()


def test_table1_labels_and_footnotes_rows_that_are_not_the_papers(demo_suite: Suite, tmp_path: Path) -> None:
    result = run_baseline("random", RunConfig(data=demo_suite, tasks=["cite"], progress=False), out_dir=tmp_path)
    result.model = "sent-bert"
    result.model_info = dataclasses.replace(result.model_info, paper_row="Sent-BERT", row_detail="all-MiniLM-L6-v2",
                                            row_note="it saw citations.")
    table = render_table1([result], include_paper=False)
    assert "| sent-bert [all-MiniLM-L6-v2] (ours, synthetic demo suite) |" in table
    assert "- sent-bert [all-MiniLM-L6-v2] (ours, synthetic demo suite): it saw citations." in table


@pytest.mark.parametrize("row_norm", ["sif", "l2"])
def test_sgc_row_norm_rescales_propagated_rows(demo_suite: Suite, row_norm: str, tmp_path: Path) -> None:
    papers = demo_suite.papers()
    recomm = [p for p in papers if p.paper_id in set(demo_suite.metadata("recomm"))][:200]
    vectors = tmp_path / "v.vec"
    words = sorted({w for p in papers for w in f"{p.title} {p.abstract}".lower().split()})
    rng = np.random.default_rng(0)
    vectors.write_text(f"{len(words)} 8\n" + "".join(f"{w} " + " ".join(f"{x:.4f}" for x in rng.standard_normal(8))
                                                      + "\n" for w in words), encoding="utf-8")
    sif = get_adapter("sif", vectors=str(vectors)).fit(papers).transform(recomm)
    plain = fit_adapter(get_adapter("sgc", vectors=str(vectors), k=2), papers, demo_suite).transform(recomm)
    scaled = fit_adapter(get_adapter("sgc", vectors=str(vectors), k=2, row_norm=row_norm), papers,
                         demo_suite).transform(recomm)
    expected = np.linalg.norm(sif, axis=1) if row_norm == "sif" else np.ones(len(recomm))
    np.testing.assert_allclose(np.linalg.norm(scaled, axis=1), expected, rtol=1e-4)
    unit = plain / np.linalg.norm(plain, axis=1, keepdims=True)
    np.testing.assert_allclose(scaled / np.linalg.norm(scaled, axis=1, keepdims=True), unit, atol=1e-5)
    with pytest.raises(ScidocsEvalError, match="row_norm='max' is not allowed; row_norm must be one of 'none'"):
        get_adapter("sgc", row_norm="max")


@pytest.fixture(scope="module")
def cora(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Suite:
    out = tmp_path_factory.mktemp("cora") / "suite"
    build_suite(shared_data / "cora" / "papers.jsonl", shared_data / "cora" / "edges.tsv", out, seed=0)
    return Suite(out)


class MessageList(logging.Handler):
    """Keeps the messages logged to it (caplog is function-scoped; the Cora runs are shared by a module)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture(scope="module")
def cora_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model cache shared by the Cora tests of this module (each trained model costs minutes)."""
    return tmp_path_factory.mktemp("cora-cache")


@pytest.fixture(scope="module")
def cora_cite_maps(cora: Suite, cora_cache: Path, tmp_path_factory: pytest.TempPathFactory
                   ) -> tuple[dict[str, float], str]:
    """Cite MAP (test split) of random, sif, fasttext-sum and doc2vec on Cora with default settings, no --tune;
    and what they logged."""
    out = tmp_path_factory.mktemp("cora-results")
    handler = MessageList()
    logger = logging.getLogger("scidocs_eval")
    logger.addHandler(handler)
    previous = logger.level
    logger.setLevel(logging.INFO)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SCIDOCS_EVAL_CACHE", str(cora_cache))
        try:
            config = RunConfig(data=cora, tasks=["cite"], progress=False)
            maps = {name: run_baseline(name, config, out_dir=out).tasks["cite"].metrics["map"]
                    for name in ("random", "sif", "fasttext-sum", "doc2vec")}  # one fastText model
        finally:
            logger.removeHandler(handler)
            logger.setLevel(previous)
    return maps, "\n".join(handler.messages)


@pytest.mark.slow
def test_cora_defaults_train_to_the_schedule_and_beat_random_by_far(cora_cite_maps: tuple[dict[str, float], str]
                                                                    ) -> None:
    """Measured 2026-11-23: random 18.94, fasttext-sum 55.72, sif 59.05, doc2vec 61.24 (20 epochs each)."""
    maps, logged = cora_cite_maps
    assert "fastText: 405813 corpus tokens, 20 epochs (schedule" in logged  # a fresh cache: both are trained
    assert "doc2vec: 405813 corpus tokens, 20 epochs (schedule" in logged
    assert "under-trained" not in logged
    for name in ("sif", "fasttext-sum", "doc2vec"):
        assert maps[name] > maps["random"] + 30, maps
    assert maps["sif"] > maps["fasttext-sum"], maps  # the paper's order between the two (79.4 vs 74.6)
    assert maps["sif"] > 55 and maps["fasttext-sum"] > 50, maps  # 5-epoch vectors gave 34.60 and 29.46


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="the schedule trains Doc2Vec 20 epochs too (cite MAP 50.97 -> 61.24), "
                   "above SIF's 59.05 and fasttext-sum's 55.72: the paper's order does not hold on Cora")
def test_cora_defaults_rank_sif_and_fasttext_sum_above_doc2vec_as_in_the_paper(
        cora_cite_maps: tuple[dict[str, float], str]) -> None:
    maps, _ = cora_cite_maps
    assert maps["sif"] > maps["doc2vec"] and maps["fasttext-sum"] > maps["doc2vec"], maps


TUNED_ON_CORA = {
    "sif": {"epochs": 10, "lr": 0.1, "a": 1e-3},
    "fasttext-sum": {"epochs": 40, "lr": 0.025, "sublinear_tf": True, "binary": False, "use_idf": False,
                     "smooth_idf": True},
    "doc2vec": {"epochs": 100, "sample": 1e-5, "window": 5},
}
"""What `baseline NAME --tune --tasks mag,cite,cocite` picked on Cora's validation split, 2026-11-23 (fits of 894 s,
46 s with sif's fastText models cached, and 504 s, on the shared 2-core machine)."""


@pytest.mark.slow
def test_cora_settings_picked_on_val_rank_sif_and_fasttext_sum_above_doc2vec_as_in_the_paper(
        cora: Suite, cora_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The paper tuned every baseline on validation; so tuned, Cora's test cite MAP keeps the paper's order:
    sif 58.74 > fasttext-sum 57.73 > doc2vec 55.81 (measured 2026-11-23), unlike the defaults (xfail above)."""
    monkeypatch.setenv("SCIDOCS_EVAL_CACHE", str(cora_cache))
    maps = {name: run_baseline(name, RunConfig(data=cora, tasks=["cite"], progress=False), out_dir=tmp_path,
                               params=params)
            .tasks["cite"].metrics["map"] for name, params in TUNED_ON_CORA.items()}
    assert maps == pytest.approx({"sif": 58.74, "fasttext-sum": 57.73, "doc2vec": 55.81}, abs=1.0), maps
    assert maps["sif"] > maps["fasttext-sum"] > maps["doc2vec"], maps


@pytest.mark.slow
def test_cora_default_vectors_pass_the_collapse_check_and_5_epoch_vectors_fail_it(
        cora: Suite, cora_cache: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Mean cosine of random word pairs, measured 2026-11-23: 0.037 with the default 20 epochs, 0.749 with 5."""
    monkeypatch.setenv("SCIDOCS_EVAL_CACHE", str(cora_cache))
    papers = cora.papers()
    with caplog.at_level(logging.WARNING, logger="scidocs_eval"):
        trained = corpus_word_vectors(papers, None, FasttextSettings())
    assert trained.epochs == 20 and mean_pair_cosine(trained.matrix) < 0.1
    assert "under-trained" not in caplog.text
    with caplog.at_level(logging.WARNING, logger="scidocs_eval"):
        old = corpus_word_vectors(papers, None, FasttextSettings(epochs=5))
    assert mean_pair_cosine(old.matrix) > COLLAPSE_COSINE
    assert "fastText (5 epochs, lr 0.05) vectors look under-trained" in caplog.text
    assert "-p epochs=N above 5" in caplog.text
