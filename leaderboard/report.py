"""A static HTML leaderboard (`scidocs-eval report`): Table 1 with our rows and the paper's, sortable, with each
row's provenance, the result chart and any Figure 2 images, in one folder that works offline from file://.

Every string from a results file reaches the page through Jinja2's autoescaping (a model named `<script>` is
text), and the page's Content-Security-Policy allows only its own inline script (by hash), so nothing injected
could run even if escaping failed. The site is written through `owned_folder` (built beside the folder, then moved
in, with a manifest of what `report` wrote): a folder holding files `report` did not write is refused, and a new
report replaces only the files an earlier `report` wrote there.
"""

from __future__ import annotations

import base64
import hashlib
import math
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

import orjson

from scidocs_eval.errors import InputError, ScidocsEvalError
from scidocs_eval.evaluation.task import BENCHMARK_TABLES, BENCHMARKS, TASKS
from scidocs_eval.extras import require
from scidocs_eval.formats.safe_output import owned_folder
from scidocs_eval.leaderboard.benchmark_tables import ColumnsTable
from scidocs_eval.leaderboard.figures import draw_results, save_figure
from scidocs_eval.leaderboard.ranking import (
    PAPER_NOTE,
    PAPER_SOURCE,
    Line,
    published_rows,
    ranking_lines,
    shows_published,
)
from scidocs_eval.leaderboard.runs import LoadedRun
from scidocs_eval.leaderboard.table1 import COLUMNS, Table1Row, our_row, paper_table1_rows, table1_row
from scidocs_eval.leaderboard.task_table import other_tasks
from scidocs_eval.statistics.ranking_groups import Leaderboard

COMMAND = "scidocs-eval report"
"""The command named in the site folder's manifest; `report` replaces only folders it wrote."""
PAGE = "index.html"
CHART = "results.png"
FIGURES = "figures"
AVG = "avg"


@dataclass
class Cell:
    """One table cell: `value` (None when the row has no such column), the interval, and whether it is the best
    of its group in its column."""

    value: float | None
    ci: tuple[float, float] | None = None
    best: bool = False

    @property
    def sort_key(self) -> str:
        return "" if self.value is None else repr(self.value)


@dataclass
class Row:
    """A table row: ours (with provenance) or the paper's."""

    label: str
    ours: bool
    cells: dict[str, Cell]
    provenance: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    synthetic: bool = False


def _short(items: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in items.items()) or "none"


def _coverage_warnings(run: LoadedRun) -> list[str]:
    result = run.result
    warnings = [f"{task}: {key}={count}" for task, task_result in result.tasks.items()
                for key, count in task_result.coverage.items()
                if count and ("missing" in key or "empty" in key)]
    warnings += [f"{task} skipped: {why}" for task, why in result.skipped.items()]
    return warnings


