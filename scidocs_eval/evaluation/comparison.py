"""`compare(a, b, ...)`: is model B really better than model A on SciDocs?

For every task and metric both results scored, on the items both share (queries, test papers, impressions;
they must be the same items): the difference B − A of the printed metrics, its 95% paired-bootstrap interval,
the p-value of a paired randomization test (recommendation: a two-level bootstrap test over impressions and
seeds), the p-value after Holm's correction over all the metrics of the
comparison, and a verdict. The statistics are `scidocs_eval.statistics.significance`'s; docs/significance.md says which
test and resampling unit each metric uses.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.formats.safe_output import write_bytes_atomically
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.progress import progress_bar
from scidocs_eval.statistics.significance import CONFIDENCE, RESAMPLES, ItemMetric, holm, task_metrics

if TYPE_CHECKING:
    from scidocs_eval.evaluation.results import RunResult

    ResultSource = RunResult | str | os.PathLike[str]

np = lazy_module("numpy", __name__)

ALPHA = 0.05
COMPARISON_FORMAT = "scidocs-eval-compare/1"
UNIT_NAMES = {"query": "queries", "paper": "papers", "impression": "impressions", "sample": "test items",
              "iteration": "few-shot iterations"}


@dataclass(frozen=True)
class MetricComparison:
    """One task's metric, B against A: values ×100 as printed; `n` shared items of `unit`."""

    task: str
    metric: str
    value_a: float
    value_b: float
    delta: float
    ci_low: float
    ci_high: float
    p_value: float
    p_holm: float
    n: int
    unit: str
    verdict: str


@dataclass
class PairComparison:
    """Every metric of one result (`model`) against the baseline; `skipped`: task -> why not compared."""

    baseline: str
    model: str
    rows: list[MetricComparison]
    skipped: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    """tasks compared over the items both results scored (their A and B are not the files' headline numbers)."""


