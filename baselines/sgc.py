"""SGC (SPEC §8; Wu et al. 2019, without learning): SIF features propagated k times over a citation graph.

Embeddings: S^k X, where X is the SIF matrix of the papers being embedded and S = D^-1/2 (A + I) D^-1/2 is
the symmetric-normalised adjacency with self-loops of the undirected citation graph among those papers
(scipy.sparse). A paper with no edges keeps its SIF vector (its row of S is the self-loop alone).

Graph: `references`/`cited_by` of the suite's recomm metadata, plus `citations` (TSV citing<TAB>cited).
Leakage guard, as in the paper, applied before anything is propagated: every edge between an evaluated query
and one of its candidates is removed (qrels of every ranking task, val and test; recomm impressions, every
split), and so is every incoming citation of a val/test query (ranking queries and recomm queries).
With `tune`, k is picked on val in 1..8 (SIF's `a` stays as given).

Rows after propagation (`row_norm`): "none" (default) leaves S^k X as it is; a row of S averages a paper with
its neighbours, weighted by degree, so a well-linked paper's vector shrinks. "sif" rescales each propagated
row to the norm of the paper's SIF vector, "l2" to unit length (cosine ranking under the official L2
distance). docs/baselines.md has what each does on Cora and CiteSeer.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

import numpy as np
from scipy import sparse

from scidocs_eval.evaluation.task import TASKS, task_names
from scidocs_eval.formats.corpus import read_citations
from scidocs_eval.formats.suite import METADATA_FILES, Paper, Suite
from scidocs_eval.models.adapter import register_adapter
from scidocs_eval.models.sif_weighting import SifWeightedAdapter
from scidocs_eval.models.tuning import ValScorer, parameter_grid
from scidocs_eval.models.word_vectors import MAX_TRAINED_TOKENS, TUNE_MAX_TOKENS, WordVectors
from scidocs_eval.params import Interval, Options

log = logging.getLogger(__name__)

Edge = tuple[str, str]
"""(citing paper id, cited paper id)."""
K_GRID = tuple(range(1, 9))
ROW_NORMS = ("none", "sif", "l2")
EVALUATED_SPLITS = ("val", "test")


def metadata_citations(suite: Suite) -> list[Edge]:
    """Edges from the recomm metadata's `references` and `cited_by` lists (none if the file is absent)."""
    if not suite.has(METADATA_FILES["recomm"]):
        return []
    edges = []
    for paper_id, record in suite.metadata("recomm").items():
        edges += [(paper_id, str(cited)) for cited in record.get("references") or ()]
        edges += [(str(citing), paper_id) for citing in record.get("cited_by") or ()]
    return edges


def guard_edges(edges: Iterable[Edge], suite: Suite) -> list[Edge]:
    """`edges` without query–candidate edges (either direction) and without citations of val/test queries."""
    pairs: set[frozenset[str]] = set()
    queries: set[str] = set()
    for task in task_names(paper_pairs=True):
        for split in EVALUATED_SPLITS:
            if suite.has(f"{task}/{split}.qrel"):
                for query, candidates in suite.qrels(task, split).candidates.items():
                    queries.add(query)
                    pairs.update(frozenset((query, c)) for c in candidates)
    for split in ("train", *EVALUATED_SPLITS):
        if suite.has(f"recomm/{split}.csv"):
            for impression in suite.impressions(split):
                if split in EVALUATED_SPLITS:
                    queries.add(impression.query_id)
                pairs.update(frozenset((impression.query_id, shown)) for shown in impression.shown)
    return [(citing, cited) for citing, cited in edges
            if cited not in queries and frozenset((citing, cited)) not in pairs]


def propagation_matrix(ids: Sequence[str], edges: Iterable[Edge]) -> sparse.csr_matrix:
    """S = D^-1/2 (A + I) D^-1/2 over `ids` (n, n); edges are undirected, those leaving `ids` are ignored."""
    index = {paper_id: row for row, paper_id in enumerate(ids)}
    links = np.array([(index[a], index[b]) for a, b in edges if a in index and b in index and a != b],
                     dtype=np.int64).reshape(-1, 2)
    n = len(ids)
    adjacency = sparse.coo_matrix((np.ones(len(links)), (links[:, 0], links[:, 1])), shape=(n, n)).tocsr()
    adjacency = ((adjacency + adjacency.T) > 0).astype(np.float64) + sparse.identity(n, format="csr")
    scale = sparse.diags(1.0 / np.sqrt(np.asarray(adjacency.sum(axis=1)).ravel()))
    return (scale @ adjacency @ scale).tocsr()


