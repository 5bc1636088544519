"""Check a suite directory: parse every file, count what is there, and list every problem, not just the first.

Errors make a task unable to run (a file that does not parse, a clicked paper that was not shown, too few
propensities); warnings are things the official rules tolerate but a user should know about (ids without
metadata, which count as missing embeddings; repeated rows; queries without a positive, which score 0; papers
in two splits of one task). A suite is usable when it has no errors and at least one task has all its files.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from scidocs_eval.errors import InputError
from scidocs_eval.evaluation.integrity import JudgedSplit, LabelledSplit, Problem, listed, shape_findings
from scidocs_eval.evaluation.task import TASKS, get_task, task_names
from scidocs_eval.formats.retrieval import detect_layout, read_retrieval_data, splits_of
from scidocs_eval.formats.suite import METADATA_FILES, SPLITS, LabelledPapers, Suite, read_impressions

RANKING_SPLITS = ("val", "test")
RECOMM_FILES = [f"recomm/{split}.csv" for split in SPLITS] + ["recomm/propensity_scores.json"]
T = TypeVar("T")
DEFAULT_FOLDS = 3
"""the CV folds checked for a label folder no registered task reads."""
@dataclass
class VerifyReport:
    """Counts per task and split (`counts[task][split] = {"rows": ..}`), metadata sizes, problems, and which
    tasks have all their files (`complete`) or none (`absent`)."""

    root: Path
    synthetic: bool = False
    metadata: dict[str, int] = field(default_factory=dict)
    counts: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    complete: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def add(self, severity: Literal["error", "warning"], where: str, message: str) -> None:
        self.problems.append(Problem(severity, where, message))

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    def usable(self, strict: bool = False) -> bool:
        """No errors (no problems at all when `strict`) and at least one task with all its files."""
        return bool(self.complete) and not (self.problems if strict else self.errors)

    def format(self) -> str:
        lines = [f"suite {self.root}" + (" (SYNTHETIC demo suite)" if self.synthetic else "")]
        lines += [f"  metadata {group}: {count} papers" for group, count in self.metadata.items()]
        lines.append(f"  {'task':<8} {'split':<6} counts")
        for task, splits in self.counts.items():
            for split, numbers in splits.items():
                lines.append(f"  {task:<8} {split:<6} " + " ".join(f"{k}={v}" for k, v in numbers.items()))
        if self.absent:
            lines.append(f"  not in this suite: {', '.join(self.absent)}")
        lines.append(f"{len(self.errors)} error(s), {len(self.problems) - len(self.errors)} warning(s)")
        lines += [f"  {problem}" for problem in self.problems]
        verdict = "usable" if self.usable() else "NOT usable"
        lines.append(f"{verdict}: tasks with all their files: {', '.join(self.complete) or 'none'}")
        return "\n".join(lines)


def _message(error: InputError) -> str:
    """The error's message without the file:line prefix (the report names the suite-relative file itself)."""
    where = error.path if error.line is None else f"{error.path}:{error.line}"
    return str(error).removeprefix(f"{where}: ")


