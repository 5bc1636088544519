"""What a fit is given (`run/fit_inputs.py`) and `--tune` as a wrapper (`TunedAdapter`): an adapter that takes
citations never sees an edge of the judgements it is scored on, tuned or not; the wrapper scores its grid in order,
ties to the earlier setting, skips what cannot be fitted, and the results record every setting."""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.task import task_names
from scidocs_eval.formats.suite import Paper, Suite
from scidocs_eval.models.adapter import ADAPTERS, Adapter, Edge, get_adapter
from scidocs_eval.models.sif_weighting import A_GRID
from scidocs_eval.models.tuning import TunedAdapter, UnusableSetting, ValScorer
from scidocs_eval.run.baseline import run_baseline
from scidocs_eval.run.fit_inputs import fit_adapter

CITATION_ADAPTERS = sorted(name for name in ADAPTERS.names() if get_adapter(name).citation_files() is not None)
"""Every registered adapter whose fit takes citations (SGC today)."""


def _judged(suite: Suite) -> tuple[set[frozenset[str]], set[str]]:
    """The (query, candidate) pairs of every test judgement (ranking qrels, recomm impressions) and the queries."""
    pairs, queries = set(), set()
    for task in task_names(paper_pairs=True):
        if suite.has(f"{task}/test.qrel"):
            for query, candidates in suite.qrels(task, "test").candidates.items():
                queries.add(query)
                pairs.update(frozenset((query, candidate)) for candidate in candidates)
    for impression in suite.impressions("test"):
        queries.add(impression.query_id)
        pairs.update(frozenset((impression.query_id, shown)) for shown in impression.shown)
    return pairs, queries


