"""The cache is the checkpoint: a long encode adds its vectors to the embedding cache every few batches, so a
`baseline` killed mid-encode is continued by running it again (`--resume`), which embeds only what the cache lacks
and writes exactly what an uninterrupted run writes; a rerun with other settings never mixes in the old vectors;
`--resume` without the cache is refused. (`train specter --resume`: tests/test_specter_training.py.)"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import orjson
import pytest

from scidocs_eval.baselines.random_vectors import RandomAdapter
from scidocs_eval.cli.main import main
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.formats.suite import Paper, Suite
from scidocs_eval.models.adapter import get_adapter
from scidocs_eval.run import embedding_plan
from scidocs_eval.run.baseline import run_baseline
from scidocs_eval.run.embedding import write_embeddings
from scidocs_eval.run.embedding_plan import PROBE_PAPERS

BATCH = 16


class Killed(Exception):
    """What the test's encoder raises part way, as a crash or a kill would stop the run."""


def batched(embedded: list[str], fail_at: int | None = None):  # noqa: ANN201 (a method for RandomAdapter)
    """RandomAdapter's transform in batches of `BATCH`, recording what it embeds, failing at batch `fail_at`."""
    transform = RandomAdapter.transform

    def transform_batches(self: RandomAdapter, papers: Sequence[Paper]) -> Iterator[tuple[Sequence[Paper], np.ndarray]]:
        for number, start in enumerate(range(0, len(papers), BATCH), start=1):
            if number == fail_at:
                raise Killed(f"killed at batch {number}")
            batch = papers[start:start + BATCH]
            embedded.extend(paper.paper_id for paper in batch if paper not in PROBE_PAPERS)
            yield batch, transform(self, batch)

    return transform_batches


def _results(folder: Path) -> dict:
    run = orjson.loads((folder / "random.results.json").read_bytes())
    return {task: result["metrics"] for task, result in run["tasks"].items()}


def test_a_killed_baseline_resumes_from_the_cache_with_identical_results(
        demo_suite: Suite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    embedded: list[str] = []
    monkeypatch.setattr(embedding_plan, "CHECKPOINT_BATCHES", 2)
    monkeypatch.setattr(RandomAdapter, "transform_batches", batched(embedded))
    tasks = ["cite", "mesh"]
    run_baseline("random", RunConfig(data=demo_suite, tasks=tasks, cache=False, progress=False),
                 out_dir=tmp_path / "whole")
    total = len(embedded)
    assert total > 5 * BATCH
    embedded.clear()
    monkeypatch.setattr(RandomAdapter, "transform_batches", batched(embedded, fail_at=4))
    with pytest.raises(Killed):
        run_baseline("random", RunConfig(data=demo_suite, tasks=tasks, progress=False), out_dir=tmp_path / "resumed")
    assert len(embedded) == 3 * BATCH and not (tmp_path / "resumed" / "random.jsonl").exists()
    embedded.clear()
    monkeypatch.setattr(RandomAdapter, "transform_batches", batched(embedded))
    run_baseline("random", RunConfig(data=demo_suite, tasks=tasks, progress=False), out_dir=tmp_path / "resumed",
                 resume=True)
    assert len(embedded) == total - 3 * BATCH  # the three batches before the crash came from the cache
    assert _results(tmp_path / "resumed") == _results(tmp_path / "whole")
    for name in ("random.jsonl", "random.jsonl.settings.json"):
        assert (tmp_path / "resumed" / name).read_bytes() == (tmp_path / "whole" / name).read_bytes()


def test_a_rerun_with_another_parameter_never_mixes_in_the_old_vectors(demo_suite: Suite, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedding_plan, "CHECKPOINT_BATCHES", 1)
    monkeypatch.setattr(RandomAdapter, "transform_batches", batched([], fail_at=3))
    common = ["baseline", "random", "--data", str(demo_suite.root), "--tasks", "cite", "--quiet"]
    with pytest.raises(Killed):
        main([*common, "--out-dir", str(tmp_path / "resumed")])
    monkeypatch.setattr(RandomAdapter, "transform_batches", batched([]))
    assert main([*common, "-p", "seed=1", "--resume", "--out-dir", str(tmp_path / "resumed")]) == 0
    assert main([*common, "-p", "seed=1", "--no-cache", "--out-dir", str(tmp_path / "fresh")]) == 0
    assert (tmp_path / "resumed" / "random.jsonl").read_bytes() == (tmp_path / "fresh" / "random.jsonl").read_bytes()


def test_resume_without_the_cache_is_refused(demo_suite: Suite, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    args = ["baseline", "random", "--data", str(demo_suite.root), "--tasks", "cite", "--out-dir", str(tmp_path),
            "--resume", "--no-cache", "--quiet"]
    assert main(args) == 2
    assert capsys.readouterr().err == ("scidocs-eval: error: --resume continues from the embedding cache, which this "
                                       "run does not use; drop --no-cache (or cache=False)\n")


def test_one_line_says_how_many_papers_before_embedding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("SCIDOCS_EVAL_QUIET")
    papers = [Paper(f"p{i}", f"title {i}", f"abstract {i}") for i in range(3)]
    write_embeddings(get_adapter("random", dim=4), papers, tmp_path / "e.jsonl", progress=True)
    assert "embedding 3 texts with random\n" in capsys.readouterr().err
    write_embeddings(get_adapter("random", dim=4), papers, tmp_path / "f.jsonl", progress=True)
    assert "embedding" not in capsys.readouterr().err  # every vector from the cache
    write_embeddings(get_adapter("random", dim=4, seed=3), papers, tmp_path / "g.jsonl", progress=False)
    assert "embedding" not in capsys.readouterr().err