def provenance(run: LoadedRun) -> list[tuple[str, str]]:
    """(field, text) pairs that say where a row's numbers came from."""
    result = run.result
    info = result.model_info
    embeddings = result.fingerprints.get("embeddings", {})
    suite_files = result.fingerprints.get("data", {})
    suite_digest = hashlib.sha256(orjson.dumps(suite_files, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
    modified = datetime.fromtimestamp(run.path.stat().st_mtime, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    items = [
        ("model", result.model),
        ("results file", f"{run.path.name} (written {modified})"),
        ("adapter", f"{info.name} ({_short(dict(info.params))})" if info else
         "not recorded (scored with `scidocs-eval run`)"),
        ("suite", (result.settings.data or "not recorded") + (" (SYNTHETIC demo suite)"
                                                                        if result.synthetic else "")),
        ("suite fingerprint", f"{suite_digest} over {len(suite_files)} files: "
         + ", ".join(f"{name} {digest[:12]}" for name, digest in sorted(suite_files.items()))),
        ("split", result.settings.split),
        ("tasks", ", ".join(result.tasks) + (f"; skipped: {', '.join(result.skipped)}" if result.skipped else "")),
        ("embeddings", "; ".join(f"{group}: {info.get('path')} sha256 {str(info.get('sha256'))[:12]}, "
                                 f"{info.get('papers')} papers, dim {info.get('dim')}"
                                 for group, info in embeddings.items()) or "not recorded"),
        ("package versions", _short(result.versions)),
        ("coverage warnings", "; ".join(_coverage_warnings(run)) or "none"),
    ]
    if info and info.train_corpus:
        items.insert(3, ("training corpus", info.train_corpus))
    return items


def _row(row: Table1Row, run: LoadedRun | None = None) -> Row:
    """The page's row of a `Table1Row` (ours with its provenance, or the paper's)."""
    cells = {c: Cell(row.values.get(c), row.ci.get(c)) for c in COLUMNS}
    cells[AVG] = Cell(row.avg)
    if run is None:
        return Row(row.label, False, cells)
    notes = []
    if row.missing:
        notes.append(f"no {', '.join(COLUMNS[c] for c in row.missing)} in this results file"
                     + (", so no Avg" if len(row.missing) < len(COLUMNS) else ""))
    return Row(row.name, True, cells, provenance(run), notes, row.synthetic)


def _mark_best(rows: Sequence[Row], columns: Sequence[str] = (*COLUMNS, AVG)) -> None:
    """Mark the highest value of each column, separately among our rows and among the paper's (theirs are the
    SciDocs test set; ours are on whatever suite each file names)."""
    for ours in (True, False):
        group = [row for row in rows if row.ours == ours]
        for column in columns:
            values = [row.cells[column].value for row in group if row.cells[column].value is not None]
            if values:
                best = max(values)
                for row in group:
                    row.cells[column].best = row.cells[column].value == best


def build_rows(runs: Sequence[LoadedRun], include_paper: bool = True) -> list[Row]:
    """Our rows (in the given order; a run of tasks outside Table 1 alone is in `build_task_rows` instead, not a
    row of dashes here), then the paper's; best values marked."""
    rows = [_row(our_row(run.result, run.label), run) for run in runs
            if table1_row(run.result) or not other_tasks(run.result)]
    rows += [_row(row) for row in paper_table1_rows()] if include_paper else []
    _mark_best(rows)
    return rows


@dataclass
class Section:
    """A benchmark's table of its own columns on the page (`ColumnsTable`: SciRepEval's), after Table 1."""

    key: str
    """the table kind: the HTML table's id."""
    title: str
    columns: list[str]
    rows: list[Row]
    definition: str


def build_sections(runs: Sequence[LoadedRun], include_paper: bool = True) -> list[Section]:
    """A section for each registered benchmark whose table is a `ColumnsTable` (asked through `Benchmark.table_kind`,
    never by name) and that some run holds a task of: our rows, then the published ones; best values marked."""
    sections = []
    for kind in dict.fromkeys(benchmark.table_kind for _, benchmark in BENCHMARKS.items()):
        table = BENCHMARK_TABLES[kind]()
        if not isinstance(table, ColumnsTable):
            continue
        benchmark = next(b for _, b in BENCHMARKS.items() if b.table_kind == kind)
        rows = table.rows(benchmark, [run.result for run in runs], [run.label for run in runs], include_paper)
        if not rows:
            continue
        columns = table.columns(benchmark)
        page_rows = [Row(row.label, row.ours, {c: Cell(row.values.get(c)) for c in columns}, notes=list(row.notes),
                         synthetic=row.synthetic) for row in rows]
        _mark_best(page_rows, columns)
        sections.append(Section(kind, table.title, columns, page_rows, table.definition(benchmark)))
    return sections


def task_columns(runs: Sequence[LoadedRun]) -> list[str]:
    """The headers of the other tasks' table: each task outside Table 1 and SciRepEval's with its main score."""
    tasks = dict.fromkeys(name for run in runs for name in other_tasks(run.result))
    return [f"{name} {TASKS[name].spec.main_score}" for name in tasks]


def build_task_rows(runs: Sequence[LoadedRun]) -> list[Row]:
    """A row per run that scored a task outside Table 1 and SciRepEval's table: each such task's main score."""
    headers = task_columns(runs)
    rows = []
    for run in runs:
        if not other_tasks(run.result):
            continue
        cells = {}
        for header in headers:
            name, _, metric = header.rpartition(" ")
            task_result = run.result.tasks.get(name)
            cells[header] = Cell(task_result.metrics.get(metric) if task_result else None)
        rows.append(Row(run.label, True, cells, synthetic=run.result.synthetic))
    _mark_best(rows, headers)
    return rows


PAGE_IMAGES = (".png", ".svg")


def _check_figures(figures: Sequence[str | os.PathLike[str]]) -> None:
    for figure in figures:
        if not Path(figure).is_file():
            raise InputError(figure, "figure not found")
        if Path(figure).suffix.lower() not in PAGE_IMAGES:
            raise InputError(figure, "a figure for the page must be a .png or .svg image")


def _copy_figures(figures: Sequence[str | os.PathLike[str]], root: Path) -> list[str]:
    """Copy each image into root/figures/ (numbered, so names never collide); their site-relative paths."""
    copied = []
    for index, figure in enumerate(figures):
        name = f"{FIGURES}/{index + 1:02d}-{Path(figure).name}"
        (root / FIGURES).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(figure, root / name)
        copied.append(name)
    return copied


def _template() -> tuple[str, str]:
    """The page template and its script (the script's hash goes into the page's Content-Security-Policy)."""
    folder = resources.files("scidocs_eval.leaderboard").joinpath("templates")
    return (folder.joinpath("report.html.j2").read_text(encoding="utf-8"),
            folder.joinpath("report.js").read_text(encoding="utf-8"))


def _format(value: float | None) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:.2f}"


def render_page(rows: Sequence[Row], chart: str | None, figures: Sequence[str], title: str,
                sections: Sequence[Section] = (), task_rows: Sequence[Row] = ()) -> str:
    """The page's HTML (autoescaped; every string from a results file is text); the benchmarks' own tables
    (`sections`: SciRepEval's) after Table 1, then the other tasks' table."""
    jinja2 = require("jinja2", "the report page")
    template_text, script = _template()
    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
                                     lstrip_blocks=True)
    environment.filters["num"] = _format
    script_hash = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    filled = [c for c in COLUMNS if any(row.cells[c].value is not None for row in rows)]
    return environment.from_string(template_text).render(
        title=title, rows=rows, columns=[(c, COLUMNS[c]) for c in filled] + [(AVG, "Avg")],
        absent=[COLUMNS[c] for c in COLUMNS if c not in filled], chart=chart, figures=figures, script=script,
        script_hash=script_hash,
        synthetic=any(row.synthetic for row in [*rows, *(row for section in sections for row in section.rows)]),
        sections=sections, task_rows=task_rows,
        task_columns=list(task_rows[0].cells) if task_rows else [],
        has_paper=any(not row.ours for row in rows), has_ci=any(cell.ci for row in rows
                                                                 for cell in row.cells.values()),
        generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))


