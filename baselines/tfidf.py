"""TF-IDF + LSA: our classic reference row, not one of the paper's baselines.

TF-IDF over title + abstract (the shared tokeniser, English stop words dropped, words in at least `min_df` papers
and at most `max_df` of them, sublinear term frequency, rows L2-normalised), reduced to `dim` dimensions with
truncated SVD (latent semantic analysis) fit on the corpus, then each row L2-normalised again, so that the
official evaluation's L2 ranking equals cosine ranking in the LSA space. scikit-learn only; no training loop.
"""

from __future__ import annotations

from collections.abc import Sequence

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.formats.corpus import paper_text
from scidocs_eval.formats.suite import Paper
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.models.adapter import Adapter, register_adapter
from scidocs_eval.models.text import TOKENIZER_SETTINGS
from scidocs_eval.params import AT_LEAST_ONE, SEED, Interval

np = lazy_module("numpy", __name__)


@register_adapter
class TfidfLsaAdapter(Adapter):
    """L2-normalised LSA vectors of the papers' TF-IDF, (n, dim) float32 (fewer columns when the corpus has
    fewer than `dim` + 1 words).

    Args:
        dim: SVD components (300).
        min_df: least number of papers a word appears in (2); max_df: largest share of papers (0.75).
        sublinear_tf: 1 + log(tf) instead of tf (True).
        seed: the randomized SVD's seed.
    """

    name = "tfidf"
    requires_fit = True
    parameter_constraints = {"dim": [AT_LEAST_ONE], "min_df": [AT_LEAST_ONE],
                             "max_df": [Interval(float, 0, 1, closed="right")], "sublinear_tf": [bool], "seed": [SEED]}

    def __init__(self, dim: int = 300, min_df: int = 2, max_df: float = 0.75, sublinear_tf: bool = True,
                 seed: int = 0):
        self.dim, self.min_df, self.max_df, self.sublinear_tf, self.seed = dim, min_df, max_df, sublinear_tf, seed

    def learn(self, papers: Sequence[Paper]) -> None:
        from sklearn.decomposition import TruncatedSVD
        from sklearn.feature_extraction.text import TfidfVectorizer

        texts = [paper_text(p) for p in papers]
        self.vectorizer_ = TfidfVectorizer(**TOKENIZER_SETTINGS, stop_words="english", sublinear_tf=self.sublinear_tf,
                                           min_df=min(self.min_df, len(texts)), max_df=self.max_df)
        try:
            tfidf = self.vectorizer_.fit_transform(texts)
        except ValueError as error:  # scikit-learn's "empty vocabulary" / "max_df corresponds to < documents"
            raise ScidocsEvalError(f"tfidf: no word left to weigh in {len(texts)} papers ({error})") from None
        components = min(self.dim, tfidf.shape[1] - 1)
        if components < 1:
            raise ScidocsEvalError(f"tfidf: the corpus has {tfidf.shape[1]} usable word(s); SVD needs at least 2")
        self.svd_ = TruncatedSVD(n_components=components, random_state=self.seed).fit(tfidf)

    def transform(self, papers: Sequence[Paper]) -> np.ndarray:
        from sklearn.preprocessing import normalize

        reduced = self.svd_.transform(self.vectorizer_.transform([paper_text(p) for p in papers]))
        return normalize(reduced).astype(np.float32)
