"""The embedding plan and the embedding cache: each distinct (text, role) encoded once across benchmarks, a second
run encodes nothing and scores the same, another weight misses, a corrupt or foreign cache entry is never used."""

from __future__ import annotations

import logging
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import orjson
import pytest

from scidocs_eval.cli.main import main
from scidocs_eval.data.demo import DemoConfig, build_demo_suite
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.papers import embedding_needs, papers_to_embed
from scidocs_eval.formats import vector_cache
from scidocs_eval.formats.corpus import paper_text
from scidocs_eval.formats.retrieval import Document, write_beir
from scidocs_eval.formats.suite import Suite
from scidocs_eval.formats.vector_cache import SUFFIX, VectorCache
from scidocs_eval.run.embedding_plan import PROBE_PAPERS
from scidocs_eval.run.model_object import EncodeConfig, EncoderAdapter, evaluate_model
from scidocs_eval.tasks.scirepeval import write_synthetic_scirepeval

TASKS = ["mag", "cite", "scidocs-retrieval", "scirepeval-scidocs-cite"]
BENCHMARKS = ["scidocs", "mteb-scidocs", "scirepeval"]


@pytest.fixture(scope="module")
def shared_suite(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    """A small demo suite with SciRepEval's configs and MTEB's SCIDOCS layout beside it, holding the same papers:
    SciRepEval's scidocs_view_cite_read records and MTEB's corpus take the texts of the papers `cite` reads."""
    folder = tmp_path_factory.mktemp("shared")
    suite = build_demo_suite(folder / "suite", DemoConfig(mag_papers=300, mesh_papers=200, ranking_queries=10))
    write_synthetic_scirepeval(folder / "scirepeval", seed=1)
    shutil.copytree(folder / "scirepeval", suite.root, dirs_exist_ok=True)
    cited = [paper for paper in papers_to_embed(suite, ["cite"]) if paper.title and paper.abstract]
    config = suite.root / "scirepeval" / "scidocs_view_cite_read" / "evaluation.jsonl"
    records = [orjson.loads(line) for line in config.read_bytes().splitlines()]
    for record, paper in zip(records, cited):
        record.update(title=paper.title, abstract=paper.abstract)
    config.write_bytes(b"".join(orjson.dumps(record) + b"\n" for record in records))
    corpus = [Document(f"doc-{paper.paper_id}", paper.title, paper.abstract) for paper in cited[:120]]
    queries = {f"q{i}": cited[i].title for i in range(12)}
    qrels = {query: {corpus[(3 * i + j) % len(corpus)].doc_id: 1 for j in range(3)} for i, query in enumerate(queries)}
    write_beir(suite.root / "scidocs-retrieval", corpus, queries, {"test": qrels})
    return Suite(suite.root)


PROBE_TEXTS = {paper_text(paper, " ") for paper in PROBE_PAPERS}


class CountingModel:
    """A plain function's worth of model: hashed character counts; remembers every text it was given (but the
    cache's probe texts, which every cached entry's model embeds again)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.seen += [text for text in texts if text not in PROBE_TEXTS]
        return np.array([[len(t) % 17, t.count("a"), t.count("e"), t.count("o") + 1.0] for t in texts])


def _metrics(result: object) -> dict:
    return {name: task.metrics for name, task in result.tasks.items()}  # type: ignore[attr-defined]


def test_three_benchmarks_sharing_papers_encode_each_distinct_text_once_and_a_rerun_encodes_nothing(
        shared_suite: Suite, tmp_path: Path) -> None:
    model = CountingModel()
    first = evaluate_model(model, RunConfig(data=shared_suite, tasks=TASKS, benchmarks=BENCHMARKS, progress=False,
                                            output=tmp_path / "first.json"),
                           encode=EncodeConfig(fingerprint="counting v1"))
    assert set(first.tasks) == set(TASKS) and first.settings.benchmarks == tuple(BENCHMARKS)
    wanted = [paper_text(paper, " ") for need in embedding_needs(shared_suite, TASKS).values()
              for paper in (need.papers or [p for p in shared_suite.papers((need.metadata_file,))
                                            if need.ids is None or p.paper_id in need.ids]) if paper.has_text]
    assert max(Counter(model.seen).values()) == 1  # each distinct (text, role) once
    assert set(model.seen) == set(wanted)
    assert len(model.seen) < len(wanted) - 100  # the benchmarks shared papers, embedded once for all of them
    again = CountingModel()
    second = evaluate_model(again, RunConfig(data=shared_suite, tasks=TASKS, benchmarks=BENCHMARKS, progress=False,
                                             output=tmp_path / "second.json"),
                            encode=EncodeConfig(fingerprint="counting v1"))
    assert again.seen == []
    assert _metrics(second) == _metrics(first)
    old, new = (orjson.loads((tmp_path / name).read_bytes()) for name in ("first.json", "second.json"))
    for run in (old, new):
        for key in ("timings", "versions"):
            run.pop(key)
        for task in run["tasks"].values():
            task.pop("seconds")
    assert old == new  # the same results file, apart from timings


def test_one_changed_weight_misses_the_cache(demo_suite: Suite) -> None:
    torch = pytest.importorskip("torch")

    class Linear(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(0)
            self.layer = torch.nn.Linear(3, 4)

        def encode(self, texts: list[str], batch_size: int = 32, **kwargs: object) -> np.ndarray:
            self.calls = getattr(self, "calls", 0) + len(set(texts) - PROBE_TEXTS)
            features = torch.tensor([[len(t) / 100, t.count("a") / 10, t.count("e") / 10] for t in texts])
            with torch.no_grad():
                return self.layer(features).numpy()

    needed = sum(p.has_text for p in papers_to_embed(demo_suite, ["mesh"]))
    model = Linear()
    evaluate_model(model, RunConfig(data=demo_suite, tasks=["mesh"], progress=False))
    assert model.calls == needed
    same = Linear()
    evaluate_model(same, RunConfig(data=demo_suite, tasks=["mesh"], progress=False))
    assert getattr(same, "calls", 0) == 0  # same weights: every vector from the cache
    changed = Linear()
    with torch.no_grad():
        changed.layer.weight[0, 0] += 1e-3
    evaluate_model(changed, RunConfig(data=demo_suite, tasks=["mesh"], progress=False))
    assert changed.calls == needed



def test_another_release_never_reads_this_releases_vectors(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    keys, vectors = [b"a", b"b"], np.arange(6, dtype=np.float32).reshape(2, 3)
    VectorCache(tmp_path).put("model", "proximity", keys, vectors)
    assert sorted(VectorCache(tmp_path).get("model", "proximity", keys)) == [0, 1]
    monkeypatch.setattr(vector_cache, "PRODUCER", "scidocs-eval 99.0")
    assert VectorCache(tmp_path).get("model", "proximity", keys) == {}

def test_a_corrupt_or_foreign_cache_entry_is_recomputed_with_a_warning(demo_suite: Suite,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    first = CountingModel()
    reference = evaluate_model(first, RunConfig(data=demo_suite, tasks=["mesh"], progress=False),
                               encode=EncodeConfig(fingerprint="a"))
    other = CountingModel()
    evaluate_model(other, RunConfig(data=demo_suite, tasks=["mesh"], progress=False),
                   encode=EncodeConfig(fingerprint="b"))
    cache = VectorCache()
    seg_a, seg_b = [next(cache._folder(str(EncoderAdapter(CountingModel(), fingerprint=f).cache_fingerprint()),
                                       "").glob(f"*{SUFFIX}")) for f in ("a", "b")]
    shutil.copy(seg_b, seg_a)  # another model's vectors under this model's address: foreign
    model = CountingModel()
    with caplog.at_level(logging.WARNING, logger="scidocs_eval"):
        result = evaluate_model(model, RunConfig(data=demo_suite, tasks=["mesh"], progress=False),
                                encode=EncodeConfig(fingerprint="a"))
    assert "of another model or role than its folder says" in caplog.text and str(seg_a) in caplog.text
    assert sorted(model.seen) == sorted(first.seen) and _metrics(result) == _metrics(reference)
    caplog.clear()
    data = bytearray(seg_b.read_bytes())
    data[-3] ^= 0xFF  # one flipped byte in a vector
    seg_b.write_bytes(bytes(data))
    model = CountingModel()
    with caplog.at_level(logging.WARNING, logger="scidocs_eval"):
        evaluate_model(model, RunConfig(data=demo_suite, tasks=["mesh"], progress=False),
                       encode=EncodeConfig(fingerprint="b"))
    assert "corrupt (its bytes do not match" in caplog.text and sorted(model.seen) == sorted(other.seen)


def test_cache_command_reports_prunes_and_clears(demo_suite: Suite, capsys: pytest.CaptureFixture) -> None:
    evaluate_model(CountingModel(), RunConfig(data=demo_suite, tasks=["mesh"], progress=False),
                   encode=EncodeConfig(fingerprint="a"))
    assert main(["cache", "info"]) == 0
    assert " vectors of 1 model/role pair(s) in 1 segment(s)" in capsys.readouterr().out
    assert main(["cache", "prune", "--older-than", "1"]) == 0
    assert "removed 0 segment(s)" in capsys.readouterr().out
    assert main(["cache", "prune", "--older-than", "0"]) == 0
    assert "removed 1 segment(s)" in capsys.readouterr().out
    evaluate_model(CountingModel(), RunConfig(data=demo_suite, tasks=["mesh"], progress=False),
                   encode=EncodeConfig(fingerprint="a"))
    assert main(["cache", "clear"]) == 0
    assert "removed 1 segment(s)" in capsys.readouterr().out
    model = CountingModel()
    evaluate_model(model, RunConfig(data=demo_suite, tasks=["mesh"], progress=False),
                   encode=EncodeConfig(fingerprint="a"))
    assert model.seen  # nothing left to reuse


def test_baseline_runs_several_benchmarks_with_one_plan_and_its_rerun_reads_the_cache(
        shared_suite: Suite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scidocs_eval.baselines.random_vectors import RandomAdapter

    embedded: list[str] = []
    transform = RandomAdapter.transform

    def counting(self: RandomAdapter, papers: list) -> np.ndarray:
        embedded.extend(paper.paper_id for paper in papers if paper not in PROBE_PAPERS)
        return transform(self, papers)

    monkeypatch.setattr(RandomAdapter, "transform", counting)
    options = ["--data", str(shared_suite.root), "--benchmark", "scidocs,mteb-scidocs",
               "--tasks", "cite,scidocs-retrieval", "--quiet"]
    assert main(["baseline", "random", *options, "--out-dir", str(tmp_path / "one")]) == 0
    assert embedded and max(Counter(embedded).values()) == 1  # random reads ids: each (id, text) once
    first = len(embedded)
    assert main(["baseline", "random", *options, "--out-dir", str(tmp_path / "two")]) == 0
    assert len(embedded) == first  # the second run took every vector from the cache
    assert main(["baseline", "random", *options, "--out-dir", str(tmp_path / "three"), "--no-cache"]) == 0
    assert len(embedded) == 2 * first
    one, two = (orjson.loads((tmp_path / run / "random.results.json").read_bytes()) for run in ("one", "two"))
    assert one["tasks"]["cite"]["metrics"] == two["tasks"]["cite"]["metrics"]
    assert one["settings"]["benchmarks"] == ["scidocs", "mteb-scidocs"]
    for run in ("one", "two"):  # the files are the same bytes, from the model or from the cache
        assert {path.name for path in (tmp_path / run).glob("*.jsonl")} == {
            "random.jsonl", "random-corpus.jsonl", "random-queries.jsonl"}
    for name in ("random.jsonl", "random-corpus.jsonl", "random-queries.jsonl"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_a_group_store_gathers_its_rows_zeroes_papers_without_text_and_casts(dtype: type) -> None:
    from scidocs_eval.formats.suite import Paper
    from scidocs_eval.run.embedding_plan import NO_TEXT, EmbeddingPlan, GroupRows, group_stores

    papers = [Paper("a", "title a", ""), Paper("b", "", ""), Paper("c", "title c", "")]
    plan = EmbeddingPlan([], {"g": GroupRows(0, papers, [1, NO_TEXT, 0], None),
                              "none": GroupRows(1, papers[1:2], [NO_TEXT], None)})
    job_vectors = np.array([[1.0, 2.0], [3.0, 4.0]])
    stores = group_stores(plan, [job_vectors, np.zeros((0, 0), dtype=np.float32)], dtype)
    assert stores["g"].ids == ["a", "b", "c"] and stores["g"].matrix.dtype == dtype
    np.testing.assert_array_equal(stores["g"].matrix, [[3.0, 4.0], [0.0, 0.0], [1.0, 2.0]])
    assert stores["g"].empty.tolist() == [False, True, False]
    assert stores["none"].matrix.shape == (1, 0) and stores["none"].empty.tolist() == [True]
    np.testing.assert_array_equal(job_vectors, [[1.0, 2.0], [3.0, 4.0]])  # the job's vectors are not written to