def write_report(runs: Sequence[LoadedRun], out: str | os.PathLike[str], *, include_paper: bool = True,
                 figures: Sequence[str | os.PathLike[str]] = (), chart: bool = True,
                 title: str = "SciDocs leaderboard") -> Path:
    """Write `out/index.html` with the result chart (`out/results.png`) and copies of `figures`; returns the
    page's path (no chart when no run has a Table 1 column: SciRepEval's runs). Refuses a folder holding files
    `report` did not write (see `owned_folder`)."""
    if not runs:
        raise ScidocsEvalError("no results files given")
    chart = chart and any(table1_row(run.result) for run in runs)
    _check_figures(figures)
    with owned_folder(out, COMMAND, replaces=(COMMAND,), option="--out") as site:
        if chart:
            save_figure(draw_results(runs), site / CHART)
        copied = _copy_figures(figures, site)
        (site / PAGE).write_text(render_page(build_rows(runs, include_paper), CHART if chart else None, copied,
                                             title, build_sections(runs, include_paper),
                                             build_task_rows(runs)), encoding="utf-8")
    return Path(out) / PAGE


LEADERBOARD_COMMAND = "scidocs-eval leaderboard"
"""The command named in a leaderboard page's folder manifest; `leaderboard --out-dir` replaces only folders it wrote."""
_CHART_LEFT, _CHART_RIGHT = 8.0, 200.0