class _Verifier:
    def __init__(self, suite: Suite):
        self.suite = suite
        self.report = VerifyReport(suite.root, synthetic=suite.is_synthetic)
        self.metadata: dict[str, set[str] | None] = {}
        self.broken_metadata: set[str] = set()
        self.inventories: dict[str, tuple[dict[str, int], list[str]] | None] = {}

    def known_ids(self, group: str) -> set[str] | None:
        """Ids of a metadata file; None (and a problem, once) when it is absent or broken.

        The problem is an error when a task reads the file in `run` (through this same reader: recomm), a
        warning otherwise (the ranking and classification tasks score without it; `baseline` needs it).
        """
        if group not in self.metadata:
            ids = None
            relative = METADATA_FILES.get(group, group)
            severity: Literal["error", "warning"] = "error" if relative in _read_by_run() else "warning"
            consequence = "" if severity == "error" else (" (`run` does not read it; the ids of the tasks that "
                                                         "use it cannot be checked and `baseline` cannot embed them)")
            try:
                ids = set(self.suite.metadata(group))
                self.report.metadata[group] = len(ids)
            except InputError as error:
                self.report.add(severity, relative, _message(error) + consequence)
                if severity == "error":
                    self.broken_metadata.add(group)
            self.metadata[group] = ids
        return self.metadata[group]

    def check_ids(self, relative: str, ids: Iterable[str], group: str) -> None:
        known = self.known_ids(group)
        if known is None:
            return
        unknown = sorted({i for i in ids if i not in known})
        if unknown:
            self.report.add("warning", relative, f"{len(unknown)} id(s) have no metadata in "
                            f"{METADATA_FILES.get(group, group)}: {listed(unknown)}")

    def parse(self, relative: str, parser: Callable[..., T], *args: Any) -> T | None:
        """`parser(*args)` if `relative` exists and parses; else None, with the parse error recorded."""
        if not self.suite.has(relative):
            return None
        try:
            return parser(*args)
        except InputError as error:
            where = relative if error.line is None else f"{relative}:{error.line}"
            self.report.add("error", where, _message(error))
            return None

    def task_files(self, task: str, files: list[str]) -> bool:
        """Record whether the task is complete, absent or partial; True when any of its files exist."""
        present = [f for f in files if self.suite.has(f)]
        if not present:
            self.report.absent.append(task)
        elif len(present) < len(files):
            self.report.add("warning", task, f"missing {', '.join(sorted(set(files) - set(present)))}")
        return bool(present)

    def classification(self, task: str) -> None:
        files = [f"{task}/{split}.csv" for split in SPLITS]
        if not self.task_files(task, files):
            return
        errors_before = len(self.report.errors)
        seen_in: dict[str, str] = {}
        parsed: dict[str, LabelledPapers] = {}
        for split, relative in zip(SPLITS, files):
            labelled = self.parse(relative, self.suite.labels, task, split)
            if labelled is None:
                continue
            parsed[split] = labelled
            self.report.counts.setdefault(task, {})[split] = {"papers": len(labelled.ids),
                                                              "classes": len(set(labelled.labels.tolist()))}
            self.check_ids(relative, labelled.ids, _metadata_of(task, "mag_mesh"))
            shared = sorted({i for i in labelled.ids if seen_in.get(i, split) not in (split, "train")})
            if shared:
                self.report.add("warning", relative, f"{len(shared)} paper(s) also in another split: "
                                f"{listed(shared)}")
            seen_in.update(dict.fromkeys(labelled.ids, split))
        folds = getattr(get_task(task), "folds", DEFAULT_FOLDS) if task in TASKS else DEFAULT_FOLDS
        for split in ("val", "test"):
            if "train" in parsed and split in parsed:
                self.add_findings(LabelledSplit(task, files[0], f"{task}/{split}.csv", parsed["train"].ids,
                                                parsed["train"].labels, parsed[split].ids, parsed[split].labels,
                                                "classes", folds).findings())
        self.finish(task, files, _metadata_of(task, "mag_mesh"), errors_before)

    def ranking(self, task: str) -> None:
        files = [f"{task}/{split}.qrel" for split in RANKING_SPLITS]
        if not self.task_files(task, files):
            return
        errors_before = len(self.report.errors)
        for split, relative in zip(RANKING_SPLITS, files):
            qrels = self.parse(relative, self.suite.qrels, task, split)
            if qrels is None:
                continue
            self.report.counts.setdefault(task, {})[split] = JudgedSplit(task, relative, qrels.relevance).counts()
            self.check_ids(relative, list(qrels.candidates) + [c for cs in qrels.candidates.values() for c in cs],
                           _metadata_of(task, "view_cite_read"))
            self.add_findings(JudgedSplit(task, relative, qrels.relevance, repeated=qrels.repeated,
                                          conflicts=qrels.conflicts).findings())
        self.finish(task, files, _metadata_of(task, "view_cite_read"), errors_before)

    def recomm(self) -> None:
        if not self.task_files("recomm", RECOMM_FILES):
            return
        errors_before = len(self.report.errors)
        propensities = self.parse(RECOMM_FILES[-1], lambda: self.suite.propensities)
        for split, relative in zip(SPLITS, RECOMM_FILES):
            if self.suite.has(relative):
                longest = self.impressions(split, relative)
                if propensities is not None and longest > len(propensities):
                    self.report.add("error", relative, f"an impression shows {longest} papers but "
                                    f"propensity_scores.json has only {len(propensities)} positions")
        self.finish("recomm", RECOMM_FILES, "recomm", errors_before)

    def impressions(self, split: str, relative: str) -> int:
        """Check one recomm csv row by row (every problem, not the first; the reader `run` uses); returns the
        longest shown list."""
        problems: list[InputError] = []
        impressions = self.parse(relative, read_impressions, self.suite.path(relative), problems)
        for problem in problems:
            self.report.add("error", f"{relative}:{problem.line}", _message(problem))
        if impressions is None:
            return 0
        first_line: dict[tuple, int] = {}
        for impression in impressions:
            key = (impression.query_id, impression.clicked_id, impression.shown)
            if key in first_line:
                self.report.add("warning", f"{relative}:{impression.line}", f"repeats line {first_line[key]}")
            first_line.setdefault(key, impression.line)
        self.report.counts.setdefault("recomm", {})[split] = {"impressions": len(impressions) + len(problems),
                                                             "queries": len({k[0] for k in first_line})}
        self.check_ids(relative, [i for imp in impressions for i in (imp.query_id, imp.clicked_id, *imp.shown)],
                       "recomm")
        return max((len(impression.shown) for impression in impressions), default=0)

    def add_findings(self, findings: list[Problem]) -> None:
        self.report.problems += [finding for finding in findings if finding not in self.report.problems]

    def rules(self, task: str) -> None:
        """The integrity findings `run` applies to a registered task (`Task.findings`, by the shapes of its data),
        for each split whose files are all there and parse."""
        instance = get_task(task)
        for split in ("val", "test"):
            if all(self.suite.has(f) for f in instance.input_files(self.suite, split)):
                try:
                    self.add_findings(instance.findings(self.suite, split))
                except InputError:
                    continue  # the file's parse error is reported where it is read

    def declared(self, name: str) -> None:
        """A task checked through its declarations alone: its files (`input_files`) there, absent or partial; each
        parse error; counts by the shapes of its data; its integrity findings (the same `run` applies)."""
        task = get_task(name)
        files = list(dict.fromkeys(f for split in ("val", "test") for f in task.input_files(self.suite, split)))
        test_files = task.input_files(self.suite, "test")
        if not any(self.suite.has(f) for f in test_files):
            if not task.spec.dataset:  # a hub dataset's task (`data download`) is no part of a suite, as retrieval's
                self.report.absent.append(name)
            return
        missing = [f for f in files if not self.suite.has(f)]
        if missing:
            self.report.add("warning", name, f"missing {', '.join(missing)}")
        errors_before = len(self.report.errors)
        for split in ("val", "test"):
            if not all(self.suite.has(f) for f in task.input_files(self.suite, split)):
                continue
            try:
                shapes = task.data_shapes(self.suite, split)
            except InputError as error:
                where = self._relative(error.path) + ("" if error.line is None else f":{error.line}")
                self.report.add("error", where, _message(error))
                continue
            self.report.counts.setdefault(name, {})[split] = {k: v for shape in shapes
                                                              for k, v in shape.counts().items()}
            self.add_findings(shape_findings(shapes))
        if all(self.suite.has(f) for f in test_files) and len(self.report.errors) == errors_before:
            self.report.complete.append(name)

    def finish(self, task: str, files: list[str], group: str, errors_before: int) -> None:
        """The task is complete when all its files exist and parse and its metadata file, if any, parses (what
        `run` requires: it reads the metadata file through the same reader when there is one); a registered
        task's integrity findings are added."""
        self.known_ids(group)
        if task in TASKS:
            self.rules(task)
        if (all(self.suite.has(f) for f in files) and len(self.report.errors) == errors_before
                and group not in self.broken_metadata):
            self.report.complete.append(task)

    def scirepeval(self, task: str) -> None:
        """A SciRepEval task (`Task.inventory`): counts per file, every parse error, ids without metadata."""
        instance: Any = get_task(task)
        files = instance.required_files("test")
        if not self.task_files(task, files):
            return
        errors_before = len(self.report.errors)
        group = instance.spec.metadata_file
        broken = False
        for relative in files:
            if relative not in self.inventories:  # a file several tasks read (few-shot variants) is checked once
                counted = self.parse(relative, instance.inventory, self.suite, relative)
                self.inventories[relative] = counted
                if counted is not None:
                    self.check_ids(relative, counted[1], group)
            counted = self.inventories[relative]
            broken |= counted is None and self.suite.has(relative)
            if counted is not None:
                self.report.counts.setdefault(task, {})[Path(relative).stem] = counted[0]
        if not broken:
            self.finish(task, files, group, errors_before)

    def retrieval(self, label: str, folder: Path, splits: list[str], reranking: bool) -> None:
        """A retrieval dataset (BEIR or HF parquet layout) at `folder`: counts per split, dangling judgements
        (warnings: MTEB scores without them), and every parse error."""
        if detect_layout(folder) is None:
            self.report.absent.append(label)
            return
        errors_before = len(self.report.errors)
        present = [split for split in splits if split in splits_of(folder)]
        if not present:
            self.report.add("error", label, f"no judgements for split(s) {', '.join(splits)} (found: "
                            f"{', '.join(splits_of(folder)) or 'none'})")
        for split in present:
            try:
                data = read_retrieval_data(folder, split, reranking)
            except InputError as error:
                where = self._relative(error.path) + ("" if error.line is None else f":{error.line}")
                self.report.add("error", where, _message(error))
                continue
            judged = [q for q, grades in data.qrels.items() if q in data.queries and grades]
            counts = {"queries": len(data.queries), "judged_queries": len(judged), "documents": len(data.corpus),
                      "judgements": sum(map(len, data.qrels.values())),
                      "positives": sum(g > 0 for grades in data.qrels.values() for g in grades.values())}
            if data.top_ranked is not None:
                counts["candidates"] = sum(map(len, data.top_ranked.values()))
            self.report.counts.setdefault(label, {})[split] = counts
        if present and len(self.report.errors) == errors_before:
            self.report.complete.append(label)
            if label in TASKS:
                self.rules(label)

    def _relative(self, path: str | Path) -> str:
        path = Path(path)
        return str(path.relative_to(self.suite.root)) if self.suite.root in path.parents else str(path)


