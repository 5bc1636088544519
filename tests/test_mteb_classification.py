"""ArxivClassification.v2: the same numbers as MTEB's own AbsTaskClassification on a synthetic copy (every value of
its scores dict, each experiment's included, to 1e-6)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.evaluation.task import get_task
from scidocs_eval.evaluators.mteb_classification import undersampled_experiments
from scidocs_eval.formats.hf_rows import text_id
from scidocs_eval.formats.suite import Suite
from tests.builders import mteb_lookup_encoder, write_classification_copy, write_vectors

TASK = "arxiv-classification"


def _write_copy(root: Path, labels: int) -> dict[str, np.ndarray]:
    return write_classification_copy(root, TASK, labels)


def _mteb_scores(root: Path, vectors: dict[str, np.ndarray]) -> dict[str, Any]:
    mteb = pytest.importorskip("mteb", reason="mteb is not installed (pip install -e .[mteb])")
    import datasets
    import orjson

    theirs = mteb.get_task("ArxivClassification.v2")
    theirs.dataset = datasets.DatasetDict({split: datasets.Dataset.from_list(
        [orjson.loads(line) for line in (root / TASK / f"{split}.jsonl").read_bytes().splitlines()])
        for split in ("train", "test")})
    theirs.data_loaded = True
    return theirs.evaluate(mteb_lookup_encoder(vectors), "test", encode_kwargs={"batch_size": 64})["default"]


@pytest.mark.parametrize("labels", [5, 2])
def test_arxiv_classification_equals_mteb(tmp_path: Path, labels: int) -> None:
    vectors = _write_copy(tmp_path, labels)
    theirs = _mteb_scores(tmp_path, vectors)
    task = get_task(TASK)
    (papers, _), = task.role_papers(task.load(Suite(tmp_path), "test")).values()
    path = write_vectors(tmp_path / "v.jsonl", {p.paper_id: vectors[p.title] for p in papers})
    result = evaluate(path, RunConfig(data=tmp_path, tasks=[TASK], cache=False, progress=False)).tasks[TASK]
    ours = result.details["mteb_scores"]
    compared = [k for k, v in theirs.items() if isinstance(v, float) and not np.isnan(v)]
    assert {"accuracy", "f1", "recall_weighted", "main_score"} <= set(compared)
    assert ("ap" in compared) == (labels == 2)
    for key in compared:
        assert ours[key] == pytest.approx(theirs[key], abs=1e-6), key
    assert len(ours["scores_per_experiment"]) == len(theirs["scores_per_experiment"]) == 10
    for mine, other in zip(ours["scores_per_experiment"], theirs["scores_per_experiment"]):
        for key, value in other.items():
            if value is not None:
                assert mine[key] == pytest.approx(value, abs=1e-6), key
    assert result.metrics["accuracy"] == pytest.approx(100 * theirs["accuracy"], abs=0.006)
    assert result.ci["accuracy"][0] <= result.metrics["accuracy"] <= result.ci["accuracy"][1]


def test_only_the_papers_some_experiment_trains_on_are_embedded(tmp_path: Path) -> None:
    _write_copy(tmp_path, 4)
    task = get_task(TASK)
    (papers, prompt_type), = task.role_papers(task.load(Suite(tmp_path), "test")).values()
    train_texts, train_labels, experiments, test_texts, _ = task.needed(task.load(Suite(tmp_path), "test"))
    used = {train_texts[i] for chosen in experiments for i in chosen}
    assert {p.paper_id for p in papers} == {text_id(t) for t in used | set(test_texts)}
    assert len(papers) == len(used | set(test_texts)) < len(train_texts) + len(test_texts)
    assert all(len(chosen) == 4 * 8 for chosen in experiments)
    assert undersampled_experiments(train_labels)[1] != undersampled_experiments(train_labels)[0]
