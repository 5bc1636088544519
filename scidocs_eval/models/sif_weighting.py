"""SIF weighting (Arora et al. 2017) over word vectors: what the `sif` and `sgc` adapters share.

Per paper: v = (1/n) Σ_tokens a/(a + p(w)) · vec(w), over its n tokens that are in the corpus vocabulary
(shared tokeniser, stop words kept); p(w) is the word's unigram frequency in the fit corpus. The first
singular vector u of the corpus's matrix (uncentred, as in the SIF reference code) is fit once, and every
embedded paper becomes v − (v·u)u. `sif --tune` picks `a` on val from the log grid 1e-5 … 1e-3 (`A_GRID`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from scidocs_eval.formats.suite import Paper
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.models.text import word_counts
from scidocs_eval.models.word_vectors import MAX_TRAINED_TOKENS, TUNE_MAX_TOKENS, WordVectorAdapter, WordVectors
from scidocs_eval.params import POSITIVE

if TYPE_CHECKING:
    from scipy import sparse

np = lazy_module("numpy", __name__)

A_GRID = (1e-5, 3e-5, 1e-4, 3e-4, 1e-3)
"""The log grid of `a` `sif --tune` searches (the paper: a log grid in [1e-5, 1e-3])."""


def first_component(matrix: np.ndarray, seed: int = 0) -> np.ndarray:
    """The first right singular vector (dim,) of `matrix` (n, dim), uncentred (TruncatedSVD)."""
    from sklearn.decomposition import TruncatedSVD

    return TruncatedSVD(n_components=1, random_state=seed).fit(matrix).components_[0]


def remove_component(matrix: np.ndarray, component: np.ndarray) -> np.ndarray:
    """`matrix` (n, dim) minus each row's projection on the unit vector `component` (dim,)."""
    return matrix - np.outer(matrix @ component, component)


class SifWeightedAdapter(WordVectorAdapter):
    """SIF embeddings, (n, dim) float32: the base of the `sif` and `sgc` adapters.

    Args: those of `WordVectorAdapter` (corpus fastText by default; `vectors="glove"` for GloVe 50-d), plus
    a: the SIF smoothing constant.
    """

    parameter_constraints = {**WordVectorAdapter.parameter_constraints, "a": [POSITIVE]}

    def __init__(self, seed: int = 0, vectors: str | None = None, dim: int = 300, min_count: int = 25,
                 epochs: int | None = None, architecture: str = "cbow", bucket: int = 200_000, threads: int = 1,
                 lr: float = 0.05, max_trained_tokens: int | None = MAX_TRAINED_TOKENS,
                 tune_max_tokens: int = TUNE_MAX_TOKENS, a: float = 1e-3):
        super().__init__(seed=seed, vectors=vectors, dim=dim, min_count=min_count, epochs=epochs,
                         architecture=architecture, bucket=bucket, threads=threads, lr=lr,
                         max_trained_tokens=max_trained_tokens, tune_max_tokens=tune_max_tokens)
        self.a = a

    def fit_sif(self, papers: Sequence[Paper], word_vectors: WordVectors) -> None:
        """Word frequencies and the first principal component of the corpus's weighted averages."""
        self.vocabulary_, corpus_counts = word_counts(papers)
        totals = np.asarray(corpus_counts.sum(axis=0)).ravel()
        self.word_probability_ = totals / max(totals.sum(), 1)
        self.word_matrix_ = word_vectors.lookup(self.vocabulary_.vectorizer.get_feature_names_out())
        self.component_ = first_component(self._average(corpus_counts, self.a), self.seed)

    def _average(self, counts: sparse.csr_matrix, a: float) -> np.ndarray:
        """(n, dim) float64: per paper, the mean over its tokens of a/(a + p(w)) · vec(w)."""
        from scipy import sparse

        lengths = np.maximum(np.asarray(counts.sum(axis=1)).ravel(), 1)
        weights = a / (a + self.word_probability_)
        weighted = sparse.diags(1.0 / lengths) @ counts @ sparse.diags(weights)
        return np.asarray(weighted @ self.word_matrix_, dtype=np.float64)

    def sif_vectors(self, papers: Sequence[Paper]) -> np.ndarray:
        """(n, dim) float64 SIF vectors of `papers`."""
        return remove_component(self._average(self.vocabulary_.counts_of(papers), self.a), self.component_)
