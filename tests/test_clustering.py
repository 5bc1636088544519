"""MTEB's clustering tasks (bioRxiv/medRxiv v2, ArXiv hierarchical): the same numbers as MTEB's own evaluator.

Each test writes a synthetic copy of a task's hub layout (rows of one document, or rows of document lists; ArXiv's
"main.secondary" labels), gives every text a vector near its label's centre, scores it with our task (vectors
from an embeddings file) and with MTEB's own task class (its dataset_transform and AbsTaskClustering evaluation,
an encoder returning the same vectors): every value of MTEB's scores dict must agree to 1e-6.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.evaluation.task import TASKS, get_task
from scidocs_eval.evaluators.clustering import hf_test_split
from scidocs_eval.formats.suite import Suite
from tests.builders import mteb_lookup_encoder, write_clustering_copy, write_vectors


def _write_copy(root: Path, task: str, count: int, seed: int = 0) -> dict[str, np.ndarray]:
    return write_clustering_copy(root, task, count, seed)


def _mteb_scores(root: Path, task: str, vectors: dict[str, np.ndarray], cluster_size: int) -> dict[str, Any]:
    """MTEB's scores dict, by MTEB's own task class on the same rows."""
    mteb = pytest.importorskip("mteb", reason="mteb is not installed (pip install -e .[mteb])")
    import datasets
    import orjson

    rows = [orjson.loads(line) for line in (root / task / "test.jsonl").read_bytes().splitlines()]
    theirs = mteb.get_task(TASKS[task].spec.mteb_task)
    theirs.dataset = datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})
    theirs.data_loaded = True
    theirs.max_documents_per_cluster = cluster_size
    theirs.dataset_transform()
    with threadpool_limits(1):  # the same numbers, without OpenMP's cost on small batches
        return theirs.evaluate(mteb_lookup_encoder(vectors), "test", encode_kwargs={"batch_size": 64})["default"]


def _assert_same(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    assert set(theirs) - {"hf_subset", "languages"} <= set(ours)
    for key, value in theirs.items():
        if isinstance(value, dict):
            assert list(ours[key]) == list(value), key
            for level, values in value.items():
                np.testing.assert_allclose(ours[key][level], values, atol=1e-6, err_msg=f"{key} {level}")
        elif isinstance(value, float):
            assert ours[key] == pytest.approx(value, abs=1e-6), key


SMALL = 1024
"""documents per experiment in the quicker tests (MTEB's 16,384 in one), set on both sides."""


@pytest.mark.parametrize(("task", "count"), [("biorxiv-clustering-p2p", 1600), ("medrxiv-clustering-s2s", 1500),
                                             ("arxiv-hierarchical-p2p", 2600)])
def test_clustering_equals_mteb(tmp_path: Path, task: str, count: int, monkeypatch: Any) -> None:
    monkeypatch.setattr(TASKS[task], "cluster_size", SMALL)
    _equal_to_mteb(tmp_path, task, count, SMALL)


def test_clustering_at_mtebs_sizes_equals_mteb(tmp_path: Path) -> None:
    _equal_to_mteb(tmp_path, "arxiv-hierarchical-s2s", 2600, TASKS["arxiv-hierarchical-s2s"].cluster_size)


def _equal_to_mteb(tmp_path: Path, task: str, count: int, cluster_size: int) -> None:
    vectors = _write_copy(tmp_path, task, count)
    theirs = _mteb_scores(tmp_path, task, vectors, cluster_size)
    ours = evaluate(write_vectors(tmp_path / "v.jsonl", {text_id: vectors[paper.title] for text_id, paper in
                                                         _embedded(tmp_path, task).items()}),
                    RunConfig(data=tmp_path, tasks=[task], cache=False, progress=False)).tasks[task]
    _assert_same(ours.details["mteb_scores"], theirs)
    assert ours.metrics["v_measure"] == pytest.approx(100 * theirs["v_measure"], abs=0.006)
    assert ours.details["mteb_scores"]["main_score"] == theirs["main_score"]
    assert len(ours.items["v_measure"]) == ours.details["experiments"] == 10 * ours.details["levels"]
    assert ours.ci["v_measure"][0] <= ours.metrics["v_measure"] <= ours.ci["v_measure"][1]
    if TASKS[task].hierarchical_sample:
        assert ours.details["levels"] == 2 and list(theirs["v_measures"]) == ["Level 0", "Level 1"]


def _embedded(root: Path, task: str) -> dict[str, Any]:
    instance = get_task(task)
    papers, prompt_type = instance.role_papers(instance.load(Suite(root), "test"))[TASKS[task].spec.embedding_group]
    assert prompt_type == "document"
    return {paper.paper_id: paper for paper in papers}


def test_only_mtebs_sample_is_embedded_each_text_once(tmp_path: Path) -> None:
    _write_copy(tmp_path, "biorxiv-clustering-s2s", 1000)
    rows = (tmp_path / "biorxiv-clustering-s2s" / "test.jsonl").read_bytes().splitlines()
    (tmp_path / "biorxiv-clustering-s2s" / "test.jsonl").write_bytes(b"\n".join(rows + rows[:500]) + b"\n")
    papers = _embedded(tmp_path, "biorxiv-clustering-s2s")
    task = get_task("biorxiv-clustering-s2s")
    texts, _, _ = task.embedded(task.load(Suite(tmp_path), "test"))
    assert len(texts) == int(0.04 * 1500) and len(papers) == len(set(texts)) < len(texts)


def test_hf_test_split_is_datasets_train_test_split() -> None:
    datasets = pytest.importorskip("datasets")
    rows = datasets.Dataset.from_dict({"i": list(range(300))})
    assert rows.train_test_split(test_size=64, seed=42)["test"]["i"] == hf_test_split(300, 64, 42)


def test_a_missing_vector_is_loud_and_stops_under_error(tmp_path: Path, caplog: Any) -> None:
    from scidocs_eval.errors import MissingEmbeddingsError

    vectors = _write_copy(tmp_path, "biorxiv-clustering-p2p", 1000)
    embedded = _embedded(tmp_path, "biorxiv-clustering-p2p")
    kept = dict(list(embedded.items())[1:])
    path = write_vectors(tmp_path / "v.jsonl", {i: vectors[p.title] for i, p in kept.items()})
    result = evaluate(path, RunConfig(data=tmp_path, tasks=["biorxiv-clustering-p2p"], cache=False, progress=False))
    assert result.tasks["biorxiv-clustering-p2p"].coverage["documents_missing"] >= 1
    assert "not MTEB's" in caplog.text
    with pytest.raises(MissingEmbeddingsError):
        evaluate(path, RunConfig(data=tmp_path, tasks=["biorxiv-clustering-p2p"], cache=False, progress=False,
                                 missing="error"))


def test_a_row_without_labels_names_the_file_and_line(tmp_path: Path) -> None:
    from scidocs_eval.errors import InputError

    (tmp_path / "biorxiv-clustering-p2p").mkdir()
    (tmp_path / "biorxiv-clustering-p2p" / "test.jsonl").write_text('{"sentences": "a", "labels": "x"}\n'
                                                                      '{"sentences": "b"}\n')
    with pytest.raises(InputError, match=r"test.jsonl.*2|line 2"):
        get_task("biorxiv-clustering-p2p").load(Suite(tmp_path), "test")


def _run(tmp_path: Path, task: str, vectors: dict[str, np.ndarray], capsys: Any) -> tuple[int, str]:
    from scidocs_eval.cli.main import main
    from scidocs_eval.formats.hf_rows import text_id

    path = write_vectors(tmp_path / "v.jsonl", {text_id(text): vector for text, vector in vectors.items()})
    code = main(["run", "--embeddings", str(path), "--data", str(tmp_path), "--tasks", task, "--quiet",
                 "-o", str(tmp_path / "out.json")])
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return code, err


def test_a_text_under_two_labels_in_mtebs_sample_warns_with_the_count(tmp_path: Path, caplog: Any,
                                                                       capsys: Any) -> None:
    import json
    import random

    from scidocs_eval.evaluators.clustering import SEED, embedded_sample

    task = "biorxiv-clustering-s2s"
    vectors = _write_copy(tmp_path, task, 1000)
    path = tmp_path / task / "test.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    first, second, third = embedded_sample(len(rows), random.Random(SEED))[:3]
    rows[second] = {"sentences": rows[first]["sentences"], "labels": rows[first]["labels"] + " (other)"}
    rows[third] = dict(rows[first])
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    code, _ = _run(tmp_path, task, vectors, capsys)
    assert code == 0
    assert "1 text(s) occur more than once in MTEB's 4% sample of 1000 documents (40 drawn: int(0.04 × 1000)) " \
           "(3 copies), 1 of them under two or more labels" in caplog.text and "[repeated-paper]" in caplog.text


def test_an_empty_sample_names_the_stage_that_emptied_it(tmp_path: Path, capsys: Any) -> None:
    vectors = _write_copy(tmp_path, "biorxiv-clustering-p2p", 20)
    code, err = _run(tmp_path, "biorxiv-clustering-p2p", vectors, capsys)
    assert code == 2 and err.count("scidocs-eval: error:") == 1
    assert "test.jsonl: MTEB's 4% sample of 20 documents (0 drawn: int(0.04 × 20)) is empty" in err, err


def test_arxivs_sample_needs_more_documents_than_it_draws(tmp_path: Path, capsys: Any) -> None:
    vectors = _write_copy(tmp_path, "arxiv-hierarchical-p2p", 300)
    code, err = _run(tmp_path, "arxiv-hierarchical-p2p", vectors, capsys)
    assert code == 2 and "test.jsonl: 300 documents: MTEB's train_test_split(test_size=2048) draws" in err, err
