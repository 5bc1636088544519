"""`scidocs-eval leaderboard`'s tables: rankings with significance groups (the statistics are
`scidocs_eval.statistics.ranking_groups`'s), published rows placed by score, as markdown and JSON.

Which averages are ranked is the leaderboard's definition: Table 1's Avg (the plain mean of its 12 columns) and
SciRepEval's columns (`scirepeval_table.GROUPS`, their Average), as each benchmark's table declares them
(`BenchmarkTable.averages`); each is ranked in a cohort whose results all hold
every metric it averages. Published rows (the SPECTER paper's Table 1, BENCHMARKING.md, SPECTER2's README) are
placed by their score in the rankings of the same definition, marked, with no letter: they have no per-item
results to test. They are shown beside a cohort's rows only when it scored the test split of a suite that is not
the synthetic demo suite; a note says that they are comparable only to rows scored on the official suite.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from scidocs_eval.data.build import REPORT_FILE
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.task import BENCHMARK_TABLES, BENCHMARKS, TASKS, Benchmark, BenchmarkTable
from scidocs_eval.leaderboard.benchmark_tables import PAPER_SOURCE, TABLE1_AVG
from scidocs_eval.leaderboard.runs import LoadedRun, collect_results, load_runs
from scidocs_eval.leaderboard.table1 import paper_table1_rows
from scidocs_eval.statistics.ranking_groups import Cohort, Component, Leaderboard, Ranking, rank_results

__all__ = ["PAPER_SOURCE", "TABLE1_AVG"]
PAPER_NOTE = ("published rows (SPECTER paper, Table 1): the SciDocs test set, as printed (1 decimal); comparable "
              "only to rows scored on the official SciDocs suite; Avg is the paper's own")


def _tables() -> list[tuple[Benchmark, BenchmarkTable]]:
    """Each registered benchmark with its table (`Benchmark.table_kind`)."""
    return [(benchmark, BENCHMARK_TABLES[benchmark.table_kind]()) for _, benchmark in BENCHMARKS.items()]


def averages() -> dict[str, list[Component]]:
    """Every average the leaderboard ranks, as each benchmark's table declares them (`BenchmarkTable.averages`:
    Table 1's Avg, SciRepEval's columns; name -> (task, metric)s)."""
    return {name: components for benchmark, table in _tables()
            for name, components in table.averages(benchmark).items()}


@dataclass(frozen=True)
class PublishedRow:
    """A published value placed in a ranking: who, where from, and the note where its definition differs."""

    label: str
    value: float
    source: str
    note: str = ""


def published_rows(ranking: Ranking) -> list[PublishedRow]:
    """The published values of the same definition as `ranking`: Table 1's column of a task's main score (and its
    Avg), BENCHMARKING.md's and SPECTER2's SciRepEval columns."""
    for benchmark, table in _tables():
        if ranking.name in table.averages(benchmark):
            return [PublishedRow(*row) for row in table.published(ranking.name)]
    if ranking.name in TASKS and len(ranking.components) == 1:
        column = TASKS[ranking.name].spec.table1.get(ranking.metric)
        if column:
            return [PublishedRow(row.name, row.values[column], PAPER_SOURCE) for row in paper_table1_rows()]
    return []


def published_note(ranking: Ranking) -> str:
    """How the average `ranking` ranks is defined, as its benchmark's table says beside published values."""
    return next((table.published_note(ranking.name) for benchmark, table in _tables()
                 if ranking.name in table.averages(benchmark)), "")


def shows_published(cohort: Cohort) -> str | None:
    """None when published rows go beside this cohort, else why not (the synthetic demo suite, another split, a
    suite `data build` made from another corpus: its folder holds the build report)."""
    built = [folder for folder in cohort.suites if (Path(folder) / REPORT_FILE).is_file()]
    if built:
        return f"published rows not shown: these results scored a suite built from another corpus ({built[0]})"
    if cohort.synthetic:
        return "published rows not shown: these results scored the synthetic demo suite"
    if cohort.split != "test":
        return f"published rows not shown: these results scored the {cohort.split} split (the published, test)"
    return None


@dataclass(frozen=True)
class Line:
    """A row of a rendered ranking: ours (position, letters, interval) or published."""

    label: str
    value: float
    position: int | None
    letters: str
    ci: tuple[float, float] | None
    published: str = ""
    """the source of a published row ("" for ours)."""


def ranking_lines(ranking: Ranking, with_published: bool) -> list[Line]:
    """Our entries and (with `with_published`) the published rows, by score (ours first on a tie)."""
    lines = [Line(e.label, e.value, e.position, e.letters, e.ci) for e in ranking.entries]
    if with_published:
        lines += [Line(f"{row.label} (published)", row.value, None, "", None, row.source)
                  for row in published_rows(ranking)]
    return sorted(lines, key=lambda line: (-line.value, bool(line.published)))


def _cell(text: str) -> str:
    """A markdown table cell's text: a '|' in a model's name would end the cell."""
    return text.replace("|", "\\|")