def _chart_lines(lines: Sequence[Line]) -> tuple[list[dict[str, Any]], float, float]:
    """Each line of a ranking with its chart coordinates (score and interval on one scale per ranking)."""
    ends = [v for line in lines for v in (line.value, *(line.ci or ()))]
    low, high = min(ends), max(ends)
    span = (high - low) or 1.0

    def x(value: float) -> float:
        return round(_CHART_LEFT + (value - low) / span * (_CHART_RIGHT - _CHART_LEFT), 1)

    out = [{"label": line.label, "value": line.value, "position": line.position, "letters": line.letters,
            "ci": line.ci, "published": line.published, "order": order, "x": x(line.value),
            "x_low": x(line.ci[0]) if line.ci else None, "x_high": x(line.ci[1]) if line.ci else None}
           for order, line in enumerate(lines, 1)]
    return out, low, high


def render_leaderboard_page(board: Leaderboard, title: str) -> str:
    """The leaderboard page (`leaderboard --out-dir`): per cohort its rankings (sortable tables, each row's score
    and interval drawn on one scale with its group letters), published rows marked, the mean ranks; autoescaped,
    its script allowed by hash only."""
    jinja2 = require("jinja2", "the leaderboard page")
    folder = resources.files("scidocs_eval.leaderboard").joinpath("templates")
    template_text = folder.joinpath("leaderboard.html.j2").read_text(encoding="utf-8")
    script = folder.joinpath("leaderboard.js").read_text(encoding="utf-8")
    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
                                     lstrip_blocks=True)
    environment.filters["num"] = _format
    cohorts = []
    for cohort in board.cohorts:
        not_published = shows_published(cohort)
        rankings = []
        for ranking in cohort.rankings:
            published = [] if not_published else published_rows(ranking)
            lines, low, high = _chart_lines(ranking_lines(ranking, bool(published)))
            notes = list(ranking.notes) + sorted({f"{row.label} ({row.source}): {row.note}" for row in published
                                                  if row.note})
            if any(row.source == PAPER_SOURCE for row in published):
                notes.append(PAPER_NOTE)
            rankings.append({"name": ranking.name, "metric": ranking.metric, "test": ranking.test,
                             "tested_on": ranking.items, "pairs": len(ranking.p_values), "lines": lines, "low": low,
                             "high": high, "notes": notes})
        mean_ranks = cohort.mean_ranks
        test = "" if mean_ranks is None else (
            f"Friedman χ² = {mean_ranks.friedman_statistic:.3f}, p = {mean_ranks.friedman_p:.4g}; Nemenyi post-hoc, "
            f"critical difference {mean_ranks.critical_difference:.3f}. {mean_ranks.note}"
            if mean_ranks.friedman_statistic is not None else mean_ranks.note)
        cohorts.append({"split": cohort.split, "synthetic": cohort.synthetic, "reason": cohort.reason,
                        "labels": cohort.labels, "rankings": rankings, "not_published": not_published,
                        "mean_ranks": mean_ranks, "mean_ranks_test": test,
                        "mean_rank_rows": list(zip(mean_ranks.labels, mean_ranks.mean_rank, mean_ranks.letters))
                        if mean_ranks else []})
    script_hash = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    legend = (f"models that share a letter are not significantly different (paired tests on the items both "
              f"scored, Holm over the pairs, alpha {board.alpha}); published rows (squares) have no letter.")
    return environment.from_string(template_text).render(
        title=title, cohorts=cohorts, alpha=board.alpha, legend=legend, script=script, script_hash=script_hash,
        generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))


def write_leaderboard_page(board: Leaderboard, runs: Sequence[LoadedRun], out: str | os.PathLike[str],
                           title: str = "SciDocs leaderboard with significance groups") -> Path:
    """Write `out/index.html` (see `render_leaderboard_page`); a folder holding files the command did not write is
    refused (`owned_folder`)."""
    if not runs:
        raise ScidocsEvalError("no results files given")
    with owned_folder(out, LEADERBOARD_COMMAND, replaces=(LEADERBOARD_COMMAND,), option="--out-dir") as site:
        (site / PAGE).write_text(render_leaderboard_page(board, title), encoding="utf-8")
    return Path(out) / PAGE