def _read_by_run() -> set[str]:
    """The metadata files some registered task reads when it runs (those among its required files)."""
    declared = {TASKS[name].spec.metadata_file for name in task_names()}
    return {relative for name in task_names() for relative in get_task(name).required_files("test")
            if relative in declared}


def _metadata_of(task: str, default: str) -> str:
    """The metadata file a registered task declares; `default` for a folder no registered task reads."""
    return TASKS[task].spec.metadata_file if task in TASKS else default


def _extra_tasks(root: Path, extension: str, known: list[str]) -> list[str]:
    """Task folders beyond the official ones (e.g. a label task a built suite names itself)."""
    return sorted(p.parent.name for p in root.glob(f"*/test.{extension}")
                  if p.parent.name not in known and p.parent.name != "recomm")


def verify_suite(root: str | os.PathLike[str]) -> VerifyReport:
    """Parse every file of the suite at `root` and report counts and every problem found."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(root, "not a directory (expected a suite in the official layout)")
    verifier = _Verifier(Suite(root))
    if detect_layout(root) is not None:  # the folder is one retrieval dataset, not a suite
        verifier.retrieval(root.name, root, splits_of(root) or ["test"], reranking=(root / "top_ranked").is_dir())
        return verifier.report
    layouts = {name: _layout(name) for name in task_names()}
    labelled = [name for name, layout in layouts.items() if layout == "label-csv"]
    for task in labelled + _extra_tasks(root, "csv", labelled):
        verifier.classification(task)
    judged = [name for name, layout in layouts.items() if layout == "qrel"]
    for task in judged + _extra_tasks(root, "qrel", judged):
        verifier.ranking(task)
    verifier.recomm()
    scirepeval = [name for name, layout in layouts.items() if layout == "scirepeval"]
    with_scirepeval = any(verifier.suite.has(f) for name in scirepeval for f in get_task(name).required_files("test"))
    for name, layout in layouts.items():
        task: Any = get_task(name)
        if layout == "dataset-folder" and task.dataset_folder(verifier.suite).exists():
            verifier.retrieval(name, task.dataset_folder(verifier.suite), [task.split_name("test")],
                               any("/top_ranked/" in f for f in task.required_files("test")))
        elif layout == "scirepeval" and with_scirepeval:  # a SciDocs suite lists none of them as absent
            verifier.scirepeval(name)
        elif layout == "declared":
            verifier.declared(name)
    return verifier.report


def _layout(name: str) -> str:
    """Which reader below checks a registered task's files, told by the files and readers it declares (never by its
    family): the suite's label CSVs or qrels, the clickthrough folder, a retrieval dataset folder, SciRepEval's JSON
    lines; "declared" for any other task, checked through its declarations alone (`Verifier.declared`)."""
    task = get_task(name)
    files = task.required_files("test")
    if files == [f"{name}/train.csv", f"{name}/test.csv"]:
        return "label-csv"
    if files == [f"{name}/test.qrel"]:
        return "qrel"
    if all(f.startswith("recomm/") or f in METADATA_FILES.values() for f in files):
        return "clickthrough"
    if all(callable(getattr(task, reader, None)) for reader in ("dataset_folder", "split_name")):
        return "dataset-folder"  # a retrieval dataset (BEIR or HF parquet); another folder of rows is "declared"
    if callable(getattr(task, "inventory", None)):
        return "scirepeval"
    return "declared"
