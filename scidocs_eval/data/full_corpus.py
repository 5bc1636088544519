"""`data build --format beir`: a full-corpus retrieval version of a suite's ranking tasks, in the BEIR layout.

For each ranking task (cite, co-cite, co-view, co-read) the suite has: the queries are the titles of the task's
query papers, the corpus is every paper of the suite (title and abstract), the judgements are the task's own
(positives and its sampled negatives, same grades). Where the suite task ranks about 30 candidates per query,
here every paper of the suite competes, so the task is far from saturated. It is BEIR's SCIDOCS construction
applied to any suite; on the official suite it is not BEIR's SCIDOCS itself (BEIR's corpus and query set were
drawn by its authors; see docs/mteb.md).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.formats.retrieval import Document, write_beir
from scidocs_eval.formats.safe_output import owned_folder, write_bytes_atomically
from scidocs_eval.formats.suite import SYNTHETIC_MARKER, Suite

log = logging.getLogger("scidocs_eval")

RANKING_SPLITS = ("val", "test")
FULL_CORPUS_SUFFIX = "-full"
"""`{task}-full/`: the folder (and registered task) of a ranking task's full-corpus version."""


@dataclass
class FullCorpusReport:
    """Per built task and split: queries, judgements, and queries left out for want of a title."""

    out_dir: str
    documents: int = 0
    tasks: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)

    def format(self) -> str:
        lines = [f"full-corpus retrieval tasks written to {self.out_dir} ({self.documents} documents each): "
                 + ", ".join(self.tasks)]
        lines += [f"  {task} {split}: " + ", ".join(f"{k}={v}" for k, v in counts.items())
                  for task, splits in self.tasks.items() for split, counts in splits.items()]
        return "\n".join(lines)


def build_full_corpus(suite: Suite, out_dir: str | os.PathLike[str], ranking_tasks: Sequence[str]) -> FullCorpusReport:
    """Write `{out_dir}/{task}-full/` in the BEIR layout for every task of `ranking_tasks` the suite has."""
    present = [task for task in ranking_tasks if any(suite.has(f"{task}/{s}.qrel") for s in RANKING_SPLITS)]
    if not present:
        raise ScidocsEvalError(f"{suite.root} has no ranking task ({', '.join(ranking_tasks)}) to build from")
    papers = suite.papers()
    titles = {paper.paper_id: paper.title.strip() for paper in papers}
    corpus = [Document(p.paper_id, p.title, p.abstract) for p in papers if p.has_text]
    report = FullCorpusReport(str(out_dir), len(corpus))
    with owned_folder(out_dir, "scidocs-eval data build --format beir") as staging:
        for task in present:
            queries: dict[str, str] = {}
            judgements: dict[str, dict[str, dict[str, int]]] = {}
            for split in (s for s in RANKING_SPLITS if suite.has(f"{task}/{s}.qrel")):
                relevance = suite.qrels(task, split).relevance
                titled = [q for q in relevance if titles.get(q)]
                untitled = len(relevance) - len(titled)
                if untitled:
                    log.warning("%s %s: %d queries have no title in the suite's metadata and are left out",
                                task, split, untitled)
                queries.update((q, titles[q]) for q in titled)
                judgements[split] = {q: dict(relevance[q]) for q in titled}
                report.tasks.setdefault(f"{task}{FULL_CORPUS_SUFFIX}", {})[split] = {
                    "queries": len(titled), "untitled_queries_left_out": untitled,
                    "judgements": sum(map(len, judgements[split].values()))}
            write_beir(Path(staging) / f"{task}{FULL_CORPUS_SUFFIX}", corpus, queries, judgements)
        if suite.is_synthetic:  # built from a synthetic suite: its results say so too, a task folder copied alone too
            marker = (f"# Synthetic suite\n\nBuilt by `scidocs-eval data build --format beir` from the synthetic suite "
                      f"{suite.root}; NOT the SciDocs data. Its numbers say nothing about real papers.\n").encode()
            for folder in ["", *(f"{task}{FULL_CORPUS_SUFFIX}" for task in present)]:
                write_bytes_atomically(Path(staging) / folder / SYNTHETIC_MARKER, marker, rows=None)
    return report
