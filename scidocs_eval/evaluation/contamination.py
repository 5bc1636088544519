"""Did the model see the test? A contamination audit of a suite's evaluation papers against a model's training data.

`audit_suite(training, suite)` matches every paper of the split's evaluation files (per task: its queries and
candidates, its classification test papers, its recommendation queries and shown papers) against the training
papers at three strengths, each reported separately (`scidocs_eval.data.near_duplicates`):

- "id": the same paper id;
- "title": the same normalised title;
- "text": near-duplicate title + abstract (MinHash LSH, exact Jaccard of word 3-gram shingles >= threshold).

An evaluation item (a ranking query, a classification test paper, a recommendation impression) is *leaked* when
its own paper (the query, the test paper) matches a training paper at one of the counted strengths, in any role
(query, positive, negative, corpus paper), or when it holds a direct leak: a test pair (query, relevant candidate;
recommendation: query, clicked paper) whose two papers match a training (query, positive) pair. Candidates seen in
training are counted and listed but do not make their query leaked (in a large training corpus most are).

`clean_scores(report, result)` scores a results file's per-item results over all, clean and leaked items, with
bootstrap intervals and the clean-vs-all paired bootstrap test (`scidocs_eval.statistics.significance`);
`excluded_items(report, ...)` is what `run --exclude` leaves out.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from scidocs_eval.data.near_duplicates import (
    DEFAULT_NUM_PERM,
    DEFAULT_SEED,
    DEFAULT_THRESHOLD,
    MIN_SHINGLES,
    MIN_TITLE_WORDS,
    SHINGLE_WORDS,
    lsh_bands,
    title_and_text_matches,
)
from scidocs_eval.errors import InputError, ScidocsEvalError
from scidocs_eval.evaluation.integrity import EvaluationItems, Problem
from scidocs_eval.evaluation.task import TaskResult, get_task, selected_tasks
from scidocs_eval.formats.safe_output import Rows, write_bytes_atomically
from scidocs_eval.formats.suite import Suite
from scidocs_eval.formats.training_data import TrainingData, role_names
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.params import SEED, Interval, Options, validate_params
from scidocs_eval.statistics.significance import RESAMPLES, subset_items, task_metrics

if TYPE_CHECKING:
    from scidocs_eval.evaluation.results import RunResult

np = lazy_module("numpy", __name__)

log = logging.getLogger("scidocs_eval")

AUDIT_FORMAT = "scidocs-eval-audit/1"
STRENGTHS = ("id", "title", "text")
EXAMPLES = 10
RESULT_UNITS = {"paper": ("paper", "sample"), "query": ("query",), "impression": ("impression",)}
"""The units of a TaskResult's per-item results whose ids are the audit's items of a unit (a per-sample result of
SciRepEval lists its papers); items of another unit (a few-shot task's iterations) cannot leave leaked ones out."""
AUDIT_PARAMETERS: dict[str, list[Any]] = {
    "threshold": [Interval(float, 0, 1, closed="right")],
    "num_perm": [Interval(int, 16, 1024)],
    "seed": [SEED],
    "examples": [Interval(int, 0, None)],
    "split": [Options(("test", "val"))],
}
"""The audit's settings and their declared ranges (the CLI's options read them)."""


@dataclass(frozen=True)
class Match:
    """A suite paper matched to training paper `training_id` at `strength` (text: with its Jaccard)."""

    training_id: str
    strength: str
    jaccard: float | None = None

    def to_dict(self, roles: int) -> dict[str, Any]:
        out: dict[str, Any] = {"training_id": self.training_id, "match": self.strength,
                               "roles": role_names(roles)}
        if self.jaccard is not None:
            out["jaccard"] = round(self.jaccard, 4)
        return out


@dataclass
class TaskPapers:
    """One task's evaluation items for a split (`Task.evaluation_items`: items, candidates, relevant pairs, unit),
    the texts of its papers (`Task.paper_texts`) and the files they come from (`Task.input_files`)."""

    task: str
    evaluated: EvaluationItems
    texts: dict[str, tuple[str, str]]
    files: list[str]

    @property
    def unit(self) -> str:
        return self.evaluated.unit

    @property
    def items(self) -> dict[str, str]:
        return self.evaluated.items

    @property
    def candidates(self) -> set[str]:
        return self.evaluated.candidates

    @property
    def relevant(self) -> list[tuple[str, str, str]]:
        return self.evaluated.relevant


def task_papers(suite: Suite, task: str, split: str) -> TaskPapers | str:
    """The evaluation items of `task` in `suite`, through its declarations; a reason when it has none there."""
    instance = get_task(task)
    files = instance.input_files(suite, split)
    absent = [f for f in files if not suite.has(f)]
    if absent:
        return f"no {', '.join(absent)} in {suite.root}"
    data = instance.load(suite, split)
    evaluated = instance.evaluation_items(data)
    if evaluated is None:
        return "it declares no evaluation items (Task.evaluation_items)"
    metadata = [instance.spec.metadata_file] if instance.spec.metadata_file else []
    return TaskPapers(task, evaluated, instance.paper_texts(data),
                      [*files, *(f for f in metadata if suite.has(f) and f not in files)])


@dataclass
class Matcher:
    """Matches suite papers against the training papers at the three strengths."""

    training: TrainingData
    threshold: float = DEFAULT_THRESHOLD
    num_perm: int = DEFAULT_NUM_PERM
    seed: int = DEFAULT_SEED
    matches: dict[str, list[Match]] = field(default_factory=dict)
    near_duplicate_pairs: list[tuple[str, str, float]] = field(default_factory=list)
    too_short: int = 0

    def run(self, texts: dict[str, tuple[str, str]], ids: Iterable[str]) -> None:
        """Match every id of `ids` (text from `texts` where known)."""
        ids = list(dict.fromkeys(ids))
        found: dict[str, list[Match]] = {i: [Match(i, "id")] for i in ids if i in self.training.roles}
        with_text = {i: texts[i] for i in ids if i in texts}
        for match in title_and_text_matches(with_text, self.training.texts, self.threshold, self.num_perm,
                                            self.seed):
            found.setdefault(match.left, []).append(Match(match.right, match.strength, match.jaccard))
            if match.strength == "text":
                self.near_duplicate_pairs.append((match.left, match.right, match.jaccard or 0.0))
        self.matches = found

    def matched(self, paper_id: str, strengths: Sequence[str]) -> list[Match]:
        return [m for m in self.matches.get(paper_id, ()) if m.strength in strengths]


@dataclass
class AuditReport:
    """What `audit_suite` found; `to_dict()` is the audit JSON (see docs/audit.md)."""

    data: dict[str, Any]

    @property
    def tasks(self) -> dict[str, Any]:
        return self.data["tasks"]

    def leaked_items(self, task: str) -> dict[str, list[dict[str, Any]]]:
        return self.data["tasks"][task]["leaked_items"]

    def to_dict(self) -> dict[str, Any]:
        return self.data

    def save(self, path: str | os.PathLike[str]) -> Path:
        return write_bytes_atomically(path, orjson.dumps(self.data, option=orjson.OPT_INDENT_2), "--out",
                                      rows=Rows("tasks", set(self.tasks)))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> AuditReport:
        path = Path(path)
        if not path.is_file():
            raise InputError(path, "audit file not found (written by `scidocs-eval audit --out`)")
        try:
            data = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError as error:
            raise InputError(path, f"not an audit file (malformed JSON: {error})") from None
        if not isinstance(data, dict) or data.get("format") != AUDIT_FORMAT or not isinstance(data.get("tasks"),
                                                                                              dict):
            raise InputError(path, f"not an audit file (no 'format': {AUDIT_FORMAT!r} and 'tasks'; audit files "
                             "are written by `scidocs-eval audit --out`)")
        for task, info in data["tasks"].items():
            if not isinstance(info, dict) or not isinstance(info.get("leaked_items"), dict):
                raise InputError(path, f"task {task!r}: no 'leaked_items' object")
        return cls(data)

    def format(self) -> str:
        """Plain text for the terminal: the training data, then per task counts by strength and role."""
        d = self.data
        lines = [f"audit of {d['suite']} (split {d['split']}) against {len(d['training']['sources'])} training "
                 f"source(s): {d['training']['papers']} paper ids, {d['training']['with_text']} with text, "
                 f"{d['training']['pairs']} (query, positive) pairs",
                 f"leaked = matched at {', '.join(d['settings']['leaked_if'])}; near-duplicate: Jaccard of word "
                 f"{SHINGLE_WORDS}-grams >= {d['settings']['threshold']} (MinHash LSH, {d['settings']['num_perm']} "
                 f"permutations, {d['settings']['bands']} bands x {d['settings']['rows']} rows)",
                 f"{'task':<8} {'leaked':>16}  {'direct':>6}  {'own paper seen (id/title/text)':<31} "
                 "candidates seen (id/title/text)"]
        for task, info in self.tasks.items():
            own, cands = info["own_papers"], info["candidates"]
            share = f"{info['leaked']}/{info['items']} ({100 * info['leaked_share']:.1f}%)"
            lines.append(f"{task:<8} {share:>16}  {info['direct_leaks']:>6}  "
                         f"{_by_strength(own):<31} {_by_strength(cands) if cands['total'] else '-'}")
        for task, why in d["skipped"].items():
            lines.append(f"{task:<8} not audited: {why}")
        if d["near_duplicate_examples"]:
            lines.append("near-duplicate pairs to check by eye (lowest similarity first):")
            lines += [f"  {e['jaccard']:.3f}  {e['suite_id']} {e['suite_title'][:50]!r} ~ {e['training_id']} "
                      f"{e['training_title'][:50]!r}" for e in d["near_duplicate_examples"]]
        return "\n".join(lines)


def _by_strength(counts: dict[str, Any]) -> str:
    return f"{counts['id']}/{counts['title']}/{counts['text']} of {counts['total']}"


def _seen_counts(ids: set[str], matcher: Matcher, roles: dict[str, int]) -> dict[str, Any]:
    """How many of `ids` match at each strength, at any, and in each training role."""
    by_strength = {s: sum(1 for i in ids if matcher.matched(i, (s,))) for s in STRENGTHS}
    role_counts: dict[str, int] = {}
    for paper_id in ids:
        flags = 0
        for match in matcher.matches.get(paper_id, ()):
            flags |= roles.get(match.training_id, 0)
        for name in role_names(flags):
            role_counts[name] = role_counts.get(name, 0) + 1
    return {"total": len(ids), **by_strength, "any": sum(1 for i in ids if i in matcher.matches),
            "roles": role_counts}


def _task_report(papers: TaskPapers, matcher: Matcher, strengths: Sequence[str], examples: int) -> dict[str, Any]:
    training = matcher.training
    leaked: dict[str, list[dict[str, Any]]] = {}
    for item, paper in papers.items.items():
        for match in matcher.matched(paper, strengths):
            leaked.setdefault(item, []).append({"paper": paper, "as": "own paper",
                                                **match.to_dict(training.roles.get(match.training_id, 0))})
    direct = 0
    for item, query, relevant in papers.relevant:
        query_matches = matcher.matched(query, strengths)
        relevant_matches = {m.training_id: m for m in matcher.matched(relevant, strengths)}
        for q in query_matches:
            hit = next((relevant_matches[p] for p in training.positives.get(q.training_id, ())
                        if p in relevant_matches), None)
            if hit is not None:
                direct += 1
                leaked.setdefault(item, []).append({"pair": [query, relevant], "as": "direct leak",
                                                    "training_pair": [q.training_id, hit.training_id],
                                                    "match": [q.strength, hit.strength]})
                break
    own = set(papers.items.values())
    candidates_seen = {c: [m.to_dict(training.roles.get(m.training_id, 0)) for m in matcher.matched(c, STRENGTHS)]
                       for c in sorted(papers.candidates) if c in matcher.matches}
    return {"unit": papers.unit, "items": len(papers.items), "leaked": len(leaked),
            "leaked_share": round(len(leaked) / len(papers.items), 4) if papers.items else 0.0,
            "direct_leaks": direct, "own_papers": _seen_counts(own, matcher, training.roles),
            "candidates": _seen_counts(papers.candidates, matcher, training.roles),
            "examples": dict(list(leaked.items())[:examples]), "leaked_items": leaked,
            "candidates_seen": candidates_seen}


def audit_suite(training: TrainingData, suite: Suite, *, tasks: Sequence[str] | None = None,
                benchmark: str | None = None, split: str = "test",
                strengths: Sequence[str] = STRENGTHS, threshold: float = DEFAULT_THRESHOLD,
                num_perm: int = DEFAULT_NUM_PERM, seed: int = DEFAULT_SEED, examples: int = EXAMPLES) -> AuditReport:
    """Audit `suite`'s `split` against `training` (see the module docstring).

    Args:
        tasks: the tasks to audit (default: every registered task, of `benchmark` if given, whose files the suite
            has; an unknown task or benchmark is an error).
        strengths: the match strengths that make an item leaked (all three are always reported).
        threshold: Jaccard similarity of shingle sets from which two texts are near-duplicates.
        num_perm, seed: the MinHash permutations (datasketch's affine32 scheme).
        examples: leaked items per task, and near-duplicate pairs, shown as examples.
    """
    validate_params(AUDIT_PARAMETERS, {"threshold": threshold, "num_perm": num_perm, "seed": seed,
                                       "examples": examples, "split": split}, "audit")
    unknown = [s for s in strengths if s not in STRENGTHS]
    if unknown or not strengths:
        raise ScidocsEvalError(f"match strengths must be some of {', '.join(STRENGTHS)}, got {list(strengths)}")
    names = selected_tasks(tasks, benchmark)
    if not names:
        raise ScidocsEvalError(f"benchmark {benchmark!r} has no registered task to audit")
    skipped: dict[str, str] = {}
    per_task = []
    for name in names:
        papers = task_papers(suite, name, split)
        if isinstance(papers, str):
            skipped[name] = papers
        else:
            per_task.append(papers)
    if not per_task:
        raise ScidocsEvalError(f"no task to audit in {suite.root}: " + "; ".join(f"{k}: {v}"
                                                                              for k, v in skipped.items()))
    texts: dict[str, tuple[str, str]] = {}
    for papers in per_task:
        for paper_id, text in papers.texts.items():
            texts.setdefault(paper_id, text)
    ids = list(dict.fromkeys(i for p in per_task for i in [*p.items.values(), *sorted(p.candidates)]))
    matcher = Matcher(training, threshold, num_perm, seed)
    matcher.run(texts, ids)
    bands, rows = lsh_bands(threshold, num_perm)
    files = sorted({f for p in per_task for f in p.files})
    pairs = sorted(matcher.near_duplicate_pairs, key=lambda pair: pair[2])
    shown = [pairs[int(i)] for i in np.unique(np.linspace(0, len(pairs) - 1, min(examples, len(pairs))).round())]
    data = {
        "format": AUDIT_FORMAT, "suite": str(suite.root), "split": split,
        "training": {"sources": training.sources, "papers": len(training.roles), "with_text": len(training.texts),
                     "pairs": sum(map(len, training.positives.values()))},
        "settings": {"leaked_if": list(strengths), "threshold": threshold, "num_perm": num_perm, "seed": seed,
                     "bands": bands, "rows": rows, "shingles": f"word {SHINGLE_WORDS}-grams",
                     "min_shingles": MIN_SHINGLES, "min_title_words": MIN_TITLE_WORDS},
        "fingerprints": suite.fingerprint(files),
        "papers_checked": len(ids), "papers_with_text": sum(1 for i in ids if i in texts),
        "papers_matched": {s: sum(1 for i in ids if matcher.matched(i, (s,))) for s in STRENGTHS},
        "near_duplicate_pairs": len(pairs),
        "near_duplicate_examples": [_pair_example(p, texts, training) for p in shown],
        "tasks": {p.task: _task_report(p, matcher, strengths, examples) for p in per_task},
        "skipped": skipped,
        "matches": {i: [m.to_dict(training.roles.get(m.training_id, 0)) for m in matcher.matches[i]]
                    for i in ids if i in matcher.matches},
    }
    return AuditReport(data)


def _pair_example(pair: tuple[str, str, float], texts: dict[str, tuple[str, str]], training: TrainingData
                  ) -> dict[str, Any]:
    suite_id, training_id, similarity = pair
    (suite_title, suite_abstract), (training_title, training_abstract) = texts[suite_id], training.texts[training_id]
    return {"jaccard": round(similarity, 4), "suite_id": suite_id, "training_id": training_id,
            "suite_title": suite_title, "training_title": training_title,
            "suite_abstract": suite_abstract[:300], "training_abstract": training_abstract[:300]}


# -- scores on the clean part -----------------------------------------------------------------------------------

def file_sha256(path: str | os.PathLike[str]) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def check_same_suite(report: AuditReport, label: str, split: str, fingerprints: dict[str, str], tasks: Iterable[str]
                     ) -> None:
    """Refuse an audit made on another split, on other suite files, or without one of `tasks`."""
    if report.data.get("split") != split:
        raise ScidocsEvalError(f"{label} audits the {report.data.get('split')} split, not {split}")
    audited = report.data.get("fingerprints", {})
    differing = sorted(f for f in set(audited) & set(fingerprints) if audited[f] != fingerprints[f])
    if differing:
        raise ScidocsEvalError(f"{label} was made on other suite files: {', '.join(differing[:3])} differ "
                               "(sha256); audit this suite again")
    missing = [t for t in tasks if t not in report.tasks]
    if missing:
        raise ScidocsEvalError(f"{label} did not audit task(s) {', '.join(missing)}: audit them too, or leave "
                               "them out with --tasks")


def excluded_items(report: AuditReport, task: str, result: TaskResult | None = None) -> set[str]:
    """The item ids of `task` the audit found leaked; with `result`, an error when its per-item results are not of
    the audit's items (a few-shot task's iterations: no item of it can be left out)."""
    if result is not None and result.items and not items_comparable(report, task, result):
        raise ScidocsEvalError(f"task {task}: its results are per {result.items['unit']}, the audit's items are "
                               f"{report.tasks[task].get('unit')}s, so its leaked items cannot be left out; leave "
                               "the task out with --tasks")
    return set(report.leaked_items(task))


def items_comparable(report: AuditReport, task: str, result: TaskResult) -> bool:
    """Whether `result`'s per-item ids are the audit's items of `task` (see RESULT_UNITS)."""
    unit = report.tasks.get(task, {}).get("unit")
    return unit is None or result.items.get("unit") in RESULT_UNITS.get(unit, (unit,))


def clean_scores(report: AuditReport, result: RunResult, resamples: int = RESAMPLES, seed: int = 0
                 ) -> dict[str, dict[str, Any]]:
    """Per task and metric of `result`: the value and 95% interval over all, clean and leaked items, and the
    clean − all difference with its paired-bootstrap interval and p-value. Tasks without per-item results or
    not audited are listed under "skipped"."""
    check_same_suite(report, "the audit", result.settings.split,
                     result.fingerprints.get("data", {}), [])
    scores: dict[str, dict[str, Any]] = {}
    for task, task_result in result.tasks.items():
        if task not in report.tasks or not task_result.items:
            scores.setdefault("skipped", {})[task] = ("not audited" if task not in report.tasks
                                                      else "no per-item results in the results file")
            continue
        leaked = excluded_items(report, task)
        if not items_comparable(report, task, task_result):
            scores.setdefault("skipped", {})[task] = (f"its results are per {task_result.items['unit']}, the "
                                                      f"audit's items are {report.tasks[task].get('unit')}s")
            continue
        keep = np.array([item not in leaked for item in task_result.items["ids"]])
        per_metric = {}
        for metric, estimator in task_metrics(task_result.items, list(task_result.metrics)).items():
            parts = {"all": estimator, "clean": estimator.reordered(np.flatnonzero(keep)),
                     "leaked": estimator.reordered(np.flatnonzero(~keep))}
            summary: dict[str, Any] = {}
            for part, part_estimator in parts.items():
                n = len(part_estimator.ids)
                summary[part] = {"n": n, "value": part_estimator.value() if n else None,
                                 "ci": [round(v, 2) for v in part_estimator.interval(resamples, seed)]
                                 if n >= 2 else None}
            if keep.all() or not keep.any():
                summary["clean_minus_all"] = {"delta": 0.0 if keep.all() else None, "ci": None, "p_value": None}
            else:
                interval, p_value = estimator.subset_test(keep, resamples, seed)
                summary["clean_minus_all"] = {"delta": round(summary["clean"]["value"] - summary["all"]["value"], 2),
                                              "ci": [round(v, 2) for v in interval], "p_value": p_value}
            per_metric[metric] = summary
        scores[task] = {"unit": task_result.items["unit"], "metrics": per_metric}
    return scores


def format_clean_scores(scores: dict[str, dict[str, Any]]) -> str:
    lines = [f"{'task':<8} {'metric':<9} {'all':>22} {'clean':>22} {'leaked':>22}  {'clean-all':>9} "
             f"{'95% CI':<17} p"]
    for task, info in scores.items():
        if task == "skipped":
            continue
        for metric, s in info["metrics"].items():
            cells = []
            for part in ("all", "clean", "leaked"):
                value, ci, n = s[part]["value"], s[part]["ci"], s[part]["n"]
                text = "—" if value is None else f"{value:.2f}" + (f" [{ci[0]:.2f},{ci[1]:.2f}]" if ci else "")
                cells.append(f"{text} n={n}")
            d = s["clean_minus_all"]
            delta = "—" if d["delta"] is None else f"{d['delta']:+.2f}"
            ci = f"[{d['ci'][0]:+.2f}, {d['ci'][1]:+.2f}]" if d["ci"] else "—"
            p = "—" if d["p_value"] is None else f"{d['p_value']:.4f}"
            lines.append(f"{task:<8} {metric:<9} {cells[0]:>22} {cells[1]:>22} {cells[2]:>22}  {delta:>9} "
                         f"{ci:<17} {p}")
    for task, why in scores.get("skipped", {}).items():
        lines.append(f"{task:<8} not scored: {why}")
    return "\n".join(lines)


def without_leaked(result: TaskResult, leaked: set[str]) -> TaskResult:
    """`result` scored on its items not in `leaked`: the metrics recomputed from the kept per-item results (the
    numbers `clean_scores` gives as "clean"); the all-items metrics and details kept under "before_exclusion"."""
    if not result.items:
        raise ScidocsEvalError(f"task {result.task}: no per-item results, so leaked items cannot be left out")
    ids = result.items["ids"]
    keep = [i for i, item in enumerate(ids) if item not in leaked]
    if not keep:
        raise ScidocsEvalError(f"task {result.task}: every one of its {len(ids)} scored items is leaked; nothing "
                               "is left to score (leave the task out with --tasks)")
    items = subset_items(result.items, keep)
    metrics = {metric: estimator.value() for metric, estimator in task_metrics(items, list(result.metrics)).items()}
    details = {"before_exclusion": {"metrics": result.metrics, "details": result.details}}
    coverage = {**result.coverage, "items_excluded_as_leaked": len(ids) - len(keep)}
    return TaskResult(result.task, metrics, coverage, details, result.seconds, items=items)


def report_clean_split(result: TaskResult, warnings: Sequence[Problem]) -> TaskResult:
    """`result` with, for each warning naming scored items that inflate its number (`Problem.items`: test papers
    also in train that the task's reference evaluator scores), the metrics without those items in
    `details["clean_split"][rule]`, also logged; a task whose per-item results are not of those items (a few-shot
    task's iterations) says so instead."""
    for warning in (w for w in warnings if w.items):
        items = set(warning.items)
        ids = result.items.get("ids", []) if result.items else []
        if result.items.get("unit") not in RESULT_UNITS["paper"] or not items & set(ids):
            log.warning("task %s: [%s] its per-item results are per %s, so no number without the %d item(s) can be "
                        "given: its numbers include them", result.task, warning.rule,
                        result.items.get("unit", "nothing") if result.items else "nothing", len(items))
            continue
        clean = without_leaked(result, items)
        result.details.setdefault("clean_split", {})[warning.rule] = {
            "excluded": len(ids) - len(clean.items["ids"]), "scored": len(clean.items["ids"]), "metrics": clean.metrics}
        log.warning("task %s: [%s] on the %d scored item(s) without the %d listed: %s (on all %d: %s)", result.task,
                    warning.rule, len(clean.items["ids"]), len(ids) - len(clean.items["ids"]),
                    ", ".join(f"{m} {v:.2f}" for m, v in clean.metrics.items()), len(ids),
                    ", ".join(f"{m} {v:.2f}" for m, v in result.metrics.items()))
    return result
