"""SGC (SPEC §8; Wu et al. 2019, without learning): SIF features propagated k times over a citation graph.

Embeddings: S^k X, where X is the SIF matrix of the papers being embedded and S = D^-1/2 (A + I) D^-1/2 is
the symmetric-normalised adjacency with self-loops of the undirected citation graph among those papers
(scipy.sparse). A paper with no edges keeps its SIF vector (its row of S is the self-loop alone).

Graph: the edges `fit` is given (`citations`). `baseline sgc` gives the `references`/`cited_by` of the suite's
recomm metadata plus the `citations` file (TSV citing<TAB>cited), after the leakage guard of
`scidocs_eval.run.fit_inputs` (as in the paper: every edge between an evaluated query and one of its candidates
is removed, and every incoming citation of a val/test query): the adapter never reads the suite, so no test
judgement reaches it. `--tune` picks k on val in 1..8 (SIF's `a` stays as given).

Rows after propagation (`row_norm`): "none" (default) leaves S^k X as it is; a row of S averages a paper with
its neighbours, weighted by degree, so a well-linked paper's vector shrinks. "sif" rescales each propagated
row to the norm of the paper's SIF vector, "l2" to unit length (cosine ranking under the official L2
distance). docs/baselines.md has what each does on Cora and CiteSeer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from scidocs_eval.formats.corpus import read_citations
from scidocs_eval.formats.suite import Paper
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.models.adapter import Edge, register_adapter
from scidocs_eval.models.sif_weighting import SifWeightedAdapter
from scidocs_eval.models.tuning import parameter_grid
from scidocs_eval.models.word_vectors import MAX_TRAINED_TOKENS, TUNE_MAX_TOKENS, WordVectors
from scidocs_eval.params import InputPath, Interval, Options

if TYPE_CHECKING:
    from scipy import sparse

np = lazy_module("numpy", __name__)

K_GRID = tuple(range(1, 9))
ROW_NORMS = ("none", "sif", "l2")


def propagation_matrix(ids: Sequence[str], edges: Iterable[Edge]) -> sparse.csr_matrix:
    """S = D^-1/2 (A + I) D^-1/2 over `ids` (n, n); edges are undirected, those leaving `ids` are ignored."""
    from scipy import sparse

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

    Args: those of `SifWeightedAdapter`, plus k: propagation steps; citations: a file of extra edges (TSV
    citing<TAB>cited) added to the recomm metadata's; row_norm: "none", "sif" or "l2" (module docstring).
    """

    name = "sgc"
    paper_row = "SGC"
    transductive = True
    transform_params = frozenset({"k", "row_norm"})
    parameter_constraints = {**SifWeightedAdapter.parameter_constraints, "k": [Interval(int, 0, None)],
                             "citations": [InputPath(), None], "row_norm": [Options(ROW_NORMS)]}

    def __init__(self, seed: int = 0, vectors: str | None = None, dim: int = 300, min_count: int = 25,
                 epochs: int | None = None, architecture: str = "cbow", bucket: int = 200_000, threads: int = 1,
                 lr: float = 0.05, max_trained_tokens: int | None = MAX_TRAINED_TOKENS,
                 tune_max_tokens: int = TUNE_MAX_TOKENS, a: float = 1e-3, k: int = 2, citations: str | None = None,
                 row_norm: str = "none"):
        super().__init__(seed=seed, vectors=vectors, dim=dim, min_count=min_count, epochs=epochs,
                         architecture=architecture, bucket=bucket, threads=threads, lr=lr,
                         max_trained_tokens=max_trained_tokens, tune_max_tokens=tune_max_tokens, a=a)
        self.k, self.citations, self.row_norm = k, citations, row_norm

    def citation_files(self) -> list[str]:
        return [self.citations] if self.citations else []

    def fit(self, papers: Sequence[Paper], citations: Sequence[Edge] | None = None) -> SgcAdapter:
        """Fit on `papers`, propagating over `citations`: the edges it may use, which `baseline` gives (the
        suite's metadata citations and the `citations` file, after the leakage guard: `run.fit_inputs`).
        None: the `citations` file's edges alone, unguarded (there is no suite to guard them against)."""
        if citations is None:
            self.validate()
            known = {paper.paper_id for paper in papers}
            citations = [(citing, cited) for file in self.citation_files()
                         for _, citing, cited in read_citations(file, known)]
        self.edges_ = list(citations)
        return super().fit(papers)  # type: ignore[return-value]

    def fit_vectors(self, papers: Sequence[Paper], word_vectors: WordVectors) -> None:
        self.fit_sif(papers, word_vectors)
        self.features_: dict[tuple[bytes, ...], np.ndarray] = {}
        """The SIF matrix of the last papers embedded, by their inputs: shared by the copies `--tune` makes of this
        fit for each k, which embed the same papers (counting their words is most of the cost)."""

    def own_grid(self) -> list[dict[str, Any]]:
        return parameter_grid(k=K_GRID)

    def propagate_steps(self, papers: Sequence[Paper], k: int) -> list[np.ndarray]:
        """[X, S X, S² X, …, S^k X] for `papers`, each (n, dim) float64, rows rescaled as `row_norm` says."""
        propagation = propagation_matrix([p.paper_id for p in papers], self.edges_)
        key = tuple(map(self.input_key, papers))
        if key not in self.features_:
            self.features_.clear()
            self.features_[key] = self.sif_vectors(papers).astype(np.float32)  # SIF's float32 output, as sif's
        steps = [self.features_[key].astype(np.float64)]
        for _ in range(k):
            steps.append(propagation @ steps[-1])
        if self.row_norm == "none":
            return steps
        target = np.linalg.norm(steps[0], axis=1, keepdims=True) if self.row_norm == "sif" else 1.0
        return [step * target / np.maximum(np.linalg.norm(step, axis=1, keepdims=True), 1e-12) for step in steps]

    def transform(self, papers: Sequence[Paper]) -> np.ndarray:
        return self.propagate_steps(papers, self.k)[-1].astype(np.float32)
