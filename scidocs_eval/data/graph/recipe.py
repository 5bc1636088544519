"""The SciDocs recipe on a snapshot of the scholarly graph: `data build --from openalex|s2 DIR`.

One definition of the queries (SQL in DuckDB's dialect, run as is by DuckDB and as SQLGlot's translation by
Spark) reduces the snapshot to the works kept (the latest version of each, filtered) and the citation links
among them; every random choice is then made in Python from query results in a fixed order, with numpy
generators seeded by (seed, task, query position), and the rows a draw needs are fetched by their index in a
sorted table. So a rebuild from the same snapshot and seed, on either engine, writes the same bytes.

Tasks (the layout `data build` writes, see `scidocs_eval.data.build`, and the BEIR layout beside it):
- mag: the work's top-level field (OpenAlex: primary_topic.field, or the first level-0 concept with
  `labels="concepts"`; Semantic Scholar: the first s2fieldsofstudy category of source s2-fos-model).
- mesh (OpenAlex only): the first major MeSH descriptor of a PubMed work, the most frequent classes.
- cite: queries citing >= 2 works, up to 5 cited works (1), 25 random works it does not cite (0).
- cocite: queries co-cited with some work by >= 2 works: up to 5 most co-cited (1), 25 random never co-cited.
- specter: data.json (5: cited, 1: cited by a cited work), metadata.json, train/val/test.txt.
With a cutoff, evaluation queries and classification test papers are works published after it, the training
files only works at or before it (a year-only work in a date cutoff's year is in neither).
"""

from __future__ import annotations

import itertools
import math
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from scidocs_eval.data.graph import badrows
from scidocs_eval.data.graph.engines import FILE_COLUMN, Engine, open_engine
from scidocs_eval.data.graph.snapshot import OPENALEX_PREFIX, Snapshot, abstract_from_inverted_index, open_snapshot
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.formats.corpus import Published
from scidocs_eval.formats.retrieval import Document, write_beir
from scidocs_eval.formats.safe_output import disk_errors, owned_folder
from scidocs_eval.formats.suite import CLASS_NAMES_FILE, METADATA_FILES, SPLITS
from scidocs_eval.formats.writers import write_csv, write_json, write_lines
from scidocs_eval.progress import announce

BUILD_FILE = "build.json"
RANKING_SPLITS = ("val", "test")
NOT_SUPPORTED = {task: "needs user logs (views, reads, clicks); no snapshot of the scholarly graph holds any"
                 for task in ("coview", "coread", "recomm")}
DIRECT_CITATION, CITATION_OF_CITATION = 5, 1
_TASK_SEEDS = {"cite": 1, "cocite": 2, "mag": 3, "mesh": 4, "specter": 5}
_QUERY_BLOCK = 10_000
"""Training queries whose candidates are aggregated at once (about 250 pairs each on a graph of 20 references a
work): an ordered aggregate of them all ran out of DuckDB's 4 GB at 1M works."""


@dataclass(frozen=True)
class _RankingTask:
    direct: bool
    """True: a query's own references are its positives (cite); False: the works cited together with it (co-cite)."""


@dataclass(frozen=True)
class _ClassificationTask:
    column: str
    """the works table's column that holds the label"""
    limited: bool
    """keep only the `Recipe.mesh_classes` largest classes (as SciDocs' MeSH task keeps 11)"""
    lacking_in_s2: str | None = None
    """why Semantic Scholar's datasets cannot give this task (None: they can)"""


_RANKING_TASKS = {"cite": _RankingTask(direct=True), "cocite": _RankingTask(direct=False)}
_CLASSIFICATION_TASKS = {"mag": _ClassificationTask("field", limited=False),
                         "mesh": _ClassificationTask("mesh", limited=True,
                                                     lacking_in_s2="Semantic Scholar's datasets carry no MeSH "
                                                                   "descriptors")}


@dataclass(frozen=True)
class Filters:
    """Which works are kept (besides: not retracted, not paratext, with a title): publication years (inclusive
    bounds, None: open), languages, work types, top-level fields (empty: all), and whether an abstract is
    required."""

    first_year: int | None = None
    last_year: int | None = None
    languages: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()
    require_abstract: bool = False

    def sql(self) -> str:
        """The WHERE clause over the normalised works."""
        clauses = ["NOT is_retracted", "NOT is_paratext", "length(title) > 0"]
        if self.first_year is not None:
            clauses.append(f"year >= {int(self.first_year)}")
        if self.last_year is not None:
            clauses.append(f"year <= {int(self.last_year)}")
        for column, values in (("language", self.languages), ("type", self.types), ("field", self.fields)):
            if values:
                clauses.append(f"{column} IN ({', '.join(_literal(v) for v in values)})")
        if self.require_abstract:
            clauses.append("has_abstract")
        return " AND ".join(clauses)


