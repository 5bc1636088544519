"""Fasttext-sum (SPEC §8): TF-IDF-weighted sum of 300-d fastText word vectors trained on the corpus.

The word vectors (trained on the fit corpus, or loaded with `vectors`) come from
`scidocs_eval.models.word_vectors`; `--tune` searches the TfidfVectorizer switches on val.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product
from typing import Any

from scidocs_eval.formats.suite import Paper
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.models.adapter import register_adapter
from scidocs_eval.models.text import TFIDF_SWITCHES, TfidfWeighting, tfidf_count_settings, word_counts
from scidocs_eval.models.tuning import parameter_grid
from scidocs_eval.models.word_vectors import MAX_TRAINED_TOKENS, TUNE_MAX_TOKENS, WordVectorAdapter, WordVectors

np = lazy_module("numpy", __name__)


@register_adapter
class FasttextSumAdapter(WordVectorAdapter):
    """Sum of word vectors weighted by the paper's TF-IDF (norm None). Output: (n, dim) float32.

    Args: those of `WordVectorAdapter`, plus sublinear_tf, binary, use_idf, smooth_idf: the
    TfidfVectorizer switches (`--tune` searches all 12 useful combinations on val).
    """

    name = "fasttext-sum"
    paper_row = "Fasttext-sum"
    transform_params = frozenset(TFIDF_SWITCHES)
    """`fit` weighs the corpus counts for every combination of the switches (a pass over the counts each, kept:
    one idf vector each), so `--tune` counts the corpus once for all of them."""
    parameter_constraints = {**WordVectorAdapter.parameter_constraints, "sublinear_tf": [bool], "binary": [bool],
                             "use_idf": [bool], "smooth_idf": [bool]}

    def __init__(self, seed: int = 0, vectors: str | None = None, dim: int = 300, min_count: int = 25,
                 epochs: int | None = None, architecture: str = "cbow", bucket: int = 200_000, threads: int = 1,
                 lr: float = 0.05, max_trained_tokens: int | None = MAX_TRAINED_TOKENS,
                 tune_max_tokens: int = TUNE_MAX_TOKENS, sublinear_tf: bool = False, binary: bool = False,
                 use_idf: bool = True, smooth_idf: bool = True):
        super().__init__(seed=seed, vectors=vectors, dim=dim, min_count=min_count, epochs=epochs,
                         architecture=architecture, bucket=bucket, threads=threads, lr=lr,
                         max_trained_tokens=max_trained_tokens, tune_max_tokens=tune_max_tokens)
        self.sublinear_tf, self.binary, self.use_idf, self.smooth_idf = sublinear_tf, binary, use_idf, smooth_idf

    def fit_vectors(self, papers: Sequence[Paper], word_vectors: WordVectors) -> None:
        self.vocabulary_, corpus_counts = word_counts(papers, tfidf_count_settings(len(papers)))
        self.word_matrix_ = word_vectors.lookup(self.vocabulary_.vectorizer.get_feature_names_out())
        self.weightings_ = {switches: TfidfWeighting(*switches).fit(corpus_counts)
                            for switches in product((False, True), repeat=len(TFIDF_SWITCHES))}

    def own_grid(self) -> list[dict[str, Any]]:
        """Every combination of the TF-IDF switches but those with neither `use_idf` nor `smooth_idf` (which
        weigh as the one with `smooth_idf`: without idf, smoothing it changes nothing)."""
        return [setting for setting in parameter_grid(**dict.fromkeys(TFIDF_SWITCHES, (False, True)))
                if setting["use_idf"] or setting["smooth_idf"]]

    def transform(self, papers: Sequence[Paper]) -> np.ndarray:
        counts = self.vocabulary_.counts_of(papers)
        switches = tuple(getattr(self, switch) for switch in TFIDF_SWITCHES)
        weights = TfidfWeighting(*switches).weigh(self.weightings_[switches], counts)
        return np.asarray(weights @ self.word_matrix_, dtype=np.float32)
