"""A ranking task registered in a few lines, with its own qrel folder and metadata file, reaches every place that
lists tasks with no other edit: `tasks`, `run` (also as `--embeddings GROUP=FILE`), `data verify`, `--tune` and
SGC's leakage guard."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import orjson
import pytest

from scidocs_eval.cli.main import main
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.task import TASKS, register_task
from scidocs_eval.evaluation.verify import verify_suite
from scidocs_eval.formats.embeddings import format_embedding_line
from scidocs_eval.formats.suite import Suite
from scidocs_eval.models.tuning import ValScorer
from scidocs_eval.run.fit_inputs import guard_edges
from scidocs_eval.tasks.ranking import RankingTask, ranking_spec


@pytest.fixture
def newrank() -> Iterator[str]:
    @register_task
    class NewRankTask(RankingTask):
        spec = ranking_spec("newrank", "a ranking task of our own", embedding_group="newrank",
                            metadata_file="paper_metadata_newrank.json", table1=False)

    yield "newrank"
    TASKS.unregister("newrank")


@pytest.fixture
def suite_with_newrank(demo_suite: Suite, tmp_path: Path) -> Suite:
    """The demo suite plus newrank/{val,test}.qrel and paper_metadata_newrank.json: co-cite's qrels and
    metadata with every id renamed "n-ID", so its papers and pairs are in no other task."""
    root = tmp_path / "suite"
    shutil.copytree(demo_suite.root, root)
    (root / "newrank").mkdir()
    for split in ("val", "test"):
        lines = (root / "cocite" / f"{split}.qrel").read_text().splitlines()
        renamed = [" ".join(f"n-{f}" if i in (0, 2) else f for i, f in enumerate(line.split())) for line in lines]
        (root / "newrank" / f"{split}.qrel").write_text("\n".join(renamed) + "\n")
    metadata = orjson.loads((root / "paper_metadata_view_cite_read.json").read_bytes())
    (root / "paper_metadata_newrank.json").write_bytes(orjson.dumps(
        {f"n-{k}": {**v, "paper_id": f"n-{k}"} for k, v in metadata.items()}))
    return Suite(root)


def _embeddings(suite: Suite, path: Path) -> Path:
    rng = np.random.default_rng(0)
    ids = [p.paper_id for p in suite.papers()] + list(suite.metadata("paper_metadata_newrank.json"))
    path.write_bytes(b"".join(format_embedding_line(i, rng.standard_normal(8)) for i in ids))
    return path


def test_registered_task_reaches_tasks_run_verify_tune_and_the_sgc_guard(
        newrank: str, suite_with_newrank: Suite, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = suite_with_newrank
    assert main(["tasks"]) == 0
    assert re.search(r"^newrank +scidocs +newrank +map,ndcg", capsys.readouterr().out, re.MULTILINE)

    embeddings = _embeddings(suite, tmp_path / "emb.jsonl")
    run = ["run", "--data", str(suite.root), "--tasks", "cite,newrank", "--quiet", "-o"]
    assert main([*run, str(tmp_path / "one.json"), "--embeddings", str(embeddings)]) == 0
    one_file = RunResult.load(tmp_path / "one.json")
    assert set(one_file.tasks) == {"cite", "newrank"}
    assert set(one_file.tasks["newrank"].metrics) == {"map", "ndcg"}
    assert one_file.tasks["newrank"].coverage["queries_missing"] == 0
    assert main([*run, str(tmp_path / "group.json"), "--embeddings", f"newrank={embeddings}"]) == 0
    by_group = RunResult.load(tmp_path / "group.json")
    assert set(by_group.tasks) == {"newrank"} and by_group.skipped == {"cite": "no 'user-citation' embeddings given"}
    assert by_group.tasks["newrank"].metrics == one_file.tasks["newrank"].metrics

    report = verify_suite(suite.root)
    assert "newrank" in report.complete and "newrank" in report.counts

    assert "newrank" in ValScorer(suite).tasks

    query, candidates = next(iter(suite.qrels("newrank", "test").candidates.items()))
    assert guard_edges([(query, candidates[0]), (candidates[0], query)], suite) == []
