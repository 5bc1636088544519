"""A benchmark is one object that owns its behaviour (`Benchmark`): its tasks, its results table, its download
source and what a synthetic copy is called. A toy benchmark registered here, with one task, a table of its own and a
folder as its download source, goes through `data download`, `run`, `table`, `leaderboard`, `report` and `export`
with no edit anywhere else; and every registered benchmark's table answers the hint that suggests it."""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scidocs_eval.cli.hints import PREFIX, results_hints
from scidocs_eval.cli.main import main
from scidocs_eval.data.sources import FolderCopy
from scidocs_eval.evaluation.results import RunResult, RunSettings
from scidocs_eval.evaluation.task import (
    BENCHMARK_TABLES,
    BENCHMARKS,
    TASKS,
    Benchmark,
    Task,
    TaskData,
    TaskResult,
    TaskSpec,
    register_task,
)
from scidocs_eval.formats.embeddings import PRESENT, EmbeddingStore
from scidocs_eval.leaderboard.benchmark_tables import ColumnsRow, ColumnsTable

TOY = "toy-bench"
PAPERS = [f"p{i}" for i in range(10)]


class ToyShare(Task):
    """The share of the papers listed in `toy-share/{split}.txt` that have a vector."""

    spec = TaskSpec("toy-share", "toy: share of the listed papers with a vector", "toy", ("share",), "share",
                    "toy", "", benchmark=TOY, mteb_task="ToyShare", dataset={"path": "toy/share", "revision": "0" * 40})

    def required_files(self, split: str) -> list[str]:
        return [f"toy-share/{split}.txt"]

    def evaluate(self, data: TaskData, embeddings: EmbeddingStore, missing: str = "official") -> TaskResult:
        ids = data.suite.path(f"toy-share/{data.split}.txt").read_text(encoding="utf-8").split()
        present = (embeddings.status(ids) == PRESENT).astype(float)
        share = round(100 * float(np.mean(present)), 2)
        return TaskResult(self.name, {"share": share}, {"papers": len(ids)},
                          details={"mteb_scores": {"main_score": share / 100, "share": share / 100}},
                          items={"unit": "query", "ids": ids, "share": present.tolist()})


class ToyTable(ColumnsTable):
    """The toy benchmark's own table: one line a run; on `report`'s page, a section with one column and a
    published row; `leaderboard` ranks its average beside that row."""

    name = "toy-table"
    shows = "the toy shares"
    title = "Toy benchmark"

    def render(self, benchmark: Benchmark, results: Sequence[Any], sources: Sequence[str | Path] | None,
               include_paper: bool, ci: bool) -> str:
        return "".join(f"toy table: {result.model} {result.tasks['toy-share'].metrics['share']:.2f}\n"
                       for result in results if "toy-share" in result.tasks)

    def averages(self, benchmark: Benchmark) -> dict[str, list[tuple[str, str]]]:
        return {"Toy Avg": [("toy-share", "share")]}

    def published(self, average: str) -> list[tuple[str, float, str, str]]:
        return [("toy paper model", 60.0, "toy paper", "")]

    def columns(self, benchmark: Benchmark) -> list[str]:
        return ["Share"]

    def rows(self, benchmark: Benchmark, results: Sequence[Any], labels: Sequence[str],
             include_paper: bool) -> list[ColumnsRow]:
        ours = [ColumnsRow(label, True, {"Share": result.tasks["toy-share"].metrics["share"]})
                for result, label in zip(results, labels) if "toy-share" in result.tasks]
        return ours + ([ColumnsRow("toy paper model", False, {"Share": 60.0})] if ours and include_paper else [])

    def definition(self, benchmark: Benchmark) -> str:
        return "Share: the toy task's share."


@pytest.fixture()
def toy(tmp_path: Path) -> Iterator[Path]:
    """The toy benchmark registered (its task, its table kind, a folder as its download source); removed after."""
    source = tmp_path / "published"
    (source / "toy-share").mkdir(parents=True)
    (source / "toy-share" / "test.txt").write_text(" ".join(PAPERS[:8]) + "\n", encoding="utf-8")
    register_task(ToyShare)
    BENCHMARK_TABLES.register(ToyTable)
    BENCHMARKS.register(Benchmark(TOY, "a toy benchmark", table_kind="toy-table",
                                  download=FolderCopy(source.as_uri()), synthetic_label="synthetic toy copy"))
    try:
        yield tmp_path
    finally:
        TASKS.unregister("toy-share")
        BENCHMARK_TABLES.unregister("toy-table")
        BENCHMARKS.unregister(TOY)


def _next_commands(printed: str) -> list[list[str]]:
    return [shlex.split(command)[1:] for line in printed.splitlines() if line.startswith(PREFIX)
            for command in line.split("`")[1::2]]


