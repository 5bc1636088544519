"""The kinds of benchmark table (`Benchmark.table_kind`), registered in `BENCHMARK_TABLES`: SciDocs' Table 1 (with a
table of the other tasks' main scores), SciRepEval's columns, the `sci` benchmark's averages side by side, and a
column per task (MTEB's tasks, a plugin's benchmark). `table --benchmark NAME` renders `BENCHMARKS[NAME].table`."""

from __future__ import annotations

import os
from collections.abc import Sequence

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.task import BENCHMARK_TABLES, Benchmark, BenchmarkTable
from scidocs_eval.leaderboard.sci_table import render_sci_table
from scidocs_eval.leaderboard.scirepeval_table import render_scirepeval_table
from scidocs_eval.leaderboard.table1 import render_table1, table1_row
from scidocs_eval.leaderboard.task_table import PER_TASK, other_tasks, render_task_table

Sources = Sequence[str | os.PathLike[str]] | None


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


@BENCHMARK_TABLES.register
class SciRepEvalColumns(BenchmarkTable):
    """SciRepEval's In-Train, Out-of-Train, SciDocs and Average beside the rows its BENCHMARKING.md publishes."""

    name = "scirepeval"
    shows = "SciRepEval's columns beside the published rows"

    def render(self, benchmark: Benchmark, results: Sequence[RunResult], sources: Sources, include_paper: bool,
               ci: bool) -> str:
        return render_scirepeval_table(results, include_paper=include_paper, sources=sources)


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
