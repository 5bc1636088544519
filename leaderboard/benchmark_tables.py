"""The kinds of benchmark table (`Benchmark.table_kind`), registered in `BENCHMARK_TABLES`: SciDocs' Table 1 (with a
table of the other tasks' main scores), SciRepEval's columns, the `sci` benchmark's averages side by side, and a
column per task (MTEB's tasks, a plugin's benchmark). `table --benchmark NAME` renders `BENCHMARKS[NAME].table`."""

from __future__ import annotations

import os
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.task import BENCHMARK_TABLES, TASKS, Benchmark, BenchmarkTable
from scidocs_eval.leaderboard import scirepeval_table
from scidocs_eval.leaderboard.sci_table import render_sci_table
from scidocs_eval.leaderboard.table1 import COLUMNS, paper_table1_rows, render_table1, table1_row
from scidocs_eval.leaderboard.task_table import PER_TASK, other_tasks, render_task_table

Sources = Sequence[str | os.PathLike[str]] | None
TABLE1_AVG = "Table 1 Avg"
PAPER_SOURCE = "SPECTER paper, Table 1"


@BENCHMARK_TABLES.register
class Table1(BenchmarkTable):
    """Table 1 of the SPECTER paper for the runs that fill a column of it, then a table of the other tasks' main
    scores (MTEB's, ...) for the runs that scored one: no run shown as a row of dashes."""

    name = "table1"
    shows = "the results table beside the published rows"
    intervals = True

    def render(self, benchmark: Benchmark, results: Sequence[RunResult], sources: Sources, include_paper: bool,
               ci: bool) -> str:
        paths = list(sources) if sources is not None else [None] * len(results)
        in_table1 = [index for index, result in enumerate(results) if table1_row(result)]
        if not any(other_tasks(result) for result in results):
            in_table1 = list(range(len(results)))
        tables = []
        if in_table1:
            tables.append(render_table1([results[i] for i in in_table1], include_paper=include_paper, ci=ci,
                                        sources=[paths[i] for i in in_table1] if sources is not None else None))
        if any(other_tasks(result) for result in results):
            tables.append(render_task_table(results, sources))
        return "\n".join(tables)

    def averages(self, benchmark: Benchmark) -> dict[str, list[tuple[str, str]]]:
        """Table 1's Avg (the plain mean of its 12 columns), when a registered task fills each column."""
        by_column = {column: (name, metric) for name, cls in TASKS.items()
                     for metric, column in cls.spec.table1.items()}
        table1 = [by_column[c] for c in COLUMNS if c in by_column]
        return {TABLE1_AVG: table1} if len(table1) == len(COLUMNS) else {}

    def published(self, average: str) -> list[tuple[str, float, str, str]]:
        return [(row.name, row.avg, PAPER_SOURCE, "") for row in paper_table1_rows() if row.avg is not None]


@dataclass(frozen=True)
class ColumnsRow:
    """A row of a `ColumnsTable`: ours (a run) or a published one; `values` column -> value (None: "—")."""

    label: str
    ours: bool
    values: Mapping[str, float | None]
    notes: tuple[str, ...] = ()
    synthetic: bool = False


class ColumnsTable(BenchmarkTable):
    """A benchmark table of columns of its own (SciRepEval's), which `report` shows as a section of its page: our
    rows of the runs holding its tasks, then the published ones, and how its columns are defined."""

    title: ClassVar[str]
    """the section's heading."""

    @abstractmethod
    def columns(self, benchmark: Benchmark) -> list[str]:
        """Its columns, in order."""

    @abstractmethod
    def rows(self, benchmark: Benchmark, results: Sequence[RunResult], labels: Sequence[str],
             include_paper: bool) -> list[ColumnsRow]:
        """Our rows of the `results` (labelled `labels`) that hold a task of it, then (`include_paper`) the
        published ones; none when no result holds one."""

    @abstractmethod
    def definition(self, benchmark: Benchmark) -> str:
        """How its columns are computed (a note under the section)."""


@BENCHMARK_TABLES.register
class SciRepEvalColumns(ColumnsTable):
    """SciRepEval's In-Train, Out-of-Train, SciDocs and Average beside the rows its BENCHMARKING.md publishes."""

    name = "scirepeval"
    shows = "SciRepEval's columns beside the published rows"
    title = "SciRepEval"

    def columns(self, benchmark: Benchmark) -> list[str]:
        return list(scirepeval_table.COLUMNS)

    def rows(self, benchmark: Benchmark, results: Sequence[RunResult], labels: Sequence[str],
             include_paper: bool) -> list[ColumnsRow]:
        ours = [scirepeval_table.our_row(result, label) for result, label in zip(results, labels)
                if scirepeval_table.has_scirepeval(result)]
        theirs = scirepeval_table.published_rows() if ours and include_paper else []
        return [ColumnsRow(row.name if row.ours else row.label, row.ours, row.values, tuple(row.notes),
                           row.synthetic) for row in ours + theirs]

    def definition(self, benchmark: Benchmark) -> str:
        return scirepeval_table.DEFINITION

    def render(self, benchmark: Benchmark, results: Sequence[RunResult], sources: Sources, include_paper: bool,
               ci: bool) -> str:
        return scirepeval_table.render_scirepeval_table(results, include_paper=include_paper, sources=sources)

    def averages(self, benchmark: Benchmark) -> dict[str, list[tuple[str, str]]]:
        """SciRepEval's columns (`scirepeval_table.GROUPS`, their Average) whose tasks are all registered."""
        return {f"SciRepEval {column}": [(task, metric) for task, metrics in tasks.items() for metric in metrics]
                for column, tasks in scirepeval_table.COLUMNS.items() if all(task in TASKS for task in tasks)}

    def published(self, average: str) -> list[tuple[str, float, str, str]]:
        column = average.removeprefix("SciRepEval ")
        return [(row.name, value, row.source, " ".join(row.notes)) for row in scirepeval_table.published_rows()
                if (value := row.values.get(column)) is not None]

    def published_note(self, average: str) -> str:
        return scirepeval_table.DEFINITION


@BENCHMARK_TABLES.register
class OwnersAverages(BenchmarkTable):
    """Each member benchmark's own averages side by side (`sci`); printed after a run of it too."""

    name = "sci"
    shows = "each owner's averages side by side"

    def render(self, benchmark: Benchmark, results: Sequence[RunResult], sources: Sources, include_paper: bool,
               ci: bool) -> str:
        return render_sci_table(results)

    def after_run(self, benchmark: Benchmark, result: RunResult) -> str | None:
        return render_sci_table([result])


@BENCHMARK_TABLES.register
class TaskColumns(BenchmarkTable):
    """A column per task of the benchmark with its main score, a row per run that scored one of them."""

    name = PER_TASK
    shows = "each task's main score"

    def render(self, benchmark: Benchmark, results: Sequence[RunResult], sources: Sources, include_paper: bool,
               ci: bool) -> str:
        tasks = benchmark.task_names()
        if not any(name in tasks for result in results for name in result.tasks):
            raise ScidocsEvalError(f"none of the {len(results)} results file(s) holds a task of benchmark "
                                   f"{benchmark.name} ({', '.join(tasks) or 'none registered'}); run them with "
                                   f"--benchmark {benchmark.name}")
        return render_task_table(results, sources, tasks)