@dataclass
class Comparison:
    """What `compare` returns: one PairComparison per result after the first (each against the first)."""

    pairs: list[PairComparison]
    split: str
    resamples: int
    seed: int
    alpha: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: settings, and per pair `results[task][metric]` = delta, ci_low, ci_high, p_value, p_holm,
        n, ... (see MetricComparison)."""
        return {"format": COMPARISON_FORMAT, "split": self.split, "resamples": self.resamples, "seed": self.seed,
                "alpha": self.alpha, "confidence": CONFIDENCE, "correction": "holm",
                "comparisons": [{"baseline": pair.baseline, "model": pair.model, "skipped": pair.skipped,
                                 "notes": pair.notes, "results": _nested(pair.rows)} for pair in self.pairs]}


def _nested(rows: list[MetricComparison]) -> dict[str, dict[str, dict[str, Any]]]:
    nested: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows:
        values = {k: v for k, v in asdict(row).items() if k not in ("task", "metric")}
        nested.setdefault(row.task, {})[row.metric] = values
    return nested


def _load(source: ResultSource) -> tuple[str, RunResult]:
    """(label naming the result in messages and tables, the result)."""
    from scidocs_eval.evaluation.results import RunResult

    if isinstance(source, RunResult):
        return source.model, source
    result = RunResult.load(source)
    return f"{result.model} ({source})", result


def check_comparable(a: RunResult, label_a: str, b: RunResult, label_b: str) -> None:
    """Refuse results computed on different splits or different suite files."""
    split_a, split_b = a.settings.split, b.settings.split
    if split_a != split_b:
        raise ScidocsEvalError(f"cannot compare: different splits ({label_a}: {split_a}, {label_b}: {split_b})")
    files_a, files_b = a.fingerprints.get("data", {}), b.fingerprints.get("data", {})
    differing = sorted(f for f in set(files_a) & set(files_b) if files_a[f] != files_b[f])
    if differing:
        shown = ", ".join(f"{f} (sha256 {files_a[f][:12]}… vs {files_b[f][:12]}…)" for f in differing[:3])
        more = f" and {len(differing) - 3} more" if len(differing) > 3 else ""
        raise ScidocsEvalError(f"cannot compare: {label_a} and {label_b} were computed on different suite files: "
                               f"{shown}{more} differ")


def checked_estimators(task: str, result: RunResult, label: str, metrics: list[str]) -> dict[str, ItemMetric]:
    """metric -> the estimator of `result`'s `task` from its per-item results; an error naming `label` when the
    file has no per-item results or a recomputed metric differs from the printed one."""
    items = result.tasks[task].items
    if not items:
        raise ScidocsEvalError(f"{label}: task {task} has no per-item results (written by an older "
                               "scidocs-eval); run the evaluation again to compare it")
    per_metric = task_metrics(items, metrics)
    for metric, estimator in per_metric.items():
        printed = result.tasks[task].metrics[metric]
        if estimator.value() != printed:
            raise ScidocsEvalError(f"{label}: task {task}: {metric} recomputed from the per-item results is "
                                   f"{estimator.value():.2f}, but the file says {printed:.2f}; the file is "
                                   "inconsistent (edited?)")
    return per_metric


def aligned_metrics(task: str, a: RunResult, label_a: str, b: RunResult, label_b: str,
                    notes: list[str] | None = None) -> dict[str, tuple[ItemMetric, ItemMetric]]:
    """metric -> (A's estimator, B's estimator), both over the items both results scored, in A's order, for the
    metrics both report. When the items differ (a query one model had no embedding for is left out of its run),
    a note for `notes` says how many each had and that the metrics are recomputed over the shared ones.

    Raises when a result has no per-item data, when a recomputed metric differs from the printed one, or when
    fewer than MIN_SHARED of either side's items are shared.
    """
    metrics = [m for m in a.tasks[task].metrics if m in b.tasks[task].metrics]
    estimators = [(result.tasks[task].items.get("unit"), checked_estimators(task, result, label, metrics))
                  for label, result in ((label_a, a), (label_b, b))]
    (unit_a, mine), (unit_b, theirs) = estimators
    if unit_a != unit_b:
        raise ScidocsEvalError(f"cannot compare task {task}: {label_a} has per-{unit_a} results, {label_b} "
                               f"per-{unit_b}")
    ids_a, ids_b = a.tasks[task].items["ids"], b.tasks[task].items["ids"]
    unit = UNIT_NAMES.get(unit_a, unit_a)
    if ids_a == ids_b:
        if len(ids_a) < 2:
            raise ScidocsEvalError(f"cannot compare task {task}: {len(ids_a)} {unit} shared; a paired test needs "
                                   "at least 2")
        return {m: (mine[m], theirs[m]) for m in metrics}
    rows_a, rows_b = _shared_rows(task, unit, ids_a, label_a, ids_b, label_b)
    if notes is not None:
        notes.append(f"task {task}: {label_a} scored {len(ids_a)} {unit}, {label_b} {len(ids_b)}; compared over "
                     f"the {len(rows_a)} both scored, so its {', '.join(metrics)} here are recomputed over those "
                     "and are NOT the headline numbers of the results files")
    return {m: (mine[m].reordered(rows_a), theirs[m].reordered(rows_b)) for m in metrics}


MIN_SHARED = 0.5
"""The least share of each result's items that must be shared for a comparison over the shared items."""