def _p(value: float | None) -> str:
    return "—" if value is None else ("<0.0001" if value < 1e-4 else f"{value:.4f}")


def render_markdown(board: Leaderboard) -> str:
    """Every cohort: per ranking a table (position, model, score, 95% interval, group), then the mean ranks."""
    blocks = []
    for number, cohort in enumerate(board.cohorts, 1):
        title = f"## Group {number} of comparable results ({cohort.split} split" + (
            ", synthetic demo suite)" if cohort.synthetic else ")")
        block = [title, ""]
        if cohort.reason:
            block += [f"Set apart, never tested against the other groups: {cohort.reason}.", ""]
        if not cohort.rankings:
            block += [f"{', '.join(cohort.labels)}: the only result of its group; nothing to rank it against.", ""]
            blocks.append("\n".join(block))
            continue
        not_published = shows_published(cohort)
        for ranking in cohort.rankings:
            published = published_rows(ranking) if not not_published else []
            block += [f"### {ranking.name} ({ranking.metric})", "",
                      f"{ranking.test}, Holm over {len(ranking.p_values)} pairs, alpha {board.alpha}; tested on "
                      f"{ranking.items}.", "", "| # | Model | Score | 95% CI | Group |", "|---|---|---|---|---|"]
            for line in ranking_lines(ranking, bool(published)):
                ci = f"[{line.ci[0]:.2f}, {line.ci[1]:.2f}]" if line.ci else "—"
                block.append(f"| {line.position or '—'} | {_cell(line.label)} | {line.value:.2f} | {ci} | "
                             f"{line.letters or '—'} |")
            notes = list(ranking.notes) + sorted({f"{row.label} ({row.source}): {row.note}" for row in published
                                                  if row.note})
            if published and any(row.source == PAPER_SOURCE for row in published):
                notes.append(PAPER_NOTE)
            if published and (note := published_note(ranking)):
                notes.append(note)
            block += ["", *(f"- {note}" for note in notes), ""] if notes else [""]
        if not_published:
            block += [f"{not_published}.", ""]
        mean_ranks = cohort.mean_ranks
        if mean_ranks is not None:
            block += [f"### Mean rank over {len(mean_ranks.tasks)} tasks ({', '.join(mean_ranks.tasks)})", "",
                      f"Friedman χ² = {mean_ranks.friedman_statistic:.3f}, p = {_p(mean_ranks.friedman_p)}; "
                      f"Nemenyi post-hoc, critical difference {mean_ranks.critical_difference:.3f}."
                      if mean_ranks.friedman_statistic is not None else mean_ranks.note, "",
                      "| Model | Mean rank | Group |", "|---|---|---|"]
            block += [f"| {_cell(label)} | {rank:.2f} | {letters} |"
                      for label, rank, letters in zip(mean_ranks.labels, mean_ranks.mean_rank, mean_ranks.letters)]
            if mean_ranks.note and mean_ranks.friedman_statistic is not None:
                block += ["", f"- {mean_ranks.note}."]
            block.append("")
        blocks.append("\n".join(block))
    legend = (f"Models that share a letter are not significantly different (paired tests on the items both scored, "
              f"Holm-corrected over the pairs of each ranking, alpha {board.alpha}); published rows have no letter "
              "(no per-item results to test). See docs/leaderboard.md.")
    return "\n".join(blocks) + "\n" + legend + "\n"


def leaderboard_dict(board: Leaderboard) -> dict:
    """`board.to_dict()` with each ranking's published rows (those shown)."""
    data = board.to_dict()
    for cohort, cohort_data in zip(board.cohorts, data["cohorts"]):
        show = shows_published(cohort) is None
        for ranking, ranking_data in zip(cohort.rankings, cohort_data["rankings"]):
            ranking_data["published"] = [{"label": row.label, "value": row.value, "source": row.source,
                                          "note": row.note} for row in (published_rows(ranking) if show else [])]
    return data


def build_leaderboard(sources: Sequence[str], resamples: int | None = None, seed: int = 0, alpha: float = 0.05,
                      progress: bool = True) -> tuple[Leaderboard, list[LoadedRun], list[str]]:
    """Load the results `sources` name (files, folders, globs) and rank them: (leaderboard, runs, warnings)."""
    files, warnings = collect_results(sources)
    board, runs = rank_files(files, resamples, seed, alpha, progress)
    return board, runs, warnings


def rank_files(files: Sequence[Path], resamples: int | None = None, seed: int = 0, alpha: float = 0.05,
               progress: bool = True) -> tuple[Leaderboard, list[LoadedRun]]:
    """Rank the results files `files` (`collect_results`'s, each read once here): (leaderboard, runs)."""
    if not files:
        raise ScidocsEvalError("no results files given")
    runs = load_runs(files)
    board = rank_results([run.result for run in runs], [run.label for run in runs], averages(), resamples, seed,
                         alpha, progress)
    return board, runs