@register_adapter
class SgcAdapter(SifWeightedAdapter):
    """SGC embeddings, (n, dim) float32 (transductive: a paper's vector depends on the papers embedded with it).

    Args: those of `SifWeightedAdapter`, plus k: propagation steps (used unless `tune`); citations: extra edges
    (TSV citing<TAB>cited) added to the recomm metadata's; row_norm: "none", "sif" or "l2" (module docstring).
    """

    name = "sgc"
    paper_row = "SGC"
    transductive = True
    parameter_constraints = {**SifWeightedAdapter.parameter_constraints, "k": [Interval(int, 0, None)],
                             "citations": [str, None], "row_norm": [Options(ROW_NORMS)]}

    def __init__(self, seed: int = 0, tune: bool = False, vectors: str | None = None, dim: int = 300,
                 min_count: int = 25, epochs: int | None = None, architecture: str = "cbow", bucket: int = 200_000,
                 threads: int = 1, lr: float = 0.05, max_trained_tokens: int | None = MAX_TRAINED_TOKENS,
                 tune_max_tokens: int = TUNE_MAX_TOKENS, a: float = 1e-3, k: int = 2, citations: str | None = None,
                 row_norm: str = "none"):
        super().__init__(seed=seed, tune=tune, vectors=vectors, dim=dim, min_count=min_count, epochs=epochs,
                         architecture=architecture, bucket=bucket, threads=threads, lr=lr,
                         max_trained_tokens=max_trained_tokens, tune_max_tokens=tune_max_tokens, a=a)
        self.k, self.citations, self.row_norm = k, citations, row_norm

    def fit_vectors(self, papers: Sequence[Paper], suite: Suite | None, word_vectors: WordVectors) -> float | None:
        known = {paper.paper_id for paper in papers}
        links = read_citations(self.citations, known) if self.citations else []
        edges = [(citing, cited) for _, citing, cited in links]
        if suite is not None:
            edges += metadata_citations(suite)
        read = len(edges)
        if suite is not None:
            edges = guard_edges(edges, suite)
        self.edges_ = edges
        self._warn_where_it_equals_sif(known, suite, read)
        self.fit_sif(papers, suite, word_vectors, tune_a=False)
        if not self.tune:
            return None
        scorer = ValScorer(suite)
        nodes = [p for p in suite.papers() if p.has_text]
        rows = {p.paper_id: row for row, p in enumerate(nodes)}
        val_rows = [rows[p.paper_id] for p in scorer.papers]
        steps = self.propagate_steps(nodes, max(K_GRID))
        search = scorer.search(parameter_grid(k=K_GRID), lambda s: steps[s["k"]][val_rows], desc="tuning sgc k")
        self.best_params_["k"] = search.best["k"]
        return search.best_score

    def _warn_where_it_equals_sif(self, known: set[str], suite: Suite | None, read: int) -> None:
        """A warning naming the tasks whose papers no surviving edge touches: there SGC scores what SIF scores."""
        linked = {paper for citing, cited in self.edges_ if citing != cited and citing in known and cited in known
                  for paper in (citing, cited)}
        if suite is None:
            unlinked = [] if linked else ["every task"]
        else:
            by_file: dict[str, list[str]] = {}
            for name in task_names():
                by_file.setdefault(TASKS[name].spec.metadata_file, []).append(name)
            unlinked = [name for file, names in by_file.items() if suite.has(file)
                        and linked.isdisjoint(suite.metadata(file)) for name in names]
        if unlinked:
            log.warning("sgc: no citation edge survives the leakage guard among the papers of %s (%d edges read, "
                        "%d papers linked): each keeps its SIF vector, so sgc scores what sif scores there. Give "
                        "a citation graph with --citations FILE (TSV citing<TAB>cited).", ", ".join(unlinked), read,
                        len(linked))

    def propagate_steps(self, papers: Sequence[Paper], k: int) -> list[np.ndarray]:
        """[X, S X, S² X, …, S^k X] for `papers`, each (n, dim) float64, rows rescaled as `row_norm` says."""
        propagation = propagation_matrix([p.paper_id for p in papers], self.edges_)
        steps = [self.sif_vectors(papers).astype(np.float32).astype(np.float64)]  # SIF's float32 output, as sif's
        for _ in range(k):
            steps.append(propagation @ steps[-1])
        if self.row_norm == "none":
            return steps
        target = np.linalg.norm(steps[0], axis=1, keepdims=True) if self.row_norm == "sif" else 1.0
        return [step * target / np.maximum(np.linalg.norm(step, axis=1, keepdims=True), 1e-12) for step in steps]

    def transform(self, papers: Sequence[Paper]) -> np.ndarray:
        return self.propagate_steps(papers, self.setting("k"))[-1].astype(np.float32)