def _shared_rows(task: str, unit: str, ids_a: list[str], label_a: str, ids_b: list[str], label_b: str
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Positions in A and in B of the items both scored, in A's order; an error naming the reason when the
    items cannot be paired (an id repeated in one result) or too few are shared."""
    for label, ids in ((label_a, ids_a), (label_b, ids_b)):
        if len(set(ids)) != len(ids):
            repeated = next(item for item in ids if ids.count(item) > 1)
            raise ScidocsEvalError(f"cannot compare task {task}: {label} lists {unit} {repeated!r} more than once "
                                   "and the two results' items differ, so they cannot be paired")
    position_b = {item: row for row, item in enumerate(ids_b)}
    pairs = [(row, position_b[item]) for row, item in enumerate(ids_a) if item in position_b]
    if len(pairs) < 2 or len(pairs) < MIN_SHARED * max(len(ids_a), len(ids_b)):
        raise ScidocsEvalError(f"cannot compare task {task}: only {len(pairs)} {unit} scored by both ({label_a}: "
                               f"{len(ids_a)}, {label_b}: {len(ids_b)}); a comparison over shared {unit} needs at "
                               f"least {MIN_SHARED:.0%} of each side's (and 2)")
    rows = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    return rows[:, 0], rows[:, 1]


def _verdict(delta: float, ci: tuple[float, float], p_holm: float, alpha: float) -> str:
    if p_holm >= alpha:
        return "no significant difference"
    direction = delta if delta != 0 else ci[0] + ci[1]
    return "better" if direction > 0 else "worse"


def compare_pair(a: RunResult, label_a: str, b: RunResult, label_b: str, resamples: int = RESAMPLES,
                 seed: int = 0, alpha: float = ALPHA, progress: bool = True) -> PairComparison:
    """Every metric of `b` against `a` (see `compare`)."""
    check_comparable(a, label_a, b, label_b)
    shared = [t for t in a.tasks if t in b.tasks]
    skipped = {t: f"only in {label_a if t in a.tasks else label_b}"
               for t in list(a.tasks) + list(b.tasks) if t not in shared}
    if not shared:
        raise ScidocsEvalError(f"cannot compare: {label_a} and {label_b} have no task in common")
    notes: list[str] = []
    pairs = {(task, metric): estimators for task in shared
             for metric, estimators in aligned_metrics(task, a, label_a, b, label_b, notes).items()}
    raw = []
    with progress_bar(enabled=progress, total=len(pairs), desc="compare", unit="metric") as bar:
        for (task, metric), (mine, theirs) in pairs.items():
            try:
                raw.append((task, metric, mine, *mine.paired_test(theirs, resamples, seed)))
            except ScidocsEvalError as error:
                raise ScidocsEvalError(f"cannot compare task {task} of {label_a} and {label_b}: {error}") from None
            bar.update(1)
    adjusted = holm(np.array([r[-1] for r in raw]))
    rows = []
    for (task, metric, mine, ci, p_value), p_holm in zip(raw, adjusted):
        value_a, value_b = mine.value(), pairs[(task, metric)][1].value()
        delta = round(value_b - value_a, 2)
        rows.append(MetricComparison(task, metric, value_a, value_b, delta, round(ci[0], 2), round(ci[1], 2),
                                     p_value, float(p_holm), len(mine.ids), mine.unit,
                                     _verdict(delta, ci, float(p_holm), alpha)))
    return PairComparison(label_a, label_b, rows, skipped, notes)


def compare(baseline: ResultSource, *others: ResultSource, resamples: int = RESAMPLES, seed: int = 0,
            alpha: float = ALPHA, progress: bool = True) -> Comparison:
    """Compare results against a baseline: each of `others` (B, C, ...) against `baseline` (A).

    Args:
        baseline, others: RunResults or paths of results JSON files, scored on the same suite files and split.
        resamples: bootstrap resamples and random permutations per metric.
        seed: seeds the resampling (the same seed gives the same intervals and p-values).
        alpha: significance level of the verdicts, applied to Holm-corrected p-values.

    Returns:
        a Comparison; `comparison.pairs[i].rows` holds per task and metric delta (×100), ci_low, ci_high,
        p_value, p_holm, n (shared items) and verdict.

    Raises:
        ScidocsEvalError: different splits or suite files, items that do not match, results without per-item
            data, or fewer than two results.
    """
    if not others:
        raise ScidocsEvalError("compare needs at least two results (a baseline and one to compare with it)")
    if resamples < 1:
        raise ScidocsEvalError(f"resamples must be at least 1, got {resamples}")
    label_a, a = _load(baseline)
    pairs = []
    for source in others:
        label_b, b = _load(source)
        pairs.append(compare_pair(a, label_a, b, label_b, resamples, seed, alpha, progress))
    return Comparison(pairs, a.settings.split, resamples, seed, alpha)


def write_json(comparison: Comparison, path: str | os.PathLike[str]) -> Path:
    """Write `comparison.to_dict()` as JSON to `path` (through the output layer: a file of the user's is refused)."""
    return write_bytes_atomically(path, orjson.dumps(comparison.to_dict(), option=orjson.OPT_INDENT_2), "--json",
                                  rows=None)
