"""The integrity rules, written once by the shape of a task's data, run by both `run` and `data verify`.

A task declares its data of a split as shapes (`Task.data_shapes`): a `LabelledSplit` (papers with classes,
label sets or values, scored against a training split), a `JudgedSplit` (queries with graded candidates), a
`SampledEvaluation` (training sets drawn from a split, `iterations` times), a `ClusteredSplit` (documents with the
labels they are clustered against), an `ImpressionsSplit` (lists of papers shown for a query, one clicked,
weighted by the propensity of the clicked position). Each shape's `findings` are its rules;
every task that declares a shape gets them, whatever its family (`docs/errors_and_files.md`, "Integrity rules").
A new shape is a subclass of `DataShape` with its own `findings`.

`data verify` lists every finding; `run` stops on a task's first error (one line naming the file and the
counts) and logs its warnings, so a suite `data verify` calls usable is one `run` scores, and a number `run`
prints was not scored on a split it was trained on.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from scidocs_eval.errors import InputError
from scidocs_eval.formats.judgements import GRADE_LIMIT
from scidocs_eval.formats.suite import Impression
from scidocs_eval.lazy_modules import lazy_module

np = lazy_module("numpy", __name__)

SHOWN_IDS = 10
"""how many ids a problem lists before saying how many more there are."""
log = logging.getLogger("scidocs_eval")


@dataclass(frozen=True)
class Problem:
    """One finding about a suite: `where` is a suite-relative file (or a path), with ":line" when one line is at
    fault; `rule` names the rule (`docs/errors_and_files.md`), empty for a parse error."""

    severity: Literal["error", "warning"]
    where: str
    message: str
    rule: str = field(default="", compare=False)
    items: tuple[str, ...] = field(default=(), compare=False)
    """for a warning about scored items that inflate a number (test papers also in train, where the task's reference
    evaluator scores them): those items; `run` reports the number without them beside (`report_clean_split`)."""

    def __str__(self) -> str:
        named = f" [{self.rule}]" if self.rule else ""
        return f"{self.severity.upper()}{named} {self.where}: {self.message}"


def listed(ids: Iterable[str]) -> str:
    """The first SHOWN_IDS of `ids`, and how many more."""
    ids = [str(i) for i in ids]
    more = f" (and {len(ids) - SHOWN_IDS} more)" if len(ids) > SHOWN_IDS else ""
    return ", ".join(ids[:SHOWN_IDS]) + more


@dataclass
class EvaluationItems:
    """What a split scores, for the audit and `run --exclude`: `items` (item id -> the item's own paper),
    `candidates` (papers ranked for them), `relevant` ((item, query paper, relevant paper) pairs), and `unit`,
    what an item is ("paper", "query", "impression"; a TaskResult's per-item ids are these items)."""

    unit: str
    items: dict[str, str] = field(default_factory=dict)
    candidates: set[str] = field(default_factory=set)
    relevant: list[tuple[str, str, str]] = field(default_factory=list)

    def merged(self, other: EvaluationItems) -> EvaluationItems:
        if other.unit != self.unit:
            raise ValueError(f"items of two units, {self.unit} and {other.unit}")
        return EvaluationItems(self.unit, {**self.items, **other.items}, self.candidates | other.candidates,
                               list(dict.fromkeys(self.relevant + other.relevant)))


class DataShape:
    """The data of one split of a task, by shape; `findings` applies the rules of the shape."""

    task: str

    def findings(self) -> list[Problem]:
        raise NotImplementedError

    def counts(self) -> dict[str, int]:
        """What `data verify` prints for it."""
        return {}

    def evaluation_items(self) -> EvaluationItems | None:
        """The items it scores (the audit); None for a shape that scores none by itself."""
        return None

    def papers(self) -> dict[str, list[str]]:
        """file -> the paper ids it names (`data verify` looks them up in the task's metadata file)."""
        return {}

    def held_out(self) -> tuple[set[str], set[frozenset[str]]]:
        """The queries it judges (tunes on or scores) and its query-candidate pairs: what a model that learns from
        citations must not be shown (`run.fit_inputs.guard_edges`); none for a shape without queries."""
        return set(), set()


LabelKind = Literal["classes", "label-sets", "values"]


@dataclass(frozen=True)
class LabelledSplit(DataShape):
    """Papers of a scored split with labels, learnt from a training split.

    `kind`: "classes" (one int class a paper: `labels` (n,)), "label-sets" (0/1 a label: (n, labels)) or "values"
    (a number a paper: regression). `folds`: the cross-validation folds over train (None: no CV). `overlap`: what
    test papers also in train are: an error (the SciDocs suite's splits are disjoint by construction), or a
    warning with their count where the task's reference evaluator scores them as they are (SciRepEval's): `run`
    then reports the number on the clean split beside (an error still when no scored paper is clean).
    """

    task: str
    train_file: str
    scored_file: str
    train_ids: Sequence[str]
    train_labels: np.ndarray
    scored_ids: Sequence[str]
    scored_labels: np.ndarray
    kind: LabelKind = "classes"
    folds: int | None = None
    overlap: Literal["error", "warning"] = "error"

    def evaluation_items(self) -> EvaluationItems:
        return EvaluationItems("paper", {paper_id: paper_id for paper_id in self.scored_ids})

    def papers(self) -> dict[str, list[str]]:
        return {self.train_file: list(self.train_ids), self.scored_file: list(self.scored_ids)}

    def counts(self) -> dict[str, int]:
        counts = {"train_papers": len(self.train_ids), "papers": len(self.scored_ids)}
        if self.kind == "classes":
            counts["classes"] = len(set(np.asarray(self.scored_labels).tolist()))
        elif self.kind == "label-sets" and np.ndim(self.scored_labels) == 2:
            counts["labels"] = int(np.shape(self.scored_labels)[1])
        return counts

    def findings(self) -> list[Problem]:
        findings = []
        for where, ids in ((self.train_file, self.train_ids), (self.scored_file, self.scored_ids)):
            if not len(ids):
                findings.append(Problem("error", where, "no labelled papers (an empty split scores nothing)",
                                        "empty-split"))
        if findings:
            return findings
        in_train = set(self.train_ids)
        distinct = list(dict.fromkeys(self.scored_ids))
        shared = [paper_id for paper_id in distinct if paper_id in in_train]
        if shared and (self.overlap == "error" or len(shared) == len(distinct)):
            findings.append(Problem("error", self.scored_file, f"{len(shared)} of its {len(distinct)} papers are "
                                    f"also in {self.train_file} (a model scored on papers it was trained on): "
                                    f"{listed(shared)}", "test-in-train"))
        elif shared:
            findings.append(Problem("warning", self.scored_file, f"{len(shared)} of its {len(distinct)} papers are "
                                    f"also in {self.train_file} (scored as the task's reference evaluator scores "
                                    f"them; the number on the other {len(distinct) - len(shared)} is reported "
                                    f"beside): {listed(shared)}", "test-in-train", tuple(shared)))
        for where, ids in ((self.train_file, self.train_ids), (self.scored_file, self.scored_ids)):
            repeated = sorted(i for i, n in Counter(ids).items() if n > 1)
            if repeated:
                findings.append(Problem("warning", where, f"{len(repeated)} paper(s) listed more than once: "
                                        f"{listed(repeated)}", "repeated-paper"))
        values = np.asarray(self.train_labels, dtype=np.float64)
        if not np.isfinite(values).all() or not np.isfinite(np.asarray(self.scored_labels, dtype=np.float64)).all():
            findings.append(Problem("error", self.train_file, "a label is NaN or infinite", "label-kind"))
            return findings
        if self.kind == "classes":
            findings += self._class_findings()
        elif self.kind == "label-sets":
            findings += self._label_set_findings()
        elif self.folds and len(self.train_ids) < self.folds:
            findings.append(Problem("error", self.train_file, f"{len(self.train_ids)} paper(s), fewer than the "
                                    f"{self.folds} cross-validation folds", "class-below-folds"))
        return findings

    def _class_findings(self) -> list[Problem]:
        findings = []
        sizes = Counter(np.asarray(self.train_labels).tolist())
        if len(sizes) < 2:
            findings.append(Problem("error", self.train_file, f"one class ({next(iter(sizes))}) only: a classifier "
                                    "needs at least two", "one-class"))
        label, smallest = min(sizes.items(), key=lambda pair: (pair[1], pair[0]))
        if self.folds and smallest < self.folds:
            findings.append(Problem("error", self.train_file, f"class {label} has {smallest} paper(s), fewer than "
                                    f"the {self.folds} cross-validation folds (task parameter folds); every class "
                                    "needs at least one paper per fold", "class-below-folds"))
        unseen = sorted(set(np.asarray(self.scored_labels).tolist()) - set(sizes))
        if unseen:
            papers = int(np.isin(self.scored_labels, unseen).sum())
            findings.append(Problem("warning", self.scored_file, f"{len(unseen)} class(es) absent from "
                                    f"{self.train_file} ({listed(map(str, unseen))}; {papers} paper(s)): no "
                                    "classifier can predict them", "class-not-in-train"))
        return findings

    def _label_set_findings(self) -> list[Problem]:
        findings = []
        train = np.asarray(self.train_labels)
        positives = train.sum(axis=0)
        if self.folds:
            below = [str(i) for i, n in enumerate(positives.tolist()) if 0 < n < self.folds]
            if below:
                findings.append(Problem("warning", self.train_file, f"{len(below)} label(s) have fewer positives "
                                        f"than the {self.folds} cross-validation folds: {listed(below)}",
                                        "class-below-folds"))
        absent = [str(i) for i, n in enumerate(positives.tolist()) if n == 0
                  and np.asarray(self.scored_labels)[:, i].any()]
        if absent:
            findings.append(Problem("warning", self.scored_file, f"{len(absent)} label(s) have no positive in "
                                    f"{self.train_file}: {listed(absent)}", "class-not-in-train"))
        return findings


@dataclass(frozen=True)
class JudgedSplit(DataShape):
    """Queries with graded candidates (`judgements[query][candidate]`, read by `formats.judgements`: a pair is
    judged once, grades are what pytrec_eval takes). `queries`: the queries that have a text (None: every judged
    query); `corpus`: the documents that can be ranked (None: every judged one); `candidate_lists`: each query's
    own candidates when it ranks only those (reranking), else None."""

    task: str
    file: str
    judgements: Mapping[str, Mapping[str, int]]
    queries: Collection[str] | None = None
    corpus: Collection[str] | None = None
    candidate_lists: Mapping[str, Sequence[str]] | None = None
    repeated: int = 0
    conflicts: int = 0

    def evaluation_items(self) -> EvaluationItems:
        candidates = {c for grades in self.judgements.values() for c in grades}
        if self.candidate_lists is not None:
            candidates |= {c for q in self.judgements for c in self.candidate_lists.get(q, ())}
        relevant = [(q, q, c) for q, grades in self.judgements.items() for c, grade in grades.items() if grade > 0]
        return EvaluationItems("query", {q: q for q in self.judgements}, candidates, relevant)

    def held_out(self) -> tuple[set[str], set[frozenset[str]]]:
        lists = self.candidate_lists or {}
        return set(self.judgements), {frozenset((q, c)) for q, grades in self.judgements.items()
                                      for c in (*grades, *lists.get(q, ()))}

    def papers(self) -> dict[str, list[str]]:
        """Its queries, and its candidates unless they are documents of a `corpus` of their own (reviewers, a
        retrieval corpus: checked against it by the rule candidate-not-in-corpus)."""
        candidates = [c for grades in self.judgements.values() for c in grades] if self.corpus is None else []
        return {self.file: [*self.judgements, *candidates]}

    def counts(self) -> dict[str, int]:
        counts = {"queries": len(self.judgements), "pairs": sum(map(len, self.judgements.values())),
                  "positives": sum(g > 0 for grades in self.judgements.values() for g in grades.values())}
        if self.corpus is not None:
            counts["documents"] = len(self.corpus)
        if self.candidate_lists is not None:
            counts["candidates"] = sum(len(self.candidate_lists.get(q, ())) for q in self.judgements)
        return counts

    def findings(self) -> list[Problem]:
        if not self.judgements:
            return [Problem("error", self.file, "no judgements (an empty split scores nothing)", "empty-split")]
        findings = []
        beyond = [q for q, grades in self.judgements.items() if any(abs(g) > GRADE_LIMIT for g in grades.values())]
        if beyond:
            findings.append(Problem("error", self.file, f"{len(beyond)} query(ies) have grades beyond what "
                                    f"pytrec_eval takes (|grade| <= {GRADE_LIMIT}): {listed(beyond)}",
                                    "grade-range"))
        if self.conflicts:
            findings.append(Problem("warning", self.file, f"{self.conflicts} pair(s) judged twice with different "
                                    "grades; the later grade is scored (the official evaluator's rule for this "
                                    "format)", "pair-judged-twice"))
        if self.repeated:
            findings.append(Problem("warning", self.file, f"{self.repeated} line(s) repeat a judged pair with its "
                                    "grade (read once)", "repeated-judgement"))
        if self.queries is not None:
            unknown = [q for q in self.judgements if q not in self.queries]
            if unknown:
                findings.append(Problem("warning", self.file, f"{len(unknown)} judged query(ies) have no query text "
                                        f"(left out of the scores): {listed(unknown)}", "query-without-text"))
        if self.candidate_lists is not None:
            without = [q for q in self.judgements if not self.candidate_lists.get(q)]
            if without:
                findings.append(Problem("warning", self.file, f"{len(without)} judged query(ies) have no candidate "
                                        f"(left out of the scores): {listed(without)}", "query-without-candidates"))
        if self.corpus is not None:
            corpus = self.corpus if isinstance(self.corpus, (set, frozenset, dict)) else set(self.corpus)
            absent = sorted({d for grades in self.judgements.values() for d in grades if d not in corpus})
            if absent:
                findings.append(Problem("warning", self.file, f"{len(absent)} judged candidate(s) not in the corpus "
                                        f"(never ranked): {listed(absent)}", "candidate-not-in-corpus"))
        no_positive = [q for q, grades in self.judgements.items() if not any(g > 0 for g in grades.values())]
        if no_positive:
            findings.append(Problem("warning", self.file, f"{len(no_positive)} query(ies) without a positive (they "
                                    f"score 0): {listed(no_positive)}", "query-without-positive"))
        return findings


@dataclass(frozen=True)
class SampledEvaluation(DataShape):
    """Training sets of `sample_size` drawn `iterations` times from a labelled training split: single-label
    draws are the folds of a stratified split into ceil(n / sample_size) folds (each must hold every class);
    label-set draws take `sample_size` positives of each label (`folds`: the CV each draw is fitted with)."""

    task: str
    train_file: str
    train_labels: np.ndarray
    sample_size: int
    iterations: int
    label_sets: bool = False
    folds: int | None = None

    def findings(self) -> list[Problem]:
        where, size = self.train_file, self.sample_size
        labels = np.asarray(self.train_labels)
        papers = len(labels)
        if self.label_sets:
            positives = labels.sum(axis=0).astype(int).tolist()
            short = [str(i) for i, n in enumerate(positives) if n < size]
            if short:
                return [Problem("error", where, f"sample_size {size} is more than the training positives of "
                                f"{len(short)} label(s) ({listed(short)}; fewest: {min(positives)})",
                                "sample-size")]
            if self.folds and size < self.folds:
                return [Problem("error", where, f"sample_size {size} is below the {self.folds} cross-validation "
                                "folds each draw is fitted with (every label needs a positive per fold)",
                                "sample-size")]
            return []
        if size >= papers:
            return [Problem("error", where, f"sample_size {size} is not below the {papers} training papers: there is "
                            "nothing to draw (use a smaller task parameter sample_size)", "sample-size")]
        draws = math.ceil(papers / size)
        label, smallest = min(Counter(labels.tolist()).items(), key=lambda pair: (pair[1], pair[0]))
        if draws > smallest:
            return [Problem("error", where, f"sample_size {size} splits the {papers} training papers into {draws} "
                            f"draws, more than the {smallest} paper(s) of class {label}: every draw must hold every "
                            "class (use a larger task parameter sample_size)", "sample-size")]
        if draws < self.iterations:
            return [Problem("warning", where, f"{papers} training papers make {draws} draws of {size}, so {draws} "
                            f"iterations run, not {self.iterations} (as SciRepEval does)", "fewer-iterations")]
        return []


@dataclass(frozen=True)
class ClusteredSplit(DataShape):
    """Documents of a scored split with the labels they are clustered against (`labels[i]`: document i's, outermost
    level first); nothing is learnt, so there is no training split. `stage`: what the documents are, for the
    errors ("MTEB's 4% sample of 20 documents": the stage that emptied them, not "no documents" of a file that has
    20)."""

    task: str
    file: str
    ids: Sequence[str]
    labels: Sequence[Sequence[str]]
    stage: str = "the split's documents"

    def evaluation_items(self) -> EvaluationItems:
        return EvaluationItems("paper", {paper_id: paper_id for paper_id in self.ids})

    def counts(self) -> dict[str, int]:
        return {"papers": len(self.ids), "labels": len({tuple(labels[:1]) for labels in self.labels})}

    def findings(self) -> list[Problem]:
        if not len(self.ids):
            return [Problem("error", self.file, f"{self.stage} is empty: there is nothing to cluster",
                            "empty-split")]
        outer = {str(labels[0]) if len(labels) else "" for labels in self.labels}
        if len(outer) < 2:
            return [Problem("error", self.file, f"one label ({next(iter(outer))!r}) only in {self.stage}: "
                            "clustering against it scores nothing", "one-class")]
        copies = Counter(self.ids)
        repeated = [paper_id for paper_id, n in copies.items() if n > 1]
        if not repeated:
            return []
        labels_of: dict[str, set[tuple[str, ...]]] = {}
        for paper_id, labels in zip(self.ids, self.labels):
            if copies[paper_id] > 1:
                labels_of.setdefault(paper_id, set()).add(tuple(map(str, labels)))
        mixed = [paper_id for paper_id in repeated if len(labels_of[paper_id]) > 1]
        return [Problem("warning", self.file, f"{len(repeated)} text(s) occur more than once in {self.stage} "
                        f"({sum(copies[i] for i in repeated)} copies), {len(mixed)} of them under two or more labels "
                        "(no clustering can put both copies right); every copy is clustered, as MTEB scores them: "
                        f"{listed(mixed or repeated)}", "repeated-paper")]


@dataclass(frozen=True)
class ImpressionsSplit(DataShape):
    """Impressions of one split: the papers shown for a query in display order, one of them clicked, each weighted
    by the propensity of the clicked position (`positions`: how many positions `propensities_file` gives).

    `role`: "scored" (the split whose numbers are reported), or the name of a split a ranker is trained or tuned on
    ("train", "val"). `bad_rows`: (line, why) of the rows its reader refused (each an error: `run` stops on the
    first, `data verify` lists them all). `known`: the papers with a metadata record (`known_file`), when the task
    reads the metadata file; None: not checked here."""

    task: str
    file: str
    impressions: Sequence[Impression]
    propensities_file: str
    positions: int
    role: str = "scored"
    bad_rows: Sequence[tuple[int, str]] = ()
    known: Collection[str] | None = None
    known_file: str = ""

    def evaluation_items(self) -> EvaluationItems | None:
        if self.role != "scored":
            return None
        return EvaluationItems("impression", {i.item_id: i.query_id for i in self.impressions},
                               {p for i in self.impressions for p in i.shown},
                               [(i.item_id, i.query_id, i.clicked_id) for i in self.impressions])

    def papers(self) -> dict[str, list[str]]:
        return {self.file: [p for i in self.impressions for p in (i.query_id, *i.shown)]}

    def held_out(self) -> tuple[set[str], set[frozenset[str]]]:
        """Every split's shown pairs; the queries of the splits judged (tuned on or scored), not of train."""
        queries = set() if self.role == "train" else {i.query_id for i in self.impressions}
        return queries, {frozenset((i.query_id, shown)) for i in self.impressions for shown in i.shown}

    def counts(self) -> dict[str, int]:
        prefix = "" if self.role == "scored" else f"{self.role}_"
        counts = {f"{prefix}impressions": len(self.impressions) + len(self.bad_rows)}
        if self.role == "scored":
            counts["queries"] = len({i.query_id for i in self.impressions})
            counts["shown"] = sum(len(i.shown) for i in self.impressions)
        return counts

    def findings(self) -> list[Problem]:
        findings = [Problem("error", f"{self.file}:{line}", why) for line, why in self.bad_rows]
        if not self.impressions:
            return findings or [Problem("error", self.file, "no impressions (an empty split scores nothing)",
                                        "empty-split")]
        beyond = [i for i in self.impressions if i.clicked_position > self.positions]
        if beyond:
            findings.append(Problem("error", self.file, f"{len(beyond)} impression(s) have their click at a position "
                                    f"beyond the {self.positions} of {self.propensities_file} (no propensity to "
                                    f"weight them; first: line {beyond[0].line}, position "
                                    f"{beyond[0].clicked_position})", "propensity-positions"))
        alone = [i for i in self.impressions if not set(i.shown) - {i.clicked_id}]
        if len(alone) == len(self.impressions):
            findings.append(Problem("error", self.file, f"none of its {len(alone)} impression(s) shows a paper "
                                    "besides the clicked one: there is nothing to rank",
                                    "impression-without-unclicked"))
        elif alone:
            findings.append(Problem("warning", self.file, f"{len(alone)} of its {len(self.impressions)} impression(s) "
                                    "show only the clicked paper (every model ranks it first: they score 100 in a "
                                    "scored split and give no training pair; scored as the official evaluator "
                                    f"does): lines {listed(i.line for i in alone)}", "impression-without-unclicked"))
        clicked_again = sum(i.shown.count(i.clicked_id) - 1 for i in self.impressions)
        others_again = sum(len(i.shown) - len(set(i.shown)) for i in self.impressions) - clicked_again
        twice = [i for i in self.impressions if len(set(i.shown)) < len(i.shown)]
        if twice:
            findings.append(Problem("warning", self.file, f"{len(twice)} impression(s) show a paper more than once "
                                    f"({clicked_again} repeat(s) of the clicked paper, left out as the official "
                                    f"evaluator does; {others_again} of another paper, each ranked): lines "
                                    f"{listed(i.line for i in twice)}", "paper-shown-twice"))
        first_line: dict[tuple, int] = {}
        repeats = []
        for impression in self.impressions:
            key = (impression.query_id, impression.clicked_id, impression.shown)
            if key in first_line:
                repeats.append(f"{impression.line} repeats {first_line[key]}")
            first_line.setdefault(key, impression.line)
        if repeats:
            findings.append(Problem("warning", self.file, f"{len(repeats)} line(s) repeat an impression (each is "
                                    f"scored): line {listed(repeats)}", "repeated-impression"))
        if self.known is not None:
            papers = list(dict.fromkeys(p for i in self.impressions for p in (i.query_id, *i.shown)))
            unknown = [p for p in papers if p not in self.known]
            if unknown:
                findings.append(Problem("warning", self.file, f"{len(unknown)} of its {len(papers)} papers have no "
                                        f"record in {self.known_file} (their metadata features are 0): "
                                        f"{listed(unknown)}", "paper-without-metadata"))
        return findings


def shape_findings(shapes: Iterable[DataShape]) -> list[Problem]:
    """Every finding of `shapes`, each once, in order."""
    return list(dict.fromkeys(finding for shape in shapes for finding in shape.findings()))


def apply_findings(root: object, findings: Sequence[Problem]) -> list[Problem]:
    """What `run` does with a task's findings: the first error as an InputError naming the file, the warnings
    logged, each on one line with its rule's name; returns the warnings."""
    for finding in findings:
        if finding.severity == "error":
            where, line = _file_and_line(str(finding.where))
            path = where if where.startswith("/") or root is None else f"{root}/{where}"
            raise InputError(path, f"{finding.message} [{finding.rule}]" if finding.rule else finding.message, line)
    warnings = [finding for finding in findings if finding.severity == "warning"]
    for finding in warnings:
        log.warning("%s: %s [%s]", finding.where, finding.message, finding.rule)
    return warnings


def _file_and_line(where: str) -> tuple[str, int | None]:
    """("recomm/test.csv", 12) of "recomm/test.csv:12"; (where, None) when it names no line."""
    path, _, line = where.rpartition(":")
    return (path, int(line)) if path and line.isdigit() else (where, None)
