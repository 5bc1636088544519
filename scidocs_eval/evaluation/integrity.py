"""The checks that decide whether a task's numbers can mean anything, run by both `run` and `data verify`.

`data verify` lists every finding; a task stops `run` on the first error (one line naming the file and the
counts), so a suite `data verify` calls usable is one `run` scores, and a number `run` prints was not scored on
a split it was trained on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from scidocs_eval.errors import InputError
from scidocs_eval.formats.suite import LabelledPapers, Suite

SHOWN_IDS = 10
"""how many ids a problem lists before saying how many more there are."""


@dataclass(frozen=True)
class Problem:
    """One finding about a suite: `where` is a suite-relative file, with ":line" when one line is at fault
    (`data verify` lists them all; `run` refuses on the errors of the checks that decide whether a number means
    anything)."""

    severity: Literal["error", "warning"]
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.severity.upper()} {self.where}: {self.message}"


def listed(ids: Iterable[str]) -> str:
    """The first SHOWN_IDS of `ids`, and how many more."""
    ids = list(ids)
    more = f" (and {len(ids) - SHOWN_IDS} more)" if len(ids) > SHOWN_IDS else ""
    return ", ".join(ids[:SHOWN_IDS]) + more


def classification_findings(task: str, train: LabelledPapers, scored: LabelledPapers, split: str,
                            folds: int) -> list[Problem]:
    """Errors when papers of `split` are also in train (the classifier would be scored on papers it learnt) or
    when train's smallest class has fewer papers than the cross-validation `folds`."""
    findings = []
    in_train = set(train.ids)
    distinct = list(dict.fromkeys(scored.ids))
    shared = [paper_id for paper_id in distinct if paper_id in in_train]
    if shared:
        findings.append(Problem("error", f"{task}/{split}.csv", f"{len(shared)} of its {len(distinct)} papers are "
                                f"also in {task}/train.csv (a classifier scored on papers it was trained on): "
                                f"{listed(shared)}"))
    label, smallest = min(Counter(train.labels.tolist()).items(), key=lambda pair: (pair[1], pair[0]))
    if smallest < folds:
        findings.append(Problem("error", f"{task}/train.csv", f"class {label} has {smallest} paper(s), fewer than "
                                f"the {folds} cross-validation folds (task parameter folds); every class needs at "
                                f"least one paper per fold"))
    return findings


def raise_first_error(suite: Suite, findings: list[Problem]) -> None:
    """The first error among `findings` as an InputError naming the file (for `run`)."""
    for finding in findings:
        if finding.severity == "error":
            raise InputError(suite.path(finding.where), finding.message)