@dataclass(frozen=True)
class Recipe:
    """The sizes of the suite: as SciDocs by default."""

    queries_per_split: int = 1000
    max_query_share: float = 0.5
    positives: int = 5
    negatives: int = 25
    min_cocitations: int = 2
    papers_per_class: int = 1300
    mesh_classes: int = 11
    train_queries: int = 150000
    labels: str = "topics"

    def __post_init__(self) -> None:
        if self.labels not in _OPENALEX_LABELS:
            raise ScidocsEvalError(f"labels must be one of {', '.join(_OPENALEX_LABELS)}, got {self.labels!r}")
        if self.papers_per_class < 5:
            raise ScidocsEvalError(f"papers per class must be at least 5 (3 train for the evaluation's 3-fold CV, "
                                   f"1 val, 1 test), got {self.papers_per_class}")
        if not 0 < self.max_query_share <= 1:
            raise ScidocsEvalError(f"max query share must be in (0, 1], got {self.max_query_share}")
        for name in ("queries_per_split", "positives", "negatives", "min_cocitations", "mesh_classes",
                     "train_queries"):
            if getattr(self, name) < 1:
                raise ScidocsEvalError(f"{name} must be at least 1, got {getattr(self, name)}")


@dataclass
class GraphBuildReport:
    """What was read and built: written as build.json (engine-independent: the engines write the same bytes)."""

    source: str
    snapshot: str
    snapshot_digest: str
    parts: int
    seed: int
    filters: dict[str, Any]
    recipe: dict[str, Any]
    cutoff: str | None
    counts: dict[str, int] = field(default_factory=dict)
    bad_rows: list[str] = field(default_factory=list)
    classification: dict[str, dict[str, Any]] = field(default_factory=dict)
    ranking: dict[str, dict[str, Any]] = field(default_factory=dict)
    specter: dict[str, int] = field(default_factory=dict)
    not_supported: dict[str, str] = field(default_factory=lambda: dict(NOT_SUPPORTED))
    notes: list[str] = field(default_factory=list)

    def built_tasks(self) -> list[str]:
        return [*self.classification, *self.ranking]

    def format(self) -> str:
        lines = [f"suite built from the {self.source} snapshot {self.snapshot} ({self.parts} parts, seed "
                 f"{self.seed}); tasks: {', '.join(self.built_tasks()) or 'none'}",
                 "works: " + ", ".join(f"{k}={v}" for k, v in self.counts.items())]
        for task, info in self.classification.items():
            lines.append(f"{task}: {info['classes']} classes; " + ", ".join(
                f"{split} {info[split]} papers" for split in SPLITS))
        for task, info in self.ranking.items():
            lines.append(f"{task}: {info['eligible_queries']} eligible queries; " + ", ".join(
                f"{split} {info[split]['queries']} queries / {info[split]['positives']} positives"
                for split in RANKING_SPLITS))
        if self.specter:
            lines.append("specter training: " + ", ".join(f"{k}={v}" for k, v in self.specter.items()))
        reasons: dict[str, list[str]] = {}
        for task, why in self.not_supported.items():
            reasons.setdefault(why, []).append(task)
        lines += [f"not built: {', '.join(tasks)} ({why})" for why, tasks in reasons.items()]
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


def _literal(value: object) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def _rng(seed: int, *keys: int) -> np.random.Generator:
    return np.random.default_rng([seed, *keys])


# -- the queries (DuckDB's dialect; SQLGlot translates them for Spark) ---------------------------------------------

_OPENALEX_WORKS = f"""
SELECT replace(id, '{OPENALEX_PREFIX}', '') AS id,
       trim(coalesce(title, display_name, '')) AS title,
       abstract_inverted_index IS NOT NULL AND length(CAST(abstract_inverted_index AS VARCHAR)) > 2 AS has_abstract,
       substr(publication_date, 1, 10) AS pub_date,
       publication_year AS year,
       type, language,
       {{label}} AS field,
       CASE WHEN ids.pmid IS NOT NULL THEN list_filter(mesh, lambda m: m.is_major_topic)[1].descriptor_name END AS mesh,
       coalesce(is_retracted, false) AS is_retracted,
       coalesce(is_paratext, false) AS is_paratext,
       updated_date AS updated,
       {FILE_COLUMN},
       referenced_works AS refs
FROM works_raw"""
_OPENALEX_LABELS = {"topics": "primary_topic.field.display_name",
                    "concepts": "list_filter(concepts, lambda c: c.level = 0)[1].display_name"}
_S2_WORKS = f"""
SELECT CAST(p.corpusid AS VARCHAR) AS id,
       trim(coalesce(p.title, '')) AS title,
       a.corpusid IS NOT NULL AS has_abstract,
       substr(p.publicationdate, 1, 10) AS pub_date,
       p.year AS year,
       p.publicationtypes[1] AS type,
       CAST(NULL AS VARCHAR) AS language,
       list_filter(p.s2fieldsofstudy, lambda f: f.source = 's2-fos-model')[1].category AS field,
       CAST(NULL AS VARCHAR) AS mesh,
       false AS is_retracted,
       false AS is_paratext,
       CAST(NULL AS VARCHAR) AS updated,
       p.{FILE_COLUMN}
FROM papers_raw AS p
LEFT JOIN (SELECT DISTINCT corpusid FROM abstracts_raw WHERE length(abstract) > 0) AS a ON a.corpusid = p.corpusid"""
_WORKS_DATASET = {"openalex": "works", "s2": "papers"}
"""The dataset each record of the works table comes from (its rows are counted against the check's)."""


