"""Build a SciDocs-style suite, in the official layout, from any corpus of papers and citation links.

Input: papers as JSON lines {paper_id, title, abstract, label?} and citation links as TSV citing<TAB>cited
(an optional header row). Output, deterministic from a seed:

    paper_metadata_mag_mesh.json, {label_task}/{train,val,test}.csv    stratified split of the labelled papers
    {label_task}/class_names.json                                      {class_label: the input's label}
    paper_metadata_view_cite_read.json, cite/{val,test}.qrel            queries citing >= 2 papers: up to 5 cited
                                                                        papers (1), 25 random uncited ones (0)
    cocite/{val,test}.qrel                                              up to 5 papers most often cited together
                                                                        with the query (by >= 2 papers) (1),
                                                                        25 random never co-cited ones (0)
    specter/{data,metadata}.json, specter/{train,val,test}.txt          SPECTER training files (SPEC §7)
    build_report.json                                                   what was built, what could not be

Leakage rule: every evaluation query (cite or co-cite, val or test) is taken out of the SPECTER training graph
with all its links, so no evaluation query, and no citation between one and its candidates, is in data.json.
Co-view, co-read and recomm need user logs that a citation corpus does not have; they are left out.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from scidocs_eval.errors import InputError, ScidocsEvalError
from scidocs_eval.formats.corpus import read_citations, read_paper_records
from scidocs_eval.formats.safe_output import owned_folder
from scidocs_eval.formats.suite import CLASS_NAMES_FILE, METADATA_FILES, SPLITS
from scidocs_eval.formats.writers import write_csv, write_json, write_lines

REPORT_FILE = "build_report.json"
SPECTER_FOLDER = "specter"
RANKING_SPLITS = ("val", "test")
DIRECT_CITATION, CITATION_OF_CITATION = 5, 1
NOT_SUPPORTED = {
    "coview": "needs user logs (papers viewed in one session); a citation corpus has none",
    "coread": "needs user logs (PDFs opened in one session); a citation corpus has none",
    "recomm": "needs clickthrough logs and display positions; a citation corpus has none",
}
_TASK_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True)
class CorpusPaper:
    """A paper of the input corpus; `label` is None when it has none."""

    paper_id: str
    title: str
    abstract: str
    label: Any = None

    def record(self) -> dict[str, str]:
        """The official metadata record."""
        return {"paper_id": self.paper_id, "title": self.title, "abstract": self.abstract}


@dataclass
class Corpus:
    """Papers with text (by id, in file order) and the citation graph among them (`cites[a]` = ids a cites)."""

    papers: dict[str, CorpusPaper]
    cites: dict[str, set[str]]
    stats: dict[str, int]

    def without(self, removed: set[str]) -> dict[str, set[str]]:
        """The citation graph with the papers in `removed` and all their links taken out."""
        return {a: {b for b in cited if b not in removed} for a, cited in self.cites.items() if a not in removed}


@dataclass
class BuildReport:
    """What `build_suite` wrote (counts per task and split) and what the corpus could not support."""

    out_dir: str
    seed: int
    inputs: dict[str, str]
    corpus: dict[str, int]
    label_task: str | None = None
    label_mapping: dict[str, int] = field(default_factory=dict)
    classification: dict[str, dict[str, int]] = field(default_factory=dict)
    ranking: dict[str, dict[str, Any]] = field(default_factory=dict)
    specter: dict[str, int] = field(default_factory=dict)
    not_supported: dict[str, str] = field(default_factory=lambda: dict(NOT_SUPPORTED))
    notes: list[str] = field(default_factory=list)

    def built_tasks(self) -> list[str]:
        """The evaluation tasks written."""
        return ([self.label_task] if self.label_task else []) + list(self.ranking)

    def save(self, path: Path) -> None:
        path.write_bytes(orjson.dumps(asdict(self), option=orjson.OPT_INDENT_2))

    def format(self) -> str:
        lines = [f"suite written to {self.out_dir} (seed {self.seed}); tasks built: {', '.join(self.built_tasks())}",
                 "corpus: " + ", ".join(f"{k}={v}" for k, v in self.corpus.items())]
        if self.label_task:
            lines.append(f"{self.label_task}: " + ", ".join(f"{split} {counts['papers']} papers"
                                                           for split, counts in self.classification.items())
                         + f"; {len(self.label_mapping)} classes: "
                         + ", ".join(f"{k}={v}" for k, v in self.label_mapping.items()))
        for task, info in self.ranking.items():
            lines.append(f"{task}: {info['eligible_queries']} eligible queries; " + ", ".join(
                f"{split} {info[split]['queries']} queries / {info[split]['positives']} positives"
                for split in RANKING_SPLITS))
        if self.specter:
            lines.append("specter training: " + ", ".join(f"{k}={v}" for k, v in self.specter.items()))
        lines += [f"not built: {task} ({why})" for task, why in self.not_supported.items()]
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


# -- reading ---------------------------------------------------------------------------------------------------

def _read_papers(path: Path) -> tuple[dict[str, CorpusPaper], int]:
    """Papers with a title or an abstract, and how many had neither."""
    papers: dict[str, CorpusPaper] = {}
    without_text = 0
    for _, record in read_paper_records(path, "{paper_id, title, abstract, label?}"):
        label = record.get("label")
        paper = CorpusPaper(record["paper_id"], (record.get("title") or "").strip(),
                            (record.get("abstract") or "").strip(), None if label in (None, "") else label)
        if paper.title or paper.abstract:
            papers[paper.paper_id] = paper
        else:
            without_text += 1
    if not papers:
        raise InputError(path, "no papers with a title or an abstract")
    return papers, without_text


def read_citation_corpus(papers_jsonl: str | os.PathLike[str], edges_tsv: str | os.PathLike[str]) -> Corpus:
    """Papers (those with text) and the citation links between them; counts of what was dropped and why."""
    papers, without_text = _read_papers(Path(papers_jsonl))
    cites: dict[str, set[str]] = {}
    stats = Counter(papers=len(papers), papers_without_text=without_text, links_read=0,
                    links_to_unknown_or_textless_papers=0, self_citations=0, repeated_links=0)
    for _, citing, cited in read_citations(edges_tsv, known=papers):
        stats["links_read"] += 1
        if citing not in papers or cited not in papers:
            stats["links_to_unknown_or_textless_papers"] += 1
        elif citing == cited:
            stats["self_citations"] += 1
        elif cited in cites.get(citing, ()):
            stats["repeated_links"] += 1
        else:
            cites.setdefault(citing, set()).add(cited)
    stats["links_kept"] = sum(map(len, cites.values()))
    return Corpus(papers, cites, dict(stats))


# -- the tasks -------------------------------------------------------------------------------------------------

def _label_mapping(labels: Iterable[Any]) -> dict[str, int]:
    """Distinct labels -> 0..K-1, in numeric order when all are integers, else in string order."""
    distinct = set(labels)
    if all(isinstance(v, int) and not isinstance(v, bool) for v in distinct):
        ordered = [str(v) for v in sorted(distinct)]
    else:
        ordered = sorted(str(v) for v in distinct)
    return {label: index for index, label in enumerate(ordered)}


def _classification(corpus: Corpus, out: Path, task: str, fractions: Sequence[float], seed: int,
                    report: BuildReport) -> list[str]:
    """Write `{task}/{split}.csv`; returns the labelled ids used."""
    from sklearn.model_selection import train_test_split

    labelled = [p for p in corpus.papers.values() if p.label is not None]
    counts = Counter(str(p.label) for p in labelled)
    too_small = sorted(label for label, n in counts.items() if n < len(SPLITS))
    if too_small:
        report.notes.append(f"{task}: classes with fewer than {len(SPLITS)} papers left out: {', '.join(too_small)}")
    labelled = [p for p in labelled if str(p.label) not in too_small]
    if len({str(p.label) for p in labelled}) < 2:
        report.not_supported[task] = f"fewer than 2 classes with at least {len(SPLITS)} labelled papers"
        return []
    mapping = _label_mapping(p.label for p in labelled)
    ids = [p.paper_id for p in labelled]
    classes = [mapping[str(p.label)] for p in labelled]
    train_share, val_share, _ = fractions
    train_ids, rest_ids, _, rest_classes = train_test_split(ids, classes, train_size=train_share,
                                                            stratify=classes, random_state=seed)
    val_ids, test_ids = train_test_split(rest_ids, train_size=val_share / (1 - train_share),
                                         stratify=rest_classes, random_state=seed)
    by_id = dict(zip(ids, classes))
    for split, split_ids in zip(SPLITS, (train_ids, val_ids, test_ids)):
        write_csv(out / task / f"{split}.csv", ["pid", "class_label"],
                  ([paper_id, by_id[paper_id]] for paper_id in split_ids))
        report.classification[split] = {"papers": len(split_ids), "classes": len({by_id[i] for i in split_ids})}
    write_json(out / task / CLASS_NAMES_FILE, {str(index): label for label, index in mapping.items()})
    report.label_task, report.label_mapping = task, mapping
    return ids


class _RankingBuilder:
    """Samples queries, positives and negatives for one ranking task and writes its qrels.

    Args:
        pool: every paper id that may be a negative (sorted, so the sampling is reproducible).
        queries_per_split: most queries per split; max_query_share: most share of eligible queries used.
        positives, negatives: most positives and exact negatives per query.
    """

    def __init__(self, pool: list[str], rng: np.random.Generator, queries_per_split: int, max_query_share: float,
                 positives: int, negatives: int):
        self.pool = pool
        self.rng = rng
        self.queries_per_split = queries_per_split
        self.max_query_share = max_query_share
        self.positives = positives
        self.negatives = negatives
        self.paper_ids: set[str] = set()
        """every id written to a qrel file so far."""

    def negatives_for(self, query: str, excluded: set[str]) -> list[str]:
        """`negatives` distinct random papers, none of them the query or in `excluded` (rejection sampling)."""
        chosen: dict[str, None] = {}
        available = len(self.pool) - len(excluded | {query})
        want = min(self.negatives, available)
        while len(chosen) < want:
            for index in self.rng.integers(len(self.pool), size=2 * want):
                paper_id = self.pool[index]
                if paper_id != query and paper_id not in excluded and len(chosen) < want:
                    chosen[paper_id] = None
        return list(chosen)

    def build(self, task: str, related: dict[str, list[str]], excluded: dict[str, set[str]], out: Path,
              report: BuildReport) -> set[str]:
        """Write `{task}/{val,test}.qrel` from `related[q]` (positives, best first) and `excluded[q]` (never
        negatives); returns the evaluation queries."""
        eligible = sorted(related)
        n_queries = min(2 * self.queries_per_split, int(len(eligible) * self.max_query_share))
        if n_queries < len(RANKING_SPLITS):
            report.not_supported[task] = "no paper in the corpus qualifies as a query" if not eligible else (
                f"{len(eligible)} paper(s) qualify as a query, too few for one query per split (at most a share of "
                f"{self.max_query_share} of them is used)")
            return set()
        queries = [eligible[i] for i in self.rng.permutation(len(eligible))[:n_queries]]
        info: dict[str, Any] = {"eligible_queries": len(eligible)}
        halves = (queries[:n_queries // 2], queries[n_queries // 2:])
        for split, split_queries in zip(RANKING_SPLITS, halves):
            lines = []
            n_positives = 0
            for query in split_queries:
                positives = related[query][:self.positives]
                graded = [(c, 1) for c in positives] + [(c, 0) for c in self.negatives_for(query, excluded[query])]
                n_positives += len(positives)
                self.paper_ids.update([query, *(c for c, _ in graded)])
                lines += [f"{query} 0 {graded[i][0]} {graded[i][1]}" for i in self.rng.permutation(len(graded))]
            write_lines(out / task / f"{split}.qrel", lines)
            info[split] = {"queries": len(split_queries), "positives": n_positives,
                           "negatives": len(lines) - n_positives}
        if n_queries < 2 * self.queries_per_split:
            report.notes.append(f"{task}: {len(eligible)} eligible queries, {n_queries} used for evaluation "
                                f"(max share {self.max_query_share}); fewer than the {self.queries_per_split} per "
                                "split asked for")
        report.ranking[task] = info
        return set(queries)


def _ranked(counts: Mapping[str, int], rng: np.random.Generator) -> list[str]:
    """Ids by count, highest first; ties in a random (seeded) order."""
    ids = sorted(counts)
    tie_break = dict(zip(ids, rng.permutation(len(ids)).tolist()))
    return sorted(ids, key=lambda i: (-counts[i], tie_break[i]))


def _cite_relations(corpus: Corpus, rng: np.random.Generator) -> tuple[dict[str, list[str]], dict[str, set[str]]]:
    """Queries citing >= 2 papers: their cited papers (random order) and what may not be a negative."""
    related = {q: _ranked(dict.fromkeys(cited, 1), rng) for q, cited in sorted(corpus.cites.items())
               if len(cited) >= 2}
    return related, {q: corpus.cites[q] for q in related}


def _cocite_relations(corpus: Corpus, rng: np.random.Generator,
                      min_cocitations: int) -> tuple[dict[str, list[str]], dict[str, set[str]]]:
    """Queries co-cited with some paper by >= `min_cocitations` papers: those papers (most co-cited first), and
    every paper co-cited with the query at all (never a negative)."""
    cocited: dict[str, Counter] = {}
    for cited in corpus.cites.values():
        for a in cited:
            cocited.setdefault(a, Counter()).update(b for b in cited if b != a)
    related = {}
    for query in sorted(cocited):
        strong = Counter({c: n for c, n in cocited[query].items() if n >= min_cocitations})
        if strong:
            related[query] = _ranked(strong, rng)
    return related, {q: set(cocited[q]) for q in related}


def _specter_files(corpus: Corpus, removed: set[str], out: Path, fractions: Sequence[float],
                   rng: np.random.Generator, report: BuildReport) -> None:
    """data.json (5: cited, 1: cited by a cited paper), metadata.json, train/val/test.txt, without `removed`."""
    graph = corpus.without(removed)
    data = {}
    for query in sorted(graph):
        direct = graph[query]
        if not direct:
            continue
        candidates = {c: {"count": CITATION_OF_CITATION} for c in sorted(
            {c2 for c in direct for c2 in graph.get(c, ()) if c2 not in direct and c2 != query})}
        candidates.update({c: {"count": DIRECT_CITATION} for c in sorted(direct)})
        data[query] = candidates
    folder = out / SPECTER_FOLDER
    write_json(folder / "data.json", data)
    write_json(folder / "metadata.json", {i: p.record() for i, p in corpus.papers.items() if i not in removed})
    ordered = sorted(data)
    queries = [ordered[i] for i in rng.permutation(len(ordered))]
    cut_train = int(round(fractions[0] * len(queries)))
    cut_val = cut_train + int(round(fractions[1] * len(queries)))
    for split, part in zip(SPLITS, (queries[:cut_train], queries[cut_train:cut_val], queries[cut_val:])):
        write_lines(folder / f"{split}.txt", part)
        report.specter[f"{split}_queries"] = len(part)
    counts = Counter(v["count"] for candidates in data.values() for v in candidates.values())
    report.specter.update(direct_pairs=counts[DIRECT_CITATION], citation_of_citation_pairs=counts[
        CITATION_OF_CITATION], evaluation_queries_removed=len(removed), papers=len(corpus.papers) - len(removed))


def build_suite(
    papers_jsonl: str | os.PathLike[str],
    edges_tsv: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    seed: int = 0,
    label_task: str = "mag",
    queries_per_split: int = 1000,
    max_query_share: float = 0.5,
    positives: int = 5,
    negatives: int = 25,
    min_cocitations: int = 2,
    split_fractions: Sequence[float] = (0.6, 0.2, 0.2),
    specter_fractions: Sequence[float] = (0.8, 0.1, 0.1),
) -> BuildReport:
    """Write a SciDocs-style suite for the corpus to `out_dir`.

    A rebuild replaces only the files an earlier build wrote there (`scidocs_eval.formats.safe_output.owned_folder`); a
    non-empty folder the tool did not write is refused. A task the corpus is too small for is left out and
    reported in `not_supported`; if no task can be built, nothing is written.

    Args:
        papers_jsonl: JSON lines {paper_id, title, abstract, label?}; papers with neither text are left out.
        edges_tsv: citing<TAB>cited per line; links to unknown papers, self-citations and repeats are dropped.
        seed: every random choice (splits, queries, negatives, orders) follows from it.
        label_task: the folder of the classification task (the labels go there as the MAG task's do).
        queries_per_split: most queries per ranking task and split (SciDocs: 1000).
        max_query_share: most share of a ranking task's eligible queries that become evaluation queries (they
            leave the training graph, so the rest is kept for SPECTER training).
        positives, negatives: most positives and number of random negatives per query (SciDocs: 5 and 25).
        min_cocitations: how many papers must cite a pair together for a co-cite positive.
        split_fractions: train/val/test shares of the labelled papers; specter_fractions: of training queries.

    Returns:
        the BuildReport, also written to `{out_dir}/build_report.json`.
    """
    if not _TASK_NAME.match(label_task):
        raise ScidocsEvalError(f"--label-task must be a plain folder name (letters, digits, _ or -), "
                               f"got {label_task!r}")
    for name, shares in (("split_fractions", split_fractions), ("specter_fractions", specter_fractions)):
        if len(shares) != 3 or min(shares) <= 0 or abs(sum(shares) - 1) > 1e-9:
            raise ScidocsEvalError(f"{name} must be three positive shares summing to 1, got {tuple(shares)}")
    corpus = read_citation_corpus(papers_jsonl, edges_tsv)
    with owned_folder(out_dir, "scidocs-eval data build", option="--out") as out:
        rng = np.random.default_rng(seed)
        report = BuildReport(str(out_dir), seed, {"papers": str(papers_jsonl), "citations": str(edges_tsv)},
                             corpus.stats)

        labelled = _classification(corpus, out, label_task, split_fractions, seed, report)
        if labelled:
            write_json(out / METADATA_FILES["mag_mesh"], {i: corpus.papers[i].record() for i in sorted(labelled)})

        ranking = _RankingBuilder(sorted(corpus.papers), rng, queries_per_split, max_query_share, positives,
                                  negatives)
        evaluation_queries: set[str] = set()
        for task, (related, excluded) in (("cite", _cite_relations(corpus, rng)),
                                          ("cocite", _cocite_relations(corpus, rng, min_cocitations))):
            evaluation_queries |= ranking.build(task, related, excluded, out, report)
        if not report.built_tasks():
            raise ScidocsEvalError(f"{papers_jsonl}: the corpus is too small for any task, nothing written: "
                                   + "; ".join(f"{t}: {why}" for t, why in report.not_supported.items()
                                               if t not in NOT_SUPPORTED))
        if ranking.paper_ids:
            write_json(out / METADATA_FILES["view_cite_read"],
                       {i: corpus.papers[i].record() for i in sorted(ranking.paper_ids)})

        _specter_files(corpus, evaluation_queries, out, specter_fractions, rng, report)
        report.save(out / REPORT_FILE)
    return report
