"""The `sci` benchmark: every scientific task in one run (SciDocs' seven, MTEB's SciDocs tasks and its other
scientific sets, SciRepEval's) on synthetic copies, and its table of each owner's own averages side by side."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scidocs_eval.cli.main import main
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.task import TASKS, task_names
from scidocs_eval.leaderboard.sci_table import HEADERS, mteb_means, render_sci_table
from scidocs_eval.run.model_object import evaluate_model
from scidocs_eval.tasks.scirepeval import write_synthetic_scirepeval
from tests.builders import write_mteb_copies


class CountingEncoder:
    """A deterministic encoder (a vector from each text's digest) that counts what it embeds."""

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()

    def encode(self, texts: list[str], batch_size: int = 32, **kwargs: Any) -> np.ndarray:
        self.seen.update(texts)
        return np.stack([np.frombuffer(hashlib.sha256(t.encode()).digest(), dtype=np.uint8)[:16].astype(np.float32)
                         / 127.5 - 1 for t in texts])


@pytest.fixture(scope="module")
def sci_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sci") / "data"
    write_synthetic_scirepeval(root)
    write_mteb_copies(root)
    return root


def test_sci_lists_every_scientific_benchmarks_tasks(capsys: Any) -> None:
    names = set(task_names(benchmark="sci"))
    for member in ("scidocs", "mteb-scidocs", "mteb-sci", "scirepeval"):
        assert set(task_names(benchmark=member)) <= names
    assert not set(task_names(benchmark="full-corpus")) & names
    assert main(["benchmarks"]) == 0
    assert "sci " in capsys.readouterr().out


SCIREPEVAL = ["scirepeval-search", "scirepeval-fields-of-study", "scirepeval-citation-count"]
"""SciRepEval's tasks in the one-run test (a few: the whole suite takes minutes on 2 cores)."""


@pytest.fixture(scope="module")
def sci_run(sci_data: Path) -> tuple[Any, CountingEncoder]:
    encoder = CountingEncoder()
    tasks = [*task_names(benchmark="mteb-scidocs"), *task_names(benchmark="mteb-sci"), *SCIREPEVAL]
    with pytest.MonkeyPatch.context() as patch:  # fewer documents per k-means experiment: seconds, not a minute
        patch.setattr(TASKS["biorxiv-clustering-p2p"].__mro__[1], "cluster_size", 1024)
        result = evaluate_model(encoder, RunConfig(data=sci_data, tasks=tasks, benchmarks="sci", cache=False,
                                                   progress=False), name="org/hash")
    return result, encoder


def test_one_run_scores_every_task_with_data_and_prints_each_owners_averages(sci_run: Any) -> None:
    result, encoder = sci_run
    scored = set(result.tasks)
    assert set(task_names(benchmark="mteb-sci")) | set(SCIREPEVAL) <= scored, result.failed
    means = mteb_means(result)
    assert set(means) == {"Retrieval", "Reranking", "Clustering", "Classification"}
    assert means["Clustering"][1] == 6 and means["Classification"][1] == 1
    assert means["Retrieval"][1] == sum(1 for n in scored if TASKS[n].spec.mteb_task and
                                        TASKS[n].spec.family == "retrieval") + 2  # PeerQA, QASPER
    table = render_sci_table([result])
    header = table.splitlines()[0]
    assert all(h in header for h in HEADERS) and "SciRepEval In-Train" in header
    assert "no SciDocs Avg, missing" in table
    assert f"{means['Clustering'][0]:.2f} (6 tasks)" in table
    assert all(result.tasks[n].ci for n in task_names(benchmark="mteb-sci"))


def test_each_distinct_text_is_embedded_once_per_run(sci_run: Any) -> None:
    _, encoder = sci_run
    assert max(encoder.seen.values()) == 1


def test_export_writes_every_mteb_task_of_the_run_for_mtebs_loader(sci_run: Any, tmp_path: Path,
                                                                  capsys: Any) -> None:
    pytest.importorskip("mteb", reason="mteb is not installed (pip install -e .[mteb])")
    from mteb import ResultCache
    from mteb.results import TaskResult

    result, _ = sci_run
    result.save(tmp_path / "r.json")
    out = tmp_path / "cache" / "results"
    assert main(["export", "mteb", str(tmp_path / "r.json"), "--out", str(out), "--revision", "r1"]) == 0
    exported = {TASKS[n].spec.mteb_task: n for n in result.tasks if TASKS[n].spec.mteb_task}
    assert len(exported) == len(task_names(benchmark="mteb-sci")) + len(task_names(benchmark="mteb-scidocs"))
    for mteb_name, name in exported.items():
        loaded = TaskResult.from_disk(out / "org__hash" / "r1" / f"{mteb_name}.json")
        assert loaded.get_score() == pytest.approx(result.tasks[name].details["mteb_scores"]["main_score"]), name
    cached = ResultCache(tmp_path / "cache").load_results(models=["org/hash"], include_remote=False)
    assert {r.task_name for r in cached.model_results[0].task_results} == set(exported)


def test_cli_run_benchmark_sci_prints_the_side_by_side_table(sci_data: Path, tmp_path: Path, capsys: Any) -> None:
    from scidocs_eval.evaluation.task import get_task
    from scidocs_eval.formats.suite import Suite
    from tests.builders import write_vectors

    task = get_task("arxiv-classification")
    (papers, _), = task.role_papers(task.load(Suite(sci_data), "test")).values()
    encoder = CountingEncoder()
    path = write_vectors(tmp_path / "v.jsonl", dict(zip([p.paper_id for p in papers],
                                                        encoder.encode([p.title for p in papers]))))
    args = ["run", "--data", str(sci_data), "--benchmark", "sci", "--embeddings", str(path), "--quiet", "--no-cache"]
    assert main([*args, "--tasks", "arxiv-classification"]) == 0
    out = capsys.readouterr().out
    assert "SciDocs Avg (SPECTER paper)" in out and "MTEB Classification mean (ours)" in out and "(1 tasks)" in out
    assert main([*args, "--tasks", "arxiv-classification,biorxiv-clustering-s2s"]) == 2  # no vectors: not scored
    assert "biorxiv-clustering-s2s" in capsys.readouterr().err
