"""The one "Next:" line a command prints after it succeeds: concrete commands, each of which runs as printed from
the folder the command ran in (no placeholder: a hint that cannot be made concrete is not printed).
tests/test_hints.py runs every hint of every command of a new user's session, and checks that no other module
prints one."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from scidocs_eval.extras import available
from scidocs_eval.formats.safe_output import MANIFEST, is_ours

if TYPE_CHECKING:
    from scidocs_eval.evaluation.results import RunResult

PREFIX = "Next: "


@dataclass(frozen=True)
class Hint:
    """A command to run next: its arguments after `scidocs-eval`, and what it gives."""

    argv: tuple[str, ...]
    gives: str

    @property
    def command(self) -> str:
        return f"scidocs-eval {shlex.join(self.argv)}"


def hint(*argv: str | os.PathLike[str], gives: str) -> Hint:
    return Hint(tuple(map(str, argv)), gives)


def next_line(hints: Sequence[Hint]) -> str:
    """`Next: `cmd` (what it gives), ...`; empty when there is no hint."""
    return PREFIX + ", ".join(f"`{h.command}` ({h.gives})" for h in hints) + "." if hints else ""


def print_next(*hints: Hint | None) -> None:
    if line := next_line([h for h in hints if h is not None]):
        print(line)


def folder_argument(folder: Path) -> str:
    """A folder as a command argument, with the trailing slash that says it is one (`./` for the current one)."""
    return f"{folder}/" if str(folder) != "." else "./"


def free_folder(name: str) -> str:
    """`name`, or `name-2`, `name-3`, ...: the first that a command may write (absent, empty, or a folder the
    tool built), so that a hint writing a folder is not refused."""
    for index in range(1, 100):
        candidate = name if index == 1 else f"{name}-{index}"
        path = Path(candidate)
        if not path.exists() or (path.is_dir() and (not any(path.iterdir()) or is_ours(path / MANIFEST))):
            return candidate
    return name


def results_hints(results_file: Path, result: RunResult) -> list[Hint]:
    """After a run or a baseline wrote `results_file`: its folder's table of each benchmark the run named (else of
    its tasks' benchmarks: `Benchmark.option` names it), a comparison with the newest other results file of the
    folder over the same suite and a task in common (none without one), and the report page (where the [plot] extra
    is installed)."""
    from scidocs_eval.evaluation.task import benchmarks_of

    folder = folder_argument(results_file.parent)
    hints = [hint("table", folder, *benchmark.option(), gives=benchmark.shows())
             for benchmark in benchmarks_of(list(result.tasks), result.settings.benchmarks)]
    if (other := _comparable(results_file, result)) is not None:
        hints.append(hint("compare", other, results_file, gives="is the difference more than noise?"))
    if available("jinja2") and available("matplotlib"):  # the [plot] extra: no hint that would stop on it
        hints.append(hint("report", results_file, "--out-dir", free_folder("report"), gives="an HTML page"))
    return hints


def _comparable(results_file: Path, result: RunResult) -> Path | None:
    """The newest other results file beside `results_file` scored on the same suite and split, sharing a task."""
    from scidocs_eval.evaluation.results import RunResult, is_results_file

    candidates = []
    for path in results_file.parent.glob("*.json"):
        if path.resolve() == results_file.resolve() or not is_results_file(path):
            continue
        other = RunResult.load(path)
        same = (other.settings.data, other.settings.split) == (result.settings.data, result.settings.split)
        if same and set(other.tasks) & set(result.tasks) and not other.failed:
            candidates.append((path.stat().st_mtime, path))
    return max(candidates)[1] if candidates else None
