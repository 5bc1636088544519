"""The `scidocs-eval` command: run, table, baseline, tasks, demo, and errors printed without a traceback."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from scidocs_eval.cli.main import main
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.papers import papers_to_embed
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.formats.suite import Suite


def test_run_prints_table_and_writes_json(cite_suite: tuple[Path, Path], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    root, embeddings = cite_suite
    out = tmp_path / "out.json"
    assert main(["run", "--embeddings", str(embeddings), "--data", str(root), "--tasks", "cite",
                 "--output", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert printed.splitlines()[1] == "mine"  # after the line saying values are ×100
    assert "cite     map         50.00" in printed
    assert "| Model | MAG F1 | MeSH F1 |" in printed and "| mine (ours) | — | — | — | — | — | — | 50.00 |" in printed
    assert "(paper)" not in printed
    assert f"Wrote {out} (results)" in printed
    saved = RunResult.load(out)
    assert saved.tasks["cite"].metrics == {"map": 50.0, "ndcg": 63.09}
    again = evaluate(embeddings, RunConfig(data=root, tasks=["cite"], progress=False))
    assert saved.tasks["cite"].metrics == again.tasks["cite"].metrics


def test_run_with_malformed_embeddings_exits_2_without_traceback(cite_suite: tuple[Path, Path], tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    root, _ = cite_suite
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"paper_id": "q", "embedding": [0, 0]}\n{"paper_id": "a", "embedding": [0, NaN]}\n',
                   encoding="utf-8")
    assert main(["run", "--embeddings", str(bad), "--data", str(root), "--quiet"]) == 2
    captured = capsys.readouterr()
    assert captured.err == (f"scidocs-eval: error: {bad}:2: paper 'a': embedding value 1 is nan "
                            "(NaN and infinity are not allowed)\n")
    assert "Traceback" not in captured.err + captured.out


@pytest.mark.parametrize("extra, message", [
    (["--cls", "x.jsonl"], "give either --embeddings or the three-file form"),
    (["--task-param", "cite=1"], "--task-param wants TASK.KEY=VALUE with a known task, got 'cite=1'"),
])
def test_run_argument_errors(cite_suite: tuple[Path, Path], capsys: pytest.CaptureFixture[str], extra: list[str],
                             message: str) -> None:
    root, embeddings = cite_suite
    assert main(["run", "--embeddings", str(embeddings), "--data", str(root), *extra]) == 2
    assert message in capsys.readouterr().err


def test_run_without_data_says_how_to_get_it(cite_suite: tuple[Path, Path], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    _, embeddings = cite_suite
    assert main(["run", "--embeddings", str(embeddings), "--data", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert "no SciDocs data at" in err and "--data demo" in err and "Traceback" not in err


def test_three_file_form(cite_suite: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, embeddings = cite_suite
    out = tmp_path / "three.json"
    assert main(["run", "--user-citation", str(embeddings), "--data", str(root), "--output", str(out),
                 "--name", "three", "--quiet"]) == 0
    saved = RunResult.load(out)
    assert saved.model == "three" and saved.tasks["cite"].metrics["map"] == 50.0
    assert set(saved.skipped) == {"mag", "mesh", "coview", "coread", "cocite", "recomm"}


def test_table_renders_markdown(cite_suite: tuple[Path, Path], tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    root, embeddings = cite_suite
    evaluate(embeddings, RunConfig(data=root, tasks=["cite"], output=tmp_path / "results" / "mine.results.json",
                                   progress=False))
    assert main(["table", str(tmp_path / "results")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| Model | MAG F1 | MeSH F1 | Co-View MAP |") and lines[1].startswith("|---|")
    assert lines[2].startswith("| mine (ours) | — | — |")
    assert any(line.startswith("| SPECTER (paper) | 82.00 | 86.40 |") for line in lines)
    assert lines[-1].startswith("- mine (ours): no Avg, missing MAG F1, MeSH F1")
    out = tmp_path / "table.md"
    assert main(["table", str(tmp_path / "results" / "mine.results.json"), "--no-paper", "-o", str(out)]) == 0
    assert "(paper)" not in out.read_text(encoding="utf-8")
    assert main(["table", str(tmp_path / "absent.json")]) == 2
    assert "absent.json: no such results file or folder" in capsys.readouterr().err


def test_baseline_random_writes_official_embeddings_and_results(demo_suite: Suite, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "out"
    assert main(["baseline", "random", "--data", str(demo_suite.root), "--tasks", "cite,cocite",
                 "--out-dir", str(out_dir), "--seed", "3", "--quiet"]) == 0
    assert f"{out_dir / 'random.results.json'} (results)" in capsys.readouterr().out
    records = [orjson.loads(line) for line in (out_dir / "random.jsonl").read_bytes().splitlines()]
    # only the papers the ranking tasks read are embedded (their test queries and candidates), in input order
    assert [p.paper_id for p in papers_to_embed(demo_suite, ["cite", "cocite"])] == [r["paper_id"] for r in records]
    assert all(set(r) == {"paper_id", "embedding"} and len(r["embedding"]) == 25 for r in records)
    result = RunResult.load(out_dir / "random.results.json")
    assert set(result.tasks) == {"cite", "cocite"} and result.synthetic
    assert result.model_info.name == "random" and result.model_info.params["seed"] == 3
    assert result.model_info.paper_row == "Random"  # the published Table 1 row to compare with
    assert {"fit", "embed", "total"} <= set(result.timings)
    rescored = evaluate(out_dir / "random.jsonl", RunConfig(data=demo_suite, tasks=["cite", "cocite"], progress=False))
    assert {n: r.metrics for n, r in rescored.tasks.items()} == {n: r.metrics for n, r in result.tasks.items()}


def test_tasks_lists_the_seven_tasks(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tasks"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:]]  # after the header
    assert names == ["mag", "mesh", "coview", "coread", "cite", "cocite", "recomm"]


def test_demo_writes_a_synthetic_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", str(tmp_path / "demo"), "--seed", "2"]) == 0
    assert f"written to {tmp_path / 'demo'}" in capsys.readouterr().out
    assert (tmp_path / "demo" / "SYNTHETIC.md").read_text(encoding="utf-8").startswith("# Synthetic demo suite")
    assert Suite(tmp_path / "demo").has("cocite/val.qrel")
