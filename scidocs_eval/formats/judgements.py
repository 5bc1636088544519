"""Relevance judgements (query, candidate, grade), read the same way from every qrels format: the suite's `.qrel`,
BEIR's TSV, HF parquet rows and SciRepEval's JSON lines all collect their lines through `Judgements`.

Two rules hold for every format, in this one place:
- a grade is an integer pytrec_eval stores (a C int: |grade| < 2**31; beyond, it wraps silently, raises its own
  error or crashes the interpreter), else an error naming the file, line (or row) and grade;
- a pair judged twice with different grades is an error naming both lines (which grade is right cannot be
  guessed: no silent last-wins or first-wins); the same grade twice is counted (`repeated`) and read once. The
  one exception is a format whose reference evaluator defines it: the SciDocs suite's `.qrel`, read by the
  official code into a dict (`later_wins`): the later grade is kept, as there, and each such pair is listed in
  `conflicts` (the `pair-judged-twice` warning of `run` and `data verify`).
"""

from __future__ import annotations

import os
from pathlib import Path

from scidocs_eval.errors import InputError

GRADE_LIMIT = 2**31 - 1
"""the largest |grade| pytrec_eval (trec_eval's C int) holds."""


def grade_value(path: str | os.PathLike[str], grade: object, line: int | None, where: str = "",
                field: str = "grade") -> int:
    """`grade` (an int, a float with an integer value, or the text of an integer) as an int, or an InputError
    naming the file, line (or `where`: "row 3"), the format's name of the `field` and the value."""
    value: int | None = None
    if isinstance(grade, str):
        try:
            value = int(grade.strip())
        except ValueError:
            value = None
    elif isinstance(grade, int) and not isinstance(grade, bool):
        value = grade
    elif isinstance(grade, float) and grade == grade and abs(grade) != float("inf") and grade == int(grade):
        value = int(grade)
    prefix = f"{where}: " if where else ""
    if value is None:
        raise InputError(path, f"{prefix}{field} {grade!r} is not an integer", line)
    if abs(value) > GRADE_LIMIT:
        raise InputError(path, f"{prefix}{field} {grade!r} is beyond what pytrec_eval takes (an integer of at most "
                         f"{GRADE_LIMIT} in absolute value); use small relevance grades (0, 1, 2, ...)", line)
    return value


class Judgements:
    """The judgements of one file, in file order: `grades[query][candidate]`, `candidates[query]` (first-seen
    order), `repeated` (lines that repeat a pair with its grade), `conflicts` (with `later_wins`: the pairs
    judged again with another grade)."""

    def __init__(self, path: str | os.PathLike[str], field: str = "score", later_wins: bool = False):
        self.path, self.field, self.later_wins = Path(path), field, later_wins
        self.conflicts: list[tuple[str, str]] = []
        self.grades: dict[str, dict[str, int]] = {}
        self.candidates: dict[str, list[str]] = {}
        self.repeated = 0
        self._first: dict[tuple[str, str], str] = {}

    def add(self, query: str, candidate: str, grade: object, line: int | None = None, row: int | None = None) -> None:
        """One judgement at `line` (text formats) or `row` (from 1, tables: of the file `path` names then, which a
        reader of several files sets before each file's rows); see the module docstring."""
        where = "" if row is None else f"row {row}"
        value = grade_value(self.path, grade, line, where, self.field)
        grades = self.grades.setdefault(query, {})
        here = f"line {line}" if line is not None else f"{where} of {self.path.name}" if where else "an earlier line"
        if candidate not in grades:
            grades[candidate] = value
            self.candidates.setdefault(query, []).append(candidate)
            self._first[(query, candidate)] = here
            return
        if grades[candidate] != value and self.later_wins:
            self.conflicts.append((query, candidate))
            grades[candidate] = value
            return
        if grades[candidate] != value:
            first = self._first[(query, candidate)]
            raise InputError(self.path, f"{where + ': ' if where else ''}query {query!r} and candidate "
                             f"{candidate!r} are judged twice with different grades ({grades[candidate]} at {first}, "
                             f"{value} at {here}); keep one judgement per pair", line)
        self.repeated += 1

    def __len__(self) -> int:
        return sum(map(len, self.grades.values()))
