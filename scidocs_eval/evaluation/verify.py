"""Check a suite directory through the registered tasks' declarations: parse every file, count what is there, and
list every problem, not just the first.

Each registered task says what it reads (`Task.input_files`, for each split of `Task.splits`) and the shapes of its
data (`Task.data_shapes`, read with the readers `run` uses); `data verify` reads nothing else and knows no task
family. Errors make a task unable to run (a file that does not parse, an integrity rule's error: the same findings
`run` stops on); warnings are what the rules tolerate but a user should know about (ids without metadata, repeated
rows, queries without a positive, a task with only some of its files). A folder no registered task reads is checked
as each task that takes a `folder` parameter would read it (`--task-param TASK.folder=FOLDER`). A suite is usable
when it has no errors and at least one task has all its files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from scidocs_eval.errors import InputError
from scidocs_eval.evaluation.integrity import DataShape, Problem, listed, shape_findings
from scidocs_eval.evaluation.task import (
    DEFAULT_BENCHMARK,
    TASKS,
    Task,
    get_task,
    suite_relative,
    task_names,
)
from scidocs_eval.formats.suite import Suite


@dataclass
class VerifyReport:
    """Counts per task and split (`counts[task][split] = {"papers": ..}`), metadata sizes, problems, and which
    tasks have all their files (`complete`) or none (`absent`)."""

    root: Path
    synthetic: bool = False
    metadata: dict[str, int] = field(default_factory=dict)
    counts: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    complete: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def add(self, problem: Problem) -> None:
        if problem not in self.problems:
            self.problems.append(problem)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    def usable(self, strict: bool = False) -> bool:
        """No errors (no problems at all when `strict`) and at least one task with all its files."""
        return bool(self.complete) and not (self.problems if strict else self.errors)

    def format(self) -> str:
        lines = [f"suite {self.root}" + (" (SYNTHETIC demo suite)" if self.synthetic else "")]
        lines += [f"  metadata {name}: {count} papers" for name, count in self.metadata.items()]
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
    def __init__(self, suite: Suite, root: Path | None = None):
        self.suite = suite
        self.report = VerifyReport(root or suite.root, synthetic=suite.is_synthetic)
        self.metadata: dict[str, set[str] | None] = {}
        self.read_by_run = {relative for name in task_names() for relative in get_task(name).required_files("test")
                            if relative == TASKS[name].spec.metadata_file}

    def error(self, error: InputError) -> None:
        where = suite_relative(self.suite, error.path) + ("" if error.line is None else f":{error.line}")
        self.report.add(Problem("error", where, _message(error)))

    def broken(self, relative: str) -> bool:
        """Whether a metadata file `run` reads does not parse."""
        return relative in self.read_by_run and self.known_ids(relative) is None and self.suite.has(relative)

    def known_ids(self, relative: str) -> set[str] | None:
        """Ids of a metadata file; None (and a problem, once) when it is broken or absent.

        The problem is an error when a task reads the file in `run` (it is then among the task's input files, read
        through the same reader), a warning otherwise (`baseline` and the audit need it; `run` scores without it).
        """
        if relative not in self.metadata:
            ids = None
            try:
                ids = set(self.suite.metadata(relative))
                self.report.metadata[relative.removeprefix("paper_metadata_").removesuffix(".json")] = len(ids)
            except InputError as error:
                if relative in self.read_by_run:
                    self.error(error)
                else:
                    self.report.add(Problem("warning", relative, _message(error) + " (`run` does not read it; the "
                                            "ids of the tasks that use it cannot be checked and `baseline` cannot "
                                            "embed them)"))
            self.metadata[relative] = ids
        return self.metadata[relative]

    def check_ids(self, shapes: list[DataShape], metadata: str) -> None:
        """A warning for each file whose papers have no record in `metadata`, a file `run` does not read (a task
        that reads its metadata file checks its papers against it among its own findings)."""
        known = self.known_ids(metadata)
        if known is None or metadata in self.read_by_run:
            return
        for relative, ids in _papers_by_file(shapes).items():
            unknown = sorted({i for i in ids if i not in known})
            if unknown:
                self.report.add(Problem("warning", relative, f"{len(unknown)} id(s) have no metadata in {metadata}: "
                                        f"{listed(unknown)}", "paper-without-metadata"))

    def task(self, label: str, task: Task) -> bool:
        """Check one task through its declarations: its files there, absent or partial; each parse error; counts by
        the shapes of its data; its integrity findings (those `run` applies). False when it has no file here."""
        files = {split: task.input_files(self.suite, split) for split in task.splits}
        scored = files[task.splits[-1]]
        if not any(self.suite.has(f) for f in scored if f != task.spec.metadata_file):
            return False  # its papers' metadata file alone is not its data
        declared = list(dict.fromkeys(f for split_files in files.values() for f in split_files))
        missing = [suite_relative(self.suite, f) for f in declared if not self.suite.has(f)]
        if missing:
            self.report.add(Problem("warning", label, f"missing {', '.join(missing)}"))
        metadata = task.spec.metadata_file
        failed = bool(metadata) and self.broken(metadata)
        for split, split_files in files.items():
            if not all(self.suite.has(f) for f in split_files):
                continue
            try:
                shapes = task.data_shapes(task.load(self.suite, split))
            except InputError as error:
                self.error(error)
                failed = True
                continue
            self.report.counts.setdefault(label, {})[split] = {k: v for shape in shapes
                                                              for k, v in shape.counts().items()}
            for finding in shape_findings(shapes):
                self.report.add(finding)
                failed |= finding.severity == "error"
            if metadata:
                self.check_ids(shapes, metadata)
        if all(self.suite.has(f) for f in scored) and not failed:
            self.report.complete.append(label)
        return True

    def folder(self, name: str) -> bool:
        """A folder no registered task reads, checked as the task with a `folder` parameter that reads the most of
        it and parses it (the one `run --task-param TASK.folder=NAME` scores it with); False when none does. Which
        task reads it is a guess, so a folder none parses is one warning, not an error."""
        readers = []
        for task_name in task_names():
            if "folder" in TASKS[task_name].parameter_constraints:
                task = get_task(task_name, folder=name)
                files = task.input_files(self.suite, task.splits[-1])
                if files and all(self.suite.has(f) for f in files):
                    readers.append((-len(files), len(readers), task))
        refused = []
        for *_, task in sorted(readers, key=lambda reader: reader[:2]):
            try:
                task.data_shapes(task.load(self.suite, task.splits[-1]))
            except InputError as error:
                refused.append(f"as {task.name} reads it, {suite_relative(self.suite, error.path)}"
                               f"{'' if error.line is None else f':{error.line}'}: {_message(error)}")
                continue
            return self.task(name, task)
        if refused:
            self.report.add(Problem("warning", name, f"no registered task reads this folder ({refused[0]})"))
        return False


def _papers_by_file(shapes: list[DataShape]) -> dict[str, list[str]]:
    by_file: dict[str, list[str]] = {}
    for shape in shapes:
        for relative, ids in shape.papers().items():
            by_file.setdefault(relative, []).extend(ids)
    return by_file


def verify_suite(root: str | os.PathLike[str]) -> VerifyReport:
    """Parse every file of the suite at `root` through the registered tasks' declarations and report counts and
    every problem found. `root` may also be one dataset folder a task reads (a BEIR dataset on its own)."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(root, "not a directory (expected a suite in the official layout)")
    verifier = _Verifier(Suite(root))
    names = task_names()
    present = {name for name in names if verifier.task(name, get_task(name))}
    files = {TASKS[name].spec.metadata_file for name in names} | {
        f for name in present for split in TASKS[name].splits for f in get_task(name).input_files(verifier.suite, split)
    }
    read = {Path(suite_relative(verifier.suite, f)).parts[0] for f in files if f}
    folders = sorted(p.name for p in root.iterdir() if p.is_dir() and p.name not in read and p.name not in names)
    claimed = [name for name in folders if verifier.folder(name)]
    if not present and not claimed and root.parent != root:
        alone = _Verifier(Suite(root.parent), root)
        if alone.folder(root.name):  # the folder is one dataset, not a suite
            return alone.report
    shown = {DEFAULT_BENCHMARK} | {TASKS[name].spec.benchmark for name in present}
    verifier.report.absent = [name for name in names if name not in present and TASKS[name].spec.benchmark in shown]
    return verifier.report