@pytest.mark.parametrize("tune", [False, True], ids=["untuned", "tuned"])
@pytest.mark.parametrize("name", CITATION_ADAPTERS)
def test_a_fit_never_sees_an_edge_of_the_test_judgements(name: str, tune: bool, demo_suite: Suite, demo_vectors: Path,
                                                          tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pairs, queries = _judged(demo_suite)
    leaking = [tuple(pair) for pair in sorted(map(sorted, pairs))[:200]]
    outsider = next(iter(demo_suite.metadata("mag_mesh")))
    leaking += [(outsider, query) for query in sorted(queries)[:50]] + [(query, outsider) for query in sorted(queries)]
    citations = tmp_path / "edges.tsv"
    citations.write_text("".join(f"{a}\t{b}\n" for a, b in leaking), encoding="utf-8")
    given: list[list[Edge]] = []
    cls = ADAPTERS[name]
    fit = cls.fit

    def spy(self: Adapter, papers: Sequence[Paper], citations: Sequence[Edge] | None = None) -> Adapter:
        given.append(list(citations or []))
        return fit(self, papers, citations)

    monkeypatch.setattr(cls, "fit", spy)
    params = {"vectors": str(demo_vectors), "citations": str(citations), "k": 2, "tune": tune}
    result = run_baseline(name, RunConfig(data=demo_suite, tasks=["cite"], progress=False), out_dir=tmp_path / "out",
                          params=params)
    assert len(result.model_info.tuning) == (8 if tune else 0) and len(given) == 1  # k's settings share one fit
    for edges in given:
        assert edges  # the recomm metadata's citations and the ordinary references are there
        assert not {frozenset(edge) for edge in edges} & pairs  # no judged (query, candidate) pair, either way
        assert not {cited for _, cited in edges} & queries  # no citation of a test query
        assert (sorted(queries)[0], outsider) in edges  # a test query's own references are kept


FITS: list[tuple[float, int]] = []
"""(lr, k) of every `Flaky` fit."""


class Flaky(Adapter):
    """Constant vectors (every setting ties); `learn` fails as fastText does at a diverging learning rate."""

    name = "flaky"
    requires_fit = True

    def __init__(self, lr: float = 0.05, k: int = 1):
        self.lr, self.k = lr, k

    def learn(self, papers: Sequence[Paper]) -> None:
        FITS.append((self.lr, self.k))
        if self.lr == 0.1:
            raise UnusableSetting("diverged", {"lr": 0.1})

    def transform(self, papers: Sequence[Paper]) -> np.ndarray:
        return np.ones((len(papers), 4), dtype=np.float32)


def test_tuned_adapter_keeps_the_earlier_of_tied_settings_and_skips_what_cannot_be_fitted(demo_suite: Suite) -> None:
    grid = [{"lr": lr, "k": k} for k in (1, 2) for lr in (0.1, 0.05)]
    FITS.clear()
    tuned = TunedAdapter(Flaky(), grid).fit(demo_suite.papers()[:50], val=ValScorer(demo_suite))
    assert FITS == [(0.1, 1), (0.05, 1), (0.05, 2)]  # lr 0.1 failed once: its other setting is not tried
    assert [s["params"] for s in tuned.scores_] == [{"lr": 0.05, "k": 1}, {"lr": 0.05, "k": 2}]
    assert tuned.best_params_ == {"lr": 0.05, "k": 1} and tuned.adapter.get_params() == {"lr": 0.05, "k": 1}
    assert tuned.best_adapter_.k == 1 and tuned.get_params() == {"lr": 0.05, "k": 1, "tune": True}
    with pytest.raises(ScidocsEvalError, match="tuning flaky: no setting of the grid could be fitted"):
        TunedAdapter(Flaky(), [{"lr": 0.1}]).fit([], val=ValScorer(demo_suite))
    with pytest.raises(ScidocsEvalError, match="--tune: flaky needs a val split"):
        TunedAdapter(Flaky(), grid).fit([])
    with pytest.raises(ScidocsEvalError, match="--tune grid of 'flaky' has no parameter 'rate'"):
        TunedAdapter(Flaky(), [{"rate": 1}]).fit([], val=ValScorer(demo_suite))


def test_tune_refuses_an_adapter_without_a_grid_before_writing_anything(demo_suite: Suite, tmp_path: Path) -> None:
    with pytest.raises(ScidocsEvalError, match=r"--tune: baseline 'tfidf' has no settings to tune on val \(adapters "
                                               r"with a grid: doc2vec, fasttext-sum, sgc, sif\)"):
        run_baseline("tfidf", RunConfig(data=demo_suite), out_dir=tmp_path / "out", params={"tune": True})
    assert not (tmp_path / "out").exists()


def test_a_tuned_run_records_every_setting_and_embeds_with_the_best(demo_suite: Suite, demo_vectors: Path,
                                                                     tmp_path: Path) -> None:
    config = RunConfig(data=demo_suite, tasks=["cite"], progress=False)
    tuned = run_baseline("sif", config, out_dir=tmp_path / "tuned", params={"tune": True,
                         "vectors": str(demo_vectors)})
    info = RunResult.load(tmp_path / "tuned" / "sif.results.json").model_info
    assert info == tuned.model_info and info.params["tune"] is True and info.params["a"] == 1e-3
    assert [setting["params"] for setting in info.tuning] == [{"a": a} for a in A_GRID]
    assert info.best_params == max(info.tuning, key=lambda setting: setting["score"])["params"]
    fixed = run_baseline("sif", config, out_dir=tmp_path / "fixed", params={"vectors": str(demo_vectors),
                         **info.best_params})
    assert fixed.tasks["cite"].metrics == tuned.tasks["cite"].metrics and not fixed.model_info.tuning
    assert (tmp_path / "fixed" / "sif.jsonl").read_bytes() == (tmp_path / "tuned" / "sif.jsonl").read_bytes()


def test_settings_that_differ_only_in_what_transform_reads_share_one_fit(demo_suite: Suite, demo_vectors: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """SGC's `k` is a `transform_params`: its tuning fits SIF once per fastText setting, not once per k; a fitted
    copy with another k embeds as a fresh fit with it (on the recomm papers, which have citation edges)."""
    papers = demo_suite.papers()
    recomm = [p for p in papers if p.paper_id in set(demo_suite.metadata("recomm"))]
    sgc = ADAPTERS["sgc"]
    learned = []
    learn = sgc.learn
    monkeypatch.setattr(sgc, "learn", lambda self, corpus: learned.append(self.k) or learn(self, corpus))
    tuned = fit_adapter(TunedAdapter(get_adapter("sgc", vectors=str(demo_vectors)), [{"k": 1}, {"k": 3}]), papers,
                        demo_suite)
    assert learned == [1] and len(tuned.scores_) == 2
    shared = copy.copy(tuned.best_adapter_)
    shared.k = 3
    fresh = fit_adapter(get_adapter("sgc", vectors=str(demo_vectors), k=3), papers, demo_suite)
    np.testing.assert_array_equal(shared.transform(recomm), fresh.transform(recomm))
    assert not np.allclose(shared.transform(recomm), tuned.transform(recomm), atol=1e-3)


def test_held_out_pairs_come_from_each_data_shape() -> None:
    """The guard reads every task's judged queries and shown pairs from its data shapes, so a task registered later
    (a reranking set with its own candidate lists, impressions of any split) is guarded with no other change."""
    from scidocs_eval.evaluation.integrity import ImpressionsSplit, JudgedSplit, LabelledSplit
    from scidocs_eval.formats.suite import Impression

    judged = JudgedSplit("t", "t/test.qrel", {"q1": {"a": 1, "b": 0}}, candidate_lists={"q1": ["a", "c"]})
    assert judged.held_out() == ({"q1"}, {frozenset(("q1", p)) for p in "abc"})
    impressions = [Impression("q2", "x", ("x", "y"), 2)]
    train = ImpressionsSplit("r", "r/train.csv", impressions, "p.json", 5, role="train")
    scored = ImpressionsSplit("r", "r/test.csv", impressions, "p.json", 5)
    assert train.held_out() == (set(), {frozenset(("q2", "x")), frozenset(("q2", "y"))})
    assert scored.held_out()[0] == {"q2"}
    labelled = LabelledSplit("c", "c/train.csv", "c/test.csv", ["p"], np.array([0]), ["q"], np.array([1]))
    assert labelled.held_out() == (set(), set())


class Warned(Adapter):
    """Constant vectors (the first setting wins the tie); each fit warns about its own setting, as fastText's
    under-training check does about a grid point's vectors."""

    name = "warned"
    requires_fit = True

    def __init__(self, k: int = 1):
        self.k = k

    def learn(self, papers: Sequence[Paper]) -> None:
        logging.getLogger("scidocs_eval.models.warned").warning("vectors of k=%d look under-trained", self.k)

    def transform(self, papers: Sequence[Paper]) -> np.ndarray:
        return np.ones((len(papers), 4), dtype=np.float32)


def test_tune_prints_the_warnings_of_the_picked_settings_fit_only(demo_suite: Suite,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    """A grid point's fit warning is about vectors that embed nothing unless that point is picked: the picked
    setting's warnings are printed (after the search), the others' are an info line each (seen with -v)."""
    with caplog.at_level(logging.INFO, logger="scidocs_eval"):
        tuned = TunedAdapter(Warned(), [{"k": 1}, {"k": 2}, {"k": 3}]).fit(demo_suite.papers()[:50],
                                                                        val=ValScorer(demo_suite))
    assert tuned.best_params_ == {"k": 1}
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        "vectors of k=1 look under-trained"]
    assert [r.getMessage() for r in caplog.records if "not picked" in r.getMessage()] == [
        "tuning warned: a setting not picked: vectors of k=2 look under-trained",
        "tuning warned: a setting not picked: vectors of k=3 look under-trained"]
