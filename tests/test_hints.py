"""Hints that work: every "Next:" line comes from cli/hints.py, and every hint a new user's session prints runs,
as printed, from the folder the command ran in. Results replaced with tasks lost say so; rows never twins."""

from __future__ import annotations

import ast
import logging
import re
import shlex
from pathlib import Path

import pytest

from scidocs_eval.cli.hints import PREFIX
from scidocs_eval.cli.main import main
from scidocs_eval.extras import available
from scidocs_eval.formats.suite import Suite
from tests.builders import build_retrieval_dataset

REPO = Path(__file__).resolve().parents[1]
HINT = re.compile(r"`(scidocs-eval [^`]+)`")


def test_every_next_line_comes_from_the_hints_module() -> None:
    """A "Next:" string anywhere else would be a hint no test runs."""
    sources = [path for folder in ("scidocs_eval", "leaderboard", "baselines", "tasks")
               for path in (REPO / folder).rglob("*.py") if path != REPO / "scidocs_eval" / "cli" / "hints.py"]
    offenders = [f"{path.relative_to(REPO)}:{node.lineno}" for path in sources
                 for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                 if isinstance(node, ast.Constant) and isinstance(node.value, str) and PREFIX.strip() in node.value]
    assert offenders == []


def _hints(printed: str) -> list[list[str]]:
    return [shlex.split(command)[1:] for line in printed.splitlines() if line.startswith(PREFIX)
            for command in HINT.findall(line)]


def _run_with_hints(argv: list[str], capsys: pytest.CaptureFixture[str], seen: list[str]) -> None:
    """Run `argv`, then every hint it printed (and theirs), each with exit status 0."""
    assert main(argv) == 0, capsys.readouterr().err
    for hinted in _hints(capsys.readouterr().out):
        seen.append(shlex.join(hinted))
        _run_with_hints(hinted, capsys, seen)


def test_every_hint_of_a_session_runs(demo_suite: Suite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.chdir(tmp_path)
    suite = str(demo_suite.root)
    seen: list[str] = []
    _run_with_hints(["baseline", "random", "--data", suite, "--tasks", "mesh,cite", "--quiet"], capsys, seen)
    embeddings = "scidocs-results/random.jsonl"
    _run_with_hints(["run", "--embeddings", embeddings, "--data", suite, "--tasks", "mesh,cite", "-o",
                     "results/mine.json", "--quiet"], capsys, seen)
    _run_with_hints(["run", "--embeddings", embeddings, "--data", suite, "--tasks", "mesh", "-o",
                     "results/other.json", "--quiet"], capsys, seen)
    assert "table scidocs-results/" in seen and "table results/" in seen  # any name: told by content
    assert "compare results/mine.json results/other.json" in seen
    if available("jinja2") and available("matplotlib"):
        assert any(command.startswith("report results/mine.json --out-dir report") for command in seen)

    build_retrieval_dataset(tmp_path / "mteb" / "scidocs-rr", documents=120, queries=12, candidates=8)
    with caplog.at_level(logging.WARNING):
        _run_with_hints(["baseline", "random", "--data", "mteb", "--benchmark", "mteb-scidocs", "--out-dir",
                         "mteb-results", "--quiet"], capsys, seen)
    assert main(["table", "mteb-results/"]) == 0
    table = capsys.readouterr().out
    assert "| Model | scidocs-rr map_at_1000 |" in table and "| random (ours) |" in table
    assert "MAG F1" not in table  # no row of dashes
    if available("jinja2") and available("matplotlib"):  # the report page: the [plot] extra
        assert main(["report", "mteb-results/", "--out-dir", "mteb-report"]) == 0
        page = (tmp_path / "mteb-report" / "index.html").read_text(encoding="utf-8")
        assert '<table id="other-tasks">' in page and "scidocs-rr map_at_1000" in page


@pytest.mark.slow
def test_the_hints_after_demo_and_a_bare_command_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    seen: list[str] = []
    _run_with_hints(["demo", "suite", "--quiet"], capsys, seen)
    assert seen[0] == "baseline random --data suite"
    assert main([]) == 0
    assert _hints(capsys.readouterr().out) == [["baseline", "random", "--data", "demo"]]


def test_replacing_results_with_fewer_tasks_says_which_go(cite_suite: tuple[Path, Path], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str],
                                                          caplog: pytest.LogCaptureFixture) -> None:
    root, embeddings = cite_suite
    out = tmp_path / "twice.json"
    common = ["run", "--embeddings", str(embeddings), "--data", str(root), "-o", str(out), "--quiet"]
    assert main(common) == 0
    with caplog.at_level(logging.WARNING):
        assert main(common) == 0  # the same tasks again: nothing lost, nothing said
    assert not [r for r in caplog.records if "replaced" in r.getMessage()]
    from scidocs_eval.evaluation.results import RunResult, TaskResult
    earlier = RunResult.load(out)
    earlier.tasks["mag"] = TaskResult(task="mag", metrics={"f1": 1.0}, coverage={})
    earlier.save(out)  # as if an earlier run had scored mag too
    with caplog.at_level(logging.WARNING):
        assert main(common) == 0
    warning = next(r.getMessage() for r in caplog.records if "replaced" in r.getMessage())
    assert f"{out} replaced: 1 of the 2 tasks it held are not in the new file and are gone (mag; it now holds 1)" \
        in warning


def test_twin_rows_are_told_apart_and_val_is_marked(cite_suite: tuple[Path, Path], tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    root, embeddings = cite_suite
    for folder in ("a", "b"):
        assert main(["run", "--embeddings", str(embeddings), "--data", str(root), "-o",
                     str(tmp_path / folder / "mine.json"), "--quiet"]) == 0
    assert main(["run", "--embeddings", str(embeddings), "--data", str(root), "-o", str(tmp_path / "c.json"),
                 "--quiet"]) == 0
    capsys.readouterr()
    assert main(["table", str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "c.json"), "--no-paper"]) == 0
    labels = [line.split(" | ")[0] for line in capsys.readouterr().out.splitlines() if line.startswith("| mine")]
    assert labels == [f"| mine (ours, {tmp_path / 'a' / 'mine.json'})",
                      f"| mine (ours, {tmp_path / 'b' / 'mine.json'})", "| mine (ours, c.json)"]
    from dataclasses import replace

    from scidocs_eval.evaluation.results import RunResult
    from scidocs_eval.leaderboard import render_table1
    result = RunResult.load(tmp_path / "c.json")
    result.settings = replace(result.settings, split="val")
    assert "| mine (ours, val split) |" in render_table1([result], include_paper=False)
    twins = render_table1([result, result], include_paper=False)
    assert "| mine (ours, val split, run 1) |" in twins and "| mine (ours, val split, run 2) |" in twins