def test_a_toy_benchmark_runs_through_every_command_with_no_edit_elsewhere(
        toy: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(toy)
    assert main(["data", "download", "--benchmark", TOY, "--out-dir", "toy-data", "--quiet"]) == 0
    assert (toy / "toy-data" / "toy-share" / "test.txt").read_text(encoding="utf-8").split() == PAPERS[:8]
    assert main(["data", "download", "--benchmark", TOY, "--out-dir", "toy-data", "--quiet"]) == 0  # its own files
    capsys.readouterr()

    (toy / "e.jsonl").write_text("".join(f'{{"paper_id": "{p}", "embedding": [1.0, 2.0]}}\n' for p in PAPERS[:6]),
                                 encoding="utf-8")
    assert main(["run", "--embeddings", "e.jsonl", "--data", "toy-data", "--benchmark", TOY, "-o", "out/toy.json",
                 "--quiet"]) == 0
    printed = capsys.readouterr().out
    result = RunResult.load(toy / "out" / "toy.json")
    assert result.tasks["toy-share"].metrics == {"share": 75.0} and result.settings.benchmarks == (TOY,)
    table_hint = ["table", "out/", "--benchmark", TOY]
    assert table_hint in _next_commands(printed)

    assert main(table_hint) == 0
    assert capsys.readouterr().out == "toy table: e 75.00\n"
    assert main(["table", "out/", "--benchmark", TOY, "--ci"]) == 2
    assert "the toy-bench table shows averages, it has no intervals" in capsys.readouterr().err

    (toy / "f.jsonl").write_text("".join(f'{{"paper_id": "{p}", "embedding": [2.0, 1.0]}}\n' for p in PAPERS[:4]),
                                 encoding="utf-8")
    assert main(["run", "--embeddings", "f.jsonl", "--data", "toy-data", "--benchmark", TOY, "-o", "out/f.json",
                 "--quiet"]) == 0
    capsys.readouterr()
    assert main(["leaderboard", "out/"]) == 0
    board = capsys.readouterr().out
    assert "toy-share" in board and board.index("| e ") < board.index("| f "), board
    ranking = board[board.index("Toy Avg"):]  # the table's own average, ranked beside its published row
    assert ranking.index("| e ") < ranking.index("toy paper model") < ranking.index("| f "), board

    assert main(["report", "out/", "--out-dir", "site", "--quiet"]) == 0
    page = (toy / "site" / "index.html").read_text(encoding="utf-8")
    section = page[page.index('<table id="toy-table">'):]
    assert "<h2>Toy benchmark</h2>" in page and "75.00" in section and "toy paper model" in section
    assert "Share: the toy task&#39;s share." in section

    assert main(["export", "mteb", "out/toy.json", "--out-dir", "mteb-out", "--model-name", "org/toy"]) == 0
    assert (toy / "mteb-out" / "org__toy" / "no_revision_available" / "ToyShare.json").is_file()


def test_a_toy_benchmarks_synthetic_copy_is_labelled_by_the_benchmark(toy: Path) -> None:
    from scidocs_eval.leaderboard.run_table import format_run

    result = RunResult("e", {"toy-share": TaskResult("toy-share", {"share": 75.0}, {})}, synthetic=True)
    assert format_run(result).splitlines()[0] == "e (synthetic toy copy)"


def _scored(tasks: list[str], benchmarks: tuple[str, ...]) -> RunResult:
    """A result holding every metric of `tasks` (50.0 each), as a run naming `benchmarks` writes it."""
    return RunResult("m", {name: TaskResult(name, dict.fromkeys(TASKS[name].spec.metrics, 50.0), {})
                           for name in tasks}, settings=RunSettings(data="/suite", tasks=tuple(tasks),
                                                                     benchmarks=benchmarks))


@pytest.mark.parametrize("name", BENCHMARKS.names())
def test_every_benchmarks_table_hint_names_it_and_runs_as_printed(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """After a run of any benchmark, the hint is that benchmark's table (never another's: after `--benchmark sci`,
    the `sci` table, not SciRepEval's), and it runs on the run's results as printed."""
    monkeypatch.chdir(tmp_path)
    benchmark = BENCHMARKS[name]
    result = _scored(benchmark.task_names(), (name,))
    result.save(tmp_path / "results" / "m.json")
    tables = [h.argv for h in results_hints(Path("results/m.json"), result) if h.argv[0] == "table"]
    assert tables == [("table", "results/", *benchmark.option())]
    assert ("--benchmark", name) == benchmark.option() or benchmark.option() == ()
    assert main(list(tables[0])) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.startswith("|")


def test_a_run_without_a_named_benchmark_gets_the_tables_of_its_tasks_benchmarks() -> None:
    scirepeval = [name for name in BENCHMARKS["scirepeval"].task_names()][:1]
    result = _scored(["mag", *scirepeval], ())
    result = RunResult(result.model, result.tasks, settings=RunSettings(tasks=tuple(result.tasks)))
    assert [h.argv[2:] for h in results_hints(Path("r.json"), result) if h.argv[0] == "table"] == \
        [(), ("--benchmark", "scirepeval")]
