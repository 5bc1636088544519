"""The one tokeniser every text baseline shares, and the paper's TF-IDF settings (SPEC §8).

Tokens come from scikit-learn's analyzer: text lowercased, accents folded to ASCII (`strip_accents="ascii"`),
then split with scikit-learn's default token pattern (runs of 2+ word characters). Word-vector training
(fastText, Doc2Vec) and SIF's word frequencies use these tokens with stop words kept; the TF-IDF weights of
fasttext-sum additionally drop English stop words, as the paper's TfidfVectorizer does.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from scidocs_eval.formats.corpus import paper_text
from scidocs_eval.formats.suite import Paper
from scidocs_eval.progress import progress_bar

if TYPE_CHECKING:
    from scipy import sparse
    from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer

TOKENIZER_SETTINGS: dict[str, Any] = {"lowercase": True, "strip_accents": "ascii"}
"""How text becomes tokens (scikit-learn analyzer options); shared by every text baseline."""

TFIDF_SETTINGS: dict[str, Any] = {**TOKENIZER_SETTINGS, "min_df": 3, "max_df": 0.75, "stop_words": "english",
                                  "norm": None}
"""The paper's TfidfVectorizer settings for fasttext-sum (its weighting options are set separately)."""


def analyzer() -> Callable[[str], list[str]]:
    """The shared tokeniser: str -> list of lowercase ASCII tokens (stop words kept)."""
    from sklearn.feature_extraction.text import CountVectorizer

    return CountVectorizer(**TOKENIZER_SETTINGS).build_analyzer()


def tokenize_papers(papers: Sequence[Paper], progress: bool = True) -> list[list[str]]:
    """Tokens of each paper's title + abstract, in order (one list per paper)."""
    analyze = analyzer()
    with progress_bar(total=len(papers), unit="paper", desc="tokenising", enabled=progress) as bar:
        tokens = []
        for paper in papers:
            tokens.append(analyze(paper_text(paper)))
            bar.update()
    return tokens


def tfidf_count_settings(n_documents: int) -> dict[str, Any]:
    """The counting half of the paper's TfidfVectorizer (min_df 3, max_df 0.75, English stop words dropped), as
    `CountVectorizer` options.

    `min_df` drops to 1 for corpora too small for min_df 3 and max_df 0.75 to leave any word (< 4 papers).
    """
    settings = dict(TFIDF_SETTINGS)
    settings.pop("norm")
    if settings["min_df"] > settings["max_df"] * n_documents:
        settings["min_df"] = 1
    return settings


@dataclass(frozen=True)
class Vocabulary:
    """The words a corpus was counted with (`word_counts`): `vectorizer`, a fitted `CountVectorizer`, and
    `identity`, a name no other vocabulary has (in any process), which keys the counts of other papers over it."""

    vectorizer: CountVectorizer
    identity: str = field(default_factory=lambda: uuid.uuid4().hex)

    def counts_of(self, papers: Sequence[Paper]) -> sparse.csr_matrix:
        """The papers' counts (papers × this vocabulary), once per papers within `model_cache.shared_fits` (a
        `--tune` grid embeds the same val papers at every setting, with the one vocabulary its fits share)."""
        from scidocs_eval.models.model_cache import shared_in_fits

        return shared_in_fits("word-counts-of", papers, {"vocabulary": self.identity},
                              lambda: _read_only(self.vectorizer.transform([paper_text(p) for p in papers])))


def _read_only(counts: sparse.csr_matrix) -> sparse.csr_matrix:
    """`counts` with its values read-only: the settings of a grid share them, so one that changed them in place
    would change the others' (it raises instead)."""
    counts.data.flags.writeable = False
    return counts


def word_counts(papers: Sequence[Paper], settings: dict[str, Any] | None = None
                ) -> tuple[Vocabulary, sparse.csr_matrix]:
    """The papers' `Vocabulary` under `CountVectorizer(**settings)` (None: the shared tokeniser, stop words
    kept) and their counts (papers × vocabulary), counted once per corpus and settings within
    `model_cache.shared_fits` (every setting of a `--tune` grid fits the same corpus; counting it was most of a
    SIF fit's time)."""
    from sklearn.feature_extraction.text import CountVectorizer

    from scidocs_eval.models.model_cache import shared_in_fits

    def count() -> tuple[Vocabulary, sparse.csr_matrix]:
        vectorizer = CountVectorizer(analyzer=analyzer()) if settings is None else CountVectorizer(**settings)
        return Vocabulary(vectorizer), _read_only(vectorizer.fit_transform([paper_text(p) for p in papers]))

    options = {"analyzer": "shared tokeniser", **TOKENIZER_SETTINGS} if settings is None else settings
    return shared_in_fits("word-counts", papers, options, count)


@dataclass(frozen=True)
class TfidfWeighting:
    """The weighting half of the paper's TfidfVectorizer (norm None), with the switches it tunes.

    `fit(corpus_counts)` then `weigh(counts)` gives exactly TfidfVectorizer(**TFIDF_SETTINGS, **switches)
    on the same texts, while the counts (the slow, tokenising part) are computed once for every setting.
    """

    sublinear_tf: bool = False
    binary: bool = False
    use_idf: bool = True
    smooth_idf: bool = True

    def _counts(self, counts: sparse.csr_matrix) -> sparse.csr_matrix:
        if not self.binary:
            return counts
        ones = counts.copy()
        ones.data.fill(1)
        return ones

    def fit(self, corpus_counts: sparse.csr_matrix) -> TfidfTransformer:
        """A TfidfTransformer fitted on the corpus counts, shape (n_papers, n_words)."""
        from sklearn.feature_extraction.text import TfidfTransformer

        return TfidfTransformer(norm=None, use_idf=self.use_idf, smooth_idf=self.smooth_idf,
                                sublinear_tf=self.sublinear_tf).fit(self._counts(corpus_counts))

    def weigh(self, transformer: TfidfTransformer, counts: sparse.csr_matrix) -> sparse.csr_matrix:
        """TF-IDF weights of `counts` (n_papers, n_words) with a transformer from `fit`."""
        return transformer.transform(self._counts(counts))


TFIDF_SWITCHES: tuple[str, ...] = tuple(f.name for f in fields(TfidfWeighting))
"""The TfidfVectorizer switches the paper tunes on validation."""