def _period_sql(cutoff: Published | None) -> str:
    """'after', 'before' or 'undated' for a work (see `Published.is_after`); 'all' without a cutoff."""
    if cutoff is None:
        return "'all'"
    if cutoff.date is None:
        return f"CASE WHEN year IS NULL THEN 'undated' WHEN year > {cutoff.year} THEN 'after' ELSE 'before' END"
    return (f"CASE WHEN length(pub_date) = 10 THEN (CASE WHEN pub_date > '{cutoff.date.isoformat()}' THEN 'after' "
            f"ELSE 'before' END) WHEN year IS NULL OR year = {cutoff.year} THEN 'undated' "
            f"WHEN year > {cutoff.year} THEN 'after' ELSE 'before' END")


class _Build:
    """One build: the engine's tables, the draws, and the files written into `out` (a staging folder)."""

    def __init__(self, engine: Engine, snapshot: Snapshot, report: GraphBuildReport, recipe: Recipe, seed: int,
                 cutoff: Published | None, progress: bool):
        self.engine, self.snapshot, self.report, self.recipe, self.seed = engine, snapshot, report, recipe, seed
        self.cutoff = cutoff
        self.progress = progress
        self.eval_period = "'after'" if cutoff is not None else "'all'"
        self.train_period = "'before'" if cutoff is not None else "'all'"

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """One progress line for a stage run in Python (the draws, the files written), with its time."""
        started = time.perf_counter()
        yield
        announce(f"  {name} ({time.perf_counter() - started:.1f} s)", enabled=self.progress)

    def count(self, sql: str) -> int:
        return int(self.engine.rows(f"SELECT count(*) FROM ({sql}) AS t")[0][0])

    # -- reading ---------------------------------------------------------------------------------------------

    def read(self, filters: Filters, max_bad_rows: int, spill: Path) -> None:
        scans = self.engine.map_parts(badrows.scan_part, badrows.scan_arguments(list(self.snapshot.datasets.values())))
        self.report.bad_rows = badrows.check(scans, max_bad_rows)
        self.report.counts["bad_rows"] = sum(len(scan.bad) for scan in scans)
        substitutes = {scan.part: badrows.without_bad_rows(scan, spill / "checked") for scan in scans if scan.bad}
        for name, dataset in self.snapshot.datasets.items():
            self.engine.read(dataset, f"{name}_raw", {p: c for p, c in substitutes.items() if p in dataset.parts})
        source = self.snapshot.source
        works_sql = (_OPENALEX_WORKS.replace("{label}", _OPENALEX_LABELS[self.recipe.labels]) if source == "openalex"
                     else _S2_WORKS)
        try:
            self.engine.create("works_all", works_sql)
            read = self.count("SELECT id FROM works_all")
        except Exception as error:  # the engine's own error on records that passed the check
            raise badrows.engine_failure(error) from None
        works_parts = set(self.snapshot.datasets[_WORKS_DATASET[source]].parts)
        checked = sum(scan.records for scan in scans if scan.part in works_parts)
        if read != checked:
            raise RuntimeError(f"the engine read {read} works, the check found {checked} good records")

        self.engine.create("latest", f"""
            SELECT * FROM works_all WHERE id IS NOT NULL
            QUALIFY row_number() OVER (PARTITION BY id ORDER BY updated DESC NULLS LAST, {FILE_COLUMN} DESC) = 1""")
        self.engine.create("works", f"""
            SELECT id, title, has_abstract, pub_date, year, type, language, field, mesh, updated, {FILE_COLUMN},
                   {_period_sql(self.cutoff)} AS period{', refs' if source == 'openalex' else ''}
            FROM latest WHERE {filters.sql()}""")
        totals = self.engine.rows("""
            SELECT (SELECT count(*) FROM works_all WHERE id IS NOT NULL),
                   (SELECT count(*) FROM latest),
                   (SELECT count(*) FROM latest WHERE is_retracted),
                   (SELECT count(*) FROM latest WHERE is_paratext),
                   (SELECT count(*) FROM latest WHERE length(title) = 0),
                   (SELECT count(*) FROM works)""")[0]
        names = ("records", "works", "retracted", "paratext", "without_title", "kept")
        self.report.counts.update(zip(names, map(int, totals)))
        self.report.counts["older_versions_replaced"] = self.report.counts["records"] - self.report.counts["works"]
        if not self.report.counts["kept"]:
            raise ScidocsEvalError(f"--from {source} {self.snapshot.root}: no work is left after the filters "
                                   f"({filters.sql()}); nothing written")
        if self.cutoff is not None:
            for period, n in self.engine.rows("SELECT period, count(*) FROM works GROUP BY period ORDER BY period"):
                self.report.counts[f"works_{period}"] = int(n)

        if source == "openalex":
            self.engine.create("refs", f"""
                SELECT w.id AS citing, replace(r, '{OPENALEX_PREFIX}', '') AS cited
                FROM works AS w, unnest(w.refs) AS u(r)""")
        else:
            self.engine.create("refs", """
                SELECT CAST(c.citingcorpusid AS VARCHAR) AS citing, CAST(c.citedcorpusid AS VARCHAR) AS cited
                FROM citations_raw AS c JOIN works AS w ON w.id = CAST(c.citingcorpusid AS VARCHAR)""")
        self.engine.create("edges", """
            SELECT DISTINCT r.citing, r.cited FROM refs AS r JOIN works AS w ON w.id = r.cited
            WHERE r.citing <> r.cited""")
        links = self.engine.rows("""
            SELECT (SELECT count(*) FROM refs),
                   (SELECT count(*) FROM refs AS r LEFT JOIN works AS w ON w.id = r.cited WHERE w.id IS NULL),
                   (SELECT count(*) FROM edges)""")[0]
        self.report.counts.update(zip(("links_read", "links_outside_the_kept_works", "links_kept"), map(int, links)))
        self.engine.create("pool", "SELECT id, row_number() OVER (ORDER BY id) - 1 AS idx FROM works")

    # -- draws -----------------------------------------------------------------------------------------------

    def fetch_by_index(self, table: str, indices: Sequence[int]) -> list[str]:
        """The ids at `indices` (rows of `table`'s idx column), in the order given."""
        self.engine.put("picked", [("idx", "BIGINT"), ("pos", "BIGINT")],
                        [(int(i), p) for p, i in enumerate(indices)])
        rows = self.engine.rows(f"SELECT p.pos, t.id FROM picked AS p JOIN {table} AS t ON t.idx = p.idx "
                                "ORDER BY p.pos")
        if len(rows) != len(indices):
            raise RuntimeError(f"{table}: {len(indices)} rows drawn, {len(rows)} found")
        return [row[1] for row in rows]

    def ids_table(self, table: str, ids: Sequence[str]) -> None:
        self.engine.put(table, [("id", "VARCHAR")], [(i,) for i in ids])

    # -- ranking tasks ---------------------------------------------------------------------------------------

    def relations(self, task: str, batch: list[str]) -> dict[str, tuple[list[tuple[str, int]], set[str]]]:
        """For the queries of `batch` that qualify: (related works with their strength, sorted by id; the works
        that may not be negatives)."""
        self.ids_table("batch", batch)
        if _RANKING_TASKS[task].direct:
            rows = self.engine.rows("SELECT e.citing, e.cited, 1 FROM batch AS b JOIN edges AS e ON e.citing = b.id "
                                    "ORDER BY 1, 2")
        else:
            rows = self.engine.rows("""
                SELECT b.id, e2.cited, count(*) FROM batch AS b
                JOIN edges AS e1 ON e1.cited = b.id JOIN edges AS e2 ON e2.citing = e1.citing
                WHERE e2.cited <> b.id GROUP BY b.id, e2.cited ORDER BY 1, 2""")
        linked: dict[str, list[tuple[str, int]]] = {}
        for query, other, n in rows:
            linked.setdefault(query, []).append((other, int(n)))
        threshold, needed = (1, 2) if _RANKING_TASKS[task].direct else (self.recipe.min_cocitations, 1)
        out = {}
        for query, others in linked.items():
            strong = [(o, n) for o, n in others if n >= threshold]
            if len(strong) >= needed:
                out[query] = (strong, {o for o, _ in others})
        return out

    def ranking(self, task: str, pool_size: int, out: Path) -> set[str]:
        """Draw the queries of `task`, their positives and negatives; write `{task}/{val,test}.qrel`."""
        recipe = self.recipe
        candidates = f"{task}_candidates"
        if _RANKING_TASKS[task].direct:
            condition = "SELECT citing AS id FROM edges GROUP BY citing HAVING count(*) >= 2"
        else:  # co-cited with some work by >= min_cocitations works: cited by at least as many
            condition = f"SELECT cited AS id FROM edges GROUP BY cited HAVING count(*) >= {recipe.min_cocitations}"
        self.engine.create(candidates, f"""
            SELECT c.id, row_number() OVER (ORDER BY c.id) - 1 AS idx
            FROM ({condition}) AS c JOIN works AS w ON w.id = c.id WHERE w.period = {self.eval_period}""")
        n_candidates = self.count(f"SELECT id FROM {candidates}")
        wanted = 2 * recipe.queries_per_split
        target = math.ceil(wanted / recipe.max_query_share)
        order = _rng(self.seed, _TASK_SEEDS[task]).permutation(n_candidates)
        found: list[tuple[str, tuple[list[tuple[str, int]], set[str]]]] = []
        checked = 0
        batch_size = max(1024, 2 * target)
        while len(found) < target and checked < n_candidates:
            batch = self.fetch_by_index(candidates, order[checked:checked + batch_size])
            checked += len(batch)
            related = self.relations(task, batch)
            found += [(q, related[q]) for q in batch if q in related]
        exhausted = checked >= n_candidates
        n_queries = min(wanted, int(len(found) * recipe.max_query_share)) if exhausted else wanted
        eligible = len(found) if exhausted else f">= {len(found)}"
        if n_queries < len(RANKING_SPLITS):
            self.report.not_supported[task] = (f"{eligible} work(s) qualify as a query, too few for one query per "
                                               f"split (at most a share of {recipe.max_query_share} is used)")
            return set()
        chosen = found[:n_queries]
        graded = self.graded(task, chosen, pool_size)
        info: dict[str, Any] = {"eligible_queries": eligible}
        halves = (graded[:n_queries // 2], graded[n_queries // 2:])
        for split, part in zip(RANKING_SPLITS, halves):
            write_lines(out / task / f"{split}.qrel", [f"{q} 0 {c} {g}" for q, lines in part for c, g in lines])
            positives = sum(g for _, lines in part for _, g in lines)
            info[split] = {"queries": len(part), "positives": positives,
                           "negatives": sum(len(lines) for _, lines in part) - positives}
        if n_queries < wanted:
            self.report.notes.append(f"{task}: {eligible} eligible queries, {n_queries} used for evaluation (max "
                                     f"share {recipe.max_query_share}); fewer than the {recipe.queries_per_split} "
                                     "per split asked for")
        self.report.ranking[task] = info
        return {q for q, _ in chosen}

    def graded(self, task: str, chosen: list[tuple[str, tuple[list[tuple[str, int]], set[str]]]],
               pool_size: int) -> list[tuple[str, list[tuple[str, int]]]]:
        """Per query: its positives (the strongest, ties in a seeded order) and random negatives (SciDocs' rule:
        uniform over the kept works, none the query or excluded), in a seeded order."""
        recipe = self.recipe
        rngs = [_rng(self.seed, _TASK_SEEDS[task], position) for position in range(len(chosen))]
        positives = []
        for rng, (_, (strong, _)) in zip(rngs, chosen):
            tie_break = rng.permutation(len(strong))
            ranked = sorted(range(len(strong)), key=lambda k: (-strong[k][1], tie_break[k]))
            positives.append([strong[k][0] for k in ranked[:recipe.positives]])
        negatives: list[dict[str, None]] = [{} for _ in chosen]
        wants = [min(recipe.negatives, pool_size - len(excluded | {q})) for q, (_, excluded) in chosen]
        pending = [k for k, want in enumerate(wants) if want > 0]
        while pending:
            draws = {k: rngs[k].integers(pool_size, size=2 * wants[k]) for k in pending}
            ids = iter(self.fetch_by_index("pool", [i for k in pending for i in draws[k]]))
            for k in pending:
                query, (_, excluded) = chosen[k]
                for paper_id in (next(ids) for _ in draws[k]):
                    if paper_id != query and paper_id not in excluded and len(negatives[k]) < wants[k]:
                        negatives[k][paper_id] = None
            pending = [k for k in pending if len(negatives[k]) < wants[k]]
        graded = []
        for k, (query, _) in enumerate(chosen):
            lines = [(c, 1) for c in positives[k]] + [(c, 0) for c in negatives[k]]
            graded.append((query, [lines[i] for i in rngs[k].permutation(len(lines))]))
        return graded

    # -- classification --------------------------------------------------------------------------------------

    def classification(self, task: str, out: Path) -> dict[str, list[str]]:
        """Draw `{task}/{train,val,test}.csv`: up to `papers_per_class` papers of each class (test from after the
        cutoff, train and val from before it); returns the ids of each split."""
        column = _CLASSIFICATION_TASKS[task].column
        recipe = self.recipe
        periods = "('after', 'before')" if self.cutoff is not None else "('all')"
        self.engine.create(f"{task}_labelled", f"""
            SELECT id, {column} AS label, period,
                   row_number() OVER (PARTITION BY {column}, period ORDER BY id) - 1 AS idx
            FROM works WHERE {column} IS NOT NULL AND period IN {periods}""")
        counts: dict[str, dict[str, int]] = {}
        for label, period, n in self.engine.rows(f"SELECT label, period, count(*) FROM {task}_labelled "
                                                 "GROUP BY label, period ORDER BY label, period"):
            counts.setdefault(label, {})[period] = int(n)
        if self.cutoff is not None:  # train (3/4 of those before) must reach the 3 folds of the evaluation's CV
            usable = [c for c, n in counts.items() if n.get("after", 0) >= 1 and n.get("before", 0) >= 4]
        else:
            usable = [c for c, n in counts.items() if n.get("all", 0) >= 5]
        usable.sort(key=lambda c: (-sum(counts[c].values()), c))
        limit = recipe.mesh_classes if _CLASSIFICATION_TASKS[task].limited else None
        classes = sorted(usable[:limit])
        if len(classes) < 2:
            self.report.not_supported[task] = ("fewer than 2 classes with enough labelled works"
                                               + (" on both sides of the cutoff" if self.cutoff else ""))
            return {}
        rng = _rng(self.seed, _TASK_SEEDS[task])
        quota = {"all": recipe.papers_per_class, "after": round(0.2 * recipe.papers_per_class),
                 "before": recipe.papers_per_class - round(0.2 * recipe.papers_per_class)}
        draws = []
        for label in classes:
            for period in sorted(counts[label]):
                n = counts[label][period]
                picks = rng.choice(n, size=min(n, quota[period]), replace=False)
                draws += [(label, period, int(i)) for i in picks]
        self.engine.put("picked", [("label", "VARCHAR"), ("period", "VARCHAR"), ("idx", "BIGINT"),
                                   ("pos", "BIGINT")], [(*d, p) for p, d in enumerate(draws)])
        rows = self.engine.rows(f"SELECT p.label, p.period, t.id FROM picked AS p JOIN {task}_labelled AS t "
                                "ON t.label = p.label AND t.period = p.period AND t.idx = p.idx ORDER BY p.pos")
        by_group: dict[tuple[str, str], list[str]] = {}
        for label, period, paper_id in rows:
            by_group.setdefault((label, period), []).append(paper_id)
        splits: dict[str, list[tuple[str, int]]] = {split: [] for split in SPLITS}
        for index, label in enumerate(classes):
            if self.cutoff is not None:
                earlier = by_group.get((label, "before"), [])
                cut = max(1, round(0.75 * len(earlier)))
                parts = (earlier[:cut], earlier[cut:], by_group.get((label, "after"), []))
            else:
                drawn = by_group[(label, "all")]
                train, val = max(1, round(0.6 * len(drawn))), max(1, round(0.2 * len(drawn)))
                parts = (drawn[:train], drawn[train:train + val], drawn[train + val:])
            for split, ids in zip(SPLITS, parts):
                splits[split] += [(i, index) for i in ids]
        info: dict[str, Any] = {"classes": len(classes)}
        for split in SPLITS:
            write_csv(out / task / f"{split}.csv", ["pid", "class_label"], sorted(splits[split]))
            info[split] = len(splits[split])
        write_json(out / task / CLASS_NAMES_FILE, {str(i): label for i, label in enumerate(classes)})
        self.report.classification[task] = info
        return {split: sorted(i for i, _ in rows) for split, rows in splits.items()}

    # -- SPECTER training files ------------------------------------------------------------------------------

    def specter(self, held_out: set[str], out: Path) -> list[str]:
        """data.json, train/val/test.txt from works of the training period that are not held out (nor share a
        title with one); returns the ids metadata.json needs."""
        self.ids_table("held_out", sorted(held_out))
        self.engine.create("train_works", f"""
            SELECT w.id FROM works AS w
            LEFT JOIN held_out AS h ON h.id = w.id
            LEFT JOIN (SELECT DISTINCT lower(x.title) AS title FROM works AS x JOIN held_out AS y ON y.id = x.id)
                 AS t ON t.title = lower(w.title)
            WHERE w.period = {self.train_period} AND h.id IS NULL AND t.title IS NULL""")
        self.engine.create("train_edges", """
            SELECT e.citing, e.cited FROM edges AS e
            JOIN train_works AS a ON a.id = e.citing JOIN train_works AS b ON b.id = e.cited""")
        self.engine.create("train_candidates", """
            SELECT citing AS id, row_number() OVER (ORDER BY citing) - 1 AS idx
            FROM (SELECT DISTINCT citing FROM train_edges) AS q""")
        n = self.count("SELECT id FROM train_candidates")
        rng = _rng(self.seed, _TASK_SEEDS["specter"])
        queries = self.fetch_by_index("train_candidates", rng.choice(n, size=min(n, self.recipe.train_queries),
                                                                     replace=False))
        self.engine.put("train_queries", [("id", "VARCHAR"), ("qi", "BIGINT")],
                        [(query, rank) for rank, query in enumerate(sorted(queries))])
        self.engine.create("direct", """
            SELECT q.id AS q, q.qi, e.cited AS c FROM train_queries AS q JOIN train_edges AS e ON e.citing = q.id""")
        self.engine.create("specter_pairs", f"""
            SELECT q, qi, c, {DIRECT_CITATION} AS n FROM direct
            UNION ALL
            SELECT DISTINCT d.q, d.qi, e.cited, {CITATION_OF_CITATION} FROM direct AS d
            JOIN train_edges AS e ON e.citing = d.c
            LEFT JOIN direct AS x ON x.q = d.q AND x.c = e.cited
            WHERE x.c IS NULL AND e.cited <> d.q""")
        # each query's candidates as JSON text, made by the engine (ids are plain: snapshot.PLAIN_ID): Python
        # writes one line per query, not one object per pair (tens of millions at the default 150,000 queries);
        # a block of queries at a time, in their order, as an ordered aggregate is held in memory
        candidates = (self.engine.rows(f"""
            SELECT q, string_agg('"' || c || '":{{"count":' || CAST(n AS VARCHAR) || '}}', ',' ORDER BY n, c)
            FROM specter_pairs WHERE qi >= {start} AND qi < {start + _QUERY_BLOCK} GROUP BY q ORDER BY q""")
            for start in range(0, len(queries), _QUERY_BLOCK))
        folder = out / "specter"
        folder.mkdir(parents=True, exist_ok=True)
        with self.stage("specter: data.json aggregated and written"), open(folder / "data.json", "wb") as handle:
            handle.write(b"{")  # streamed: the file of a large snapshot is GBs
            for number, (query, text) in enumerate(itertools.chain.from_iterable(candidates)):
                handle.write((b"," if number else b"") + orjson.dumps(query) + b":{" + text.encode() + b"}")
            handle.write(b"}")
        with self.stage("specter: pairs counted"):
            counts = dict(self.engine.rows("SELECT n, count(*) FROM specter_pairs GROUP BY n ORDER BY n"))
            papers = [row[0] for row in self.engine.rows("""
                SELECT q FROM specter_pairs UNION SELECT c FROM specter_pairs ORDER BY 1""")]
        cut_train, cut_val = round(0.8 * len(queries)), round(0.9 * len(queries))
        for split, part in zip(SPLITS, (queries[:cut_train], queries[cut_train:cut_val], queries[cut_val:])):
            write_lines(folder / f"{split}.txt", part)
            self.report.specter[f"{split}_queries"] = len(part)
        self.report.specter.update(training_queries_eligible=n, direct_pairs=int(counts.get(DIRECT_CITATION, 0)),
                                   citation_of_citation_pairs=int(counts.get(CITATION_OF_CITATION, 0)),
                                   papers_held_out=len(held_out))
        return papers

    # -- text ------------------------------------------------------------------------------------------------

    def texts(self, ids: Sequence[str]) -> dict[str, dict[str, str]]:
        """{id: {paper_id, title, abstract}} of `ids`, the abstract from the kept version of each work."""
        self.ids_table("wanted", ids)
        if self.snapshot.source == "openalex":
            rows = self.engine.rows(f"""
                SELECT w.id, w.title, CAST(r.abstract_inverted_index AS VARCHAR) AS abstract
                FROM wanted AS q JOIN works AS w ON w.id = q.id
                JOIN works_raw AS r ON r.{FILE_COLUMN} = w.{FILE_COLUMN}
                     AND replace(r.id, '{OPENALEX_PREFIX}', '') = w.id
                     AND coalesce(r.updated_date, '') = coalesce(w.updated, '')
                ORDER BY 1, 2, 3""")
        else:
            rows = self.engine.rows("""
                SELECT w.id, w.title, a.abstract FROM wanted AS q JOIN works AS w ON w.id = q.id
                LEFT JOIN (SELECT CAST(corpusid AS VARCHAR) AS id, max(abstract) AS abstract FROM abstracts_raw
                           GROUP BY corpusid) AS a ON a.id = w.id
                ORDER BY 1, 2, 3""")
        records: dict[str, dict[str, str]] = {}
        for paper_id, title, abstract in rows:
            if paper_id in records:
                continue
            if self.snapshot.source == "openalex":
                abstract = abstract_from_inverted_index(orjson.loads(abstract) if abstract else None)
            records[paper_id] = {"paper_id": paper_id, "title": title.strip(), "abstract": (abstract or "").strip()}
        missing = sorted(set(ids) - set(records))
        if missing:
            raise RuntimeError(f"no text found for {len(missing)} kept works, e.g. {missing[:3]}")
        return records


def build_graph_suite(
    source: str,
    snapshot_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    engine: str = "duckdb",
    seed: int = 0,
    test_after: Published | None = None,
    filters: Filters = Filters(),
    recipe: Recipe = Recipe(),
    max_bad_rows: int = 0,
    master: str = "local[*]",
    memory_limit: str | None = None,
    temp_directory: str | os.PathLike[str] | None = None,
    threads: int | None = None,
    progress: bool = True,
) -> GraphBuildReport:
    """Build a SciDocs-style suite (and its BEIR layout, `{task}-full/`) from a snapshot into `out_dir`.

    Args:
        source: "openalex" or "s2"; snapshot_dir: the snapshot's folder (see `scidocs_eval.data.graph.snapshot`).
        engine: "duckdb" (this process) or "spark" (`master`); both write the same bytes.
        test_after: a cutoff: evaluation queries and classification test papers after it, training before it.
        max_bad_rows: how many bad rows (malformed lines, records without their id or with a field of another
            JSON type than the schema's) are tolerated, each named in build.json; beyond it, the build stops
            naming the first of them and writes nothing.
        memory_limit, temp_directory, threads: the engine's memory cap ("4GB"), spill folder and cores.
    """
    snapshot = open_snapshot(source, snapshot_dir)
    if source == "s2" and filters.languages:
        raise ScidocsEvalError("--languages: Semantic Scholar's papers dataset has no language field")
    report = GraphBuildReport(source, str(snapshot_dir), snapshot.digest(), len(snapshot.parts()), seed,
                              {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(filters).items()},
                              asdict(recipe), str(test_after) if test_after is not None else None)
    started = time.perf_counter()
    with owned_folder(out_dir, "scidocs-eval data build", option="--out-dir") as out:
        announce(f"data build --from {source}: {len(snapshot.parts())} parts, engine {engine}", enabled=progress)
        with _spill_folder(temp_directory, Path(out_dir)) as spill:
            runner = open_engine(engine, master=master, memory_limit=memory_limit, temp_directory=spill,
                                 threads=threads, progress=progress)
            try:
                build = _Build(runner, snapshot, report, recipe, seed, test_after, progress)
                build.read(filters, max_bad_rows, spill)
                _write_tasks(build, out)
            finally:
                runner.close()
        write_json(out / BUILD_FILE, asdict(report))
    announce(f"data build --from {source}: done in {time.perf_counter() - started:.1f} s", enabled=progress)
    return report


@contextmanager
def _spill_folder(under: str | os.PathLike[str] | None, out_dir: Path) -> Iterator[Path]:
    """A new folder for the engine's spill files (in `under`, else beside the output), removed afterwards: the
    engine writes nowhere else (DuckDB's default is `.tmp` in the current folder)."""
    parent = Path(under) if under is not None else out_dir.absolute().parent
    with disk_errors(parent, "--temp-dir"):
        parent.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix=".scidocs-eval-spill-", dir=parent))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _write_tasks(build: _Build, out: Path) -> None:
    report = build.report
    classification: dict[str, dict[str, list[str]]] = {}
    for task, how in _CLASSIFICATION_TASKS.items():
        if how.lacking_in_s2 and build.snapshot.source == "s2":
            report.not_supported[task] = how.lacking_in_s2
            continue
        with build.stage(f"{task}: drawn and written"):
            splits = build.classification(task, out)
        if splits:
            classification[task] = splits
    pool_size = build.count("SELECT id FROM pool")
    queries: set[str] = set()
    for task in _RANKING_TASKS:
        with build.stage(f"{task}: drawn and written"):
            queries |= build.ranking(task, pool_size, out)
    if not report.built_tasks():
        raise ScidocsEvalError(f"{build.snapshot.root}: the kept works are too few for any task, nothing written: "
                               + "; ".join(f"{t}: {why}" for t, why in report.not_supported.items()
                                           if t not in NOT_SUPPORTED))
    held_out = queries | {i for splits in classification.values() for s in ("val", "test") for i in splits[s]}
    training_ids = build.specter(held_out, out)
    label_ids = sorted({i for splits in classification.values() for ids in splits.values() for i in ids})
    ranking_ids = sorted({part for task in report.ranking for split in RANKING_SPLITS
                          for line in (out / task / f"{split}.qrel").read_text().splitlines()
                          for part in line.split()[::2]})
    with build.stage("texts: read"):
        texts = build.texts(sorted(set(label_ids) | set(ranking_ids) | set(training_ids)))
    with build.stage("metadata: written"):
        if label_ids:
            write_json(out / METADATA_FILES["mag_mesh"], {i: texts[i] for i in label_ids})
        if ranking_ids:
            write_json(out / METADATA_FILES["view_cite_read"], {i: texts[i] for i in ranking_ids})
        write_json(out / "specter" / "metadata.json", {i: texts[i] for i in training_ids})
    with build.stage("beir: written"):
        _write_beir(out, report, texts, sorted(set(label_ids) | set(ranking_ids)))


def _write_beir(out: Path, report: GraphBuildReport, texts: dict[str, dict[str, str]], corpus_ids: list[str]) -> None:
    """`{task}-full/` in the BEIR layout (`data build --format beir`'s construction): every paper of the suite is
    a document, the queries are the ranking queries' titles, the judgements the suite's."""
    corpus = [Document(i, texts[i]["title"], texts[i]["abstract"]) for i in corpus_ids]
    for task in report.ranking:
        judgements: dict[str, dict[str, dict[str, int]]] = {}
        for split in RANKING_SPLITS:
            for line in (out / task / f"{split}.qrel").read_text().splitlines():
                query, _, candidate, grade = line.split()
                judgements.setdefault(split, {}).setdefault(query, {})[candidate] = int(grade)
        queries = {q: texts[q]["title"] for split in judgements.values() for q in split}
        write_beir(out / f"{task}-full", corpus, queries, judgements)
