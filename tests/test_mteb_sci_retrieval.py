"""MTEB's other scientific retrieval sets (benchmark "mteb-sci"): MTEB's ids, revisions, splits and rules, and the
same numbers as MTEB's own task classes (their k values, subsets and task-specific scores) on synthetic copies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.evaluation.task import TASKS, task_names
from scidocs_eval.formats.retrieval import read_retrieval_data
from tests.builders import build_retrieval_dataset, mteb_lookup_encoder, write_vectors

RETRIEVAL_SETS = ["litsearch", "peerqa", "qasper", "scifact", "nfcorpus", "trec-covid", "birco-dorismae",
                  "scidocs-decontaminated", "scifact-decontaminated", "nfcorpus-decontaminated",
                  "trec-covid-decontaminated", "nano-scifact", "nano-nfcorpus"]


def _mteb_scores(folder: Path, task: str, vectors: dict[str, np.ndarray]) -> dict[str, Any]:
    """MTEB's scores dict by the task's own MTEB class (its k values, subset and task-specific scores)."""
    mteb = pytest.importorskip("mteb", reason="mteb is not installed (pip install -e .[mteb])")
    import datasets
    from mteb.abstasks.retrieval_dataset_loaders import RetrievalSplitData

    spec = TASKS[task].spec
    split = spec.dataset["split"]
    data = read_retrieval_data(folder, split, reranking=spec.family == "reranking")
    theirs = mteb.get_task(spec.mteb_task)
    corpus = datasets.Dataset.from_list([{"id": d.doc_id, "title": d.title, "text": d.text}
                                         for d in data.corpus.values()])
    queries = datasets.Dataset.from_list([{"id": q, "text": text} for q, text in data.queries.items()])
    subset = theirs.hf_subsets[0]
    theirs.dataset = {subset: {split: RetrievalSplitData(corpus=corpus, queries=queries, relevant_docs=data.qrels,
                                                         top_ranked=data.top_ranked)}}
    theirs.data_loaded = True
    return theirs.evaluate(mteb_lookup_encoder(vectors), split, encode_kwargs={"batch_size": 64})[subset]


@pytest.mark.parametrize("task", ["scifact", "nano-nfcorpus", "peerqa"])
def test_retrieval_sets_equal_mteb(tmp_path: Path, task: str) -> None:
    spec = TASKS[task].spec
    reranking = spec.family == "reranking"
    built = build_retrieval_dataset(tmp_path / task, documents=600, queries=30, candidates=40 if reranking else None,
                                    split=spec.dataset["split"])
    theirs = _mteb_scores(tmp_path / task, task, built["texts"])
    queries = write_vectors(tmp_path / "q.jsonl", built["queries"])
    corpus = write_vectors(tmp_path / "c.jsonl", built["corpus"])
    config = RunConfig(data=tmp_path, tasks=[task], cache=False, progress=False)
    ours = evaluate({spec.query_group: queries, spec.embedding_group: corpus}, config)
    ours = ours.tasks[task].details["mteb_scores"]
    compared = [name for name in theirs if isinstance(theirs[name], float) and not name.startswith("nauc")]
    assert {"ndcg_at_10", "map_at_1000", "mrr_at_10"} <= set(compared)
    if task == "peerqa":
        assert {"ndcg_at_25", "R_cap_at_50", "R_cap_at_1000"} <= set(compared)
    for name in compared:
        assert ours[name] == pytest.approx(theirs[name], abs=1e-6), name
    assert ours["main_score"] == pytest.approx(theirs["main_score"], abs=1e-6)


def test_each_set_declares_mtebs_dataset_split_and_main_score() -> None:
    mteb = pytest.importorskip("mteb", reason="mteb is not installed (pip install -e .[mteb])")
    assert set(RETRIEVAL_SETS) <= set(task_names(benchmark="mteb-sci"))
    for name in RETRIEVAL_SETS:
        spec, theirs = TASKS[name].spec, mteb.get_task(TASKS[name].spec.mteb_task)
        assert spec.dataset["path"] == theirs.metadata.dataset["path"], name
        assert spec.dataset["revision"] == theirs.metadata.dataset["revision"], name
        assert [spec.dataset["split"]] == list(theirs.metadata.eval_splits), name
        assert spec.main_score == theirs.metadata.main_score, name
        assert TASKS[name].ignore_identical_ids == theirs.ignore_identical_ids, name
        assert tuple(TASKS[name].k_values) == tuple(theirs.k_values), name
        assert spec.dataset.get("subset", "default") == theirs.hf_subsets[0], name
        assert spec.metrics == tuple(n for n in spec.metrics if n.split("_at_")[0] in
                                     ("ndcg", "map", "recall", "precision", "mrr", "hit_rate")), name


def test_docs_list_every_mteb_task_with_dataset_revision_and_main_score() -> None:
    text = (Path(__file__).parents[1] / "docs" / "mteb.md").read_text("utf-8")
    rows = {line.split("|")[1].strip(" `"): line for line in text.splitlines() if line.startswith("| `")}
    for name, cls in TASKS.items():
        spec = cls.spec
        if spec.mteb_task is None:
            continue
        assert name in rows, name
        for value in (spec.mteb_task, spec.dataset["path"], spec.dataset["revision"], spec.main_score):
            assert value in rows[name], (name, value)
        assert "not computed" in rows[name] or "nothing" in rows[name] or "`" in rows[name].split("|")[7], name
